"""The tokenised corpus of a pretraining run, cached in OUTPUT_DIR/corpus/ (reused by --resume,
and by any run whose [corpus] settings are the same)."""
import json
import sys
from pathlib import Path

import numpy

from ..errors import ElmoConfigError, ElmoDataError
from .corpus import Split, resolve_paths, tokenize_corpus

NO_CORPUS = ("no corpus: pass --corpus.paths '[\"texts/*.txt.gz\"]' (raw text, one sentence per line, "
             "plain or .gz) or set [corpus] paths in the config")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def prepare_corpus(cfg, out_dir: Path, progress: bool = True) -> dict:
    """{"types", "train" (Split), "heldout" (Split), "files"}: the corpus of cfg's [corpus],
    tokenised once and cached in out_dir/corpus/ under a key of those settings (a cache with
    another key is rebuilt). Raises ElmoDataError if [corpus] paths is empty, for missing or
    unreadable files; ElmoDataError (a ValueError) if no training sentence is left."""
    cache = out_dir / "corpus"
    key = cache_key(cfg["corpus"])
    if (cache / "key.json").is_file() and (cache / "key.json").read_text() == key:
        data = numpy.load(cache / "corpus.npz")
        with open(cache / "types.json", encoding="utf-8") as f:
            types = json.load(f)
        with open(cache / "files.json", encoding="utf-8") as f:
            files = json.load(f)
        train = Split(data["train_tokens"], data["train_offsets"])
        heldout = Split(data["heldout_tokens"], data["heldout_offsets"])
        return {"types": types, "train": train, "heldout": heldout, "files": files}
    c = cfg["corpus"]
    if not c["paths"]:
        raise ElmoConfigError(NO_CORPUS, "corpus.paths")
    paths = resolve_paths(c["paths"])
    _log(f"Tokenising {len(paths)} file(s) with spaCy's English tokenizer")
    types, train, heldout, files = tokenize_corpus(
        paths,
        block_lines=int(c["block_lines"]),
        heldout_every=int(c["heldout_every"]),
        max_sentence_tokens=int(c["max_sentence_tokens"]),
        max_lines_per_file=int(c.get("max_lines_per_file", 0)),
        progress=progress,
    )
    if len(train) == 0:
        h, b = int(c["heldout_every"]), int(c["block_lines"])
        raise ElmoDataError(f"The corpus has no training sentences: all its lines fall in held-out blocks (blocks "
                            f"0, {h}, {2 * h}, ... of {b} lines each); for a small corpus pass "
                            "--corpus.heldout_every 0 (no held-out text) or a smaller --corpus.block_lines")
    write_cache(cache, key, types, train, heldout, files)
    return {"types": types, "train": train, "heldout": heldout, "files": files}


def cache_key(corpus_section) -> str:
    """The cache's key: the [corpus] settings but the license, as sorted JSON."""
    return json.dumps({k: corpus_section[k] for k in sorted(corpus_section) if k != "license"}, sort_keys=True)


def write_cache(cache: Path, key: str, types, train: Split, heldout: Split, files: dict) -> None:
    """Write a tokenised corpus as the cache folder ``cache`` (corpus.npz, types.json, files.json,
    key.json last: a cache without its key is rebuilt)."""
    cache.mkdir(parents=True, exist_ok=True)
    numpy.savez(
        cache / "corpus.npz",
        train_tokens=train.tokens,
        train_offsets=train.offsets,
        heldout_tokens=heldout.tokens,
        heldout_offsets=heldout.offsets,
    )
    with open(cache / "types.json", "w", encoding="utf-8") as f:
        json.dump(types, f, ensure_ascii=False)
    with open(cache / "files.json", "w", encoding="utf-8") as f:
        json.dump(files, f, indent=2)
    (cache / "key.json").write_text(key)
