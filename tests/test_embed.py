"""``embed``: text / JSONL / DocBin -> HDF5 in AllenNLP's ``elmo`` layout (one dataset per line,
``sentence_to_index``), layer choices, float16, empty lines, resume after an interruption,
model names, one-line errors."""
import json
import os

import h5py
import numpy
import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.embed import embed_file, run, writer
from spacy_elmo.errors import ElmoConfigError

TINY = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 2], [2, 3]], "n_highway": 1}}
LINES = ["The river bank overflowed.", "", "I don't know, said the bank.", "The river bank overflowed.",
         "  Spaces   around  ", "Hi"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("model")
    bilm = BiLM(TINY)
    bilm.save(d)
    return str(d), bilm


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def tokens(text):
    tok = spacy.blank("en").tokenizer
    return [t.text for t in tok(text.strip()) if not t.is_space]


def read_allennlp(path):
    """What an AllenNLP-style reader does: sentence_to_index, then one dataset per sentence."""
    with h5py.File(path, "r") as f:
        s2i = json.loads(f["sentence_to_index"][0])
        return s2i, {k: f[k][()] for k in f.keys() if k != "sentence_to_index"}


def test_text_all_layers_allennlp_layout(model, tmp_path):
    d, bilm = model
    src = write_lines(tmp_path / "in.txt", LINES)
    summary = embed_file(src, str(tmp_path / "out.hdf5"), model=d, progress=False)
    assert summary["sentences"] == len(LINES) and summary["embedded"] == len(LINES)
    s2i, data = read_allennlp(tmp_path / "out.hdf5")
    assert sorted(data, key=int) == [str(i) for i in range(len(LINES))]
    L1, D = bilm.num_layers + 1, bilm.output_dim
    refs = bilm.embed_sentences([tokens(line) for line in LINES])
    for i, ref in enumerate(refs):
        assert data[str(i)].dtype == numpy.float32
        numpy.testing.assert_allclose(data[str(i)], ref, atol=1e-6)
    assert data["1"].shape == (L1, 0, D)  # the empty line
    assert data["2"].shape[1] == len(tokens(LINES[2])) == 9  # spaCy splits "do" "n't"
    assert s2i["I don't know, said the bank."] == "2" and s2i["The river bank overflowed."] == "3"
    assert s2i["Spaces   around"] == "4" and s2i[""] == "1"
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.hdf5"]  # no .tmp, no .parts left


@pytest.mark.parametrize("spec", ["top", "average", "mix:0.2,-0.5,1.3,gamma=0.7", "mix:0,0,0"])
def test_layer_choices(model, tmp_path, spec):
    d, bilm = model
    src = write_lines(tmp_path / "in.txt", LINES)
    embed_file(src, str(tmp_path / "o.hdf5"), model=d, layer_spec=spec, pretokenized=True, progress=False)
    _, data = read_allennlp(tmp_path / "o.hdf5")
    refs = bilm.embed_sentences([line.split() for line in LINES])
    if spec.startswith("mix"):
        from spacy_elmo.pipeline.layers.scalar_mix import ScalarMix

        parts = spec[4:].split(",")
        gamma = float(parts.pop()[6:]) if parts[-1].startswith("gamma=") else 1.0
        mix = ScalarMix([float(w) for w in parts], gamma=gamma)
        mix.initialize()
        want = mix.predict(refs)
    else:
        want = [r[-1] if spec == "top" else r.mean(0) for r in refs]
    for i, w in enumerate(want):
        assert data[str(i)].shape == (len(LINES[i].split()), bilm.output_dim)
        numpy.testing.assert_allclose(data[str(i)], w, atol=1e-5)


def test_float16(model, tmp_path):
    d, bilm = model
    src = write_lines(tmp_path / "in.txt", LINES)
    embed_file(src, str(tmp_path / "o.hdf5"), model=d, dtype="float16", pretokenized=True, progress=False)
    _, data = read_allennlp(tmp_path / "o.hdf5")
    ref = bilm.embed_sentences([LINES[0].split()])[0]
    assert data["0"].dtype == numpy.float16 and data["1"].dtype == numpy.float16
    numpy.testing.assert_allclose(data["0"], ref, atol=2e-3, rtol=2e-3)


def test_jsonl_and_docbin(model, tmp_path):
    d, bilm = model
    records = [{"text": "The cat sat."}, {"text": ["Pre", "split", "tokens"]}, {}, {"text": "Hi", "id": 4}]
    lines = [json.dumps(r) if r else "" for r in records]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    embed_file(str(tmp_path / "in.jsonl"), str(tmp_path / "j.hdf5"), model=d, progress=False)
    s2i, data = read_allennlp(tmp_path / "j.hdf5")
    assert data["1"].shape[1] == 3 and data["2"].shape[1] == 0 and s2i["Pre split tokens"] == "1"
    numpy.testing.assert_allclose(data["0"], bilm.embed_sentences([tokens("The cat sat.")])[0], atol=1e-6)

    nlp = spacy.blank("en")
    docs = [nlp("A first doc."), nlp(""), nlp("Second  one here")]
    DocBin(docs=docs).to_disk(tmp_path / "in.spacy")
    embed_file(str(tmp_path / "in.spacy"), str(tmp_path / "s.hdf5"), model=d, progress=False)
    s2i, data = read_allennlp(tmp_path / "s.hdf5")
    for i, doc in enumerate(docs):
        words = [t.text for t in doc if not t.is_space]
        assert data[str(i)].shape[1] == len(words)
        if words:
            numpy.testing.assert_allclose(data[str(i)], bilm.embed_sentences([words])[0], atol=1e-6)
    assert s2i["Second  one here"] == "2"


def test_bad_jsonl_line_names_the_line(model, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "ok"}\n{"body": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"in\.jsonl line 2: expected a JSON object with a string .* 'text'"):
        embed_file(str(tmp_path / "in.jsonl"), str(tmp_path / "o.hdf5"), model=model[0], progress=False)
    assert not (tmp_path / "o.hdf5").exists()


def test_interrupted_run_resumes_and_leaves_no_corrupt_file(model, tmp_path, monkeypatch):
    d, _ = model
    lines = [f"sentence number {i} with " + "word " * (i % 7) for i in range(60)] + [""] * 2
    src = write_lines(tmp_path / "in.txt", lines)
    out = str(tmp_path / "o.hdf5")
    small = {"model": d, "pretokenized": True, "progress": False, "group_mb": 0.002}  # ~21 tokens a group
    embed_file(src, str(tmp_path / "ref.hdf5"), **small)
    calls = []
    real = writer.Parts.write

    def flaky(self, first, last, items):
        calls.append(first)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(self, first, last, items)

    monkeypatch.setattr(writer.Parts, "write", flaky)
    with pytest.raises(KeyboardInterrupt):
        embed_file(src, out, **small)
    monkeypatch.setattr(writer.Parts, "write", real)
    assert not os.path.exists(out)  # never a half-written OUTPUT
    done = sorted(os.listdir(out + ".parts"))
    assert len([n for n in done if n.endswith(".json") and n.startswith("part-")]) == 3
    open(out + ".parts/part-000000999-000001000.bin.tmp", "wb").write(b"torn")  # a killed write
    open(out + ".tmp", "wb").write(b"not hdf5")  # a torn OUTPUT.tmp is rebuilt from the parts
    embedded = []
    monkeypatch.setattr(run, "_groups", _spy(run._groups, embedded))
    summary = embed_file(src, out, **small)
    assert summary["sentences"] == len(lines) and summary["embedded"] == len(lines) - sum(embedded[:3])
    s2i, data = read_allennlp(out)
    ref_s2i, ref = read_allennlp(tmp_path / "ref.hdf5")
    assert s2i == ref_s2i and data.keys() == ref.keys()
    for k in ref:
        numpy.testing.assert_array_equal(data[k], ref[k])
    assert not os.path.exists(out + ".parts") and not os.path.exists(out + ".tmp")
    assert embed_file(src, out, **small)["already_complete"]  # same arguments: nothing to do


def _spy(groups, seen):
    def wrapped(records, group_tokens):
        for g in groups(records, group_tokens):
            seen.append(len(g))
            yield g
    return wrapped


def test_existing_output_with_other_arguments(model, tmp_path):
    src = write_lines(tmp_path / "in.txt", LINES)
    out = str(tmp_path / "o.hdf5")
    embed_file(src, out, model=model[0], progress=False)
    with pytest.raises(ElmoConfigError, match="exists .*--overwrite"):
        embed_file(src, out, model=model[0], layer_spec="top", progress=False)
    embed_file(src, out, model=model[0], layer_spec="top", overwrite=True, progress=False)
    assert read_allennlp(out)[1]["0"].ndim == 2


@pytest.mark.parametrize("extra, message", [
    (["--layers", "bottom"], "expected all, top, average, layer_k or mix"),
    (["--layers", "mix:1,2"], "2 weights, but the model has 3 layers"),
    (["--layers", "mix:1,x,2"], "'x' is not a number"),
    (["--dtype", "float64"], "--dtype 'float64'"),
    (["--format", "csv"], "--format 'csv'"),
    (["--model", "elmo-small"], "not downloaded.*python -m spacy_elmo download elmo-small"),
    (["--precision", "int4"], "--precision 'int4': expected one of float32, bfloat16, int8"),
    (["--precision", "int8", "--ray", "auto"], "--precision int8: runs without --ray only"),
])
def test_cli_errors_are_one_line(model, tmp_path, extra, message):
    src = write_lines(tmp_path / "in.txt", LINES)
    argv = (["embed", src, str(tmp_path / "o.hdf5"), "--quiet"]
            + (["--model", model[0]] if "--model" not in extra else []))
    result = CliRunner().invoke(app, argv + extra)
    assert result.exit_code == 2
    import re

    assert re.search(message, result.output) and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o.hdf5").exists()


def test_cli_missing_input(model, tmp_path):
    result = CliRunner().invoke(app, ["embed", str(tmp_path / "nope.txt"), str(tmp_path / "o.hdf5"),
                                      "--model", model[0]])
    assert result.exit_code == 2 and "input file not found" in result.output


@pytest.mark.slow
def test_cli_ten_thousand_lines_with_progress(model, tmp_path):
    rng = numpy.random.default_rng(0)
    words = ["the", "river", "bank", "rates", "rose", "we", "sat", "on", "a", "of", "x"]
    lines = [" ".join(rng.choice(words, size=int(rng.integers(0, 12)))) for _ in range(10_000)]
    src = write_lines(tmp_path / "big.txt", lines)
    out = tmp_path / "big.hdf5"
    result = CliRunner().invoke(app, ["embed", src, str(out), "--model", model[0], "--pretokenized",
                                      "--layers", "top", "--dtype", "float16"])
    assert result.exit_code == 0, result.output
    assert "10,000 sentences" in result.output and "sent" in result.output  # the tqdm bar (stderr)
    s2i, data = read_allennlp(out)
    assert len(data) == 10_000
    for i in (0, 4_321, 9_999):
        assert data[str(i)].shape == (len(lines[i].split()), model[1].output_dim)
        assert s2i[lines[i]] in {str(j) for j, line in enumerate(lines) if line == lines[i]}


def test_tokens_per_second_is_of_the_bilm_alone(model, tmp_path, monkeypatch):
    """The rate excludes the model load and the reading: embed_seconds is the biLM's calls only,
    and the summary line says so."""
    import time

    from spacy_elmo.embed import run as embed_run

    src = write_lines(tmp_path / "s.txt", ["the river bank", "we sat"])
    reads = embed_run.read_groups

    def slow_reader(*args, **kwargs):
        time.sleep(0.3)  # a slow tokenizer load: not biLM time
        yield from reads(*args, **kwargs)

    monkeypatch.setattr(embed_run, "read_groups", slow_reader)
    summary = embed_file(src, str(tmp_path / "s.hdf5"), model=model[0], pretokenized=True, progress=False)
    assert 0 < summary["embed_seconds"] < summary["seconds"] - 0.25
    result = CliRunner().invoke(app, ["embed", src, str(tmp_path / "t.hdf5"), "--model", model[0], "--quiet"])
    assert result.exit_code == 0 and "tokens/s in the biLM" in result.output and "after the model load" in result.output


@pytest.mark.filterwarnings("ignore:spacy_elmo. precision = 'int8' falls back")
def test_precision_int8_and_its_output_arguments(model, tmp_path):
    """--precision int8 embeds with BiLM(precision="int8") (float32 on a CPU without int8
    instructions, with a warning); a non-default precision is one of the arguments that decide
    the output, so switching it needs --overwrite, and float32 outputs keep their arguments."""
    d, bilm = model
    src = write_lines(tmp_path / "in.txt", LINES)
    out = str(tmp_path / "out.hdf5")
    embed_file(src, out, model=d, progress=False)
    assert "precision" not in writer.written_args(out)
    with pytest.raises(ElmoConfigError, match="exists .*--overwrite"):
        embed_file(src, out, model=d, progress=False, precision="int8")
    embed_file(src, out, model=d, progress=False, precision="int8", overwrite=True)
    assert writer.written_args(out)["precision"] == "int8"
    low = BiLM.from_files(os.path.join(d, "options.json"), os.path.join(d, "weights.hdf5"), precision="int8")
    _, data = read_allennlp(out)
    differs = []
    for i, line in enumerate(LINES):
        want = low.embed_sentences([tokens(line)])[0]
        assert numpy.array_equal(data[str(i)], want)
        differs.append(not numpy.array_equal(want, bilm.embed_sentences([tokens(line)])[0]))
    assert any(differs) == (low.effective_precision == "int8")
    result = CliRunner().invoke(app, ["embed", src, out, "--model", d, "--quiet", "--precision", "int8"])
    assert result.exit_code == 0 and "already complete" in result.output
