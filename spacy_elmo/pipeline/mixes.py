"""Read the learned scalar mixes back: which biLM layers each component relies on.

Peters et al. (2018, sec. 5.2-5.3) find that syntactic tasks weight the lower biLSTM layer
and semantic tasks the top one; :func:`learned_mixes` shows this for a trained pipeline.
"""
from typing import Dict, List, NamedTuple

from .layers.scalar_mix import mix_weights


class Mix(NamedTuple):
    """weights: softmax(w), one per layer (layer 0 = char CNN, j = biLSTM layer j), sum 1;
    gamma: the scale; raw: w before the softmax."""

    weights: List[float]
    gamma: float
    raw: List[float]


def learned_mixes(nlp) -> Dict[str, Mix]:
    """``{component name: Mix}`` for every initialized ScalarMix in the pipeline's components
    (ElmoListener.v1, Elmo.v1, ElmoConcat.v1 or a bare ScalarMix.v1). A component with several
    mixes gets keys ``name``, ``name#2``, ... in model order. Components without one are left out."""
    out: Dict[str, Mix] = {}
    for name, proc in nlp.pipeline:
        model = getattr(proc, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        found = [node for node in model.walk() if node.name == "scalar_mix" and node.has_param("w")]
        for k, node in enumerate(found):
            s, gamma = mix_weights(node)
            raw = node.ops.to_numpy(node.get_param("w"))
            out[name if k == 0 else f"{name}#{k + 1}"] = Mix([float(x) for x in s], gamma, [float(x) for x in raw])
    return out


def format_mixes(mixes: Dict[str, Mix]) -> str:
    """A plain-text table: one row per mix, columns s_0..s_L and gamma."""
    if not mixes:
        return "(no scalar mixes)"
    n = max(len(m.weights) for m in mixes.values())
    width = max(len(k) for k in list(mixes) + ["component"]) + 2
    lines = ["component".ljust(width) + "".join(f"s_{j}".ljust(9) for j in range(n)) + "gamma"]
    for name, m in mixes.items():
        lines.append(name.ljust(width) + "".join(f"{x:<9.4f}" for x in m.weights) + f"{m.gamma:.4f}")
    return "\n".join(lines)
