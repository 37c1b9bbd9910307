"""Pre-packed float32 matrix products through oneDNN (PyTorch's ``torch.ops.mkldnn`` linear ops).

For the biLSTM's per-step products ((n <= 64, 512) x (512, 16384) at the original size) MKL's
``bmm``/``mm`` repack the 32 MB weight at every call and reach only ~80 GFLOP/s on 2 cores;
oneDNN with the weight reordered once into its blocked layout reaches ~190 GFLOP/s on the same
machine (float32 arithmetic, no reduced precision). The reordered copies cost memory (about the
LSTM's weight size again) and are rebuilt when a parameter changes (tracked by data pointer and
version counter).

These are private PyTorch ops (used by TorchInductor's CPU freezing pass); :func:`available`
checks for them and callers fall back to plain ``torch.bmm`` when they are missing or fail.

Row buckets (bounded memory). oneDNN builds one primitive per distinct shape (rows, in, out) of a
product, ~0.4-0.6 MB of heap each, and keeps it in two process-wide caches (oneDNN's own and
ideep's, 1,024 entries each, sized only by the environment variables
``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` / ``LRU_CACHE_CAPACITY``, read once). Our row counts used to
change with every batch (tokens x window positions in the char CNN, packed rows of a chunk of
steps in the LSTM): 100k short docs made ~2,000-4,300 distinct shapes, and RSS grew without
levelling off (benchmarks/README.md, "Memory"). So :func:`linear` and :func:`linear_add` run on
:func:`bucket_rows` rows (multiples of 8 up to 64, then 4 sizes per power of two), padding with
zero rows and dropping their results, and the callers cap the row counts (:mod:`.char_cnn` runs
groups of whole tokens, :mod:`.lstm` fixed tiles of packed rows): ~230 shapes, nearly all seen
within the first 5,000 docs. Rows of a product are independent, so the real rows are the same
floats as without padding (``tests/test_memory.py`` checks it bit for bit).
"""
from typing import Any, Callable, Optional, Sequence

import torch

_ENABLED = True
_BUCKETS = True


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


def set_row_buckets(flag: bool) -> bool:
    """Turn row bucketing (see the module docstring) on/off globally; returns the previous setting.
    Off, products run on their exact row counts and memory grows again with every new one
    (``benchmarks/bench_memory.py --no-buckets``); the results are the same either way."""
    global _BUCKETS
    previous, _BUCKETS = _BUCKETS, bool(flag)
    return previous


def bucket_rows(m: int, exact: int = 0, least: int = 8) -> int:
    """The row count a product of ``m`` rows runs on: ``m`` itself when ``m <= exact``, ``m <= 0``
    or bucketing is off; else the smallest size >= max(m, least) of 8, 16, 24, .., 64 (multiples
    of 8), then 80, 96, 112, 128, 160, 192, 224, 256, 320, .. (4 sizes per power of two): at most
    7 extra rows up to 64, at most 25% more rows above."""
    if m <= exact or m <= 0 or not _BUCKETS:
        return m
    m = max(m, least)
    step = 1 << max(3, (m - 1).bit_length() - 3)
    return -(-m // step) * step


def row_buffer(m: int, cols: int, like: torch.Tensor, least: int = 8) -> torch.Tensor:
    """An uninitialised (bucket_rows(m, least=least), cols) tensor (``like``'s dtype and device)
    whose rows ``m ..`` are zero: fill rows ``:m`` and pass the whole buffer to :func:`linear`,
    which then runs on it as it is (a bucket size needs no copy)."""
    buf = like.new_empty(bucket_rows(m, least=least), cols)
    buf[m:].zero_()
    return buf


def _pad_rows(x: torch.Tensor, rows: int) -> torch.Tensor:
    """x (m, k) -> (rows, k), rows >= m: x itself when rows == m, else a copy with zero rows below."""
    m = x.shape[0]
    if rows == m:
        return x
    out = x.new_empty(rows, x.shape[1])
    out[:m].copy_(x)
    out[m:].zero_()
    return out


def pack(weight: torch.Tensor, batch_hint: int = 32, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Reorder a (in, out) matrix ``weight`` for :func:`linear` (y = x @ weight). Returns an mkldnn tensor.

    ``dtype=torch.bfloat16`` packs a bfloat16 copy (rounded to nearest): :func:`linear` then takes
    bfloat16 inputs, accumulates in float32 and returns bfloat16 (see :mod:`.precision`)."""
    with torch.inference_mode(False), torch.no_grad():
        w = weight.t()
        w = w.contiguous() if dtype == torch.float32 else w.to(dtype).contiguous()
        return torch.ops.mkldnn._reorder_linear_weight(w, batch_hint)


def linear(x: torch.Tensor, packed: torch.Tensor, bias: Optional[torch.Tensor] = None,
           exact: int = 0) -> torch.Tensor:
    """x (m, in) float32 -> x @ W + bias (m, out), with ``packed`` from :func:`pack` (bfloat16 x,
    bias and result with a bfloat16-packed weight).

    Runs on ``bucket_rows(m, exact)`` rows (x is copied with zero rows below when m is not a
    bucket size) and returns the first m rows, a view of the (bucket, out) result."""
    m = x.shape[0]
    rows = bucket_rows(m, exact)
    y = torch.ops.mkldnn._linear_pointwise(_pad_rows(x, rows), packed, bias, "none", [], "")
    return y if rows == m else y[:m]


def linear_add(x: torch.Tensor, packed: torch.Tensor, other: torch.Tensor, exact: int = 0) -> torch.Tensor:
    """x (m, in) @ W + other (m, out): a new tensor (``other`` is read, not modified); rows as
    for :func:`linear` (x and other padded when m is not a bucket size)."""
    m = x.shape[0]
    rows = bucket_rows(m, exact)
    y = torch.ops.mkldnn._linear_pointwise.binary(_pad_rows(x, rows), _pad_rows(other, rows), packed, None, "add")
    return y if rows == m else y[:m]


class PackedCache:
    """Holds packed weights built from some parameters; rebuilt when any of them changes
    (data pointer or in-place version counter), e.g. after ``load_state_dict`` or an optimiser step."""

    def __init__(self) -> None:
        self._key = None
        self._value = None

    def __getstate__(self):  # copies and pickles rebuild the packed weights lazily
        return {"_key": None, "_value": None}

    def clear(self) -> None:
        """Drop the packed copies (they are rebuilt on next use)."""
        self._key = self._value = None

    def get(self, params: Sequence[torch.Tensor], build: Callable[[], Any], tag: object = None) -> Any:
        """The value ``build()`` made from ``params`` (and ``tag``, e.g. the packed dtype: another
        tag replaces the held copies instead of adding to them)."""
        key = (tag, tuple((p.data_ptr(), p._version) for p in params))
        if self._key != key:
            self._value = None  # free the old copies before building new ones
            self._value = build()
            self._key = key
        return self._value
