"""spacy_elmo.scale without Ray: shard files, the manifest, the reader, the `--ray` CLI options
and the one-line error when Ray is not installed."""
import json
import os
import sys

import h5py
import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.scale import ShardedVectors, cli as scale_cli, manifest, read_line, shards

ARGS = {"model": "m", "layers": "top", "dtype": "float32"}


def items(indices, dim=4):
    rng = numpy.random.default_rng(0)
    return [(i, f"line {i}" if i != 5 else "line 0", rng.standard_normal((i % 3, dim)).astype("float32"))
            for i in indices]


@pytest.fixture
def run_dir(tmp_path):
    """Two shards (lines 0-3 and 4-6, one empty line each) and their manifest."""
    a, b = items(range(4)), items(range(4, 7))
    entries = [shards.write_shard(str(tmp_path), b, ARGS), shards.write_shard(str(tmp_path), a, ARGS)]
    m = manifest.build(entries, ARGS, "m", "top", "float32", 2, 4, "in.txt", expected=7)
    manifest.write(str(tmp_path), m)
    return tmp_path, dict((i, x) for i, _, x in a + b)


def test_shard_layout_is_the_embed_layout(tmp_path):
    entry = shards.write_shard(str(tmp_path), items([9, 3, 4, 7]), ARGS)
    assert entry["file"] == "shard-000000003-000000009.hdf5" and entry["ranges"] == [[3, 4], [7, 7], [9, 9]]
    assert entry["sentences"] == 4 and entry["tokens"] == 0 + 1 + 1 + 0
    with h5py.File(tmp_path / entry["file"], "r") as f:
        assert sorted(f.keys()) == ["3", "4", "7", "9", "sentence_to_index"]
        assert json.loads(f["sentence_to_index"][0])["line 7"] == "7"
        assert json.loads(f.attrs["spacy_elmo"]) == ARGS
    assert os.listdir(tmp_path) == [entry["file"]]  # no temporary left
    with pytest.raises(ValueError, match="line index 3 appears twice"):
        shards.write_shard(str(tmp_path), items([3, 3]), ARGS)


def test_reader_gives_each_line(run_dir):
    d, want = run_dir
    with ShardedVectors(str(d)) as v:
        assert len(v) == 7 and v.indices() == list(range(7)) and 6 in v and 7 not in v and "1" not in v
        for i, x in want.items():
            numpy.testing.assert_array_equal(v[i], x)
        assert v[0].shape == (0, 4)  # an empty line keeps its index
        assert v.sentence_to_index()["line 0"] == "5"  # a repeated text: the last line, across shards
        with pytest.raises(IndexError, match="line 7 is not in"):
            v[7]
    numpy.testing.assert_array_equal(read_line(str(d / "manifest.json"), 4), want[4])
    m = manifest.load(str(d))
    assert [s["file"] for s in m["shards"]] == ["shard-000000000-000000003.hdf5", "shard-000000004-000000006.hdf5"]
    assert (m["sentences"], m["tokens"], m["shape"], m["dtype"]) == (7, 6, "(n, 4)", "float32")


def test_reader_errors(run_dir, tmp_path_factory):
    d, _ = run_dir
    os.remove(d / "shard-000000004-000000006.hdf5")
    with pytest.raises(FileNotFoundError, match="shard .*000000004-000000006.hdf5.* is missing"):
        read_line(str(d), 5)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="no shard manifest"):
        ShardedVectors(str(empty))
    (empty / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a spacy-elmo shard manifest"):
        ShardedVectors(str(empty))


def test_manifest_checks_overlap_and_completeness(tmp_path):
    a = shards.write_shard(str(tmp_path), items(range(3)), ARGS)
    b = shards.write_shard(str(tmp_path), items([2, 3]), ARGS)
    with pytest.raises(ValueError, match="line index 2 is in two shards"):
        manifest.build([a, b], ARGS, "m", "top", "float32", 2, 4, "x")
    with pytest.raises(ValueError, match="lines 0..2 of 5: line 3 is missing"):
        manifest.build([a], ARGS, "m", "top", "float32", 2, 4, "x", expected=5)


def test_complete_shards_sorts_kept_other_and_damaged(tmp_path):
    good = shards.write_shard(str(tmp_path), items([0, 1]), ARGS)
    shards.write_shard(str(tmp_path), items([2]), dict(ARGS, layers="all"))
    (tmp_path / "shard-000000003-000000004.hdf5").write_bytes(b"\x89HDF torn")
    kept, other, damaged = shards.complete_shards(str(tmp_path), ARGS)
    assert kept == [good] and other == ["shard-000000002-000000002.hdf5"]
    assert damaged == ["shard-000000003-000000004.hdf5"]


def test_optional_ray_address():
    assert scale_cli.optional_value(["embed", "a", "o", "--ray"]) == ["embed", "a", "o", "--ray", "local"]
    assert scale_cli.optional_value(["embed", "a", "o", "--ray", "--quiet"])[4] == "local"
    assert scale_cli.optional_value(["embed", "a", "o", "--ray", "auto"]) == ["embed", "a", "o", "--ray", "auto"]


def test_pool_options_need_ray(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    result = CliRunner().invoke(app, ["embed", str(src), str(tmp_path / "o"), "--actors", "2"])
    assert result.exit_code == 2 and "need --ray" in result.output and len(result.output.strip().splitlines()) == 1


def test_without_ray_one_line_error_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    result = CliRunner().invoke(app, ["embed", str(src), str(tmp_path / "o"), "--ray", "local", "--quiet"])
    assert result.exit_code == 2, result.output
    assert "pip install 'spacy-elmo[scale]'" in result.output and len(result.output.strip().splitlines()) == 1


def test_damaged_shards_and_manifests_are_elmo_errors(run_dir):
    """A shard that lost a line's dataset, and a manifest of another format, are ElmoDataErrors
    (an ElmoError and a ValueError) whose str() is the message."""
    from spacy_elmo.errors import ElmoDataError, ElmoError

    d, _ = run_dir
    shard = d / "shard-000000004-000000006.hdf5"
    with h5py.File(shard, "a") as f:
        del f["5"]
    with pytest.raises(ElmoDataError) as err:
        read_line(str(d), 5)
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    assert str(err.value) == f"{shard} has no dataset for line 5 (shard changed after the manifest?)"
    (d / "manifest.json").write_text('{"format": "other"}')
    with pytest.raises(ElmoDataError, match="not a spacy-elmo shard manifest") as err:
        ShardedVectors(str(d))
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
