"""dev/static_tagger.py: its overrides turn the demo configs' static-vectors feature on (a real
config path, a StaticVectors layer in the built model), and the record's table entry comes from
the table's card."""
import json

import pytest
import spacy

from spacy_elmo.static import distil_vectors

from helpers import REPO, load_script


def override_key(flag: str) -> str:
    return flag[2:]


@pytest.mark.parametrize("cfg, flag", [("tagger_base.cfg", "STATIC"), ("tagger_elmo.cfg", "STATIC_IN_ELMO")])
def test_the_override_adds_static_vectors_to_the_demo_tagger(tiny_model, cfg, flag):
    tagger = load_script("dev/static_tagger.py")
    key = override_key(getattr(tagger, flag))
    overrides = {key: True}
    if cfg == "tagger_elmo.cfg":
        overrides["components.elmo.model.name"] = tiny_model.directory
    config = spacy.util.load_config(REPO / "configs" / cfg, overrides=overrides)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    names = {node.name for name in nlp.pipe_names for node in nlp.get_pipe(name).model.walk()}
    assert "static_vectors" in names
    plain = spacy.util.load_model_from_config(spacy.util.load_config(REPO / "configs" / cfg, overrides={
        k: v for k, v in overrides.items() if k != key}), auto_fill=True)
    assert "static_vectors" not in {node.name for name in plain.pipe_names
                                    for node in plain.get_pipe(name).model.walk()}


def test_the_record_describes_the_table_from_its_card(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_SHARED", str(tmp_path))
    tagger = load_script("dev/static_tagger.py")
    (tmp_path / "data" / "lm").mkdir(parents=True)
    corpus = tmp_path / "data" / "lm" / "a.txt"
    corpus.write_text("the cat sat .\nthe dog sat .\na cat ran .\n", encoding="utf-8")
    card = distil_vectors(tiny_model.directory, [str(corpus)], str(tmp_path / "table"), view="average", min_count=2,
                          max_lines=2, progress=False)
    row = tagger.table_record({"seconds": 12.5, "peak_rss_mb": 300.0, "threads": 1, "command": "cmd", "card": card})
    assert row["words"] == 3 and row["dim"] == 32 and row["view"] == "average"  # the, sat, "." in the 2 lines
    assert row["corpus"]["lines"] == 2 and row["corpus"]["tokens"] == 8
    assert row["corpus"]["files"][0]["path"] == "data/lm/a.txt"
    assert row["corpus"]["slice"].startswith("the first 2 lines of each file")
    assert (row["distil_seconds"], row["distil_peak_rss_mb"]) == (12.5, 300.0)
    assert row["vectors_name"] == card["vectors_name"] and json.loads(json.dumps(row))["words"] == 3


def test_coverage_counts_the_tokens_with_a_row_by_their_exact_text(tiny_model, tmp_path):
    from spacy.tokens import Doc, DocBin

    tagger = load_script("dev/static_tagger.py")
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat .\nthe dog sat .\n", encoding="utf-8")
    distil_vectors(tiny_model.directory, [str(corpus)], str(tmp_path / "table"), min_count=2, progress=False)
    vocab = spacy.blank("en").vocab
    DocBin(docs=[Doc(vocab, words=["The", "cat", "sat", "."]), Doc(vocab, words=["the", "the", "bird"])]).to_disk(
        tmp_path / "d.spacy")
    got = tagger.coverage(tmp_path / "table" / "spacy", {"dev": tmp_path / "d.spacy"})
    # rows: the, sat, "." ("The" is another text: no row, as StaticVectors looks tokens up by ORTH)
    assert got == {"dev": {"tokens": 7, "token_coverage": 100 * 4 / 7, "type_coverage": 50.0}}
