"""Which biLM layers to use: one spelling everywhere (the ``elmo`` component's ``store`` and
``vectors``, ``embed --layers``, ``embed --ray`` and the probe's view keys).

For a stack H of shape (n_layers, ...) (n_layers = L + 1: layer 0 = char CNN, 1..L = biLSTM;
typically (n_layers, n_tokens, dim) float32):

- ``all``: H itself, (n_layers, ..., dim);
- ``top``: H[L], the top biLSTM layer;
- ``average``: the uniform average (1 / n_layers) sum_j H[j];
- ``layer_k``: H[k] (k = 0..L; 0 = char CNN);
- ``mix:w0,w1,...,wL[,gamma=G]``: gamma * sum_j softmax(w)_j H[j], the scalar mix of Peters et
  al. (2018, eq. 1) with pre-softmax weights w (as in ``spacy_elmo.pipeline.layers.scalar_mix``;
  gamma 1 unless given). Equal weights give ``average`` (to float32 rounding).

Each one but ``all`` gives one (..., dim) array. Anything else is an
:class:`~spacy_elmo.errors.ElmoConfigError` (an ElmoError and a ValueError) with a one-line message
listing these names.
"""
import re
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy

from .errors import ElmoConfigError

NAMES = "all, top, average, layer_k or mix:w0,w1,...[,gamma=G]"
_LAYER = re.compile(r"layer_(\d+)")  # fullmatch


@dataclass(frozen=True)
class LayerSpec:
    """A parsed spec. ``kind``: "all", "top", "average", "layer" or "mix"; ``k``: the layer of
    "layer"; ``weights``: the softmax-normalised float32 weights of "mix" (a tuple); ``gamma``:
    the mix's scale; ``name``: the canonical spelling (``parse(spec.name) == spec``)."""

    kind: str
    name: str
    k: Optional[int] = None
    weights: Optional[Tuple[float, ...]] = None
    gamma: float = 1.0

    @property
    def stacked(self) -> bool:
        """True for "all" (the result keeps the layer axis), False for the single-vector specs."""
        return self.kind == "all"

    def validate(self, n_layers: int, where: str = "layers") -> "LayerSpec":
        """Check the spec against a biLM with ``n_layers`` stacked layers (num_layers + 1);
        returns self. Raises ElmoConfigError for ``layer_k`` with k >= n_layers or a mix whose
        weight count is not n_layers."""
        if self.kind == "layer" and self.k >= n_layers:
            raise ElmoConfigError(f"{where} {self.name!r}: the biLM has layers 0..{n_layers - 1}")
        if self.kind == "mix" and len(self.weights) != n_layers:
            raise ElmoConfigError(f"{where} {self.name!r}: {len(self.weights)} weights, but the model has "
                                  f"{n_layers} layers (char CNN + {n_layers - 1} biLSTM): give {n_layers}")
        return self

    def apply(self, layers):
        """The spec's view of ``layers`` (n_layers, ..., dim), numpy or cupy, float32 or float16:
        (n_layers, ..., dim) for "all" (``layers`` itself), else (..., dim) in float32 ("top"
        and "layer_k" are views of ``layers`` when it is float32). Raises ElmoConfigError if the
        spec does not fit n_layers (see :meth:`validate`)."""
        if self.kind == "all":
            return layers
        n_layers = int(layers.shape[0])
        self.validate(n_layers)
        if self.kind in ("top", "layer"):
            return layers[n_layers - 1 if self.kind == "top" else self.k].astype("float32", copy=False)
        x = layers.astype("float32", copy=False)
        if self.kind == "average":
            return x.mean(axis=0)
        xp = _array_module(x)
        return self.gamma * xp.tensordot(xp.asarray(self.weights, dtype="float32"), x, axes=1)

    def shape(self, n_layers: int, n_tokens: int, dim: int) -> Tuple[int, ...]:
        """Shape of :meth:`apply`'s result for layers (n_layers, n_tokens, dim)."""
        return (n_layers, n_tokens, dim) if self.stacked else (n_tokens, dim)


def parse(text, where: str = "layers") -> LayerSpec:
    """Parse a spec (see the module docstring). ``where`` names the setting in errors (e.g.
    "--layers", "[components.elmo] store"). Raises ElmoConfigError for anything else."""
    if not isinstance(text, str):
        raise ElmoConfigError(f"{where} {text!r}: expected a string, one of {NAMES}")
    if text in ("all", "top", "average"):
        return LayerSpec(text, text)
    match = _LAYER.fullmatch(text)
    if match:
        return LayerSpec("layer", f"layer_{int(match.group(1))}", k=int(match.group(1)))
    if text.startswith("mix:"):
        return _parse_mix(text, where)
    raise ElmoConfigError(f"{where} {text!r}: expected {NAMES}")


def _parse_mix(text: str, where: str) -> LayerSpec:
    items = [x.strip() for x in text[4:].split(",") if x.strip()]
    gamma = 1.0
    if items and items[-1].startswith("gamma="):
        gamma = _number(items.pop()[6:], text, where)
    w = numpy.array([_number(x, text, where) for x in items], dtype="float64")
    if not len(w):
        raise ElmoConfigError(f"{where} {text!r}: give one weight per layer, e.g. mix:0,0,1")
    s = numpy.exp(w - w.max())
    weights = tuple(float(v) for v in (s / s.sum()).astype("float32"))
    name = "mix:" + ",".join(_short(x) for x in w) + ("" if gamma == 1.0 else f",gamma={_short(gamma)}")
    return LayerSpec("mix", name, weights=weights, gamma=gamma)


def _short(x: float) -> str:
    """The shortest text that reads back as ``x`` ("0" for 0.0, "-0.5", "1e-08")."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def _number(x: str, text: str, where: str) -> float:
    try:
        value = float(x)
    except ValueError:
        raise ElmoConfigError(f"{where} {text!r}: {x!r} is not a number") from None
    if not numpy.isfinite(value):
        raise ElmoConfigError(f"{where} {text!r}: {x!r} is not finite")
    return value


def layer_names(n_layers: int) -> Tuple[str, ...]:
    """The single-layer spec names of a biLM with ``n_layers`` stacked layers: layer_0..layer_L."""
    return tuple(f"layer_{k}" for k in range(n_layers))


def _array_module(x):
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return numpy
