"""dev/learning_curve.py: the curve of a run not shipped yet, through its warm-start lineage."""
import json
import sys

import pytest

from helpers import load_script


def _history(steps, tokens_per_step, start_ppl):
    return [{"step": s, "tokens_seen": s * tokens_per_step, "perplexity": start_ppl - s / 100} for s in steps]


def _release(root):
    release = root / "models" / "m"
    release.mkdir(parents=True)
    meta = {"name": "release", "training": {"tokens_seen": 1000},
            "history": _history([100, 200], 5, 90.0),
            "evaluation": {"wic": {"layer_2": {"dev_accuracy": 55.0}, "average": {"dev_accuracy": 54.0}}}}
    (release / "meta.json").write_text(json.dumps(meta))
    return release


def _run(root, release):
    run = root / "run"
    (run / "model").mkdir(parents=True)
    (run / "config.cfg").write_text(f"[training]\ninit_from = {json.dumps(str(release))}\n")
    meta = {"name": "run", "training": {"tokens_seen": 300}, "history": _history([10, 20, 30], 10, 80.0)}
    (run / "model" / "meta.json").write_text(json.dumps(meta))
    return run


@pytest.fixture
def curve(monkeypatch):
    module = load_script("dev/learning_curve.py")
    ship = load_script("dev/ship_default_model.py")
    monkeypatch.setitem(sys.modules, "ship_default_model", ship)  # what load_meta imports
    return module, ship


def test_a_run_directory_is_followed_back_to_its_release_without_measuring(tmp_path, curve, monkeypatch):
    module, ship = curve
    monkeypatch.setattr(ship, "_wic", lambda model_dir: pytest.fail("WiC measured without --wic"))
    run = _run(tmp_path, _release(tmp_path))
    for where in (run, run / "model"):
        chain = module.lineage(module.load_meta(str(where)))
        assert [(node["name"], offset) for node, offset in chain] == [("release", 0), ("run", 1000)]
    out = tmp_path / "curve.png"
    module.main(str(run), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_wic_is_measured_only_where_missing(tmp_path, curve, monkeypatch):
    module, ship = curve
    measured = []
    monkeypatch.setattr(ship, "_wic", lambda model_dir: measured.append(model_dir.parent.name) or
                        {"layer_2": {"dev_accuracy": 57.0}, "average": {"dev_accuracy": 56.0}})
    meta = module.load_meta(str(_run(tmp_path, _release(tmp_path))), measure_wic=True)
    assert measured == ["run"]
    assert meta["evaluation"]["wic"]["layer_2"]["dev_accuracy"] == 57.0
    assert meta["init_from"]["evaluation"]["wic"]["layer_2"]["dev_accuracy"] == 55.0


def test_a_folder_without_meta_is_refused_in_one_line(tmp_path, curve):
    module, _ = curve
    with pytest.raises(SystemExit, match="no meta.json"):
        module.load_meta(str(tmp_path))


def test_learning_curve_follows_the_warm_start_lineage(tmp_path):
    """dev/learning_curve.py: tokens of earlier runs offset later ones; the PNG is written."""
    lc = load_script("dev/learning_curve.py")
    first = {"training": {"tokens_seen": 100}, "history": [{"tokens_seen": 50, "perplexity": 9.0}],
             "evaluation": {"wic": {"layer_0": {"dev_accuracy": 50.0}, "layer_2": {"dev_accuracy": 55.0},
                                    "average": {"dev_accuracy": 54.0}}}}
    second = {"name": "m", "training": {"tokens_seen": 40}, "history": [{"tokens_seen": 20, "perplexity": 8.0}],
              "init_from": first}
    chain = lc.lineage(second)
    assert [offset for _, offset in chain] == [0, 100]
    assert chain[-1][0] is second
    (tmp_path / "meta.json").write_text(json.dumps(second))
    out = tmp_path / "curve.png"
    lc.main(str(tmp_path), str(out))
    assert out.stat().st_size > 1000
