"""The contract between :class:`~.lstm.ElmoLstm` and the ways it runs a layer: what a path reads
of the LSTM (:class:`LstmWeights`) and the interface of a path (:class:`LayerPath`).

:class:`~.lstm.ElmoLstm` has all of :class:`LstmWeights`. Both are named here, apart from the
LSTM and its paths (:mod:`.lstm_paths`, :mod:`.lstm_train`), so that no path imports
:mod:`.lstm`, which imports them.
"""
from typing import Iterator, List, Optional, Protocol, Sequence, Tuple

import torch


class LstmWeights(Protocol):
    """Per layer ``l``: ``w_input[l]`` / ``w_state[l]`` (2, P, 4C), ``w_proj[l]`` (2, C, P),
    :meth:`gate_bias` (2, 4C) float32 (gates i, f, o, j); ``dim`` C, ``projection_dim`` P; clips
    (float or None); ``gemm_dtype``: the products' operand dtype without autograd;
    ``train_recurrence`` / ``train_gemm_dtype``: how the training path runs (:mod:`.lstm_train`)."""

    dim: int
    projection_dim: int
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    gemm_dtype: torch.dtype
    train_recurrence: str
    train_gemm_dtype: torch.dtype
    w_input: Sequence[torch.Tensor]
    w_state: Sequence[torch.Tensor]
    w_proj: Sequence[torch.Tensor]

    def gate_bias(self, layer: int) -> torch.Tensor: ...

    def workspace(self, n_floats: int, like: torch.Tensor) -> torch.Tensor: ...

    def packed_weights(self, dtype: torch.dtype = ...) -> List[Tuple[Tuple[torch.Tensor, ...], ...]]: ...

    def lowp_weights(self, dtype: torch.dtype) -> List[Tuple[torch.Tensor, ...]]: ...

    def int8_weights(self) -> list: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...


LayerResult = Tuple[torch.Tensor, torch.Tensor]


class LayerPath:
    """One way to run a layer, both directions: ``run(lstm, layer, x (2, N, P), packing,
    h0 (2, B, P), c0 (2, B, C))`` -> (outputs (2, N, P), final c (2, B, C)), rows in the packing's
    sorted order. ``in_place``: whether the outputs may be updated in place (the residual
    connection is added in place then)."""

    in_place = True

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        raise NotImplementedError
