"""The training path of the biLM's LSTM (bilm/lstm_train.py) computes what the autograd path
computes: outputs, final states and every gradient, with cell and projection clipping engaged,
skip connections, ragged rows (lengths 0 and 1 included), on the eager, torch.compile'd and native
(C++) recurrences; bfloat16 products within a stated tolerance; and lstm_paths.choose picks it
where it applies."""
import warnings

import pytest
import torch

from spacy_elmo.bilm import lstm_paths, lstm_train
from spacy_elmo.bilm.lstm import ElmoLstm
from spacy_elmo.bilm.packing import pack
from spacy_elmo.errors import ElmoConfigError

C, P, L = 24, 8, 2
CELL_CLIP, PROJ_CLIP = 1.0, 0.4
LENGTHS = [6, 1, 3, 6, 0, 2, 1, 5]
TOL = 1e-5  # float32: max |got - want| <= TOL * max |want|, per tensor
BF16_TOL = 3e-2  # bfloat16 products against the float32 autograd path, same measure
BF16_CLIP_GRAD_TOL = 1e-1  # their gradients with clipping on


def make_lstm(clip: bool) -> ElmoLstm:
    torch.manual_seed(0)
    lstm = ElmoLstm(C, P, L, CELL_CLIP if clip else None, PROJ_CLIP if clip else None, use_skip_connections=True)
    lstm.reset_parameters(0.4)
    with torch.no_grad():
        for b in lstm.bias:
            b.normal_(0.0, 0.5)
    return lstm.requires_grad_(True)


def run(lstm: ElmoLstm, recurrence: str, dtype=torch.float32):
    """Outputs, final h and c, and the gradients of a fixed weighted sum of all three with respect
    to the inputs and every parameter."""
    lstm.train_recurrence, lstm.train_gemm_dtype = recurrence, dtype
    lstm.zero_grad()
    pk = pack(LENGTHS)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, pk.n_packed, P, generator=gen).requires_grad_(True)
    out, (h, c) = lstm(x, pk)
    loss = sum((t * torch.randn(t.shape, generator=gen)).sum() for t in (out, h, c))
    loss.backward()
    return {"out": out.detach(), "h": h.detach(), "c": c.detach(), "x.grad": x.grad,
            **{f"{name}.grad": p.grad.clone() for name, p in lstm.named_parameters()}}


def assert_close(got: dict, want: dict, tol: float):
    assert list(got) == list(want)
    for key in want:
        err = float((got[key] - want[key]).abs().max())
        assert err <= tol * float(want[key].abs().max()), f"{key}: {err:.3g}"


def cells_or_skip(recurrence: str, dtype=torch.float32):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = lstm_train.resolve(recurrence, dtype)
    kind = {"eager": "eager", "compiled": "inductor", "native": "native"}[recurrence]
    if lstm_train.cells_kind(cells) != kind:
        pytest.skip(f"the {recurrence} recurrence is unavailable here")
    return cells


RECURRENCES = ["eager", pytest.param("compiled", marks=pytest.mark.slow),
               pytest.param("native", marks=pytest.mark.slow)]


@pytest.mark.parametrize("clip", [True, False])
@pytest.mark.parametrize("recurrence", RECURRENCES)
def test_train_path_equals_the_autograd_path(recurrence, clip):
    cells_or_skip(recurrence)
    lstm = make_lstm(clip)
    want = run(lstm, "autograd")
    got = run(lstm, recurrence)
    assert_close(got, want, TOL)
    if clip:  # the clips engage: some final cell state and some first-layer output sit on them
        assert (want["c"].abs() == CELL_CLIP).any() and (want["out"][0].abs() == PROJ_CLIP).any()
        assert (want["c"].abs() < CELL_CLIP).any() and (want["out"][0].abs() < PROJ_CLIP).any()
    else:
        assert want["c"].abs().max() > CELL_CLIP and want["out"][0].abs().max() > PROJ_CLIP


@pytest.mark.parametrize("clip", [True, False])
@pytest.mark.parametrize("recurrence", RECURRENCES)
def test_bfloat16_products_stay_within_tolerance(recurrence, clip):
    """Outputs and states within BF16_TOL; gradients too without clipping, within BF16_CLIP_GRAD_TOL
    with it (a value within rounding of a clip is cut in one computation and not in the other)."""
    cells_or_skip(recurrence, torch.bfloat16)
    lstm = make_lstm(clip)
    want = run(lstm, "autograd")
    got = run(lstm, recurrence, torch.bfloat16)
    values = ["out", "h", "c"]
    assert_close({k: got[k] for k in values}, {k: want[k] for k in values}, BF16_TOL)
    assert_close(got, want, BF16_CLIP_GRAD_TOL if clip else BF16_TOL)
    assert not torch.allclose(got["out"], want["out"], atol=1e-6)  # really a rounded computation


def test_choose_picks_the_train_path_where_it_applies():
    lstm = make_lstm(clip=True)
    x = torch.randn(2, 5, P)
    assert isinstance(lstm_paths.choose(lstm, x), lstm_train.TrainPath)
    assert isinstance(lstm_paths.choose(lstm, x, zero_state=False), lstm_paths.AutogradPath)  # a carried state
    assert isinstance(lstm_paths.choose(lstm, x.double()), lstm_paths.AutogradPath)
    assert isinstance(lstm_paths.choose(lstm, x[:, :0]), lstm_paths.AutogradPath)
    lstm.train_recurrence = "autograd"
    assert isinstance(lstm_paths.choose(lstm, x), lstm_paths.AutogradPath)
    with torch.no_grad():
        assert isinstance(lstm_paths.choose(lstm, x), (lstm_paths.OneDnnPath, lstm_paths.BmmPath))
    lstm.train_recurrence = "fast"
    with pytest.raises(ElmoConfigError, match="train_recurrence = 'fast'"):
        lstm_paths.choose(lstm, x)
    lstm.train_recurrence, lstm.train_gemm_dtype = "eager", torch.float16
    with pytest.raises(ElmoConfigError, match="train_gemm_dtype"):
        lstm_paths.choose(lstm, x)


def test_an_initial_state_runs_on_the_autograd_path_with_its_gradient():
    lstm = make_lstm(clip=True)
    pk = pack([3, 2])
    h0 = torch.randn(L, 2, 2, P).requires_grad_(True)
    c0 = torch.randn(L, 2, 2, C).requires_grad_(True)
    out, _ = lstm(torch.randn(2, pk.n_packed, P), pk, (h0, c0))
    out.sum().backward()
    assert h0.grad.abs().sum() > 0 and c0.grad.abs().sum() > 0


@pytest.mark.slow
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-6), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("sizes", [(3, 3, 2, 1, 1), (1,), (4, 4, 4)])
def test_native_ops_equal_the_eager_steps(dtype, tol, sizes):
    """lstm_train.check_layer: outputs, final cells and all gradients of one layer, clips engaged."""
    native = cells_or_skip("native", dtype)
    for got, want in lstm_train.check_layer(native, dtype, sizes=sizes, seed=3):
        assert (got - want).abs().max() <= tol * want.abs().max()


def test_gradient_is_zero_through_a_clipped_cell():
    """torch.clamp's gradient: a cell far beyond its clip passes nothing back to its gates."""
    lstm = ElmoLstm(1, 1, 1, cell_clip=0.5, proj_clip=None).requires_grad_(True)
    with torch.no_grad():
        lstm.w_input[0].zero_()
        lstm.w_state[0].zero_()
        lstm.w_proj[0].fill_(1.0)
        lstm.bias[0].copy_(torch.tensor([10.0, 0.0, 0.0, 10.0]).expand(2, 4))  # i = j = 1: c = 1 > 0.5
    pk = pack([1])
    out, (_, c) = lstm(torch.zeros(2, 1, 1), pk)
    assert torch.allclose(c, torch.full_like(c, 0.5))
    c.sum().backward()
    assert float(lstm.bias[0].grad.abs().max()) == 0.0


@pytest.mark.slow
def test_native_buffers_are_not_reused_while_a_graph_holds_them():
    """Two forward passes before one backward (the native ops reuse buffers from call to call):
    the same gradients as the autograd path."""
    cells_or_skip("native")
    lstm = make_lstm(clip=True)
    pk1, pk2 = pack(LENGTHS), pack([4, 4, 2])
    gen = torch.Generator().manual_seed(5)
    x1, x2 = torch.randn(2, pk1.n_packed, P, generator=gen), torch.randn(2, pk2.n_packed, P, generator=gen)
    grads = []
    for recurrence in ("autograd", "native"):
        lstm.train_recurrence = recurrence
        lstm.zero_grad()
        out1, _ = lstm(x1, pk1)
        out2, _ = lstm(x2, pk2)
        ((out1 * 2.0).sum() + (out2 * out2).sum()).backward()
        grads.append({name: p.grad.clone() for name, p in lstm.named_parameters()})
    assert_close(grads[1], grads[0], TOL)


def test_a_second_derivative_raises_instead_of_being_wrong():
    lstm = make_lstm(clip=False)
    pk = pack([3, 2])
    x = torch.randn(2, pk.n_packed, P, requires_grad=True)
    out, _ = lstm(x, pk)
    (g,) = torch.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|twice"):
        g.sum().backward()
    lstm.train_recurrence = "autograd"  # the step-by-step path has them
    out, _ = lstm(x, pk)
    (g,) = torch.autograd.grad(out.pow(2).sum(), x, create_graph=True)
    g.sum().backward()
    assert lstm.w_state[0].grad.abs().sum() > 0
