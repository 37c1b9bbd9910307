"""A pre-tokenised corpus in one compact file, for a machine that has no spaCy and no raw text.

The file (``*.npz.xz``) is an LZMA-compressed ``.npz`` holding:

- ``train_ids`` / ``heldout_ids`` (uint32): the tokens, as ids of a distinct-token table ranked by
  training frequency (0 = ``<S>``, 1 = ``</S>``, 2 = the most frequent token, ...), which LZMA
  compresses to about 1.1 bytes a token on the English pretraining text;
- ``train_lengths`` / ``heldout_lengths`` (uint16): tokens per sentence;
- ``types`` and ``meta`` (UTF-8 JSON as uint8): the table, and ``{"corpus": the [corpus]
  settings it was tokenised with, "files": per-file statistics, "source": train tokens and
  sentences of the full corpus}``.

:func:`install_pack` turns it into a run's corpus cache (:mod:`.corpus_cache`), keyed to those
[corpus] settings: ``pretrain`` then reads the cache and never tokenises (no spaCy import).
"""
import io
import json
import lzma
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy

from ..errors import ElmoDataError
from .corpus import Split
from .corpus_cache import cache_key, write_cache

SLICE_SENTENCES = 1000  # a slice takes whole runs of this many consecutive training sentences


def slice_split(split: Split, max_tokens: int, run: int = SLICE_SENTENCES) -> Split:
    """The training sentences of ``split`` up to about ``max_tokens`` tokens (0 = all), taken as
    evenly spaced runs of ``run`` consecutive sentences, so that every source file keeps its
    share. Deterministic."""
    if not max_tokens or split.n_tokens <= max_tokens:
        return split
    frac = max_tokens / split.n_tokens
    n_runs = -(-len(split) // run)
    keep = [i for i in range(n_runs) if int((i + 1) * frac) > int(i * frac)]
    lengths = numpy.diff(split.offsets)
    sentences = numpy.concatenate([numpy.arange(i * run, min(len(split), (i + 1) * run)) for i in keep])
    tokens = numpy.concatenate([split.tokens[split.offsets[i]: split.offsets[i + 1]] for i in sentences])
    offsets = numpy.zeros(len(sentences) + 1, dtype=numpy.int64)
    numpy.cumsum(lengths[sentences], out=offsets[1:])
    return Split(tokens.astype(numpy.int32), offsets)


def _ranked(types: Sequence[str], train: Split, heldout: Split) -> Tuple[List[str], numpy.ndarray]:
    """(table, old id -> new id): the types that occur, <S> and </S> first, then by training
    frequency (ties and held-out-only types by first id)."""
    counts = numpy.bincount(train.tokens, minlength=len(types)).astype(numpy.int64)
    seen = counts > 0
    seen[heldout.tokens] = True
    seen[:2] = True
    counts[:2] = numpy.iinfo(numpy.int64).max  # <S>, </S> first
    old = numpy.nonzero(seen)[0]
    order = old[numpy.argsort(-counts[old], kind="stable")]
    remap = numpy.full(len(types), -1, dtype=numpy.int64)
    remap[order] = numpy.arange(len(order))
    return [types[i] for i in order], remap


def _lengths(split: Split) -> numpy.ndarray:
    lengths = numpy.diff(split.offsets)
    if len(lengths) and lengths.max() > numpy.iinfo(numpy.uint16).max:
        raise ElmoDataError("a sentence has more than 65,535 tokens: cut sentences with [corpus] max_sentence_tokens")
    return lengths.astype(numpy.uint16)


def _json_bytes(value) -> numpy.ndarray:
    return numpy.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=numpy.uint8)


def pack(path: str, types: Sequence[str], train: Split, heldout: Split, files: Dict[str, dict],
         corpus_section: dict, max_train_tokens: int = 0, preset: int = 6) -> dict:
    """Write ``path`` from a tokenised corpus (as :func:`.corpus_cache.prepare_corpus` returns it),
    keeping about ``max_train_tokens`` training tokens (0 = all; see :func:`slice_split`) and the
    whole held-out split. Returns {"bytes", "train_tokens", "heldout_tokens", "types"}."""
    part = slice_split(train, max_train_tokens)
    table, remap = _ranked(types, part, heldout)
    meta = {"corpus": dict(corpus_section), "files": files,
            "source": {"train_tokens": train.n_tokens, "train_sentences": len(train)}}
    buf = io.BytesIO()
    numpy.savez(buf, train_ids=remap[part.tokens].astype(numpy.uint32), train_lengths=_lengths(part),
                heldout_ids=remap[heldout.tokens].astype(numpy.uint32), heldout_lengths=_lengths(heldout),
                types=_json_bytes(table), meta=_json_bytes(meta))
    data = lzma.compress(buf.getvalue(), preset=preset)
    Path(path).write_bytes(data)
    return {"bytes": len(data), "train_tokens": part.n_tokens, "heldout_tokens": heldout.n_tokens,
            "types": len(table)}


def _split(ids: numpy.ndarray, lengths: numpy.ndarray) -> Split:
    offsets = numpy.zeros(len(lengths) + 1, dtype=numpy.int64)
    numpy.cumsum(lengths.astype(numpy.int64), out=offsets[1:])
    if offsets[-1] != len(ids):
        raise ElmoDataError(f"sentence lengths add up to {offsets[-1]:,} tokens, the ids hold {len(ids):,}")
    return Split(ids.astype(numpy.int32), offsets)


def read_pack(path: str) -> dict:
    """{"types", "train", "heldout", "files", "corpus", "source"} of a file written by :func:`pack`.
    Raises ElmoDataError (a ValueError) naming the file if it is not one."""
    try:
        with numpy.load(io.BytesIO(lzma.decompress(Path(path).read_bytes()))) as data:
            arrays = {k: data[k] for k in data.files}
        types = json.loads(arrays["types"].tobytes().decode("utf-8"))
        meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        train = _split(arrays["train_ids"], arrays["train_lengths"])
        heldout = _split(arrays["heldout_ids"], arrays["heldout_lengths"])
    except (lzma.LZMAError, OSError, KeyError, ValueError) as err:
        raise ElmoDataError(f"{path}: not a pre-tokenised corpus written by corpus_pack.pack ({err})") from None
    return {"types": types, "train": train, "heldout": heldout, "files": meta["files"], "corpus": meta["corpus"],
            "source": meta.get("source", {})}


def install_pack(path: str, out_dir: str) -> dict:
    """Write the corpus cache of ``path`` into ``out_dir/corpus`` and return the [corpus] overrides
    (``{"corpus.paths": ..., ...}``) under which ``pretrain(out_dir, ...)`` uses that cache."""
    corpus = read_pack(path)
    write_cache(Path(out_dir) / "corpus", cache_key(corpus["corpus"]), corpus["types"], corpus["train"],
                corpus["heldout"], corpus["files"])
    return {f"corpus.{k}": v for k, v in corpus["corpus"].items()}
