"""A training LSTM with projection, faster on CPU than ``torch.nn.LSTM(proj_size=...)``.

The biLM's own LSTM trains the same way, with bilm-tf's gate order, clipping and packed batches
(:mod:`spacy_elmo.bilm.lstm_train`, the training path of ``ElmoLstm``); this module serves the
pretraining's :class:`.lm.LanguageModel` until it runs on ``spacy_elmo.bilm.BiLM``.

It computes exactly the function of ``nn.LSTM(input_size, hidden_size, proj_size=P,
batch_first=True)`` with one layer and zero initial state (Sak et al. 2014; the LSTMP of bilm-tf
without clipping)::

    [i, f, g, o] = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh      (torch's gate order)
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
    h_t = (sigmoid(o) * tanh(c_t)) W_hr^T

and has the same parameters under the same names (``weight_ih_l0`` (4C, P_in), ``weight_hh_l0``
(4C, P), ``bias_ih_l0`` / ``bias_hh_l0`` (4C,), ``weight_hr_l0`` (P, C)), so checkpoints and the
export to bilm-tf files (:mod:`.export`) are the same for both.

Why faster (measured in ``benchmarks/bench_pretrain.py``):

- the input projection of all time steps is one matrix product; only the recurrence loops;
- the two directions of a biLM layer run in one pass (:func:`run_layers`): every product is one
  ``bmm`` over both;
- the backward pass is hand-written (:class:`_LSTMP`): per step it does two skinny products and
  the element-wise gate derivatives, and the weight gradients of ``W_ih``, ``W_hh`` and ``W_hr``
  are one product each over all steps instead of one per step;
- the whole recurrence of a layer can run as one C++ op per pass (:mod:`spacy_elmo.bilm.native`, built on first use:
  per-step products through ``at::bmm_out``, vectorised element-wise steps, reused buffers), or its
  element-wise steps fused by torch.compile (:func:`compiled_cells`); :func:`recurrence` picks the
  first that works here;
- optionally (``gemm_dtype=torch.bfloat16``) every matrix product reads bfloat16 copies of its
  operands, which runs ~2-3x faster than float32 on CPUs with AVX512-BF16 or AMX. Products
  accumulate in float32; cell states and the element-wise steps are float32 (the gate inputs and
  derivatives between products are rounded to bfloat16); parameters and their gradients are
  float32.
"""
import warnings
from typing import Optional

import torch
from torch import nn


def cell_forward(gates_mm, xg_t, bias, c_prev, m_out):
    """One step's element-wise part, for any leading dims (..., B).

    gates_mm = h_{t-1} W_hh^T (..., B, 4C) and xg_t = x_t W_ih^T (..., B, 4C), both in the product
    dtype; bias (..., 1, 4C) = b_ih + b_hh and c_prev (..., B, C) float32. Writes
    m_t = sigmoid(o) * tanh(c_t) (..., B, C) into m_out (product dtype) and returns acts
    (..., B, 4C) float32 = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) and c_t (..., B, C) float32.
    """
    pre = gates_mm.float() + xg_t.float() + bias
    i, f, g, o = pre.chunk(4, -1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c = f * c_prev + i * g
    m_out.copy_(o * torch.tanh(c))
    return torch.cat([i, f, g, o], -1), c


def cell_backward(d_m, acts, c, c_prev, d_c, d_pre_out):
    """The derivative of :func:`cell_forward`. d_m = dL/dm_t (..., B, C) in the product dtype; acts,
    c_t, c_{t-1} and d_c = dL/dc_t from step t + 1, float32. Writes dL/d pre-activations
    (..., B, 4C) into d_pre_out (product dtype) and returns (their sum over B (..., 4C) float32,
    dL/dc_{t-1} through the cell path, float32)."""
    i, f, g, o = acts.chunk(4, -1)
    d_m = d_m.float()
    tc = torch.tanh(c)
    d_c = d_c + d_m * o * (1 - tc * tc)
    d_pre = torch.cat([d_c * g * i * (1 - i), d_c * c_prev * f * (1 - f), d_c * i * (1 - g * g),
                       d_m * tc * o * (1 - o)], -1)
    d_pre_out.copy_(d_pre)
    return d_pre.sum(-2), d_c * f


def _mT(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(-1, -2)


def _forward_loop(xg, bias, whh_t, whr_t, cell, hs, ms):
    """The recurrence of D directions: xg (D, T, B, 4C), bias (D, 1, 4C), whh_t (D, P, 4C),
    whr_t (D, C, P); fills hs (D, T, B, P) and ms (D, T, B, C) (product dtype) and returns the
    per-step gate activations and cell states (lists of T (D, B, 4C) / (D, B, C))."""
    D, T, B, _ = xg.shape
    C, P = whr_t.shape[1], whr_t.shape[2]
    h = xg.new_zeros(D, B, P)
    c = xg.new_zeros(D, B, C, dtype=torch.float32)
    acts, cs = [], []
    for t in range(T):
        a, c = cell(torch.bmm(h, whh_t), xg[:, t], bias, c, ms[:, t])
        h = hs[:, t]
        torch.bmm(ms[:, t], whr_t, out=h)
        acts.append(a)
        cs.append(c)
    return acts, cs


def _backward_loop(d_out, acts, cs, whh, whr, cell, d_pre, d_h_all, d_bias):
    """The reverse recurrence of D directions: d_out (D, T, B, P) float32; acts / cs from
    :func:`_forward_loop`; whh (D, 4C, P), whr (D, P, C). Fills d_pre (D, T, B, 4C) and
    d_h_all (D, T, B, P) (product dtype) and d_bias (D, 4C) float32."""
    D, T, B, P = d_out.shape
    C = whr.shape[2]
    zeros_c = d_out.new_zeros(D, B, C)
    d_h_rec = d_out.new_zeros(D, B, P)
    d_c = zeros_c
    for t in range(T - 1, -1, -1):
        d_h = d_h_all[:, t]
        d_h.copy_(d_out[:, t] + d_h_rec)
        d_bias_t, d_c = cell(torch.bmm(d_h, whr), acts[t], cs[t], cs[t - 1] if t else zeros_c, d_c, d_pre[:, t])
        d_bias += d_bias_t
        if t:
            d_h_rec = torch.bmm(d_pre[:, t], whh).float()


class _LSTMP(torch.autograd.Function):
    """D independent LSTMP layers (D = 2: the forward and backward LM of one biLM layer) in one
    pass: every product is one ``bmm`` over the D directions. (Measured: this scales 1.8x from 1 to
    2 threads; running the two directions on two Python threads of one torch thread each was
    slower.)

    forward(x (D, T, B, I) float32 time-major, w_ih (D, 4C, I), bias (D, 4C) = b_ih + b_hh,
    w_hh (D, 4C, P), w_hr (D, P, C) float32, gemm_dtype, (cell_forward, cell_backward))
    -> h (D, T, B, P) float32. Zero initial state.
    """

    @staticmethod
    def forward(ctx, x, w_ih, bias, w_hh, w_hr, gemm_dtype, cells):
        D, T, B, I = x.shape
        C, P = w_hr.shape[2], w_hr.shape[1]
        dt = gemm_dtype
        x_low = x.reshape(D, T * B, I).to(dt)
        # the weights in the product dtype, once per pass (backward reuses them)
        w_ih, w_hh, w_hr = w_ih.to(dt), w_hh.to(dt), w_hr.to(dt)  # (D, 4C, I), (D, 4C, P), (D, P, C)
        if isinstance(cells, NativeRecurrence) and x.device.type != "cpu":
            cells = (cell_forward, cell_backward)  # the C++ ops are CPU-only
        if isinstance(cells, NativeRecurrence):  # acts (D, T, B, 4C), cs (D, T, B, C) float32
            hs, ms, acts, cs = cells.ops.forward(x_low, T, _mT(w_ih), bias.contiguous(), _mT(w_hh).contiguous(),
                                                 _mT(w_hr).contiguous())
        else:  # acts, cs: lists of T (D, B, 4C) / (D, B, C)
            xg = torch.bmm(x_low, _mT(w_ih)).reshape(D, T, B, 4 * C)
            hs = xg.new_empty(D, T, B, P)
            ms = xg.new_empty(D, T, B, C)
            acts, cs = _forward_loop(xg, bias[:, None, :], _mT(w_hh), _mT(w_hr), cells[0], hs, ms)
        ctx.saved = (x_low, acts, cs, ms, hs, w_ih, w_hh, w_hr)
        ctx.cells = cells
        return hs.float()

    @staticmethod
    def backward(ctx, d_out):
        x_low, acts, cs, ms, hs, w_ih, whh, whr = ctx.saved  # weights in the product dtype
        del ctx.saved
        D, T, B, P = hs.shape
        TB, C, I = T * B, whr.shape[2], x_low.shape[2]
        d_out = d_out.contiguous()
        if isinstance(ctx.cells, NativeRecurrence):
            d_pre, d_h_all, d_bias = ctx.cells.ops.backward(d_out, acts, cs, whh.contiguous(), whr.contiguous())
        else:
            d_pre = x_low.new_empty(D, T, B, 4 * C)
            d_h_all = x_low.new_empty(D, T, B, P)
            d_bias = d_out.new_zeros(D, 4 * C)
            _backward_loop(d_out, acts, cs, whh, whr, ctx.cells[1], d_pre, d_h_all, d_bias)
        d_pre = d_pre.reshape(D, TB, 4 * C)
        # dW_ih and dW_hh in one product: d_pre^T [x_t | h_{t-1}] (h_{-1} = 0); measured 20% less
        # time than two products at the shipped shape
        xh = x_low.new_empty(D, T, B, I + P)
        xh[..., :I] = x_low.view(D, T, B, I)
        xh[:, 0, :, I:] = 0
        xh[:, 1:, :, I:] = hs[:, :-1]
        d_w_in = torch.bmm(_mT(d_pre), xh.view(D, TB, I + P)).float()  # (D, 4C, I + P)
        d_w_hr = torch.bmm(_mT(d_h_all.reshape(D, TB, P)), ms.reshape(D, TB, C)).float()
        d_x = torch.bmm(d_pre, w_ih).float().reshape(D, T, B, I)
        return d_x, d_w_in[..., :I], d_bias, d_w_in[..., I:], d_w_hr, None, None


class NativeRecurrence:
    """The recurrences of a layer as the C++ ops of :mod:`spacy_elmo.bilm.native` (``ops.forward`` /
    ``ops.backward``): a value for :attr:`ProjectedLSTM.cells` in place of the pair of element-wise
    step functions. On other devices than the CPU the eager steps run instead."""

    def __init__(self, ops):
        self.ops = ops

    def __repr__(self) -> str:
        return "NativeRecurrence()"


_NATIVE: dict = {}


def native_recurrence() -> Optional[NativeRecurrence]:
    """:class:`NativeRecurrence` of the ops of :mod:`spacy_elmo.bilm.native` (built on first use per machine, ~25 s),
    checked against the eager steps once per process in float32 and bfloat16; None, with a
    warning, where they cannot be built or disagree."""
    if "ops" not in _NATIVE:
        from ..bilm.native import lstmp_ops

        ops = lstmp_ops()
        native = NativeRecurrence(ops) if ops is not None else None
        if native is not None:
            try:
                for dtype in (torch.float32, torch.bfloat16):
                    _check_recurrence(native, dtype)
                    _check_cross_entropy(native, dtype)
            except Exception as err:  # noqa: BLE001 - a wrong or failing kernel: run without it
                warnings.warn(f"the native LSTM kernels failed their check ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:200] if str(err) else ''}); not using them")
                native = None
        _NATIVE["ops"] = native
    return _NATIVE["ops"]


def recurrence(dtype: torch.dtype = torch.float32):
    """The fastest way to run the recurrences that works here, for :attr:`ProjectedLSTM.cells`: the
    native ops (:func:`native_recurrence`), else torch.compile'd cells (:func:`compiled_cells`), else
    the eager (cell_forward, cell_backward)."""
    return native_recurrence() or compiled_cells(dtype) or (cell_forward, cell_backward)


def cells_kind(cells) -> str:
    """How :attr:`ProjectedLSTM.cells` runs: "native", "inductor" (torch.compile) or "eager"."""
    if isinstance(cells, NativeRecurrence):
        return "native"
    return "eager" if cells[0] is cell_forward else "inductor"


def _check_recurrence(native: NativeRecurrence, dtype: torch.dtype) -> None:
    """Outputs and gradients of a small two-direction layer with `native` against the eager steps."""
    gen = torch.Generator().manual_seed(0)
    D, T, B, I, C, P = 2, 5, 3, 6, 20, 4
    x = torch.randn(D, T, B, I, generator=gen)
    weights = [torch.randn(D, 4 * C, I, generator=gen), torch.randn(D, 4 * C, generator=gen),
               torch.randn(D, 4 * C, P, generator=gen), torch.randn(D, P, C, generator=gen) * 0.5]
    d_h = torch.randn(D, T, B, P, generator=gen)
    results = []
    for cells in (native, (cell_forward, cell_backward)):
        leaves = [t.clone().requires_grad_(True) for t in [x] + weights]
        h = _LSTMP.apply(*leaves, dtype, cells)
        (h * d_h).sum().backward()
        results.append([h.detach()] + [t.grad for t in leaves])
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    for got, want in zip(*results):
        if not torch.allclose(got, want, atol=tol * float(want.abs().max()), rtol=tol):
            raise RuntimeError(f"the native LSTM ops disagree with the eager steps ({dtype})")


def _check_cross_entropy(native: NativeRecurrence, dtype: torch.dtype) -> None:
    """The native ``cross_entropy_rows`` (the fused loss of :mod:`.lm`) against torch's."""
    gen = torch.Generator().manual_seed(1)
    logits = (torch.randn(7, 50, generator=gen) * 4).to(dtype)
    target = torch.randint(0, 50, (7,), generator=gen)
    ref = logits.float().requires_grad_(True)
    want = torch.nn.functional.cross_entropy(ref, target, reduction="none")
    (want.sum() * 0.25).backward()
    got_grad = logits.clone()
    got = native.ops.cross_entropy_rows(got_grad, target, 0.25, True)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    if not (torch.allclose(got, want.detach(), atol=tol, rtol=tol)
            and torch.allclose(got_grad.float(), ref.grad, atol=tol, rtol=tol)):
        raise RuntimeError(f"the native cross-entropy disagrees with torch's ({dtype})")


_COMPILED: dict = {}


def compiled_cells(dtype: torch.dtype = torch.float32):
    """(cell_forward, cell_backward) fused by torch.compile (inductor's C++ kernels, dynamic batch
    sizes) for products in `dtype`, compiled and checked against the eager functions once per
    process (~30 s); None where compiling fails (e.g. no C++ compiler), with a warning."""
    if dtype not in _COMPILED:
        try:
            cells = (torch.compile(cell_forward, dynamic=True), torch.compile(cell_backward, dynamic=True))
            _check_cells(cells, dtype)
            _COMPILED[dtype] = cells
        except Exception as err:  # noqa: BLE001 - any compiler or backend failure means: run eager
            warnings.warn(f"torch.compile of the LSTM cells failed "
                          f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); "
                          "running them eagerly (slower, same results)")
            _COMPILED[dtype] = None
    return _COMPILED[dtype]


def _check_cells(cells, dtype: torch.dtype) -> None:
    """Run the compiled cells once on small inputs and compare them with the eager ones."""
    gen = torch.Generator().manual_seed(0)
    D, B, C = 2, 3, 5
    args = (torch.randn(D, B, 4 * C, generator=gen).to(dtype), torch.randn(D, B, 4 * C, generator=gen).to(dtype),
            torch.randn(D, 1, 4 * C, generator=gen), torch.randn(D, B, C, generator=gen))
    m_got, m_want = torch.zeros(D, B, C, dtype=dtype), torch.zeros(D, B, C, dtype=dtype)
    got, want = cells[0](*args, m_got) + (m_got,), cell_forward(*args, m_want) + (m_want,)
    back = (torch.randn(D, B, C, generator=gen).to(dtype), want[0], want[1], args[3],
            torch.randn(D, B, C, generator=gen))
    out_got, out_want = torch.zeros(D, 2, B, 4 * C, dtype=dtype), torch.zeros(D, 2, B, 4 * C, dtype=dtype)
    got = got + cells[1](*back, out_got[:, 1]) + (out_got,)
    want = want + cell_backward(*back, out_want[:, 1]) + (out_want,)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    for g, w in zip(got, want):
        if not torch.allclose(g.float(), w.float(), atol=tol, rtol=tol):
            raise RuntimeError("compiled cells disagree with the eager ones")


class ProjectedLSTM(nn.Module):
    """One LSTMP layer, batch first: (B, T, input_size) float32 -> (B, T, proj_size) float32.

    A drop-in for ``nn.LSTM(input_size, hidden_size, proj_size=proj_size, batch_first=True)`` when
    called as ``out, _ = lstm(x)`` with zero initial state (the returned state is None).
    ``gemm_dtype``: torch.float32 (default) or torch.bfloat16 for the matrix products;
    ``cells``: how the recurrence runs: the (forward, backward) element-wise step functions, default
    the eager :func:`cell_forward` / :func:`cell_backward` (see :func:`compiled_cells`), or a
    :class:`NativeRecurrence` (see :func:`recurrence`). Both are plain attributes, settable after
    construction. Runs on the device of its parameters.
    """

    def __init__(self, input_size: int, hidden_size: int, proj_size: int, gemm_dtype: torch.dtype = torch.float32):
        super().__init__()
        C = hidden_size
        self.input_size, self.hidden_size, self.proj_size = input_size, hidden_size, proj_size
        self.weight_ih_l0 = nn.Parameter(torch.empty(4 * C, input_size))
        self.weight_hh_l0 = nn.Parameter(torch.empty(4 * C, proj_size))
        self.bias_ih_l0 = nn.Parameter(torch.empty(4 * C))
        self.bias_hh_l0 = nn.Parameter(torch.empty(4 * C))
        self.weight_hr_l0 = nn.Parameter(torch.empty(proj_size, C))
        self.gemm_dtype = gemm_dtype
        self.cells = (cell_forward, cell_backward)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.LSTM's initialisation: U(-1/sqrt(C), 1/sqrt(C)) for every parameter."""
        bound = self.hidden_size ** -0.5
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor, state: Optional[tuple] = None):
        if state is not None:
            raise ValueError("ProjectedLSTM starts from the zero state; pass no initial state")
        (h,) = run_layers([self], [x])
        return h, None


def run_layers(lstms, xs):
    """Run independent :class:`ProjectedLSTM` layers of one shape (e.g. a biLM layer's forward and
    backward LM) in one pass: xs[k] (B, T, I) batch first -> [h_k (B, T, P)]. The first layer's
    ``gemm_dtype`` and ``cells`` are used for all."""
    first = lstms[0]
    x = torch.stack([x.transpose(0, 1) for x in xs])  # (D, T, B, I)
    h = _LSTMP.apply(
        x,
        torch.stack([m.weight_ih_l0 for m in lstms]),
        torch.stack([m.bias_ih_l0 + m.bias_hh_l0 for m in lstms]),
        torch.stack([m.weight_hh_l0 for m in lstms]),
        torch.stack([m.weight_hr_l0 for m in lstms]),
        first.gemm_dtype,
        first.cells,
    )
    return [h[k].transpose(0, 1) for k in range(len(lstms))]
