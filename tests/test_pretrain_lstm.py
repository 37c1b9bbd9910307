"""The fused training LSTM (pretrain/recurrent.py) computes nn.LSTM(proj_size)'s function and
gradients; the trainer built on it takes the same steps as the nn.LSTM trainer; schedule, precision
and the adaptive-softmax loss behave as documented."""
import warnings

import pytest
import torch
from torch import nn

from spacy_elmo.pretrain import hardware as precision_mod
from spacy_elmo.pretrain.hardware import resolve_device, resolve_precision
from spacy_elmo.pretrain.lm import LanguageModel, adaptive_nll
from spacy_elmo.pretrain.recurrent import ProjectedLSTM, cell_backward, cell_forward, compiled_cells, run_layers
from spacy_elmo.pretrain.train import lr_factor, pretrain

from test_pretrain import _overrides, corpus  # noqa: F401 - the tiny corpus fixture

P, C = 8, 24


def _pair(seed=0):
    torch.manual_seed(seed)
    ref = nn.LSTM(P, C, proj_size=P, batch_first=True)
    with torch.no_grad():  # non-trivial gates
        for p in ref.parameters():
            p.mul_(3.0)
    ours = ProjectedLSTM(P, C, P)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def _grads(module, x, weight):
    x = x.clone().requires_grad_(True)
    out, _ = module(x)
    (out * weight).sum().backward()
    grads = {k: p.grad.clone() for k, p in module.named_parameters()}
    module.zero_grad()
    return out.detach(), x.grad, grads


def test_same_parameters_and_initialisation_as_nn_lstm():
    torch.manual_seed(3)
    ref = nn.LSTM(P, C, proj_size=P, batch_first=True)
    torch.manual_seed(3)
    ours = ProjectedLSTM(P, C, P)
    assert list(ref.state_dict()) == list(ours.state_dict())
    for key, value in ref.state_dict().items():
        assert torch.equal(value, ours.state_dict()[key]), key


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
def test_forward_and_gradients_equal_nn_lstm(dtype, tol):
    ref, ours = _pair()
    ours.gemm_dtype = dtype
    x, weight = torch.randn(5, 9, P), torch.randn(5, 9, P)
    want, want_dx, want_g = _grads(ref, x, weight)
    got, got_dx, got_g = _grads(ours, x, weight)
    scale = lambda t: t.abs().max()  # noqa: E731
    assert (got - want).abs().max() <= tol * scale(want)
    assert (got_dx - want_dx).abs().max() <= tol * scale(want_dx)
    for key in want_g:
        assert (got_g[key] - want_g[key]).abs().max() <= tol * scale(want_g[key]), key
    if dtype == torch.float32:  # and bfloat16 really is a different (rounded) computation
        ours.gemm_dtype = torch.bfloat16
        assert not torch.allclose(_grads(ours, x, weight)[0], want, atol=1e-6)


def test_two_directions_in_one_pass_equal_two_nn_lstms():
    (ref_f, ours_f), (ref_b, ours_b) = _pair(0), _pair(1)
    xs = [torch.randn(4, 6, P), torch.randn(4, 6, P)]
    ws = [torch.randn(4, 6, P), torch.randn(4, 6, P)]
    leaves = [x.clone().requires_grad_(True) for x in xs]
    outs = run_layers([ours_f, ours_b], leaves)
    sum((o * w).sum() for o, w in zip(outs, ws)).backward()
    for ref, ours, x, w, out, leaf in zip((ref_f, ref_b), (ours_f, ours_b), xs, ws, outs, leaves):
        want, want_dx, want_g = _grads(ref, x, w)
        torch.testing.assert_close(out.detach(), want, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(leaf.grad, want_dx, atol=1e-5, rtol=1e-5)
        for key, p in ours.named_parameters():
            torch.testing.assert_close(p.grad, want_g[key], atol=1e-5, rtol=1e-5)


def test_initial_state_is_refused():
    _, ours = _pair()
    with pytest.raises(ValueError, match="zero state"):
        ours(torch.randn(1, 2, P), (torch.zeros(1, 1, P), torch.zeros(1, 1, C)))


@pytest.mark.slow
def test_compiled_cells_equal_eager_cells():
    """torch.compile'd cells (compiled_cells checks them itself; here on other shapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = compiled_cells(torch.float32)
    if cells is None:
        pytest.skip("torch.compile is unavailable here (the trainer then runs the eager cells)")
    torch.manual_seed(0)
    D, B = 2, 7
    args = (torch.randn(D, B, 4 * C), torch.randn(D, B, 4 * C), torch.randn(D, 1, 4 * C), torch.randn(D, B, C))
    m_got, m_want = torch.empty(D, B, C), torch.empty(D, B, C)
    got, want = cells[0](*args, m_got), cell_forward(*args, m_want)
    for g, w in zip(got + (m_got,), want + (m_want,)):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)
    back = (torch.randn(D, B, C), want[0], want[1], args[3], torch.randn(D, B, C))
    d_got, d_want = torch.empty(D, B, 4 * C), torch.empty(D, B, 4 * C)
    got, want = cells[1](*back, d_got), cell_backward(*back, d_want)
    for g, w in zip(got + (d_got,), want + (d_want,)):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def _matches_nn_lstm_trainer(corpus_dir, tmp_path, name, overrides):
    """Train OUT/torch (lstm_impl torch) and OUT/NAME with ``overrides``; assert their parameters
    agree within float32 rounding; return NAME's meta."""
    pretrain(str(tmp_path / "torch"), overrides=_overrides(corpus_dir, **{**overrides, "training.lstm_impl": "torch"}),
             progress=False)
    meta = pretrain(str(tmp_path / name), overrides=_overrides(corpus_dir, **overrides), progress=False)
    a = torch.load(tmp_path / "torch" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / name / "checkpoint.pt", weights_only=False)["model"]
    assert list(a) == list(b)
    for key in a:
        torch.testing.assert_close(b[key], a[key], atol=2e-5, rtol=1e-4, msg=key)
    return meta


def test_fused_trainer_takes_the_steps_of_the_nn_lstm_trainer(corpus, tmp_path):  # noqa: F811
    """Same config, same data, float32: the two LSTM implementations give the same parameters
    after 12 Adam steps (within float32 rounding), and their checkpoints are interchangeable."""
    steps = {"training.max_steps": 12, "training.eval_every_steps": 0, "training.seed": 5}
    meta = _matches_nn_lstm_trainer(corpus, tmp_path, "fused", steps)
    assert meta["training"]["commands"][-1]["path"]["lstm_impl"] == "fused"
    # a checkpoint of one resumes with the other
    meta = pretrain(str(tmp_path / "torch"), resume=True, progress=False,
                    overrides={"training.max_steps": 14, "training.lstm_impl": "fused"})
    assert meta["training"]["steps"] == 14
    assert meta["training"]["commands"][-1]["path"]["lstm_impl"] == "fused"


def test_bfloat16_trainer_learns_and_records_its_path(corpus, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(precision_mod, "cpu_bf16_capability", lambda: "avx512_bf16")
    meta = pretrain(str(tmp_path / "bf16"), progress=False, overrides=_overrides(
        corpus, **{"training.max_steps": 40, "training.eval_every_steps": 10, "training.precision": "auto"}))
    path = meta["training"]["commands"][-1]["path"]
    assert path["precision"] == "bfloat16" and "avx512_bf16" in path["precision_reason"]
    history = meta["history"]
    assert history[-1]["perplexity"] < 0.8 * history[0]["perplexity"]


def test_precision_choice(monkeypatch):
    assert resolve_precision("float32")[0] == torch.float32
    assert resolve_precision("auto", "cuda:0")[0] == torch.bfloat16
    with pytest.raises(ValueError, match=r"\[training\] precision = 'half'"):
        resolve_precision("half")
    monkeypatch.setattr(precision_mod, "cpu_bf16_capability", lambda: "")
    assert resolve_precision("auto")[0] == torch.float32
    with pytest.warns(UserWarning, match="no AVX512-BF16 or AMX"):
        assert resolve_precision("bfloat16")[0] == torch.float32
    monkeypatch.setattr(precision_mod, "cpu_bf16_capability", lambda: "amx_bf16")
    dtype, reason = resolve_precision("auto")
    assert dtype == torch.bfloat16 and "amx_bf16" in reason


def test_language_model_rejects_bad_lstm_settings():
    cfg = {"char_dim": 4, "filters": [[1, 4]], "n_highway": 0, "activation": "relu", "lstm_dim": 8,
           "projection_dim": 4, "n_layers": 1, "use_skip_connections": False}
    softmax = {"cutoffs": [], "div_value": 2.0}
    with pytest.raises(ValueError, match="lstm_impl = 'cudnn'"):
        LanguageModel(cfg, softmax, 10, lstm_impl="cudnn")
    with pytest.raises(ValueError, match="float32 only"):
        LanguageModel(cfg, softmax, 10, lstm_impl="torch", gemm_dtype=torch.bfloat16)


def test_adaptive_nll_equals_torch_adaptive_softmax():
    torch.manual_seed(0)
    softmax = nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 40, 70], div_value=2.0)
    x, target = torch.randn(64, 16), torch.randint(0, 100, (64,))
    target[:3] = torch.tensor([0, 99, 45])
    torch.testing.assert_close(adaptive_nll(softmax, x, target), -softmax(x, target).output, atol=1e-5, rtol=1e-6)


def test_warmup_stable_decay_schedule():
    # linear warm-up, then linear decay over all remaining steps (decay_steps = 0: the old rule)
    assert lr_factor(0, 10, 110, 0.1) == pytest.approx(0.1)
    assert lr_factor(60, 10, 110, 0.1) == pytest.approx(0.55)
    assert lr_factor(110, 10, 110, 0.1) == pytest.approx(0.1)
    # stable at 1 until max_steps - decay_steps, then linear to final
    assert lr_factor(50, 10, 110, 0.1, decay_steps=40) == 1.0
    assert lr_factor(70, 10, 110, 0.1, decay_steps=40) == 1.0
    assert lr_factor(90, 10, 110, 0.1, decay_steps=40) == pytest.approx(0.55)
    assert lr_factor(200, 10, 110, 0.1, decay_steps=40) == pytest.approx(0.1)
    # extending max_steps during the stable phase changes nothing up to there
    assert all(lr_factor(s, 10, 110, 0.1, 40) == lr_factor(s, 10, 300, 0.1, 40) for s in range(71))


def test_device_setting(corpus, tmp_path, monkeypatch):  # noqa: F811
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ValueError, match=r"\[training\] device = 'tpu': not a device name"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on a machine without CUDA
    with pytest.raises(ValueError, match=r"\[training\] device = 'cuda': no CUDA device is available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="no CUDA device"):  # before the corpus is read
        pretrain(str(tmp_path / "gpu"), progress=False, overrides=_overrides(
            str(tmp_path / "missing.txt"), **{"training.device": "cuda", "training.max_steps": 1}))
    monkeypatch.undo()
    meta = pretrain(str(tmp_path / "cpu"), progress=False,
                    overrides=_overrides(corpus, **{"training.device": "cpu", "training.max_steps": 2}))
    assert meta["training"]["commands"][-1]["path"]["device"] == "cpu"


def test_stint_stops_like_an_interruption_and_resumes(corpus, tmp_path):  # noqa: F811
    """stop_after_minutes (the bounded GPU stint of dev/device/gpu_check.sh): the invocation
    ends with a checkpoint after its time, and --resume goes on to max_steps."""
    steps = {"training.max_steps": 6, "training.eval_every_steps": 0}
    meta = pretrain(str(tmp_path / "run"), progress=False,
                    overrides=_overrides(corpus, **steps, **{"training.stop_after_minutes": 1e-09}))
    assert meta["training"]["steps"] == 0 and (tmp_path / "run" / "checkpoint.pt").is_file()
    meta = pretrain(str(tmp_path / "run"), resume=True, progress=False, overrides={"training.stop_after_minutes": 0})
    assert meta["training"]["steps"] == 6


# -- the native ops (bilm/native.py): recurrences, fused loss, char CNN -----------------------


@pytest.fixture(scope="module")
def native():
    """The native ops (built once per machine, ~25 s; cached), or skip where they cannot be built."""
    from spacy_elmo.pretrain.recurrent import native_recurrence

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = native_recurrence()
    if ops is None:
        pytest.skip("the native kernels cannot be built here (the trainer then runs compiled or eager cells)")
    return ops


@pytest.mark.slow
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-6), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("B,T", [(5, 9), (1, 1), (3, 2)])
def test_native_recurrence_equals_the_python_loop(native, dtype, tol, B, T):
    """Outputs and all gradients of a two-direction layer: native ops against the eager steps."""
    (_, ours_f), (_, ours_b) = _pair(0), _pair(1)
    xs = [torch.randn(B, T, P), torch.randn(B, T, P)]
    ws = [torch.randn(B, T, P), torch.randn(B, T, P)]
    results = []
    for cells in ((cell_forward, cell_backward), native):
        for m in (ours_f, ours_b):
            m.cells, m.gemm_dtype = cells, dtype
        leaves = [x.clone().requires_grad_(True) for x in xs]
        outs = run_layers([ours_f, ours_b], leaves)
        sum((o * w).sum() for o, w in zip(outs, ws)).backward()
        results.append([o.detach() for o in outs] + [x.grad for x in leaves]
                       + [p.grad.clone() for m in (ours_f, ours_b) for p in m.parameters()])
        for m in (ours_f, ours_b):
            m.zero_grad()
    for got, want in zip(results[1], results[0]):
        assert (got - want).abs().max() <= tol * want.abs().max()


@pytest.mark.slow
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_fused_loss_equals_adaptive_nll(native, dtype, tol):
    """fused_adaptive_nll (chunked linear + cross-entropy, gradients computed in the forward pass)
    against adaptive_nll under autocast: the loss, the per-row NLL and every gradient; chunks of
    a few rows so that each cluster spans several."""
    from spacy_elmo.pretrain import lm as lm_mod

    torch.manual_seed(0)
    softmax = nn.AdaptiveLogSoftmaxWithLoss(16, 300, cutoffs=[20, 80, 200], div_value=2.0)
    x0, target = torch.randn(150, 16), torch.randint(0, 300, (150,))
    target[:4] = torch.tensor([0, 299, 85, 21])
    results = []
    for fused in (False, True):
        x = x0.clone().requires_grad_(True)
        if fused:
            old, lm_mod.FUSED_LOSS_LOGITS = lm_mod.FUSED_LOSS_LOGITS, 1000
            try:
                loss, nll = lm_mod.fused_adaptive_nll(softmax, x, target, dtype, native.ops)
            finally:
                lm_mod.FUSED_LOSS_LOGITS = old
            assert not nll.requires_grad
        else:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
                nll = adaptive_nll(softmax, x, target)
            loss = nll.mean()
        (2.0 * loss).backward()  # a gradient other than 1 reaches the fused function
        results.append([loss.detach(), nll.detach(), x.grad] + [p.grad.clone() for p in softmax.parameters()])
        softmax.zero_grad()
    for got, want in zip(results[1], results[0]):
        assert (got - want).abs().max() <= tol * want.abs().max()
    with torch.no_grad():  # evaluation: the same NLL, no gradient work
        loss, nll = lm_mod.fused_adaptive_nll(softmax, x0, target, dtype, native.ops)
    assert (nll - results[0][1]).abs().max() <= tol * results[0][1].abs().max()


@pytest.mark.slow
def test_native_char_cnn_equals_char_cnn(native):
    """encode_types (float32 products, gradients to each max's window) against CharCNN's autograd
    path: the same outputs and gradients, over more types than one chunk."""
    from spacy_elmo.bilm.char_cnn import CHUNK, CharCNN
    from spacy_elmo.bilm.chars import MAX_CHARS
    from spacy_elmo.pretrain.token_encoder import encode_types

    torch.manual_seed(0)
    cnn = CharCNN([[1, 4], [2, 8], [3, 8]], char_dim=4, n_highway=1, projection_dim=6)
    n = CHUNK + 57
    lengths = torch.randint(1, 20, (n,))
    ids = torch.full((n, MAX_CHARS), 261)  # padding
    ids[:, 0] = 259  # begin of word
    for i, length in enumerate(lengths.tolist()):
        ids[i, 1: 1 + length] = torch.randint(1, 256, (length,))
        ids[i, 1 + length] = 260  # end of word
    weight = torch.randn(n, 6)
    results = []
    for new in (False, True):
        out = encode_types(cnn, ids, torch.float32, native.ops) if new else cnn(ids)
        (out * weight).sum().backward()
        results.append([out.detach()] + [p.grad.clone() for p in cnn.parameters()])
        cnn.zero_grad()
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, atol=1e-5 * float(want.abs().max()), rtol=1e-4)


@pytest.mark.slow
def test_native_trainer_takes_the_steps_of_the_nn_lstm_trainer_and_resumes_exactly(corpus, tmp_path, native):  # noqa: F811
    """compile = true (native recurrences, fused loss, native char CNN), float32: the parameters of
    the nn.LSTM trainer after 12 steps (within float32 rounding), and a resumed run ends exactly
    where an uninterrupted one does."""
    steps = {"training.max_steps": 12, "training.eval_every_steps": 0, "training.seed": 5}
    meta = _matches_nn_lstm_trainer(corpus, tmp_path, "native", {**steps, "training.compile": True})
    assert meta["training"]["commands"][-1]["path"]["cells"] == "native"
    compiled = {**steps, "training.compile": True}
    pretrain(str(tmp_path / "stopped"), overrides=_overrides(corpus, **compiled), progress=False, stop_after=5)
    pretrain(str(tmp_path / "stopped"), resume=True, progress=False)
    b = torch.load(tmp_path / "native" / "checkpoint.pt", weights_only=False)["model"]
    c = torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=False)["model"]
    for key in b:
        assert torch.equal(b[key], c[key]), key


def test_native_kernels_can_be_turned_off(monkeypatch):
    """SPACY_ELMO_NATIVE=0: no native ops, and the LSTMs fall back (here to the eager steps, as
    where torch.compile fails too)."""
    from spacy_elmo.bilm import native as native_mod
    from spacy_elmo.pretrain import recurrent as recurrent_mod

    monkeypatch.setenv("SPACY_ELMO_NATIVE", "0")
    monkeypatch.setattr(native_mod, "_LOADED", {})
    monkeypatch.setattr(recurrent_mod, "_NATIVE", {})
    monkeypatch.setattr(recurrent_mod, "_COMPILED", {torch.float32: None})  # as where torch.compile fails
    assert native_mod.lstmp_ops() is None
    assert recurrent_mod.recurrence(torch.float32) == (cell_forward, cell_backward)
    cfg = {"char_dim": 4, "filters": [[1, 4]], "n_highway": 0, "activation": "relu", "lstm_dim": 8,
           "projection_dim": 4, "n_layers": 1, "use_skip_connections": False}
    lm = LanguageModel(cfg, {"cutoffs": [5], "div_value": 2.0}, 10, compile=True)
    assert lm.native_ops is None and recurrent_mod.cells_kind(lm.forward_lstms[0].cells) == "eager"


def test_native_switch_reads_the_usual_spellings(monkeypatch):
    from spacy_elmo.bilm import native as native_mod

    for value, on in [("0", False), ("false", False), ("No", False), (" off ", False), ("1", True), ("true", True),
                      ("", True)]:
        monkeypatch.setenv("SPACY_ELMO_NATIVE", value)
        assert native_mod.enabled() is on, value
    monkeypatch.setenv("SPACY_ELMO_NATIVE", "maybe")
    with pytest.raises(ValueError, match="SPACY_ELMO_NATIVE='maybe'"):
        native_mod.enabled()
