"""The GPU chain's pieces on CPU, without network: config overrides without spaCy, the
pre-tokenised corpus, the model parts (split / join / verify), the size accounting and the wheel
plan of dev/device/bundle.py, the report, gpu_check.sh's steps, and the refusal of
``n_process`` on CUDA (dev/device/; spacy_elmo/pretrain/corpus_pack.py)."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.pretrain.config import parse_overrides
from spacy_elmo.pretrain.corpus import Split
from spacy_elmo.pretrain.corpus_pack import pack, read_pack, slice_split

from helpers import REPO, load_script, tiny_corpus_overrides

BLOCK_SPACY = """import sys
class _NoSpacy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("spacy", "thinc"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)")
sys.meta_path.insert(0, _NoSpacy())
"""


@pytest.fixture(scope="module")
def parts():
    return load_script("dev/device/parts.py")


@pytest.fixture(scope="module")
def bundle():
    return load_script("dev/device/bundle.py")


def test_parse_overrides_reads_values_as_spacy_does():
    got = parse_overrides(["--training.max_steps", "1000", "--training.device=cuda", "--corpus.paths",
                           '["a.txt", "b.txt"]', "--training.compile", "--training.init_from", "null",
                           "--training.learning_rate", "0.5"])
    assert got == {"training.max_steps": 1000, "training.device": "cuda", "corpus.paths": ["a.txt", "b.txt"],
                   "training.compile": True, "training.init_from": None, "training.learning_rate": 0.5}
    with pytest.raises(ValueError, match="No such option '--bogus'"):
        parse_overrides(["--bogus", "3"])
    with pytest.raises(ValueError, match="Invalid config override 'max_steps': a name starts with --"):
        parse_overrides(["max_steps", "3"])


def test_pretrain_cli_runs_without_spacy(tmp_path):
    """`python -m spacy_elmo pretrain` on a pre-tokenised corpus with spaCy and thinc not
    importable (the GPU machine): the override parsing needs no spaCy."""
    overrides = tiny_corpus_overrides(tmp_path / "run")
    overrides["training.max_steps"] = 2
    args = ["pretrain", str(tmp_path / "run"), "--quiet"]
    for key, value in overrides.items():
        args += [f"--{key}", json.dumps(value)]
    code = BLOCK_SPACY + f"from spacy_elmo.__main__ import app\napp({args!r})\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((tmp_path / "run" / "model" / "meta.json").read_text())
    assert meta["training"]["steps"] == 2 and meta["corpus"]["train_tokens"] == 480


def _corpus(n_sentences=3500, seed=0):
    rng = numpy.random.default_rng(seed)
    lengths = rng.integers(1, 30, size=n_sentences)
    tokens = rng.integers(2, 400, size=int(lengths.sum())).astype(numpy.int32)
    offsets = numpy.concatenate([[0], numpy.cumsum(lengths)]).astype(numpy.int64)
    types = ["<S>", "</S>"] + [f"w{i}" for i in range(2, 400)] + ["never-seen"]
    return types, Split(tokens, offsets)


def _sentences(types, split):
    return [[types[t] for t in split.tokens[split.offsets[i]: split.offsets[i + 1]]] for i in range(len(split))]


def test_pack_round_trip_and_slice(tmp_path):
    types, train = _corpus()
    _, heldout = _corpus(50, seed=1)
    section = {"paths": ["x.txt"], "block_lines": 1000, "heldout_every": 100, "max_sentence_tokens": 50,
               "max_lines_per_file": 0, "license": "CC0"}
    info = pack(str(tmp_path / "c.npz.xz"), types, train, heldout, {"x.txt": {"lines": 1}}, section)
    back = read_pack(str(tmp_path / "c.npz.xz"))
    assert _sentences(back["types"], back["train"]) == _sentences(types, train)
    assert _sentences(back["types"], back["heldout"]) == _sentences(types, heldout)
    assert "never-seen" not in back["types"] and back["types"][:2] == ["<S>", "</S>"]
    counts = numpy.bincount(back["train"].tokens)[2:]
    assert (numpy.diff(counts) <= 0).all()  # ids ranked by training frequency
    assert back["corpus"] == section and info["train_tokens"] == train.n_tokens
    part = slice_split(train, train.n_tokens // 3, run=100)  # 35 runs of 100 sentences: every third kept
    assert len(part) == 1100 and abs(part.n_tokens - train.n_tokens / 3) < 0.1 * train.n_tokens
    assert _sentences(types, part)[:100] == _sentences(types, train)[300:400]
    assert _sentences(types, part)[-100:] == _sentences(types, train)[3300:3400]
    with pytest.raises(ValueError, match="not a pre-tokenised corpus"):
        read_pack(str(tmp_path / "c.npz.xz").replace("c.npz", "missing"))


def test_installed_pack_is_the_cache_pretrain_reads(tmp_path):
    from spacy_elmo.pretrain.config import load_config
    from spacy_elmo.pretrain.corpus_cache import prepare_corpus

    overrides = tiny_corpus_overrides(tmp_path / "run")
    corpus = prepare_corpus(load_config(None, overrides), tmp_path / "run", progress=False)  # no tokeniser
    assert corpus["train"].n_tokens == 480 and "cat" in corpus["types"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from spacy_elmo.pretrain.export import write_model
    from spacy_elmo.pretrain.lm import LanguageModel, model_options

    torch.manual_seed(0)
    lm = LanguageModel.new(model_options({"char_dim": 4, "filters": [[1, 8], [2, 8]], "n_highway": 1,
                                          "activation": "relu", "lstm_dim": 32, "projection_dim": 8, "n_layers": 2,
                                          "use_skip_connections": True}), {"cutoffs": [10], "div_value": 2.0}, 20)
    with torch.no_grad():
        lm.bilm.char_cnn.projection.weight[0, 0] = 1e6  # beyond float16: stays float32
    directory = tmp_path_factory.mktemp("model")
    write_model(lm, [f"w{i}" for i in range(20)], str(directory), {"name": "tiny"})
    return directory


def test_split_join_is_bit_identical_to_float16_rounding(parts, model_dir, tmp_path):
    manifest = parts.split(str(model_dir), str(tmp_path / "out"), max_mib=0.01, max_files=8)
    assert 2 <= len(manifest["parts"]) <= 7
    assert all(p["bytes"] <= 0.01 * 2 ** 20 for p in manifest["parts"])
    stored = manifest["hdf5"]["weights.hdf5"]["datasets"]
    assert set(stored.values()) == {"float32"}  # original dtypes recorded; float16 inside the blob
    result = parts.verify(str(tmp_path / "out" / parts.MANIFEST), str(model_dir), str(tmp_path / "v"))
    assert result["parts"] == len(manifest["parts"])
    import h5py

    with h5py.File(model_dir / "weights.hdf5") as a, h5py.File(tmp_path / "v" / "joined" / "weights.hdf5") as b:
        w = "CNN_proj/W_proj"
        assert b[w][...].max() == a[w][...].max() == 1e6  # out of float16's range: kept exactly
    with pytest.raises(ValueError, match="more than the 2 files allowed"):
        parts.split(str(model_dir), str(tmp_path / "few"), max_mib=0.01, max_files=2)
    first = tmp_path / "out" / manifest["parts"][0]["name"]
    first.write_bytes(first.read_bytes()[:-1] + b"x")
    with pytest.raises(ValueError, match="sha256 differs"):
        parts.join(str(tmp_path / "out" / parts.MANIFEST), str(tmp_path / "bad"))


def _git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / ".gitignore").write_text("/.gpu/\n")
    (path / "a.bin").write_bytes(b"x" * 1000)
    (path / "new.txt").write_bytes(b"y" * 500)  # untracked, not ignored: travels too
    subprocess.run(["git", "-C", str(path), "add", "a.bin", ".gitignore"], check=True)
    for call, size in (("call1", 3 * 2 ** 20), ("call2", 2 ** 20)):
        (path / ".gpu" / call / "wheels").mkdir(parents=True)
        (path / ".gpu" / call / "wheels" / "x.whl").write_bytes(b"z" * size)
    return path


def test_size_accounting(bundle, tmp_path):
    repo = _git_repo(tmp_path / "repo")
    sizes = bundle.call_sizes(repo)
    tree = 1000 + 500 + len("/.gpu/\n")
    assert sizes["tree_mib"] == round(tree / 2 ** 20, 2)
    assert sizes["calls"]["call1"]["carry_mib"] == 3.0 and sizes["calls"]["call3"]["carry_mib"] == 0.0
    assert sizes["largest_mib"] == round((tree + 3 * 2 ** 20) / 2 ** 20, 2)
    assert all(c["fits"] for c in sizes["calls"].values())
    assert bundle.corpus_budget_mib(repo) == pytest.approx(64 - 0.5 - tree / 2 ** 20 - 3, abs=0.01)
    (repo / ".gpu" / "call2" / "big").write_bytes(b"0" * (64 * 2 ** 20))
    assert not bundle.call_sizes(repo)["calls"]["call2"]["fits"]


def _wheel(folder: Path, name: str, requires=()):
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: " + name + "\n"
                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    return path


def test_wheel_plan(bundle, tmp_path, monkeypatch):
    w = {n: _wheel(tmp_path, n, r) for n, r in [
        ("spacy", ["thinc>=8", "numpy", "srsly", "pytest; extra == 'test'"]), ("thinc", ["blis", "confection"]),
        ("blis", ["numpy"]), ("confection", ['typing_extensions; python_version < "3.11"']), ("srsly", []),
        ("h5py", ["numpy"]), ("platformdirs", []), ("typing-extensions", [])]}
    monkeypatch.setattr(bundle, "image_packages", lambda: {"numpy", "h5py", "typing-extensions", "pytest"})
    plan = bundle.wheels_per_call({bundle.canonical(k): v for k, v in w.items()}, "3.12")
    assert plan == {"call1": ["confection", "h5py", "platformdirs"],
                    "call2": ["blis", "confection", "h5py", "srsly", "thinc"], "call3": ["spacy"]}
    assert "typing-extensions" in bundle.closure(["confection"], w, "3.10", set())
    del w["srsly"]
    with pytest.raises(ValueError, match="no wheel for srsly"):
        bundle.wheels_per_call(w, "3.12")


def _status(steps: Path, name: str, rc: int, log: str = "", result=None):
    (steps / f"{name}.status.json").write_text(json.dumps({"name": name, "rc": rc, "seconds": 1.5, "limit": 9,
                                                           "timed_out": rc == 124}))
    (steps / f"{name}.log").write_text(log)
    if result is not None:
        (steps / f"{name}.json").write_text(json.dumps(result))


def test_report_keeps_going_and_shows_failures(tmp_path):
    report = load_script("dev/device/report.py")
    steps = tmp_path / "steps"
    steps.mkdir()
    _status(steps, "install", 1, log="line\nERROR: no wheel\n")
    _status(steps, "tests", 0)
    (steps / "tests.xml").write_text('<testsuites><testsuite tests="2" failures="1" errors="0" skipped="1">'
                                     '<testcase name="test_a"><failure message="assert 1 == 2">x</failure></testcase>'
                                     '<testcase name="test_b"><skipped message="GPU test: no CUDA"/></testcase>'
                                     '</testsuite></testsuites>')
    _status(steps, "stint", 124, log="still training")
    r = report.write_report(str(steps), str(tmp_path / "out"), "1")
    assert not r["ok"] and [s["ok"] for s in r["steps"]] == [False, False, False]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| install | FAILED (exit 1) | 1.5 |" in md and "| stint | timed out | 1.5 |" in md
    assert "ERROR: no wheel" in md and "FAILED test_a: assert 1 == 2" in md and "skipped: GPU test: no CUDA" in md
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["logs.txt", "report.json", "report.md"]


def test_gpu_check_records_a_failed_step_and_still_reports(tmp_path):
    """Call 3 with no wheels carried: the install fails, the tests still run (and skip without
    CUDA, or spaCy from this environment), the report says which step failed."""
    env = dict(os.environ, GPU_DIR=str(tmp_path / "gpu"), PYTHON=sys.executable, PYTHONPATH=str(REPO))
    proc = subprocess.run(["bash", str(REPO / "dev" / "device" / "gpu_check.sh"), "3", "200", "--dry-run"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "call 3, install: FAILED" in proc.stdout and "call 3, tests_pipeline: ok" in proc.stdout
    report = json.loads((tmp_path / "gpu" / "out" / "call3" / "report.json").read_text())
    assert [(s["name"], s["ok"]) for s in report["steps"]] == [("env", True), ("install", False),
                                                               ("tests_pipeline", True)]
    bad = subprocess.run(["bash", str(REPO / "dev" / "device" / "gpu_check.sh"), "4"], capture_output=True,
                         text=True, env=env)
    assert bad.returncode == 2 and "CALL must be 1, 2 or 3" in bad.stderr


def test_n_process_on_cuda_is_refused_in_a_forked_child(monkeypatch):
    from spacy_elmo.errors import ElmoConfigError
    from spacy_elmo.pipeline import threads

    threads.check_device(torch.device("cuda"))  # the parent process: nothing to refuse
    threads.register()
    pid = os.fork()
    if pid == 0:  # the at-fork hook marks the child
        os._exit(0 if threads._FORKED else 1)
    assert os.waitpid(pid, 0)[1] == 0 and not threads._FORKED
    monkeypatch.setattr(threads, "_FORKED", True)
    threads.check_device(torch.device("cpu"))
    with pytest.raises(ElmoConfigError, match="which cannot use CUDA; on a GPU use n_process=1"):
        threads.check_device(torch.device("cuda:0"))


def test_stint_config_has_the_shipped_model_shape():
    """dev/device/stint.cfg warm-starts from en_elmo_small: its [model] is that model's shape
    (a narrower projection than the model's could not be initialised from it)."""
    from spacy_elmo.pretrain.config import load_config

    cfg = load_config(REPO / "dev" / "device" / "stint.cfg")
    options = json.loads((REPO / "spacy_elmo" / "models" / "en_elmo_small" / "options.json").read_text())
    model = cfg["model"]
    assert cfg["training"]["init_from"] == "spacy_elmo/models/en_elmo_small"
    assert (model["lstm_dim"], model["projection_dim"], model["n_layers"]) == (
        options["lstm"]["dim"], options["lstm"]["projection_dim"], options["lstm"]["n_layers"])
    assert [list(f) for f in model["filters"]] == options["char_cnn"]["filters"]
    assert model["n_highway"] == options["char_cnn"]["n_highway"]
