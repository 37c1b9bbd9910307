"""Model conversion: other ELMo formats -> spacy-elmo model directories
(``python -m spacy_elmo convert SRC OUT --format elmoformanylangs``; see :mod:`.efml`)."""
from .efml import ElmoConvertError, convert, load_source

FORMATS = ("elmoformanylangs",)

__all__ = ["FORMATS", "ElmoConvertError", "convert", "load_source"]
