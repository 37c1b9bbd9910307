"""dev/allennlp_stateful.py writes docs/results/allennlp_stateful.json: rerun, it gives the
record's numbers (AllenNLP's stored second-call differences exactly, their reproduction by
``Elmo(stateful=True)`` within the AllenNLP tests' tolerance) and the same models."""
import json
from pathlib import Path

import pytest

from allennlp_reference import TOL
from helpers import REPO, load_script

RECORD = REPO / "docs" / "results" / "allennlp_stateful.json"


@pytest.fixture()
def script(fixture_dir, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_SHARED", str(Path(fixture_dir).parents[1]))
    return load_script("dev/allennlp_stateful.py")


def test_a_rerun_gives_the_record(script, tmp_path):
    assert script.main(["--out", str(tmp_path / "r.json")]) == 0
    fresh = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    kept = json.loads(RECORD.read_text(encoding="utf-8"))
    assert fresh["model"] == kept["model"] and fresh["command"] == kept["command"]
    assert set(fresh["elmo"]) == set(kept["elmo"]) == {"tf", "random"}
    for model, row in fresh["elmo"].items():
        assert row["allennlp"] == kept["elmo"][model]["allennlp"] > 100 * TOL
        assert abs(row["reproduced"] - row["allennlp"]) <= TOL and row["from_allennlp"] <= TOL


def test_missing_reference_data_is_named(script, monkeypatch, tmp_path):
    monkeypatch.setattr(script, "DATA", tmp_path)
    with pytest.raises(SystemExit, match=r"reference.npz: not found"):
        script.main([])
