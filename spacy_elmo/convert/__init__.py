"""Model conversion, files in and bilm-tf files out: a model directory of another ELMo format ->
a spacy-elmo model directory (``options.json``, ``weights.hdf5``, ``sha256.json``), with
``python -m spacy_elmo convert SRC OUT --format elmoformanylangs`` (see :mod:`.efml`). It knows no
model names and downloads nothing: :mod:`spacy_elmo.hub` (above it) downloads the published
ELMoForManyLangs zips and converts them with :func:`convert`. A source that cannot be converted
raises :class:`~spacy_elmo.errors.ElmoModelFileError` naming the file."""
from .efml import convert, load_source

FORMATS = ("elmoformanylangs",)

__all__ = ["FORMATS", "convert", "load_source"]
