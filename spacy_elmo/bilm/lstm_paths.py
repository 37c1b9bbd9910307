"""The ways :class:`~.lstm.ElmoLstm` runs one layer, both directions: one small class each, behind
one interface (:class:`LayerPath`), chosen per call by :func:`choose`. All compute the function
of :mod:`.lstm`; the float32 ones exactly the same floats as each other up to the products'
summation order (the reference tests hold each to bilm-tf's outputs).

- :class:`.lstm_train.TrainPath`: when parameters or inputs require grad (training) and the
  initial state is zero: a hand-written backward, native / compiled / eager recurrences, float32 or
  bfloat16 products (``train_recurrence``, ``train_gemm_dtype``; see :mod:`.lstm_train`).
- :class:`AutogradPath`: out of place, under autograd where the training path does not apply (a
  carried state, ``train_recurrence = "autograd"``).
- :class:`OneDnnPath`: no autograd, CPU float32: pre-packed oneDNN products (:mod:`.onednn`;
  ~2x faster than MKL's ``bmm`` for these skinny products).
- :class:`BmmPath`: no autograd elsewhere (GPU, float64, oneDNN off): in-place ``bmm`` into a
  reused workspace.
- :class:`OneDnnBf16Path` / :class:`LowPrecisionPath`: ``gemm_dtype`` bfloat16 / float16 (set by
  ``BiLM(precision=...)``; not exact, see :mod:`.precision`), no autograd, on CPU with oneDNN /
  elsewhere. Outputs and states stay float32.
- :class:`.int8.Int8Path`: ``gemm_dtype`` int8 (``BiLM(precision="int8")``), CPU with oneDNN:
  int8 products with per-row / per-channel scales (not exact; its own module).

Speed: the input projection of all time steps is one matrix product per layer and direction (in
pieces for long inputs: whole steps on the bmm paths, fixed tiles of packed rows on the oneDNN
paths); only the recurrence loops over time; rows are sorted by length and the active batch
shrinks as rows end (no work on padding); without autograd the element-wise updates run in place.

Every path (:class:`.lstm_weights.LayerPath`): ``run(lstm, layer, x (2, N, P), packing, h0 (2, B, P),
c0 (2, B, C))`` -> (outputs (2, N, P), final c (2, B, C)), rows in the packing's sorted order.
"""
from typing import List, Optional, Sequence, Tuple

import torch

from . import lstm_train, onednn
from .lstm_weights import LayerPath, LayerResult, LstmWeights
from .packing import Packing

# Gate-buffer budget (floats, both directions) of one input-projection matmul; longer inputs are
# done in pieces. The bmm path reuses one workspace of this size (pieces of whole time steps); the
# oneDNN path allocates each piece, so its budget is kept small enough (16 MB) for malloc to recycle
# it, in tiles of a fixed number of packed rows (:class:`GateTiles`: one product shape).
WORKSPACE_FLOATS = 1 << 25
ONEDNN_CHUNK_FLOATS = 1 << 22
# The per-step oneDNN products run on their exact row count up to this many rows (at most
# batch_size shapes per product, all seen within the first batches; padding them to row buckets
# would add work to every step); larger step batches are rounded up to row buckets (see onednn).
STEP_EXACT_ROWS = 64

# Paths in modules of their own, by ``gemm_dtype`` (CPU float32 inputs with oneDNN): each module
# adds itself on import (.int8 adds torch.int8 -> Int8Path; .lstm imports it)
ONEDNN_DTYPE_PATHS: dict = {}


def choose(lstm: LstmWeights, inputs: torch.Tensor, zero_state: bool = True) -> LayerPath:
    """The path for this call. When anything requires grad: the training path
    (:func:`.lstm_train.train_path`: zero initial state, float32) else :class:`AutogradPath`;
    without autograd by ``gemm_dtype``, device and dtype (see the module docstring)."""
    if torch.is_grad_enabled() and (inputs.requires_grad or any(p.requires_grad for p in lstm.parameters())):
        return lstm_train.train_path(lstm, inputs, zero_state) or AutogradPath()
    has_onednn = onednn.available(inputs.device, inputs.dtype)
    if lstm.gemm_dtype in ONEDNN_DTYPE_PATHS and inputs.dtype == torch.float32 and has_onednn:
        return ONEDNN_DTYPE_PATHS[lstm.gemm_dtype]()
    if lstm.gemm_dtype not in (torch.float32, torch.int8) and inputs.dtype == torch.float32:
        return OneDnnBf16Path() if lstm.gemm_dtype == torch.bfloat16 and has_onednn else LowPrecisionPath()
    return OneDnnPath() if has_onednn else BmmPath()


# -- element-wise steps ---------------------------------------------------------------------------
def cell_step(g: List[torch.Tensor], c: torch.Tensor, n: int, C: int,
              cell_clip: Optional[float]) -> Tuple[List[torch.Tensor], torch.Tensor]:
    """The element-wise part of one step of the oneDNN paths, both directions, in place.

    g: per direction the float32 gate pre-activations (n, 4C) (i, f, o, j). Applies the
    sigmoids and tanh in g, sets ``c[:, :n]`` to c_t = f * c_{t-1} + i * j (clipped to
    +-cell_clip) and returns (per direction the (n, 3C) gates i, f, o; tanh(c_t) (2, n, C))."""
    sig = [gd[:, : 3 * C] for gd in g]
    j = [gd[:, 3 * C:] for gd in g]
    torch._foreach_sigmoid_(sig)
    torch._foreach_tanh_(j)
    cs = c[:, :n]
    torch._foreach_mul_([cs[0], cs[1]], [sd[:, C: 2 * C] for sd in sig])
    torch._foreach_addcmul_([cs[0], cs[1]], [sd[:, :C] for sd in sig], j)
    if cell_clip is not None:
        cs.clamp_(-cell_clip, cell_clip)
    return sig, torch.tanh(cs)


def stacked_cell_step(g: torch.Tensor, c: torch.Tensor, n: int, C: int,
                      cell_clip: Optional[float]) -> torch.Tensor:
    """The element-wise part of one step of the ``bmm`` paths, both directions stacked, in place.

    g: (2, n, 4C) float32 gate pre-activations (i, f, o, j). Sets ``c[:, :n]`` to
    c_t = f * c_{t-1} + i * j (clipped to +-cell_clip) and returns m_t = o * tanh(c_t)
    (2, n, C), written over g's j part."""
    sig = g[:, :, : 3 * C].sigmoid_()
    j = g[:, :, 3 * C:].tanh_()
    cs = c[:, :n]
    cs.mul_(sig[:, :, C: 2 * C]).addcmul_(sig[:, :, :C], j)
    if cell_clip is not None:
        cs.clamp_(-cell_clip, cell_clip)
    return torch.tanh(cs, out=j).mul_(sig[:, :, 2 * C:])


def clip_outputs(h: List[torch.Tensor], proj_clip: Optional[float]) -> None:
    """Clip each direction's step output to +-proj_clip, in place."""
    if proj_clip is not None:
        torch._foreach_clamp_min_(h, -proj_clip)
        torch._foreach_clamp_max_(h, proj_clip)


# -- how the input projection is cut ----------------------------------------------------------------
def step_chunks(pk: Packing, C: int, budget: int) -> List[Tuple[int, int]]:
    """Step ranges whose gate rows (2 * 4C floats each) fit ``budget`` floats (at least one step)."""
    per_row = 2 * 4 * C
    max_rows = max(budget // per_row, pk.batch_sizes[0] if pk.batch_sizes else 1)
    chunks, start = [], 0
    offs = pk.offsets
    for s in range(len(pk.batch_sizes)):
        if offs[s + 1] - offs[start] > max_rows:
            chunks.append((start, s))
            start = s
    if pk.batch_sizes:
        chunks.append((start, len(pk.batch_sizes)))
    return chunks


def tile_rows(pk: Packing, C: int) -> int:
    """Packed rows per input-projection tile of the oneDNN paths: the largest power of two whose
    gates (both directions) fit ONEDNN_CHUNK_FLOATS, but at least the row bucket of the largest
    step (so that a step spans at most two tiles). Always a row-bucket size."""
    budget = max(1, ONEDNN_CHUNK_FLOATS // (2 * 4 * C))
    widest = pk.batch_sizes[0] if pk.batch_sizes else 1
    return max(1 << (budget.bit_length() - 1), onednn.bucket_rows(widest))


class GateTiles:
    """The input projection ``x[d] @ W_in[d] + b[d]`` of both directions over the packed rows,
    computed tile by tile (``rows`` packed rows per tile; only the last tile of a layer is
    shorter) and read step by step with :meth:`rows`. Fixed tiles keep the number of product
    shapes small (see :mod:`.onednn`); the one or two tiles a step needs are kept alive.

    x: (2, N, P) float32; w_in: per direction the packed (P, 4C) weight; bias: (2, 4C) (all
    bfloat16 on the bfloat16 path, whose gates are then bfloat16).
    """

    def __init__(self, x: torch.Tensor, w_in: Sequence[torch.Tensor], bias: torch.Tensor, rows: int) -> None:
        self.x, self.w_in, self.bias, self.tile = x, w_in, bias, rows
        self.start = -rows  # first packed row of the current tile
        self.current: Optional[List[torch.Tensor]] = None
        self.previous: Optional[List[torch.Tensor]] = None

    def _advance(self) -> None:
        self.previous = self.current
        self.start += self.tile
        r0, r1 = self.start, min(self.x.shape[1], self.start + self.tile)
        self.current = [onednn.linear(self.x[d, r0:r1], self.w_in[d], self.bias[d]) for d in range(2)]

    def rows(self, lo: int, hi: int) -> List[torch.Tensor]:
        """Gates of packed rows ``lo:hi`` (hi - lo <= tile rows; calls in increasing order), per
        direction: (hi - lo, 4C) views of a tile, or a copy joining the end of the previous tile
        and the start of the current one."""
        while hi > self.start + self.tile:
            self._advance()
        if lo >= self.start:
            self.previous = None
            return [g[lo - self.start: hi - self.start] for g in self.current]
        first = lo - (self.start - self.tile)
        return [torch.cat([p[first:], g[: hi - self.start]]) for p, g in zip(self.previous, self.current)]


# -- the paths ----------------------------------------------------------------------------------------
class BmmPath(LayerPath):
    """Input projection of a chunk of steps in one ``baddbmm`` into the workspace, then per step
    one ``baddbmm_`` (recurrence) and one ``bmm`` (projection) over the stacked directions, in
    place."""

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        C, P = lstm.dim, lstm.projection_dim
        w_in, w_state, w_proj = lstm.w_input[layer], lstm.w_state[layer], lstm.w_proj[layer]
        bias = lstm.gate_bias(layer).unsqueeze(1)
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = h0
        offs, sizes = pk.offsets, pk.batch_sizes
        chunks = step_chunks(pk, C, WORKSPACE_FLOATS)
        rows = max((offs[b] - offs[a] for a, b in chunks), default=0)
        ws = lstm.workspace(2 * rows * 4 * C, x)
        cc, pc = lstm.cell_clip, lstm.proj_clip
        for a, b in chunks:
            r0, r1 = offs[a], offs[b]
            gates = ws[: 2 * (r1 - r0) * 4 * C].view(2, r1 - r0, 4 * C)
            torch.baddbmm(bias, x[:, r0:r1], w_in, out=gates)  # input projection of all steps at once
            for s in range(a, b):
                n = sizes[s]
                g = gates[:, offs[s] - r0: offs[s + 1] - r0]
                g.baddbmm_(h_prev[:, :n], w_state)
                m = stacked_cell_step(g, c, n, C, cc)
                h = out[:, offs[s]: offs[s + 1]]
                torch.bmm(m, w_proj, out=h)
                if pc is not None:
                    h.clamp_(-pc, pc)
                h_prev = h
        return out, c


class OneDnnPath(LayerPath):
    """:class:`BmmPath` with the products done by pre-packed oneDNN kernels per direction. So that
    oneDNN sees few product shapes (each one is a cached primitive, see :mod:`.onednn`): the
    input projection runs in fixed tiles of packed rows (:class:`GateTiles`), the per-step
    products on their exact row count up to STEP_EXACT_ROWS, on row buckets above.

    :meth:`run` is also the loop of :class:`OneDnnBf16Path` and :class:`.int8.Int8Path`, which
    change only what the products read and how they are done: :meth:`weights`, :attr:`tiles`,
    :meth:`state`, :meth:`recurrent` and :meth:`project`."""

    tiles = GateTiles  # the input projection, tile by tile

    def weights(self, lstm: LstmWeights, layer: int) -> tuple:
        """(w_in, w_state, w_proj) of ``layer``, each per direction, as the products take them."""
        return lstm.packed_weights()[layer]

    def state(self, h: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        """What the recurrent product reads of the outputs ``h`` (per direction (rows, P))."""
        return h

    def recurrent(self, h_prev: Sequence[torch.Tensor], n: int, w_state: Sequence[torch.Tensor],
                  g_in: List[torch.Tensor]) -> List[torch.Tensor]:
        """Per direction the gate pre-activations (n, 4C) float32: ``h_prev[:n] @ W_state + g_in``."""
        return [onednn.linear_add(h_prev[d][:n], w_state[d], g_in[d], exact=STEP_EXACT_ROWS) for d in range(2)]

    def project(self, m: torch.Tensor, w_proj: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """Per direction the step outputs (n, P) float32 of m_t (2, n, C): ``m[d] @ W_proj``."""
        return [onednn.linear(m[d], w_proj[d], exact=STEP_EXACT_ROWS) for d in range(2)]

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        C, P = lstm.dim, lstm.projection_dim
        w_in, w_state, w_proj = self.weights(lstm, layer)
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = self.state(h0)
        offs, cc, pc = pk.offsets, lstm.cell_clip, lstm.proj_clip
        gates = self.tiles(x, w_in, lstm.gate_bias(layer), tile_rows(pk, C))  # input projection of all steps
        for s, n in enumerate(pk.batch_sizes):
            g = self.recurrent(h_prev, n, w_state, gates.rows(offs[s], offs[s + 1]))
            sig, m = cell_step(g, c, n, C, cc)  # m: (2, n, C), both directions in one tensor
            torch._foreach_mul_([m[0], m[1]], [sd[:, 2 * C:] for sd in sig])
            h = self.project(m, w_proj)
            clip_outputs(h, pc)
            torch._foreach_copy_([out[0, offs[s]: offs[s + 1]], out[1, offs[s]: offs[s + 1]]], h)
            h_prev = self.state(h)
        return out, c


class OneDnnBf16Path(OneDnnPath):
    """:class:`OneDnnPath` with bfloat16 products (not exact); the loop is OneDnnPath's
    :meth:`~OneDnnPath.run`.

    Every product reads bfloat16 operands (x, h_{t-1} and m_t rounded to bfloat16; weights and
    bias packed as bfloat16 once) and accumulates in float32. The input projection (with the
    bias) is kept in bfloat16 tiles; each step's recurrent product adds it in its float32
    accumulator, so a gate pre-activation is rounded to bfloat16 once, then widened: the gate
    non-linearities, cell states, clipping of c and the outputs are float32 (the outputs hold
    the bfloat16 projection results, clipped in bfloat16: ELMo's clip of 3 is exact there).
    (Summing the two products in float32 outside oneDNN instead cost two more passes over the
    gates per step: ~9% of the time.)"""

    def tiles(self, x: torch.Tensor, w_in: Sequence[torch.Tensor], bias: torch.Tensor, rows: int) -> GateTiles:
        return GateTiles(x.to(torch.bfloat16), w_in, bias.to(torch.bfloat16), rows)  # bfloat16 tiles

    def weights(self, lstm: LstmWeights, layer: int) -> tuple:
        return lstm.packed_weights(torch.bfloat16)[layer]

    def state(self, h: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        return [h[d].to(torch.bfloat16) for d in range(2)]  # h0 rounded; a step's h already is

    def recurrent(self, h_prev: Sequence[torch.Tensor], n: int, w_state: Sequence[torch.Tensor],
                  g_in: List[torch.Tensor]) -> List[torch.Tensor]:
        return [t.float() for t in super().recurrent(h_prev, n, w_state, g_in)]

    def project(self, m: torch.Tensor, w_proj: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        return super().project(m.to(torch.bfloat16), w_proj)  # m_t rounded; outputs (n, P) bfloat16


class LowPrecisionPath(LayerPath):
    """Reduced precision on any device (the GPU path; on CPU when oneDNN is off):
    :class:`BmmPath`'s ``bmm`` products on ``gemm_dtype`` (bfloat16 / float16) copies of the
    operands, with float32 accumulation where the device offers it; each product's result is in
    ``gemm_dtype``. Gate sums with the bias, element-wise steps, cell states and outputs are
    float32."""

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        C, P, dt = lstm.dim, lstm.projection_dim, lstm.gemm_dtype
        w_in, w_state, w_proj = lstm.lowp_weights(dt)[layer]
        bias = lstm.gate_bias(layer).unsqueeze(1)  # (2, 1, 4C) float32
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev, xl = h0.to(dt), x.to(dt)
        offs, sizes, cc, pc = pk.offsets, pk.batch_sizes, lstm.cell_clip, lstm.proj_clip
        for a, b in step_chunks(pk, C, WORKSPACE_FLOATS):
            r0, r1 = offs[a], offs[b]
            gates = torch.bmm(xl[:, r0:r1], w_in).float().add_(bias)  # (2, rows, 4C) float32
            for s in range(a, b):
                n = sizes[s]
                g = torch.bmm(h_prev[:, :n], w_state).float().add_(gates[:, offs[s] - r0: offs[s + 1] - r0])
                m = stacked_cell_step(g, c, n, C, cc).to(dt)
                h = torch.bmm(m, w_proj)  # (2, n, P) in dt
                if pc is not None:
                    h.clamp_(-pc, pc)
                out[:, offs[s]: offs[s + 1]].copy_(h)
                h_prev = h
        return out, c


class AutogradPath(LayerPath):
    """Out of place, so that autograd records every step (training, fine-tuning)."""

    in_place = False

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        C = lstm.dim
        w_in, w_state, w_proj = lstm.w_input[layer], lstm.w_state[layer], lstm.w_proj[layer]
        gates_all = torch.baddbmm(lstm.gate_bias(layer).unsqueeze(1), x, w_in)
        h, c = h0, c0
        hs = []
        offs, sizes = pk.offsets, pk.batch_sizes
        for s, n in enumerate(sizes):
            g = torch.baddbmm(gates_all[:, offs[s]: offs[s + 1]], h[:, :n], w_state)
            sig = torch.sigmoid(g[:, :, : 3 * C])
            j = torch.tanh(g[:, :, 3 * C:])
            c_new = sig[:, :, C: 2 * C] * c[:, :n] + sig[:, :, :C] * j
            if lstm.cell_clip is not None:
                c_new = c_new.clamp(-lstm.cell_clip, lstm.cell_clip)
            h_new = torch.bmm(sig[:, :, 2 * C:] * torch.tanh(c_new), w_proj)
            if lstm.proj_clip is not None:
                h_new = h_new.clamp(-lstm.proj_clip, lstm.proj_clip)
            hs.append(h_new)
            h = torch.cat([h_new, h[:, n:]], dim=1)
            c = torch.cat([c_new, c[:, n:]], dim=1)
        out = torch.cat(hs, dim=1) if hs else x.new_zeros(2, 0, lstm.projection_dim)
        return out, c
