"""The ``elmo`` component: what lands on the Doc, segmentation, storage options, robustness
(on the tiny random model)."""
import numpy
import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import ConfigValidationError

from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoConfigError
from spacy_elmo.pipeline import ElmoData

from helpers import elmo_config


@pytest.fixture(scope="module")
def files(tiny_model):
    return tiny_model.options_path, tiny_model.weights_path


@pytest.fixture(scope="module")
def bilm(files):
    return BiLM.from_files(*files)


def make_nlp(files, sentencizer=False, **config):
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", config=elmo_config(files, **config))
    return nlp


@pytest.fixture(scope="module")
def nlp(files):
    return make_nlp(files)


def test_layers_on_doc_token_span(nlp, bilm):
    doc = nlp("The river bank overflowed after heavy rain.")
    layers = doc._.elmo.layers
    assert isinstance(doc._.elmo, ElmoData) and isinstance(layers, numpy.ndarray)
    assert layers.shape == (3, 8, 32) and layers.dtype == numpy.float32
    assert doc[2]._.elmo.shape == (3, 32) and doc[1:3]._.elmo.shape == (3, 2, 32)
    numpy.testing.assert_array_equal(doc[2]._.elmo, layers[:, 2])
    (ref,) = bilm.embed_sentences([[t.text for t in doc]])
    numpy.testing.assert_allclose(layers, ref, atol=1e-6)


def test_sentences_windows_and_whitespace(files, bilm):
    text = "The cat sat.  It was happy today, wasn't it?\n\nYes."
    doc = make_nlp(files, sentencizer=True)(text)
    for sent in doc.sents:
        words = [t.text for t in sent if not t.is_space]
        idx = [t.i for t in sent if not t.is_space]
        (ref,) = bilm.embed_sentences([words])
        numpy.testing.assert_allclose(doc._.elmo.layers[:, idx], ref, atol=1e-6)
    space = [t.i for t in doc if t.is_space]
    assert space and not doc._.elmo.layers[:, space].any()
    # No sentence boundaries: windows of at most window_tokens, split evenly (10 -> 4 + 3 + 3).
    doc = make_nlp(files, window_tokens=4)("one two three four five six seven eight nine ten")
    words = doc.text.split()
    refs = bilm.embed_sentences([words[:4], words[4:7], words[7:]])
    numpy.testing.assert_allclose(doc._.elmo.layers, numpy.concatenate(refs, axis=1), atol=1e-6)


def test_empty_and_whitespace_only_docs(nlp):
    assert nlp("")._.elmo.layers.shape == (3, 0, 32)
    doc = nlp("   \n\n  ")
    assert doc._.elmo.layers.shape == (3, len(doc), 32) and not doc._.elmo.layers.any()
    texts = ["A first text.", "", "   ", "And a last one."]
    docs = list(nlp.pipe(texts, batch_size=4))
    assert [d._.elmo.layers.shape[1] for d in docs] == [len(d) for d in docs]
    numpy.testing.assert_allclose(docs[3]._.elmo.layers, nlp(texts[3])._.elmo.layers, atol=1e-6)


def test_deterministic_and_batch_invariant(nlp):
    texts = ["Short.", "A somewhat longer sentence with more words in it.", "", "Mid length one here."] * 3
    one = list(nlp.pipe(texts, batch_size=1))
    many = list(nlp.pipe(texts, batch_size=64))
    for a, b in zip(one, many):
        # Equal up to float32 rounding of differently sized matrix products.
        numpy.testing.assert_allclose(a._.elmo.layers, b._.elmo.layers, atol=1e-5)
    numpy.testing.assert_array_equal(nlp(texts[1])._.elmo.layers, nlp(texts[1])._.elmo.layers)


def test_unicode_and_long_tokens(nlp):
    doc = nlp("I ate 🍕 and 寿司 in 東京 " + "x" * 60 + " 👍🏽!")
    assert doc._.elmo.layers.shape == (3, len(doc), 32)
    assert numpy.isfinite(doc._.elmo.layers).all()
    long_token = [t for t in doc if len(t) == 60][0]
    assert long_token._.elmo.any()


def test_20000_token_doc_in_windows(files, bilm):
    """A 20,000-token Doc without sentences is read in ceil(20000 / 128) = 157 near-equal windows
    (128 or 127 tokens, the longer first), each on its own: the layers equal the biLM's run on
    those windows, and no context crosses a window boundary."""
    nlp = make_nlp(files, window_tokens=128, batch_size=32)
    words = ("the quick brown fox jumps over a lazy dog again and again ," * 2000).split()[:20000]
    doc = nlp(Doc(nlp.vocab, words=words))
    assert doc._.elmo.layers.shape == (3, 20000, 32) and numpy.isfinite(doc._.elmo.layers).all()
    windows = numpy.array_split(numpy.arange(20000), 157)
    assert {len(w) for w in windows} == {127, 128}
    refs = bilm.embed_sentences([[words[i] for i in w] for w in windows], batch_size=64)
    numpy.testing.assert_allclose(doc._.elmo.layers, numpy.concatenate(refs, axis=1), atol=1e-5)
    # the same words read as one sequence differ near the window boundaries: the cut is real
    (whole,) = bilm.embed_sentences([words[:256]])
    assert not numpy.allclose(doc._.elmo.layers[2, 120:136], whole[2, 120:136], atol=1e-3)


def test_store_and_dtype_options(files):
    text = "Store only what you need."
    full = make_nlp(files)(text)._.elmo.layers
    mix = make_nlp(files, store="average")(text)._.elmo
    top = make_nlp(files, store="top")(text)._.elmo
    assert mix.store == "average" and mix.layers.shape == (1, 6, 32)
    numpy.testing.assert_allclose(mix.layers[0], full.mean(axis=0), atol=1e-6)
    numpy.testing.assert_array_equal(top.layers[0], full[-1])
    assert make_nlp(files, store="none")(text)._.elmo is None
    half = make_nlp(files, dtype="float16")(text)
    assert half._.elmo.layers.dtype == numpy.float16 and half[0]._.elmo.dtype == numpy.float16
    numpy.testing.assert_allclose(half._.elmo.layers, full, atol=1e-2)
    with pytest.raises(ValueError, match=r"\[components.elmo\] store = 'some'"):
        make_nlp(files, store="some")
    with pytest.raises(ValueError, match="dtype"):
        make_nlp(files, dtype="int8")


def test_mix_readout_on_the_doc(nlp):
    data = nlp("Mix it.")._.elmo
    w, gamma = [0.2, 0.8, 1.8], 1.5
    s = numpy.exp(w) / numpy.exp(w).sum()
    expected = gamma * numpy.tensordot(s, data.layers, axes=1)
    numpy.testing.assert_allclose(data.mix(w, gamma), expected, rtol=1e-5)
    numpy.testing.assert_allclose(data.mix(), data.layers.mean(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match="needs 3 weights"):
        data.mix([1.0, 2.0])


def test_listeners_need_all_layers(files):
    nlp = make_nlp(files, store="top")
    with pytest.raises(ValueError, match='store = "all"'):
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                                 "tok2vec": {"@architectures": "spacy_elmo.ElmoListener.v1"}}})


def test_clear_errors_for_bad_files(files, tmp_path):
    missing = str(tmp_path / "nope.hdf5")
    nlp = make_nlp((files[0], missing))
    with pytest.raises(ElmoConfigError) as err:
        nlp.initialize()
    message = str(err.value)
    assert "weights_path" in message and missing in message and "[components.elmo.model]" in message
    assert err.value.key == "weights_path" and err.value.path == missing
    with pytest.raises(ElmoConfigError, match="weights_path"):
        nlp("first use also loads")
    not_hdf5 = tmp_path / "weights.hdf5"
    not_hdf5.write_bytes(b"this is not an HDF5 file")
    with pytest.raises(ElmoConfigError) as err:
        make_nlp((files[0], str(not_hdf5))).initialize()
    assert str(not_hdf5) in str(err.value) and "weights_path" in str(err.value)
    # the model is a section, not a name; biLM settings are not keys of the component
    with pytest.raises(ConfigValidationError, match="'no_such_model' is not"):
        spacy.blank("en").add_pipe("elmo", config={"model": "no_such_model"})
    with pytest.raises(ConfigValidationError, match="unexpected argument: 'max_tokens'"):
        spacy.blank("en").add_pipe("elmo", config={**elmo_config(files), "max_tokens": 8})
    # One path without the other would pair files of two models: an error when the pipe is added.
    for key, path in (("options_path", files[0]), ("weights_path", files[1])):
        with pytest.raises(ElmoConfigError, match=rf"\[spacy_elmo.ElmoBiLM.v1\] {key} is set but"):
            spacy.blank("en").add_pipe("elmo", config=elmo_config(**{key: path}))
    with pytest.raises(ValueError, match=r"\[spacy_elmo.ElmoBiLM.v1\] window_tokens must be >= 1"):
        make_nlp(files, window_tokens=0)


def test_one_elmo_component_per_pipeline(files):
    """Two elmo components would share doc._.elmo: the second one is refused when it is added."""
    config = elmo_config(files)
    nlp = make_nlp(files)
    with pytest.raises(ElmoConfigError) as err:
        nlp.add_pipe("elmo", name="elmo2", config=config)
    message = str(err.value)
    assert message.startswith("[components.elmo2] ") and "\n" not in message
    assert "only one elmo component per pipeline" in message.lower() and "doc._.elmo" in message
    assert "'elmo'" in message and "second pipeline" in message
    assert err.value.key == "factory" and err.value.path is None
    assert nlp.pipe_names == ["elmo"]
    with nlp.select_pipes(disable=["elmo"]):  # a disabled elmo still owns doc._.elmo
        with pytest.raises(ElmoConfigError, match="already has 'elmo'"):
            nlp.add_pipe("elmo", name="elmo2", config=config)
    # the same from a config (spacy.load / spacy train build pipelines this way)
    two = nlp.config.copy()
    two["nlp"]["pipeline"] = ["elmo", "elmo2"]
    two["components"]["elmo2"] = two["components"]["elmo"]
    with pytest.raises(ElmoConfigError, match=r"\[components.elmo2\] cannot add a second elmo"):
        spacy.util.load_model_from_config(two)
    # replacing or re-adding the one elmo component is fine
    nlp.replace_pipe("elmo", "elmo", config=config)
    nlp.remove_pipe("elmo")
    nlp.add_pipe("elmo", name="elmo2", config=config)
    assert nlp.pipe_names == ["elmo2"] and nlp("Still works.")._.elmo is not None


def test_default_packaged_model():
    from spacy_elmo.hub.resolve import DEFAULT_MODEL, available

    if DEFAULT_MODEL not in available():
        pytest.skip(f"packaged model {DEFAULT_MODEL} not built yet")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    doc = nlp("The river bank overflowed after heavy rain.")
    bilm = nlp.get_pipe("elmo").bilm
    assert doc._.elmo.layers.shape == (bilm.num_layers + 1, len(doc), bilm.output_dim)
    assert numpy.isfinite(doc._.elmo.layers).all()


