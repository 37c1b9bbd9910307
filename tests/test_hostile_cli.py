"""Careless command lines: an unknown option is never taken as ``pretrain``'s OUTPUT_DIR, unknown
config overrides and out-of-range numbers are one-line errors at parse time."""
import os

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


RUN_DIR = "give the folder to write the run into (one that does not exist is created)"
TABLE_DIR = "give a folder to write (a new one, or one this command wrote, with --overwrite)"


@pytest.mark.parametrize("argv, message", [
    (["pretrain", "afile", "--corpus.paths", '["corpus.txt"]'],
     f"OUTPUT_DIR 'afile' is a file, not a folder: {RUN_DIR}"),
    (["pretrain", "afile/", "--resume"], f"OUTPUT_DIR 'afile' is a file, not a folder: {RUN_DIR}"),
    (["pretrain", "afile/run"], f"OUTPUT_DIR 'afile/run': 'afile' is a file, not a folder: {RUN_DIR}"),
    (["embed", "corpus.txt", "afile/o.hdf5"], "OUTPUT 'afile/o.hdf5': 'afile' is a file, not a folder: choose an "
                                              "OUTPUT in an existing folder"),
    (["embed", "corpus.txt", "afile/sub/o.hdf5"], "OUTPUT 'afile/sub/o.hdf5': 'afile' is a file, not a folder: "
                                                  "choose an OUTPUT in an existing folder"),
    (["static-vectors", "en_elmo_small", "corpus.txt", "afile"], f"OUTPUT_DIR 'afile' is a file, not a folder: "
                                                                 f"{TABLE_DIR}"),
    (["static-vectors", "en_elmo_small", "corpus.txt", "afile/sub", "--overwrite"],
     f"OUTPUT_DIR 'afile/sub': 'afile' is a file, not a folder: {TABLE_DIR}"),
])
def test_an_output_folder_that_is_a_file_is_named_as_such(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("keep me\n")
    (tmp_path / "corpus.txt").write_text("the cat sat on the mat\n")
    assert _run(argv) == (2, f"error: {message}")
    assert sorted(os.listdir(tmp_path)) == ["afile", "corpus.txt"] and (tmp_path / "afile").read_text() == "keep me\n"


def test_pretrain_api_names_an_output_dir_that_is_a_file(tmp_path):
    from spacy_elmo.errors import ElmoConfigError
    from spacy_elmo.pretrain.train import pretrain

    (tmp_path / "afile").write_text("keep me\n")
    with pytest.raises(ElmoConfigError) as err:
        pretrain(str(tmp_path / "afile"), overrides={"corpus.paths": [str(tmp_path / "missing.txt")]}, progress=False)
    assert str(err.value) == f"OUTPUT_DIR {str(tmp_path / 'afile')!r} is a file, not a folder: {RUN_DIR}"


@pytest.mark.parametrize("args, message", [
    (["--corpus.paths", "corpus.txt"], "[corpus] paths = 'corpus.txt' (--corpus.paths): expected a list (default: "
                                       "[]); write --corpus.paths '[\"corpus.txt\"]'"),
    (["--corpus.paths=it's here.txt"], "[corpus] paths = \"it's here.txt\" (--corpus.paths): expected a list "
                                       "(default: []); write --corpus.paths '[\"it'\"'\"'s here.txt\"]'"),
    (["--softmax.cutoffs", "2000"], "[softmax] cutoffs = 2000 (--softmax.cutoffs): expected a list (default: "
                                    "[2000, 10000, 40000]); write --softmax.cutoffs '[2000]'"),
    (["--model.filters", "3"], "[model] filters = 3 (--model.filters): expected a list (default: [[1, 32], [2, 32], "
                               "[3, 64], [4, 128], [5, 256]])"),  # a list of pairs: no one-item fix to offer
])
def test_a_list_override_without_brackets_shows_the_quoted_fix(args, message, tmp_path, monkeypatch):
    import shlex

    from spacy_elmo.pretrain.config import load_config, parse_overrides

    monkeypatch.chdir(tmp_path)
    assert _run(["pretrain", "OUT", *args]) == (2, f"error: {message}")
    assert list(tmp_path.iterdir()) == []
    if "; write " in message:  # the fix, as the shell splits it, is the one-item list
        fix = parse_overrides(shlex.split(message.split("; write ")[1]))
        key, value = next(iter(fix.items()))
        assert value == [parse_overrides(args)[key]]
        assert load_config(overrides=fix)[key.split(".")[0]][key.split(".")[1]] == value


STRAY = "Invalid config override {!r}: a name starts with --, and {} takes one value"
SYNTAX = ". Config overrides are --section.key VALUE (e.g. --training.max_steps 1000)."


@pytest.mark.parametrize("args, message, fix", [
    (["--corpus.paths", "a.txt", "b.txt"], STRAY.format("b.txt", "--corpus.paths") + " (a list is one JSON value); "
                                           "write --corpus.paths '[\"a.txt\", \"b.txt\"]'",
     {"corpus.paths": ["a.txt", "b.txt"]}),
    (["--corpus.paths=a b.txt", "it's.txt", "c.txt", "--training.max_steps", "3"],
     STRAY.format("it's.txt", "--corpus.paths") + " (a list is one JSON value); write --corpus.paths "
                                                 "'[\"a b.txt\", \"it'\"'\"'s.txt\", \"c.txt\"]'",
     {"corpus.paths": ["a b.txt", "it's.txt", "c.txt"]}),
    (["--softmax.cutoffs", "20", "60"], STRAY.format("60", "--softmax.cutoffs") + " (a list is one JSON value); "
                                        "write --softmax.cutoffs '[20, 60]'", {"softmax.cutoffs": [20, 60]}),
    (["--training.max_steps", "100", "200"], STRAY.format("200", "--training.max_steps") + SYNTAX, None),
    (["--model.filters", "1", "2"], STRAY.format("2", "--model.filters") + SYNTAX, None),  # pairs: no fix to offer
    (["--corpus.pathz", "a.txt", "b.txt"], "[corpus] pathz: unknown setting (--corpus.pathz); did you mean paths? "
                                           "Config overrides are --section.key VALUE (e.g. --training.max_steps "
                                           "1000).", None),
])
def test_several_values_after_a_setting_show_the_list_to_write(args, message, fix, tmp_path, monkeypatch):
    """The shell splits ``--corpus.paths a.txt b.txt`` (or an unquoted glob) into several values;
    spaCy's ``train`` says ``Invalid config override 'b.txt': name should start with --``. For a
    list setting the error also gives the one quoted JSON list that holds them all."""
    import shlex

    from spacy_elmo.pretrain.config import load_config, parse_overrides

    monkeypatch.chdir(tmp_path)
    assert _run(["pretrain", "OUT", *args]) == (2, f"error: {message}")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="^Invalid config override "):
        parse_overrides(args)
    assert ("; write " in message) == (fix is not None)
    if fix is not None:  # the fix, as the shell splits it, is the list of the values given
        assert parse_overrides(shlex.split(message.split("; write ")[1])) == fix
        (key, value), = fix.items()
        assert load_config(overrides=fix)[key.split(".")[0]][key.split(".")[1]] == value


def test_a_list_setting_in_a_config_file_shows_the_fix(tmp_path):
    from spacy_elmo.pretrain.config import load_config

    cfg = tmp_path / "my.cfg"
    cfg.write_text('[corpus]\npaths = "corpus.txt"\n')
    with pytest.raises(ValueError) as err:
        load_config(cfg)
    assert str(err.value) == (f"[corpus] paths = 'corpus.txt' in {cfg}: expected a list (default: []); write "
                              'paths = ["corpus.txt"]')
    cfg.write_text('[corpus]\npaths = ["corpus.txt"]\n')
    assert load_config(cfg)["corpus"]["paths"] == ["corpus.txt"]
