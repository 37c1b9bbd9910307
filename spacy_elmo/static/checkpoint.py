"""Resumable state of a distillation: ``OUTPUT_DIR.partial/`` beside OUTPUT_DIR, as ``embed``
keeps ``OUTPUT.parts/`` (:mod:`spacy_elmo.embed.writer`; its JSON files are written the same
way, as ``*.tmp`` then renamed).

- ``manifest.json``: the arguments that decide the sums (model, corpus files with their sizes
  and times, view, counts options). A folder with another manifest is discarded.
- ``vocab.json``: the first pass's result (words, counts, records, tokens, types), so that a
  resumed run does not count again.
- ``state.npz``: the running sums (float64 (V, K, dim)), the contexts taken per word (int64
  (V,)) and the position (records done) with the run's counters, written as
  ``state.npz.tmp`` and renamed: a run killed at any moment (``kill -9``) leaves the previous
  complete state, and a re-run goes on from its position.

The sums and counts are consistent at every saved position: a state is saved only between
groups (:mod:`.accumulate`). The output is written inside the folder too (``output.writing/``,
:mod:`.writer`) and renamed to OUTPUT_DIR; the folder is removed when OUTPUT_DIR is complete,
so a killed run leaves this one folder and nothing else.
"""
import json
import os
import shutil
from typing import Optional

import numpy

from ..embed.writer import open_journal, read_json, write_json


class Partial:
    """The ``OUTPUT_DIR.partial/`` folder of one set of arguments ``args`` (a JSON-plain dict)."""

    def __init__(self, output: str, args: dict):
        self.dir = open_journal(os.path.normpath(output) + ".partial", args)

    def _path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def vocab(self) -> Optional[dict]:
        """The saved first pass ({"words", "counts", "records", "tokens", "types"}) or None."""
        return read_json(self._path("vocab.json"))

    def save_vocab(self, vocab: dict) -> None:
        write_json(self._path("vocab.json"), vocab)

    def state(self) -> Optional[dict]:
        """The saved state: {"sums", "counts", **counters} or None (none saved, or unreadable)."""
        path = self._path("state.npz")
        if not os.path.isfile(path):
            return None
        try:
            with numpy.load(path, allow_pickle=False) as data:
                return {"sums": data["sums"], "counts": data["counts"], **json.loads(str(data["meta"]))}
        except (OSError, ValueError, KeyError):
            return None

    def save_state(self, sums: numpy.ndarray, counts: numpy.ndarray, counters: dict) -> None:
        """Write the state atomically (``state.npz.tmp``, renamed)."""
        path = self._path("state.npz")
        with open(path + ".tmp", "wb") as f:
            numpy.savez(f, sums=sums, counts=counts, meta=numpy.array(json.dumps(counters, sort_keys=True)))
        os.replace(path + ".tmp", path)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def remove_if_unused(self) -> None:
        """Remove the folder when it holds no saved work (no vocab.json, no state.npz): a run
        refused in its first pass (an empty corpus, no word reaching min_count) leaves nothing."""
        if not any(os.path.isfile(self._path(name)) for name in ("vocab.json", "state.npz")):
            self.remove()
