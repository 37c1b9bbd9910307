"""Model names -> directories: models shipped inside the package,
models downloaded with ``python -m spacy_elmo download NAME`` (:mod:`.cache`), or a directory.

A packaged model is a folder ``<models_dir>/<name>/`` holding at least ``options.json`` and
``weights.hdf5`` (plus ``meta.json``, ``vocab.txt``, ``lm_head.hdf5`` and the attribution of its
training text when it was trained with ``python -m spacy_elmo pretrain``). ``models_dir``
defaults to the package's own folder, :data:`spacy_elmo.package_data.MODELS_DIR` (the one module
that knows where package data live). This module sits above :mod:`spacy_elmo.bilm`, which only
loads files; ``BiLM.from_pretrained`` reaches :func:`model_files` through the hook
:mod:`spacy_elmo.bilm.resolver` that ``spacy_elmo`` fills in on import. No torch import.
"""
import os
from pathlib import Path
from typing import List, Optional, Tuple, Union

from ..package_data import DEFAULT_MODEL, MODELS_DIR
from .cache import find

__all__ = ["DEFAULT_MODEL", "MODELS_DIR", "available", "model_files", "resolve"]

PathLike = Union[str, "os.PathLike[str]"]


def _folder(models_dir: Optional[PathLike]) -> Path:
    return MODELS_DIR if models_dir is None else Path(models_dir)


def available(models_dir: Optional[PathLike] = None) -> List[str]:
    """Names of the packaged models (of ``models_dir``, default the package's)."""
    directory = _folder(models_dir)
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if (p / "options.json").is_file())


def resolve(name_or_path: PathLike, models_dir: Optional[PathLike] = None) -> str:
    """Directory of a model: ``name_or_path`` itself if it is a directory, else a packaged
    model's folder, else a downloaded model's folder in the cache (``python -m spacy_elmo
    download NAME``; see :mod:`.cache`). Nothing is downloaded here.

    Raises FileNotFoundError: for a registered or partly downloaded name, with the exact download
    command; otherwise listing the packaged, registered and downloaded names.
    """
    name_or_path = os.fspath(name_or_path)
    if os.path.isdir(name_or_path):
        return name_or_path
    candidate = _folder(models_dir) / name_or_path
    if (candidate / "options.json").is_file():
        return str(candidate)
    return find(name_or_path, packaged=available(models_dir))


def model_files(name_or_path: Optional[PathLike], models_dir: Optional[PathLike] = None) -> Tuple[str, str]:
    """(options.json path, weights.hdf5 path) of a model name (packaged or downloaded) or model
    directory (None: :data:`DEFAULT_MODEL`); see :func:`resolve`. ``BiLM.from_pretrained``
    resolves names with it (``spacy_elmo`` installs it in :mod:`spacy_elmo.bilm.resolver`)."""
    directory = resolve(DEFAULT_MODEL if name_or_path is None else name_or_path, models_dir)
    return os.path.join(directory, "options.json"), os.path.join(directory, "weights.hdf5")

