"""Names are matched whole (``re.fullmatch``): a trailing newline ("name\\n"), which ``$`` accepts,
makes no model name, pin, vector view or shard file name."""
import pytest

from spacy_elmo.hub import cache
from spacy_elmo.hub.download import parse_pins
from spacy_elmo.pipeline import vector_hooks
from spacy_elmo.scale import shards


@pytest.mark.parametrize("name", ["elmo-small\n", "x\n"])
def test_model_names_with_a_newline_are_invalid(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="invalid model name"):
        cache.check_name(name)
    with pytest.raises(ValueError, match="invalid model name"):
        cache.model_dir(name)
    assert cache.check_name(name.strip()) == name.strip()


def test_downloaded_names_with_a_newline_are_not_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    (tmp_path / "good").mkdir()
    (tmp_path / "bad\n").mkdir()
    assert "bad\n" not in cache.downloaded()
    assert "good" in cache.downloaded()


def test_a_pin_with_a_newline_is_refused():
    hex64 = "ab" * 32
    assert parse_pins([hex64]) == {"weights.hdf5": hex64}
    with pytest.raises(ValueError, match="expected 64 hex digits"):
        parse_pins([hex64 + "\n"])


def test_vector_views_and_shard_names_are_matched_whole(tmp_path):
    assert vector_hooks.check_view("layer_1", "all") == "layer_1"
    with pytest.raises(ValueError, match="expected all, top, average, layer_k or mix"):
        vector_hooks.check_view("layer_1\n", "all")
    name = "shard-000000000-000000009.hdf5"
    (tmp_path / name).write_bytes(b"")
    (tmp_path / (name + "\n")).write_bytes(b"")
    assert shards.shard_files(str(tmp_path)) == [name]
