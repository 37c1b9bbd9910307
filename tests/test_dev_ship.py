"""dev/ship_default_model.py: the warm-start lineage through run directories, float16 storage."""
import json

import h5py
import numpy

from helpers import load_script


def _ship():
    return load_script("dev/ship_default_model.py")


def _run(root, name, tokens, init_from=None):
    run = root / name
    (run / "model").mkdir(parents=True)
    (run / "config.cfg").write_text(f"[training]\ninit_from = {json.dumps(init_from) if init_from else 'null'}\n")
    (run / "model" / "meta.json").write_text(json.dumps({"name": name, "training": {"tokens_seen": tokens}}))
    return run


def test_lineage_follows_run_directories_back_to_a_release(tmp_path, monkeypatch):
    ship = _ship()
    monkeypatch.setattr(ship, "_wic", lambda model_dir: {"layer_2": {"dev_accuracy": 55.0}})
    release = tmp_path / "models" / "m"
    release.mkdir(parents=True)
    (release / "meta.json").write_text(json.dumps({"name": "release", "training": {"tokens_seen": 100}}))
    run2 = _run(tmp_path, "run2", 40, str(release))
    run3 = _run(tmp_path, "run3", 7, str(run2 / "model"))
    meta = ship._lineage(run3, release)
    assert meta["name"] == "run2" and meta["init_from"]["name"] == "release"
    assert meta["training"]["tokens_seen_total"] == 140
    assert "init_from" not in meta["init_from"]  # the release is where the chain ends
    assert meta["evaluation"]["wic"]["layer_2"]["dev_accuracy"] == 55.0  # measured where missing
    assert ship._lineage(_run(tmp_path, "scratch", 5), release) == {}


def test_float16_storage_keeps_names_attributes_and_rounded_values(tmp_path):
    ship = _ship()
    path = tmp_path / "w.hdf5"
    rng = numpy.random.default_rng(0)
    values = {"CNN/W_cnn_0": rng.normal(size=(1, 2, 3, 4)).astype("float32"),
              "char_embed": rng.normal(size=(5, 2)).astype("float32")}
    with h5py.File(path, "w") as f:
        for k, v in values.items():
            f.create_dataset(k, data=v)
        f.attrs["cutoffs"] = "[1, 2]"
    ship._to_float16(path)
    with h5py.File(path, "r") as f:
        assert f.attrs["cutoffs"] == "[1, 2]"
        for k, v in values.items():
            assert f[k].dtype == numpy.float16
            numpy.testing.assert_array_equal(f[k][...], v.astype(numpy.float16))
    assert not (tmp_path / "w.hdf5.tmp").exists()


def test_speed_is_kept_only_while_the_shape_is_unchanged():
    ship = _ship()
    speed = {"tokens_per_s": 6234, "bytes_per_token": 6144}
    previous = {"options": {"lstm": {"projection_dim": 256}}, "evaluation": {"speed": speed}}
    same = {"options": {"lstm": {"projection_dim": 256}}, "evaluation": {}}
    ship._carry_speed(same, previous)
    assert same["evaluation"]["speed"] == speed
    wider = {"options": {"lstm": {"projection_dim": 512}}, "evaluation": {}}
    ship._carry_speed(wider, previous)
    assert "speed" not in wider["evaluation"]
    scratch = {"options": {}, "evaluation": {}}
    ship._carry_speed(scratch, {})  # trained from scratch: no previous release
    assert "speed" not in scratch["evaluation"]
