"""Downloaded models: the registry of published AllenNLP ELMo models, the per-user cache, the
resumable downloader and the model listing. No spaCy here (torch only to validate a download).

    from spacy_elmo.hub import download_model
    download_model("elmo-small")                    # -> cache folder; then BiLM.from_pretrained("elmo-small")

Modules: :mod:`.registry` (names -> URLs), :mod:`.cache` (where, and name resolution used by
``spacy_elmo.bilm.pretrained.resolve``), :mod:`.fetch` (one file, HTTP Range resume),
:mod:`.download` (a model: digests, validation, install), :mod:`.catalog` (``models`` listing).
"""
from .cache import cache_dir
from .download import download_model, parse_pins
from .fetch import ElmoDownloadError
from .registry import REGISTRY

__all__ = ["REGISTRY", "ElmoDownloadError", "cache_dir", "download_model", "parse_pins"]
