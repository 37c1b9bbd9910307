"""dev/compute_wall.py and its record dev/default_model_candidates.json."""
import json
import math

import pytest

from helpers import REPO, load_script


def _wall():
    return load_script("dev/compute_wall.py")


def test_power_law_fit_recovers_an_exact_power_law():
    wall = _wall()
    tokens = [1e7, 3e7, 1e8]
    ppl = [math.exp(6.0) * t ** -0.3 for t in tokens]
    a, b = wall.power_law_fit(tokens, ppl)
    assert a == pytest.approx(6.0) and b == pytest.approx(-0.3)
    assert wall.tokens_for(ppl[1], (a, b)) == pytest.approx(3e7, rel=1e-9)
    assert wall.tokens_for(50.0, (a, 0.1)) == math.inf  # a curve that does not fall never gets there


def test_slope_per_doubling_is_exact_on_a_line_and_brackets_noisy_data():
    wall = _wall()
    tokens = [1e7, 2e7, 4e7, 8e7]
    slope, lo, hi, intercept = wall.slope_per_doubling(tokens, [50 + 0.5 * math.log2(t) for t in tokens])
    assert (slope, intercept) == (pytest.approx(0.5), pytest.approx(50.0))
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    slope, lo, hi, _ = wall.slope_per_doubling(tokens, [56.0, 57.0, 56.0, 57.0])
    assert lo < slope < hi and slope == pytest.approx(0.2) and hi - slope == pytest.approx(slope - lo)


def test_binomial_halfwidth():
    assert _wall().binomial_halfwidth(50.0, 100) == pytest.approx(9.8)


def test_load_record_names_a_candidate_without_a_required_key(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"candidates": [{"run": 1, "lineage": ["a"], "tokens": 1, "wic_dev": {}}]}))
    with pytest.raises(ValueError, match="candidate 0 lacks \\['perplexity'\\]"):
        _wall().load_record(str(path))
    path.write_text("{}")
    with pytest.raises(ValueError, match="no 'candidates' list"):
        _wall().load_record(str(path))


def test_main_refuses_a_bad_record_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit, match=r"^compute_wall.py: .*No such file.*missing.json"):
        _wall().main([str(tmp_path / "missing.json"), str(tmp_path / "out.png")])


def _record():
    return _wall().load_record(str(REPO / "dev" / "default_model_candidates.json"))


def test_the_record_matches_the_shipped_model():
    """The last released candidate is the model in the package: same tokens, same perplexity."""
    meta = json.loads((REPO / "spacy_elmo" / "models" / "en_elmo_small" / "meta.json").read_text())
    shipped = [c for c in _record()["candidates"] if c["released"]][-1]
    assert shipped["tokens"] == meta["training"]["lineage_tokens"] == sum(s["tokens_seen"] for s in meta["lineage"])
    assert shipped["perplexity"] == round(meta["heldout"]["perplexity"], 2)
    assert shipped["projection_dim"] == meta["options"]["lstm"]["projection_dim"]


def test_every_wic_number_is_an_accuracy_over_the_pairs():
    """A typo would show: not every 0.1 is k/638 (or k/5,428) rounded."""
    record = _record()
    for c in record["candidates"]:
        for key, n in (("wic_dev", record["wic_dev_pairs"]), ("wic_train_cv", record["wic_train_pairs"])):
            for view, acc in (c.get(key) or {}).items():
                if acc is not None:
                    assert any(round(100 * k / n, 1) == acc for k in range(n + 1)), (c["run"], c["step"], key, view)


def test_main_prints_the_fits_and_writes_the_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "wall.png"
    _wall().main([str(REPO / "dev" / "default_model_candidates.json"), str(out)])
    printed = capsys.readouterr().out
    assert "runs 1-4: perplexity ~ tokens^-0." in printed and "WiC dev, top layer:" in printed
    assert out.stat().st_size > 10_000


def test_report_extrapolates_wic_only_where_the_trend_is_clear():
    """No "57.0 at N tokens" from a slope whose interval holds 0 (it would be any number at all)."""
    tokens = [1e7, 2e7, 4e7, 8e7]
    cands = [{"run": 1, "lineage": ["a"], "tokens": t, "projection_dim": 256, "perplexity": 100.0 / (k + 1),
              "wic_dev": {"layer_2": 55.0 + 0.5 * k, "average": [56.0, 57.0, 56.0, 57.0][k]}}
             for k, t in enumerate(tokens)]
    top, mean = _wall().report({"candidates": cands}, 2600.0)[-2:]
    assert top.startswith("WiC dev, top layer: +0.50") and "57.0 at 160M tokens" in top
    assert mean.startswith("WiC dev, layer average: +0.20") and "no trend (the interval holds 0)" in mean
    for k, c in enumerate(cands):
        c["wic_dev"]["average"] = 57.0 - 0.5 * k - [0.0, 0.1, 0.0, 0.1][k]
    mean = _wall().report({"candidates": cands}, 2600.0)[-1]
    assert "falling (the whole interval is below 0)" in mean and "no trend" not in mean


def _released(*points):
    return {"train_tokens_per_pass": 10_000_000, "candidates": [
        {"run": i, "lineage": ["a"], "tokens": t, "perplexity": p, "wic_dev": {}, "released": True}
        for i, (t, p) in enumerate(points)]}


def test_stretches_give_passes_and_compounded_gain_per_10m():
    wall = _wall()
    rows = wall.stretches(_released((10e6, 100.0), (30e6, 81.0)))
    assert rows[0]["gain_per_10m"] is None and rows[1]["passes"] == pytest.approx(3.0)
    assert rows[1]["gain_per_10m"] == pytest.approx(0.1)  # 100 -> 90 -> 81 over two 10M steps


def test_stop_rule_fires_on_three_small_stretches_or_a_memorising_gap():
    wall = _wall()
    small = [(10e6, 100.0), (30e6, 99.5), (50e6, 99.0), (70e6, 98.5)]  # ~0.5% per 20M each
    assert wall.stop_rule(wall.stretches(_released(*small)))[0]
    assert not wall.stop_rule(wall.stretches(_released(*small[:3])))[0]  # only two stretches so far
    record = _released((10e6, 100.0), (30e6, 80.0))
    assert not wall.stop_rule(wall.stretches(record))[0]
    record["candidates"][1]["train_heldout_ratio"] = 0.85
    fired, reason = wall.stop_rule(wall.stretches(record))
    assert fired and "0.850" in reason


def test_a_stretch_that_ended_unreleased_counts_from_the_release_it_started_from():
    wall = _wall()
    record = _released((10e6, 100.0), (30e6, 81.0))
    record["candidates"].append({**record["candidates"][1], "run": 9, "released": False, "stretch_from": 1,
                                 "tokens": 50e6, "perplexity": 81.0 * 0.99})
    rows = wall.stretches(record)
    assert [(r["run"], r["released"]) for r in rows] == [(0, True), (1, True), (9, False)]
    assert rows[2]["gain_per_10m"] == pytest.approx(1 - 0.99 ** 0.5)  # 1% over its own 20M tokens
    assert any("stretch run 9 (not released)" in line for line in wall.wall_lines(record))
    small = _released((10e6, 100.0), (30e6, 99.5))
    for run, tokens in ((3, 50e6), (4, 50e6)):  # two more small stretches from the same release
        small["candidates"].append({**small["candidates"][1], "run": run, "released": False, "stretch_from": 1,
                                    "tokens": tokens, "perplexity": 99.0})
    assert wall.stop_rule(wall.stretches(small))[0]
    small["candidates"][-1]["stretch_from"] = 7
    with pytest.raises(ValueError, match="stretch_from = 7 names no earlier stretch end"):
        wall.stretches(small)


def test_a_stretch_continuing_an_unreleased_stable_phase_counts_from_that_stretch():
    """Run 4 continued run 3's stable phase: its gain is over its own tokens, from run 3's end."""
    wall = _wall()
    record = _released((10e6, 100.0), (30e6, 99.5))
    record["candidates"].append({**record["candidates"][1], "run": 3, "released": False, "stretch_from": 1,
                                 "tokens": 50e6, "perplexity": 99.0})
    record["candidates"].append({**record["candidates"][1], "run": 4, "released": False, "stretch_from": 3,
                                 "tokens": 60e6, "perplexity": 99.0 * 0.98})
    rows = wall.stretches(record)
    assert [r["run"] for r in rows] == [0, 1, 3, 4]
    assert rows[3]["gain_per_10m"] == pytest.approx(0.02)  # 2% over its own 10M tokens
    assert (rows[2]["start_tokens"], rows[2]["rewarmed"]) == (30e6, True)  # from release 1
    assert (rows[3]["start_tokens"], rows[3]["rewarmed"]) == (50e6, False)  # run 3's stable phase
    assert not wall.stop_rule(rows)[0]  # 2% per 10M is no small stretch
    record["candidates"][-1]["stretch_from"] = 4  # itself: no earlier end
    with pytest.raises(ValueError, match="stretch_from = 4 names no earlier stretch end"):
        wall.stretches(record)


def test_the_record_gives_the_shipped_lineage_its_passes():
    wall = _wall()
    record = wall.load_record(str(REPO / "dev" / "default_model_candidates.json"))
    rows = wall.stretches(record)
    assert [r["run"] for r in rows if r["released"]] == [1, 7, 8]
    assert rows[2]["passes"] == pytest.approx(135983076 / 29808129)
    later = rows[3:]  # the stretches after the shipped release, each from an earlier stretch end
    assert later and not any(r["released"] for r in later)
    assert all(r["start_tokens"] in [e["tokens"] for e in rows[2:k + 3]] for k, r in enumerate(later))
    assert all(r["passes"] == pytest.approx(r["tokens"] / 29808129) for r in later)
