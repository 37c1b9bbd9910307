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
    (["pretrain", "OUT", "--foo.bar", "1"], "[foo]: unknown section (--foo.bar); known sections: corpus, vocab, "
                                            "model, softmax, training. Config overrides are"),
])
def test_pretrain_unknown_options_start_nothing(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, output = _run(argv)
    assert code == 2
    assert message in output and len(output.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # no OUTPUT_DIR, no corpus cache


@pytest.mark.parametrize("argv, option", [
    (["download", "elmo-small", "--retries", "-1"], "--retries"),
    (["download", "elmo-small", "--retries", "1000"], "--retries"),
    (["embed", "in.txt", "o.hdf5", "--batch-size", "0"], "--batch-size"),
    (["embed", "in.txt", "o.hdf5", "--group-mb", "-1"], "--group-mb"),
    (["embed", "in.txt", "o.hdf5", "--group-mb", "inf"], "--group-mb"),
    (["embed", "in.txt", "o.hdf5", "--group-mb", "nan"], "--group-mb"),
    (["embed", "in.txt", "o.hdf5", "--ray", "auto", "--cpus-per-actor", "inf"], "--cpus-per-actor"),
    (["embed", "in.txt", "o.hdf5", "--ray", "auto", "--actors", "0"], "--actors"),
    (["embed", "in.txt", "o.hdf5", "--ray", "auto", "--cpus-per-actor", "-1"], "--cpus-per-actor"),
    (["embed", "in.txt", "o.hdf5", "--ray", "auto", "--gpus-per-actor", "-1"], "--gpus-per-actor"),
    (["probe", "-o", "out", "--train-sentences", "-1"], "--train-sentences"),
    (["probe", "-o", "out", "--context-sentences", "0"], "--context-sentences"),
    (["probe", "-o", "out", "--center-sentences", "-1"], "--center-sentences"),
    (["probe", "-o", "out", "--seed", "-1"], "--seed"),
    (["download", "elmo-small", "--retries", "many"], "--retries"),
])
def test_numeric_options_are_checked_at_parse_time(argv, option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    code, output = _run(argv)
    assert code == 2
    assert output.startswith(f"error: Invalid value for '{option}'") and len(output.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
