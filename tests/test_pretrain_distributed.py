"""Data-parallel pretraining under torchrun (gloo, 2 CPU processes): the standard DDP equivalence
check against one process that takes the same global batches, and a resume on 1 rank."""
import os
import subprocess
import sys

import pytest
import torch

from spacy_elmo.pretrain.config import load_config
from spacy_elmo.pretrain.train import pretrain

from test_pretrain import TINY, corpus  # noqa: F401 - the corpus fixture

pytestmark = pytest.mark.slow


def _config(tmp_path, corpus_path, **extra):
    cfg = load_config(overrides=dict(TINY, **{"corpus.paths": [corpus_path], "training.eval_every_steps": 0,
                                              "training.max_steps": 6}, **extra))
    path = tmp_path / "run.cfg"
    cfg.to_disk(path)
    return str(path)


def _torchrun(out, cfg_path, nproc=2):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
           "-m", "spacy_elmo", "pretrain", str(out), "--config", cfg_path, "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _params(out):
    return torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)


def test_two_ranks_equal_one_process_on_the_same_global_batches(corpus, tmp_path):  # noqa: F811
    cfg_path = _config(tmp_path, corpus)
    _torchrun(tmp_path / "ddp", cfg_path)
    single = pretrain(str(tmp_path / "single"), cfg_path, {"training.accumulate_batches": 2}, progress=False)
    ddp, one = _params(tmp_path / "ddp"), _params(tmp_path / "single")
    assert ddp["state"]["step"] == one["state"]["step"] == 6
    assert ddp["state"]["tokens"] == one["state"]["tokens"] == single["training"]["tokens_seen"]
    assert ddp["state"]["batch"] == one["state"]["batch"] or ddp["state"]["epoch"] == one["state"]["epoch"]
    assert ddp["state"]["commands"][0]["path"]["ranks"] == 2
    for name, value in one["model"].items():
        torch.testing.assert_close(ddp["model"][name], value, rtol=1e-4, atol=1e-5, msg=name)
    # and the 2-rank checkpoint resumes on 1 process, continuing the same data order
    meta = pretrain(str(tmp_path / "ddp"), resume=True, overrides={"training.max_steps": 8}, progress=False)
    assert meta["training"]["steps"] == 8
    assert [c["path"]["ranks"] for c in meta["training"]["commands"]] == [2, 1]
    assert meta["heldout"]["perplexity"] > 0
