"""A planted checkpoint.pt: ``pretrain --resume`` reads it with ``weights_only=True`` and refuses
any pickled object other than tensors and plain types, before it can run."""
import os
import subprocess
import sys

import pytest
import torch

from spacy_elmo.errors import ElmoModelFileError
from spacy_elmo.pretrain import checkpoint
from spacy_elmo.pretrain.train import pretrain

from helpers import write_corpus
from test_pretrain import SENTENCES, _overrides


class _Planted:
    """Unpickles as a call of os.system that creates ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture()
def corpus(tmp_path):
    return write_corpus(tmp_path / "text.txt.gz", SENTENCES, 200)


def _plant(path, marker):
    ckpt = torch.load(path, weights_only=True)
    ckpt["state"]["history"].append(_Planted(marker))
    torch.save(ckpt, path)


def test_resume_refuses_a_planted_checkpoint(corpus, tmp_path):
    out, marker = tmp_path / "run", tmp_path / "marker"
    pretrain(str(out), overrides=_overrides(corpus, **{"training.max_steps": 2}), progress=False)
    _plant(out / "checkpoint.pt", marker)
    with pytest.raises(ValueError, match="refusing checkpoint .*checkpoint.pt: it holds objects other than"):
        pretrain(str(out), resume=True, progress=False)
    assert not marker.exists()
    proc = subprocess.run([sys.executable, "-m", "spacy_elmo", "pretrain", str(out), "--resume", "--quiet"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "refusing checkpoint" in proc.stderr.strip().splitlines()[-1]
    assert not marker.exists()


def test_checkpoint_load_runs_no_pickled_code(tmp_path):
    marker = tmp_path / "marker"
    torch.save({"model": _Planted(marker)}, tmp_path / "c.pt")
    with pytest.raises(ValueError, match="refusing checkpoint"):
        checkpoint.load(tmp_path / "c.pt", None, None, None)
    assert not marker.exists()
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        checkpoint.read(tmp_path / "junk.pt")
    torch.save({"model": {}}, tmp_path / "partial.pt")
    with pytest.raises(ValueError, match="missing optimizer, scheduler, state, torch_rng"):
        checkpoint.read(tmp_path / "partial.pt")


def test_a_checkpoint_holds_only_tensors_and_plain_types(corpus, tmp_path):
    out = tmp_path / "run"
    pretrain(str(out), overrides=_overrides(corpus, **{"training.max_steps": 2}), progress=False)
    ckpt = checkpoint.read(out / "checkpoint.pt")
    assert ckpt["state"]["step"] == 2
    assert ckpt["torch_rng"].dtype == torch.uint8


def _wait_for_step(path, step: int, proc, timeout: float = 120.0) -> None:
    import time

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            if checkpoint.read(path)["state"]["step"] >= step:
                return
        except (FileNotFoundError, ElmoModelFileError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"no checkpoint at step {step} (exit code {proc.poll()})")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_run_resumes_to_the_same_weights(fixture_dir, tmp_path, sig):
    """A run continued from the clipped TF fixture, with dropout, checkpointing every step (checkpoint_minutes 0), is
    stopped by SIGTERM (it saves and exits) or SIGKILL (its last checkpoint stays); --resume then
    ends on the same weights, bit for bit, as a run that was never stopped."""
    import json
    import signal

    from helpers import REPO, tiny_corpus_overrides

    overrides = {k: v for k, v in tiny_corpus_overrides(tmp_path / "run").items() if not k.startswith("model.")}
    overrides.update({"training.init_from": fixture_dir, "model.dropout": 0.1, "training.checkpoint_minutes": 0,
                      "training.warmup_steps": 0, "training.final_lr_fraction": 1.0, "training.max_steps": 100000})
    code = "import json, sys; from spacy_elmo.pretrain.train import pretrain; " \
           "pretrain(sys.argv[1], overrides=json.loads(sys.argv[2]), progress=False)"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "run"), json.dumps(overrides)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_step(tmp_path / "run" / checkpoint.CHECKPOINT, 3, proc)
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig == "SIGTERM":
        assert "Interrupted: checkpoint saved" in err
    stopped = checkpoint.read(tmp_path / "run" / checkpoint.CHECKPOINT)["state"]["step"]
    end = {"training.max_steps": stopped + 3}
    pretrain(str(tmp_path / "run"), resume=True, overrides=end, progress=False)
    corpus = {k: v for k, v in tiny_corpus_overrides(tmp_path / "ref").items() if k.startswith("corpus.")}
    reference = {**{k: v for k, v in overrides.items() if not k.startswith("corpus.")}, **corpus, **end}
    pretrain(str(tmp_path / "ref"), overrides=reference, progress=False)
    a = checkpoint.read(tmp_path / "run" / checkpoint.CHECKPOINT)
    b = checkpoint.read(tmp_path / "ref" / checkpoint.CHECKPOINT)
    assert a["state"]["step"] == b["state"]["step"] == stopped + 3
    for key in b["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
