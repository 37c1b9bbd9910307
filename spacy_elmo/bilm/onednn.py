"""Pre-packed float32 matrix products through oneDNN (PyTorch's ``torch.ops.mkldnn`` linear ops).

For the biLSTM's per-step products ((n <= 64, 512) x (512, 16384) at the original size) MKL's
``bmm``/``mm`` repack the 32 MB weight at every call and reach only ~80 GFLOP/s on 2 cores;
oneDNN with the weight reordered once into its blocked layout reaches ~190 GFLOP/s on the same
machine (float32 arithmetic, no reduced precision). The reordered copies cost memory (about the
LSTM's weight size again) and are rebuilt when a parameter changes (tracked by data pointer and
version counter).

These are private PyTorch ops (used by TorchInductor's CPU freezing pass); :func:`available`
checks for them and callers fall back to plain ``torch.bmm`` when they are missing or fail.
"""
from typing import Callable, Optional, Sequence

import torch

_ENABLED = True


def available(device: torch.device, dtype: torch.dtype) -> bool:
    """True when packed oneDNN linear ops can be used for tensors of this device and dtype."""
    return (
        _ENABLED
        and device.type == "cpu"
        and dtype == torch.float32
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
    )


def set_enabled(flag: bool) -> bool:
    """Turn the oneDNN path on/off globally (tests, benchmarks); returns the previous setting."""
    global _ENABLED
    previous, _ENABLED = _ENABLED, bool(flag)
    return previous


def pack(weight: torch.Tensor, batch_hint: int = 32) -> torch.Tensor:
    """Reorder a (in, out) matrix ``weight`` for :func:`linear` (y = x @ weight). Returns an mkldnn tensor."""
    with torch.inference_mode(False), torch.no_grad():
        return torch.ops.mkldnn._reorder_linear_weight(weight.t().contiguous(), batch_hint)


def linear(x: torch.Tensor, packed: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """x (m, in) float32 -> x @ W + bias (m, out), with ``packed`` from :func:`pack`."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def linear_add(x: torch.Tensor, packed: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """x @ W + other (a new (m, out) tensor; ``other`` is read, not modified)."""
    return torch.ops.mkldnn._linear_pointwise.binary(x, other, packed, None, "add")


class PackedCache:
    """Holds packed weights built from some parameters; rebuilt when any of them changes
    (data pointer or in-place version counter), e.g. after ``load_state_dict`` or an optimiser step."""

    def __init__(self):
        self._key = None
        self._value = None

    def __getstate__(self):  # copies and pickles rebuild the packed weights lazily
        return {"_key": None, "_value": None}

    def clear(self) -> None:
        """Drop the packed copies (they are rebuilt on next use)."""
        self._key = self._value = None

    def get(self, params: Sequence[torch.Tensor], build: Callable[[], object]):
        key = tuple((p.data_ptr(), p._version) for p in params)
        if self._key != key:
            self._value = None  # free the old copies before building new ones
            self._value = build()
            self._key = key
        return self._value
