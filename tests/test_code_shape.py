"""Code shape: no function or method in spacy_elmo/ (nested ones included) is longer than
MAX_LINES lines, from its ``def`` line to its last line (docstring and comments included)."""
import ast

from helpers import REPO

MAX_LINES = 80
# "path:function" entries allowed to be longer for now (shrink this list; never grow it)
ALLOWED = frozenset()


def long_functions(root=REPO / "spacy_elmo", max_lines: int = MAX_LINES):
    """[(lines, "relative/path.py:name", line number)] of the functions longer than max_lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > max_lines:
                    found.append((lines, f"{path.relative_to(root.parent).as_posix()}:{node.name}", node.lineno))
    return found


def test_no_function_is_longer_than_80_lines():
    offenders = [f"{name} (line {line}): {n} lines" for n, name, line in long_functions() if name not in ALLOWED]
    assert offenders == [], f"functions longer than {MAX_LINES} lines: {offenders}"


def test_the_allow_list_only_names_long_functions():
    still_long = {name for _, name, _ in long_functions()}
    assert ALLOWED <= still_long, f"no longer too long, remove from ALLOWED: {sorted(ALLOWED - still_long)}"


def test_the_check_sees_long_functions(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "pkg").mkdir()
    method = "\n".join("    " + line for line in body.splitlines())
    source = f"class A:\n    def f(self):\n{method}\n\n\ndef short():\n    return 1\n"
    (tmp_path / "pkg" / "m.py").write_text(source, encoding="utf-8")
    found = long_functions(tmp_path / "pkg")
    assert [(n, name.rsplit(":", 1)[1]) for n, name, _ in found] == [(MAX_LINES + 1, "f")]
