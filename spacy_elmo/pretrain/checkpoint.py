"""A pretraining run's files: checkpoint.pt (exact resume) and the exported model's meta.json."""
import os
import pickle
from pathlib import Path
from typing import List, Optional

import torch

from ..errors import ElmoModelFileError
from .lm import LanguageModel

CHECKPOINT = "checkpoint.pt"
# The state at the last full-rate step of a warmup-stable-decay schedule: --resume --from-stable
# continues the stable phase from it (see train.lr_factor).
STABLE_CHECKPOINT = "checkpoint-stable.pt"


def new_state() -> dict:
    """The run's progress: optimizer steps, position in the data (epoch, batch index into the
    epoch's batch list), tokens seen (forward predictions), seconds trained, held-out history, and
    the command lines that ran it."""
    return {"step": 0, "epoch": 0, "batch": 0, "tokens": 0, "seconds": 0.0, "history": [], "commands": []}


def save(path: Path, lm: LanguageModel, optimizer, scheduler, state: dict) -> None:
    """Write the checkpoint atomically (a temporary file renamed into place): an interrupted write
    never leaves a half checkpoint."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"model": lm.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "state": state, "torch_rng": torch.get_rng_state()}, tmp)
    os.replace(tmp, path)


def load(path: Path, lm: LanguageModel, optimizer, scheduler, restore_rng: bool = True) -> dict:
    """Restore a checkpoint written by :func:`save` (on any device) into lm, optimizer and
    scheduler; returns the run state. ``restore_rng`` False leaves torch's RNG as it is (ranks
    other than 0 of a distributed run, whose streams differ).

    The file is read with ``torch.load(weights_only=True)``: tensors and plain types (dict, list,
    tuple, str, int, float, bool, None) only, so a planted pickle runs no code. Raises ValueError
    (one line, naming the file) for anything else or a file that is not such a checkpoint."""
    ckpt = read(path)
    lm.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    if restore_rng:
        torch.set_rng_state(ckpt["torch_rng"])
    state = ckpt["state"]
    state.setdefault("commands", [])
    return state


def read(path: Path) -> dict:
    """The checkpoint at ``path`` as a dict of tensors and plain types (``weights_only=True``).
    Raises ElmoModelFileError (a ValueError) in one line for a file holding other objects, a corrupt file, or one
    without the keys :func:`save` writes."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        glob = next((line for line in lines if "GLOBAL" in line), None)
        if glob:
            raise ElmoModelFileError(f"refusing checkpoint {path}: it holds objects other than tensors and plain "
                                     f"types ({glob})") from None
        detail = next((line for line in lines if "Unsupported" in line), lines[-1] if lines else "")
        raise ElmoModelFileError(f"cannot read checkpoint {path}: not a file of torch.save ({detail})") from None
    except (RuntimeError, EOFError, OSError, AttributeError) as err:
        raise ElmoModelFileError(f"cannot read checkpoint {path}: {str(err).strip().splitlines()[0]}") from None
    missing = [k for k in _KEYS if not isinstance(ckpt, dict) or k not in ckpt]
    if missing:
        raise ElmoModelFileError(f"{path} is not a pretraining checkpoint (missing {', '.join(missing)})")
    return ckpt


_KEYS = ("model", "optimizer", "scheduler", "state", "torch_rng")


def run_meta(name: str, lm: LanguageModel, words: List[str], cfg, corpus: dict, state: dict,
             final_eval: Optional[dict] = None) -> dict:
    """meta.json of the exported model: options, parameter counts, softmax, corpus files and
    rule, training progress and commands, held-out perplexity (the final full evaluation, else
    the latest one) and its history."""
    n_params = sum(p.numel() for p in lm.parameters())
    n_head = sum(p.numel() for p in lm.softmax.parameters())
    train, heldout = corpus["train"], corpus["heldout"]
    c = cfg["corpus"]
    return {
        "name": name,
        "description": "ELMo biLM pretrained with `python -m spacy_elmo pretrain`",
        "options": lm.options(),
        "parameters": {"biLM": n_params - n_head, "lm_head": n_head},
        "softmax": {"type": "torch.nn.AdaptiveLogSoftmaxWithLoss", "vocab_size": len(words), **dict(cfg["softmax"])},
        "corpus": {
            "files": {os.path.basename(k): v for k, v in corpus["files"].items()},
            "train_tokens": train.n_tokens,
            "heldout_tokens": heldout.n_tokens,
            "heldout_rule": f"lines with (line_number // {c['block_lines']}) % {c['heldout_every']} == 0",
            "tokenizer": "spacy.blank('en').tokenizer, whitespace tokens dropped",
            "license": c.get("license", "unknown"),
        },
        "training": {
            "steps": state["step"],
            "epochs_completed": state["epoch"],
            "tokens_seen": state["tokens"],
            "wall_seconds": round(state["seconds"], 1),
            "tokens_per_second": round(state["tokens"] / max(state["seconds"], 1e-9), 1),
            "commands": state["commands"],
            "torch": torch.__version__,
        },
        "heldout": final_eval or (state["history"][-1] if state["history"] else None),
        "history": state["history"],
    }
