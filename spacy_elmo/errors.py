"""Every error that bad input can cause, in one module: :class:`ElmoError` and its kinds.

Bad input is a model, corpus, data, checkpoint or config file, a config key, a command-line option,
an environment setting, a download, or an argument of the Python API. Each error is one line that
names the key, option or file, the reason, and the fix where there is one; the command line prints
it as ``error: MESSAGE`` (:mod:`spacy_elmo.cli_errors`).

Each kind keeps a builtin parent, so ``except ValueError`` (``OSError``, ...) still catches it:

===================== ========================== ==============================================
kind                  builtin parent             raised for
===================== ========================== ==============================================
ElmoConfigError       ValueError                 a setting: config key, option, argument value,
                                                 environment variable, layer spec, model name
ElmoDataError         ValueError                 the data to process: corpus, text, DocBin,
                                                 tensors, probe data, shards, ``doc._.elmo``
ElmoTypeError         TypeError                  an argument of the wrong type
ElmoModelFileError    ValueError                 a model's files: options.json, weights.hdf5,
                                                 a source to convert, a training checkpoint
ElmoMemoryError       MemoryError (+ ValueError) a model that does not fit in memory
ElmoFileError         OSError                    a file that is not safe to read whole
ElmoDownloadError     RuntimeError               a download that failed or gave a bad file
ElmoBuildError        RuntimeError               native kernels that cannot be built
ElmoLockError         RuntimeError               an output another process is writing
===================== ========================== ==============================================

A plain builtin error is left only for an internal invariant that no input reaches (a self-check
of the native kernels, an argument no caller outside the package passes, an error caught and
raised again as an ElmoError), and for the ``FileNotFoundError`` / ``OSError`` of a path that does
not exist or cannot be read.

This module imports nothing (no torch, no spaCy): every layer of the package, ``bilm/`` included,
raises these classes (tests/test_architecture.py).
"""
import os
from typing import Optional, Union

PathLike = Union[str, os.PathLike, None]


def _path(path: PathLike) -> Optional[str]:
    return None if path is None else os.fspath(path)


class ElmoError(Exception):
    """Base class of every public spacy-elmo error. Each subclass also keeps its builtin parent
    (``ValueError``, ``TypeError``, ``OSError``, ``MemoryError`` or ``RuntimeError``).
    The message is one line that names the file, key or option and the reason."""


class ElmoConfigError(ElmoError, ValueError):
    """A setting cannot be used: a config section or key (a pipeline's ``[components.elmo]``, a
    pretraining config), a command-line option or a combination of them, an environment variable
    (``SPACY_ELMO_THREADS``, ``SPACY_ELMO_MAX_PARAMS``, ``WORLD_SIZE``, ``SPACY_ELMO_NATIVE``,
    a mirror), an argument value of the Python API (a batch size < 1, a precision, a thread
    count), a layer spec, a model name that is not known or not downloaded, a URL or ``--sha256``
    pin, an OUTPUT that exists and was written with other arguments. The message names the key
    or option, the value and what is expected. A value out of range or of the wrong kind, a NaN
    or an infinite number are all refused this way. Subclasses :class:`ValueError`.

    Attributes: ``key`` (the config key or option, or None) and ``path`` (the file involved, or
    None)."""

    def __init__(self, message: str, key: Optional[str] = None, path: PathLike = None) -> None:
        super().__init__(message)
        self.key = key
        self.path = _path(path)


class ElmoDataError(ElmoError, ValueError):
    """The data given to be processed cannot be used: a corpus file that is missing, empty, not
    UTF-8 text or too small for one training step; a JSON-lines or DocBin input without its text;
    a WiC or CoNLL-U file that is malformed; a tensor or array of the wrong shape for
    :meth:`BiLM.forward` or a scalar mix; a Ray embed run's manifest or shards that do not match;
    a ``doc._.elmo`` that cannot be matched to the Doc's tokens (after retokenization, or from a
    Doc with another text); ``similarity`` between vectors of different biLMs or views. The
    message names the file and line, or the argument, and what is expected. Subclasses
    :class:`ValueError`. Attribute: ``path`` (or None)."""

    def __init__(self, message: str, path: PathLike = None) -> None:
        super().__init__(message)
        self.path = _path(path)


class ElmoTypeError(ElmoError, TypeError):
    """An argument of the wrong type: a ``str`` where a list of tokenised sentences is expected,
    a token that is not a ``str``, a value of the wrong type for ``doc._.elmo``. The message
    names what was expected and what was given. Subclasses :class:`TypeError`."""


class ElmoModelFileError(ElmoError, ValueError):
    """A model's files cannot be used: ``options.json`` or ``weights.hdf5`` is missing,
    unreadable, not HDF5, truncated, lacks a dataset, holds a dataset whose shape disagrees with
    the options or whose sha256 differs from ``sha256.json``, or implies more parameters than
    $SPACY_ELMO_MAX_PARAMS; an ELMoForManyLangs directory to convert lacks a file or tensor; a
    pretraining ``checkpoint.pt`` is corrupt or not a checkpoint. The message names the file and,
    where one is involved, the dataset or options key. Subclasses :class:`ValueError`.
    Attributes: ``path`` (the file), ``dataset`` (dataset name or options key, or None)."""

    def __init__(self, message: str, path: PathLike = None, dataset: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = _path(path)
        self.dataset = dataset


class ElmoMemoryError(ElmoModelFileError, MemoryError):
    """A resource limit: a model does not fit in memory. The datasets its options imply add up
    to more than the physical memory (checked before anything is read), or a ``MemoryError`` was
    raised while it was loaded. The message names the file, the size and the parameter limit
    ($SPACY_ELMO_MAX_PARAMS). Subclasses :class:`MemoryError` and (as a model that cannot be
    loaded, so that every ``except ElmoModelFileError`` around a load sees it)
    :class:`ElmoModelFileError`."""


class ElmoFileError(ElmoError, OSError):
    """A file that is read whole cannot be read safely: it is not a regular file (a FIFO, a
    device such as ``/dev/zero``, a directory, a socket; symlinks are followed to what they name)
    or it is larger than the cap for its kind (see :mod:`spacy_elmo.bilm.files`). The message
    names the file and what it is. Subclasses :class:`OSError`. Attribute: ``path``."""

    def __init__(self, message: str, path: PathLike = None) -> None:
        super().__init__(message)
        self.path = _path(path)


class ElmoDownloadError(ElmoError, RuntimeError):
    """A model could not be downloaded or is not what was expected: HTTP error, unreachable host,
    connection lost after the retries, sha256 mismatch, an unsafe or corrupt zip archive, files
    that do not load, a disk that cannot take the bytes. The message names the URL or file and
    says what was kept. Subclasses :class:`RuntimeError`. Attributes: ``url``, ``path`` (either
    may be None), ``resumable`` (True when what was received was kept for the next try: the
    ``.part`` file, or a good zip whose unpacking the disk could not take)."""

    def __init__(self, message: str, url: Optional[str] = None, path: PathLike = None,
                 resumable: bool = False) -> None:
        super().__init__(message)
        self.url = url
        self.path = _path(path)
        self.resumable = resumable


class ElmoBuildError(ElmoError, RuntimeError):
    """The native training kernels cannot be built: no C++ compiler (set ``CXX``), C++
    sources missing from the install, or the compiler failed (the message ends with its output).
    ``SPACY_ELMO_NATIVE=0`` runs without them. Subclasses :class:`RuntimeError`."""


class ElmoLockError(ElmoError, RuntimeError):
    """Another process holds the lock on what this job would write (a second ``pretrain`` into one
    OUTPUT_DIR, a second ``embed`` into one OUTPUT), a wait for it ran out, or the lock file
    cannot be opened (:mod:`spacy_elmo.locks`). The message names the path, the holder (pid, and
    host where it is another one) and what to do. Subclasses :class:`RuntimeError`. Attributes:
    ``path`` (the lock file), ``pid`` (the holder's, or None when unknown)."""

    def __init__(self, message: str, path: PathLike = None, pid: Optional[int] = None) -> None:
        super().__init__(message)
        self.path = _path(path)
        self.pid = pid


__all__ = ["ElmoBuildError", "ElmoConfigError", "ElmoDataError", "ElmoDownloadError", "ElmoError", "ElmoFileError",
           "ElmoLockError", "ElmoMemoryError", "ElmoModelFileError", "ElmoTypeError"]
