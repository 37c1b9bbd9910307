"""What each HDF5 dataset holds: ``--layers all | top | average | layer_k | mix:w0,...,wL[,gamma=G]``,
a :class:`spacy_elmo.layer_spec.LayerSpec` (see there for what each one computes).

For a sentence's biLM output H (L+1, n, D) float32: all -> H (L+1, n, D); every other spec ->
(n, D). An empty sentence (n = 0) gives (L+1, 0, D) or (0, D).
"""
import numpy

from ..layer_spec import LayerSpec, parse as _parse

DTYPES = ("float32", "float16")
OPTION = "--layers"


def parse(text: str) -> LayerSpec:
    """Parse ``--layers``. Raises ElmoConfigError (a ValueError) with the accepted forms."""
    return _parse(text, OPTION)


def check(spec: LayerSpec, n_layers: int) -> None:
    """Raise ElmoConfigError unless the spec fits a biLM of ``n_layers`` biLSTM layers (n_layers + 1
    stacked layers: a mix's weight count, layer_k's k)."""
    spec.validate(n_layers + 1, OPTION)


def select(spec: LayerSpec, H: numpy.ndarray, dtype: str = "float32") -> numpy.ndarray:
    """The dataset for one sentence: H (L+1, n, D) float32 -> (L+1, n, D) or (n, D) in ``dtype``."""
    return numpy.ascontiguousarray(spec.apply(H), dtype=dtype)
