"""dev/domain_corpus.py (annotated corpora -> raw sentences for continued pretraining) and the
pure parts of dev/domain_adaptation.py (vocabulary check, score spread)."""
import json

import pytest

from helpers import load_script

CONLLU = """# sent_id = a-1
# text = Don't stop, it's fine.
1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tDo\tdo\tAUX\t_\t_\t_\t_\t_\t_
2\tn't\tnot\tPART\t_\t_\t_\t_\t_\t_
3\tstop\tstop\tVERB\t_\t_\t_\t_\t_\t_
4\t,\t,\tPUNCT\t_\t_\t_\t_\t_\t_
5\tit\tit\tPRON\t_\t_\t_\t_\t_\t_
6\t's\tbe\tAUX\t_\t_\t_\t_\t_\t_
7\tfine\tfine\tADJ\t_\t_\t_\t_\t_\t_
8\t.\t.\tPUNCT\t_\t_\t_\t_\t_\t_

# sent_id = a-2
1\tNo\tno\tINTJ\t_\t_\t_\t_\t_\t_
1.1\tgap\tgap\tX\t_\t_\t_\t_\t_\t_
2\ttext\ttext\tNOUN\t_\t_\t_\t_\t_\t_
"""

# WNUT-17's layout: token TAB tag, sentences separated by lines holding only a tab
CONLL = "-DOCSTART- -X- O O\n\n@paulwalk\tO\nIt\tO\n's\tO\nESB\tB-location\n.\tO\n\t\n\t\nok\tO\n"


def test_conllu_gives_the_original_text_else_the_word_forms(tmp_path):
    corpus = load_script("dev/domain_corpus.py")
    path = tmp_path / "x.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    assert list(corpus.sentences(path)) == ["Don't stop, it's fine.", "No text"]


def test_conll_columns_give_the_tokens_joined_by_spaces(tmp_path):
    corpus = load_script("dev/domain_corpus.py")
    path = tmp_path / "train.conll"
    path.write_text(CONLL, encoding="utf-8")
    assert list(corpus.sentences(path)) == ["@paulwalk It 's ESB .", "ok"]


def test_main_writes_one_sentence_per_line_and_counts(tmp_path, capsys):
    corpus = load_script("dev/domain_corpus.py")
    (tmp_path / "a.conll").write_text(CONLL, encoding="utf-8")
    (tmp_path / "b.conllu").write_text(CONLLU, encoding="utf-8")
    out = tmp_path / "out" / "train.txt"
    assert corpus.main([str(out), str(tmp_path / "a.conll"), str(tmp_path / "b.conllu")]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == [
        "@paulwalk It 's ESB .", "ok", "Don't stop, it's fine.", "No text"]
    total = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert total == {"file": str(out), "sentences": 4, "words": 5 + 1 + 4 + 2}
    assert corpus.main([str(out), str(tmp_path / "missing.conll")]) == 2


def test_perplexities_compare_only_over_the_same_vocabulary(tmp_path):
    adaptation = load_script("dev/domain_adaptation.py")
    for name, words in (("a", "<S>\n</S>\n<UNK>\nthe"), ("b", "<S>\n</S>\n<UNK>\nthe"), ("c", "<S>\n</S>\n<UNK>\na")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.txt").write_text(words, encoding="utf-8")
    adaptation.same_vocabulary(tmp_path / "a", tmp_path / "b")
    with pytest.raises(SystemExit, match="differ: perplexities over different vocabularies do not compare"):
        adaptation.same_vocabulary(tmp_path / "a", tmp_path / "c")


def test_spread_of_scores():
    adaptation = load_script("dev/domain_adaptation.py")
    s = adaptation.spread([30.0, 34.0, 32.0])
    assert (s["mean"], s["sd"], s["min"], s["max"]) == (32.0, 2.0, 30.0, 34.0)
    assert adaptation.spread([31.5])["sd"] is None


def test_paths_under_the_data_folder_are_recorded_relative_to_it(tmp_path):
    adaptation = load_script("dev/domain_adaptation.py")
    record = {"commands": [f'pretrain {tmp_path}/domain/run --corpus.paths ["{tmp_path}/domain/train.txt"]'],
              "heldout": {"file": f"{tmp_path}/domain/dev.txt"}, "n": 3}
    assert adaptation.relative(record, tmp_path) == {
        "commands": ['pretrain domain/run --corpus.paths ["domain/train.txt"]'],
        "heldout": {"file": "domain/dev.txt"}, "n": 3}
    assert adaptation.relative(record, None) is record
