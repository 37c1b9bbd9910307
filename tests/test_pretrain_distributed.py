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


def test_ddp_needs_no_unused_parameter_search_with_rare_clusters(tmp_path):
    """A softmax tail cluster of rare words has no target in most steps: its gradients are exact
    zeros on a rank that lacks it and None when no rank has it, as in one process, so DDP runs
    with find_unused_parameters off and does not warn about it."""
    import gzip

    from test_pretrain import SENTENCES

    path = tmp_path / "rare.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(400):
            f.write(SENTENCES[i % len(SENTENCES)] + "\n")
            if i in (23, 131):  # two training lines of words seen once: the last cluster, rarely used
                f.write(" ".join(f"rare{i}x{k}" for k in range(6)) + " .\n")
    overrides = dict(TINY, **{"corpus.paths": [str(path)], "training.eval_every_steps": 0, "training.max_steps": 12,
                              "softmax.cutoffs": [20, 46], "softmax.div_value": 2.0, "vocab.size": 500})
    cfg_path = str(tmp_path / "rare.cfg")
    load_config(overrides=overrides).to_disk(cfg_path)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "spacy_elmo", "pretrain", str(tmp_path / "ddp"), "--config", cfg_path, "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "find_unused_parameters" not in proc.stderr
    pretrain(str(tmp_path / "single"), cfg_path, {"training.accumulate_batches": 2}, progress=False)
    ddp, one = _params(tmp_path / "ddp"), _params(tmp_path / "single")
    assert "softmax.tail.1.0.weight" in one["model"]
    for name, value in one["model"].items():
        torch.testing.assert_close(ddp["model"][name], value, rtol=1e-4, atol=1e-5, msg=name)
