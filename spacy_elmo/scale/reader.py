"""Read the vectors of a Ray embed run through its manifest (no Ray needed).

    from spacy_elmo.scale import ShardedVectors, read_line
    with ShardedVectors("out/") as vectors:          # the output directory or its manifest.json
        vectors[12]                                   # line 12: (L+1, n, D) or (n, D) numpy, dtype as written
        vectors.sentence_to_index()["Hi there."]      # "12" (the last line with that text)
    read_line("out/manifest.json", 12)                # the same, opening and closing its shard
"""
import bisect
import json
import os
from typing import Dict, List

import h5py
import numpy

from ..bilm.weights import self_contained_dataset
from ..errors import ElmoDataError
from . import manifest as _manifest


class ShardedVectors:
    """Line index -> array over the shards of one manifest. Shard files are opened on first use
    and kept open until :meth:`close` (or the end of a ``with`` block)."""

    def __init__(self, path: str):
        """``path``: output directory or manifest.json. Raises FileNotFoundError, ElmoDataError (a
        ValueError)."""
        self.manifest = _manifest.load(path)
        path = os.path.abspath(path)
        self.directory = path if os.path.isdir(path) else os.path.dirname(path)
        runs = sorted((a, b, k) for k, e in enumerate(self.manifest["shards"]) for a, b in e["ranges"])
        self._runs = runs
        self._starts = [r[0] for r in runs]
        self._open: Dict[int, h5py.File] = {}

    def __len__(self) -> int:
        return self.manifest["sentences"]

    def __contains__(self, index) -> bool:
        return self._shard_of(index) is not None

    def _shard_of(self, index):
        if isinstance(index, (bool, numpy.bool_)) or not isinstance(index, (int, numpy.integer)):
            return None
        k = bisect.bisect_right(self._starts, int(index)) - 1
        if k >= 0 and self._runs[k][0] <= index <= self._runs[k][1]:
            return self._runs[k][2]
        return None

    def shard_file(self, index: int) -> str:
        """Path of the shard holding line ``index``. Raises IndexError if no shard holds it."""
        k = self._shard_of(index)
        if k is None:
            raise IndexError(f"line {index!r} is not in {self.directory} ({len(self)} lines, "
                             f"{len(self.manifest['shards'])} shards)")
        return os.path.join(self.directory, self.manifest["shards"][k]["file"])

    def __getitem__(self, index: int) -> numpy.ndarray:
        """Line ``index``'s array, (L+1, n, D) or (n, D) (see the manifest's "shape"), in the
        manifest's dtype. Raises IndexError if no shard holds it, FileNotFoundError if its shard
        file is gone, ElmoDataError (a ValueError) if the shard lacks the line's dataset,
        ElmoModelFileError (a ValueError) if the dataset is an external link, virtual or stored in
        external files."""
        path = self.shard_file(index)
        k = self._shard_of(index)
        if k not in self._open:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"shard {path!r} listed in the manifest is missing")
            self._open[k] = h5py.File(path, "r")
        try:
            return self_contained_dataset(self._open[k], str(int(index)), path)[()]
        except KeyError:
            raise ElmoDataError(f"{path} has no dataset for line {index} (shard changed after the "
                                "manifest?)") from None

    def sentence_to_index(self) -> Dict[str, str]:
        """{stripped line text: "index"} over all shards (the last index for a repeated text, as
        in one ``embed`` file). Reads every shard's small index dataset. Raises ElmoDataError (a
        ValueError) naming a shard without it."""
        merged: Dict[str, int] = {}
        for entry in self.manifest["shards"]:
            shard = os.path.join(self.directory, entry["file"])
            with h5py.File(shard, "r") as f:
                try:
                    table = json.loads(self_contained_dataset(f, "sentence_to_index", shard)[0])
                except KeyError:
                    raise ElmoDataError(f"{shard} has no sentence_to_index dataset (not a shard written by "
                                        "embed --ray?)") from None
                for text, index in table.items():
                    merged[text] = max(merged.get(text, -1), int(index))
        return {text: str(i) for text, i in merged.items()}

    def indices(self) -> List[int]:
        """All line indices held, ascending."""
        return [i for a, b, _ in self._runs for i in range(a, b + 1)]

    def close(self) -> None:
        for f in self._open.values():
            f.close()
        self._open.clear()

    def __enter__(self) -> "ShardedVectors":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_line(manifest: str, index: int) -> numpy.ndarray:
    """Line ``index``'s array from the run whose manifest (or output directory) is ``manifest``.
    Raises as :meth:`ShardedVectors.__getitem__`."""
    with ShardedVectors(manifest) as vectors:
        return vectors[index]
