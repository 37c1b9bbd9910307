"""The biLM's two stacked LSTMs (forward LM and backward LM) with cell clipping, a projection of
the hidden state and projection clipping: bilm-tf's ``tf.nn.rnn_cell.LSTMCell(num_units=dim,
num_proj=projection_dim, cell_clip, proj_clip, forget_bias=1.0)`` (Peters et al. 2018, section 3.4;
AllenNLP's ``LstmCellWithProjection``)::

    [i, j, f, o] = [x_t, h_{t-1}] W_0 + B                   (bilm-tf gate order)
    c_t = sigmoid(f + 1.0) * c_{t-1} + sigmoid(i) * tanh(j)
    c_t = clip(c_t, -cell_clip, cell_clip)                    (when cell_clip is set and > 0)
    h_t = clip((sigmoid(o) * tanh(c_t)) W_P_0, -proj_clip, proj_clip)

Layer l > 0 reads layer l - 1's outputs; with ``use_skip_connections`` its output is
``h_t + input_t`` (residual; layer 0 never has one). The forward LM reads left to right, the
backward LM right to left within each row's true length; they share nothing.

Parameters (internal gate order i, f, o, j, so the three sigmoid gates are contiguous):
``w_input[l]`` (2, P, 4C), ``w_state[l]`` (2, P, 4C), ``bias[l]`` (2, 4C) = bilm-tf's ``B``
WITHOUT TensorFlow's run-time forget bias (1.0 is added to the f part at run time, exactly as
TF does, so that weights written back are bit-identical), ``w_proj[l]`` (2, C, P).
Direction 0 is the forward LM (bilm-tf ``RNN_0``), 1 the backward LM (``RNN_1``).

Inputs and outputs are packed time-major (see :mod:`.packing`): (2, N, P), direction first.

Speed (all exact): the input projection of all time steps is one matrix product per layer and
direction (in pieces for long inputs: whole steps on the bmm path, fixed tiles of packed rows on
the oneDNN path); only the recurrence loops over time;
rows are sorted by length and the active batch shrinks as rows end (no work on padding);
without autograd the element-wise updates run in place and, on CPU, the products use oneDNN with
weights packed once (:mod:`.onednn`; ~2x faster than MKL's ``bmm`` for these skinny products).
Opt-in, not exact: ``gemm_dtype`` bfloat16 (``BiLM(precision="bfloat16")``, :mod:`.precision`)
runs the same products on bfloat16 operands with float32 accumulation.
"""
from typing import List, Optional, Tuple

import torch
from torch import nn

from . import onednn
from .packing import Packing

FORGET_BIAS = 1.0  # bilm-tf's LSTMCell(forget_bias=1.0), added at run time
# Gate-buffer budget (floats, both directions) of one input-projection matmul; longer inputs are
# done in pieces. The bmm path reuses one workspace of this size (pieces of whole time steps); the
# oneDNN path allocates each piece, so its budget is kept small enough (16 MB) for malloc to recycle
# it, in tiles of a fixed number of packed rows (:class:`_GateTiles`: one product shape).
WORKSPACE_FLOATS = 1 << 25
ONEDNN_CHUNK_FLOATS = 1 << 22
# The per-step oneDNN products run on their exact row count up to this many rows (at most
# batch_size shapes per product, all seen within the first batches; padding them to row buckets
# would add work to every step); larger step batches are rounded up to row buckets (see onednn).
STEP_EXACT_ROWS = 64

State = Tuple[torch.Tensor, torch.Tensor]  # h (L, 2, B, P), c (L, 2, B, C)


def _clip(value) -> Optional[float]:
    return float(value) if value else None


def _cell_step(g: List[torch.Tensor], c: torch.Tensor, n: int, C: int,
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


def _stacked_cell_step(g: torch.Tensor, c: torch.Tensor, n: int, C: int,
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


def _clip_outputs(h: List[torch.Tensor], proj_clip: Optional[float]) -> None:
    """Clip each direction's step output to +-proj_clip, in place."""
    if proj_clip is not None:
        torch._foreach_clamp_min_(h, -proj_clip)
        torch._foreach_clamp_max_(h, proj_clip)


class ElmoLstm(nn.Module):
    """Forward and backward multi-layer LSTMs with projection.

    dim: cells C; projection_dim: P (also the input size); n_layers: L;
    cell_clip / proj_clip: float, or None / 0 for no clipping; use_skip_connections: residual
    connections for layers l > 0.
    """

    def __init__(self, dim: int, projection_dim: int, n_layers: int, cell_clip=None, proj_clip=None,
                 use_skip_connections: bool = False):
        super().__init__()
        self.dim, self.projection_dim, self.n_layers = dim, projection_dim, n_layers
        self.cell_clip, self.proj_clip = _clip(cell_clip), _clip(proj_clip)
        self.use_skip_connections = bool(use_skip_connections)
        C, P = dim, projection_dim
        self.w_input = nn.ParameterList(nn.Parameter(torch.empty(2, P, 4 * C)) for _ in range(n_layers))
        self.w_state = nn.ParameterList(nn.Parameter(torch.empty(2, P, 4 * C)) for _ in range(n_layers))
        self.bias = nn.ParameterList(nn.Parameter(torch.empty(2, 4 * C)) for _ in range(n_layers))
        self.w_proj = nn.ParameterList(nn.Parameter(torch.empty(2, C, P)) for _ in range(n_layers))
        self._workspace: Optional[torch.Tensor] = None
        self._packed = onednn.PackedCache()  # per-layer oneDNN weights, see _packed_weights
        # dtype of the products' operands without autograd: float32 (exact) or, set by
        # BiLM(precision=...), bfloat16 / float16 (see _layer_onednn_bf16, _layer_lowp)
        self.gemm_dtype = torch.float32
        self.reset_parameters()

    def __getstate__(self):  # deepcopy / pickle: drop the scratch buffer and packed copies
        state = self.__dict__.copy()
        state["_workspace"], state["_packed"] = None, onednn.PackedCache()
        return state

    @classmethod
    def from_options(cls, options: dict) -> "ElmoLstm":
        o = options["lstm"]
        return cls(o["dim"], o["projection_dim"], o["n_layers"], o.get("cell_clip"), o.get("proj_clip"),
                   o.get("use_skip_connections", False))

    def reset_parameters(self, std: float = 0.05) -> None:
        """Random init: N(0, std^2) weights, zero biases (used before loading or for benchmarks)."""
        with torch.no_grad():
            for p in [*self.w_input, *self.w_state, *self.w_proj]:
                p.normal_(0.0, std)
            for b in self.bias:
                b.zero_()

    def zero_state(self, batch: int) -> State:
        p = self.w_proj[0]
        L, C, P = self.n_layers, self.dim, self.projection_dim
        return p.new_zeros(L, 2, batch, P), p.new_zeros(L, 2, batch, C)

    def _gate_bias(self, layer: int) -> torch.Tensor:
        C = self.dim
        b = self.bias[layer]
        return torch.cat([b[:, :C], b[:, C:2 * C] + FORGET_BIAS, b[:, 2 * C:]], dim=1)

    def forward(self, inputs: torch.Tensor, packing: Packing,
                initial_state: Optional[State] = None) -> Tuple[torch.Tensor, State]:
        """inputs (2, N, P) float32, packed per direction -> (outputs (L, 2, N, P), final state).

        initial_state / final state: (h (L, 2, B, P), c (L, 2, B, C)) in SORTED row order
        (``packing.order``); the final state of a row is its state after its last step (a row of
        length 0 keeps its initial state). Paths, all computing the same function: without
        autograd on CPU float32, pre-packed oneDNN products (:meth:`_layer_onednn`); without
        autograd elsewhere (GPU, float64), in-place ``bmm`` into a reused workspace
        (:meth:`_layer_fast`); when parameters or inputs require grad, an out-of-place path
        (:meth:`_layer_autograd`). With ``gemm_dtype`` bfloat16 / float16 (set by
        ``BiLM(precision=...)``; not exact, see :mod:`.precision`) and no autograd:
        :meth:`_layer_onednn_bf16` on CPU, :meth:`_layer_lowp` elsewhere; outputs and states
        stay float32.
        """
        B = len(packing.order)
        h0, c0 = initial_state if initial_state is not None else self.zero_state(B)
        fast = not (torch.is_grad_enabled()
                    and (inputs.requires_grad or any(p.requires_grad for p in self.parameters())))
        lowp = self.gemm_dtype != torch.float32 and inputs.dtype == torch.float32
        if not fast:
            run = self._layer_autograd
        elif lowp and self.gemm_dtype == torch.bfloat16 and onednn.available(inputs.device, inputs.dtype):
            run = self._layer_onednn_bf16
        elif lowp:
            run = self._layer_lowp
        elif onednn.available(inputs.device, inputs.dtype):
            run = self._layer_onednn
        else:
            run = self._layer_fast
        outputs, h_fin, c_fin = [], [], []
        x = inputs
        last = packing.last_rows().to(inputs.device)
        for layer in range(self.n_layers):
            out, c = run(layer, x, packing, h0[layer], c0[layer])
            h_fin.append(self._final_h(out, last, h0[layer]))  # the cell's state: before the residual
            if self.use_skip_connections and layer > 0:
                out = out.add_(x) if fast else out + x
            c_fin.append(c)
            outputs.append(out)
            x = out
        return torch.stack(outputs), (torch.stack(h_fin), torch.stack(c_fin))

    @staticmethod
    def _final_h(out: torch.Tensor, last: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        ok = last >= 0
        if bool(ok.all()):
            return out[:, last]
        h = h0.clone()
        h[:, ok] = out[:, last[ok]]
        return h

    def _gates_workspace(self, n_floats: int, like: torch.Tensor) -> torch.Tensor:
        ws = self._workspace
        if ws is None or ws.numel() < n_floats or ws.dtype != like.dtype or ws.device != like.device:
            with torch.inference_mode(False):  # a normal tensor: usable in and out of inference mode
                ws = torch.empty(n_floats, dtype=like.dtype, device=like.device)
            self._workspace = ws
        return ws

    def _step_chunks(self, packing: Packing, budget: int) -> List[Tuple[int, int]]:
        """Step ranges whose gate rows (2 * 4C floats each) fit ``budget`` floats (at least one step)."""
        per_row = 2 * 4 * self.dim
        max_rows = max(budget // per_row, packing.batch_sizes[0] if packing.batch_sizes else 1)
        chunks, start = [], 0
        offs = packing.offsets
        for s in range(len(packing.batch_sizes)):
            if offs[s + 1] - offs[start] > max_rows:
                chunks.append((start, s))
                start = s
        if packing.batch_sizes:
            chunks.append((start, len(packing.batch_sizes)))
        return chunks

    def _layer_fast(self, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
                    c0: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """One layer, both directions: x (2, N, P) -> (outputs (2, N, P), final c (2, B, C)).

        Input projection of a chunk of steps in one ``baddbmm`` into the workspace, then per step one
        ``baddbmm_`` (recurrence) and one ``bmm`` (projection) over the stacked directions, in place.
        """
        C, P = self.dim, self.projection_dim
        w_in, w_state, w_proj = self.w_input[layer], self.w_state[layer], self.w_proj[layer]
        bias = self._gate_bias(layer).unsqueeze(1)
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = h0
        offs, sizes = pk.offsets, pk.batch_sizes
        chunks = self._step_chunks(pk, WORKSPACE_FLOATS)
        rows = max((offs[b] - offs[a] for a, b in chunks), default=0)
        ws = self._gates_workspace(2 * rows * 4 * C, x)
        cc, pc = self.cell_clip, self.proj_clip
        for a, b in chunks:
            r0, r1 = offs[a], offs[b]
            gates = ws[: 2 * (r1 - r0) * 4 * C].view(2, r1 - r0, 4 * C)
            torch.baddbmm(bias, x[:, r0:r1], w_in, out=gates)  # input projection of all steps at once
            for s in range(a, b):
                n = sizes[s]
                g = gates[:, offs[s] - r0: offs[s + 1] - r0]
                g.baddbmm_(h_prev[:, :n], w_state)
                m = _stacked_cell_step(g, c, n, C, cc)
                h = out[:, offs[s]: offs[s + 1]]
                torch.bmm(m, w_proj, out=h)
                if pc is not None:
                    h.clamp_(-pc, pc)
                h_prev = h
        return out, c

    def _packed_weights(self, dtype: torch.dtype = torch.float32):
        """Per layer: ([w_input_d], [w_state_d], [w_proj_d]) reordered for oneDNN, d = 0, 1, as
        ``dtype`` (float32, or bfloat16 copies for :meth:`_layer_onednn_bf16`); cached (another
        dtype replaces the cached copies)."""
        return self._packed.get(
            [*self.w_input, *self.w_state, *self.w_proj],
            lambda: [tuple([onednn.pack(w[d], dtype=dtype) for d in range(2)]
                           for w in (self.w_input[l], self.w_state[l], self.w_proj[l]))
                     for l in range(self.n_layers)],
            tag=None if dtype == torch.float32 else dtype)

    def _layer_onednn(self, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
                      c0: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Like :meth:`_layer_fast`, with the products done by pre-packed oneDNN kernels per direction.

        So that oneDNN sees few product shapes (each one is a cached primitive, see :mod:`.onednn`):
        the input projection runs in fixed tiles of packed rows (:class:`_GateTiles`), the
        per-step products on their exact row count up to STEP_EXACT_ROWS, on row buckets above."""
        C, P = self.dim, self.projection_dim
        w_in, w_state, w_proj = self._packed_weights()[layer]
        bias = self._gate_bias(layer)
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = (h0[0], h0[1])
        offs, sizes = pk.offsets, pk.batch_sizes
        cc, pc = self.cell_clip, self.proj_clip
        gates = _GateTiles(x, w_in, bias, self._tile_rows(pk))  # input projection of all steps
        for s, n in enumerate(sizes):
            g_in = gates.rows(offs[s], offs[s + 1])
            g = [onednn.linear_add(h_prev[d][:n], w_state[d], g_in[d], exact=STEP_EXACT_ROWS) for d in range(2)]
            sig, m = _cell_step(g, c, n, C, cc)
            torch._foreach_mul_([m[0], m[1]], [sd[:, 2 * C:] for sd in sig])
            h = [onednn.linear(m[d], w_proj[d], exact=STEP_EXACT_ROWS) for d in range(2)]
            _clip_outputs(h, pc)
            torch._foreach_copy_([out[0, offs[s]: offs[s + 1]], out[1, offs[s]: offs[s + 1]]], h)
            h_prev = h
        return out, c

    def _tile_rows(self, pk: Packing) -> int:
        """Packed rows per input-projection tile: the largest power of two whose gates (both
        directions) fit ONEDNN_CHUNK_FLOATS, but at least the row bucket of the largest step (so
        that a step spans at most two tiles). Always a row-bucket size."""
        budget = max(1, ONEDNN_CHUNK_FLOATS // (2 * 4 * self.dim))
        widest = pk.batch_sizes[0] if pk.batch_sizes else 1
        return max(1 << (budget.bit_length() - 1), onednn.bucket_rows(widest))

    # -- reduced precision (BiLM(precision="bfloat16"); not exact) ------------------------------
    def _layer_onednn_bf16(self, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
                           c0: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_layer_onednn` with bfloat16 products: x (2, N, P) float32 -> (outputs (2, N, P)
        float32, final c (2, B, C) float32).

        Every product reads bfloat16 operands (x, h_{t-1} and m_t rounded to bfloat16; weights
        and bias packed as bfloat16 once) and accumulates in float32. The input projection
        (with the bias) is kept in bfloat16 tiles; each step's recurrent product adds it in its
        float32 accumulator, so a gate pre-activation is rounded to bfloat16 once, then widened:
        the gate non-linearities, cell states, clipping of c and the outputs are float32 (the
        outputs hold the bfloat16 projection results). (Summing the two products in float32
        outside oneDNN instead cost two more passes over the gates per step: ~9% of the time.)"""
        C, P = self.dim, self.projection_dim
        bf16 = torch.bfloat16
        w_in, w_state, w_proj = self._packed_weights(bf16)[layer]
        bias = self._gate_bias(layer).to(bf16)
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = (h0[0].to(bf16), h0[1].to(bf16))
        offs, sizes = pk.offsets, pk.batch_sizes
        cc, pc = self.cell_clip, self.proj_clip
        gates = _GateTiles(x.to(bf16), w_in, bias, self._tile_rows(pk))  # bfloat16 tiles
        for s, n in enumerate(sizes):
            g_in = gates.rows(offs[s], offs[s + 1])
            g = [onednn.linear_add(h_prev[d][:n], w_state[d], g_in[d], exact=STEP_EXACT_ROWS).float()
                 for d in range(2)]  # float32 (n, 4C)
            sig, t = _cell_step(g, c, n, C, cc)
            m = t.new_empty(t.shape, dtype=bf16)
            for d in range(2):
                torch.mul(t[d], sig[d][:, 2 * C:], out=m[d])  # m_t, rounded to bfloat16
            h = [onednn.linear(m[d], w_proj[d], exact=STEP_EXACT_ROWS) for d in range(2)]  # bf16 (n, P)
            _clip_outputs(h, pc)  # pc is exact in bfloat16 for ELMo's clips (3); clamp then widen
            for d in range(2):
                out[d, offs[s]: offs[s + 1]].copy_(h[d])
            h_prev = h
        return out, c

    def _lowp_weights(self, dtype: torch.dtype):
        """Per layer (w_input, w_state, w_proj), each (2, ., .), copied to ``dtype``; cached."""
        def build():
            with torch.inference_mode(False), torch.no_grad():
                return [tuple(w[l].detach().to(dtype) for w in (self.w_input, self.w_state, self.w_proj))
                        for l in range(self.n_layers)]

        return self._packed.get([*self.w_input, *self.w_state, *self.w_proj], build, tag=("copy", dtype))

    def _layer_lowp(self, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
                    c0: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Reduced-precision path for any device (the GPU path; on CPU when oneDNN is off):
        :meth:`_layer_fast`'s ``bmm`` products on ``gemm_dtype`` (bfloat16 / float16) copies of
        the operands, with float32 accumulation where the device offers it; each product's
        result is in ``gemm_dtype``. Gate sums with the bias, element-wise steps, cell states
        and outputs are float32. x (2, N, P) float32 -> (outputs (2, N, P), final c (2, B, C))."""
        C, P = self.dim, self.projection_dim
        dt = self.gemm_dtype
        w_in, w_state, w_proj = self._lowp_weights(dt)[layer]
        bias = self._gate_bias(layer).unsqueeze(1)  # (2, 1, 4C) float32
        out = x.new_empty(2, pk.n_packed, P)
        c = c0.clone()
        h_prev = h0.to(dt)
        xl = x.to(dt)
        offs, sizes = pk.offsets, pk.batch_sizes
        cc, pc = self.cell_clip, self.proj_clip
        for a, b in self._step_chunks(pk, WORKSPACE_FLOATS):
            r0, r1 = offs[a], offs[b]
            gates = torch.bmm(xl[:, r0:r1], w_in).float().add_(bias)  # (2, rows, 4C) float32
            for s in range(a, b):
                n = sizes[s]
                g = torch.bmm(h_prev[:, :n], w_state).float().add_(gates[:, offs[s] - r0: offs[s + 1] - r0])
                m = _stacked_cell_step(g, c, n, C, cc).to(dt)
                h = torch.bmm(m, w_proj)  # (2, n, P) in dt
                if pc is not None:
                    h.clamp_(-pc, pc)
                out[:, offs[s]: offs[s + 1]].copy_(h)
                h_prev = h
        return out, c

    def _layer_autograd(self, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
                        c0: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        C = self.dim
        w_in, w_state, w_proj = self.w_input[layer], self.w_state[layer], self.w_proj[layer]
        gates_all = torch.baddbmm(self._gate_bias(layer).unsqueeze(1), x, w_in)
        h, c = h0, c0
        hs = []
        offs, sizes = pk.offsets, pk.batch_sizes
        for s, n in enumerate(sizes):
            g = torch.baddbmm(gates_all[:, offs[s]: offs[s + 1]], h[:, :n], w_state)
            sig = torch.sigmoid(g[:, :, : 3 * C])
            j = torch.tanh(g[:, :, 3 * C:])
            c_new = sig[:, :, C: 2 * C] * c[:, :n] + sig[:, :, :C] * j
            if self.cell_clip is not None:
                c_new = c_new.clamp(-self.cell_clip, self.cell_clip)
            h_new = torch.bmm(sig[:, :, 2 * C:] * torch.tanh(c_new), w_proj)
            if self.proj_clip is not None:
                h_new = h_new.clamp(-self.proj_clip, self.proj_clip)
            hs.append(h_new)
            h = torch.cat([h_new, h[:, n:]], dim=1)
            c = torch.cat([c_new, c[:, n:]], dim=1)
        out = torch.cat(hs, dim=1) if hs else x.new_zeros(2, 0, self.projection_dim)
        return out, c


class _GateTiles:
    """The input projection ``x[d] @ W_in[d] + b[d]`` of both directions over the packed rows,
    computed tile by tile (``rows`` packed rows per tile; only the last tile of a layer is
    shorter) and read step by step with :meth:`rows`. Fixed tiles keep the number of product
    shapes small (see :mod:`.onednn`); the one or two tiles a step needs are kept alive.

    x: (2, N, P) float32; w_in: per direction the packed (P, 4C) weight; bias: (2, 4C) (all
    bfloat16 on the bfloat16 path, whose gates are then bfloat16).
    """

    def __init__(self, x: torch.Tensor, w_in, bias: torch.Tensor, rows: int):
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
