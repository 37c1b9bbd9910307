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
:mod:`spacy_elmo.probe.wic` (``python -m spacy_elmo probe`` uses them too, and the tests test them
there); this script is only their command line.
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
from spacy_elmo.probe.wic import compare, format_comparison, format_scores, wic_scores  # noqa: E402

DEFAULT_WIC = str(wic_dir())


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
    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.bilm import BiLM

    name = args.model or DEFAULT_MODEL
    scores = wic_scores(BiLM.from_pretrained(name), args.wic, items=True)
    if args.against:
        diff = compare(scores, wic_scores(BiLM.from_pretrained(args.against), args.wic, items=True))
        print(json.dumps(diff) if args.json else format_comparison(diff, name, args.against))
    else:
        print(json.dumps(strip_items(scores)) if args.json else format_scores(scores, name, args.wic))


if __name__ == "__main__":
    main()
