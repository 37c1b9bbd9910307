"""Warm-start a wider biLM from a trained one, computing the same function at step 0.

A function-preserving widening in the spirit of Net2WiderNet (Chen et al. 2016, "Net2Net:
accelerating learning via knowledge transfer", section 2.3), with zero-initialised producers
instead of copied units: the wider model keeps every trained weight in its leading slice, and
each new unit starts either with no input into the trained units or with zero output, so the
language model's loss is unchanged before the first step while every new weight gets a gradient.

For a projection P -> P' and cells C -> C' (the char CNN's filters, the number of layers, the
skip connections, the vocabulary and the softmax cutoffs must match):

- char CNN projection (P', F): new rows (and biases) zero, so the new token-vector dims are 0;
- each LSTM, gates in torch's block order [i, f, g, o] of C' rows each:
  ``weight_ih`` / ``weight_hh`` (4C', P') and the biases keep the trained rows of each gate block
  in its first C rows; new cells and new input columns keep their random initialisation (their
  inputs are zero, or their outputs are cut by the next rule);
  ``weight_hr`` (P', C'): new rows zero (the new output dims stay 0) and new columns zero
  (new cells do not reach the output);
- softmax head (n, P'): new columns random (their inputs are 0); each tail
  ``Linear(P', h') -> Linear(h', n)``: new hidden units' outgoing columns zero.

The skip connections add zeros to zeros in the new dims, so they stay 0 through the stack.
"""
from typing import Dict

import torch

from ..errors import ElmoConfigError
from .lm import LanguageModel

SHAPE_KEYS = ("projection_dim", "lstm_dim")


def width_change(source: LanguageModel, target: LanguageModel) -> Dict[str, list]:
    """{"projection_dim": [P, P'], "lstm_dim": [C, C']} for the dims that grow; empty if none.
    Raises ValueError if a dim shrinks or anything other than those two differs."""
    if (source.n_layers, source.use_skip_connections) != (target.n_layers, target.use_skip_connections):
        raise ElmoConfigError("n_layers and use_skip_connections must match to widen")
    if (source.char_cnn.filters != target.char_cnn.filters
            or len(source.char_cnn.highways) != len(target.char_cnn.highways)):
        raise ElmoConfigError("the char CNN's filters and highway layers must match to widen")
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
    """Copy src (4C, ...) into dst (4C', ...) gate block by gate block, leading slices."""
    c_new, c_old = dst.shape[0] // 4, src.shape[0] // 4
    for g in range(4):
        block = src[g * c_old:(g + 1) * c_old]
        dst[g * c_new:g * c_new + c_old][tuple(slice(0, n) for n in block.shape)] = block


def widened_state_dict(source: LanguageModel, target: LanguageModel) -> Dict[str, torch.Tensor]:
    """target's state dict with source's trained weights embedded as in the module docstring.
    target's own (random) initialisation fills the new weights that may be random. Raises
    ValueError as :func:`width_change`."""
    width_change(source, target)
    src = source.state_dict()
    out = {k: v.detach().clone() for k, v in target.state_dict().items()}
    P = source.projection_dim
    C = source.lstm_dim
    for name, value in src.items():
        dst = out[name]
        if "lstms." in name and ("weight_ih" in name or "weight_hh" in name or "bias_" in name):
            _copy_gates(dst, value)
        else:
            dst[tuple(slice(0, n) for n in value.shape)] = value
        if name.startswith("char_cnn.projection."):
            dst[P:] = 0
        elif "weight_hr" in name:
            dst[P:] = 0
            dst[:, C:] = 0
        elif name.startswith("softmax.tail.") and name.endswith(".1.weight"):
            dst[:, value.shape[1]:] = 0
    return out
