"""Measured numbers on the pages come from recorded results, and say which model and which CPU
they were measured with.

A page quotes a record between ``<!-- record: PATH -->`` and ``<!-- end: record -->``. Every
decimal number in that block (``94.55``, ``+2.22``, ``90.4M``, ``4.9x``), every number in
scientific notation (``2.4e-7``, ``1e-6``), every integer written with thousands separators
(``5,975``) and every number in a table row must be a value of the
record (a number, or a number inside one of its strings), rounded as shown. Every record names
its model (``model``: the shipped ``en_elmo_small`` by name, lineage tokens and weights sha256;
another model by name and weights sha256; or ``random weights`` with their shapes), or a list of
such models when it measured several, its machine (``machine.cpu``, which the block names in
words) and no date; a speed record (``speed_*.json``) names its code path. A block quoting a
record of weights other than the shipped ``en_elmo_small``'s must say so in words ("not the
shipped model"), one of random weights must say "random". The model card and the README's
model table are written from the model's own meta.json (``dev/model_card.py``).
"""
import json
import re
from pathlib import Path

import pytest

from helpers import REPO, load_script

BLOCK = re.compile(r"<!-- record: (\S+) -->\n(.*?)<!-- end: record -->", re.S)
# a decimal (x: a ratio, M: millions), an integer with thousands separators, any integer
NUMBER = re.compile(r"(?<![\w.,])[+-]?(\d{1,3}(?:,\d{3})+\.\d+|\d+\.\d+)(M?)x?(?!\w|\.\d)")
SCIENTIFIC = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)e([+-]?\d+)(?!\w|\.\d)")
GROUPED = re.compile(r"(?<![\w.,+-])(\d{1,3}(?:,\d{3})+)(?![\w-]|[.,]\d)")
INTEGER = re.compile(r"(?<![\w.,+-])(\d+)(?![\w-]|[.,]\d)")
ANY_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
SAYS_SO = "not the shipped model"
RANDOM = "random weights"
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
    return [float(m.group(0).replace(",", "")) for m in ANY_NUMBER.finditer(str(record))]


def _quoted(block: str):
    """(as written, digits, decimals, scale) of every number of ``block`` that must be a record's."""
    for m in NUMBER.finditer(block):
        digits = m.group(1).replace(",", "")
        yield m.group(0), digits, len(digits.split(".")[1]), 1e6 if m.group(2) else 1.0
    for m in SCIENTIFIC.finditer(block):
        mantissa = m.group(1)
        yield m.group(0), mantissa, len(mantissa.split(".")[1]) if "." in mantissa else 0, 10.0 ** int(m.group(2))
    for m in GROUPED.finditer(block):
        yield m.group(0), m.group(1).replace(",", ""), 0, 1.0
    for row in re.findall(r"^\|.*\|$", block, re.M):
        for m in INTEGER.finditer(row):
            yield m.group(0), m.group(1), 0, 1.0


def unquoted(block: str, values: list) -> list:
    """The numbers of ``block`` (see :func:`_quoted`) that no value rounds to."""
    return [shown for shown, digits, decimals, scale in _quoted(block)
            if not any(f"{abs(v) / scale:.{decimals}f}" == digits for v in values)]


def blocks(page: str):
    return [(path, text) for path, text in BLOCK.findall((REPO / page).read_text(encoding="utf-8"))]


def models_of(record: dict) -> list:
    """The record's ``model``, as a list (a record of several models holds a list)."""
    model = record["model"]
    return model if isinstance(model, list) else [model]


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
    check_quote(json.loads(path.read_text(encoding="utf-8")), record_path, text, shipped)


def check_quote(record: dict, name: str, text: str, shipped: dict) -> None:
    """Raises AssertionError unless ``text`` quotes only numbers of ``record``, names its CPU, and
    says so where the record's weights are random or other than the shipped model's."""
    missing = unquoted(text, record_values(record))
    assert not missing, f"{name}: the page quotes {missing}, which the record does not hold"
    words = " ".join(text.split())
    cpu = record["machine"]["cpu"]
    assert cpu in words, f"{name} was measured on an {cpu}: the page must name that CPU"
    for model in models_of(record):
        if model.get("name") == RANDOM:
            assert "random" in words, f"{name} was measured on random weights: the page must say so"
        elif model["weights_sha256"] != shipped["weights_sha256"]:
            assert SAYS_SO in words, (
                f"{name} was measured with other weights than the shipped model's: the page must say '{SAYS_SO}'")


@pytest.mark.parametrize("page", PAGES)
def test_quoted_numbers_are_those_of_their_record(page):
    shipped = shipped_identity()
    for record_path, text in blocks(page):
        check_block(record_path, text, shipped)


def test_the_readme_quotes_its_tables_from_records():
    quoted = {path for path, _ in blocks("README.md")}
    assert {"docs/results/demo_seeds.json", "docs/results/full_data.json", "docs/results/speed_allennlp.json"} <= quoted
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    results = readme[readme.index("## Results"):readme.index("## The default model")]
    tables = re.findall(r"^\|.*\|$", results, re.M)
    in_blocks = "".join(text for _, text in blocks("README.md"))
    assert tables and all(row in in_blocks for row in tables), "a results table outside a record block"


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_every_record_names_its_model_and_cpu_and_no_date(path):
    record = json.loads(path.read_text(encoding="utf-8"))
    assert models_of(record), f"{path.name}: a record names its model"
    for model in models_of(record):
        name = model.get("model", model.get("name"))
        if name == RANDOM:
            assert model["shapes"], "a record of random weights names their shapes"
            continue
        assert isinstance(name, str) and name, f"{path.name}: a model is named"
        assert re.fullmatch(r"[0-9a-f]{64}", model["weights_sha256"])
        if name == "en_elmo_small":
            assert isinstance(model["lineage_tokens"], int) and model["lineage_tokens"] > 0
    assert isinstance(record["machine"]["cpu"], str) and record["machine"]["cpu"]
    assert not DATE.search(path.read_text(encoding="utf-8")), f"{path.name}: a record carries no date"
    if path.name.startswith("speed_"):
        assert record["code_path"], f"{path.name}: a speed record names its code path"


def test_the_readme_records_are_of_the_shipped_model():
    shipped = shipped_identity()
    for name in ("demo_seeds.json", "full_data.json"):
        model = model_of(REPO / "docs" / "results" / name)
        assert {k: model[k] for k in shipped} == shipped, name


def test_a_wrong_number_another_model_or_cpu_without_saying_so_fails():
    """The check is not vacuous: it fails on a number the record lacks (decimal, ratio, grouped
    integer, table cell), on a record of other or random weights quoted without the words, and on
    a page that does not name the record's CPU."""
    shipped = shipped_identity()
    record = {"model": {"name": "en_elmo_small", **shipped}, "machine": {"cpu": "AMD EPYC (Zen 4)"},
              "rows": [{"baseline": 92.34, "elmo": 94.55, "gain": 2.22, "tok_s": 5975.1, "ratio": 4.9}],
              "setting": "3000 sentences, 200 pairs"}
    cpu = "on an AMD EPYC (Zen 4)"
    check_quote(record, "r", f"| tagger | 92.34 | **94.55** | +2.22 | 5,975 | **4.9x** | 200 |\n{cpu}, 3,000, 5,975.1",
                shipped)
    for wrong, shown in [("+2.23", "+2.23"), ("4.8x", "4.8x"), ("5,976", "5,976"), ("| 201 |", "201"),
                         ("5,975.2", "5,975.2")]:
        with pytest.raises(AssertionError, match=re.escape(f"quotes ['{shown}']")):
            check_quote(record, "r", f"| 92.34 | {wrong}\n{cpu}", shipped)
    check_quote(record, "r", f"UD English-EWT, CoNLL-2003 and WNUT-17, 1-2 F1 points, {cpu}", shipped)
    with pytest.raises(AssertionError, match="must name that CPU"):
        check_quote(record, "r", "gain +2.22 on an Intel Xeon", shipped)
    other = {**record, "model": {"name": "en_elmo_small", **shipped, "weights_sha256": "0" * 64}}
    with pytest.raises(AssertionError, match="must say 'not the shipped model'"):
        check_quote(other, "r", f"gain +2.22 {cpu}", shipped)
    check_quote(other, "r", f"gain +2.22 (an earlier model,\nnot the shipped model) {cpu}", shipped)
    random = {**record, "model": {"name": RANDOM, "shapes": "LSTM 4096/512"}}
    with pytest.raises(AssertionError, match="random weights: the page must say so"):
        check_quote(random, "r", f"gain +2.22 {cpu}", shipped)
    check_quote(random, "r", f"gain +2.22 on random-weight models {cpu}", shipped)
    both = {**record, "model": [other["model"], random["model"]]}  # a record of two models: both said
    for text in (f"gain +2.22 (random weights) {cpu}", f"gain +2.22 ({SAYS_SO}) {cpu}"):
        with pytest.raises(AssertionError, match="must say"):
            check_quote(both, "r", text, shipped)
    check_quote(both, "r", f"gain +2.22 (random weights and a model that is {SAYS_SO}) {cpu}", shipped)
    assert unquoted("90.4M tokens, v2.16, torch 2.13.0", [90373880.0]) == []
    assert unquoted("none below 0.999.", [0.99979]) == ["0.999"]  # a number ending a sentence is checked
    assert unquoted("| 1.8e-7 | to 1e-6, 2e-10. |", [1.7881393e-07, 1e-06, 2e-10]) == []
    assert unquoted("| 1.9e-7 | 2e-9 |", [1.7881393e-07, 2e-10]) == ["1.9e-7", "2e-9"]
    assert record_values({"parity": "hold to 1e-6 (3,000 runs)"}) == [1e-06, 3000.0]


def test_the_model_card_and_the_readme_model_table_are_what_meta_json_gives():
    assert load_script("dev/model_card.py").main(["--check"]) == 0


def test_the_continued_pretraining_example_quotes_its_record():
    """The domain-adaptation example's tables (perplexity before / after, WNUT-17 F1) sit inside
    the block of its record, which is the record of a run that started from a release of
    ``en_elmo_small``: the shipped one, or an earlier one that its "Start:" names (tokens) and
    says is not the shipped model."""
    quoted = dict(blocks("docs/pretraining.md"))
    text = quoted["docs/results/domain_adaptation.json"]
    page = (REPO / "docs" / "pretraining.md").read_text(encoding="utf-8")
    section = page[page.index("### Measured: `en_elmo_small`"):page.index("## Wider from a trained model")]
    tables = re.findall(r"^\|.*\|$", section, re.M)
    assert len(tables) >= 8 and all(row in text for row in tables), "a table of the example outside its record block"
    record = json.loads((REPO / "docs" / "results" / "domain_adaptation.json").read_text(encoding="utf-8"))
    model = record["model"]
    releases = [c["tokens"] for c in json.loads((REPO / "dev" / "default_model_candidates.json").read_text(
        encoding="utf-8"))["candidates"] if c.get("released")]
    assert model["name"] == "en_elmo_small" and model["lineage_tokens"] in releases, "it starts from a release"
    if {k: model[k] for k in ("lineage_tokens", "weights_sha256")} != shipped_identity():
        start = " ".join(text[text.index("**Start:**"):text.index("**Domain text:**")].split())
        assert f"{model['lineage_tokens'] / 1e6:.1f}M-token release" in start and SAYS_SO in start, start
    assert record["tuned"]["weights_sha256"] != model["weights_sha256"]
