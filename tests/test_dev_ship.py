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


def _command(*args):
    return ["python", "-m", "spacy_elmo", "pretrain", "/root/runs/r8", *args]


def test_stage_commands_keep_what_sets_the_training_with_relative_paths():
    """A resume that only continues an interrupted run, and the threads of an invocation, are left
    out; a changed setting or --from-stable is kept; the run path is relative."""
    ship = _ship()
    commands = [{"command": _command("--config", "c.cfg", "--training.threads", "1", "--training.max_steps", "300"),
                 "at_step": 0},
                {"command": _command("--resume", "--training.threads=2"), "at_step": 50},
                {"command": _command("--resume", "--training.max_steps", "300"), "at_step": 90},
                {"command": _command("--resume", "--training.max_steps", "250"), "at_step": 120},
                {"command": _command("--resume", "--from-stable", "--training.max_steps", "250"), "at_step": 240}]
    assert ship.stage_commands(commands) == [
        {"at_step": 0, "command": "python -m spacy_elmo pretrain training/r8 --config c.cfg --training.max_steps 300"},
        {"at_step": 120, "command": "python -m spacy_elmo pretrain training/r8 --resume --training.max_steps 250"},
        {"at_step": 240, "command": "python -m spacy_elmo pretrain training/r8 --resume --from-stable "
                                    "--training.max_steps 250"}]


def test_user_meta_is_the_short_form_of_the_full_record():
    ship = _ship()
    first = {"training": {"steps": 10, "tokens_seen": 100, "commands": [{"command": _command("--config", "a.cfg")}]},
             "history": [{"step": 5, "perplexity": 9.0}]}
    full = {"name": "m", "options": {"lstm": {}}, "corpus": {"train_tokens": 7},
            "training": {"steps": 4, "tokens_seen": 40, "lineage_tokens": 140, "tokens_per_second": 3.0,
                         "commands": [{"command": _command("--config", "b.cfg"),
                                       "path": {"device": "cpu", "widened": {"projection_dim": [8, 16]}}}]},
            "heldout": {"perplexity": 8.0, "full_heldout": True}, "history": [{"step": 2}],
            "evaluation": {"senses": {"blind_1nn_mean": 0.5}}, "init_from": first}
    short = ship.user_meta(full, "m")
    assert not {"history", "init_from"} & set(short) and "/root" not in json.dumps(short)
    assert short["training"]["lineage_tokens"] == 140 and short["heldout"] == {"perplexity": 8.0}
    assert [(s["steps"], s["tokens_seen"], s.get("widened")) for s in short["lineage"]] == [
        (10, 100, None), (4, 40, {"projection_dim": [8, 16]})]
    assert short["lineage"][0]["commands"][0]["command"].endswith("pretrain training/r8 --config a.cfg")
    assert short["record"].startswith("dev/models/m.json")


def test_a_shipped_model_reads_its_full_record_from_dev(tmp_path, monkeypatch):
    """full_meta: dev/models/NAME.json for a folder of the package's models, else its meta.json."""
    ship = _ship()
    models, records = tmp_path / "models", tmp_path / "records"
    (models / "m").mkdir(parents=True)
    records.mkdir()
    (models / "m" / "meta.json").write_text(json.dumps({"name": "short"}))
    (records / "m.json").write_text(json.dumps({"name": "full"}))
    monkeypatch.setattr(ship, "MODELS", models)
    monkeypatch.setattr(ship, "RECORDS", records)
    assert ship.full_meta(models / "m")["name"] == "full"
    other = tmp_path / "elsewhere" / "m"
    other.mkdir(parents=True)
    (other / "meta.json").write_text(json.dumps({"name": "run"}))
    assert ship.full_meta(other)["name"] == "run"
