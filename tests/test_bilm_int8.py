"""``BiLM(precision="int8")``: the quantizer and the int8 product against exact references, the
per-token cosine bound on the bilm-tf reference model and on the packaged ``en_elmo_small`` (first
200 EWT dev sentences), the fallback warning, the weight cache, and the component setting.

The int8 tests need a CPU with int8 dot-product instructions (AVX512-VNNI / AVX-VNNI / AMX-INT8)
and torch's oneDNN int8 ops; elsewhere they are skipped, and the fallback is tested by faking
the missing capability."""
import os
import warnings

import numpy
import pytest
import spacy
import torch

from spacy_elmo.bilm import BiLM, int8, lstm_paths, lstm_train, precision as precision_mod

from helpers import elmo_config

SENTENCES = [["The", "river", "bank", "overflowed", "after", "heavy", "rain", "."],
             ["The", "bank", "raised", "its", "rates", "."], ["Hi"], [],
             "A much longer sentence , with commas , numbers like 3.14 and unusual tokens : "
             "floccinaucinihilipilification , naïve , 東京 , and so on , goes here .".split()]
MEAN_BOUND, MIN_BOUND = 0.999, 0.99  # per-token cosine to float32, every layer: mean, minimum

native_int8 = pytest.mark.skipif(
    not (precision_mod.cpu_int8_capability() and int8.ops_available()),
    reason="CPU without int8 dot-product instructions, or torch without oneDNN's int8 ops")


def layer_cosines(ref, other):
    """Per layer: all per-token cosines of ``other`` to ``ref`` (lists of (L, n, D) arrays)."""
    per_layer = []
    for r, o in zip(ref, other):
        assert r.shape == o.shape and o.dtype == numpy.float32
        if r.shape[1]:
            cos = (r * o).sum(-1) / numpy.maximum(numpy.linalg.norm(r, axis=-1) * numpy.linalg.norm(o, axis=-1),
                                                  1e-30)
            per_layer.append(cos)
    return numpy.concatenate(per_layer, axis=1)


def assert_within_bound(ref, other):
    cos = layer_cosines(ref, other)
    assert cos.mean(axis=1).min() >= MEAN_BOUND, cos.mean(axis=1)
    assert cos.min() >= MIN_BOUND, cos.min(axis=1)
    assert not all(numpy.array_equal(r, o) for r, o in zip(ref, other))  # it really ran int8


# -- the quantizer and the product ----------------------------------------------------------------
def test_quantize_rows_is_symmetric_per_row_and_within_half_a_step():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, 33, generator=gen) * torch.tensor([1e-3, 1, 10, 100, 1, 1, 1])[:, None]
    x[5] = 0.0  # a zero row quantizes to zeros
    x[6, 3] = -50.0  # an outlier sets its row's scale
    qr = int8.quantize_rows(x)
    assert qr.q.dtype == torch.int8 and qr.scale.shape == (7, 1) and qr.scale.dtype == torch.float32
    assert int(qr.q.abs().max()) == 127 and int(qr.q.min()) >= -127
    assert torch.equal(qr.q[5], torch.zeros(33, dtype=torch.int8))
    for r in (0, 1, 2, 3, 4, 6):
        assert int(qr.q[r].abs().max()) == 127  # the largest magnitude of each row maps to +-127
        assert torch.allclose(qr.scale[r, 0], x[r].abs().max() / 127, rtol=1e-6)
    assert int(qr.q[6, 3]) == -127
    err = (qr.q.float() * qr.scale - x).abs()
    assert bool((err <= qr.scale / 2 * (1 + 1e-5)).all())  # round to nearest
    sub = qr.rows(2, 4)
    assert torch.equal(sub.q, qr.q[2:4]) and torch.equal(sub.scale, qr.scale[2:4])


def test_quantize_columns_per_output_channel():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(40, 24, generator=gen) * torch.linspace(0.01, 3, 24)
    w[:, 5] = 0.0
    q, scale = int8.quantize_columns(w)
    assert q.shape == (24, 40) and q.dtype == torch.int8 and scale.shape == (24,)
    assert torch.allclose(scale[6:], w.abs().amax(0)[6:] / 127, rtol=1e-6)
    assert torch.equal(q[5], torch.zeros(40, dtype=torch.int8))
    assert bool(((q.t().float() * scale - w).abs() <= scale / 2 * (1 + 1e-5)).all())


@native_int8
@pytest.mark.parametrize("m", [1, 3, 8, 17, 70, 300])
def test_linear_is_the_integer_product_with_float_scales(m):
    """oneDNN's int8 product (int32 accumulation) with the scales applied equals the float64
    product of the same integers and scales, whatever the row count (padded to row buckets)."""
    gen = torch.Generator().manual_seed(m)
    k, n = 96, 200
    x, w, add = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen) * 0.05, torch.randn(m, n)
    xq = int8.quantize_rows(x)
    q, scale = int8.quantize_columns(w)
    qw = int8.quantize_weight(w)
    assert torch.equal(qw.scale, scale)
    want = int8.reference_linear(xq, q, scale)
    got = int8.linear(xq, qw)
    assert got.shape == (m, n) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(int8.linear(xq, qw, add), want + add, rtol=1e-5, atol=1e-5)
    bias = torch.randn(n)
    torch.testing.assert_close(int8.linear(xq, qw, bias), want + bias, rtol=1e-5, atol=1e-5)
    # and it is close to the float32 product: each operand moved by at most half a step
    torch.testing.assert_close(got, x @ w, rtol=0.05, atol=0.05 * float((x @ w).abs().max()))


# -- the biLM -------------------------------------------------------------------------------------
@native_int8
def test_int8_on_tensorflow_reference(fixture_dir, monkeypatch):
    """The bilm-tf reference model (whose float32 outputs match TensorFlow's to 1e-6,
    test_bilm_parity.py): int8 on the Int8Path, within the cosine bounds; float32 again, bit for bit."""
    args = os.path.join(fixture_dir, "options.json"), os.path.join(fixture_dir, "lm_weights.hdf5")
    ref = BiLM.from_files(*args).embed_sentences(SENTENCES)
    bilm = BiLM.from_files(*args, precision="int8")
    calls = []
    run = int8.Int8Path.run
    monkeypatch.setattr(int8.Int8Path, "run", lambda *a: calls.append(1) or run(*a))
    out = bilm.embed_sentences(SENTENCES)
    assert bilm.effective_precision == "int8" and bilm.lstm.gemm_dtype == torch.int8 and calls
    assert_within_bound(ref, out)
    bilm.precision = "float32"
    for r, o in zip(ref, bilm.embed_sentences(SENTENCES)):
        assert numpy.array_equal(r, o)


@native_int8
def test_int8_stateful_forward_on_tensorflow_reference(fixture_dir):
    """forward() carrying the LSTM state between calls (bilm-tf mode; a non-zero h0 is quantized too)."""
    from spacy_elmo.bilm import batch_to_ids

    args = os.path.join(fixture_dir, "options.json"), os.path.join(fixture_dir, "lm_weights.hdf5")
    ref, low = BiLM.from_files(*args, stateful=True), BiLM.from_files(*args, stateful=True, precision="int8")
    ids = batch_to_ids(SENTENCES[:3])
    with torch.inference_mode():
        for _ in range(3):
            r, o = ref(ids), low(ids)
            m = r.mask
            cos = torch.nn.functional.cosine_similarity(r.layers[:, m], o.layers[:, m], dim=-1)
            assert float(cos.mean(dim=1).min()) >= MEAN_BOUND and float(cos.min()) >= MIN_BOUND
    assert low._state[0].dtype == low._state[1].dtype == torch.float32


@native_int8
@pytest.mark.slow
def test_int8_on_en_elmo_small_ewt_dev(shared_dir):
    """The packaged trained model over the first 200 EWT dev sentences: every layer's per-token
    cosine to float32 has mean >= 0.999 and minimum >= 0.99."""
    from spacy_elmo.probe.ewt import read_words

    sentences = read_words(os.path.join(shared_dir, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu"), 200)
    ref = BiLM.from_pretrained("en_elmo_small").embed_sentences(sentences)
    low = BiLM.from_pretrained("en_elmo_small", precision="int8")
    assert_within_bound(ref, low.embed_sentences(sentences))
    assert low.effective_precision == "int8"


@native_int8
def test_weights_are_quantized_once_and_again_after_a_change(tiny_model):
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, precision="int8")
    first = bilm.embed_sentences(SENTENCES[:2])
    cached = bilm.lstm.int8_weights()
    assert bilm.lstm.int8_weights() is cached
    assert cached[0][0][0].scale.shape == (4 * bilm.lstm.dim,)
    with torch.no_grad():
        bilm.lstm.w_proj[1].mul_(2.0)  # in place: the version counter changes
    assert bilm.lstm.int8_weights() is not cached
    assert not numpy.array_equal(first[0], bilm.embed_sentences(SENTENCES[:2])[0])


@pytest.mark.parametrize("missing", ["instructions", "ops"])
def test_fallback_warns_once_and_runs_float32(tiny_model, monkeypatch, missing):
    if missing == "instructions":
        monkeypatch.setattr(precision_mod, "cpu_int8_capability", lambda: "")
        message = "falls back to float32: this CPU has no int8 dot-product instructions"
    else:
        monkeypatch.setattr(precision_mod, "cpu_int8_capability", lambda: "avx512_vnni")
        monkeypatch.setattr(int8, "ops_available", lambda: False)
        message = "falls back to float32: torch .* lacks oneDNN's int8 linear ops"
    files = tiny_model.options_path, tiny_model.weights_path
    ref = BiLM.from_files(*files).embed_sentences(SENTENCES)
    bilm = BiLM.from_files(*files, precision="int8")
    with pytest.warns(RuntimeWarning, match="precision = 'int8' " + message) as rec:
        out = bilm.embed_sentences(SENTENCES)
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert bilm.precision == "int8" and bilm.effective_precision == "float32"
    for r, o in zip(ref, out):
        assert numpy.array_equal(r, o)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per model and device
        bilm.embed_sentences(SENTENCES[:1])


def test_int8_path_is_not_chosen_with_autograd(tiny_model):
    """Fine-tuning (parameters requiring grad) runs a float32 training path whatever the precision."""
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, precision="int8")
    bilm.lstm.gemm_dtype = torch.int8
    bilm.requires_grad_(True)
    x = torch.zeros(2, 3, bilm.projection_dim)
    assert isinstance(lstm_paths.choose(bilm.lstm, x), (lstm_paths.AutogradPath, lstm_train.TrainPath))
    bilm.requires_grad_(False)
    with torch.no_grad():
        assert isinstance(lstm_paths.choose(bilm.lstm, x), int8.Int8Path) == bool(
            precision_mod.cpu_int8_capability() and int8.ops_available())


@pytest.mark.filterwarnings("ignore:spacy_elmo. precision = 'int8' falls back")
def test_component_setting_and_override_at_load(tiny_model, tmp_path):
    files = tiny_model.options_path, tiny_model.weights_path
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(files))
    text = "The river bank overflowed after heavy rain."
    exact = nlp(text)._.elmo.layers
    nlp.to_disk(tmp_path / "p")
    low = spacy.load(tmp_path / "p", config={"components": {"elmo": {"model": {"precision": "int8"}}}})
    assert low.get_pipe_config("elmo")["model"]["precision"] == "int8"
    bilm = low.get_pipe("elmo").bilm
    layers = low(text)._.elmo.layers
    assert bilm.precision == "int8" and layers.dtype == numpy.float32 and layers.shape == exact.shape
    assert numpy.array_equal(layers, exact) == (bilm.effective_precision == "float32")
