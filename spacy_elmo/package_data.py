"""Where the data that ship inside the package live: the packaged biLMs.

The one place that knows the package-data location (data that do *not* ship, the development
corpora, are found by the tests and the scripts in ``dev/``, never here). A packaged model is a
folder ``MODELS_DIR/<name>/`` holding at least ``options.json`` and ``weights.hdf5``;
:mod:`spacy_elmo.hub.resolve` looks names up here by default and takes another folder as
``models_dir``. No torch or spaCy import.
"""
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "models"
DEFAULT_MODEL = "en_elmo_small"  # the packaged default biLM: MODELS_DIR / DEFAULT_MODEL
