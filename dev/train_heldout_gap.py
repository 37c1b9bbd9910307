"""Would more text help? Perplexity on training sentences already seen vs on held-out ones.

    python dev/train_heldout_gap.py RUN_DIR [MODEL_DIR] [--tokens N] [--threads N]

RUN_DIR: a pretraining output directory (its config.cfg and tokenised corpus/ cache).
MODEL_DIR: the model to score (default RUN_DIR/model; any model of that run's vocabulary).
Scores the model on the whole held-out split and on an evenly spaced sample of the training
split of about as many tokens (every k-th sentence, so every corpus file is represented as in
the held-out split, which takes every ``heldout_every``-th block). A model that memorises its
training text scores the seen sentences much better than the held-out ones: then more (new) text
would help more than more passes. A gap near 0 says the model is not yet limited by the amount
of text. Prints both perplexities and their ratio (train / held-out); ``--tokens`` caps both
samples (default: the held-out size).
"""
import argparse
import os
import sys
from typing import Optional

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from spacy_elmo.pretrain.corpus import Split  # noqa: E402
from spacy_elmo.pretrain.perplexity import run_scorer  # noqa: E402


def every_kth(split: Split, n_tokens: int) -> Split:
    """Every k-th sentence of `split`, k chosen so that the sample holds about `n_tokens` tokens
    (all of it if the split is smaller)."""
    k = max(1, split.n_tokens // max(1, n_tokens))
    ids = numpy.arange(0, len(split), k)
    lengths = numpy.diff(split.offsets)[ids]
    tokens = numpy.concatenate([split.tokens[split.offsets[i]: split.offsets[i + 1]] for i in ids])
    offsets = numpy.zeros(len(ids) + 1, dtype=numpy.int64)
    numpy.cumsum(lengths, out=offsets[1:])
    return Split(tokens, offsets)


def gap(run_dir: str, model_dir: Optional[str] = None, n_tokens: int = 0) -> dict:
    """{"train": evaluate(...) on seen sentences, "heldout": evaluate(...), "ratio": train / held-out
    perplexity}. Raises FileNotFoundError if RUN_DIR has no config.cfg (or the model a file),
    ValueError if the run has no held-out split. A run directory without its corpus/ cache is
    tokenised again (minutes for the shared corpus)."""
    corpus, score = run_scorer(run_dir, model_dir)
    heldout = corpus["heldout"]
    if not heldout.n_tokens:
        raise ValueError(f"{run_dir}: the run has no held-out split (its [corpus] heldout_every is 0)")
    if n_tokens:
        heldout = every_kth(heldout, n_tokens)
    train = every_kth(corpus["train"], heldout.n_tokens)
    scores = {"train": score(train), "heldout": score(heldout)}
    scores["ratio"] = scores["train"]["perplexity"] / scores["heldout"]["perplexity"]
    return scores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("model_dir", nargs="?", default=None)
    ap.add_argument("--tokens", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    try:
        s = gap(args.run_dir, args.model_dir, args.tokens)
    except (OSError, ValueError) as err:  # missing run or model files, corrupt weights
        sys.exit(f"train_heldout_gap.py: {err}")
    for name in ("train", "heldout"):
        print(f"{name:8s} perplexity {s[name]['perplexity']:.2f} (fwd {s[name]['forward']:.2f}, "
              f"bwd {s[name]['backward']:.2f}) on {s[name]['tokens']:,} tokens")
    print(f"train / held-out: {s['ratio']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
