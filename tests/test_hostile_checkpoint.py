"""A planted checkpoint.pt: ``pretrain --resume`` reads it with ``weights_only=True`` and refuses
any pickled object other than tensors and plain types, before it can run."""
import os
import subprocess
import sys

import pytest
import torch

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
