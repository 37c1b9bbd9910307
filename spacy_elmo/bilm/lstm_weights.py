"""What a path of :mod:`.lstm_paths` reads of the LSTM it runs: :class:`LstmWeights`.

:class:`~.lstm.ElmoLstm` has all of it. It is named here, apart from both, so that
:mod:`.lstm_paths` does not import :mod:`.lstm`, which imports it.
"""
from typing import Iterator, List, Optional, Protocol, Sequence, Tuple

import torch


class LstmWeights(Protocol):
    """Per layer ``l``: ``w_input[l]`` / ``w_state[l]`` (2, P, 4C), ``w_proj[l]`` (2, C, P),
    :meth:`gate_bias` (2, 4C) float32 (gates i, f, o, j); ``dim`` C, ``projection_dim`` P; clips
    (float or None); ``gemm_dtype``: the products' operand dtype without autograd."""

    dim: int
    projection_dim: int
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    gemm_dtype: torch.dtype
    w_input: Sequence[torch.Tensor]
    w_state: Sequence[torch.Tensor]
    w_proj: Sequence[torch.Tensor]

    def gate_bias(self, layer: int) -> torch.Tensor: ...

    def workspace(self, n_floats: int, like: torch.Tensor) -> torch.Tensor: ...

    def packed_weights(self, dtype: torch.dtype = ...) -> List[Tuple[Tuple[torch.Tensor, ...], ...]]: ...

    def lowp_weights(self, dtype: torch.dtype) -> List[Tuple[torch.Tensor, ...]]: ...

    def int8_weights(self) -> list: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...
