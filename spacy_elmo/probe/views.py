"""The views a probe scores: each biLM layer alone and the uniform layer average."""
from typing import Dict

import numpy

MEAN = "mean"


def views(vecs: numpy.ndarray) -> Dict[str, numpy.ndarray]:
    """{view: (..., dim)} of (..., L + 1, dim) vectors: "0".."L" (layer j alone; 0 = char CNN)
    and "mean" (the uniform average of the L + 1 layers, ELMo's eq. 1 with s_j = 1 / (L + 1),
    gamma = 1). Layer views are numpy views (no copy)."""
    out = {str(k): vecs[..., k, :] for k in range(vecs.shape[-2])}
    out[MEAN] = vecs.mean(axis=-2)
    return out


def view_label(view: str) -> str:
    """Human label of a view key: "0" -> "layer 0", "mean" -> "average"."""
    return "average" if view == MEAN else f"layer {view}"
