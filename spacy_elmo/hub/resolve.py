"""Model names -> directories and loaded biLMs: models shipped inside the package, models
downloaded with ``python -m spacy_elmo download NAME`` (:mod:`.cache`), or a directory.
:func:`load_bilm` is the one loader of a biLM by name, directory or files: the ``elmo``
component, ``embed``, ``probe`` and ``scale`` call it.

A packaged model is a folder ``<models_dir>/<name>/`` holding at least ``options.json`` and
``weights.hdf5`` (plus ``meta.json``, ``vocab.txt``, ``lm_head.hdf5`` and the attribution of its
training text when it was trained with ``python -m spacy_elmo pretrain``). ``models_dir``
defaults to the package's own folder, :data:`spacy_elmo.package_data.MODELS_DIR` (the one module
that knows where package data live). This module sits above :mod:`spacy_elmo.bilm`, which only
loads files; ``BiLM.from_pretrained`` reaches :func:`model_files` through the hook
:mod:`spacy_elmo.bilm.resolver` that ``spacy_elmo`` fills in on import. No torch import until
:func:`load_bilm` runs.
"""
import os
from pathlib import Path
from typing import List, Optional, Tuple, Union

from ..errors import ElmoConfigError
from ..package_data import DEFAULT_MODEL, MODELS_DIR
from . import cache, catalog, hints

__all__ = ["DEFAULT_MODEL", "MODELS_DIR", "available", "find", "load_bilm", "model_files", "resolve"]

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

    Raises FileNotFoundError: for a catalog or partly downloaded name, with the command to run;
    otherwise naming the packaged, downloaded and catalog names (see :func:`find`).
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



def find(name: str, packaged: List[str]) -> str:
    """Folder of a downloaded model. Raises FileNotFoundError with the command to run when
    ``name`` is in the catalog but not (completely) downloaded or is partly downloaded, and
    naming the packaged, downloaded and catalog names when it is unknown. Nothing is downloaded."""
    try:
        status = cache.state(name)
    except ValueError:
        status = "absent"
    if status == "downloaded":
        return cache.model_dir(name)
    if status == "partial":
        raise FileNotFoundError(f"ELMo model {name!r} is only partly downloaded (in {cache.model_dir(name)}): to "
                                f"finish it, {hints.finish(name)}")
    entry = catalog.get(name)
    if entry is not None:
        size = f"about {entry.size_mb} MB" if entry.size_mb else "size not published"
        raise FileNotFoundError(f"ELMo model {name!r} is not downloaded ({size}; nothing downloads implicitly): "
                                f"{hints.finish(name)}")
    complete = [n for n in cache.downloaded() if cache.state(n) == "downloaded"]
    raise FileNotFoundError(
        f"No ELMo model named or found at {name!r}{catalog.did_you_mean(name, [*packaged, *complete])}: not a "
        f"directory with options.json + weights.hdf5, a packaged model ({', '.join(packaged) or 'none'}), a "
        f"downloaded one ({', '.join(complete) or 'none'}; in {cache.cache_dir()}) or a model of the catalog; "
        f"{catalog.listing()}")


def load_bilm(name_or_path: Optional[PathLike] = None, options_path: Optional[PathLike] = None,
              weights_path: Optional[PathLike] = None, *, stateful: bool = False, precision: str = "float32"):
    """Load a :class:`~spacy_elmo.bilm.BiLM` (frozen, CPU): from ``options_path`` +
    ``weights_path`` when given (both), else from the model that ``name_or_path`` names (a
    directory, a packaged or downloaded name; None: :data:`DEFAULT_MODEL`; see :func:`resolve`).
    ``stateful`` / ``precision``: as for ``BiLM.from_files``.

    Raises FileNotFoundError for a name that does not resolve (with the command to run, see
    :func:`find`); ElmoConfigError (a ValueError) when only one of the two paths is given;
    ElmoModelFileError (a ValueError) naming the file for a missing or malformed model file or one
    that fails its sha256."""
    from ..bilm import BiLM

    if bool(options_path) != bool(weights_path):
        given = "options_path" if options_path else "weights_path"
        raise ElmoConfigError(f"{given} is given without {'weights_path' if options_path else 'options_path'}: give "
                              "both files of one model (options.json and weights.hdf5), or neither")
    files = (options_path, weights_path) if options_path else model_files(name_or_path)
    return BiLM.from_files(files[0], files[1], stateful=stateful, precision=precision)
