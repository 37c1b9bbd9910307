"""spacy_elmo.probe.wic (also dev/wic.py's functions): the WiC reader, the threshold tuning, the
per-layer scores, the comparison of two models and its table."""
import numpy
import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.probe import wic


def _write(tmp_path, split, rows, gold):
    (tmp_path / f"{split}.data.txt").write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / f"{split}.gold.txt").write_text("".join(g + "\n" for g in gold), encoding="utf-8")


ROWS = [
    ("bank", "N", "4-1", "We sat by the bank .", "The bank raised rates ."),
    ("bank", "N", "1-4", "The bank raised rates .", "She works at the bank ."),
    ("plant", "N", "1-1", "The plant grows .", "The plant closed ."),
    ("run", "V", "1-2", "They run fast .", "We will run home ."),
]


def test_tune_threshold_finds_the_best_cut():
    cos = numpy.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    gold = numpy.array([False, False, True, False, True, True])
    threshold, acc = wic.tune_threshold(cos, gold)
    assert acc == pytest.approx(5 / 6)
    assert ((cos > threshold) == gold).mean() == pytest.approx(acc)
    assert 0.2 < threshold < 0.3 or 0.6 < threshold < 0.7
    # all the same label: a threshold outside the range
    threshold, acc = wic.tune_threshold(cos, numpy.ones(6, dtype=bool))
    assert acc == 1.0 and threshold < cos.min()


def test_read_split_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.data.txt"):
        wic.read_split(str(tmp_path), "train")
    _write(tmp_path, "train", [("bank", "N", "9-1", "By the bank .", "The bank .")], ["T"])
    with pytest.raises(ValueError, match=r"train.data.txt:1: target index out of range"):
        wic.read_split(str(tmp_path), "train")
    _write(tmp_path, "train", ROWS, ["T", "F"])
    with pytest.raises(ValueError, match="2 labels for 4 pairs"):
        wic.read_split(str(tmp_path), "train")
    (tmp_path / "train.data.txt").write_text("bank\tN\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected 5 tab-separated fields"):
        wic.read_split(str(tmp_path), "train")


def test_scores_per_layer_with_a_real_bilm(tmp_path, tiny_model):
    """Layer 0 (char CNN) is context-free: the same word in two sentences has cosine 1 there;
    every layer and the average get a train-tuned threshold and a dev accuracy."""
    _write(tmp_path, "train", ROWS, ["F", "T", "F", "T"])
    _write(tmp_path, "dev", ROWS[::-1], ["T", "F", "T", "F"])
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    pairs, _ = wic.read_split(str(tmp_path), "train")
    cos = wic.pair_cosines(bilm, pairs)
    assert set(cos) == {"layer_0", "layer_1", "layer_2", "average"}
    numpy.testing.assert_allclose(cos["layer_0"], 1.0, atol=1e-6)
    assert (cos["layer_2"] < 1 - 1e-4).all()  # the biLSTM layers see the context
    scores = wic.wic_scores(bilm, str(tmp_path))
    for view in ("layer_0", "layer_1", "layer_2", "average"):
        assert 0 <= scores[view]["dev_accuracy"] <= 100
        assert scores[view]["train_accuracy"] >= 50  # the tuned threshold is at least the majority


def test_against_another_model_with_paired_intervals(tmp_path, tiny_model):
    """Two models compared: per view, both dev accuracies and their difference; against itself the
    difference is exactly 0 with a [0, 0] interval; against another model it is a minus b; the
    table has a line per view."""
    from helpers import write_tiny_model

    _write(tmp_path, "train", ROWS, ["F", "T", "F", "T"])
    _write(tmp_path, "dev", ROWS[::-1] * 3, ["T", "F", "T", "F"] * 3)
    other = write_tiny_model(tmp_path / "other", seed=99)
    a_scores = wic.wic_scores(BiLM.from_files(tiny_model.options_path, tiny_model.weights_path), str(tmp_path),
                              items=True)
    b_scores = wic.wic_scores(BiLM.from_files(other.options_path, other.weights_path), str(tmp_path), items=True)
    same = wic.compare(a_scores, a_scores)
    assert set(same) == {"layer_0", "layer_1", "layer_2", "average"}
    for d in same.values():
        assert d["a"] == d["b"] and (d["difference"], d["low"], d["high"]) == (0.0, 0.0, 0.0)
        cv = d["train_cv"]
        assert cv["a"] == cv["b"] and (cv["difference"], cv["low"], cv["high"]) == (0.0, 0.0, 0.0)
    diff = wic.compare(a_scores, b_scores)
    for view, d in diff.items():
        assert d["b"] == pytest.approx(b_scores[view]["dev_accuracy"])
        assert d["train_cv"]["b"] == pytest.approx(b_scores[view]["train_cv_accuracy"])
        assert d["difference"] == pytest.approx(d["a"] - d["b"])
    table = wic.format_comparison(diff, "a-model", "b-model")
    assert "paired-bootstrap" in table and len(table.strip().splitlines()) == 2 + len(diff)
    first = diff["layer_0"]
    assert table.splitlines()[2].split()[:3] == ["layer_0", f"{first['a']:.1f}", f"{first['b']:.1f}"]
    plain = wic.format_scores(a_scores, "a-model", tmp_path)
    assert len(plain.splitlines()) == 2 + len(a_scores) and str(tmp_path) in plain.splitlines()[0]


def test_compare_is_a_minus_b_per_view():
    """compare(): a minus b in points, from each model's own per-pair correctness (the random
    tiny models above score alike, so the direction is checked here on known items)."""
    a = {"layer_2": {"dev_accuracy": 75.0, "correct": numpy.array([True, True, True, False] * 10)},
         "average": {"dev_accuracy": 50.0, "correct": numpy.array([True, False] * 20)}}
    b = {"layer_2": {"dev_accuracy": 25.0, "correct": numpy.array([False, False, True, False] * 10)},
         "average": {"dev_accuracy": 50.0, "correct": numpy.array([True, False] * 20)}, "layer_1": a["layer_2"]}
    diff = wic.compare(a, b)
    assert set(diff) == {"layer_2", "average"}  # only the views both have
    assert (diff["layer_2"]["a"], diff["layer_2"]["b"]) == (75.0, 25.0)
    top = diff["layer_2"]
    assert top["difference"] == pytest.approx(50.0) and 0 < top["low"] <= 50.0 <= top["high"]
    assert (diff["average"]["difference"], diff["average"]["low"], diff["average"]["high"]) == (0.0, 0.0, 0.0)


def test_cross_validated_threshold_scores_each_item_out_of_fold():
    """cv_correct(): each item is scored by a threshold tuned without it. Separable data stay all
    correct; an item that only a threshold fitted to itself gets right is wrong out of fold."""
    cos = numpy.concatenate([numpy.linspace(0.0, 0.4, 20), numpy.linspace(0.6, 1.0, 20)])
    gold = cos > 0.5  # separable with a gap, so no held-out item sits on a tuned cut
    assert wic.cv_correct(cos, gold).all()
    # one "same" pair below every "different" pair: in-sample the best cut still misses it, and
    # out of fold it is wrong too; the other 39 stay right
    gold_odd = gold.copy()
    gold_odd[0] = True
    correct = wic.cv_correct(cos, gold_odd)
    assert not correct[0] and correct[1:].all()
    # leave-one-out (folds = n) on F, T, F: without the first item the cut falls below everything
    # (all "same"), without the second above everything, without the third between 0.1 and 0.2;
    # each held-out item is then wrong, though in-sample a cut gets 2 of 3 right
    loo = wic.cv_correct(numpy.array([0.1, 0.2, 0.3]), numpy.array([False, True, False]), folds=3)
    assert not loo.any()
    assert wic.cv_correct(cos, gold, seed=1).shape == (40,)
    with pytest.raises(ValueError, match="at least 2 items"):
        wic.cv_correct(cos[:1], gold[:1])


def test_scores_carry_the_train_cv_accuracy(tmp_path, tiny_model):
    """wic_scores(): the train CV accuracy is the mean of the per-pair out-of-fold results, and
    the per-pair arrays stay out of the JSON form."""
    _write(tmp_path, "train", ROWS * 3, ["F", "T", "F", "T"] * 3)
    _write(tmp_path, "dev", ROWS[::-1], ["T", "F", "T", "F"])
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    full = wic.wic_scores(bilm, str(tmp_path), items=True)
    plain = wic.wic_scores(bilm, str(tmp_path))
    for view, s in full.items():
        assert s["train_cv_correct"].shape == (12,)
        assert s["train_cv_accuracy"] == pytest.approx(100 * s["train_cv_correct"].mean())
        assert plain[view]["train_cv_accuracy"] == s["train_cv_accuracy"]
        assert not any(k.endswith("correct") for k in plain[view])
