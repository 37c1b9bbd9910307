"""CUDA checks of the biLM and the trainer (``pytest -m gpu``), with torch alone: this module
imports no spaCy, so it runs on a machine that has torch, numpy, h5py and confection only.
Every test is skipped, with its reason, where torch sees no CUDA device."""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.pretrain.export import lm_layers, write_model
from spacy_elmo.pretrain.lm import LanguageModel, model_options

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU test: torch sees no CUDA device")]

SENTENCES = [["The", "river", "bank", "overflowed", "after", "heavy", "rain", "."],
             ["The", "bank", "raised", "its", "rates", "."], ["Hi"], [],
             "A much longer sentence , with commas , numbers like 3.14 and unusual tokens : "
             "floccinaucinihilipilification , naïve , 東京 , and so on , goes here .".split()]
BOUND = 0.999  # per-token cosine of reduced-precision layers against float32
MODEL = {"char_dim": 4, "filters": [[1, 8], [2, 8], [3, 16]], "n_highway": 2, "activation": "relu",
         "lstm_dim": 32, "projection_dim": 8, "n_layers": 2, "use_skip_connections": True, "dropout": 0.0}


def min_cosine(ref, out) -> float:
    worst = 1.0
    for a, b in zip(ref, out):
        if a.shape[1]:
            num = (a * b).sum(-1)
            den = numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1)
            worst = min(worst, float((num / numpy.maximum(den, 1e-12)).min()))
    return worst


@pytest.fixture
def exact_products():
    """No TF32 in products or cuDNN (float32 means float32) for the duration of a test."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_bilm_on_cuda_equals_cpu(tiny_model, exact_products):
    cpu = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    gpu = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path).to("cuda")
    assert gpu.device.type == "cuda"
    for got, ref in zip(gpu.embed_sentences(SENTENCES), cpu.embed_sentences(SENTENCES)):
        assert got.shape == ref.shape and got.dtype == numpy.float32
        numpy.testing.assert_allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_stays_within_the_cosine_bound(tiny_model, monkeypatch, dtype):
    """precision="bfloat16" on CUDA autocasts to bfloat16, or float16 where the GPU has no
    bfloat16 (forced here by hiding it): per-token cosine >= BOUND against float32 on CUDA."""
    if dtype == "float16":
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    elif not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    ref = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path).to("cuda").embed_sentences(SENTENCES)
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, precision="bfloat16").to("cuda")
    out = bilm.embed_sentences(SENTENCES)
    assert bilm.effective_precision == dtype
    assert all(o.dtype == numpy.float32 for o in out)
    assert min_cosine(ref, out) >= BOUND


@pytest.mark.parametrize("impl", ["torch", "fused"])
def test_lm_trained_on_cuda_exports_to_the_same_bilm(tmp_path, exact_products, impl):
    """A training step on CUDA, then the export: no clipping in options.json, and BiLM of the
    files gives the training path's layers."""
    torch.manual_seed(0)
    lm = LanguageModel.new(model_options(MODEL), {"cutoffs": [10], "div_value": 2.0}, 20, lstm_impl=impl).cuda()
    opt = torch.optim.Adam(lm.parameters(), lr=0.05)
    char_ids = torch.randint(1, 200, (6, 50), device="cuda")
    index = torch.tensor([[0, 1, 2, 3], [2, 3, 0, -1]], device="cuda")
    targets = torch.tensor([[0, 4, 5, 6, 7, 1], [0, 7, 8, 9, 1, -1]], device="cuda")
    loss = lm(char_ids, index, targets)["loss"]
    loss.backward()
    opt.step()
    assert torch.isfinite(loss)
    lm.eval()
    write_model(lm, [f"w{i}" for i in range(20)], str(tmp_path), {"test": True})
    bilm = BiLM.from_files(tmp_path / "options.json", tmp_path / "weights.hdf5").to("cuda")
    assert bilm.options["lstm"]["cell_clip"] is None and bilm.options["lstm"]["proj_clip"] is None
    sentences = [s for s in SENTENCES if s]
    with torch.no_grad():
        for sent, got in zip(sentences, bilm.embed_sentences(sentences)):
            numpy.testing.assert_allclose(got, lm_layers(lm, sent).cpu().numpy(), atol=2e-6, rtol=1e-5)


def test_pretrain_on_cuda_resumes_on_cpu(tmp_path):
    """Two steps on CUDA (the autograd LSTMs) from a pre-tokenised corpus (no spaCy), then the
    checkpoint continues on CPU."""
    from spacy_elmo.pretrain.train import pretrain

    from helpers import tiny_corpus_overrides

    overrides = tiny_corpus_overrides(tmp_path / "run")
    overrides.update({"training.device": "cuda", "training.lstm_impl": "torch", "training.max_steps": 4})
    meta = pretrain(str(tmp_path / "run"), overrides=overrides, progress=False, stop_after=2)
    assert meta["training"]["steps"] == 2
    assert meta["training"]["commands"][-1]["path"]["device"].startswith("cuda")
    meta = pretrain(str(tmp_path / "run"), resume=True, progress=False, overrides={"training.device": "cpu"})
    assert meta["training"]["steps"] == 4


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 1e-1)])
def test_lstm_train_path_on_cuda_equals_the_autograd_path(dtype, tol):
    """ElmoLstm's training path (bilm/lstm_train.py, eager steps on CUDA; "native" falls back to
    them there) against the autograd path, clipping on: outputs and all gradients."""
    from spacy_elmo.bilm.lstm import ElmoLstm
    from spacy_elmo.bilm.packing import pack

    torch.manual_seed(0)
    lstm = ElmoLstm(24, 8, 2, 1.0, 0.4, use_skip_connections=True).cuda().requires_grad_(True)
    pk = pack([6, 1, 3, 6, 0, 2])
    x0 = torch.randn(2, pk.n_packed, 8, device="cuda")
    results = []
    for recurrence, gemm in (("autograd", torch.float32), ("native", dtype)):
        lstm.train_recurrence, lstm.train_gemm_dtype = recurrence, gemm
        lstm.zero_grad()
        x = x0.clone().requires_grad_(True)
        out, (_, c) = lstm(x, pk)
        ((out * out).sum() + c.sum()).backward()
        results.append([out.detach(), x.grad] + [p.grad.clone() for p in lstm.parameters()])
    for got, want in zip(results[1], results[0]):
        assert float((got - want).abs().max()) <= tol * float(want.abs().max())
