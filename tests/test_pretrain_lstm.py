"""The pretraining trainer: lstm_impl "fused" (the biLM's LSTM training path, native char CNN and
loss) takes the same steps as "torch" (plain torch modules, the LSTMs on the autograd path) and
records how it ran; schedule, precision, the adaptive-softmax loss and the native ops behave as
documented."""
import json
import warnings

import pytest
import torch
from torch import nn

from spacy_elmo.bilm import lstm_train
from spacy_elmo.pretrain import hardware as precision_mod
from spacy_elmo.pretrain.hardware import resolve_device, resolve_precision
from spacy_elmo.pretrain.lm import LanguageModel, adaptive_nll, model_options, native_ops
from spacy_elmo.pretrain.train import lr_factor, pretrain

from test_pretrain import _overrides, corpus  # noqa: F401 - the tiny corpus fixture


def _matches_autograd_trainer(corpus_dir, tmp_path, name, overrides):
    """Train OUT/torch (lstm_impl torch: the autograd path) and OUT/NAME with ``overrides``; assert their parameters
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


def test_fused_trainer_takes_the_steps_of_the_autograd_trainer(corpus, tmp_path):  # noqa: F811
    """Same config, same data, float32: the LSTMs' training path (eager cells) and the autograd
    path give the same parameters after 12 Adam steps (within float32 rounding), meta.json names
    each path, and their checkpoints are interchangeable."""
    steps = {"training.max_steps": 12, "training.eval_every_steps": 0, "training.seed": 5}
    meta = _matches_autograd_trainer(corpus, tmp_path, "fused", steps)
    path = meta["training"]["commands"][-1]["path"]
    assert (path["lstm_impl"], path["lstm_path"], path["cells"]) == ("fused", "TrainPath", "eager")
    reference = json.loads((tmp_path / "torch" / "model" / "meta.json").read_text())["training"]["commands"][-1]["path"]
    assert (reference["lstm_path"], reference["cells"]) == ("AutogradPath", "autograd")
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
        LanguageModel.new(model_options(cfg), softmax, 10, lstm_impl="cudnn")
    with pytest.raises(ValueError, match="float32 only"):
        LanguageModel.new(model_options(cfg), softmax, 10, lstm_impl="torch", gemm_dtype=torch.bfloat16)


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
    """The native ops of the char CNN and the loss (built once per machine, ~25 s; cached), or skip
    where they cannot be built."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = native_ops()
    if ops is None:
        pytest.skip("the native kernels cannot be built here (the trainer then runs compiled or eager cells)")
    return ops


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
                loss, nll = lm_mod.fused_adaptive_nll(softmax, x, target, dtype, native)
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
        loss, nll = lm_mod.fused_adaptive_nll(softmax, x0, target, dtype, native)
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
        out = encode_types(cnn, ids, torch.float32, native) if new else cnn(ids)
        (out * weight).sum().backward()
        results.append([out.detach()] + [p.grad.clone() for p in cnn.parameters()])
        cnn.zero_grad()
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, atol=1e-5 * float(want.abs().max()), rtol=1e-4)


@pytest.mark.slow
def test_native_trainer_matches_the_autograd_trainer_and_resumes_exactly(corpus, tmp_path, native):  # noqa: F811
    """compile = true (native recurrences, fused loss, native char CNN), float32: the parameters of
    the autograd trainer after 12 steps (within float32 rounding), and a resumed run ends exactly
    where an uninterrupted one does."""
    steps = {"training.max_steps": 12, "training.eval_every_steps": 0, "training.seed": 5}
    meta = _matches_autograd_trainer(corpus, tmp_path, "native", {**steps, "training.compile": True})
    path = meta["training"]["commands"][-1]["path"]
    assert path["native_ops"] is True and path["cells"] == "native"
    compiled = {**steps, "training.compile": True}
    pretrain(str(tmp_path / "stopped"), overrides=_overrides(corpus, **compiled), progress=False, stop_after=5)
    pretrain(str(tmp_path / "stopped"), resume=True, progress=False)
    b = torch.load(tmp_path / "native" / "checkpoint.pt", weights_only=False)["model"]
    c = torch.load(tmp_path / "stopped" / "checkpoint.pt", weights_only=False)["model"]
    for key in b:
        assert torch.equal(b[key], c[key]), key


def test_native_kernels_can_be_turned_off(monkeypatch):
    """SPACY_ELMO_NATIVE=0: no native ops, and the trainer runs without them (char CNN and loss as
    plain torch modules)."""
    from spacy_elmo.bilm import native as native_mod
    from spacy_elmo.pretrain import lm as lm_mod

    monkeypatch.setenv("SPACY_ELMO_NATIVE", "0")
    monkeypatch.setattr(native_mod, "_LOADED", {})
    monkeypatch.setattr(lstm_train, "_NATIVE", {})
    monkeypatch.setattr(lm_mod, "_LOSS_OPS", {})
    monkeypatch.setattr(lstm_train, "_COMPILED", {torch.float32: None})  # as where torch.compile fails
    assert native_mod.lstmp_ops() is None
    assert lstm_train.resolve("native", torch.float32) == (lstm_train.cell_forward, lstm_train.cell_backward)
    cfg = {"char_dim": 4, "filters": [[1, 4]], "n_highway": 0, "activation": "relu", "lstm_dim": 8,
           "projection_dim": 4, "n_layers": 1, "use_skip_connections": False}
    lm = LanguageModel.new(model_options(cfg), {"cutoffs": [5], "div_value": 2.0}, 10, ops=native_ops())
    assert lm.native_ops is None


def test_native_switch_reads_the_usual_spellings(monkeypatch):
    from spacy_elmo.bilm import native as native_mod

    for value, on in [("0", False), ("false", False), ("No", False), (" off ", False), ("1", True), ("true", True),
                      ("", True)]:
        monkeypatch.setenv("SPACY_ELMO_NATIVE", value)
        assert native_mod.enabled() is on, value
    monkeypatch.setenv("SPACY_ELMO_NATIVE", "maybe")
    with pytest.raises(ValueError, match="SPACY_ELMO_NATIVE='maybe'"):
        native_mod.enabled()


def test_native_ops_that_fail_the_cross_entropy_check_are_not_used(native, monkeypatch):
    """The fused loss's op is checked against torch's cross-entropy once per process: a wrong one
    means no native char CNN and loss (one warning), not a wrong loss."""
    from spacy_elmo.pretrain import lm as lm_mod

    class WrongLoss:
        def __getattr__(self, name):
            return getattr(native, name)

        def cross_entropy_rows(self, logits, target, scale, grad):
            return native.cross_entropy_rows(logits, target, scale, grad) + 0.5

    assert lm_mod.check_cross_entropy(native, torch.float32) is None
    monkeypatch.setattr(lm_mod, "_LOSS_OPS", {})
    monkeypatch.setattr(lstm_train, "native_recurrence", lambda: lstm_train.NativeRecurrence(WrongLoss()))
    with pytest.warns(UserWarning, match="cross-entropy disagrees"):
        assert native_ops() is None
