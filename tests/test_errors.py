"""One error family: every public exception class (warnings aside) of the package derives from
``spacy_elmo.ElmoError`` and keeps its builtin parent, and the command line prints any of them
as one line."""
import importlib
import inspect
import pkgutil

import pytest

import spacy_elmo
from spacy_elmo import ElmoError

OPTIONAL = ("ray", "matplotlib")  # extras: a module needing one is skipped when it is absent


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


def test_every_public_exception_is_an_elmo_error():
    found = _public_exceptions()
    assert {"ElmoWeightsError", "ElmoConfigError", "ElmoDownloadError", "CorpusError"} <= {
        name.rsplit(".", 1)[1] for name in found}
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, ElmoError))
    assert outside == []


def test_builtin_parents_are_kept():
    from spacy_elmo.bilm import ElmoWeightsError
    from spacy_elmo.hub import ElmoDownloadError
    from spacy_elmo.pretrain.corpus import CorpusError

    assert issubclass(ElmoWeightsError, ValueError) and issubclass(CorpusError, ValueError)
    assert issubclass(ElmoDownloadError, RuntimeError)
    with pytest.raises(ValueError, match="no such corpus"):
        raise CorpusError("no such corpus")
    assert spacy_elmo.ElmoError is ElmoError and "ElmoError" in spacy_elmo.__all__


def test_cli_prints_an_elmo_error_as_one_line(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.__main__ import app

    text = tmp_path / "t.txt"
    text.write_text("a b\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["perplexity", str(tmp_path / "no-model"), str(text)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output and "no-model" in result.output
