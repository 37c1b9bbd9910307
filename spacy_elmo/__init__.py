"""spacy-elmo: ELMo contextual word vectors (Peters et al. 2018) for spaCy v3.

``import spacy_elmo`` is light (no torch/spaCy import). It exports (``__all__``), each name but
the errors loading its module on first access:

- from :mod:`spacy_elmo.errors` (it imports nothing): ``ElmoError``, the base class
  of every error the package raises, and its kinds ``ElmoConfigError``, ``ElmoDataError``,
  ``ElmoTypeError``, ``ElmoModelFileError``, ``ElmoMemoryError``, ``ElmoFileError``,
  ``ElmoDownloadError``, ``ElmoBuildError``, ``ElmoLockError``;
- from :mod:`spacy_elmo.pipeline`: ``ElmoComponent``, ``ElmoData``, ``ElmoListener``,
  ``ScalarMix``, ``Mix``, ``learned_mixes``, ``format_mixes``, ``restore_vector_hooks``,
  ``with_vector_hooks``;
- from :mod:`spacy_elmo.bilm`: ``BiLM``, ``batch_to_ids``;
- ``DEFAULT_MODEL``: the packaged default biLM's name.

spaCy finds the ``elmo`` factory and the ``spacy_elmo.*`` architectures through entry points.

``import spacy_elmo`` also registers ``doc._.elmo`` / ``span._.elmo`` / ``token._.elmo``, so Docs
stored with their user data (``DocBin(store_user_data=True)``, ``doc.to_bytes()``) read back in
a fresh process: at once if spaCy is already imported, else right after spaCy is first imported
(a one-shot import hook; see :mod:`._extensions_hook`), so this import stays light.
"""
__version__ = "0.1.0"

from ._extensions_hook import install_on_spacy_import  # noqa: E402
from .bilm import resolver as _bilm_resolver  # noqa: E402  (no torch import)
from .errors import (  # noqa: E402
    ElmoBuildError,
    ElmoConfigError,
    ElmoDataError,
    ElmoDownloadError,
    ElmoError,
    ElmoFileError,
    ElmoLockError,
    ElmoMemoryError,
    ElmoModelFileError,
    ElmoTypeError,
)

install_on_spacy_import()


def _model_files(name_or_path):
    from .hub.resolve import model_files

    return model_files(name_or_path)


# BiLM.from_pretrained resolves model names (packaged, downloaded) through spacy_elmo.hub; bilm/
# itself knows only directories (see spacy_elmo.bilm.resolver).
_bilm_resolver.set_resolver(_model_files)

_PIPELINE = ("ScalarMix", "ElmoListener", "ElmoData", "ElmoComponent", "learned_mixes", "format_mixes", "Mix",
             "restore_vector_hooks", "with_vector_hooks")
_BILM = ("BiLM", "batch_to_ids")


def __getattr__(name):
    if name in _PIPELINE:
        from . import pipeline

        return getattr(pipeline, name)
    if name == "DEFAULT_MODEL":
        from .package_data import DEFAULT_MODEL

        return DEFAULT_MODEL
    if name in _BILM:
        from . import bilm

        return getattr(bilm, name)
    raise AttributeError(f"module 'spacy_elmo' has no attribute {name!r}")


__all__ = ["DEFAULT_MODEL", "ElmoError", "ElmoConfigError", "ElmoDataError", "ElmoTypeError", "ElmoModelFileError",
           "ElmoMemoryError", "ElmoFileError", "ElmoDownloadError", "ElmoBuildError",
           "ElmoLockError", *_PIPELINE, *_BILM]
