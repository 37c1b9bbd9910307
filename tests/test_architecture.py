"""Layering: ``spacy_elmo/bilm/`` is a leaf. Its modules import only ``bilm/`` itself,
``spacy_elmo/errors.py`` (which imports nothing), the standard library and third-party packages,
never the rest of spacy_elmo, spaCy or thinc."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import spacy_elmo

BILM = Path(spacy_elmo.__file__).resolve().parent / "bilm"
FORBIDDEN = ("spacy", "thinc")


def _imports(path: Path):
    """(line, module) of every import in ``path`` (module-level or inside functions); relative
    imports that leave ``bilm/`` (its modules are all directly in it) are returned as ``..NAME``
    (``from .. import errors``: ``..errors``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.lineno, node.module
            elif node.level > 1 and node.module:
                yield node.lineno, "." * node.level + node.module
            elif node.level > 1:
                yield from ((node.lineno, "." * node.level + alias.name) for alias in node.names)


def _violation(module: str) -> bool:
    top = module.split(".")[0]
    if module.startswith(".."):
        return module != "..errors"
    if top == "spacy_elmo":
        return not (module in ("spacy_elmo.bilm", "spacy_elmo.errors") or module.startswith("spacy_elmo.bilm."))
    return top in FORBIDDEN


def test_bilm_imports_only_bilm_stdlib_and_third_party():
    files = sorted(BILM.rglob("*.py"))
    assert len(files) >= 10 and all(path.parent == BILM for path in files)
    bad = [f"{path.relative_to(BILM.parent)}:{line}: {module}" for path in files
           for line, module in _imports(path) if _violation(module)]
    assert bad == []


def test_the_checker_sees_violations():
    assert _violation("..package_data") and _violation("spacy_elmo.hub.cache") and _violation("thinc.api")
    assert _violation("spacy") and not _violation("spacy_elmo.bilm.weights") and not _violation("torch.nn")
    assert not _violation("..errors") and not _violation("spacy_elmo.errors") and _violation("..errors_extra")
    assert _violation("...errors") and _violation("spacy_elmo.errors_extra")


def test_loading_bilm_imports_nothing_else_of_the_package():
    code = ("import sys, spacy_elmo.bilm.model, spacy_elmo.bilm.batching, spacy_elmo.bilm.integrity\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('spacy_elmo', 'spacy', 'thinc')"
            " and not m.startswith('spacy_elmo.bilm')))")
    env = dict(os.environ, PYTHONPATH=str(BILM.parent.parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['spacy_elmo', 'spacy_elmo._extensions_hook', 'spacy_elmo.errors']"


def test_no_python_module_holds_cpp_source():
    """The native kernels' C++ lives in ``bilm/csrc/``, not in Python strings."""
    package = BILM.parent
    holders = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if any(marker in path.read_text(encoding="utf-8") for marker in ("#include <", "TORCH_LIBRARY("))]
    assert holders == []


def test_cpp_sources_ship_as_package_data():
    """Every file native.py compiles matches a ``[options.package_data]`` glob of setup.cfg."""
    import configparser
    import fnmatch

    from spacy_elmo.bilm import native

    config = configparser.ConfigParser()
    config.read(BILM.parent.parent / "setup.cfg")
    globs = [g.strip() for g in config["options.package_data"]["spacy_elmo"].split(",")]
    files = [str((native.CSRC / name).relative_to(BILM.parent)) for name in native.sources()]
    assert native.MAIN in native.sources() and any(name.endswith(".h") for name in native.sources())
    assert [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)] == []


def test_the_package_does_not_look_for_development_data():
    """No module of the package resolves ``../shared`` or reads ``SPACY_ELMO_SHARED``: the tests
    (tests/helpers.py) and dev/ (dev/shared_data.py) do; the probe takes its data as options."""
    package = BILM.parent
    readers = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if "SPACY_ELMO_SHARED" in path.read_text(encoding="utf-8") or "shared_data" in path.read_text(
                   encoding="utf-8")]
    assert readers == [] and not (package / "shared_data.py").exists()


def test_from_pretrained_resolves_names_through_the_installed_hook(tiny_model, monkeypatch):
    """``import spacy_elmo`` points bilm/'s resolver at spacy_elmo.hub.resolve (names, None = the
    default model); without a resolver BiLM.from_pretrained loads directories only."""
    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.bilm import BiLM, resolver
    from spacy_elmo.hub.resolve import model_files

    assert resolver.model_files(None) == model_files(DEFAULT_MODEL)
    assert BiLM.from_pretrained(tiny_model.directory).num_layers == 2
    monkeypatch.setattr(resolver, "_RESOLVER", None)
    assert resolver.model_files(tiny_model.directory) == (tiny_model.options_path, tiny_model.weights_path)
    with pytest.raises(FileNotFoundError, match="no model directory 'en_elmo_small'"):
        BiLM.from_pretrained(DEFAULT_MODEL)



# The layers of the package, lowest first: a module imports only from its own part or from parts
# of lower layers (never upward, never sideways between two parts of one layer).
LAYERS = (
    ("errors",),
    ("bilm", "package_data", "locks", "text_files"),
    ("convert", "allennlp", "cli_help"),
    ("hub",),
    ("layer_spec", "cli_errors"),
    ("pipeline", "embed", "pretrain"),
    ("probe", "scale", "static", "_extensions_hook"),
    ("__main__", "__init__"),
)
LAYER = {part: level for level, parts in enumerate(LAYERS) for part in parts}
PACKAGE = BILM.parent


def _module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _file_of(module: str, root: Path):
    path = root.parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _targets(path: Path, root: Path):
    """(line, absolute module) of each module of the package under ``root`` that ``path`` imports
    (TYPE_CHECKING and function-level imports included); ``from P import name`` gives ``P.name``
    when that is a module, else ``P``."""
    module = _module_of(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *filter(None, [base])])
            names = [(base, alias.name) for alias in node.names]
        else:
            continue
        for base, name in names:
            sub = f"{base}.{name}" if name else None
            target = sub if sub and _file_of(sub, root) else base
            if base.split(".")[0] == root.name and _file_of(target, root):
                yield node.lineno, target


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _graph(root: Path = PACKAGE):
    """{module: [(line, imported module)]} of every module under ``root``."""
    return {_module_of(f, root): list(_targets(f, root)) for f in sorted(root.rglob("*.py"))}


def _upward(graph, layer) -> list:
    return [f"{module}:{line} -> {target}" for module, edges in graph.items() for line, target in edges
            if _part(target) != _part(module) and layer[_part(target)] >= layer[_part(module)]]


def _circles(graph) -> list:
    edges = {module: sorted({t for _, t in targets if t != module}) for module, targets in graph.items()}
    circles, state = [], {}

    def visit(module, stack):
        state[module] = "open"
        for target in edges.get(module, ()):
            if state.get(target) == "open":
                circles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    return circles


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(module) for module in _graph()}
    assert parts == set(LAYER), sorted(parts ^ set(LAYER))


def test_no_module_imports_upward_or_sideways():
    assert _upward(_graph(), LAYER) == []


def test_no_modules_import_each_other_in_a_circle():
    assert _circles(_graph()) == []


def test_the_layer_checks_see_violations(tmp_path):
    """An upward import (low -> high, inside a function: a circle with high's import of low), a
    sideways one, and a circle through a TYPE_CHECKING import, in a package made here."""
    root = tmp_path / "pkg"
    files = {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "", "side/__init__.py": "",
             "low/a.py": "def f():\n    from ..high import b\n",
             "low/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import X\n",
             "low/d.py": "from . import c\n", "high/b.py": "from ..low import a\n",
             "side/e.py": "from pkg.high import b\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph = _graph(root)
    assert _upward(graph, {"low": 0, "high": 1, "side": 1, "__init__": 2}) == ["pkg.low.a:2 -> pkg.high.b",
                                                                                 "pkg.side.e:1 -> pkg.high.b"]
    assert _circles(graph) == [["pkg.high.b", "pkg.low.a", "pkg.high.b"], ["pkg.low.c", "pkg.low.d", "pkg.low.c"]]
