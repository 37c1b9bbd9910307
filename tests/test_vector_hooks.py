"""[components.elmo] vectors: contextual vectors behind spaCy's .vector / .similarity, through
every serialization route, and the seed's "bank" sentences on the default model."""
import itertools
import json
import os
import pickle

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.pipeline import restore_vector_hooks, with_vector_hooks
from spacy_elmo.pipeline.vector_hooks import SETTING_KEY

from helpers import elmo_config

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["The river bank overflowed.", "She works at the bank  downtown.", "Hi"]


@pytest.fixture(scope="module")
def files(tiny_model):
    return tiny_model


def make_nlp(files, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(files, **config))
    nlp.initialize()
    return nlp


@pytest.fixture(scope="module")
def nlp_top(files):
    return make_nlp(files, vectors="top")


def cos(a, b):
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


def test_unset_keeps_spacys_behaviour(files):
    doc = make_nlp(files)(TEXTS[0])
    assert doc.user_hooks == {} and doc.user_token_hooks == {} and doc.user_span_hooks == {}
    assert SETTING_KEY not in doc.user_data
    assert doc[2].vector.shape == (0,) and not doc[2].has_vector  # spaCy: a blank pipeline has no vectors


def test_top_view_behind_vector_and_similarity(nlp_top):
    doc, other = nlp_top(TEXTS[0]), nlp_top(TEXTS[1])
    top = doc._.elmo.layers[-1]
    numpy.testing.assert_array_equal(doc[2].vector, top[2])
    assert doc[2].has_vector and doc[2].vector.dtype == numpy.float32
    assert doc[2].vector_norm == pytest.approx(numpy.linalg.norm(top[2]), rel=1e-6)
    assert doc[2].similarity(other[4]) == pytest.approx(cos(top[2], other._.elmo.layers[-1][4]), rel=1e-5)
    numpy.testing.assert_allclose(doc[1:3].vector, top[1:3].mean(0), rtol=1e-6)
    assert doc[1:3].vector_norm == pytest.approx(numpy.linalg.norm(top[1:3].mean(0)), rel=1e-5)
    numpy.testing.assert_allclose(doc.vector, top.mean(0), rtol=1e-5)
    assert doc.vector_norm == pytest.approx(numpy.linalg.norm(top.mean(0)), rel=1e-5)
    assert doc.similarity(other) == pytest.approx(cos(doc.vector, other.vector), rel=1e-5)
    assert doc[1:3].similarity(doc[2]) == pytest.approx(cos(doc[1:3].vector, doc[2].vector), rel=1e-5)
    assert doc[2].similarity(doc[2]) == pytest.approx(1.0)


def test_whitespace_tokens_have_no_vector(nlp_top):
    doc = nlp_top(TEXTS[1])  # "bank  downtown": the second space is a token
    space = [t for t in doc if t.is_space]
    assert len(space) == 1 and not space[0].has_vector
    assert not space[0].vector.any() and space[0].vector.shape == (doc._.elmo.width,)
    words = numpy.array([not t.is_space for t in doc])
    numpy.testing.assert_allclose(doc.vector, doc._.elmo.layers[-1][words].mean(0), rtol=1e-5)
    with pytest.warns(UserWarning, match="W008"):
        assert space[0].similarity(doc[0]) == 0.0
    span = doc[space[0].i: space[0].i + 1]
    assert not span.has_vector and not span.vector.any()


def test_average_and_layer_views(files):
    doc = make_nlp(files, vectors="average")(TEXTS[0])
    numpy.testing.assert_allclose(doc[2].vector, doc._.elmo.layers.mean(0)[2], rtol=1e-6)
    nlp0 = make_nlp(files, vectors="layer_0")
    a, b = nlp0(TEXTS[0]), nlp0(TEXTS[1])
    numpy.testing.assert_array_equal(a[2].vector, a._.elmo.layers[0][2])
    assert a[2].similarity(b[4]) == pytest.approx(1.0, abs=1e-6)  # layer 0 is context-free
    mix = make_nlp(files, vectors="average", store="average")(TEXTS[0])
    numpy.testing.assert_allclose(mix[2].vector, doc[2].vector, rtol=1e-6)
    top = make_nlp(files, vectors="top", store="top", dtype="float16")(TEXTS[0])
    assert top[2].vector.dtype == numpy.float32
    numpy.testing.assert_array_equal(top[2].vector, top._.elmo.layers[0][2].astype(numpy.float32))


@pytest.mark.parametrize("config, match", [
    ({"vectors": "bottom"}, "vectors = 'bottom'"),
    ({"vectors": "layer_1", "store": "top"}, "store = 'top'"),
    ({"vectors": "top", "store": "average"}, "must be null or 'average'"),
    ({"vectors": "top", "store": "none"}, "store = 'none'"),
])
def test_bad_settings_raise(files, config, match):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=match):
        nlp.add_pipe("elmo", config=elmo_config(files, **config))


def test_layer_beyond_the_model_raises_on_first_doc(files):
    nlp = make_nlp(files, vectors="layer_7")
    with pytest.raises(ValueError, match=r"layer_7.*layers 0..2"):
        nlp(TEXTS[0])


def _values(doc):
    return (numpy.stack([t.vector for t in doc]), doc.vector, doc[0:2].vector, doc[0].similarity(doc[-1]))


def _assert_same(doc, ref):
    assert "similarity" in doc.user_token_hooks and "vector" in doc.user_hooks and "vector" in doc.user_span_hooks
    for got, want in zip(_values(doc), _values(ref)):
        numpy.testing.assert_allclose(got, want, rtol=1e-6)


def test_hooks_survive_pickle(nlp_top):
    doc = nlp_top(TEXTS[0])
    _assert_same(pickle.loads(pickle.dumps(doc)), doc)


def test_to_bytes_and_docbin_then_restore(nlp_top):
    doc = nlp_top(TEXTS[1])
    with pytest.warns(UserWarning, match="W109"):  # spaCy: hooks are never serialized
        data = doc.to_bytes()
    back = Doc(nlp_top.vocab).from_bytes(data)
    assert back.user_hooks == {} and back.user_data[SETTING_KEY]["view"] == "top"
    _assert_same(restore_vector_hooks(back), doc)
    bin_ = DocBin(store_user_data=True)
    bin_.add(doc)
    fresh = spacy.blank("en")
    docs = list(with_vector_hooks(DocBin().from_bytes(bin_.to_bytes()).get_docs(fresh.vocab)))
    _assert_same(docs[0], doc)
    plain = Doc(nlp_top.vocab, words=["no", "elmo"])
    assert restore_vector_hooks(plain).user_hooks == {}  # nothing recorded: left alone


def test_nlp_pipe_two_processes(nlp_top):
    one = list(nlp_top.pipe(TEXTS))
    two = list(with_vector_hooks(nlp_top.pipe(TEXTS, n_process=2, batch_size=1)))
    for got, want in zip(two, one):
        _assert_same(got, want)


def test_setting_survives_to_disk(nlp_top, tmp_path):
    nlp_top.to_disk(tmp_path / "p")
    doc = spacy.load(tmp_path / "p")(TEXTS[0])
    _assert_same(doc, nlp_top(TEXTS[0]))


def test_different_widths_raise(nlp_top, files):
    doc = nlp_top(TEXTS[0])
    plain = Doc(doc.vocab, words=["x"])
    with pytest.raises(ValueError, match="cannot compare"):
        doc[0].similarity(plain[0])


@pytest.mark.slow
def test_bank_same_sense_closer_on_the_default_model():
    """tests/data/bank_vectors.json (fixed before any model ran on it): with vectors = "top",
    the two same-sense pairs are closer on average than the four cross-sense pairs."""
    spec = json.load(open(os.path.join(HERE, "data", "bank_vectors.json"), encoding="utf-8"))
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"vectors": "top"})
    tok = {}
    for sense in ("river", "money"):
        tok[sense] = [next(t for t in doc if t.text == spec["word"]) for doc in nlp.pipe(spec[sense])]
    same = [tok[s][0].similarity(tok[s][1]) for s in ("river", "money")]
    cross = [a.similarity(b) for a, b in itertools.product(tok["river"], tok["money"])]
    assert numpy.mean(same) > numpy.mean(cross), (same, cross)
    # the README quotes these means and the highest cross-sense pair (river, money2): this model's
    readme = " ".join(open(os.path.join(HERE, "..", "README.md"), encoding="utf-8").read().split())
    quoted = (f"the same-sense mean is {numpy.mean(same):.3f} and the cross-sense mean {numpy.mean(cross):.3f}, "
              f"and the cross-sense pair of `river` and `money2` scores {max(cross):.3f}")
    assert max(cross) == cross[1], cross  # product order: (river, money), (river, money2), ...
    assert quoted in readme, quoted


# -- only comparable vectors are compared -----------------------------------------------------
@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
    from helpers import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("other_elmo"), seed=14)


def test_vectors_of_two_biLMs_are_not_compared(nlp_top, other_model, files):
    from spacy_elmo.errors import ElmoDataError

    a, b = nlp_top(TEXTS[0]), make_nlp(other_model, vectors="top")(TEXTS[0])
    da, db = (d.user_data[SETTING_KEY]["model"]["digest"] for d in (a, b))
    assert da != db and len(da) == 16
    for left, right in ((a[2], b[2]), (a[1:3], b[1:3]), (a, b), (a[2], b), (a, b[1:3])):
        with pytest.raises(ElmoDataError) as err:
            left.similarity(right)
        message = str(err.value)
        assert message.startswith("cannot compare vectors of different biLMs or views: ")
        assert f"model {files.weights_path!r} (digest {da}), view 'top'" in message
        assert f"model {other_model.weights_path!r} (digest {db}), view 'top'" in message
    assert isinstance(err.value, ValueError)


def test_vectors_of_two_views_are_not_compared(files):
    top, layer1 = make_nlp(files, vectors="top")(TEXTS[0]), make_nlp(files, vectors="layer_1")(TEXTS[0])
    with pytest.raises(ValueError, match=r"view 'top'\) against Token 'river' \(model .*, view 'layer_1'\)"):
        top[1].similarity(layer1[1])


def test_the_same_biLM_loaded_twice_is_comparable(nlp_top, files, tmp_path):
    again = make_nlp(files, vectors="top")(TEXTS[1])
    doc = nlp_top(TEXTS[0])
    assert doc[2].similarity(again[4]) == pytest.approx(cos(doc[2].vector, again[4].vector), rel=1e-5)
    nlp_top.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")(TEXTS[1])  # the weights come from bytes now: same digest
    assert doc.similarity(loaded) == pytest.approx(cos(doc.vector, loaded.vector), rel=1e-5)


def test_the_guard_survives_to_bytes(nlp_top, other_model):
    b = make_nlp(other_model, vectors="top")(TEXTS[0])
    with pytest.warns(UserWarning, match="W109"):
        data = b.to_bytes()
    back = restore_vector_hooks(Doc(b.vocab).from_bytes(data))
    with pytest.raises(ValueError, match="different biLMs"):
        back.similarity(nlp_top(TEXTS[0]))


def test_a_recorded_view_without_a_model_is_checked_by_view_only(nlp_top, other_model):
    a, b = nlp_top(TEXTS[0]), make_nlp(other_model, vectors="top")(TEXTS[0])
    del b.user_data[SETTING_KEY]["model"]  # as a Doc stored before the model was recorded
    assert a[2].similarity(b[2]) == pytest.approx(cos(a[2].vector, b[2].vector), rel=1e-5)


def test_a_changed_weight_changes_the_digest(files):
    import torch

    nlp = make_nlp(files, vectors="top")
    before = nlp(TEXTS[0])
    with torch.no_grad():
        next(nlp.get_pipe("elmo").bilm.parameters()).add_(0.5)
    after = nlp(TEXTS[0])
    with pytest.raises(ValueError, match="different biLMs"):
        before[2].similarity(after[2])


def test_a_distilled_table_of_the_same_biLM_and_view_is_comparable(files, tmp_path):
    from spacy.training.initialize import load_vectors_into_model

    from spacy_elmo.static import distil_vectors

    corpus = tmp_path / "c.txt"
    corpus.write_text("The river bank overflowed.\nThe bank river.\n", encoding="utf-8")
    for view in ("top", "layer_1"):
        distil_vectors(files.directory, [str(corpus)], str(tmp_path / view), view=view, min_count=1, progress=False)
    nlp = make_nlp(files, vectors="top")
    load_vectors_into_model(nlp, str(tmp_path / "top" / "spacy"))
    doc = nlp(TEXTS[0])
    static = nlp.vocab["bank"]
    assert doc[2].similarity(static) == pytest.approx(cos(doc[2].vector, static.vector), rel=1e-5)
    assert doc[2].similarity(Doc(nlp.vocab, words=["bank"])) == pytest.approx(cos(doc[2].vector, static.vector),
                                                                              rel=1e-5)
    load_vectors_into_model(nlp, str(tmp_path / "layer_1" / "spacy"))
    with pytest.raises(ValueError, match=r"cannot compare a contextual vector with a static one: .* against Lexeme "
                                         r"'bank', whose vector comes from a table distilled from the biLM of digest "
                                         r"\w+, view 'layer_1'"):
        doc[2].similarity(nlp.vocab["bank"])
