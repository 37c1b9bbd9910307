"""One error module: every public exception class (warnings aside) of the package is defined in
``spacy_elmo/errors.py``, derives from ``spacy_elmo.ElmoError`` and keeps its builtin parent, and
the command line prints any of them as one line."""
import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import spacy_elmo
from spacy_elmo import errors
from spacy_elmo.errors import ElmoError

OPTIONAL = ("ray", "matplotlib")  # extras: a module needing one is skipped when it is absent
KINDS = {  # kind: its builtin parents
    "ElmoConfigError": (ValueError,), "ElmoDataError": (ValueError,), "ElmoTypeError": (TypeError,),
    "ElmoModelFileError": (ValueError,), "ElmoMemoryError": (MemoryError, ValueError), "ElmoFileError": (OSError,),
    "ElmoDownloadError": (RuntimeError,), "ElmoBuildError": (RuntimeError,),
    "ElmoLockError": (RuntimeError,),
}


def _modules():
    for info in pkgutil.walk_packages(spacy_elmo.__path__, "spacy_elmo."):
        try:
            yield importlib.import_module(info.name)
        except ImportError as err:
            if err.name and err.name.split(".")[0] in OPTIONAL:
                continue
            raise


def _public_exceptions():
    found = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, Exception) and not issubclass(obj, Warning)
                    and not name.startswith("_")
                    and obj.__module__ == module.__name__):
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_public_exception_is_defined_in_the_error_module():
    found = _public_exceptions()
    assert sorted(found) == sorted(f"spacy_elmo.errors.{name}" for name in ["ElmoError", *KINDS])
    assert sorted(errors.__all__) == sorted(["ElmoError", *KINDS])


def test_each_kind_is_an_elmo_error_with_its_builtin_parents():
    for name, parents in KINDS.items():
        cls = getattr(errors, name)
        assert issubclass(cls, ElmoError) and all(issubclass(cls, p) for p in parents), name
        assert getattr(spacy_elmo, name) is cls and name in spacy_elmo.__all__
    assert not issubclass(errors.ElmoConfigError, (TypeError, OSError, RuntimeError, MemoryError))
    assert not issubclass(errors.ElmoDownloadError, ValueError) and not issubclass(errors.ElmoFileError, ValueError)
    with pytest.raises(ValueError, match="no such corpus"):
        raise errors.ElmoDataError("no such corpus")
    assert spacy_elmo.ElmoError is ElmoError and "ElmoError" in spacy_elmo.__all__


def test_attributes_name_the_key_path_and_what_was_kept(tmp_path):
    config = errors.ElmoConfigError("[components.elmo] cache_mb = -1: expected >= 0", "cache_mb")
    assert (config.key, config.path) == ("cache_mb", None) and str(config).endswith("cache_mb = -1: expected >= 0")
    weights = errors.ElmoModelFileError("w.hdf5: truncated", tmp_path / "w.hdf5", "char_embed")
    assert (weights.path, weights.dataset) == (str(tmp_path / "w.hdf5"), "char_embed")
    memory = errors.ElmoMemoryError("too big", path="w.hdf5")
    assert isinstance(memory, errors.ElmoModelFileError) and memory.path == "w.hdf5" and memory.dataset is None
    download = errors.ElmoDownloadError("disk full", path=tmp_path, resumable=True)
    assert (download.url, download.path, download.resumable) == (None, str(tmp_path), True)
    assert errors.ElmoFileError("a FIFO", tmp_path).path == str(tmp_path) and errors.ElmoDataError("x").path is None


def test_the_error_module_imports_only_the_standard_library():
    """Every layer (bilm/ included) imports it: no torch, spaCy or other part of the package."""
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {"." * node.level + (node.module or "") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"os", "typing"}
    code = "import sys, spacy_elmo.errors; print(sorted(m for m in ('torch', 'spacy', 'thinc') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_cli_prints_an_elmo_error_as_one_line(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.__main__ import app

    text = tmp_path / "t.txt"
    text.write_text("a b\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["perplexity", str(tmp_path / "no-model"), str(text)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output and "no-model" in result.output
