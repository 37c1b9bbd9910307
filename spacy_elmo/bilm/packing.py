"""Time-major packing of a batch of variable-length sequences for the biLSTM.

Rows are sorted by length (longest first, stable), so at step ``s`` the active rows are a prefix
``0 .. batch_sizes[s] - 1`` of the sorted batch; packed row ``offsets[s] + k`` is sorted row ``k`` at
step ``s``. Both directions use the same packing: the forward LM reads position ``s`` at step ``s``,
the backward LM reads position ``length - 1 - s`` (right to left within each row's true length).
So the active batch shrinks as rows end and no work is spent on padding; and because the two
directions have the same active prefix, one ``bmm`` over a stacked (2, n, ·) operand serves both.
(Same idea as PyTorch's ``PackedSequence``, with the backward direction packed reversed.)
"""
from dataclasses import dataclass
from typing import List, Sequence, Union

import numpy
import torch


@dataclass
class Packing:
    """Packing of B rows with given lengths (all arrays int64 numpy unless noted).

    order: (B,) sorted row -> original row. sorted_lengths: (B,).
    batch_sizes: list of T_max ints, non-increasing. offsets: list of T_max + 1 ints.
    row: (N,) original row of each packed row; step: (N,) its step; length: (N,) its row's length.
    N = sum(lengths).
    """

    order: numpy.ndarray
    sorted_lengths: numpy.ndarray
    batch_sizes: List[int]
    offsets: List[int]
    row: numpy.ndarray
    step: numpy.ndarray
    length: numpy.ndarray

    @property
    def n_packed(self) -> int:
        return self.offsets[-1]

    def positions(self, direction: int) -> numpy.ndarray:
        """(N,) sequence position read at each packed row: forward ``step``, backward ``length-1-step``."""
        return self.step if direction == 0 else self.length - 1 - self.step

    def last_rows(self) -> torch.Tensor:
        """(B,) LongTensor: packed row of each sorted row's last step (undefined for length 0 rows: -1)."""
        sl = self.sorted_lengths
        out = numpy.full(len(sl), -1, dtype=numpy.int64)
        ok = sl > 0
        offs = numpy.asarray(self.offsets, dtype=numpy.int64)
        out[ok] = offs[sl[ok] - 1] + numpy.arange(len(sl))[ok]
        return torch.from_numpy(out)


def pack(lengths: Union[Sequence[int], numpy.ndarray]) -> Packing:
    """Build the :class:`Packing` of rows with the given lengths (sequence of ints >= 0)."""
    lengths = numpy.asarray(lengths, dtype=numpy.int64).reshape(-1)
    if (lengths < 0).any():
        raise ValueError("sequence lengths must be >= 0")
    order = numpy.argsort(-lengths, kind="stable")
    sorted_lengths = lengths[order]
    t_max = int(sorted_lengths[0]) if len(sorted_lengths) else 0
    steps = numpy.arange(t_max)
    batch_sizes = (sorted_lengths[None, :] > steps[:, None]).sum(axis=1)
    step, k = numpy.nonzero(steps[:, None] < sorted_lengths[None, :])  # time-major, rows a prefix
    offsets = numpy.concatenate([[0], numpy.cumsum(batch_sizes)]).astype(numpy.int64)
    return Packing(
        order=order,
        sorted_lengths=sorted_lengths,
        batch_sizes=[int(n) for n in batch_sizes],
        offsets=[int(o) for o in offsets],
        row=order[k],
        step=step.astype(numpy.int64),
        length=sorted_lengths[k],
    )
