"""WiC (Pilehvar & Camacho-Collados 2019): does a biLM tell word senses apart in context?

    python dev/wic.py [MODEL] [--against MODEL_B] [--wic DIR] [--json] [--threads N]

MODEL: a packaged model name or a model directory (default: the embedded en_elmo_small).
DIR: the WiC folder with train/dev ``*.data.txt`` + ``*.gold.txt`` (default ../shared/data/wic).

The usual use with a contextual embedder (the WiC paper's ELMo baseline, section 4): the cosine of
the target word's two vectors; pairs above a threshold are "same sense". The threshold is tuned on
train (the accuracy-maximising midpoint between sorted train cosines) and applied to dev. This is
done per biLM layer (0 = char CNN, context-free: the control) and for the layer average.
Sentences are used as WiC tokenised them (split on spaces), so the given indices point at the
target. Prints a table (or one JSON object with --json). Each view is also scored on train by
10-fold cross-validation of the threshold ("train CV"): the same method on 5,428 pairs, about a
third of dev's sampling noise. With ``--against MODEL_B``: both models and their difference per
view with a 95% paired-bootstrap interval, over the dev pairs and over the train CV pairs (is a
new model really better on WiC, or within the noise of 638 pairs?). The functions live in
:mod:`spacy_elmo.probe.wic` (``python -m spacy_elmo probe`` uses them too); this script is their
command line.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from shared_data import wic_dir  # noqa: E402  (dev/shared_data.py, beside this script)

from spacy_elmo.probe.stats import strip_items  # noqa: E402
from spacy_elmo.probe.wic import (  # noqa: E402,F401
    compare,
    cv_correct,
    pair_cosines,
    read_split,
    tune_threshold,
    wic_scores,
)

DEFAULT_WIC = str(wic_dir())
__all__ = ["DEFAULT_WIC", "compare", "cv_correct", "pair_cosines", "read_split", "tune_threshold", "wic_scores", "main"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None)
    ap.add_argument("--against", default=None, metavar="MODEL_B",
                    help="also score MODEL_B and print MODEL minus MODEL_B per view, with a 95%% paired-bootstrap "
                         "interval over the dev pairs")
    ap.add_argument("--wic", default=DEFAULT_WIC)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from spacy_elmo import DEFAULT_MODEL, load_bilm

    name = args.model or DEFAULT_MODEL
    scores = wic_scores(load_bilm(name), args.wic, items=True)
    if args.against:
        diff = compare(scores, wic_scores(load_bilm(args.against), args.wic, items=True))
        if args.json:
            print(json.dumps(diff))
            return
        print(f"WiC, {name} (a) against {args.against} (b): dev with the threshold tuned on train, and train "
              f"by 10-fold cross-validation; a minus b with its 95% paired-bootstrap interval")
        print(f"{'layer':6} {'dev a %':>7} {'b %':>6} {'a - b':>6} {'interval':>14}   "
              f"{'train CV a %':>12} {'b %':>6} {'a - b':>6} {'interval':>14}")
        for view, d in diff.items():
            cv = d["train_cv"]
            print(f"{view:6} {d['a']:7.1f} {d['b']:6.1f} {d['difference']:+6.1f} {_interval(d):>14}   "
                  f"{cv['a']:12.1f} {cv['b']:6.1f} {cv['difference']:+6.1f} {_interval(cv):>14}")
        return
    if args.json:
        print(json.dumps(strip_items(scores)))
        return
    print(f"WiC, model {name}: threshold tuned on train ({args.wic})")
    print(f"{'layer':6} {'threshold':>9} {'train %':>8} {'dev %':>6} {'train CV %':>10}")
    for view, s in scores.items():
        print(f"{view:6} {s['threshold']:9.3f} {s['train_accuracy']:8.1f} {s['dev_accuracy']:6.1f} "
              f"{s['train_cv_accuracy']:10.1f}")


def _interval(d: dict) -> str:
    return f"[{d['low']:+.1f}, {d['high']:+.1f}]"


if __name__ == "__main__":
    main()
