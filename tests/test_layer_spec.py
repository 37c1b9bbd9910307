"""One vocabulary for "which layers" (:mod:`spacy_elmo.layer_spec`): what each spec computes on
real arrays, its one-line errors, and the same arrays from the
``elmo`` component's ``store``, ``embed --layers`` and the probe's views."""
import json

import h5py
import numpy
import pytest
import spacy

from spacy_elmo.bilm import BiLM
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoConfigError
from spacy_elmo.layer_spec import parse
from spacy_elmo.probe.embed import embed_tokens
from spacy_elmo.probe.views import view_names, views

from helpers import elmo_config

RNG = numpy.random.default_rng(0)
H = RNG.normal(size=(3, 7, 5)).astype(numpy.float32)  # (n_layers, n_tokens, dim)
WORDS = ["The", "river", "bank", "overflowed", "after", "the", "rain", "."]
SPECS = ["all", "top", "average", "layer_0", "layer_1", "mix:0.2,-0.5,1.3,gamma=0.7"]


def test_average_is_the_mean_of_the_layers():
    numpy.testing.assert_array_equal(parse("average").apply(H), H.mean(axis=0))


def test_mix_with_equal_weights_is_the_average():
    for weights in ("0,0,0", "2.5,2.5,2.5"):
        spec = parse(f"mix:{weights}")
        assert spec.weights == pytest.approx((1 / 3,) * 3)
        numpy.testing.assert_allclose(spec.apply(H), parse("average").apply(H), rtol=1e-6, atol=1e-7)


def test_mix_is_the_softmax_weighted_sum_times_gamma():
    w = numpy.array([0.2, -0.5, 1.3])
    s = numpy.exp(w) / numpy.exp(w).sum()
    expected = 0.7 * (s[0] * H[0] + s[1] * H[1] + s[2] * H[2])
    numpy.testing.assert_allclose(parse("mix:0.2,-0.5,1.3,gamma=0.7").apply(H), expected, rtol=1e-5)


def test_layer_k_top_and_all_pick_layers():
    for k in range(3):
        numpy.testing.assert_array_equal(parse(f"layer_{k}").apply(H), H[k])
    numpy.testing.assert_array_equal(parse("top").apply(H), H[2])
    assert parse("all").apply(H) is H
    # float16 stacks give float32 views; any trailing shape works (a token's (n_layers, dim))
    assert parse("top").apply(H.astype(numpy.float16)).dtype == numpy.float32
    numpy.testing.assert_array_equal(parse("average").apply(H[:, 3]), H.mean(axis=0)[3])


def test_names_round_trip():
    for text in SPECS + ["layer_02", "mix: 0, 0.0 ,1,gamma=1", "mix:1e-8,2.50,3"]:
        spec = parse(text)
        assert parse(spec.name) == spec
    assert parse("layer_02").name == "layer_2"
    assert parse("mix: 0, 0.0 ,1,gamma=1").name == "mix:0,0,1" and parse("mix:1e-8,2.50,3").name == "mix:1e-08,2.5,3"
    assert parse("mix:0.2,-0.5,1.3,gamma=0.7").name == "mix:0.2,-0.5,1.3,gamma=0.7"
    assert [s.shape(3, 7, 5) for s in map(parse, ("all", "top"))] == [(3, 7, 5), (7, 5)]
    assert view_names(2) == ("layer_0", "layer_1", "layer_2", "average")


@pytest.mark.parametrize("text, message", [
    ("mean", "--layers 'mean': expected all, top, average, layer_k or mix:"),
    ("2", "--layers '2': expected all, top, average, layer_k or mix:"),
    ("bottom", "--layers 'bottom': expected all, top, average, layer_k or mix:"),
    ("mix:", "give one weight per layer"),
    ("mix:1,x", "'x' is not a number"),
    ("mix:1,inf", "'inf' is not finite"),
    (3, "--layers 3: expected a string"),
    ("layer_1\n", r"--layers 'layer_1\n': expected all"),  # names are matched whole
])
def test_bad_specs_raise_one_line_errors(text, message):
    with pytest.raises(ElmoConfigError) as err:
        parse(text, "--layers")
    assert message in str(err.value)
    assert "\n" not in str(err.value) and isinstance(err.value, ValueError)


def test_specs_that_do_not_fit_the_model_raise():
    with pytest.raises(ElmoConfigError, match=r"'layer_3': the biLM has layers 0..2"):
        parse("layer_3").apply(H)
    with pytest.raises(ElmoConfigError, match="2 weights, but the model has 3 layers"):
        parse("mix:1,2").validate(3)
    assert parse("mix:1,2,3").validate(3).kind == "mix"


def test_bad_specs_are_errors_in_the_component_and_the_probe(tiny_model):
    with pytest.raises(ValueError, match=r"\[components.elmo\] store = 'mix': expected all, top, average"):
        spacy.blank("en").add_pipe("elmo", config=elmo_config(tiny_model, store="mix"))
    with pytest.raises(ValueError, match="vectors = 'mean': expected all, top, average"):
        spacy.blank("en").add_pipe("elmo", config=elmo_config(tiny_model, vectors="mean"))
    with pytest.raises(ElmoConfigError, match="'mean': expected all"):
        views(H.transpose(1, 0, 2), ["mean"])


def test_a_mix_as_the_vectors_view(tiny_model, stack):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, vectors="mix:0,1,2", threads=1))
    doc = nlp(" ".join(WORDS))
    expected = parse("mix:0,1,2").apply(stack)
    for i in (0, 3, 7):
        numpy.testing.assert_allclose(doc[i].vector, expected[i], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="vectors = 'mix:0,1,2' with store = 'top'"):
        spacy.blank("en").add_pipe("elmo", config=elmo_config(tiny_model, vectors="mix:0,1,2", store="top"))


@pytest.fixture(scope="module")
def stack(tiny_model):
    """The component's layers of WORDS (store "all"), (3, 8, 32) float32."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, threads=1))
    return nlp(" ".join(WORDS))._.elmo.layers


@pytest.mark.parametrize("text", SPECS[1:])
def test_component_embed_and_probe_give_the_same_arrays(tiny_model, stack, tmp_path, text):
    spec = parse(text)
    expected = spec.apply(stack)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, store=text, threads=1))
    stored = nlp(" ".join(WORDS))._.elmo
    assert stored.store == spec.name and stored.layers.shape == (1, len(WORDS), 32)
    numpy.testing.assert_array_equal(stored.layers[0], expected)

    src = tmp_path / "in.txt"
    src.write_text(" ".join(WORDS) + "\n", encoding="utf-8")
    embed_file(str(src), str(tmp_path / "out.hdf5"), model=tiny_model.directory, layer_spec=text,
               pretokenized=True, progress=False)
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        assert json.loads(f["sentence_to_index"][0]) == {" ".join(WORDS): "0"}
        numpy.testing.assert_array_equal(f["0"][()], expected)

    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    vecs = embed_tokens(bilm, [WORDS], progress=False)  # (n_tokens, n_layers, dim)
    numpy.testing.assert_array_equal(views(vecs, [text])[spec.name], expected)
