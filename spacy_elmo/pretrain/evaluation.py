"""Held-out perplexity of the training LM (both directions, nats per predicted token)."""
import math
from typing import Dict

import numpy
import torch

from .batching import make_batch, pack
from .corpus import Split
from .lm import LanguageModel


def to_device(batch: Dict[str, torch.Tensor], lm: LanguageModel) -> Dict[str, torch.Tensor]:
    """The batch's tensors on the LM's device."""
    device = lm.device
    return batch if device.type == "cpu" else {k: v.to(device, non_blocking=True) for k, v in batch.items()}


@torch.no_grad()
def evaluate(lm: LanguageModel, split: Split, char_table: numpy.ndarray, type_to_word: numpy.ndarray,
             max_tokens: int, tokens_per_batch: int) -> dict:
    """Forward, backward and mean perplexity on the first sentences of ``split`` (all of it when
    ``max_tokens`` is 0, else the first sentences up to that many tokens), in length-sorted
    batches of :func:`.batching.pack`. Returns {"perplexity": exp of the mean NLL of both
    directions, "forward", "backward", "tokens": predictions per direction}; NaN perplexities for
    an empty split. The LM's train/eval mode is restored."""
    was_training = lm.training
    lm.eval()
    lengths = numpy.diff(split.offsets)
    n = len(split)
    if max_tokens:
        n = min(int(numpy.searchsorted(numpy.cumsum(lengths + 1), max_tokens)) + 1, len(split))
    order = numpy.argsort(lengths[:n], kind="stable")
    sums = {"fwd": 0.0, "bwd": 0.0, "n": 0}
    for ids in pack(order, lengths, tokens_per_batch):
        out = lm(**to_device(make_batch(split, ids, char_table, type_to_word), lm))
        sums["fwd"] += float(out["fwd_nll"])
        sums["bwd"] += float(out["bwd_nll"])
        sums["n"] += int(out["fwd_count"])
    lm.train(was_training)
    if sums["n"] == 0:
        return {"perplexity": float("nan"), "forward": float("nan"), "backward": float("nan"), "tokens": 0}
    return {"perplexity": math.exp((sums["fwd"] + sums["bwd"]) / (2 * sums["n"])),
            "forward": math.exp(sums["fwd"] / sums["n"]), "backward": math.exp(sums["bwd"] / sums["n"]),
            "tokens": sums["n"]}
