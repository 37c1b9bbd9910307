"""Checks of ``embed``'s OUTPUT path, made before any work: OUTPUT must not be (a name of) the
INPUT, and without Ray it must be a regular file (or not exist yet) in an existing folder; and
the lock that keeps a second ``embed`` from writing the same OUTPUT (:func:`lock_output`)."""
import os

from ..errors import ElmoConfigError
from ..locks import Lock, folder_in_the_way, hold


def _same(a: str, b: str) -> bool:
    """Whether the paths name one file (one inode: equal, a symlink or a hard link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing
        return False


def check_not_input(input_path: str, output: str) -> None:
    """Raise ElmoConfigError if OUTPUT, or OUTPUT.tmp or OUTPUT.lock (written on the way), is the INPUT
    file itself (the same path, a symlink or a hard link to it): writing it would destroy the
    input, with or without --overwrite."""
    for path in (output, output + ".tmp", output + LOCK_SUFFIX):
        if _same(input_path, path):
            raise ElmoConfigError(f"OUTPUT {output!r} is the INPUT file {input_path!r} (same file): "
                                  "choose another OUTPUT")


LOCK_SUFFIX = ".lock"


def lock_output(output: str, make_folder: bool = False) -> Lock:
    """The exclusive lock of OUTPUT (a file, or with Ray a directory) for the whole run: the lock
    file ``OUTPUT.lock`` beside it, removed at the end (see :mod:`spacy_elmo.locks`; one
    left by a killed run blocks nothing). Use it in a ``with`` block. Raises
    :class:`~spacy_elmo.errors.ElmoLockError` at once, naming the pid, while another run
    (another process, or another call in this one) writes OUTPUT. ``make_folder``: create
    OUTPUT's missing parent folders (removed again if the run leaves them empty)."""
    return hold(output + LOCK_SUFFIX, f"OUTPUT {output!r}", "wait for that run to finish (or stop it), or choose "
                "another OUTPUT", make_folder=make_folder)


def check_output(input_path: str, output: str) -> None:
    """:func:`check_not_input`, then: OUTPUT must be a regular file or not exist, and its folder
    must exist (a parent that is a file is named as such). Raises ElmoConfigError naming OUTPUT."""
    check_not_input(input_path, output)
    if os.path.isdir(output):
        raise ElmoConfigError(f"OUTPUT {output!r} is a directory: give an HDF5 file name (a directory of shards is "
                              "written only with --ray)")
    if os.path.lexists(output) and not os.path.isfile(output):
        raise ElmoConfigError(f"OUTPUT {output!r} exists and is not a regular file")
    why = None if os.path.lexists(output) else folder_in_the_way(output)  # a parent that is a file
    if why is not None:
        raise ElmoConfigError(f"OUTPUT {output!r}{why}: choose an OUTPUT in an existing folder")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise ElmoConfigError(f"OUTPUT {output!r}: folder {folder!r} does not exist")
