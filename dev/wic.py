"""WiC (Pilehvar & Camacho-Collados 2019): does a biLM tell word senses apart in context?

    python dev/wic.py [MODEL] [--wic DIR] [--json] [--threads N]

MODEL: a packaged model name or a model directory (default: the embedded en_elmo_small).
DIR: the WiC folder with train/dev ``*.data.txt`` + ``*.gold.txt`` (default ../shared/data/wic).

The usual use with a contextual embedder (the WiC paper's ELMo baseline, section 4): the cosine of
the target word's two vectors; pairs above a threshold are "same sense". The threshold is tuned on
train (the accuracy-maximising midpoint between sorted train cosines) and applied to dev. This is
done per biLM layer (0 = char CNN, context-free: the control) and for the layer average.
Sentences are used as WiC tokenised them (split on spaces), so the given indices point at the
target. Prints a table (or one JSON object with --json).
"""
import argparse
import json
import os
import sys
from typing import Dict, List, Tuple

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_WIC = os.path.normpath(os.path.join(os.environ.get("SPACY_ELMO_SHARED", os.path.join(HERE, "..", "..", "shared")), "data", "wic"))


def read_split(wic_dir: str, split: str) -> Tuple[List[tuple], numpy.ndarray]:
    """[(tokens_1, index_1, tokens_2, index_2)] and gold labels (bool) of one WiC split.
    Raises FileNotFoundError naming a missing file, ValueError naming a malformed line."""
    data_path = os.path.join(wic_dir, f"{split}.data.txt")
    gold_path = os.path.join(wic_dir, f"{split}.gold.txt")
    for path in (data_path, gold_path):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"WiC file not found: {path}")
    pairs = []
    with open(data_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 5:
                raise ValueError(f"{data_path}:{n}: expected 5 tab-separated fields, got {len(parts)}")
            i1, i2 = (int(x) for x in parts[2].split("-"))
            t1, t2 = parts[3].split(" "), parts[4].split(" ")
            if not (0 <= i1 < len(t1) and 0 <= i2 < len(t2)):
                raise ValueError(f"{data_path}:{n}: target index out of range")
            pairs.append((t1, i1, t2, i2))
    with open(gold_path, encoding="utf-8") as f:
        gold = numpy.array([line.strip() == "T" for line in f if line.strip()])
    if len(gold) != len(pairs):
        raise ValueError(f"{gold_path}: {len(gold)} labels for {len(pairs)} pairs")
    return pairs, gold


def pair_cosines(bilm, pairs, batch_size: int = 64) -> Dict[str, numpy.ndarray]:
    """{view: (n_pairs,) cosine}: views "0".."L" (layers) and "mean" (the layer average)."""
    sentences = [p[0] for p in pairs] + [p[2] for p in pairs]
    index = [p[1] for p in pairs] + [p[3] for p in pairs]
    layers = bilm.embed_sentences(sentences, batch_size=batch_size)
    vecs = numpy.stack([lay[:, i] for lay, i in zip(layers, index)])  # (2n, L + 1, dim)
    n = len(pairs)
    views = {str(k): vecs[:, k] for k in range(vecs.shape[1])}
    views["mean"] = vecs.mean(axis=1)
    out = {}
    for name, v in views.items():
        a, b = v[:n], v[n:]
        num = (a * b).sum(1)
        den = numpy.linalg.norm(a, axis=1) * numpy.linalg.norm(b, axis=1)
        out[name] = num / numpy.maximum(den, 1e-12)
    return out


def tune_threshold(cos: numpy.ndarray, gold: numpy.ndarray) -> Tuple[float, float]:
    """(threshold, accuracy) maximising accuracy of ``cos > threshold`` on (cos, gold)."""
    order = numpy.argsort(cos)
    c, g = cos[order], gold[order]
    # predicting "same" for items after position k: correct = negatives up to k + positives after
    neg_before = numpy.concatenate([[0], numpy.cumsum(~g)])
    pos_after = g.sum() - numpy.concatenate([[0], numpy.cumsum(g)])
    correct = neg_before + pos_after
    k = int(numpy.argmax(correct))
    lows = numpy.concatenate([[c[0] - 1.0], c])
    highs = numpy.concatenate([c, [c[-1] + 1.0]])
    return float((lows[k] + highs[k]) / 2), float(correct[k] / len(c))


def wic_scores(bilm, wic_dir: str = DEFAULT_WIC) -> Dict[str, dict]:
    """{view: {"threshold", "train_accuracy", "dev_accuracy"}} (accuracies in %)."""
    train_pairs, train_gold = read_split(wic_dir, "train")
    dev_pairs, dev_gold = read_split(wic_dir, "dev")
    train_cos, dev_cos = pair_cosines(bilm, train_pairs), pair_cosines(bilm, dev_pairs)
    result = {}
    for view in train_cos:
        threshold, train_acc = tune_threshold(train_cos[view], train_gold)
        dev_acc = float(((dev_cos[view] > threshold) == dev_gold).mean())
        result[view] = {"threshold": threshold, "train_accuracy": 100 * train_acc, "dev_accuracy": 100 * dev_acc}
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None)
    ap.add_argument("--wic", default=DEFAULT_WIC)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.join(HERE, ".."))
    from spacy_elmo.bilm import DEFAULT_MODEL, BiLM

    bilm = BiLM.from_pretrained(args.model or DEFAULT_MODEL)
    scores = wic_scores(bilm, args.wic)
    if args.json:
        print(json.dumps(scores))
        return
    print(f"WiC, model {args.model or DEFAULT_MODEL}: threshold tuned on train ({args.wic})")
    print(f"{'layer':6} {'threshold':>9} {'train %':>8} {'dev %':>6}")
    for view, s in scores.items():
        print(f"{view:6} {s['threshold']:9.3f} {s['train_accuracy']:8.1f} {s['dev_accuracy']:6.1f}")


if __name__ == "__main__":
    main()
