"""The views a probe scores: each biLM layer alone and the uniform layer average, keyed by their
layer spec names (:mod:`spacy_elmo.layer_spec`): "layer_0".."layer_L", "average"."""
from typing import Dict, Sequence

import numpy

from ..layer_spec import layer_names, parse

AVERAGE = "average"


def view_names(num_layers: int) -> Sequence[str]:
    """The view keys of a biLM with ``num_layers`` biLSTM layers: layer_0..layer_L, average."""
    return layer_names(num_layers + 1) + (AVERAGE,)


def views(vecs: numpy.ndarray, specs: Sequence[str] = ()) -> Dict[str, numpy.ndarray]:
    """{spec name: (..., dim)} of (..., L + 1, dim) vectors (the layer axis second to last), the
    view :meth:`LayerSpec.apply` gives. ``specs``: the layer specs (default: :func:`view_names`,
    i.e. layer_j alone, 0 = char CNN, and "average", ELMo's eq. 1 with s_j = 1 / (L + 1),
    gamma = 1). Layer views are numpy views (no copy). Raises ElmoConfigError for a bad spec."""
    stacked = numpy.moveaxis(vecs, -2, 0)
    chosen = [parse(s, "probe view") for s in (specs or view_names(vecs.shape[-2] - 1))]
    return {spec.name: spec.apply(stacked) for spec in chosen}


def top_view(keys) -> str:
    """The highest "layer_k" among view keys (the top biLSTM layer). Raises ValueError if there
    is none."""
    layers = [k for k in keys if k.startswith("layer_") and k[6:].isdigit()]
    if not layers:
        raise ValueError(f"no layer_k view among {sorted(keys)}")
    return max(layers, key=lambda k: int(k[6:]))


def view_label(view: str) -> str:
    """Human label of a view key: "layer_0" -> "layer 0", "average" -> "average"."""
    return view.replace("_", " ")


def model_label(m: dict) -> str:
    """The probed model as the report and the figure name it: its name (or its two files) and,
    where recorded, the tokens its lineage saw (which release of a model it was)."""
    name = m["model"] or f"{m['options_path']} + {m['weights_path']}"
    return name + (f", {m['lineage_tokens'] / 1e6:.1f}M tokens seen" if m.get("lineage_tokens") else "")
