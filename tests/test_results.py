"""Measured numbers on the pages come from recorded results, and say which model they were
measured with.

A page quotes a record between ``<!-- record: PATH -->`` and ``<!-- end: record -->``. Every
decimal number in that block (``94.55``, ``+2.22``, ``90.4M``) must be a value of the record (a
number, or a number inside one of its strings), rounded as shown. Every record names its model
(``model``: name, lineage tokens, weights sha256); a block quoting a record of weights other than
the shipped ``en_elmo_small``'s must say so in words ("not the shipped model"). The model card and
the README's model table are written from the model's own meta.json (``dev/model_card.py``).
"""
import json
import re
from pathlib import Path

import pytest

from helpers import REPO, load_script

BLOCK = re.compile(r"<!-- record: (\S+) -->\n(.*?)<!-- end: record -->", re.S)
NUMBER = re.compile(r"(?<![\w.])[+-]?(\d+\.\d+)(M?)(?![\w.])")
SAYS_SO = "not the shipped model"
SHIPPED = REPO / "spacy_elmo" / "models" / "en_elmo_small"
PAGES = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))
RECORDS = sorted((REPO / "docs" / "results").glob("*.json")) + [REPO / "docs" / "probe" / "probe.json"]


def record_values(record) -> list:
    """Every number of a record: its numeric leaves and the numbers written in its strings."""
    if isinstance(record, dict):
        return [v for x in record.values() for v in record_values(x)]
    if isinstance(record, list):
        return [v for x in record for v in record_values(x)]
    if isinstance(record, bool) or record is None:
        return []
    if isinstance(record, (int, float)):
        return [float(record)]
    return [float(m.group(1)) for m in NUMBER.finditer(str(record))]


def unquoted(block: str, values: list) -> list:
    """The decimal numbers of ``block`` that no value rounds to (``M``: millions)."""
    missing = []
    for m in NUMBER.finditer(block):
        digits, millions = m.group(1), m.group(2)
        decimals = len(digits.split(".")[1])
        scale = 1e6 if millions else 1.0
        if not any(f"{abs(v) / scale:.{decimals}f}" == digits for v in values):
            missing.append(m.group(0))
    return missing


def blocks(page: str):
    return [(path, text) for path, text in BLOCK.findall((REPO / page).read_text(encoding="utf-8"))]


def model_of(path: Path) -> dict:
    record = json.loads(path.read_text(encoding="utf-8"))
    return record["model"]


def shipped_identity() -> dict:
    meta = json.loads((SHIPPED / "meta.json").read_text(encoding="utf-8"))
    digests = json.loads((SHIPPED / "sha256.json").read_text(encoding="utf-8"))
    return {"lineage_tokens": meta["training"]["lineage_tokens"], "weights_sha256": digests["weights.hdf5"]}


def check_block(record_path: str, text: str, shipped: dict) -> None:
    """Raises AssertionError naming what is wrong with one quoted block."""
    path = REPO / record_path
    assert path.is_file(), f"{record_path}: no such record"
    record = json.loads(path.read_text(encoding="utf-8"))
    missing = unquoted(text, record_values(record))
    assert not missing, f"{record_path}: the page quotes {missing}, which the record does not hold"
    if record["model"]["weights_sha256"] != shipped["weights_sha256"]:
        assert SAYS_SO in " ".join(text.split()), (
            f"{record_path} was measured with other weights than the shipped model's: the page must say "
            f"'{SAYS_SO}'")


@pytest.mark.parametrize("page", PAGES)
def test_quoted_numbers_are_those_of_their_record(page):
    shipped = shipped_identity()
    for record_path, text in blocks(page):
        check_block(record_path, text, shipped)


def test_the_readme_quotes_its_tables_from_records():
    quoted = {path for path, _ in blocks("README.md")}
    assert {"docs/results/demo_seeds.json", "docs/results/full_data.json"} <= quoted
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    results = readme[readme.index("## Results"):readme.index("### Speed against AllenNLP")]
    tables = re.findall(r"^\|.*\|$", results, re.M)
    in_blocks = "".join(text for _, text in blocks("README.md"))
    assert tables and all(row in in_blocks for row in tables), "a results table outside a record block"


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_every_record_names_its_model(path):
    model = model_of(path)
    assert model.get("model", model.get("name")) == "en_elmo_small"
    assert isinstance(model["lineage_tokens"], int) and model["lineage_tokens"] > 0
    assert re.fullmatch(r"[0-9a-f]{64}", model["weights_sha256"])


def test_the_readme_records_are_of_the_shipped_model():
    shipped = shipped_identity()
    for name in ("demo_seeds.json", "full_data.json"):
        model = model_of(REPO / "docs" / "results" / name)
        assert {k: model[k] for k in shipped} == shipped, name


def test_a_wrong_number_or_another_model_without_saying_so_fails():
    """The check is not vacuous: it fails on a number the record lacks, and on a record of other
    weights quoted without the words."""
    shipped = shipped_identity()
    check_block("docs/results/demo_seeds.json", "| tagger | 92.34 | **94.55** | +2.22 | 0.1-0.2 |", shipped)
    with pytest.raises(AssertionError, match=r"quotes \['\+2.23'\]"):
        check_block("docs/results/demo_seeds.json", "| tagger | 92.34 | **94.55** | +2.23 |", shipped)
    other = {**shipped, "weights_sha256": "0" * 64}
    with pytest.raises(AssertionError, match="must say 'not the shipped model'"):
        check_block("docs/results/demo_seeds.json", "gain +2.22", other)
    check_block("docs/results/demo_seeds.json", "gain +2.22 (an earlier model,\nnot the shipped model)", other)
    assert unquoted("90.4M tokens, v2.16, torch 2.13.0", [90373880.0]) == []


def test_the_model_card_and_the_readme_model_table_are_what_meta_json_gives():
    assert load_script("dev/model_card.py").main(["--check"]) == 0


def test_the_continued_pretraining_example_quotes_its_record():
    """The domain-adaptation example's tables (perplexity before / after, WNUT-17 F1) sit inside
    the block of its record, which is the record of a run that started from the shipped model."""
    quoted = dict(blocks("docs/pretraining.md"))
    text = quoted["docs/results/domain_adaptation.json"]
    page = (REPO / "docs" / "pretraining.md").read_text(encoding="utf-8")
    section = page[page.index("### Measured: `en_elmo_small`"):page.index("## Wider from a trained model")]
    tables = re.findall(r"^\|.*\|$", section, re.M)
    assert len(tables) >= 8 and all(row in text for row in tables), "a table of the example outside its record block"
    record = json.loads((REPO / "docs" / "results" / "domain_adaptation.json").read_text(encoding="utf-8"))
    assert {k: record["model"][k] for k in ("lineage_tokens", "weights_sha256")} == shipped_identity()
    assert record["tuned"]["weights_sha256"] != record["model"]["weights_sha256"]
