"""The published AllenNLP English ELMo models that ``python -m spacy_elmo download NAME`` knows.

Each file lives at ``{BASE_URL}/<shape>/elmo_<shape>_{options.json,weights.hdf5}`` (bilm-tf /
AllenNLP layout). ``SPACY_ELMO_MIRROR`` replaces BASE_URL (a mirror with the same layout, or the
local test server). Sizes are approximate (parameters x 4 bytes, float32); the sha256 of a file is
given where we know it (``None``: it is recorded at the first complete download instead).
"""
import os
from typing import Dict, NamedTuple, Optional

BASE_URL = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
MIRROR_ENV = "SPACY_ELMO_MIRROR"


class Entry(NamedTuple):
    """One registered model. shape: AllenNLP's name of the architecture (the URL folder);
    lstm_dim / projection_dim: cell and projection size (output dim = 2 x projection_dim);
    n_highway: char-CNN highway layers; params_m: millions of parameters; size_mb: approximate
    weights.hdf5 size in MB; sha256: {"options.json": hex or None, "weights.hdf5": hex or None}."""

    name: str
    shape: str
    lstm_dim: int
    projection_dim: int
    n_highway: int
    params_m: float
    size_mb: int
    sha256: Dict[str, Optional[str]]
    note: str

    @property
    def output_dim(self) -> int:
        return 2 * self.projection_dim

    def urls(self) -> Dict[str, str]:
        """{"options.json": URL, "weights.hdf5": URL}, under $SPACY_ELMO_MIRROR if set."""
        base = os.environ.get(MIRROR_ENV) or BASE_URL
        stem = f"{base.rstrip('/')}/{self.shape}/elmo_{self.shape}"
        return {"options.json": f"{stem}_options.json", "weights.hdf5": f"{stem}_weights.hdf5"}


def _entry(name, shape, lstm_dim, projection_dim, n_highway, params_m, note):
    return Entry(name, shape, lstm_dim, projection_dim, n_highway, params_m, round(params_m * 4),
                 {"options.json": None, "weights.hdf5": None}, note)


REGISTRY: Dict[str, Entry] = {e.name: e for e in (
    _entry("elmo-small", "2x1024_128_2048cnn_1xhighway", 1024, 128, 1, 13.6, "1B Word Benchmark"),
    _entry("elmo-medium", "2x2048_256_2048cnn_1xhighway", 2048, 256, 1, 28.0, "1B Word Benchmark"),
    _entry("elmo-original", "2x4096_512_2048cnn_2xhighway", 4096, 512, 2, 93.6, "1B Word Benchmark"),
    _entry("elmo-original-5.5b", "2x4096_512_2048cnn_2xhighway_5.5B", 4096, 512, 2, 93.6,
           "5.5B tokens: Wikipedia + WMT 2008-2012 news"),
)}


def get(name: str) -> Optional[Entry]:
    """The registered model of that name, or None."""
    return REGISTRY.get(name)


def names():
    """Registered names, smallest first."""
    return list(REGISTRY)
