"""Errors raised by :mod:`spacy_elmo.bilm`, and :class:`ElmoError`, the base of every error the
package raises on purpose (re-exported as ``spacy_elmo.ElmoError``; it lives here because
``bilm/`` imports nothing of the package outside itself)."""


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

    def __init__(self, message: str, path=None, dataset=None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.dataset = dataset
