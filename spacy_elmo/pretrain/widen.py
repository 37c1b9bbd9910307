"""Warm-start a wider biLM from a trained one, computing the same function at step 0.

A function-preserving widening in the spirit of Net2WiderNet (Chen et al. 2016, "Net2Net:
accelerating learning via knowledge transfer", section 2.3), with zero-initialised producers
instead of copied units: the wider model keeps every trained weight in its leading slice, and
each new unit starts either with no input into the trained units or with zero output, so the
language model's loss is unchanged before the first step while every new weight gets a gradient.

For a projection P -> P' and cells C -> C' (every other option of the biLM: the char CNN, the
number of layers, the skip connections, the clipping, and the vocabulary and the softmax
cutoffs must match), in the parameters of :class:`spacy_elmo.bilm.BiLM` (``bilm.*``):

- char CNN projection (P', F): new rows (and biases) zero, so the new token-vector dims are 0;
- each layer's LSTMs (:mod:`spacy_elmo.bilm.lstm`: gate blocks (i, f, o, j) of C' columns each):
  ``w_input`` / ``w_state`` (2, P', 4C') and ``bias`` (2, 4C') keep the trained columns of each
  gate block in its first C columns and the trained rows first; new cells and new input rows
  keep their random initialisation (their inputs are zero, or their outputs are cut by the next
  rule); ``w_proj`` (2, C', P'): new columns zero (the new output dims stay 0) and new rows zero
  (new cells do not reach the output; clipping a 0 leaves it 0);
- softmax head (n, P'): new columns random (their inputs are 0); each tail
  ``Linear(P', h') -> Linear(h', n)``: new hidden units' outgoing columns zero.

The skip connections add zeros to zeros in the new dims, so they stay 0 through the stack.
"""
from typing import Dict

import torch

from ..errors import ElmoConfigError
from .lm import LanguageModel

SHAPE_KEYS = ("projection_dim", "lstm_dim")


def _fixed_options(lm: LanguageModel) -> dict:
    """lm's biLM options without the two widths that may grow."""
    options = dict(lm.options())
    options["lstm"] = {k: v for k, v in options["lstm"].items() if k not in ("dim", "projection_dim")}
    return options


def width_change(source: LanguageModel, target: LanguageModel) -> Dict[str, list]:
    """{"projection_dim": [P, P'], "lstm_dim": [C, C']} for the dims that grow; empty if none.
    Raises ElmoConfigError (a ValueError) if a dim shrinks or anything other than those two
    differs."""
    src, dst = _fixed_options(source), _fixed_options(target)
    for key, what in (("lstm", "n_layers, use_skip_connections and the clipping"),
                      ("char_cnn", "the char CNN's filters and highway layers")):
        if src[key] != dst[key]:
            raise ElmoConfigError(f"{what} must match to widen (source {src[key]}, target {dst[key]})")
    if src != dst:
        raise ElmoConfigError("the biLM options other than lstm_dim and projection_dim must match to widen")
    if source.softmax.n_classes != target.softmax.n_classes or source.softmax.cutoffs != target.softmax.cutoffs:
        raise ElmoConfigError("the softmax vocabulary and cutoffs must match to widen")
    change = {}
    for key in SHAPE_KEYS:
        old, new = getattr(source, key), getattr(target, key)
        if new < old:
            raise ElmoConfigError(f"{key} {new} is smaller than the source's {old}: a model can only be widened")
        if new > old:
            change[key] = [old, new]
    return change


def _copy_gates(dst: torch.Tensor, src: torch.Tensor) -> None:
    """Copy src (..., 4C) into dst (..., 4C') gate block by gate block, leading slices."""
    c_new, c_old = dst.shape[-1] // 4, src.shape[-1] // 4
    lead = tuple(slice(0, n) for n in src.shape[:-1])
    for g in range(4):
        dst[lead + (slice(g * c_new, g * c_new + c_old),)] = src[..., g * c_old:(g + 1) * c_old]


GATE_PARAMS = ("bilm.lstm.w_input.", "bilm.lstm.w_state.", "bilm.lstm.bias.")


def widened_state_dict(source: LanguageModel, target: LanguageModel) -> Dict[str, torch.Tensor]:
    """target's state dict with source's trained weights embedded as in the module docstring.
    target's own (random) initialisation fills the new weights that may be random. Raises
    ElmoConfigError as :func:`width_change`."""
    width_change(source, target)
    src = source.state_dict()
    out = {k: v.detach().clone() for k, v in target.state_dict().items()}
    P, C = source.projection_dim, source.lstm_dim
    for name, value in src.items():
        dst = out[name]
        if name.startswith(GATE_PARAMS):
            _copy_gates(dst, value)
        else:
            dst[tuple(slice(0, n) for n in value.shape)] = value
        if name.startswith("bilm.char_cnn.projection."):
            dst[P:] = 0
        elif name.startswith("bilm.lstm.w_proj."):
            dst[:, C:] = 0
            dst[:, :, P:] = 0
        elif name.startswith("softmax.tail.") and name.endswith(".1.weight"):
            dst[:, value.shape[1]:] = 0
    return out
