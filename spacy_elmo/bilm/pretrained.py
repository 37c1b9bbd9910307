"""Model names -> directories: models shipped inside the package, and (through
:mod:`spacy_elmo.hub.cache`) models downloaded with ``python -m spacy_elmo download NAME``.

A packaged model is a folder ``spacy_elmo/models/<name>/`` holding at least ``options.json`` and
``weights.hdf5`` (plus ``meta.json``, ``vocab.txt``, ``lm_head.hdf5`` and the attribution of its
training text when it was trained with ``python -m spacy_elmo pretrain``).
"""
import os
from pathlib import Path
from typing import List, Tuple

DEFAULT_MODEL = "en_elmo_small"
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def available() -> List[str]:
    """Names of the packaged models."""
    if not MODELS_DIR.is_dir():
        return []
    return sorted(p.name for p in MODELS_DIR.iterdir() if (p / "options.json").is_file())


def resolve(name_or_path: str) -> str:
    """Directory of a model: ``name_or_path`` itself if it is a directory, else a packaged
    model's folder, else a downloaded model's folder in the cache (``python -m spacy_elmo
    download NAME``; see :mod:`spacy_elmo.hub.cache`). Nothing is downloaded here.

    Raises FileNotFoundError: for a registered or partly downloaded name, with the exact download
    command; otherwise listing the packaged, registered and downloaded names.
    """
    name_or_path = os.fspath(name_or_path)
    if os.path.isdir(name_or_path):
        return name_or_path
    candidate = MODELS_DIR / name_or_path
    if (candidate / "options.json").is_file():
        return str(candidate)
    from ..hub.cache import find  # no torch / spaCy import

    return find(name_or_path, packaged=available())


def model_files(name_or_path: str) -> Tuple[str, str]:
    """(options.json path, weights.hdf5 path) of a model name (packaged or downloaded) or model
    directory; see :func:`resolve`."""
    directory = resolve(name_or_path)
    return os.path.join(directory, "options.json"), os.path.join(directory, "weights.hdf5")
