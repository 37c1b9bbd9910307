"""The training path of :class:`~.lstm.ElmoLstm` (:class:`TrainPath`): the function of
:mod:`.lstm` (bilm-tf's LSTM cell, gates i, f, o, j, forget bias, cell and projection clipping)
with a hand-written backward, for training and fine-tuning under autograd. It computes what
:class:`.lstm_paths.AutogradPath` computes, faster:

- the input projection of all packed rows is one matrix product; only the recurrence loops, over
  the packed steps (the active batch shrinks as rows end: no work on padding, see :mod:`.packing`);
- both directions of a layer run in one pass: every product is one ``bmm`` over both;
- the backward pass is hand-written (:class:`ElmoLayer`): per step two skinny products and the
  element-wise gate derivatives; the gradients of ``w_input`` and ``w_state`` are one product
  over all rows (``[x_t; h_{t-1}]^T dL/dgates``), those of ``w_proj`` one more;
- the recurrence of a layer runs as one C++ op per pass (:mod:`.native`: ``elmo_forward`` /
  ``elmo_backward``, CPU only), or with element-wise steps fused by torch.compile
  (:func:`compiled_cells`), or eagerly (:func:`cell_forward` / :func:`cell_backward`);
- optionally (``ElmoLstm.train_gemm_dtype = torch.bfloat16``) every matrix product reads bfloat16
  copies of its operands (~2-3x faster on CPUs with AVX512-BF16 or AMX); products accumulate in
  float32; cell states and the element-wise steps are float32 (gate inputs, the outputs h and the
  derivatives between products are rounded to bfloat16); parameters and gradients are float32.

Speed (``benchmarks/bench_lstm_train.py``, forward + backward, en_elmo_small's shape, 1 thread):
as fast as the pretraining's former padded recurrence (same C++ design) on batches of near-equal
lengths, faster by the share of padding it skips on ragged ones; with the eager steps about twice
as fast as the autograd path. The pretraining (``spacy_elmo.pretrain``) trains on it.

Clipping (bilm-tf's ``cell_clip`` / ``proj_clip``) has torch.clamp's gradient: zero where the
clipped value was beyond the clip. Cell states are kept before clipping, so the backward knows
where. The skip connections are outside the path (:meth:`.lstm.ElmoLstm.forward` adds them).

How :class:`~.lstm.ElmoLstm` trains is set by two plain attributes: ``train_recurrence``
(:data:`RECURRENCES`: ``"eager"`` (default), ``"compiled"``, ``"native"``, ``"auto"`` (the fastest
that works here: :func:`recurrence`) or ``"autograd"`` (always :class:`.lstm_paths.AutogradPath`))
and ``train_gemm_dtype`` (torch.float32 (default) or torch.bfloat16). The path applies with zero
initial state, float32 inputs and parameters, on CPU or CUDA (the C++ ops are CPU-only; elsewhere
"native" runs the eager steps); :func:`.lstm_paths.choose` falls back to the autograd path
otherwise (a stateful biLM's carried state).
"""
import math
import types
import warnings
from typing import List, Optional, Sequence, Tuple, Union

import numpy
import torch
from torch.autograd.function import once_differentiable

from ..errors import ElmoConfigError
from .lstm_weights import LayerPath, LayerResult, LstmWeights
from .packing import Packing

NO_CLIP = math.inf
RECURRENCES = ("eager", "compiled", "native", "auto", "autograd")
TRAIN_GEMM_DTYPES = (torch.float32, torch.bfloat16)
Clips = Tuple[float, float]  # (cell_clip, proj_clip), NO_CLIP for none


# -- element-wise steps ---------------------------------------------------------------------------
def cell_forward(gates_mm, xg_t, bias, c_prev, m_out, clip: torch.Tensor):
    """One step's element-wise part, both directions (any leading dims, n rows).

    gates_mm = h_{t-1} W_state (..., n, 4C) and xg_t = x_t W_input (..., n, 4C), both in the
    product dtype; bias (..., 1, 4C) float32 with the forget bias; c_prev (..., n, C) float32, the
    previous cell state BEFORE clipping; clip: cell_clip, a 0-dim float32 tensor (inf for none). Writes
    m_t = sigmoid(o) * tanh(clip(c_t)) into m_out (product dtype) and returns (acts (..., n, 4C)
    float32 = sigmoid(i), sigmoid(f), sigmoid(o), tanh(j); c_t = sigmoid(f) clip(c_{t-1}) +
    sigmoid(i) tanh(j) (..., n, C) float32 before clipping)."""
    pre = gates_mm.float() + xg_t.float() + bias
    i, f, o, j = pre.chunk(4, -1)
    i, f, o, j = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o), torch.tanh(j)
    c = f * c_prev.clamp(-clip, clip) + i * j
    m_out.copy_(o * torch.tanh(c.clamp(-clip, clip)))
    return torch.cat([i, f, o, j], -1), c


def cell_backward(d_m, acts, c, c_prev, d_c, d_pre_out, clip: torch.Tensor):
    """The derivative of :func:`cell_forward`. d_m = dL/dm_t (..., n, C) in the product dtype;
    acts, c_t, c_{t-1} (before clipping) and d_c = dL/d clip(c_t) from step t + 1, float32. Writes
    dL/d pre-activations (..., n, 4C) into d_pre_out (product dtype) and returns (their sum over n
    (..., 4C) float32, dL/d clip(c_{t-1}) through the cell path (..., n, C) float32)."""
    i, f, o, j = acts.chunk(4, -1)
    d_m = d_m.float()
    tc = torch.tanh(c.clamp(-clip, clip))
    d_c = torch.where(c.abs() <= clip, d_c + d_m * o * (1 - tc * tc), 0.0)  # torch.clamp's gradient
    d_pre = torch.cat([d_c * j * i * (1 - i), d_c * c_prev.clamp(-clip, clip) * f * (1 - f),
                       d_m * tc * o * (1 - o), d_c * i * (1 - j * j)], -1)
    d_pre_out.copy_(d_pre)
    return d_pre.sum(-2), d_c * f


def _offsets(sizes: Sequence[int]) -> List[int]:
    return [0, *numpy.cumsum(sizes).tolist()]


def _forward_loop(xg, bias, w_state, w_proj, sizes, cell, clips: Clips):
    """The recurrence of both directions over the packed steps: xg (D, N, 4C), w_state (D, P, 4C),
    w_proj (D, C, P) in the product dtype, bias (D, 1, 4C). Returns hs (D, N, P) (clipped) and
    its values before clipping (None without projection clipping), ms (D, N, C) in the product
    dtype, and per step the gate activations (D, n, 4C) and cell states (D, n, C) float32."""
    D, N, _ = xg.shape
    C, P = w_proj.shape[1], w_proj.shape[2]
    cell_clip, proj_clip = clips
    clip_t = xg.new_tensor(cell_clip, dtype=torch.float32)  # a tensor: torch.compile specialises floats
    hs, ms = xg.new_empty(D, N, P), xg.new_empty(D, N, C)
    raw = xg.new_empty(D, N, P) if proj_clip < NO_CLIP else None
    h = xg.new_zeros(D, sizes[0], P)
    c = xg.new_zeros(D, sizes[0], C, dtype=torch.float32)
    acts, cs = [], []
    offs = _offsets(sizes)
    for t, n in enumerate(sizes):
        rows = slice(offs[t], offs[t + 1])
        # contiguous operands at offset 0: each stride pattern is one more torch.compile'd variant
        m = ms.new_empty(D, n, C)
        a, c = cell(torch.bmm(h[:, :n], w_state), xg[:, rows].contiguous(), bias, c[:, :n].contiguous(), m, clip_t)
        ms[:, rows] = m
        h_raw = torch.bmm(m, w_proj)
        if raw is not None:
            raw[:, rows] = h_raw
        h = hs[:, rows]
        torch.clamp(h_raw, -proj_clip, proj_clip, out=h)
        acts.append(a)
        cs.append(c)
    return hs, raw, ms, acts, cs


def _backward_loop(d_out, d_c, sizes, acts, cs, raw, whh, whr, cell, clips: Clips, d_pre, d_h_all):
    """The reverse recurrence: d_out (D, N, P) float32; d_c (D, B, C) float32 = dL/d final clipped
    cell states (updated in place); acts / cs / raw from :func:`_forward_loop`; whh (D, 4C, P),
    whr (D, P, C). Fills d_pre (D, N, 4C) and d_h_all (D, N, P) (product dtype: dL/d projection
    before clipping) and returns dL/d bias (D, 4C) float32."""
    cell_clip, proj_clip = clips
    clip_t = d_out.new_tensor(cell_clip)
    offs = _offsets(sizes)
    d_bias = d_out.new_zeros(d_out.shape[0], whh.shape[1])
    zeros_c = d_c.new_zeros(d_c.shape)  # c_{-1}
    d_h_rec = None
    for t in range(len(sizes) - 1, -1, -1):
        n, rows = sizes[t], slice(offs[t], offs[t + 1])
        d_h = d_out[:, rows].clone()
        if d_h_rec is not None:
            d_h[:, : d_h_rec.shape[1]] += d_h_rec
        if raw is not None:
            d_h = torch.where(raw[:, rows].abs() <= proj_clip, d_h, 0.0)
        d_h_all[:, rows] = d_h
        c_prev = cs[t - 1][:, :n].contiguous() if t else zeros_c[:, :n]
        d_pre_t = d_pre.new_empty(d_pre.shape[0], n, d_pre.shape[2])
        d_bias_t, d_c[:, :n] = cell(torch.bmm(d_h_all[:, rows], whr), acts[t], cs[t], c_prev,
                                    d_c[:, :n].contiguous(), d_pre_t, clip_t)
        d_pre[:, rows] = d_pre_t
        d_bias += d_bias_t
        if t:
            d_h_rec = torch.bmm(d_pre_t, whh)
    return d_bias


def _previous_rows(sizes: Sequence[int]) -> torch.Tensor:
    """(N - sizes[0],) int64: for each packed row of steps >= 1, the packed row of its previous step."""
    sizes_np = numpy.asarray(sizes, dtype=numpy.int64)
    step = numpy.repeat(numpy.arange(len(sizes_np)), sizes_np)[sizes_np[0]:]
    return torch.from_numpy(numpy.arange(sizes_np[0], sizes_np.sum()) - sizes_np[step - 1])


def _last_cells(cs: Union[torch.Tensor, List[torch.Tensor]], sizes: Sequence[int], clip: float) -> torch.Tensor:
    """(D, sizes[0], C): each row's clipped cell state after its last step (rows in sorted order);
    cs (D, N, C) packed or per step (D, n, C)."""
    if isinstance(cs, list):
        ends = [cs[t][:, (sizes[t + 1] if t + 1 < len(sizes) else 0):] for t in range(len(sizes) - 1, -1, -1)]
        last = torch.cat(ends, 1)  # rows ending at the last step come first in sorted order
    else:
        lengths = (numpy.asarray(sizes)[:, None] > numpy.arange(sizes[0])[None, :]).sum(0)
        index = numpy.asarray(_offsets(sizes))[lengths - 1] + numpy.arange(sizes[0])
        last = cs.index_select(1, torch.from_numpy(index).to(cs.device))
    return last.clamp(-clip, clip)


class NativeRecurrence:
    """The recurrences of a layer as the C++ ops of :mod:`.native` (``ops.elmo_forward`` /
    ``ops.elmo_backward``), in place of the pair of element-wise step functions. On other devices
    than the CPU the eager steps run instead."""

    def __init__(self, ops):
        self.ops = ops

    def __repr__(self) -> str:
        return "NativeRecurrence()"


Cells = Union[Tuple, NativeRecurrence]


def _run_forward(x_low, w_in, bias, w_st, w_pr, sizes, cells: Cells, clips: Clips):
    """(hs, raw, ms, acts, cs) of one layer, see :func:`_forward_loop` (native: acts and cs packed
    (D, N, .) tensors, raw an empty tensor without projection clipping)."""
    if isinstance(cells, NativeRecurrence):
        hs, ms, acts, cs, raw = cells.ops.elmo_forward(x_low.contiguous(), sizes, w_in, bias.contiguous(),
                                                       w_st.contiguous(), w_pr.contiguous(), *clips)
        return hs, raw, ms, acts, cs
    xg = torch.bmm(x_low, w_in)
    return _forward_loop(xg, bias[:, None, :], w_st, w_pr, sizes, cells[0], clips)


class ElmoLayer(torch.autograd.Function):
    """One layer of :class:`~.lstm.ElmoLstm`, both directions, with its backward written out.

    forward(x (D, N, I) float32 packed, w_input (D, I, 4C), bias (D, 4C) (with the forget bias:
    ``ElmoLstm.gate_bias``), w_state (D, P, 4C), w_proj (D, C, P) float32, batch_sizes (the
    packing's), gemm_dtype, cells (a (cell_forward, cell_backward) pair or a
    :class:`NativeRecurrence`), clips (cell_clip, proj_clip; NO_CLIP for none)) -> (h (D, N, P)
    float32 (clipped), c_last (D, batch_sizes[0], C) float32: each row's clipped cell state after
    its last step). Zero initial state; D = 2 for a biLM layer. Once differentiable: a second
    derivative through it raises RuntimeError (``train_recurrence = "autograd"`` has them).
    """

    @staticmethod
    def forward(ctx, x, w_input, bias, w_state, w_proj, sizes, gemm_dtype, cells, clips):
        dt = gemm_dtype
        # the weights in the product dtype, once per pass (backward reuses them)
        w_in, w_st, w_pr = w_input.to(dt), w_state.to(dt), w_proj.to(dt)
        hs, raw, ms, acts, cs = _run_forward(x.to(dt), w_in, bias, w_st, w_pr, sizes, cells, clips)
        out = hs.float()
        ctx.save_for_backward(x, out)  # in-place changes to either are caught (version counters)
        ctx.saved = (acts, cs, ms, raw, w_in, w_st, w_pr)
        ctx.args = (list(sizes), dt, cells, clips)
        ctx.set_materialize_grads(False)
        return out, _last_cells(cs, sizes, clips[0])

    @staticmethod
    @once_differentiable  # a second derivative (create_graph=True) raises instead of being wrong
    def backward(ctx, d_out, d_c_last):
        x, out = ctx.saved_tensors
        acts, cs, ms, raw, w_in, w_st, w_pr = ctx.saved
        del ctx.saved
        sizes, dt, cells, clips = ctx.args
        (D, N, P), I, C = out.shape, x.shape[2], ms.shape[2]
        d_out = out.new_zeros(out.shape) if d_out is None else d_out.contiguous().float()
        d_c = out.new_zeros(D, sizes[0], C) if d_c_last is None else d_c_last.float().clone().contiguous()
        whh, whr = w_st.transpose(1, 2).contiguous(), w_pr.transpose(1, 2).contiguous()  # (D, 4C, P), (D, P, C)
        if isinstance(cells, NativeRecurrence):
            d_pre, d_h_all, d_bias = cells.ops.elmo_backward(d_out, d_c, sizes, acts, cs, raw, whh, whr, *clips)
        else:
            d_pre, d_h_all = out.new_empty(D, N, 4 * C, dtype=dt), out.new_empty(D, N, P, dtype=dt)
            d_bias = _backward_loop(d_out, d_c, sizes, acts, cs, raw, whh, whr, cells[1], clips, d_pre, d_h_all)
        # dW_input and dW_state in one product: [x_t; h_{t-1}]^T d_pre (h_{-1} = 0)
        xh = out.new_empty(D, N, I + P, dtype=dt)
        xh[..., :I] = x
        xh[:, : sizes[0], I:] = 0
        xh[:, sizes[0]:, I:] = out.index_select(1, _previous_rows(sizes).to(out.device))
        d_w = torch.bmm(xh.transpose(1, 2), d_pre).float()  # (D, I + P, 4C)
        d_w_proj = torch.bmm(ms.transpose(1, 2), d_h_all).float()
        d_x = torch.bmm(d_pre, w_in.transpose(1, 2)).float() if ctx.needs_input_grad[0] else None
        return d_x, d_w[:, :I], d_bias, d_w[:, I:], d_w_proj, None, None, None, None


class TrainPath(LayerPath):
    """The training path (module docstring): :class:`ElmoLayer` on the packed layer, with ``cells``
    (a (cell_forward, cell_backward) pair or a :class:`NativeRecurrence`)."""

    in_place = False

    def __init__(self, cells: Cells) -> None:
        self.cells = cells

    def run(self, lstm: LstmWeights, layer: int, x: torch.Tensor, pk: Packing, h0: torch.Tensor,
            c0: torch.Tensor) -> LayerResult:
        cells = self.cells
        if isinstance(cells, NativeRecurrence) and x.device.type != "cpu":
            cells = (cell_forward, cell_backward)  # the C++ ops are CPU-only
        clips = (lstm.cell_clip or NO_CLIP, lstm.proj_clip or NO_CLIP)
        out, c = ElmoLayer.apply(x, lstm.w_input[layer], lstm.gate_bias(layer), lstm.w_state[layer],
                                 lstm.w_proj[layer], pk.batch_sizes, lstm.train_gemm_dtype, cells, clips)
        if c.shape[1] < c0.shape[1]:  # rows of length 0 keep their (zero) initial state
            c = torch.cat([c, c0[:, c.shape[1]:]], 1)
        return out, c


def train_path(lstm: LstmWeights, inputs: torch.Tensor, zero_state: bool) -> Optional[TrainPath]:
    """The :class:`TrainPath` for this call, or None where it does not apply (``train_recurrence``
    "autograd", a non-zero initial state, no packed rows, inputs or parameters not float32, a
    device other than CPU / CUDA). ElmoConfigError (a ValueError) for a ``train_recurrence`` or
    ``train_gemm_dtype`` that is not one."""
    kind, dtype = lstm.train_recurrence, lstm.train_gemm_dtype
    if kind not in RECURRENCES:
        raise ElmoConfigError(f"ElmoLstm.train_recurrence = {kind!r}: expected one of {', '.join(RECURRENCES)}")
    if dtype not in TRAIN_GEMM_DTYPES:
        raise ElmoConfigError(f"ElmoLstm.train_gemm_dtype = {dtype}: expected torch.float32 or torch.bfloat16")
    usable = (kind != "autograd" and zero_state and inputs.shape[1] > 0 and inputs.dtype == torch.float32
              and lstm.w_input[0].dtype == torch.float32 and inputs.device.type in ("cpu", "cuda"))
    return TrainPath(resolve(kind, dtype)) if usable else None


def resolve(kind: str, dtype: torch.dtype = torch.float32) -> Cells:
    """The cells of a ``train_recurrence`` kind: "eager" the eager steps, "compiled"
    :func:`compiled_cells` (else eager), "native" :func:`native_recurrence` (else compiled, else
    eager), "auto" the same as "native"."""
    eager = (cell_forward, cell_backward)
    if kind in ("native", "auto"):
        return native_recurrence() or compiled_cells(dtype) or eager
    if kind == "compiled":
        return compiled_cells(dtype) or eager
    return eager


def recurrence(dtype: torch.dtype = torch.float32) -> Cells:
    """The fastest cells that work here: the native ops, else torch.compile'd cells, else eager."""
    return resolve("auto", dtype)


def cells_kind(cells: Cells) -> str:
    """How cells run: "native", "inductor" (torch.compile) or "eager"."""
    if isinstance(cells, NativeRecurrence):
        return "native"
    return "eager" if cells[0] is cell_forward else "inductor"


# -- the native ops and the compiled cells, each checked against the eager steps once per process --
_NATIVE: dict = {}


def native_recurrence() -> Optional[NativeRecurrence]:
    """:class:`NativeRecurrence` of the ops of :mod:`.native` (built on first use per machine, ~30 s),
    checked against the eager steps once per process in float32 and bfloat16; None, with a
    warning, where they cannot be built or disagree."""
    if "ops" not in _NATIVE:
        from .native import lstmp_ops

        ops = lstmp_ops()
        native = NativeRecurrence(ops) if ops is not None else None
        if native is not None and not passes_check(lambda dtype: check_cells(native, dtype), "native LSTM kernels"):
            native = None
        _NATIVE["ops"] = native
    return _NATIVE["ops"]


def passes_check(check, what: str) -> bool:
    """Whether ``check(dtype)`` passes for every dtype of TRAIN_GEMM_DTYPES; where it raises (a
    wrong or failing native kernel), one warning naming ``what`` and the error, and False: the
    caller then runs without those kernels."""
    try:
        for dtype in TRAIN_GEMM_DTYPES:
            check(dtype)
    except Exception as err:  # noqa: BLE001 - a wrong or failing kernel: run without it
        warnings.warn(f"the {what} failed their check ({type(err).__name__}: "
                      f"{str(err).splitlines()[0][:200] if str(err) else ''}); not using them")
        return False
    return True


_COMPILED: dict = {}


def _own_code(fn):
    """A copy of ``fn`` with a code object of its own: torch.compile keeps its compiled variants
    (and their limit) per code object, so the float32 and bfloat16 cells do not share them."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def compiled_cells(dtype: torch.dtype = torch.float32) -> Optional[Tuple]:
    """(cell_forward, cell_backward) fused by torch.compile (inductor's C++ kernels, dynamic batch
    sizes) for products in `dtype`, compiled and checked against the eager functions once per
    process (~30 s); None where compiling fails (e.g. no C++ compiler), with a warning."""
    if dtype not in _COMPILED:
        try:
            cells = (torch.compile(_own_code(cell_forward), dynamic=True),
                     torch.compile(_own_code(cell_backward), dynamic=True))
            check_cells(cells, dtype)
            _COMPILED[dtype] = cells
        except Exception as err:  # noqa: BLE001 - any compiler or backend failure means: run eager
            warnings.warn(f"torch.compile of the LSTM cells failed "
                          f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); "
                          "running them eagerly (slower, same results)")
            _COMPILED[dtype] = None
    return _COMPILED[dtype]


def check_layer(cells: Cells, dtype: torch.dtype, sizes: Sequence[int] = (3, 3, 2, 1, 1),
                clips: Clips = (0.5, 0.3), seed: int = 0) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """[(got, want)] of :class:`ElmoLayer` with ``cells`` against the eager steps on a small random
    layer (ragged ``sizes``, clips that engage): outputs h and c_last, the gradients of x and of
    every weight."""
    gen = torch.Generator().manual_seed(seed)
    D, I, C, P, N = 2, 6, 20, 4, sum(sizes)
    leaves0 = [torch.randn(D, N, I, generator=gen), torch.randn(D, I, 4 * C, generator=gen),
               torch.randn(D, 4 * C, generator=gen), torch.randn(D, P, 4 * C, generator=gen),
               torch.randn(D, C, P, generator=gen) * 0.5]
    d_h, d_c = torch.randn(D, N, P, generator=gen), torch.randn(D, sizes[0], C, generator=gen)
    results = []
    for run in (cells, (cell_forward, cell_backward)):
        leaves = [t.clone().requires_grad_(True) for t in leaves0]
        h, c = ElmoLayer.apply(*leaves, list(sizes), dtype, run, clips)
        ((h * d_h).sum() + (c * d_c).sum()).backward()
        results.append([h.detach(), c.detach()] + [t.grad for t in leaves])
    return list(zip(*results))


def check_cells(cells: Cells, dtype: torch.dtype) -> None:
    """RuntimeError where ``cells`` disagree with the eager steps (:func:`check_layer`)."""
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    for got, want in check_layer(cells, dtype):
        if not torch.allclose(got, want, atol=tol * float(want.abs().max()), rtol=tol):
            raise RuntimeError(f"the LSTM cells {cells_kind(cells)} disagree with the eager steps ({dtype})")
