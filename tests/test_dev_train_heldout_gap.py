"""dev/train_heldout_gap.py: seen training sentences vs held-out ones, from a run directory."""
import gzip

import numpy
import pytest

from spacy_elmo.pretrain.corpus import Split
from spacy_elmo.pretrain.train import pretrain

from helpers import load_script
from test_pretrain import SENTENCES, TINY


def _gap():
    return load_script("dev/train_heldout_gap.py")


def test_every_kth_takes_whole_sentences_evenly():
    lengths = [3, 1, 4, 1, 5, 9, 2, 6]
    offsets = numpy.concatenate([[0], numpy.cumsum(lengths)])
    split = Split(numpy.arange(offsets[-1], dtype=numpy.int32), offsets)
    sample = _gap().every_kth(split, 16)  # 31 tokens: k = 31 // 16 = 1, every sentence
    assert sample.n_tokens == split.n_tokens
    sample = _gap().every_kth(split, 10)  # k = 3: sentences 0, 3, 6
    assert list(numpy.diff(sample.offsets)) == [3, 1, 2]
    numpy.testing.assert_array_equal(sample.tokens, [0, 1, 2, 8, 23, 24])


@pytest.mark.slow
def test_a_model_that_memorised_its_text_shows_a_gap(tmp_path):
    """Random 6-word sentences: nothing to learn but the training lines themselves, so after
    enough steps the seen sentences score far better than the held-out ones."""
    rng = numpy.random.default_rng(1)
    words = [f"w{i}" for i in range(40)]
    path = tmp_path / "text.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for _ in range(100):
            f.write(" ".join(rng.choice(words, 6)) + "\n")
    overrides = dict(TINY, **{"corpus.paths": [str(path)], "training.max_steps": 1000,
                              "training.eval_every_steps": 0, "model.lstm_dim": 64})
    run = tmp_path / "run"
    meta = pretrain(str(run), overrides=overrides, progress=False)
    scores = _gap().gap(str(run))
    assert scores["heldout"]["perplexity"] == pytest.approx(meta["heldout"]["perplexity"], rel=1e-5)
    assert abs(scores["train"]["tokens"] - scores["heldout"]["tokens"]) < 0.5 * scores["heldout"]["tokens"]
    assert scores["ratio"] == pytest.approx(scores["train"]["perplexity"] / scores["heldout"]["perplexity"])
    assert scores["ratio"] < 0.6  # 0.0003 after 1,000 steps (0.66 after 500); a model that generalises stays near 1


def test_a_directory_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.cfg not found: give a pretraining output directory"):
        _gap().gap(str(tmp_path))
    with pytest.raises(SystemExit, match="^train_heldout_gap.py: .*config.cfg not found"):
        _gap().main([str(tmp_path)])


def test_a_run_without_held_out_text_is_refused(tmp_path):
    path = tmp_path / "text.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES * 20) + "\n")
    overrides = dict(TINY, **{"corpus.paths": [str(path)], "training.max_steps": 2, "training.eval_every_steps": 0,
                              "corpus.heldout_every": 0})
    pretrain(str(tmp_path / "run"), overrides=overrides, progress=False)
    with pytest.raises(ValueError, match="the run has no held-out split"):
        _gap().gap(str(tmp_path / "run"))
