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

- ``.lock``: the exclusive lock of OUTPUT_DIR (:func:`lock_output`, :mod:`spacy_elmo.locks`),
  held for the whole run, from before anything is written to after the final rename. It lies in
  this folder so that a run leaves nothing else beside OUTPUT_DIR: a finished or refused run
  leaves no lock file, and one killed with ``kill -9`` leaves it inside the folder it leaves
  anyway, where it blocks nothing (the kernel drops the lock with its holder).
"""
import json
import os
from contextlib import contextmanager
from typing import Iterator, Optional

import numpy

from ..embed.writer import clear_folder, open_journal, read_json, write_json
from ..locks import Lock, hold

LOCK = ".lock"


def partial_dir(output: str) -> str:
    """``OUTPUT_DIR.partial`` (OUTPUT_DIR normalised: ``out/`` is ``out``)."""
    return os.path.normpath(output) + ".partial"


@contextmanager
def lock_output(output: str) -> Iterator[Lock]:
    """Hold the exclusive lock of OUTPUT_DIR, ``OUTPUT_DIR.partial/.lock``, for the ``with`` block
    (``OUTPUT_DIR.partial/`` is created for it where missing). On leaving, the lock file goes and
    then the folder, where it is left empty (a finished run, or one refused before saving any
    work). Raises :class:`~spacy_elmo.errors.ElmoLockError` at once, one line naming the pid,
    while another run (another process, or another call in this one) holds it; nothing is written
    or removed then."""
    folder = partial_dir(output)
    lock = hold(os.path.join(folder, LOCK), f"OUTPUT_DIR {output!r}", "wait for that run to finish (or stop it), "
                "or choose another OUTPUT_DIR", make_folder=True)
    try:
        yield lock
    finally:
        lock.release()
        _remove_if_empty(folder)


def _remove_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)  # only while empty: another run's lock file, or saved work, keeps it
    except OSError:
        pass


class Partial:
    """The ``OUTPUT_DIR.partial/`` folder of one set of arguments ``args`` (a JSON-plain dict)."""

    def __init__(self, output: str, args: dict):
        self.dir = open_journal(partial_dir(output), args, keep=(LOCK,))

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
        """Remove the folder, all but the lock file of a run that holds it (:func:`lock_output`
        removes that, and then the folder)."""
        try:
            clear_folder(self.dir, keep=(LOCK,))
        except OSError:
            pass
        _remove_if_empty(self.dir)

    def remove_if_unused(self) -> None:
        """Remove the folder when it holds no saved work (no vocab.json, no state.npz): a run
        refused in its first pass (an empty corpus, no word reaching min_count) leaves nothing."""
        if not any(os.path.isfile(self._path(name)) for name in ("vocab.json", "state.npz")):
            self.remove()
