"""No path of the repository's data in what ships: the packaged default pretraining config names
no corpus (``pretrain`` without ``--corpus.paths`` says in one line what to pass), and the default
model's config.cfg names its corpus files, not where they lay on the training machine."""
import json
import os
import subprocess
import sys

import pytest

from helpers import REPO

MODEL = REPO / "spacy_elmo" / "models" / "en_elmo_small"


def test_default_config_has_no_corpus():
    from spacy_elmo.pretrain.config import default_config_text, load_config

    assert "../shared" not in default_config_text()
    assert load_config()["corpus"]["paths"] == []


def test_pretrain_without_corpus_says_what_to_pass(tmp_path):
    from spacy_elmo.errors import ElmoConfigError
    from spacy_elmo.pretrain.train import pretrain

    with pytest.raises(ElmoConfigError, match=r"^no corpus: pass --corpus.paths '\[\"texts/\*\.txt\.gz\"\]'") as err:
        pretrain(str(tmp_path / "run"), progress=False)
    assert err.value.key == "corpus.paths"
    assert "\n" not in str(err.value)


def test_cli_without_corpus_is_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "spacy_elmo", "pretrain", str(tmp_path / "run")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: no corpus: pass --corpus.paths") and "Traceback" not in proc.stderr


def test_shipped_model_config_names_its_corpus_files():
    text = (MODEL / "config.cfg").read_text(encoding="utf-8")
    assert "../shared" not in text
    from spacy_elmo.pretrain.config import load_config

    paths = load_config(MODEL / "config.cfg")["corpus"]["paths"]
    files = json.loads((MODEL / "meta.json").read_text(encoding="utf-8"))["corpus"]["files"]
    assert paths == list(files)
