"""Models by name: packaged, registered (published AllenNLP ELMo models) and downloaded into the
per-user cache; the resumable downloader and the model listing. No spaCy here (torch only to
validate a download).

    from spacy_elmo.hub import download_model
    download_model("elmo-small")                    # -> cache folder; then BiLM.from_pretrained("elmo-small")

Modules: :mod:`.registry` (names -> URLs), :mod:`.cache` (where, and the downloaded models),
:mod:`.resolve` (a name or directory -> model files, for ``BiLM.from_pretrained``), :mod:`.fetch` (one
file, HTTP Range resume), :mod:`.download` (a model: digests, validation, install),
:mod:`.catalog` (``models`` listing), :mod:`.cli` (the ``download`` and ``models`` commands).
"""
from .cache import cache_dir
from .download import download_model, parse_pins
from .fetch import ElmoDownloadArgumentError, ElmoDownloadError
from .registry import REGISTRY
from .resolve import available, model_files, resolve

__all__ = ["REGISTRY", "ElmoDownloadArgumentError", "ElmoDownloadError", "available", "cache_dir", "download_model",
           "model_files", "parse_pins", "resolve"]
