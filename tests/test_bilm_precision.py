"""Opt-in reduced precision (``BiLM(precision="bfloat16")``, the component's ``precision`` key):
close to float32, float32 untouched, fallback warning, config validation and serialization.

The bfloat16 oneDNN tests need a CPU with AVX512-BF16 / AMX (skipped elsewhere); the
autocast / ``bmm`` path (the one CUDA runs) is forced on any CPU by faking the capability; the
CUDA tests are in test_gpu_bilm.py and test_gpu_pipeline.py (``pytest -m gpu``)."""
import copy
import os
import pickle
import warnings

import numpy
import pytest
import spacy
import torch

from spacy_elmo.bilm import BiLM, lstm_paths, onednn, precision as precision_mod

from helpers import elmo_config

SENTENCES = [["The", "river", "bank", "overflowed", "after", "heavy", "rain", "."],
             ["The", "bank", "raised", "its", "rates", "."], ["Hi"], [],
             "A much longer sentence , with commas , numbers like 3.14 and unusual tokens : "
             "floccinaucinihilipilification , naïve , 東京 , and so on , goes here .".split()]
BOUND = 0.999  # the per-token cosine bound

native_bf16 = pytest.mark.skipif(
    not (precision_mod.cpu_bf16_capability() and precision_mod.onednn_bf16_supported()),
    reason="CPU without native bfloat16 (AVX512-BF16 / AMX)")


@pytest.fixture(scope="module")
def files(tiny_model):
    return tiny_model.options_path, tiny_model.weights_path


@pytest.fixture(scope="module")
def reference(files):
    return BiLM.from_files(*files).embed_sentences(SENTENCES)


@pytest.fixture
def fake_bf16_cpu(monkeypatch):
    """Pretend the CPU multiplies bfloat16 natively (torch's CPU bfloat16 ops work everywhere)."""
    monkeypatch.setattr(precision_mod, "cpu_bf16_capability", lambda: "avx512_bf16")
    monkeypatch.setattr(precision_mod, "onednn_bf16_supported", lambda: True)


def min_cosine(ref, other):
    worst = 1.0
    for r, o in zip(ref, other):
        assert r.shape == o.shape and o.dtype == numpy.float32
        if r.shape[1]:
            cos = (r * o).sum(-1) / (numpy.linalg.norm(r, axis=-1) * numpy.linalg.norm(o, axis=-1))
            worst = min(worst, float(cos.min()))
    return worst


def test_default_is_float32_and_unchanged(files, reference):
    bilm = BiLM.from_files(*files)
    assert bilm.precision == "float32" and bilm.effective_precision == "float32"
    explicit = BiLM.from_files(*files, precision="float32").embed_sentences(SENTENCES)
    for r, e in zip(reference, explicit):
        assert numpy.array_equal(r, e)
    assert bilm.lstm.gemm_dtype == bilm.char_cnn.gemm_dtype == torch.float32


@native_bf16
def test_bfloat16_close_to_float32_onednn(files, reference):
    bilm = BiLM.from_files(*files, precision="bfloat16")
    out = bilm.embed_sentences(SENTENCES)
    assert bilm.effective_precision == "bfloat16" and bilm.lstm.gemm_dtype == torch.bfloat16
    assert not all(numpy.array_equal(r, o) for r, o in zip(reference, out))  # it really ran bfloat16
    assert min_cosine(reference, out) >= BOUND
    bilm.precision = "float32"  # back to the exact path, bit for bit
    for r, o in zip(reference, bilm.embed_sentences(SENTENCES)):
        assert numpy.array_equal(r, o)


@native_bf16
def test_bfloat16_stateful_and_forward(files):
    """forward() with char ids, carrying the LSTM state between calls (bilm-tf mode)."""
    from spacy_elmo.bilm import batch_to_ids

    ids = batch_to_ids(SENTENCES[:3])
    ref, low = BiLM.from_files(*files, stateful=True), BiLM.from_files(*files, stateful=True, precision="bfloat16")
    with torch.inference_mode():
        for _ in range(2):
            r, o = ref(ids), low(ids)
            assert o.layers.dtype == torch.float32 and torch.equal(r.mask, o.mask)
            m = r.mask
            cos = torch.nn.functional.cosine_similarity(r.layers[:, m], o.layers[:, m], dim=-1)
            assert float(cos.min()) >= BOUND
    assert low._state[0].dtype == low._state[1].dtype == torch.float32


@native_bf16
def test_bfloat16_on_tensorflow_reference(fixture_dir):
    """The bilm-tf reference model: bfloat16 stays within the cosine bound of our float32 output,
    which matches TensorFlow's to 1e-6 (test_bilm_parity.py)."""
    args = os.path.join(fixture_dir, "options.json"), os.path.join(fixture_dir, "lm_weights.hdf5")
    ref = BiLM.from_files(*args).embed_sentences(SENTENCES)
    out = BiLM.from_files(*args, precision="bfloat16").embed_sentences(SENTENCES)
    assert min_cosine(ref, out) >= BOUND


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_path_on_cpu(files, reference, monkeypatch, fake_bf16_cpu, dtype):
    """The GPU code path (autocast for the char CNN, bmm on reduced copies in the LSTM) run on
    the CPU: oneDNN off, and for float16 the resolution a GPU without bfloat16 gets."""
    if dtype == torch.float16:
        monkeypatch.setattr(precision_mod, "resolve",
                            lambda p, device=None: precision_mod.Resolved(torch.float16, "float16", "test"))
        monkeypatch.setattr("spacy_elmo.bilm.model.resolve_precision", precision_mod.resolve)
    bilm = BiLM.from_files(*files, precision="bfloat16")
    calls = []
    lowp = lstm_paths.LowPrecisionPath.run
    monkeypatch.setattr(lstm_paths.LowPrecisionPath, "run", lambda *a: calls.append(1) or lowp(*a))
    before = onednn.set_enabled(False)
    try:
        out = bilm.embed_sentences(SENTENCES)
        with torch.inference_mode():  # forward() too: padded batch, char ids
            from spacy_elmo.bilm import batch_to_ids
            layers = bilm(batch_to_ids(SENTENCES[:2])).layers
    finally:
        onednn.set_enabled(before)
    assert calls and bilm.lstm.gemm_dtype == dtype and layers.dtype == torch.float32
    assert min_cosine(reference, out) >= BOUND
    assert numpy.allclose(layers[:, 1, :6].numpy(), out[1], atol=1e-6)


def test_fallback_warning_without_capability(files, reference, monkeypatch):
    monkeypatch.setattr(precision_mod, "cpu_bf16_capability", lambda: "")
    bilm = BiLM.from_files(*files, precision="bfloat16")
    with pytest.warns(RuntimeWarning, match="falls back to float32: this CPU has no AVX512-BF16 or AMX") as rec:
        out = bilm.embed_sentences(SENTENCES)
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    assert bilm.effective_precision == "float32"
    for r, o in zip(reference, out):
        assert numpy.array_equal(r, o)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per model and device, not per call
        bilm.embed_sentences(SENTENCES[:1])


def test_bad_values_one_line_errors(files):
    choices = r"expected one of float32, bfloat16, int8$"
    with pytest.raises(ValueError, match=r"^BiLM precision = 'half': " + choices):
        BiLM.from_files(*files, precision="half")
    bilm = BiLM.from_files(*files)
    with pytest.raises(ValueError, match="BiLM precision = 'fp8'"):
        bilm.precision = "fp8"
    assert bilm.precision == "float32"
    nlp = spacy.blank("en")
    with pytest.raises(ValueError) as err:
        nlp.add_pipe("elmo", config=elmo_config(files, precision="bf16"))
    assert ("[spacy_elmo.ElmoBiLM.v1] precision = 'bf16': expected one of float32, bfloat16, int8"
            in str(err.value))
    assert "\n" not in str(err.value)


def test_copies_keep_the_setting(files):
    bilm = BiLM.from_files(*files, precision="bfloat16")
    bilm.embed_sentences(SENTENCES[:1])
    for other in (copy.deepcopy(bilm), pickle.loads(pickle.dumps(bilm))):
        assert other.precision == "bfloat16" and other._resolved == {}


def make_nlp(files, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(files, **config))
    return nlp


@pytest.mark.filterwarnings("ignore:spacy_elmo. precision = 'bfloat16' falls back")
def test_component_setting_and_serialization(files, tmp_path):
    """The setting reaches the biLM however the pipeline is made (on a CPU without bfloat16 it
    then runs float32, with a warning, which this test ignores)."""
    nlp = make_nlp(files, precision="bfloat16")
    assert nlp.get_pipe_config("elmo")["model"]["precision"] == "bfloat16"
    text = "The river bank overflowed after heavy rain."
    doc = nlp(text)
    assert nlp.get_pipe("elmo").bilm.precision == "bfloat16" and doc._.elmo.layers.dtype == numpy.float32
    # to_bytes / from_bytes into a pipeline made from the same config
    nlp2 = make_nlp(files, precision="bfloat16").from_bytes(nlp.to_bytes())
    assert nlp2.get_pipe("elmo").bilm.precision == "bfloat16"
    # to_disk / spacy.load: the setting comes back from config.cfg, and an override at load time wins
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe_config("elmo")["model"]["precision"] == "bfloat16"
    assert loaded.get_pipe("elmo").bilm.precision == "bfloat16"
    assert numpy.array_equal(loaded(text)._.elmo.layers, doc._.elmo.layers)
    exact = spacy.load(tmp_path / "p", config={"components": {"elmo": {"model": {"precision": "float32"}}}})
    assert exact.get_pipe("elmo").bilm.precision == "float32"
    assert numpy.array_equal(exact(text)._.elmo.layers, make_nlp(files)(text)._.elmo.layers)
    # pickling the component's model
    model = pickle.loads(pickle.dumps(nlp.get_pipe("elmo").model))
    from spacy_elmo.pipeline.layers.bilm_layer import get_bilm
    from spacy_elmo.pipeline.layers.doc_layers import bilm_of
    assert get_bilm(bilm_of(model)).precision == "bfloat16"


def test_elmo_v1_and_replace_listeners_carry_the_setting(files):
    from spacy_elmo.pipeline.architectures import elmo_v1
    from spacy_elmo.pipeline.bilm_config import build_bilm
    from spacy_elmo.pipeline.layers.bilm_layer import get_bilm

    paths = {"options_path": files[0], "weights_path": files[1]}
    model = elmo_v1(bilm=build_bilm({**paths, "precision": "bfloat16"}))
    assert model.get_ref("bilm").attrs["precision"].value == "bfloat16"
    assert get_bilm(model.get_ref("bilm")).precision == "bfloat16"
    with pytest.raises(ValueError, match=r"\[spacy_elmo.ElmoBiLM.v1\] precision = 'x'"):
        elmo_v1(bilm=build_bilm({**paths, "precision": "x"}))
    nlp = make_nlp(files, precision="bfloat16")
    source = nlp.get_pipe("elmo").model.attrs["replace_listener_cfg"].args[0]
    assert source["precision"] == "bfloat16"


