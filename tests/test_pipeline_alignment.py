"""``doc._.elmo`` stays aligned with the tokens when components after ``elmo`` merge or split them."""
import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.errors import ElmoDataError
from spacy_elmo.pipeline import ElmoData

from helpers import elmo_config

TEXT = "I love New York and Paris"


def make_nlp(model, merge=False, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(model, **config))
    if merge:
        ruler = nlp.add_pipe("entity_ruler")
        ruler.add_patterns([{"label": "GPE", "pattern": "New York"}])
        nlp.add_pipe("merge_entities")
    return nlp


@pytest.fixture(scope="module")
def nlp(tiny_model):
    return make_nlp(tiny_model, merge=True)


def _original(nlp, text):
    with nlp.select_pipes(enable=["elmo"]):
        return nlp(text)._.elmo.layers


def test_merge_entities(nlp):
    ref = _original(nlp, TEXT)  # I love New York and Paris: 6 tokens
    doc = nlp(TEXT)
    assert [t.text for t in doc] == ["I", "love", "New York", "and", "Paris"]
    # Token getters first: unchanged tokens read their row as is, a moved one triggers the realignment.
    numpy.testing.assert_array_equal(doc[1]._.elmo, ref[:, 1])
    numpy.testing.assert_array_equal(doc[4]._.elmo, ref[:, 5])
    layers = doc._.elmo.layers
    assert layers.shape == (3, 5, 32) and len(doc._.elmo) == len(doc)
    numpy.testing.assert_array_equal(layers[:, [0, 1, 3, 4]], ref[:, [0, 1, 4, 5]])
    numpy.testing.assert_allclose(layers[:, 2], ref[:, 2:4].mean(axis=1), rtol=1e-6)
    numpy.testing.assert_array_equal(doc[2]._.elmo, layers[:, 2])
    assert doc._.elmo is doc._.elmo  # realigned once, then kept


def test_split_and_spans(tiny_model):
    nlp = make_nlp(tiny_model)
    doc = nlp("I live in NewYork today")
    ref = doc._.elmo.layers.copy()
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[3], ["New", "York"], heads=[(doc[3], 1), doc[2]])
    assert len(doc) == 6
    numpy.testing.assert_array_equal(doc[3]._.elmo, ref[:, 3])
    numpy.testing.assert_array_equal(doc[4]._.elmo, ref[:, 3])
    numpy.testing.assert_array_equal(doc[5]._.elmo, ref[:, 4])  # the last token: no IndexError
    span = doc[2:5]
    assert span._.elmo.shape == (3, 3, 32)
    numpy.testing.assert_array_equal(span._.elmo, ref[:, [2, 3, 3]])
    assert doc._.elmo.layers.shape == (3, 6, 32)


def test_span_over_merged_tokens(nlp):
    ref = _original(nlp, TEXT)
    doc = nlp(TEXT)
    span = doc[1:4]  # love | New York | and
    assert span._.elmo.shape == (3, 3, 32)
    numpy.testing.assert_array_equal(span._.elmo, doc._.elmo.layers[:, 1:4])
    numpy.testing.assert_array_equal(span._.elmo[:, 2], ref[:, 4])
    assert doc[3:5]._.elmo.shape == (3, 2, 32)


def test_round_trips_after_merge(nlp):
    ref = _original(nlp, TEXT)
    doc = nlp(TEXT)  # doc._.elmo not read yet: the stored rows are still those of the 6 old tokens
    back = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    assert back._.elmo.layers.shape == (3, 5, 32)
    numpy.testing.assert_array_equal(back[4]._.elmo, ref[:, 5])
    numpy.testing.assert_array_equal(back._.elmo.layers, doc._.elmo.layers)  # now both realigned
    again = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    numpy.testing.assert_array_equal(again._.elmo.offsets, [[0, 1], [2, 6], [7, 15], [16, 19], [20, 25]])
    (loaded,) = DocBin(docs=[nlp(TEXT)], store_user_data=True).get_docs(nlp.vocab)
    numpy.testing.assert_array_equal(loaded._.elmo.layers, doc._.elmo.layers)


@pytest.mark.parametrize("store,dtype", [("average", "float16"), ("top", "float32"), ("all", "float16")])
def test_store_modes_dtype_and_whitespace(tiny_model, store, dtype):
    nlp = make_nlp(tiny_model, store=store, dtype=dtype)
    doc = nlp("Big  apple pie\n\nhere")  # Big | ' ' | apple | pie | '\n\n' | here
    assert [t.is_space for t in doc] == [False, True, False, False, True, False]
    ref = doc._.elmo.layers.copy()
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:3])  # "Big  apple": the whitespace part is left out of the mean
    data = doc._.elmo
    assert data.store == store and data.layers.dtype == numpy.dtype(dtype) and data.layers.shape[1] == 4
    mean = ref[:, [0, 2]].astype("float32").mean(axis=1).astype(dtype)
    numpy.testing.assert_array_equal(data.layers[:, 0], mean)
    numpy.testing.assert_array_equal(data.layers[:, 1:], ref[:, 3:])
    assert not doc[2]._.elmo.any()  # the whitespace token keeps its zero vector


def test_clear_errors(nlp, tiny_model):
    plain = make_nlp(tiny_model)
    doc = plain("New York")
    doc._.elmo  # bound to New | York
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[0], ["Ne", "w"], heads=[(doc[0], 1), doc[1]])
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[1:3])  # "w York" crosses the boundary of "New"
    with pytest.raises(ElmoDataError, match=r"doc\._\.elmo cannot be realigned.*'w York'") as err:
        doc[1]._.elmo
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)
    other = plain("Old Town")
    with pytest.raises(ElmoDataError, match=r"doc\._\.elmo was computed for a different text"):
        other._.elmo = plain("New York")._.elmo
    with pytest.raises(ElmoDataError, match=r"doc\._\.elmo has 3 rows for a Doc of 2 tokens"):
        other._.elmo = ElmoData(numpy.zeros((1, 3, 4), dtype="float32"))


def test_values_stored_without_offsets(nlp):
    """Values written before offsets existed: taken as the tokens' when first read, then realigned."""
    ref = _original(nlp, TEXT)
    with nlp.select_pipes(enable=["elmo"]):
        doc = nlp(TEXT)
    doc.user_data[("._.", "elmo", None, None)] = {"__spacy_elmo_data__": {"layers": ref, "store": "all"}}
    numpy.testing.assert_array_equal(doc[5]._.elmo, ref[:, 5])
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[2:4])
    numpy.testing.assert_array_equal(doc[4]._.elmo, ref[:, 5])
    doc.user_data[("._.", "elmo", None, None)] = {"__spacy_elmo_data__": {"layers": ref, "store": "all"}}
    with pytest.raises(ElmoDataError, match="no token offsets"):
        doc._.elmo
