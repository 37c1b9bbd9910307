"""What each HDF5 dataset holds: ``--layers all | top | average | mix:w0,...,wL[,gamma=G]``.

For a sentence's biLM output H (L+1, n, D) float32 (layer 0 = char CNN [x; x], 1..L = biLSTM):
all -> H (L+1, n, D); top -> H[L] (n, D); average -> mean_j H[j] (n, D); mix -> gamma *
sum_j softmax(w)_j H[j] (n, D), the scalar mix of Peters et al. (2018, eq. 1) with pre-softmax
weights w as in ``spacy_elmo.pipeline.layers.scalar_mix`` (gamma 1 unless given).
An empty sentence (n = 0) gives (L+1, 0, D) or (0, D).
"""
from typing import NamedTuple, Optional, Tuple

import numpy

DTYPES = ("float32", "float16")


class LayerSpec(NamedTuple):
    """kind: all / top / average / mix; weights: softmax-normalised (L+1,) float32 for mix
    (else None); gamma: the mix's scale; text: the option as given."""

    kind: str
    weights: Optional[numpy.ndarray]
    gamma: float
    text: str


def parse(text: str) -> LayerSpec:
    """Parse ``--layers``. Raises ValueError with the accepted forms for anything else."""
    if text in ("all", "top", "average"):
        return LayerSpec(text, None, 1.0, text)
    if not text.startswith("mix:"):
        raise ValueError(f"--layers {text!r}: expected all, top, average or mix:w0,w1,...[,gamma=G]")
    items = [x.strip() for x in text[4:].split(",") if x.strip()]
    gamma = 1.0
    if items and items[-1].startswith("gamma="):
        gamma = _number(items.pop()[6:], text)
    w = numpy.array([_number(x, text) for x in items], dtype="float64")
    if not len(w):
        raise ValueError(f"--layers {text!r}: give one weight per layer, e.g. mix:0,0,1")
    s = numpy.exp(w - w.max())
    return LayerSpec("mix", (s / s.sum()).astype("float32"), gamma, text)


def _number(x: str, text: str) -> float:
    try:
        value = float(x)
    except ValueError:
        raise ValueError(f"--layers {text!r}: {x!r} is not a number") from None
    if not numpy.isfinite(value):
        raise ValueError(f"--layers {text!r}: {x!r} is not finite")
    return value


def check(spec: LayerSpec, n_layers: int) -> None:
    """Raise ValueError unless a mix has n_layers + 1 weights (the biLM's layer count)."""
    if spec.kind == "mix" and len(spec.weights) != n_layers + 1:
        raise ValueError(f"--layers {spec.text!r}: {len(spec.weights)} weights, but the model has "
                         f"{n_layers + 1} layers (char CNN + {n_layers} biLSTM): give {n_layers + 1}")


def select(spec: LayerSpec, H: numpy.ndarray, dtype: str = "float32") -> numpy.ndarray:
    """The dataset for one sentence: H (L+1, n, D) float32 -> (L+1, n, D) or (n, D) in ``dtype``."""
    if spec.kind == "all":
        out = H
    elif spec.kind == "top":
        out = H[-1]
    elif spec.kind == "average":
        out = H.mean(axis=0)
    else:
        out = spec.gamma * numpy.tensordot(spec.weights, H, axes=1)
    return numpy.ascontiguousarray(out, dtype=dtype)


def shape(spec: LayerSpec, n_layers: int, n: int, dim: int) -> Tuple[int, ...]:
    """Shape of the dataset of an n-token sentence."""
    return (n_layers + 1, n, dim) if spec.kind == "all" else (n, dim)
