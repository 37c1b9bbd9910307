"""``manifest.json`` of a Ray embed run: which shard holds which lines, and what they hold.

    {"format": "spacy-elmo-shards", "version": 1,
     "model": NAME, "layers": "all" | "top" | ..., "dtype": "float32" | "float16",
     "num_layers": L, "dim": D, "shape": "(L+1, n, D)" or "(n, D)" (per line, n = its tokens),
     "sentences": N, "tokens": T, "bytes": B (all shards), "source": input path or "ray.data.Dataset",
     "shards": [{"file", "first", "last", "ranges": [[a, b], ...], "sentences", "tokens", "bytes"}, ...],
     "args": {...}}       # what decided the output (a re-run with equal args reuses the shards)

Shards are listed by first index; ``ranges`` are inclusive runs of line indices. The manifest
is written last (``*.tmp``, then renamed): a directory with a manifest is complete.
"""
import json
import os
from typing import Dict, List, Optional

from ..bilm.files import CONFIG_BYTES, read_json
from ..errors import ElmoDataError, ElmoFileError

FORMAT = "spacy-elmo-shards"
VERSION = 1
NAME = "manifest.json"


def build(entries: List[Dict], args: dict, model: str, layers: str, dtype: str, num_layers: int, dim: int,
          source: str, expected: Optional[int] = None) -> Dict:
    """The manifest of shard ``entries`` (see :mod:`.shards`). Raises ElmoDataError (a ValueError) if two shards
    share a line index, or if ``expected`` is given and the shards do not hold exactly lines
    0..expected-1 (naming the first missing line)."""
    entries = sorted(entries, key=lambda e: (e["first"], e["last"]))
    _check_disjoint(entries)
    if expected is not None:
        _check_complete(entries, expected)
    shape = f"({num_layers + 1}, n, {dim})" if layers == "all" else f"(n, {dim})"
    return {"format": FORMAT, "version": VERSION, "model": model, "layers": layers, "dtype": dtype,
            "num_layers": num_layers, "dim": dim, "shape": shape,
            "sentences": sum(e["sentences"] for e in entries), "tokens": sum(e["tokens"] for e in entries),
            "bytes": sum(e["bytes"] for e in entries), "source": source, "shards": entries, "args": args}


def _check_disjoint(entries: List[Dict]) -> None:
    runs = sorted((a, b, e["file"]) for e in entries for a, b in e["ranges"])
    for (a0, b0, f0), (a1, b1, f1) in zip(runs, runs[1:]):
        if a1 <= b0:
            raise ElmoDataError(f"line index {a1} is in two shards ({f0}, {f1}): the index column must be unique")


def _check_complete(entries: List[Dict], expected: int) -> None:
    nxt = 0
    for a, b in sorted(r for e in entries for r in e["ranges"]):
        if a != nxt:
            break
        nxt = b + 1
    if nxt != expected:
        raise ElmoDataError(f"the shards hold lines 0..{nxt - 1} of {expected}: line {nxt} is missing "
                            "(run the same command again to finish)")


def write(directory: str, manifest: Dict) -> str:
    """Write ``directory/manifest.json`` atomically; returns its path."""
    path = os.path.join(directory, NAME)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)
    return path


def load(path: str) -> Dict:
    """Read a manifest: ``path`` is the manifest.json or the directory holding it. Raises
    FileNotFoundError if absent, ElmoDataError (a ValueError) if it is not a
    spacy-elmo shard manifest."""
    if os.path.isdir(path):
        path = os.path.join(path, NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no shard manifest at {path!r} (the run has not finished, or this is not its output)")
    try:
        data = read_json(path, CONFIG_BYTES, "shard manifest")
    except ElmoFileError as err:
        raise ElmoDataError(str(err)) from None
    except ValueError as err:
        raise ElmoDataError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ElmoDataError(f"{path}: not a spacy-elmo shard manifest (format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise ElmoDataError(f"{path}: manifest version {data.get('version')!r}, this spacy-elmo reads version "
                            f"{VERSION}")
    return data
