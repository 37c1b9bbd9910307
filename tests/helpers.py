"""Helpers for the tests (importable as ``helpers``: pytest puts tests/ on sys.path).

- :func:`write_tiny_model`: a seeded random biLM in the bilm-tf file layout, written by our own
  writer (:meth:`spacy_elmo.bilm.BiLM.save`); the ``tiny_model`` fixture of conftest.py uses it.
- :func:`elmo_config`: ``[components.elmo]`` settings (biLM settings in the
  ``spacy_elmo.ElmoBiLM.v1`` model section).
- :func:`load_script`: import a script of the repository (``dev/``, ``scripts/``) by its path.
- :func:`run_group`: run a command in its own process group, killing the whole group (forked
  workers too) when it outlives its timeout, so a hang fails the test instead of the suite.
- :func:`shared_dir` / :func:`reference_dir`: the development data folder (``$SPACY_ELMO_SHARED``,
  else ``../shared`` beside the repository); the package itself never looks for it.
"""
import importlib.util
import os
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Sequence, Union

REPO = Path(__file__).resolve().parent.parent
SHARED_ENV = "SPACY_ELMO_SHARED"


def shared_dir() -> Path:
    """The shared data folder, absolute (it may not exist): ``$SPACY_ELMO_SHARED``, else
    ``../shared`` beside the repository, else beside the current directory."""
    env = os.environ.get(SHARED_ENV)
    if env:
        return Path(env).expanduser().resolve()
    beside_repo = REPO.parent / "shared"
    return beside_repo if beside_repo.is_dir() else (Path.cwd().parent / "shared").resolve()


def reference_dir() -> Path:
    """The bilm-tf reference model and TensorFlow's outputs for it (in the shared folder)."""
    return shared_dir() / "fixtures" / "elmo-reference"

# The bilm-tf reference model's shapes (shared/fixtures/elmo-reference/options.json): small enough
# to run in milliseconds, with every part of the architecture (2 highways, 2 layers, skip
# connections, clipping).
TINY_OPTIONS = {
    "lstm": {"cell_clip": 3, "use_skip_connections": True, "n_layers": 2, "proj_clip": 3,
             "projection_dim": 16, "dim": 64},
    "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4], [2, 8], [3, 16], [4, 32], [5, 64]],
                 "n_highway": 2, "n_characters": 262, "max_characters_per_token": 50,
                 "activation": "relu"},
}
TINY_SEED = 13
# Every parameter ~ N(0, 0.2^2): layer values of order 0.5 (max ~2), like a trained model's and
# below the clips (3). BiLM's own init (std 0.05, zero biases) gives biLSTM values near 0.01,
# which would make the tolerances of the tests meaningless.
TINY_STD = 0.2


class ModelFiles(NamedTuple):
    """A model directory and its two files (str paths)."""
    directory: str
    options_path: str
    weights_path: str

    @property
    def config(self) -> dict:
        """The two file settings (``options_path``, ``weights_path``): keys of an ElmoBiLM.v1
        section, of ``probe``, ...; for an ``elmo`` component use :func:`elmo_config`."""
        return {"options_path": self.options_path, "weights_path": self.weights_path}


# the elmo factory's own keys; the rest is the biLM's
COMPONENT_KEYS = ("store", "dtype", "vectors")


def elmo_config(files: Optional[Union[ModelFiles, Mapping[str, str], Sequence[str]]] = None, **settings) -> dict:
    """``nlp.add_pipe("elmo", config=...)`` for these files (a ModelFiles; a mapping with
    ``options_path`` / ``weights_path``, whose other keys are settings too; an (options_path,
    weights_path) pair; None: the packaged default model): the component's keys at the top, every
    other setting (``batch_size``, ``window_tokens``, ``cache_mb``, ...) in the ElmoBiLM.v1
    ``model`` section."""
    from spacy_elmo.pipeline.bilm_config import ARCHITECTURE

    model = {"@architectures": ARCHITECTURE}
    if isinstance(files, ModelFiles):
        files = files.config
    if isinstance(files, Mapping):
        settings = {**{k: v for k, v in files.items() if k not in ("options_path", "weights_path")}, **settings}
    if files is not None:
        options, weights = (files["options_path"], files["weights_path"]) if isinstance(files, Mapping) else files
        model.update(options_path=str(options), weights_path=str(weights))
    model.update({k: v for k, v in settings.items() if k not in COMPONENT_KEYS})
    return {"model": model, **{k: v for k, v in settings.items() if k in COMPONENT_KEYS}}


def write_tiny_model(directory, seed: int = TINY_SEED, options: dict = TINY_OPTIONS) -> ModelFiles:
    """Write options.json, weights.hdf5 and sha256.json of a random biLM into ``directory``.
    The same seed gives the same files; torch's global random state is left alone."""
    import torch

    from spacy_elmo.bilm import BiLM

    with torch.random.fork_rng(devices=[]):
        bilm = BiLM(options)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in bilm.parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * TINY_STD)
    bilm.save(directory)
    directory = os.fspath(directory)
    return ModelFiles(directory, os.path.join(directory, "options.json"), os.path.join(directory, "weights.hdf5"))


def load_script(relative_path: str):
    """Import the script at ``REPO / relative_path`` (e.g. "dev/wic.py") as a fresh module."""
    path = REPO / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_group(args: Sequence[str], timeout: float, **kwargs):
    """Run ``args`` (stdout and stderr together, text) in a new session. Returns
    ``(returncode, output)``, with returncode None when it ran past ``timeout`` seconds: then
    every process of its group (its forked children too) is killed with SIGKILL."""
    import signal
    import subprocess

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def tiny_corpus_overrides(run_dir, sentences: int = 60) -> dict:
    """Write a pre-tokenised corpus of ``sentences`` short sentences (:mod:`spacy_elmo.pretrain.corpus_pack`)
    as ``run_dir``'s corpus cache, and return the overrides of a tiny pretraining run that reads
    it (no spaCy, no raw text; float32 torch LSTMs, no evaluation)."""
    import numpy

    from spacy_elmo.pretrain.corpus import Split
    from spacy_elmo.pretrain.corpus_pack import install_pack, pack

    types = ["<S>", "</S>", "the", "cat", "sat", "on", "mat", "."] + [f"n{i}" for i in range(sentences)]
    rows = [[2, 3, 8 + i, 4, 5, 2, 6, 7] for i in range(sentences)]
    tokens = numpy.array([t for row in rows for t in row], dtype=numpy.int32)
    offsets = numpy.arange(0, len(tokens) + 1, 8, dtype=numpy.int64)
    section = {"paths": ["tiny.txt"], "block_lines": 1000, "heldout_every": 0, "max_sentence_tokens": 50,
               "max_lines_per_file": 0, "license": "test"}
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    path = Path(run_dir) / "tiny.npz.xz"
    pack(str(path), types, Split(tokens, offsets), Split(numpy.zeros(0, numpy.int32), numpy.zeros(1, numpy.int64)),
         {"tiny.txt": {"bytes": 0, "lines": sentences, "tokens": len(tokens)}}, section)
    overrides = install_pack(str(path), str(run_dir))
    overrides.update({"vocab.size": 30, "vocab.min_count": 1, "model.lstm_dim": 16, "model.projection_dim": 8,
                      "model.filters": [[1, 4], [2, 4]], "softmax.cutoffs": [10], "training.tokens_per_batch": 64,
                      "training.eval_every_steps": 0, "training.lstm_impl": "torch", "training.compile": False,
                      "training.threads": 1})
    return overrides


def write_corpus(path, sentences: Sequence[str], n_lines: int) -> str:
    """A gzip text corpus at ``path``: ``n_lines`` lines cycling through ``sentences``."""
    import gzip

    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(n_lines):
            f.write(sentences[i % len(sentences)] + "\n")
    return str(path)
