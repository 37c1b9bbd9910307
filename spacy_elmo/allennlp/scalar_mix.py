"""``ScalarMix`` as AllenNLP's (``allennlp.modules.scalar_mix``): ``gamma * sum_k s_k * h_k`` with
``s = softmax(w)`` (Peters et al. 2018, eq. 1), optionally over layer-normalised layers.

Layer norm is AllenNLP's: one mean and one variance per layer over every unmasked element of the
whole batch (all sentences and all dimensions together), ``(h - mean) / sqrt(var + eps)`` with
eps 1e-13 (1e-4 in float16), applied at every position, padding included.
"""
from typing import List, Optional, Sequence

import torch
from torch.nn import Parameter, ParameterList

from ..errors import ElmoConfigError, ElmoDataError


def _tiny(dtype: torch.dtype) -> float:
    """AllenNLP's ``tiny_value_of_dtype``."""
    return 1e-4 if dtype == torch.half else 1e-13


class ScalarMix(torch.nn.Module):
    """A learned (or, with ``trainable=False``, fixed) scalar mixture of ``mixture_size`` tensors.

    Parameters ``scalar_parameters.{j}`` (float32 (1,), initial ``initial_scalar_parameters[j]``,
    default 0) and ``gamma`` (float32 (1,), initial 1), both ``requires_grad=trainable``; the
    names are AllenNLP's, so state dicts and optimizer groups keep working. Raises ElmoConfigError
    (a ValueError) when ``initial_scalar_parameters`` has a length other than ``mixture_size``.
    """

    def __init__(self, mixture_size: int, do_layer_norm: bool = False,
                 initial_scalar_parameters: Optional[Sequence[float]] = None, trainable: bool = True) -> None:
        super().__init__()
        self.mixture_size, self.do_layer_norm = mixture_size, do_layer_norm
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        elif len(initial_scalar_parameters) != mixture_size:
            raise ElmoConfigError(f"scalar mix parameters {list(initial_scalar_parameters)} have length "
                                  f"{len(initial_scalar_parameters)}, the biLM has {mixture_size} layers")
        self.scalar_parameters = ParameterList(
            [Parameter(torch.tensor([float(w)]), requires_grad=trainable) for w in initial_scalar_parameters])
        self.gamma = Parameter(torch.tensor([1.0]), requires_grad=trainable)

    def forward(self, tensors: List[torch.Tensor], mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Mix ``mixture_size`` tensors of one shape (..., dim); ``mask`` (...) bool, required
        with layer norm (else ignored). Returns a tensor of that shape. Raises ElmoDataError for
        another number of tensors, ElmoConfigError for a missing mask with layer norm."""
        if len(tensors) != self.mixture_size:
            raise ElmoDataError(f"{len(tensors)} tensors to mix, the scalar mix has {self.mixture_size} weights")
        weights = torch.split(torch.softmax(torch.cat(list(self.scalar_parameters)), dim=0), 1)
        if not self.do_layer_norm:
            return self.gamma * sum(w * t for w, t in zip(weights, tensors))
        if mask is None:
            raise ElmoConfigError("a scalar mix with layer norm needs the mask")
        broadcast = mask.unsqueeze(-1)
        count = torch.sum(mask) * tensors[0].size(-1)
        return self.gamma * sum(w * _layer_norm(t, broadcast, count) for w, t in zip(weights, tensors))


def _layer_norm(tensor: torch.Tensor, broadcast_mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    masked = tensor * broadcast_mask
    mean = torch.sum(masked) / count
    variance = torch.sum(((masked - mean) * broadcast_mask) ** 2) / count
    return (tensor - mean) / torch.sqrt(variance + _tiny(variance.dtype))
