"""``embed`` against careless commands and awkward inputs: OUTPUT that is the INPUT (same path,
hard link, symlink) or a directory is refused before any work."""
import os

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoConfigError

from test_embed import LINES, isolated, model, write_lines  # noqa: F401  (fixtures)


def _cli(argv):
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.output


@pytest.mark.parametrize("how", ["same", "hardlink", "symlink"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_output_that_is_the_input_is_refused(model, tmp_path, how, overwrite):  # noqa: F811
    src = write_lines(tmp_path / "s.txt", LINES)
    before = open(src, "rb").read()
    out = src if how == "same" else str(tmp_path / "o.hdf5")
    if how == "hardlink":
        os.link(src, out)
    elif how == "symlink":
        os.symlink(src, out)
    code, output = _cli(["embed", src, out, "--model", model[0], "--quiet"] + (["--overwrite"] if overwrite else []))
    assert code == 2
    assert "is the INPUT file" in output and len(output.strip().splitlines()) == 1
    assert open(src, "rb").read() == before
    assert not os.path.exists(out + ".tmp") and not os.path.exists(out + ".parts")


def test_output_that_is_a_directory_is_refused_before_any_work(model, tmp_path, monkeypatch):  # noqa: F811
    src = write_lines(tmp_path / "in.txt", LINES)
    out = tmp_path / "dir"
    out.mkdir()
    from spacy_elmo.bilm import BiLM

    monkeypatch.setattr(BiLM, "from_files", classmethod(lambda *a, **k: pytest.fail("model loaded")))
    with pytest.raises(ElmoConfigError, match="is a directory"):
        embed_file(src, str(out), model=model[0], overwrite=True, progress=False)
    code, output = _cli(["embed", src, str(out), "--model", model[0], "--quiet", "--overwrite"])
    assert code == 2 and "is a directory" in output and len(output.strip().splitlines()) == 1
    assert not [n for n in os.listdir(tmp_path) if n.startswith("dir.")]  # no dir.tmp, no dir.parts
    with pytest.raises(ElmoConfigError, match="does not exist"):
        embed_file(src, str(tmp_path / "missing" / "o.hdf5"), model=model[0], progress=False)


@pytest.mark.parametrize("name, fmt", [("in.txt", "text"), ("in.jsonl", "jsonl"), ("in.txt.gz", "text")])
def test_a_byte_order_mark_is_not_part_of_the_first_token(model, tmp_path, name, fmt):  # noqa: F811
    import gzip
    import json

    from spacy_elmo.embed import inputs

    lines = ["Hello world .", "Bye ."]
    body = "\n".join(json.dumps({"text": x}) if fmt == "jsonl" else x for x in lines) + "\n"
    data = b"\xef\xbb\xbf" + body.encode("utf-8")
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    for tokenize in (str.split, inputs.make_tokenizer(False)):
        records = list(inputs.read(str(path), fmt, tokenize))
        assert records[0].text == "Hello world ." and records[0].tokens == ["Hello", "world", "."]
    out = str(tmp_path / "o.hdf5")
    embed_file(str(path), out, model=model[0], progress=False)
    plain = write_lines(tmp_path / "plain.txt", lines)
    embed_file(plain, str(tmp_path / "p.hdf5"), model=model[0], progress=False)
    import h5py
    import numpy

    with h5py.File(out, "r") as f, h5py.File(tmp_path / "p.hdf5", "r") as g:
        assert json.loads(f["sentence_to_index"][0]) == {"Hello world .": "0", "Bye .": "1"}
        assert numpy.array_equal(f["0"][()], g["0"][()])


def test_a_huge_line_is_refused_before_it_is_tokenised(model, tmp_path, monkeypatch):  # noqa: F811
    import resource

    from spacy_elmo.embed import inputs

    huge = " ".join(["bank"] * 1_180_000)  # 5.9 MB, one line
    src = write_lines(tmp_path / "in.txt", ["A short line .", huge, "Another ."])
    calls = []
    monkeypatch.setattr(inputs, "make_tokenizer", lambda *a: lambda text: calls.append(len(text)) or text.split())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match=r"in.txt line 2: more than 100,000 tokens, above the limit of 100,000 per "
                                         r"line .*raise --max-tokens-per-line"):
        embed_file(src, str(tmp_path / "o.hdf5"), model=model[0], progress=False)
    assert calls == [len("A short line .")]  # the huge line never reached the tokenizer
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB
    with pytest.raises(ValueError, match="line 2: 5 tokens, above the limit of 3 per line"):
        list(inputs.read(write_lines(tmp_path / "s.txt", ["a b", "a b c.d"]), "text", lambda t: t.replace(".", " . ")
                         .split(), max_tokens=3))


def test_cli_max_tokens_per_line(model, tmp_path):  # noqa: F811
    src = write_lines(tmp_path / "in.jsonl", ['{"text": "a b c"}', '{"text": ["a", "b", "c", "d"]}'])
    code, output = _cli(["embed", src, str(tmp_path / "o.hdf5"), "--model", model[0], "--quiet",
                         "--max-tokens-per-line", "3"])
    assert code == 2 and len(output.splitlines()) == 1
    assert "in.jsonl line 2: 4 tokens, above the limit of 3 per line" in output
    code, output = _cli(["embed", src, str(tmp_path / "o.hdf5"), "--model", model[0], "--quiet",
                         "--max-tokens-per-line", "4"])
    assert code == 0, output
    assert "--max-tokens-per-line" in CliRunner().invoke(app, ["embed", "--help"]).output
