"""Careless command lines: an unknown option is never taken as ``pretrain``'s OUTPUT_DIR, unknown
config overrides and out-of-range numbers are one-line errors at parse time."""
import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app


def _run(argv):
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.output.strip()


@pytest.mark.parametrize("argv, message", [
    (["pretrain", "--bogus-option"], "No such option '--bogus-option' (OUTPUT_DIR may not start with '-'"),
    (["pretrain", "-x", "--training.max_steps", "1"], "No such option '-x'"),
    (["pretrain", "OUT", "--foo.bar", "1"], "[foo]: unknown section (--foo.bar)"),
])
def test_pretrain_unknown_options_start_nothing(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = _run(argv)
    assert code == 2
    assert message in output and len(output.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no OUTPUT_DIR, no corpus cache
