"""sha256.json: recorded by every writer, checked on load; a changed byte is an error naming the
file, a directory without digests loads as before."""
import json
import os
import shutil

import numpy
import pytest

from spacy_elmo.bilm import BiLM, integrity
from spacy_elmo.errors import ElmoModelFileError
from spacy_elmo.hub.resolve import DEFAULT_MODEL, resolve


def _flip_bytes(path, n=200):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        block = bytearray(f.read(n))
        f.seek(size // 2)
        f.write(bytes(b ^ 0x5A for b in block))


@pytest.fixture
def saved(tiny_model, tmp_path):
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    bilm.save(tmp_path / "m")
    return bilm, tmp_path / "m"


def test_save_records_and_load_verifies(saved):
    bilm, d = saved
    digests = json.loads((d / "sha256.json").read_text())
    assert set(digests) == {"options.json", "weights.hdf5"}
    assert digests["weights.hdf5"] == integrity.sha256(str(d / "weights.hdf5"))
    assert integrity.verify(d / "weights.hdf5") is True
    again = BiLM.from_files(d / "options.json", d / "weights.hdf5")
    out = again.embed_sentences([["The", "bank"]])[0]
    numpy.testing.assert_array_equal(out, bilm.embed_sentences([["The", "bank"]])[0])


def test_a_corrupted_weights_file_is_refused(saved):
    _, d = saved
    _flip_bytes(d / "weights.hdf5")
    with pytest.raises(ElmoModelFileError, match=r"weights\.hdf5: sha256 .* differs from the one recorded") as err:
        BiLM.from_files(d / "options.json", d / "weights.hdf5")
    assert err.value.path.endswith("weights.hdf5")
    # without the digest file the same bytes load (unchecked), as hand-downloaded files do
    os.remove(d / "sha256.json")
    assert integrity.verify(d / "weights.hdf5") is False


def test_edited_options_are_refused(saved):
    _, d = saved
    options = json.loads((d / "options.json").read_text())
    options["lstm"]["cell_clip"] = 1.0
    (d / "options.json").write_text(json.dumps(options))
    with pytest.raises(ElmoModelFileError, match=r"options\.json: sha256"):
        BiLM.from_files(d / "options.json", d / "weights.hdf5")


def test_bad_digest_file_is_an_error(saved):
    _, d = saved
    (d / "sha256.json").write_text("[1, 2]")
    with pytest.raises(ElmoModelFileError, match="sha256.json: expected a JSON object"):
        BiLM.from_files(d / "options.json", d / "weights.hdf5")


def test_packaged_model_is_recorded_and_intact(tmp_path):
    d = resolve(DEFAULT_MODEL)
    digests = json.loads(open(os.path.join(d, "sha256.json")).read())
    for name in ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt"):
        assert integrity.verify(os.path.join(d, name)) is True, name
    assert len(digests) == 4
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    _flip_bytes(copy / "weights.hdf5")
    with pytest.raises(ElmoModelFileError, match="sha256"):
        BiLM.from_pretrained(str(copy))
