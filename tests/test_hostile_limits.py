"""Limits checked before memory is taken, and options that must be finite.

- A model's size is computed from options.json by arithmetic (no per-layer table), and every
  dataset that will be read (vocabularies and an LM head too) is checked against the shape the
  options imply, and counted against $SPACY_ELMO_MAX_PARAMS, before any is read.
- A model larger than the machine's memory is refused even with the limit raised; a
  MemoryError while loading is a one-line error.
- Small text files (options, configs, dictionaries) are read only when they are regular files
  of a bounded size: a FIFO or a symlink to /dev/zero is refused at once.
- NaN or infinite numbers are refused in options.json, ELMoForManyLangs configs, the pipeline's
  settings and pretraining configs.
Every hostile input is built here; command lines are checked for exit code 2, one line on
stderr and no traceback."""
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.files import CONFIG_BYTES, read_json
from spacy_elmo.bilm.sizes import check_size, n_params, physical_memory
from spacy_elmo.bilm.weights import layout
from spacy_elmo.convert import convert
from spacy_elmo.errors import ElmoFileError, ElmoModelFileError

from helpers import REPO, elmo_config
from test_hub_download import isolated, serve_urls, server  # noqa: F401  (fixtures)

EFML = Path(__file__).resolve().parent / "data" / "efml" / "relu-words-1layer"
HUGE = 10 ** 30


def _cli(argv):
    result = CliRunner().invoke(app, [str(a) for a in argv])
    return result.exit_code, result.output.strip()


def _one_line_error(code, output, *parts):
    assert code == 2, output
    assert output.startswith("error: ") and len(output.splitlines()) == 1, output
    assert "Traceback" not in output
    for part in parts:
        assert part in output, output


def _copy(model_dir, tmp_path, name="model") -> Path:
    d = tmp_path / name
    shutil.copytree(model_dir, d)
    (d / "sha256.json").unlink(missing_ok=True)
    return d


def _edit_options(d: Path, edit) -> dict:
    options = json.loads((d / "options.json").read_text())
    edit(options)
    (d / "options.json").write_text(json.dumps(options))
    return options


def _sparse_weights(d: Path, options: dict) -> None:
    """weights.hdf5 with every dataset of the options, chunked and never written: a few KB."""
    with h5py.File(d / "weights.hdf5", "w") as f:
        for name, shape in layout(options).items():
            f.create_dataset(name, shape=shape, dtype="f4", chunks=True, fillvalue=0.0)


def _set(options, dotted, value):
    *parents, last = dotted.split(".")
    for key in parents:
        options = options[key]
    options[last] = value


@pytest.fixture()
def sentences(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The cat sat .\n")
    return path


# ---- sizes from the options --------------------------------------------------------------------


def test_the_count_is_arithmetic_and_equals_the_layout(tiny_model):
    options = BiLM.from_pretrained(tiny_model.directory).options
    assert n_params(options) == sum(math.prod(s) for s in layout(options).values())
    words = {**options, "format_version": 2, "char_cnn": {**options["char_cnn"], "n_characters": 40,
                                                          "max_characters_per_token": 20},
             "vocab": {"indexer": "elmoformanylangs", "word_dim": 6, "n_words": 30}}
    assert n_params(words) == sum(math.prod(s) for s in layout(words).values())
    deep = {**options, "lstm": {**options["lstm"], "n_layers": 10 ** 9}}
    per_layer = 2 * (2 * 16 * 4 * 64 + 4 * 64 + 64 * 16)
    assert n_params(deep) == n_params(options) + (10 ** 9 - 2) * per_layer  # without a 6e9-entry table
    with pytest.raises(ElmoModelFileError, match="n_layers 1,000,000,000"):
        check_size(deep, "x")


@pytest.mark.parametrize("key, value, message", [
    ("lstm.n_layers", 10 ** 12, "lstm.n_layers: expected a positive integer (at most 2,147,483,647)"),
    ("lstm.n_layers", 10 ** 9, "n_layers 1,000,000,000"),
    ("lstm.dim", 10 ** 9, "lstm.dim 1,000,000,000"),
    ("char_cnn.filters", [[1, 10 ** 9]], "1,000,000,000 filters"),
    ("char_cnn.embedding", {"dim": 10 ** 12}, "char_cnn.embedding.dim: expected a positive integer"),
    ("char_cnn.n_highway", 10 ** 9, "above the limit of 374,403,392"),
])
def test_huge_options_are_refused_before_anything_is_built(tiny_model, tmp_path, sentences, key, value, message):
    d = _copy(tiny_model.directory, tmp_path)
    _edit_options(d, lambda o: _set(o, key, value))
    assert (d / "options.json").stat().st_size < 1000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _one_line_error(*_cli(["embed", sentences, tmp_path / "out.hdf5", "--model", d]), message)
    with pytest.raises(ElmoModelFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BiLM.from_pretrained(str(d))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB: no table was built
    assert not (tmp_path / "out.hdf5").exists()


def test_a_raised_limit_still_refuses_a_model_larger_than_memory(tiny_model, tmp_path, sentences, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", str(HUGE))
    d = _copy(tiny_model.directory, tmp_path)
    options = _edit_options(d, lambda o: _set(o, "lstm.dim", 10 ** 9))
    _sparse_weights(d, options)
    assert (d / "weights.hdf5").stat().st_size < 1_000_000
    code, output = _cli(["embed", sentences, tmp_path / "out.hdf5", "--model", d])
    _one_line_error(code, output, "weights.hdf5", "of physical memory", "$SPACY_ELMO_MAX_PARAMS is 1,000,000,")
    with pytest.raises(MemoryError, match="refusing to load it") as err:  # an ElmoMemoryError, also a ValueError
        BiLM.from_pretrained(str(d))
    assert isinstance(err.value, ElmoModelFileError)


MEMORY_LIMITED = textwrap.dedent("""
    import resource, sys
    import h5py, numpy, torch  # their mappings count before the limit
    from spacy_elmo.__main__ import main
    vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), resource.RLIM_INFINITY))
    sys.argv = ["spacy_elmo"] + sys.argv[1:]
    main()
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
def test_memory_error_while_loading_is_one_line(tiny_model, tmp_path, sentences):
    """A process that may take 512 MB more than it holds, and a model of 4.7 GB (fewer bytes than
    the machine's memory, so only the allocation can fail): one line naming the file and the limit."""
    d = _copy(tiny_model.directory, tmp_path)
    options = _edit_options(d, lambda o: _set(o, "lstm.dim", 2_000_000))
    _sparse_weights(d, options)
    env = dict(os.environ, SPACY_ELMO_MAX_PARAMS=str(10 ** 10), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", MEMORY_LIMITED, "embed", str(sentences), str(tmp_path / "o.hdf5"),
                           "--model", str(d)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {d / 'weights.hdf5'}: "), proc.stderr
    memory = physical_memory()
    if memory is None or memory > 4 * n_params(options):
        assert "out of memory while loading the model (1,184,067,232 parameters, 4.7 GB" in proc.stderr
    assert "the limit $SPACY_ELMO_MAX_PARAMS is 10,000,000,000" in proc.stderr


# ---- every dataset read is checked first ---------------------------------------------------------


@pytest.fixture()
def words_model(tmp_path_factory) -> Path:
    """A converted ELMoForManyLangs model (format_version 2: vocabularies in weights.hdf5)."""
    out = tmp_path_factory.mktemp("efml") / "model"
    convert(str(EFML), str(out))
    (out / "sha256.json").unlink()
    return out


def _declare(d: Path, name: str, n: int) -> None:
    """Replace dataset ``name`` by one declaring ``n`` items, never written."""
    with h5py.File(d / "weights.hdf5", "a") as f:
        dtype = f[name].dtype
        del f[name]
        f.create_dataset(name, shape=(n,), dtype=dtype, chunks=(1 << 16,))


@pytest.mark.parametrize("name, n, message", [
    ("vocab/words/utf8", 8 * 10 ** 10, "dataset vocab/words/utf8 declares 80,000,000,000 bytes, but options.json "
                                       "implies at most 1,200 for 30 entries"),
    ("vocab/chars/ids", 10 ** 10, "vocab/chars/ids declare 44 and 10,000,000,000 entries, but options.json implies"),
])
def test_a_vocabulary_declaring_gigabytes_is_refused_before_reading(words_model, tmp_path, sentences, name, n,
                                                                     message):
    d = _copy(words_model, tmp_path)
    _declare(d, name, n)
    assert (d / "weights.hdf5").stat().st_size < 100_000
    _one_line_error(*_cli(["embed", sentences, tmp_path / "out.hdf5", "--model", d]), message)
    with pytest.raises(ElmoModelFileError, match=message) as err:
        BiLM.from_pretrained(str(d))
    assert err.value.dataset.startswith("vocab/")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config((str(d / "options.json"), str(d / "weights.hdf5"))))
    with pytest.raises(ValueError, match=f"cannot load the ELMo biLM: .*{message}"):
        nlp.initialize()


def test_vocabularies_count_against_the_limit(words_model, monkeypatch):
    options = BiLM.from_pretrained(str(words_model)).options
    params = n_params(options)
    with h5py.File(words_model / "weights.hdf5", "r") as f:
        vocab = sum(f[f"vocab/{p}/{k}"].size for p in ("chars", "words") for k in ("utf8", "lengths", "ids"))
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", str(params + vocab - 1))
    with pytest.raises(ElmoModelFileError, match=f"imply {params:,} parameters and {vocab:,} vocabulary values"):
        BiLM.from_pretrained(str(words_model))
    monkeypatch.setenv("SPACY_ELMO_MAX_PARAMS", str(params + vocab))
    assert BiLM.from_pretrained(str(words_model)).indexer.words


def test_download_validation_refuses_without_reading(server, words_model, tiny_model, tmp_path):  # noqa: F811
    d = _copy(words_model, tmp_path)
    _declare(d, "vocab/words/utf8", 8 * 10 ** 10)
    urls = serve_urls(server, (None, (d / "options.json").read_bytes(), (d / "weights.hdf5").read_bytes()))
    code, output = _cli(["download", urls["options.json"], urls["weights.hdf5"], "--name", "x", "--quiet"])
    _one_line_error(code, output, "not a usable ELMo model", "vocab/words/utf8 declares 80,000,000,000 bytes",
                    "nothing was kept")
    deep = _copy(tiny_model.directory, tmp_path, "deep")
    _edit_options(deep, lambda o: _set(o, "lstm.n_layers", 10 ** 9))
    urls = serve_urls(server, (None, (deep / "options.json").read_bytes(), (deep / "weights.hdf5").read_bytes()))
    code, output = _cli(["download", urls["options.json"], urls["weights.hdf5"], "--name", "y", "--quiet"])
    _one_line_error(code, output, "n_layers 1,000,000,000", "above the limit of 374,403,392")


def test_an_lm_head_dataset_is_checked_before_reading(tmp_path):
    from spacy_elmo.pretrain.export import load_model, write_model
    from spacy_elmo.pretrain.lm import LanguageModel, model_options

    cfg = {"char_dim": 4, "filters": [[1, 4], [2, 8]], "n_highway": 1, "activation": "relu", "lstm_dim": 16,
           "projection_dim": 8, "n_layers": 1, "use_skip_connections": False}
    words = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(40)]
    lm = LanguageModel.new(model_options(cfg), {"cutoffs": [10], "div_value": 2.0}, len(words), lstm_impl="torch")
    write_model(lm, words, str(tmp_path / "m"), {})
    (tmp_path / "m" / "sha256.json").unlink()
    assert load_model(str(tmp_path / "m"))[1] == words
    with h5py.File(tmp_path / "m" / "lm_head.hdf5", "a") as f:
        del f["head.weight"]
        f.create_dataset("head.weight", shape=(10 ** 9, 8), dtype="f4", chunks=(1 << 14, 8))
    assert (tmp_path / "m" / "lm_head.hdf5").stat().st_size < 100_000
    with pytest.raises(ElmoModelFileError, match=r"lm_head.hdf5: dataset 'head.weight' has shape \(1000000000, 8\), "
                                               r"but options.json / vocab.txt implies \(11, 8\)"):
        load_model(str(tmp_path / "m"))


# ---- small files: regular, and capped ----------------------------------------------------------


FIFO_CONVERT = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))
    from spacy_elmo.__main__ import main
    sys.argv = ["spacy_elmo"] + sys.argv[1:]
    main()
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX special files")
@pytest.mark.parametrize("file, kind", [("char.dic", "zero"), ("config.json", "fifo"), ("word.dic", "fifo"),
                                        ("encoder.pkl", "fifo")])
def test_convert_refuses_special_files_at_once(tmp_path, file, kind):
    src = _copy(EFML, tmp_path, "src")
    (src / file).unlink()
    if kind == "zero":
        (src / file).symlink_to("/dev/zero")
    else:
        os.mkfifo(src / file)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", FIFO_CONVERT, "convert", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=120)
    what = "a character device" if kind == "zero" else "a FIFO (named pipe)"
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {src / file}: "), proc.stderr
    assert f"is {what}, not a regular file; refusing to read it" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_small_file_above_its_cap_is_refused_unread(tmp_path):
    src = _copy(EFML, tmp_path, "src")
    with open(src / "config.json", "r+b") as f:
        f.truncate(CONFIG_BYTES + 1)  # sparse: nothing on disk
    _one_line_error(*_cli(["convert", src, tmp_path / "out"]), f"{src / 'config.json'}: the config.json is larger "
                                                               f"than {CONFIG_BYTES:,} bytes")
    with pytest.raises(ElmoFileError, match="larger than 16,777,216 bytes") as err:
        read_json(src / "config.json")
    assert isinstance(err.value, OSError)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
@pytest.mark.parametrize("file", ["options.json", "sha256.json"])
def test_model_files_that_are_fifos_are_refused(tiny_model, tmp_path, file):
    d = _copy(tiny_model.directory, tmp_path)
    shutil.copy(Path(tiny_model.directory, "sha256.json"), d / "sha256.json")
    (d / file).unlink()
    os.mkfifo(d / file)
    with pytest.raises(ElmoModelFileError, match=f"{file}: the .* is a FIFO"):
        BiLM.from_pretrained(str(d))


# ---- non-finite options ------------------------------------------------------------------------


@pytest.mark.parametrize("key, literal", [("lstm.cell_clip", "NaN"), ("lstm.proj_clip", "Infinity"),
                                          ("dropout", "-Infinity")])
def test_non_finite_options_are_refused(tiny_model, tmp_path, sentences, key, literal):
    d = _copy(tiny_model.directory, tmp_path)
    _edit_options(d, lambda o: _set(o, key, float(literal.replace("Infinity", "inf"))))
    assert literal in (d / "options.json").read_text()  # what Python's JSON writes, and reads back
    _one_line_error(*_cli(["embed", sentences, tmp_path / "out.hdf5", "--model", d]),
                    f"options.json: {key}: expected a finite number, got")
    assert not (tmp_path / "out.hdf5").exists()
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config((str(d / "options.json"), str(d / "weights.hdf5"))))
    with pytest.raises(ValueError, match=f"{key}: expected a finite number"):
        nlp.initialize()


def test_download_refuses_non_finite_options_by_name(server, tiny_model, tmp_path):  # noqa: F811
    d = _copy(tiny_model.directory, tmp_path)
    _edit_options(d, lambda o: _set(o, "lstm.cell_clip", float("nan")))
    urls = serve_urls(server, (None, (d / "options.json").read_bytes(), (d / "weights.hdf5").read_bytes()))
    code, output = _cli(["download", urls["options.json"], urls["weights.hdf5"], "--name", "x", "--quiet"])
    _one_line_error(code, output, "lstm.cell_clip: expected a finite number, got nan", "nothing was kept")


def test_convert_refuses_a_non_finite_config(tmp_path):
    src = _copy(EFML, tmp_path, "src")
    config = src / f"{EFML.name}.json"
    config.write_text(config.read_text().replace('"cell_clip": 3', '"cell_clip": NaN'))
    assert "NaN" in config.read_text()
    _one_line_error(*_cli(["convert", src, tmp_path / "out"]), "encoder.cell_clip: expected a finite number")


NAN_SETTINGS = [
    ("spacy_elmo.ElmoListener.v1", {"grad_factor": math.nan}, "grad_factor must be a finite number >= 0"),
    ("spacy_elmo.ElmoListener.v1", {"dropout": math.nan}, "dropout must be a finite number >= 0 and < 1"),
    ("spacy_elmo.ElmoListener.v1", {"initial_weights": [0.0, math.inf, 0.0]}, "initial_weights must be finite"),
    ("spacy_elmo.Elmo.v1", {"grad_factor": math.inf}, "grad_factor must be a finite number >= 0"),
    ("spacy_elmo.Elmo.v1", {"dropout": -math.inf}, "dropout must be a finite number"),
    ("spacy_elmo.ScalarMix.v1", {"gamma": math.nan}, "gamma must be a finite number"),
    ("spacy_elmo.ScalarMix.v1", {"initial_weights": [math.nan]}, "initial_weights must be finite"),
]


@pytest.mark.parametrize("architecture, settings, message", NAN_SETTINGS)
def test_pipeline_settings_must_be_finite(architecture, settings, message):
    """The architectures as Python builds them (spaCy itself refuses NaN in a component's config:
    E961, not JSON-serializable)."""
    from spacy.util import registry

    with pytest.raises(ValueError, match=message):
        registry.architectures.get(architecture)(**settings)


@pytest.mark.parametrize("text, message", [
    ("[softmax]\ncutoffs = [2000, NaN]\n", r"\[softmax\] cutoffs = \[2000, nan\] in .*: item 1 is nan"),
    ("[model]\nfilters = [[1, 32], [2, Infinity]]\n", r"\[model\] filters = .* in .*: item 1.1 is inf"),
])
def test_pretraining_configs_must_be_finite(tmp_path, text, message):
    from spacy_elmo.errors import ElmoConfigError
    from spacy_elmo.pretrain.config import load_config

    path = tmp_path / "config.cfg"
    path.write_text(text)
    with pytest.raises(ElmoConfigError, match=message):
        load_config(path)
