"""spacy_elmo.allennlp.ElmoEmbedder against AllenNLP 0.9's ElmoEmbedder (written out over
AllenNLP 2.10.1's _ElmoBiLm in tests/data/allennlp/make_reference.py; outputs stored there)."""
import io
import json

import h5py
import numpy
import pytest

from spacy_elmo.allennlp import DEFAULT_OPTIONS_FILE, ElmoEmbedder
from spacy_elmo.errors import ElmoConfigError, ElmoDataError, ElmoTypeError

from allennlp_reference import DATA, TOL, inputs, model_files, reference


@pytest.fixture(scope="module", params=["tf", "random"])
def model(request):
    if request.param == "tf":
        request.getfixturevalue("fixture_dir")
    return request.param


@pytest.fixture(scope="module")
def embedder(model):
    return ElmoEmbedder(*model_files(model))


def close(got, key):
    want = reference()[key]
    assert got.dtype == numpy.float32 and got.shape == want.shape, (key, got.shape, want.shape)
    diff = float(numpy.abs(got - want).max())
    assert diff <= TOL, f"{key}: max abs diff {diff:.3g}"


def test_embed_sentence_batch_and_sentences(model, embedder):
    sentences = inputs()["embed_sentences"]
    close(embedder.embed_sentence(sentences[2]), f"{model}/embed_sentence")
    for i, x in enumerate(embedder.embed_batch(sentences[:3])):
        close(x, f"{model}/embed_batch/{i}")
    got = list(embedder.embed_sentences(sentences, batch_size=2))
    assert len(got) == len(sentences)
    for i, x in enumerate(got):
        close(x, f"{model}/embed_sentences/{i}")
    activations, mask = embedder.batch_to_embeddings(sentences[:3])
    assert activations.shape[:3] == (3, 3, 6) and mask.sum(1).tolist() == [3, 1, 6]


def test_stateless_where_0_9_was_not(model, embedder):
    sentence = inputs()["embed_sentences"][2]
    first, second = embedder.embed_sentence(sentence), embedder.embed_sentence(sentence)
    assert numpy.array_equal(first, second)
    close(second, f"{model}/embedder_stateful/0")
    with pytest.raises(AssertionError, match="max abs diff"):
        close(second, f"{model}/embedder_stateful/1")


def test_embed_sentences_is_lazy(embedder):
    taken = []

    def sentences():
        for i in range(10):
            taken.append(i)
            yield ["word", str(i)]

    stream = embedder.embed_sentences(sentences(), batch_size=3)
    assert taken == []
    next(stream)
    assert taken == [0, 1, 2]
    with pytest.raises(ElmoConfigError, match="batch_size must be >= 1"):
        embedder.embed_sentences([["a"]], batch_size=0)


def _read(path):
    with h5py.File(path, "r") as f:
        data = {k: f[k][()] for k in f if k != "sentence_to_index"}
        index = json.loads(f["sentence_to_index"][0]) if "sentence_to_index" in f else None
    return data, index


def test_embed_file_writes_0_9s_hdf5(model, embedder, tmp_path):
    lines = inputs()["file_lines"]
    out = tmp_path / "all.hdf5"
    embedder.embed_file(io.StringIO("\n".join(lines) + "\n"), out, batch_size=64)
    got, index = _read(out)
    want, want_index = _read(DATA / f"{model}_embed_file_all.hdf5")
    assert sorted(got) == sorted(want) == ["0", "1", "2", "3"] and index == want_index
    for key in want:
        assert got[key].dtype == numpy.float32 and got[key].shape == want[key].shape
        assert float(numpy.abs(got[key] - want[key]).max()) <= TOL
    keys = tmp_path / "keys.hdf5"
    path = tmp_path / "three.txt"
    path.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    embedder.embed_file(str(path), keys, output_format="top", batch_size=3, use_sentence_keys=True)
    got, index = _read(keys)
    want, _ = _read(DATA / f"{model}_embed_file_top_keys.hdf5")
    assert index is None and sorted(got) == sorted(want) == sorted(line.strip() for line in lines[:3])
    for key in want:
        assert got[key].shape == want[key].shape and float(numpy.abs(got[key] - want[key]).max()) <= TOL


def test_embed_file_average_and_forget_sentences(embedder, tmp_path):
    out = tmp_path / "avg.hdf5"
    handle = io.StringIO("a b c\nd e\n")
    embedder.embed_file(handle, out, output_format="average", forget_sentences=True)
    assert handle.closed  # as in 0.9
    got, index = _read(out)
    assert index is None and sorted(got) == ["0", "1"]
    full = embedder.embed_sentence(["a", "b", "c"])
    assert numpy.allclose(got["0"], full.mean(axis=0), atol=1e-6)


def test_embed_file_refuses_blank_and_repeated_lines_before_writing(embedder, tmp_path):
    out = tmp_path / "x.hdf5"
    with pytest.raises(ElmoDataError, match=r"empty lines at indexes \[1, 3\]"):
        embedder.embed_file(io.StringIO("a b\n  \nc\n\n"), out)
    with pytest.raises(ElmoDataError, match="line 2 repeats line 0"):
        embedder.embed_file(io.StringIO("a b\nc\n a b \n"), out, use_sentence_keys=True)
    with pytest.raises(ElmoConfigError, match="output_format must be one of"):
        embedder.embed_file(io.StringIO("a\n"), out, output_format="mean")
    assert not out.exists()


def test_empty_sentences_and_bad_batches(embedder):
    layers = embedder.elmo_bilm.num_layers
    dim = embedder.elmo_bilm.get_output_dim()
    for got in (embedder.embed_sentence([]), embedder.embed_batch([["a"], []])[1], embedder.embed_batch([[], []])[0]):
        assert got.shape == (layers, 0, dim) and got.dtype == numpy.float32
    with pytest.raises(ElmoTypeError):
        embedder.embed_batch(["not tokenised"])
    with pytest.raises(ElmoTypeError):
        embedder.embed_batch([["a", 3]])


def test_the_default_is_the_cached_original_model(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="python -m spacy_elmo download elmo-original"):
        ElmoEmbedder()
    assert DEFAULT_OPTIONS_FILE.startswith("https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway/")
