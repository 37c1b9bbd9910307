"""Crash-safe HDF5 output in AllenNLP's ``elmo`` layout, written as it comes.

Final file: one dataset per input record named by its index (``"0"``, ``"1"``, ...), plus
``sentence_to_index``: a (1,) string dataset holding ``json.dumps({sentence text: "index"})``
(for a repeated sentence the last index, as AllenNLP's command did). The root attribute
``spacy_elmo`` holds the JSON of the arguments that wrote it.

While running, each group of sentences goes into ``OUTPUT.tmp`` (the HDF5 file being built,
renamed to OUTPUT only when complete: never a half-written OUTPUT) and, first, into a journal
``OUTPUT.parts/``: ``manifest.json`` (the arguments) and per group ``part-FIRST-LAST.bin`` (the
arrays' raw bytes, one after the other) and ``part-FIRST-LAST.json`` (index, text and shape of
each), each written as ``*.tmp`` and renamed, the .json last. A part counts only when its .json
exists and its .bin has the recorded size, so a killed run loses at most the group it was
writing. HDF5 itself is not crash-safe, so a re-run never trusts an old OUTPUT.tmp: it rebuilds
it from the complete parts (one fast sequential read) and goes on with the rest. The parts are
removed at the end. Needs about twice the output size on disk meanwhile.
"""
import json
import os
import shutil
from typing import Iterable, Iterator, List, Sequence, Set, Tuple

import h5py
import numpy

from ..bilm.files import CONFIG_BYTES, read_json as read_small_json

ATTR = "spacy_elmo"


def written_args(output: str):
    """The arguments recorded in a finished OUTPUT (dict), or None if it has none / is unreadable."""
    try:
        with h5py.File(output, "r") as f:
            value = f.attrs.get(ATTR)
    except OSError:
        return None
    try:
        return json.loads(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class Parts:
    """The ``OUTPUT.parts/`` folder of one set of arguments ``args`` (a JSON-plain dict). Opening
    it with other arguments than its manifest's discards it; torn ``*.tmp`` files are removed."""

    def __init__(self, output: str, args: dict):
        self.dir = open_journal(output + ".parts", args)
        self.args = args

    def _base(self, first: int, last: int) -> str:
        return os.path.join(self.dir, f"part-{first:09d}-{last:09d}")

    def done(self) -> Set[Tuple[int, int]]:
        """(first, last) record indices of the complete parts."""
        out = set()
        for name in os.listdir(self.dir):
            if name.startswith("part-") and name.endswith(".json"):
                first, last = (int(x) for x in name[5:-5].split("-"))
                meta = read_json(self._base(first, last) + ".json")
                binary = self._base(first, last) + ".bin"
                if meta and os.path.isfile(binary) and os.path.getsize(binary) == meta.get("bytes"):
                    out.add((first, last))
        return out

    def write(self, first: int, last: int, items: Iterable[Tuple[int, str, numpy.ndarray]]) -> None:
        """Write records first..last, (index, text, C-contiguous array) each, as one part."""
        base = self._base(first, last)
        entries, size, dtype = [], 0, None
        with open(base + ".bin.tmp", "wb") as f:
            for index, text, array in items:
                f.write(array.data if array.size else b"")
                entries.append([index, text, list(array.shape)])
                size += array.nbytes
                dtype = array.dtype.str
        os.replace(base + ".bin.tmp", base + ".bin")
        write_json(base + ".json", {"items": entries, "bytes": size, "dtype": dtype})

    def read(self, first: int, last: int) -> Iterator[Tuple[int, str, numpy.ndarray]]:
        """The records of a complete part: (index, text, array) each."""
        base = self._base(first, last)
        meta = read_json(base + ".json")
        data = numpy.fromfile(base + ".bin", dtype=meta["dtype"] or "float32")
        offset = 0
        for index, text, shape in meta["items"]:
            n = int(numpy.prod(shape))
            yield index, text, data[offset: offset + n].reshape(shape)
            offset += n

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class Output:
    """The OUTPUT being written: ``OUTPUT.tmp`` (HDF5, filled as groups come, and at the start
    from the complete parts of an earlier run) beside its :class:`Parts` journal. Use as a
    context manager: :meth:`finish` renames OUTPUT.tmp to OUTPUT and removes the parts; leaving
    the block without it (an error, Ctrl-C) closes OUTPUT.tmp and keeps the parts for a re-run."""

    def __init__(self, output: str, args: dict):
        self.output, self.tmp, self.args = output, output + ".tmp", args
        self.parts = Parts(output, args)
        self.done = self.parts.done()
        self.sentence_to_index = {}
        self.h5 = h5py.File(self.tmp, "w")
        for first, last in sorted(self.done):
            self._add(self.parts.read(first, last))

    def __enter__(self) -> "Output":
        return self

    def __exit__(self, *exc) -> None:
        if self.h5.id.valid:
            self.h5.close()

    def _add(self, items: Iterable[Tuple[int, str, numpy.ndarray]]) -> None:
        for index, text, array in items:
            _dataset(self.h5, str(index), array)
            self.sentence_to_index[text] = str(index)

    def add(self, first: int, last: int, items: List[Tuple[int, str, numpy.ndarray]]) -> None:
        """Records first..last (index, text, C-contiguous array): journal part, then OUTPUT.tmp."""
        self.parts.write(first, last, items)
        self._add(items)

    def finish(self) -> None:
        """Write sentence_to_index and the arguments, close, rename to OUTPUT, remove the parts."""
        _write_index(self.h5, self.sentence_to_index, self.args)
        self.h5.close()
        os.replace(self.tmp, self.output)
        self.parts.remove()


def write_file(path: str, args: dict, items: Iterable[Tuple[int, str, numpy.ndarray]], attrs=None) -> int:
    """Write a complete file in the final layout at once (one shard of ``spacy_elmo.scale``):
    the datasets of ``items`` ((index, text, array) each, in index order), ``sentence_to_index``,
    the ``args`` attribute and ``attrs`` (name -> JSON-plain value, stored as JSON). Written as
    ``path.tmp-PID`` and renamed, so ``path`` exists only when complete. Returns its size in bytes."""
    tmp = f"{path}.tmp-{os.getpid()}"
    sentence_to_index = {}
    with h5py.File(tmp, "w") as f:
        for index, text, array in items:
            _dataset(f, str(index), array)
            sentence_to_index[text] = str(index)
        _write_index(f, sentence_to_index, args)
        for name, value in (attrs or {}).items():
            f.attrs[name] = json.dumps(value, sort_keys=True)
    os.replace(tmp, path)
    return os.path.getsize(path)


def _write_index(f: h5py.File, sentence_to_index: dict, args: dict) -> None:
    f.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype(), data=[json.dumps(sentence_to_index)])
    f.attrs[ATTR] = json.dumps(args, sort_keys=True)


def _dataset(f: h5py.File, name: str, array: numpy.ndarray) -> None:
    """create_dataset(name, data=array) through h5py's low-level API (a third less time per
    dataset, which matters for millions of short sentences)."""
    space = h5py.h5s.create_simple(array.shape)
    dset = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(array.dtype), space)
    if array.size:
        dset.write(h5py.h5s.ALL, h5py.h5s.ALL, numpy.ascontiguousarray(array))


def read_json(path: str):
    """The JSON value of a file, or None if it is missing or not JSON."""
    try:
        return read_small_json(path, CONFIG_BYTES, "JSON file")
    except (OSError, ValueError):
        return None


def open_journal(folder: str, args: dict, keep: Sequence[str] = ()) -> str:
    """Make ``folder`` the resumable journal of one set of arguments ``args`` (a JSON-plain dict):
    the contents of a folder whose ``manifest.json`` holds other arguments are discarded (all but
    the names in ``keep``, e.g. a held lock file), torn ``*.tmp`` files are removed, and the
    manifest is written where missing. Returns ``folder``."""
    manifest = os.path.join(folder, "manifest.json")
    if os.path.isdir(folder) and read_json(manifest) != args:
        clear_folder(folder, keep)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".tmp"):
            os.remove(os.path.join(folder, name))
    if not os.path.isfile(manifest):
        write_json(manifest, args)
    return folder


def clear_folder(folder: str, keep: Sequence[str] = ()) -> None:
    """Remove everything in ``folder`` but the names in ``keep`` (``folder`` itself stays).
    Raises OSError, removing nothing, where ``folder`` is a symlink (as :func:`shutil.rmtree`)."""
    if os.path.islink(folder):
        raise OSError(f"{folder}: a symbolic link, not a folder: not clearing what it points to")
    for name in os.listdir(folder):
        if name not in keep:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def write_json(path: str, data) -> None:
    """Write ``data`` as JSON into ``path.tmp``, then rename it to ``path`` (never half-written)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
    os.replace(tmp, path)
