"""The product describes the software, its data and its measurements, never how it was made:
no work-log wording (sessions, ticket numbers, whose machine) in the shipped and documented
trees. Where a number needs its machine, name the CPU ("on an AMD EPYC (Zen 4), 2 cores")."""
import re

import pytest

from helpers import REPO

TREES = ["README.md", "CHANGELOG.md", "mkdocs.yml", "setup.cfg", "project.yml", "docs", "spacy_elmo", "configs",
         "scripts", "benchmarks", "dev"]
SUFFIXES = {".md", ".py", ".cfg", ".yml", ".yaml", ".json", ".sh", ".txt", ".toml", ".ini"}
# data, not prose: the default model's softmax vocabulary holds English words such as "session"
DATA = {"spacy_elmo/models/en_elmo_small/vocab.txt"}
PATTERNS = [
    r"\bsessions?\b",
    r"\bissues? ?#?\d+",
    r"\bthe issue'?s?\b",
    r"(?<![\w#&/])#\d{1,4}\b",
    r"\bthese machines\b",
    r"\bthis (\d+-core |shared )?(machine|box)\b",
    r"\bhanded (on|to)\b",
    r"\blost with (its|the) machine\b",
    r"\bhelpers?\b(?!\.py)",
    r"\bcolleagues?\b",
]
WORDING = re.compile("|".join(f"(?:{p})" for p in PATTERNS), re.I)


def _files():
    for tree in TREES:
        path = REPO / tree
        paths = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for p in paths:
            rel = p.relative_to(REPO).as_posix()
            if p.suffix in SUFFIXES and rel not in DATA and "__pycache__" not in rel:
                yield rel, p


def offending_lines(text: str) -> list:
    """(line number, matched text) of each work-log phrase in ``text``."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1) for m in WORDING.finditer(line)]


@pytest.mark.parametrize("sample, found", [
    ("over three sessions", ["sessions"]), ("see issue 10", ["issue 10"]), ("fixes #27.", ["#27"]),
    ("on these machines", ["these machines"]), ("on this 2-core machine", ["this 2-core machine"]),
    ("a machine that was not handed on", ["handed on"]), ("the issue's target", ["the issue's"]),
    ("components name, name#2, ...", []), ('colors = {"a": "#999999"}', []), ("see page.md#section-2", []),
    ("on an AMD EPYC (Zen 4), 2 cores", []), ("tests/helpers.py", []),
])
def test_the_patterns_catch_work_log_wording(sample, found):
    assert [m for _, m in offending_lines(sample)] == found


def test_no_work_log_wording_in_the_product():
    hits = []
    for rel, path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        hits += [f"{rel}:{n}: {m!r}" for n, m in offending_lines(text)]
    assert not hits, "describe the software, not how it was made:\n" + "\n".join(hits)


PLACEHOLDER = re.compile(r"@[A-Z][A-Z0-9_]*@")  # a number or table a script was meant to fill in


def test_the_placeholder_pattern_catches_unfilled_slots():
    assert PLACEHOLDER.search("about @LOOKUP_X@ times") and PLACEHOLDER.search("@MEASURED@")
    assert not PLACEHOLDER.search("user@example.com") and not PLACEHOLDER.search("@property")


def test_no_unfilled_placeholders_in_the_pages():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(REPO)}:{i}" for p in pages
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PLACEHOLDER.search(line)]
    assert found == []
