"""Errors raised by :mod:`spacy_elmo.bilm`."""


class ElmoWeightsError(ValueError):
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
