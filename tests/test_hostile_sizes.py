"""A tiny sparse weights.hdf5 with huge options: the size is checked from options.json before
anything is allocated, in one line naming the sizes; $SPACY_ELMO_MAX_PARAMS raises the limit."""
import json
import resource
import shutil

import h5py
import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.sizes import MAX_PARAMS, check_size, n_params
from spacy_elmo.bilm.weights import layout
from spacy_elmo.errors import ElmoModelFileError

ORIGINAL = {"lstm": {"dim": 4096, "projection_dim": 512, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                     "use_skip_connections": True},
            "char_cnn": {"embedding": {"dim": 16}, "n_highway": 2, "n_characters": 262,
                         "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]}}


def _sparse_model(tmp_path, tiny_model, dim):
    d = tmp_path / "huge"
    shutil.copytree(tiny_model.directory, d)
    (d / "sha256.json").unlink(missing_ok=True)
    options = json.loads((d / "options.json").read_text())
    options["lstm"]["dim"] = dim
    (d / "options.json").write_text(json.dumps(options))
    with h5py.File(d / "weights.hdf5", "w") as f:  # chunked, never written: a few KB on disk
        for name, shape in layout(options).items():
            f.create_dataset(name, shape=shape, dtype="f4", chunks=True, fillvalue=0.0)
    return d


def test_original_elmo_is_below_the_limit():
    assert n_params(ORIGINAL) == 93_600_848
    assert MAX_PARAMS == 4 * 93_600_848
    assert check_size(ORIGINAL, "x") == 93_600_848


def test_huge_options_are_refused_before_allocating(tmp_path, tiny_model, monkeypatch):
    monkeypatch.delenv("SPACY_ELMO_MAX_PARAMS", raising=False)
    d = _sparse_model(tmp_path, tiny_model, 10 ** 7)
    assert (d / "weights.hdf5").stat().st_size < 1_000_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = (r"imply 5,920,067,232 parameters \(23.7 GB of float32: lstm.dim 10,000,000, .*"
               r"above the limit of 374,403,392; set \$SPACY_ELMO_MAX_PARAMS")
    with pytest.raises(ElmoModelFileError, match=message) as err:
        BiLM.from_files(str(d / "options.json"), str(d / "weights.hdf5"))
    assert "\n" not in str(err.value)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB: nothing big allocated


def test_the_limit_is_configurable(tmp_path, tiny_model, monkeypatch):
    d = _sparse_model(tmp_path, tiny_model, 128)  # the tiny model's shapes, wider LSTM: ~100k parameters
    options, weights = str(d / "options.json"), str(d / "weights.hdf5")
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", "1000")
    with pytest.raises(ElmoModelFileError, match="above the limit of 1,000"):
        BiLM.from_files(options, weights)
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", "lots")
    with pytest.raises(ValueError, match=r"\$SPACY_ELMO_MAX_PARAMS = 'lots': expected a positive integer"):
        BiLM.from_files(options, weights)
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", "10_000_000")
    assert BiLM.from_files(options, weights).options["lstm"]["dim"] == 128
    with pytest.raises(ElmoModelFileError, match="above the limit of 10"):
        check_size(json.loads((d / "options.json").read_text()), weights, 10)
