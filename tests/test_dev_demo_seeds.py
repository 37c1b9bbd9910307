"""dev/demo_seeds.py: model labels and the seed summary (mean gains, paired differences)."""
import pytest

from helpers import load_script


def test_labels_default_to_the_directory_name_and_must_differ():
    seeds = load_script("dev/demo_seeds.py")
    assert seeds.labelled(["new=models/en_elmo_small", "old/en_elmo_v1"]) == {
        "new": "models/en_elmo_small", "en_elmo_v1": "old/en_elmo_v1"}
    with pytest.raises(SystemExit, match="used twice"):
        seeds.labelled(["a/en_elmo_small", "b/en_elmo_small"])
    with pytest.raises(SystemExit, match="used twice"):
        seeds.labelled(["base=x"])


def test_summary_gives_mean_gains_and_paired_differences():
    seeds = load_script("dev/demo_seeds.py")
    lines = seeds.summarize([92.0, 92.5, 91.5], {"new": [94.5, 94.0, 94.0], "old": [94.0, 94.5, 93.0]})
    assert lines == [
        "baseline: mean 92.00",
        "new: mean 94.17, gain +2.17",
        "old: mean 93.83, gain +1.83",
        "new - old: +0.33 (sd 0.76; positive in 2 of 3 seeds)",
    ]


def test_the_record_holds_every_seed_and_the_spread_of_the_gain(tiny_model):
    seeds = load_script("dev/demo_seeds.py")
    from pathlib import Path

    from spacy_elmo.bilm.integrity import sha256

    folder = str(Path(tiny_model.weights_path).parent)
    identity = seeds.model_identity(folder)
    assert identity["weights_sha256"] == sha256(tiny_model.weights_path) and identity["lineage_tokens"] is None
    record = seeds.seed_record("ner", [0, 1], [78.0, 79.0], {"new": [84.0, 83.0]}, {"new": identity})
    row = record["models"]["new"]
    assert record["score"] == "ents_f" and record["baseline_mean"] == 78.5
    assert row["gains"] == [6.0, 4.0] and row["gain_mean"] == 5.0 and row["gain_sd"] == pytest.approx(2 ** 0.5)


def test_the_docs_record_merges_the_tasks_with_their_spread():
    seeds = load_script("dev/demo_seeds.py")
    identity = {"name": "en_elmo_small", "weights_sha256": "a" * 64, "lineage_tokens": 10}
    where = {"cpu": "Some CPU", "cpus": 2, "torch": "2.13.0+cpu", "threads": "auto"}
    tagger = seeds.seed_record("tagger", [0, 1, 2], [92.0, 92.5, 91.5], {"en_elmo_small": [94.5, 94.0, 94.0]},
                               {"en_elmo_small": identity}, where)
    ner = seeds.seed_record("ner", [0, 1, 2], [78.0, 79.0, 77.0], {"en_elmo_small": [84.0, 83.0, 84.0]},
                            {"en_elmo_small": identity}, where)
    record = seeds.docs_record([tagger, ner])
    assert record["model"] == identity and record["machine"] == where and record["rows"][0]["seeds"] == [0, 1, 2]
    tag, ent = record["rows"]
    assert tag["component"] == "tagger" and tag["gains"] == [2.5, 1.5, 2.5]
    assert (tag["gain_min"], tag["gain_max"]) == (1.5, 2.5) and tag["gain_sd"] == pytest.approx(0.57735, abs=1e-5)
    assert ent["data"] == "CoNLL-2003, F1" and ent["gain_mean"] == pytest.approx(5.6667, abs=1e-4)
    elsewhere = seeds.seed_record("ner", [0, 1, 2], [78.0, 79.0, 77.0], {"en_elmo_small": [84.0, 83.0, 84.0]},
                                  {"en_elmo_small": identity}, {**where, "cpu": "Other CPU"})
    with pytest.raises(SystemExit, match="differ in machine"):
        seeds.docs_record([tagger, elsewhere])
