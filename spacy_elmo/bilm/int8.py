"""int8 inference on CPU (``BiLM(precision="int8")``): the quantizer, the int8 product and the
LSTM layer path (:class:`Int8Path`).

Weights: symmetric per-output-channel int8, quantized once from the float32 parameters when first
used (and again after they change; no new file format)::

    s_w[j] = max_i |W[i, j]| / 127,    Wq[i, j] = round(W[i, j] / s_w[j])   in -127..127

Activations: quantized dynamically per row (per token / per step row), symmetric::

    s_x[r] = max_k |x[r, k]| / 127,    xq[r, k] = round(x[r, k] / s_x[r])

A product ``x @ W`` is then ``(xq @ Wq) * s_x[r] * s_w[j]``: int8 x int8 with int32 accumulation
(exact), the scales applied in float32 (Jacob et al. 2018, "Quantization and Training of Neural
Networks for Efficient Integer-Arithmetic-Only Inference", section 2, with zero points 0; per-row
activation scales as in LLM.int8(), Dettmers et al. 2022, section 3.1). Rounding moves each
element by at most half its scale, i.e. by at most 1/254 of its row's (column's) largest
magnitude; the measured effect on the biLM's layers (per-token cosine to float32) is in
docs/component.md and tests/test_bilm_int8.py.

The int8 products are oneDNN's (``torch.ops.onednn.qlinear_prepack`` / ``qlinear_pointwise``, the
ops TorchInductor's x86 int8 path uses; AMX-INT8 or AVX512-VNNI kernels), with the weight
reordered once. They run on :func:`.onednn.bucket_rows` rows (zero rows padded below, as the
float32 products do) so that few primitives are built. In one run on an Intel Xeon with AMX (1
thread) they were 3.3-5x the packed float32 oneDNN product at the LSTM's shapes (32 x 512 x 16384:
4.9x; 32 x 4096 x 512: 3.3x), ``torch._int_mm`` 2.6-3.6x.

What runs in int8: the LSTM's input projection (all steps of a tile at once), its recurrent
product and its projection (:class:`Int8Path`); the char CNN's highway and token projection
products (:mod:`.char_cnn`; at the original size they are most of the char CNN's time, and int8
made the whole biLM 1.16-1.28x faster than with them in float32, Intel Xeon with AMX, 1 thread).
Everything element-wise (gate non-linearities, cell states, clipping, residuals, highway gates),
the char convolutions and their max-pool stay float32. Outputs and states are float32.

Resolution (:func:`.precision.resolve`): int8 on a CPU whose instructions multiply int8 natively
(AMX-INT8, AVX512-VNNI or AVX-VNNI) when the oneDNN ops exist; else float32 with one warning.
"""
from typing import List, NamedTuple, Optional, Sequence, Tuple

import torch

from . import lstm_paths, onednn
from .lstm_paths import GateTiles, OneDnnPath
from .lstm_weights import LstmWeights

QMAX = 127  # symmetric: -127..127 (never -128), so that negation is exact
_TINY = 1e-30  # scale floor: an all-zero row or column quantizes to zeros with a tiny scale


class QWeight(NamedTuple):
    """A (in, out) float32 matrix as per-output-channel int8 (:func:`quantize_weight`): ``packed``
    (oneDNN's reordered copy of the int8 Wq^T), ``scale`` (out,) float32, ``zero_points`` (out,)
    int64 zeros (symmetric)."""

    packed: torch.Tensor
    scale: torch.Tensor
    zero_points: torch.Tensor


class QRows(NamedTuple):
    """Rows quantized by :func:`quantize_rows`: ``q`` (m, k) int8, ``scale`` (m, 1) float32."""

    q: torch.Tensor
    scale: torch.Tensor

    def rows(self, start: int, stop: int) -> "QRows":
        """Rows ``start:stop`` (views)."""
        return QRows(self.q[start:stop], self.scale[start:stop])


def ops_available() -> bool:
    """True when torch ships the oneDNN int8 linear ops this path uses (and oneDNN is on)."""
    ops = getattr(torch.ops, "onednn", None)
    try:
        return bool(onednn.available(torch.device("cpu"), torch.float32)
                    and hasattr(ops, "qlinear_prepack") and hasattr(ops, "qlinear_pointwise"))
    except (AttributeError, RuntimeError):
        return False


# -- the quantizer and the product ----------------------------------------------------------------
def quantize_rows(x: torch.Tensor) -> QRows:
    """x (m, k) float32 -> per-row symmetric int8 (:class:`QRows`): scale = max|x[r]| / 127,
    q = round(x / scale) in -127..127 (round half to even). Rows of zeros give zeros."""
    amax = x.abs().amax(dim=1, keepdim=True).clamp_min_(_TINY)  # (linalg.vector_norm(inf): 10x slower)
    # |x| * (127 / amax) <= 127 up to one rounding, so round() lands in -127..127: no clamp (one
    # pass fewer: the per-step products are small, and each pass is a thread barrier)
    q = torch.mul(x, QMAX / amax).round_().to(torch.int8)
    return QRows(q, amax.div_(QMAX))


def quantize_columns(weight: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """A (in, out) float32 matrix -> (Wq^T (out, in) int8, scale (out,) float32): per output
    column j, scale[j] = max_i |W[i, j]| / 127 and Wq = round(W / scale) in -127..127."""
    with torch.inference_mode(False), torch.no_grad():
        w = weight.detach().t().float()  # (out, in)
        amax = w.abs().amax(dim=1).clamp_min(_TINY)
        q = torch.round(w * (QMAX / amax)[:, None]).clamp_(-QMAX, QMAX).to(torch.int8).contiguous()
        return q, (amax / QMAX).contiguous()


def quantize_weight(weight: torch.Tensor) -> QWeight:
    """:func:`quantize_columns`, packed once for oneDNN's int8 product (:func:`linear`)."""
    q, scale = quantize_columns(weight)
    with torch.inference_mode(False), torch.no_grad():
        packed = torch.ops.onednn.qlinear_prepack(q, None)  # no row hint: faster for 256+ rows
    return QWeight(packed, scale, torch.zeros(q.shape[0], dtype=torch.int64))


def linear(x: QRows, w: QWeight, add: Optional[torch.Tensor] = None) -> torch.Tensor:
    """(xq @ Wq) * s_x * s_w (+ ``add``): (m, out) float32, a new tensor. The int8 product
    accumulates in int32 (exact) and oneDNN applies s_w in float32; s_x (m, 1) and ``add`` ((m,
    out), or (out,) for a bias) follow in one float32 pass.

    Always runs on :func:`.onednn.bucket_rows` rows (at least 8; zero rows padded below): oneDNN's
    int8 kernel took 30-50 ms for one row at 256 x 4096 (Intel Xeon, AMX), ~100x its time for 8."""
    m = x.q.shape[0]
    rows = onednn.bucket_rows(m)
    y = torch.ops.onednn.qlinear_pointwise(onednn._pad_rows(x.q, rows), 1.0, 0, w.packed, w.scale, w.zero_points,
                                           None, 1.0, 0, torch.float32, "none", [None], "")
    if rows != m:
        y = y[:m]
    return y.mul_(x.scale) if add is None else torch.addcmul(add, y, x.scale)


def reference_linear(x: QRows, q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """:func:`linear` without oneDNN, in float64, for a weight from :func:`quantize_columns`
    (tests)."""
    acc = x.q.double() @ q.double().t()
    return (acc * x.scale.double() * scale.double()).float()


def quantize_lstm(lstm: LstmWeights) -> List[Tuple[Tuple[QWeight, ...], ...]]:
    """Per layer: ([w_input_d], [w_state_d], [w_proj_d]) quantized (:func:`quantize_weight`), d = 0, 1."""
    return [tuple(tuple(quantize_weight(w[layer][d]) for d in range(2))
                  for w in (lstm.w_input, lstm.w_state, lstm.w_proj))
            for layer in range(len(lstm.w_input))]


# -- the LSTM layer path ----------------------------------------------------------------------------
class Int8GateTiles(GateTiles):
    """:class:`.lstm_paths.GateTiles` with int8 products: x quantized per packed row once, each
    tile ``(xq @ Wq_in) * s_x * s_w + b`` in float32."""

    def __init__(self, x: torch.Tensor, w_in: Sequence[QWeight], bias: torch.Tensor, rows: int) -> None:
        super().__init__(x, w_in, bias, rows)
        self.xq = [quantize_rows(x[d]) for d in range(2)]

    def _advance(self) -> None:
        self.previous = self.current
        self.start += self.tile
        r0, r1 = self.start, min(self.x.shape[1], self.start + self.tile)
        self.current = [linear(self.xq[d].rows(r0, r1), self.w_in[d], self.bias[d]) for d in range(2)]


class Int8Path(OneDnnPath):
    """:class:`.lstm_paths.OneDnnPath` with int8 products (not exact): the input projection, the
    recurrent product (h_{t-1} quantized per row) and the projection (m_t quantized per row),
    each with int32 accumulation and float32 scales; the gate pre-activations, cell states,
    clipping and outputs are float32. The loop is OneDnnPath's :meth:`~.lstm_paths.OneDnnPath.run`."""

    tiles = Int8GateTiles  # float32 tiles of int8 products

    def weights(self, lstm: LstmWeights, layer: int) -> tuple:
        return lstm.int8_weights()[layer]

    def state(self, h: Sequence[torch.Tensor]) -> List[QRows]:
        return [quantize_rows(h[d]) for d in range(2)]

    def recurrent(self, h_prev: Sequence[QRows], n: int, w_state: Sequence[QWeight],
                  g_in: List[torch.Tensor]) -> List[torch.Tensor]:
        return [linear(h_prev[d].rows(0, n), w_state[d], g_in[d]) for d in range(2)]

    def project(self, m: torch.Tensor, w_proj: Sequence[QWeight]) -> List[torch.Tensor]:
        n, C = m.shape[1], m.shape[2]
        mq = quantize_rows(m.view(2 * n, C))  # both directions at once
        return [linear(mq.rows(d * n, (d + 1) * n), w_proj[d]) for d in range(2)]


lstm_paths.ONEDNN_DTYPE_PATHS[torch.int8] = Int8Path
