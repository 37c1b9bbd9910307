"""Shard files of a Ray embed run: one HDF5 file per block, in the ``embed`` command's layout.

A shard ``shard-FIRST-LAST.hdf5`` (FIRST / LAST: its smallest and largest line index, 9 digits)
holds one dataset per line named by its global 0-based index, ``sentence_to_index`` for its own
lines and the ``spacy_elmo`` attribute (the run's arguments, as in an ``embed`` OUTPUT), plus
``spacy_elmo_shard``: JSON {"first", "last", "ranges" ([[a, b], ...]: its indices as inclusive
runs), "sentences", "tokens"}. Written through :func:`spacy_elmo.embed.writer.write_file`
(``*.tmp-PID``, then renamed), so a shard that exists is complete: a re-run keeps every shard
written with the same arguments and recomputes only the rest.
"""
import json
import os
import re
from typing import Dict, Iterable, List, Sequence, Tuple

import h5py
import numpy

from ..embed.writer import ATTR, write_file
from ..errors import ElmoDataError

SHARD_ATTR = "spacy_elmo_shard"
_NAME = re.compile(r"shard-(\d{9,})-(\d{9,})\.hdf5")  # fullmatch


def shard_name(first: int, last: int) -> str:
    """File name of the shard whose indices run from first to last (inclusive)."""
    return f"shard-{first:09d}-{last:09d}.hdf5"


def runs(indices: Sequence[int]) -> List[List[int]]:
    """Sorted distinct ints -> inclusive runs [[a, b], ...] of consecutive values."""
    out: List[List[int]] = []
    for i in indices:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def write_shard(directory: str, items: List[Tuple[int, str, numpy.ndarray]], args: dict) -> Dict:
    """Write ``items`` ((index, text, array) each, any order, distinct indices) as one shard in
    ``directory``. Returns its manifest entry {"file", "first", "last", "ranges", "sentences",
    "tokens", "bytes"}. Raises ElmoDataError (a ValueError) for an empty list or a
    repeated index."""
    if not items:
        raise ElmoDataError("a shard needs at least one line")
    items = sorted(items, key=lambda item: item[0])
    indices = [int(item[0]) for item in items]
    if len(set(indices)) != len(indices):
        dup = next(i for i, j in zip(indices, indices[1:]) if i == j)
        raise ElmoDataError(f"line index {dup} appears twice in one block: the index column must be unique")
    info = {"first": indices[0], "last": indices[-1], "ranges": runs(indices), "sentences": len(items),
            "tokens": int(sum(item[2].shape[-2] for item in items))}
    name = shard_name(indices[0], indices[-1])
    size = write_file(os.path.join(directory, name), args, items, {SHARD_ATTR: info})
    return dict(info, file=name, bytes=size)


def read_entry(path: str, args: dict):
    """The manifest entry of a complete shard written with ``args`` (dict); False if it was
    written with other arguments; None if it is unreadable (damaged: recomputed by a re-run)."""
    try:
        with h5py.File(path, "r") as f:
            written, info = f.attrs.get(ATTR), f.attrs.get(SHARD_ATTR)
            if written is None or info is None:
                return None
            if json.loads(written) != args:
                return False
            info = json.loads(info)
    except (OSError, ValueError, TypeError):
        return None
    return dict(info, file=os.path.basename(path), bytes=os.path.getsize(path))


def shard_files(directory: str) -> List[str]:
    """Names of the shard files in ``directory`` (sorted; none if it does not exist)."""
    if not os.path.isdir(directory):
        return []
    return sorted(n for n in os.listdir(directory) if _NAME.fullmatch(n))


def complete_shards(directory: str, args: dict) -> Tuple[List[Dict], List[str], List[str]]:
    """(entries of the complete shards written with ``args``, names of the shards written with
    other arguments, names of the unreadable ones)."""
    good, other, damaged = [], [], []
    for name in shard_files(directory):
        entry = read_entry(os.path.join(directory, name), args)
        if entry:
            good.append(entry)
        else:
            (other if entry is False else damaged).append(name)
    return good, other, damaged


def remove_temporaries(directory: str) -> None:
    """Delete ``shard-*.tmp-PID`` files left by killed writers."""
    for name in os.listdir(directory):
        if name.startswith("shard-") and ".hdf5.tmp-" in name:
            try:
                os.remove(os.path.join(directory, name))
            except FileNotFoundError:
                pass


def covered(entries: Iterable[Dict]) -> List[List[int]]:
    """The index runs [a, b] of ``entries``, sorted by start."""
    return sorted(r for e in entries for r in e["ranges"])

