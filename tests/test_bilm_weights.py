"""Weight files: save/load round trip, float16, and the documented errors for malformed files
(on the tiny random model; one test reads the bilm-tf reference file)."""
import json
import os
import shutil

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoModelFileError

LSTM_W = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"
SENTS = [["The", "cat", "sat", "."], ["Hello", "world"]]


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)


@pytest.fixture
def model_copy(tiny_model, tmp_path):
    """The two files without their sha256.json (edited files must reach the format checks)."""
    shutil.copy(tiny_model.options_path, tmp_path / "options.json")
    shutil.copy(tiny_model.weights_path, tmp_path / "weights.hdf5")
    return tmp_path


def load(d):
    return BiLM.from_files(d / "options.json", d / "weights.hdf5")


def _same_datasets(original, written):
    """Every dataset of the ``original`` HDF5 file is in ``written``, float32 and bit for bit equal."""
    with h5py.File(original, "r") as f, h5py.File(written, "r") as g:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        assert len(names) > 20
        for n in names:
            assert g[n].dtype == numpy.float32 and numpy.array_equal(f[n][()], g[n][()]), n


def test_round_trip(bilm, tiny_model, tmp_path):
    bilm.save(tmp_path / "saved")
    again = load(tmp_path / "saved")
    for (k, v), (k2, v2) in zip(bilm.state_dict().items(), again.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k
    for a, b in zip(bilm.embed_sentences(SENTS), again.embed_sentences(SENTS)):
        assert numpy.array_equal(a, b)
    _same_datasets(tiny_model.weights_path, tmp_path / "saved" / "weights.hdf5")


def test_round_trip_of_the_bilm_tf_file(fixture_dir, tmp_path):
    """A file written by bilm-tf (TensorFlow) reads and writes back bit for bit: our layout is theirs."""
    original = os.path.join(fixture_dir, "lm_weights.hdf5")
    BiLM.from_files(os.path.join(fixture_dir, "options.json"), original).save(tmp_path)
    _same_datasets(original, tmp_path / "weights.hdf5")


def test_random_model_round_trip(tmp_path):
    options = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                        "use_skip_connections": False},
               "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 2], [2, 3]], "n_highway": 1}}
    bilm = BiLM(options)
    bilm.save(tmp_path)
    again = load(tmp_path)
    assert again.options == bilm.options
    for a, b in zip(bilm.embed_sentences(SENTS), again.embed_sentences(SENTS)):
        assert numpy.array_equal(a, b)


def test_float16_file(bilm, model_copy):
    with h5py.File(model_copy / "weights.hdf5", "r") as f:
        arrays = {}
        f.visititems(lambda n, o: arrays.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    with h5py.File(model_copy / "weights.hdf5", "w") as f:
        for n, a in arrays.items():
            f.create_dataset(n, data=a.astype(numpy.float16))
    half = load(model_copy)
    assert all(p.dtype == torch.float32 for p in half.parameters())
    for a, b in zip(bilm.embed_sentences(SENTS), half.embed_sentences(SENTS)):
        assert numpy.allclose(a, b, atol=0.05)


def expect_error(d, *needles):
    with pytest.raises(ElmoModelFileError) as info:
        load(d)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert isinstance(info.value, ValueError)
    return info.value


def test_missing_file(model_copy):
    os.remove(model_copy / "weights.hdf5")
    expect_error(model_copy, str(model_copy / "weights.hdf5"), "not found")
    os.remove(model_copy / "options.json")
    expect_error(model_copy, str(model_copy / "options.json"), "not found")


def test_not_hdf5(model_copy):
    (model_copy / "weights.hdf5").write_bytes(b"this is not an HDF5 file\n" * 100)
    expect_error(model_copy, str(model_copy / "weights.hdf5"), "HDF5")


def test_truncated(model_copy):
    path = model_copy / "weights.hdf5"
    data = path.read_bytes()
    for size in (len(data) // 2, len(data) - 1000, 3000):
        path.write_bytes(data[:size])
        expect_error(model_copy, str(path))


def test_missing_dataset(model_copy):
    with h5py.File(model_copy / "weights.hdf5", "a") as f:
        del f[LSTM_W]
    err = expect_error(model_copy, str(model_copy / "weights.hdf5"), LSTM_W, "missing")
    assert err.dataset == LSTM_W


def test_wrong_shape(model_copy):
    with h5py.File(model_copy / "weights.hdf5", "a") as f:
        del f["CNN_proj/W_proj"]
        f.create_dataset("CNN_proj/W_proj", data=numpy.zeros((124, 15), numpy.float32))
    expect_error(model_copy, str(model_copy / "weights.hdf5"), "CNN_proj/W_proj", "(124, 15)")


@pytest.mark.parametrize("bad", [numpy.nan, numpy.inf])
def test_non_finite_weights(model_copy, bad):
    with h5py.File(model_copy / "weights.hdf5", "a") as f:
        f[LSTM_W][3, 5] = bad
    err = expect_error(model_copy, str(model_copy / "weights.hdf5"), LSTM_W, "1 NaN or infinite")
    assert err.dataset == LSTM_W


def test_options_disagree_with_file(model_copy):
    options = json.loads((model_copy / "options.json").read_text())
    options["lstm"]["dim"] = 32
    (model_copy / "options.json").write_text(json.dumps(options))
    expect_error(model_copy, str(model_copy / "weights.hdf5"), "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0", "shape")


@pytest.mark.parametrize("edit,key", [
    (lambda o: o["lstm"].pop("projection_dim"), "lstm.projection_dim"),
    (lambda o: o.pop("char_cnn"), "char_cnn"),
    (lambda o: o["char_cnn"].__setitem__("filters", [[1]]), "char_cnn.filters"),
    (lambda o: o["char_cnn"].__setitem__("activation", "gelu"), "char_cnn.activation"),
    (lambda o: o["lstm"].__setitem__("cell_clip", "3"), "lstm.cell_clip"),
])
def test_bad_options(model_copy, edit, key):
    options = json.loads((model_copy / "options.json").read_text())
    edit(options)
    (model_copy / "options.json").write_text(json.dumps(options))
    expect_error(model_copy, str(model_copy / "options.json"), key)


def test_options_not_json(model_copy):
    (model_copy / "options.json").write_text("{not json")
    expect_error(model_copy, str(model_copy / "options.json"))
