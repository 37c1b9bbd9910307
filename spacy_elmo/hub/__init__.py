"""Models by name: packaged, in the catalog (the published AllenNLP and ELMoForManyLangs ELMo
models) and downloaded into the per-user cache; the one loader of a biLM by name; the resumable
downloader and the model listing. No spaCy here (torch only to load or validate a model).

    from spacy_elmo.hub import download_model, load_bilm
    download_model("elmo-small")                    # -> cache folder
    bilm = load_bilm("elmo-small")                  # a name, a directory, or options_path + weights_path

Modules, lowest first: :mod:`.fetch` (one file, HTTP Range resume), :mod:`.catalog` (every name
``download`` takes: format, language, size, URLs, sha256, licence), :mod:`.cache` (where, and the
state of each downloaded model), :mod:`.hints` (the commands errors print), :mod:`.resolve` (a
name or directory -> model files, and :func:`load_bilm`), :mod:`.unzip` (safe unpacking),
:mod:`.efml_download` (an ELMoForManyLangs zip, converted with :mod:`spacy_elmo.convert`),
:mod:`.download` (a model: digests, validation, install), :mod:`.listing` (``models``),
:mod:`.cli` (the ``download`` and ``models`` commands).
"""
from .cache import cache_dir
from .catalog import CATALOG
from .download import download_model, parse_pins
from .resolve import available, load_bilm, model_files, resolve

__all__ = ["CATALOG", "available", "cache_dir", "download_model", "load_bilm", "model_files", "parse_pins",
           "resolve"]
