"""Text files that are not UTF-8: every command that reads text names the file, the first line
that does not decode, the byte and its offset, and the command that converts the file, in one
line (exit status 2), for plain and gzip files alike (:mod:`spacy_elmo.text_files`)."""
import gzip
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.errors import ElmoDataError
from spacy_elmo.text_files import first_undecodable, text_lines

LINES = ["the cat sat on the mat .", "a dog sat on the rug .", "the café was closed .", "we went home ."]
OFFSET = len("\n".join(LINES[:2]).encode("utf-8")) + 1 + len("the caf")  # 0xE9 of "café" in Latin-1


def write(path, lines=LINES, encoding="latin-1", newline="\n"):
    data = newline.join(lines).encode(encoding) + newline.encode(encoding)
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return str(path)


def expected(path):
    if path.endswith(".gz"):
        fixed = path[: -len(".txt.gz")] + ".utf8.txt.gz"
        return (f"{path} line 3: not UTF-8 text (byte 0xE9 at offset {OFFSET} of the uncompressed text); convert "
                f"the file to UTF-8, e.g. from Latin-1: gunzip -c {path} | iconv -f LATIN1 -t UTF-8 | gzip > {fixed}")
    fixed = path[: -len(".txt")] + ".utf8.txt"
    return (f"{path} line 3: not UTF-8 text (byte 0xE9 at offset {OFFSET} of the file); convert the file to "
            f"UTF-8, e.g. from Latin-1: iconv -f LATIN1 -t UTF-8 {path} > {fixed}")


@pytest.fixture(params=["corpus.txt", "corpus.txt.gz"])
def latin1(request, tmp_path, monkeypatch):
    """A Latin-1 file (relative name: the message's command is then short and exact)."""
    monkeypatch.chdir(tmp_path)
    return write(tmp_path / request.param).rpartition("/")[2]


def _cli(argv):
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.output.strip().splitlines()[-1], result.output


def test_the_reader_names_line_byte_offset_and_fix(latin1):
    assert OFFSET == 55
    with pytest.raises(ElmoDataError) as err:
        list(text_lines(latin1))
    assert str(err.value) == expected(latin1) and err.value.path == latin1
    assert first_undecodable(latin1) == (3, OFFSET, 0xE9)


@pytest.mark.skipif(shutil.which("iconv") is None or shutil.which("gzip") is None, reason="no iconv or gzip")
def test_the_command_in_the_message_converts_the_file(latin1):
    with pytest.raises(ElmoDataError) as err:
        list(text_lines(latin1))
    command = str(err.value).split("e.g. from Latin-1: ", 1)[1]
    subprocess.run(command, shell=True, check=True)
    fixed = command.rsplit("> ", 1)[1]
    assert [line.rstrip("\n") for line in text_lines(fixed)] == LINES


@pytest.mark.parametrize("newline, line", [(None, 4), ("\n", 2)])
def test_lines_are_counted_as_the_reader_splits_them(tmp_path, newline, line):
    """A lone ``\\r`` ends a line where the reader splits on any line end (pretrain), not where only
    ``\\n`` does (embed); offsets count every byte, ``\\r\\n`` and a byte order mark included."""
    data = b"\xef\xbb\xbfone\r\ntwo\rthree\r\xe9\n"
    path = tmp_path / "mixed.txt"
    path.write_bytes(data)
    assert first_undecodable(path, newline) == (line, 18, 0xE9) and data.index(b"\xe9") == 18
    with pytest.raises(ElmoDataError, match=rf"mixed.txt line {line}: not UTF-8 text \(byte 0xE9 at offset 18 "):
        list(text_lines(path, newline))


def test_a_good_file_reads_as_open_reads_it_and_a_bom_is_dropped(tmp_path):
    path = write(tmp_path / "good.txt.gz", ["\ufeffcafé", "naïve", ""], encoding="utf-8", newline="\r\n")
    assert list(text_lines(path)) == ["café\n", "naïve\n", "\n"]
    assert list(text_lines(path, "\n")) == ["café\r\n", "naïve\r\n", "\r\n"]
    assert first_undecodable(path) is None


def test_utf16_gets_the_utf16_conversion(tmp_path):
    path = write(tmp_path / "wide.txt", ["hello"], encoding="utf-16")
    with pytest.raises(ElmoDataError) as err:
        list(text_lines(path))
    assert str(err.value) == (f"{path} line 1: not UTF-8 text (byte 0xFF at offset 0 of the file); convert the file "
                              f"to UTF-8, e.g. from UTF-16: iconv -f UTF-16 -t UTF-8 {path} > {tmp_path}/wide.utf8.txt")


def test_a_corrupt_gzip_is_named(tmp_path):
    path = tmp_path / "cut.txt.gz"
    whole = gzip.compress("".join(f"line {i}\n" for i in range(5000)).encode())
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ElmoDataError, match=r"cut.txt.gz: cannot read \(Compressed file ended"):
        list(text_lines(path))


def test_pretrain(latin1):
    code, line, _ = _cli(["pretrain", "out", "--corpus.paths", f'["{latin1}"]', "--quiet"])
    assert (code, line) == (2, f"error: {expected(latin1)}")


def test_embed_text_and_jsonl(latin1, tiny_model):
    code, line, output = _cli(["embed", latin1, "out.hdf5", "--model", tiny_model.directory, "--quiet"])
    assert (code, output.strip()) == (2, f"error: {expected(latin1)}")
    jsonl = write(Path(latin1.replace(".txt", ".jsonl")), [f'{{"text": "{text}"}}' for text in LINES])
    code, line, _ = _cli(["embed", jsonl, "out.hdf5", "--model", tiny_model.directory, "--quiet"])
    assert code == 2 and line.startswith(f"error: {jsonl} line 3: not UTF-8 text (byte 0xE9 at offset ")


def test_static_vectors(latin1, tiny_model):
    code, line, output = _cli(["static-vectors", tiny_model.directory, latin1, "vectors", "--quiet"])
    assert (code, output.strip()) == (2, f"error: {expected(latin1)}")


@pytest.mark.slow
def test_perplexity(latin1, tmp_path):
    from spacy_elmo.pretrain.train import pretrain

    from test_pretrain import TINY

    good = write(tmp_path / "good.txt", LINES * 20, encoding="utf-8")
    pretrain(str(tmp_path / "run"), overrides={**TINY, "corpus.paths": [good]}, progress=False, stop_after=0)
    code, line, _ = _cli(["perplexity", str(tmp_path / "run" / "model"), latin1])
    assert (code, line) == (2, f"error: {expected(latin1)}")


def test_probe_readers(latin1, tmp_path):
    from spacy_elmo.probe.centering import lm_sample
    from spacy_elmo.probe.ewt import read_conllu
    from spacy_elmo.probe.wic import read_split

    with pytest.raises(ElmoDataError) as err:
        lm_sample(latin1, 10)
    assert str(err.value) == expected(latin1)
    conllu = write(tmp_path / "ud.conllu", ["# text = café", "1\tcafé\tcafé\tNOUN\t_\t_\t0\troot\t_\t_"])
    with pytest.raises(ElmoDataError, match=r"ud.conllu line 1: not UTF-8 text \(byte 0xE9 at offset 12 of"):
        read_conllu(conllu)
    write(tmp_path / "dev.data.txt", ["café\tN\t0-0\tcafé\tcafé ."])
    write(tmp_path / "dev.gold.txt", ["T"], encoding="utf-8")
    with pytest.raises(ElmoDataError, match=r"dev.data.txt line 1: not UTF-8 text \(byte 0xE9 at offset 3 of"):
        read_split(str(tmp_path), "dev")


def test_allennlp_embed_file(latin1, tmp_path):
    """``ElmoEmbedder.embed_file`` given a path reads it as every command does: the same one-line
    error, before anything is written; a .gz path is read through gzip."""
    from spacy_elmo.allennlp import ElmoEmbedder

    from allennlp_reference import model_files

    embedder = ElmoEmbedder(*model_files("random"))
    out = tmp_path / "out.hdf5"
    with pytest.raises(ElmoDataError) as err:
        embedder.embed_file(latin1, out)
    assert str(err.value) == expected(latin1) and not out.exists()
    good = write(tmp_path / "good.txt.gz", LINES, encoding="utf-8")
    embedder.embed_file(good, out, output_format="top")
    import h5py

    with h5py.File(out, "r") as f:
        assert [f[str(i)].shape[0] for i in range(len(LINES))] == [len(line.split()) for line in LINES]


@pytest.mark.parametrize("name,what", [("options.json", "options file"), ("vocab.txt", "vocabulary"),
                                       ("char.dic", "dictionary")])
def test_model_files_name_the_line(tmp_path, name, what):
    """A model's small text files (options.json, vocab.txt, a char.dic) that are not UTF-8: one
    line naming the file, the line, the byte and its offset (ElmoModelFileError)."""
    from spacy_elmo.bilm.options import read_options
    from spacy_elmo.convert.efml import read_dic
    from spacy_elmo.errors import ElmoModelFileError
    from spacy_elmo.pretrain.export import read_vocab

    path = tmp_path / name
    path.write_bytes(b'{\n  "a": 1,\n  "caf\xe9": 2\n}\n' if name == "options.json" else b"a\t0\nthe\t1\ncaf\xe9\t2\n")
    offset = path.read_bytes().index(b"\xe9")
    read = {"options.json": read_options, "vocab.txt": read_vocab, "char.dic": read_dic}[name]
    with pytest.raises(ElmoModelFileError) as err:
        read(str(path))
    assert str(err.value) == (f"{path} line 3: not UTF-8 text (byte 0xE9 at offset {offset} of the file); "
                              f"the {what} must be UTF-8")
