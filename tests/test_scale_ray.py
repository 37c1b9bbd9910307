"""Embedding on Ray Data, on a local cluster (ray.init(num_cpus=2), no network): per line, the
shards equal the single-process `embed` output exactly; a killed actor and a re-run after an
interruption still give the complete, equal result. Skipped without ray[data]."""
import json
import os
import shutil

import h5py
import numpy
import pytest
from typer.testing import CliRunner

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from spacy_elmo.__main__ import app  # noqa: E402
from spacy_elmo.bilm import BiLM  # noqa: E402
from spacy_elmo.embed import embed_file  # noqa: E402
from spacy_elmo.errors import ElmoConfigError, ElmoDataError  # noqa: E402
from spacy_elmo.scale import ShardedVectors, embed_dataset, embed_file_ray  # noqa: E402
from spacy_elmo.scale.actor import KILL_ENV  # noqa: E402

TINY = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 2], [2, 3]], "n_highway": 1}}
LINES = [f"Sentence {i}: the river bank, " + "word " * (i % 5) for i in range(36)] + ["", "Hi", "Sentence 3: again"]
SMALL = 0.002  # MB per group: ~20 tokens of the tiny model, so ~12 groups (shards)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster with 2 CPUs (two actors), no dashboard; the environment is restored
    afterwards so the rest of the suite does not see Ray's variables."""
    env = dict(os.environ)
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()
    os.environ.clear()
    os.environ.update(env)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(model dir, input file, {layers: serial embed_file output}) for the layer choices used."""
    d = tmp_path_factory.mktemp("scale")
    BiLM(TINY).save(d / "model")
    src = d / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    refs = {}
    for spec, dtype in (("all", "float32"), ("top", "float16")):
        refs[spec] = str(d / f"ref-{spec}.hdf5")
        embed_file(str(src), refs[spec], model=str(d / "model"), layer_spec=spec, dtype=dtype, group_mb=SMALL,
                   progress=False)
    return str(d / "model"), str(src), refs


def assert_same_as_serial(ref: str, out: str) -> None:
    """Every line's array bitwise equal to the serial file's, and the same sentence_to_index."""
    with h5py.File(ref, "r") as f, ShardedVectors(out) as v:
        want = json.loads(f["sentence_to_index"][0])
        assert len(v) == len(want_keys := [k for k in f if k != "sentence_to_index"]) == len(LINES)
        for k in want_keys:
            got = v[int(k)]
            assert got.dtype == f[k].dtype and got.shape == f[k].shape
            numpy.testing.assert_array_equal(got, f[k][()])
        assert v.sentence_to_index() == want
    assert not [n for n in os.listdir(out) if ".tmp" in n]


def test_cli_ray_equals_serial_embed(cluster, setup, tmp_path):
    model, src, refs = setup
    out = str(tmp_path / "out")
    argv = ["embed", src, out, "--model", model, "--group-mb", str(SMALL), "--ray", "local", "--actors", "2", "--quiet"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert f"{len(LINES)} sentences" in result.output and "by 2 actors" in result.output
    assert_same_as_serial(refs["all"], out)
    m = json.load(open(os.path.join(out, "manifest.json")))
    assert (m["model"], m["layers"], m["dtype"], m["num_layers"], m["dim"]) == (model, "all", "float32", 2, 8)
    assert m["sentences"] == len(LINES) and len(m["shards"]) > 6 and m["shape"] == "(3, n, 8)"
    assert [s["first"] for s in m["shards"]] == sorted(s["first"] for s in m["shards"])
    with h5py.File(refs["all"], "r") as f:
        assert m["tokens"] == sum(f[k].shape[1] for k in f if k != "sentence_to_index")
    again = CliRunner().invoke(app, argv)
    assert again.exit_code == 0 and "already complete" in again.output
    other = CliRunner().invoke(app, argv[:-1] + ["--layers", "top", "--quiet"])
    assert other.exit_code == 2 and "other arguments: pass --overwrite" in other.output


def test_killed_actor_is_retried_and_result_is_complete(cluster, setup, tmp_path, monkeypatch):
    model, src, refs = setup
    marker = tmp_path / "killed"
    monkeypatch.setenv(KILL_ENV, str(marker))
    out = str(tmp_path / "out")
    s = embed_file_ray(src, out, model=model, layer_spec="top", dtype="float16", group_mb=SMALL, actors=2,
                       progress=False)
    assert marker.exists()  # one actor died mid-write (after at least one shard existed)
    assert s["sentences"] == s["embedded"] == len(LINES)
    assert_same_as_serial(refs["top"], out)


def test_rerun_skips_complete_shards(cluster, setup, tmp_path):
    model, src, refs = setup
    out = str(tmp_path / "out")
    kw = dict(model=model, group_mb=SMALL, actors=2, progress=False)
    embed_file_ray(src, out, **kw)
    m = json.load(open(os.path.join(out, "manifest.json")))
    lost, damaged = m["shards"][1], m["shards"][-1]
    os.remove(os.path.join(out, "manifest.json"))  # as if the run had been killed
    os.remove(os.path.join(out, lost["file"]))
    with open(os.path.join(out, damaged["file"]), "r+b") as f:
        f.truncate(100)
    s = embed_file_ray(src, out, **kw)
    assert s["embedded"] == lost["sentences"] + damaged["sentences"] and s["sentences"] == len(LINES)
    assert_same_as_serial(refs["all"], out)


def test_embed_dataset_equals_serial_and_resumes(cluster, setup, tmp_path):
    model, _, refs = setup
    ds = ray.data.from_items([{"index": i, "text": t} for i, t in enumerate(LINES)], override_num_blocks=4)
    out = str(tmp_path / "out")
    m = embed_dataset(ds, out, model=model, rows_per_shard=7, actors=2, progress=False)
    assert m["sentences"] == len(LINES) and m["source"] == "ray.data.Dataset"
    assert_same_as_serial(refs["all"], out)  # text tokenized in the actors with spacy.blank("en")
    os.remove(os.path.join(out, "manifest.json"))
    os.remove(os.path.join(out, m["shards"][0]["file"]))
    m2 = embed_dataset(ds, out, model=model, rows_per_shard=7, actors=1, progress=False)
    assert m2["sentences"] == len(LINES)
    assert_same_as_serial(refs["all"], out)


def test_actor_tokens_column_in_process(setup, tmp_path):
    """The actor class alone (no Ray): a batch of rows with a tokens column is one shard."""
    import pyarrow
    import spacy

    from spacy_elmo.scale.actor import ShardEmbedder

    model, _, refs = setup
    tok = spacy.blank("en").tokenizer
    rows = [{"index": i, "tokens": [t.text for t in tok(line.strip()) if not t.is_space]}
            for i, line in enumerate(LINES)]
    actor = ShardEmbedder(model, "all", "float32", str(tmp_path), {"x": 1}, mode="rows",
                          columns=("index", "text", "tokens"))
    out = actor(pyarrow.Table.from_pylist(rows[::-1])).to_pylist()
    assert len(out) == 1 and out[0]["file"] == f"shard-000000000-{len(LINES) - 1:09d}.hdf5"
    with h5py.File(refs["all"], "r") as ref, h5py.File(tmp_path / out[0]["file"], "r") as got:
        for i in range(len(LINES)):
            numpy.testing.assert_array_equal(got[str(i)][()], ref[str(i)][()])
    with pytest.raises(TypeError, match="line 0: column 'tokens' must be a list of str"):
        actor(pyarrow.Table.from_pylist([{"index": 0, "tokens": [1, 2]}]))


def test_embed_dataset_errors(cluster, setup, tmp_path):
    model = setup[0]
    ds = ray.data.from_items([{"line": 0, "text": "a"}])
    with pytest.raises(ElmoDataError, match="no column 'index'"):
        embed_dataset(ds, str(tmp_path / "o"), model=model)
    with pytest.raises(ElmoConfigError, match="--layers 'bottom'"):
        embed_dataset(ds, str(tmp_path / "o"), model=model, layers="bottom")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ElmoConfigError, match="is a file"):
        embed_dataset(ray.data.from_items([{"index": 0, "text": "a"}]), str(tmp_path / "file"), model=model)
    bad = ray.data.from_items([{"index": 0, "text": "fine"}, {"index": 1, "text": None}])
    with pytest.raises(ElmoDataError,
                       match="a block failed: ElmoTypeError: line 1: column 'text' must be a str, got NoneType"):
        embed_dataset(bad, str(tmp_path / "b"), model=model, actors=1, progress=False)
    shutil.rmtree(tmp_path / "b", ignore_errors=True)
