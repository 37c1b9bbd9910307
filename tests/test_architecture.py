"""Layering: ``spacy_elmo/bilm/`` is a leaf. Its modules import only ``bilm/`` itself, the
standard library and third-party packages, never the rest of spacy_elmo, spaCy or thinc."""
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
    imports that leave ``bilm/`` (its modules are all directly in it) are returned as ``..NAME``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.lineno, node.module
            elif node.level > 1:
                yield node.lineno, "." * node.level + (node.module or "")


def _violation(module: str) -> bool:
    top = module.split(".")[0]
    if module.startswith(".."):
        return True
    if top == "spacy_elmo":
        return not (module == "spacy_elmo.bilm" or module.startswith("spacy_elmo.bilm."))
    return top in FORBIDDEN


def test_bilm_imports_only_bilm_stdlib_and_third_party():
    files = sorted(BILM.rglob("*.py"))
    assert len(files) >= 10 and all(path.parent == BILM for path in files)
    bad = [f"{path.relative_to(BILM.parent)}:{line}: {module}" for path in files
           for line, module in _imports(path) if _violation(module)]
    assert bad == []


def test_the_checker_sees_violations():
    assert _violation("..package_data") and _violation("spacy_elmo.hub.cache") and _violation("thinc.api")
    assert _violation("spacy") and not _violation("spacy_elmo.bilm.errors") and not _violation("torch.nn")


def test_loading_bilm_imports_nothing_else_of_the_package():
    code = ("import sys, spacy_elmo.bilm.model, spacy_elmo.bilm.batching, spacy_elmo.bilm.integrity\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('spacy_elmo', 'spacy', 'thinc')"
            " and not m.startswith('spacy_elmo.bilm')))")
    env = dict(os.environ, PYTHONPATH=str(BILM.parent.parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['spacy_elmo', 'spacy_elmo._extensions_hook']"


def test_no_python_module_holds_cpp_source():
    """The native kernels' C++ lives in ``pretrain/csrc/``, not in Python strings."""
    package = BILM.parent
    holders = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if any(marker in path.read_text(encoding="utf-8") for marker in ("#include <", "TORCH_LIBRARY("))]
    assert holders == []


def test_cpp_sources_ship_as_package_data():
    """Every file native.py compiles matches a ``[options.package_data]`` glob of setup.cfg."""
    import configparser
    import fnmatch

    from spacy_elmo.pretrain import native

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
