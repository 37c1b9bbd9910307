"""Models by name: packaged, registered (published AllenNLP ELMo models) and downloaded into the
per-user cache; the resumable downloader and the model listing. No spaCy here (torch only to
validate a download and in :func:`load_bilm`).

    from spacy_elmo.hub import download_model, load_bilm
    download_model("elmo-small")                    # -> cache folder
    bilm = load_bilm("elmo-small")                  # a spacy_elmo.bilm.BiLM (also spacy_elmo.load_bilm)

Modules: :mod:`.registry` (names -> URLs), :mod:`.cache` (where, and the downloaded models),
:mod:`.resolve` (a name or directory -> model files; :func:`load_bilm`), :mod:`.fetch` (one
file, HTTP Range resume), :mod:`.download` (a model: digests, validation, install),
:mod:`.catalog` (``models`` listing), :mod:`.cli` (the ``download`` and ``models`` commands).
"""
from .cache import cache_dir
from .download import download_model, parse_pins
from .fetch import ElmoDownloadError
from .registry import REGISTRY
from .resolve import available, load_bilm, model_files, resolve

__all__ = ["REGISTRY", "ElmoDownloadError", "available", "cache_dir", "download_model", "load_bilm", "model_files",
           "parse_pins", "resolve"]
