"""Model names -> files for :meth:`BiLM.from_pretrained <spacy_elmo.bilm.BiLM.from_pretrained>`.

``bilm/`` knows model files and directories only; names (packaged models, downloaded ones) are
resolved above it. The package installs that resolution here when it is imported
(``spacy_elmo/__init__.py`` sets :func:`spacy_elmo.hub.resolve.model_files`), so ``bilm/``
imports nothing of the package outside itself. Without a resolver installed, only a directory
holding ``options.json`` + ``weights.hdf5`` loads. No torch import.
"""
import os
from typing import Callable, Optional, Tuple

Resolver = Callable[[Optional[str]], Tuple[str, str]]
_RESOLVER: Optional[Resolver] = None


def set_resolver(resolver: Optional[Resolver]) -> None:
    """Install ``resolver(name_or_path_or_None) -> (options.json path, weights.hdf5 path)``; None:
    remove it (directories only). ``None`` as the name means the default model."""
    global _RESOLVER
    _RESOLVER = resolver


def model_files(name_or_path: Optional[str]) -> Tuple[str, str]:
    """(options.json path, weights.hdf5 path) of a model name or directory (None: the default
    model), through the installed resolver. Raises FileNotFoundError as the resolver does, or,
    without one, when ``name_or_path`` is not a directory."""
    if _RESOLVER is not None:
        return _RESOLVER(name_or_path)
    directory = "" if name_or_path is None else os.fspath(name_or_path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"no model directory {directory!r} (model names resolve once spacy_elmo is imported)")
    return os.path.join(directory, "options.json"), os.path.join(directory, "weights.hdf5")
