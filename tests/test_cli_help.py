"""``--help`` of every command: flags without a value type, arguments in capitals in the usage."""
import re

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import COMMANDS, app


@pytest.mark.parametrize("command", [[]] + [[name] for name, _, _ in COMMANDS], ids=lambda c: c[0] if c else "app")
def test_help_shows_flags_without_a_type_and_arguments_in_capitals(command):
    result = CliRunner().invoke(app, command + ["--help"], env={"COLUMNS": "150", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert not re.search(r"[{}]", usage), usage


def test_embed_usage_names_its_arguments():
    result = CliRunner().invoke(app, ["embed", "--help"], env={"COLUMNS": "150", "NO_COLOR": "1"})
    assert "embed [OPTIONS] INPUT_PATH OUTPUT" in result.output
    assert re.search(r"--pretokenized +Split on whitespace", result.output)
