"""Errors raised by :mod:`spacy_elmo.bilm`, and :class:`ElmoError`, the base of every error bad
input can cause: a model, corpus, data or checkpoint file, a config or option value, a command-line
argument, an environment setting, a download, an argument of the Python API of the wrong type or
shape (re-exported as ``spacy_elmo.ElmoError``; it lives here because ``bilm/`` imports nothing of
the package outside itself). A plain builtin error is left only for an internal invariant that no
input reaches (a self-check of the native kernels, an argument no caller outside the package
passes, an error caught and raised again as an ElmoError), and for the ``FileNotFoundError`` /
``OSError`` of a path that does not exist or cannot be read."""
import os
from typing import Optional, Union


class ElmoError(Exception):
    """Base class of every public spacy-elmo error (bad model files, config, corpus, download,
    embed or scale options...). Each subclass also keeps its builtin parent (``ValueError`` or
    ``RuntimeError``), so ``except ValueError`` still catches the ones it caught before.
    The message is one line that names the file, key or option and the reason; the command line
    prints it as ``error: MESSAGE``."""


class ElmoWeightsError(ElmoError, ValueError):
    """A model file cannot be used: ``options.json`` or ``weights.hdf5`` is missing, unreadable,
    not HDF5, truncated, lacks a dataset, or holds a dataset whose shape disagrees with the options.

    The message names the file and, where one is involved, the dataset or options key.
    Subclasses :class:`ValueError`, so ``except ValueError`` also catches it.
    Attributes: ``path`` (the file), ``dataset`` (dataset name or options key, or ``None``).
    """

    def __init__(self, message: str, path: Union[str, os.PathLike, None] = None,
                 dataset: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.dataset = dataset


class ElmoInputError(ElmoError, ValueError):
    """An argument, option or environment setting has a value that cannot be used: a tensor of
    the wrong shape for :meth:`BiLM.forward`, a batch size < 1, a thread count or precision that
    is not one, a char CNN activation that is not ``relu`` / ``tanh``. The message names the
    argument or setting and what is expected. Subclasses :class:`ValueError`."""


class ElmoInputTypeError(ElmoError, TypeError):
    """An argument of the wrong type: a ``str`` where a list of tokenised sentences is expected,
    a token that is not a ``str``, a value of the wrong type for ``doc._.elmo``. The message
    names what was expected and what was given. Subclasses :class:`TypeError`."""


class ElmoFileError(ElmoError, OSError):
    """A file that is read whole cannot be read safely: it is not a regular file (a FIFO, a
    device such as ``/dev/zero``, a directory, a socket; symlinks are followed to what they name)
    or it is larger than the cap for its kind (see :mod:`.files`). The message names the file and
    what it is. Subclasses :class:`OSError`, so ``except OSError`` also catches it.
    Attribute: ``path``."""

    def __init__(self, message: str, path: Union[str, os.PathLike, None] = None) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)


class ElmoMemoryError(ElmoWeightsError, MemoryError):
    """A model does not fit in memory: the datasets its options imply add up to more than the
    physical memory (checked before anything is read), or a ``MemoryError`` was raised
    while it was loaded. The message names the file, the size and the parameter limit
    ($SPACY_ELMO_MAX_PARAMS). Subclasses :class:`ValueError` (as every ElmoWeightsError) and
    :class:`MemoryError`."""
