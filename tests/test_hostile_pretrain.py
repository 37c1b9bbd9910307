"""Pretraining settings that do not fit the data: softmax cutoffs at or above the softmax
vocabulary (``--vocab.size 500`` with the default 2000/10000/40000 on a tiny corpus) are
dropped, with one log line, instead of failing in torch."""
import gzip
import json

import pytest

from spacy_elmo.pretrain.export import load_model
from spacy_elmo.pretrain.lm import softmax_cutoffs
from spacy_elmo.pretrain.train import pretrain

from helpers import write_corpus
from test_pretrain import SENTENCES, _overrides


@pytest.fixture()
def corpus(tmp_path):
    return write_corpus(tmp_path / "text.txt.gz", SENTENCES, 400)


def test_default_cutoffs_with_a_small_vocabulary(corpus, tmp_path, capsys):
    extra = {"vocab.size": 500, "softmax.cutoffs": [2000, 10000, 40000], "training.max_steps": 2}
    meta = pretrain(str(tmp_path / "run"), overrides=_overrides(corpus, **extra), progress=False)
    words = meta["softmax"]["vocab_size"]
    assert 40 < words < 100
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("[softmax]")]
    assert line == [f"[softmax] cutoffs [2000, 10000, 40000] are not below the softmax vocabulary of {words:,} "
                    f"words (vocab.size = 500): dropped, clusters at [{words // 2}]"]
    with open(tmp_path / "run" / "model" / "meta.json", encoding="utf-8") as f:
        assert json.load(f)["training"]["steps"] == 2
    lm, loaded = load_model(str(tmp_path / "run" / "model"))  # the exported head loads back
    assert len(loaded) == words and lm.softmax.cutoffs == [words // 2, words]


def test_softmax_cutoffs_keeps_those_that_fit():
    assert softmax_cutoffs([20, 60], 200) == ([20, 60], [])
    assert softmax_cutoffs([20, 60, 2000], 200) == ([20, 60], [2000])
    assert softmax_cutoffs([2000, 10000], 45) == ([22], [2000, 10000])


def test_a_byte_order_mark_is_not_part_of_the_first_corpus_word(tmp_path):
    from spacy_elmo.pretrain.corpus import read_lines

    path = tmp_path / "bom.txt.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbfThe cat sat .\nA dog .\n"))
    assert list(read_lines(str(path))) == [(0, "The cat sat ."), (1, "A dog .")]
