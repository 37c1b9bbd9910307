"""WiC, the Word-in-Context dataset (Pilehvar & Camacho-Collados 2019): is a target word used in
the same sense in two sentences?

The usual use with a contextual embedder (the WiC paper's ELMo baseline, section 4): the cosine
of the target's two vectors, "same sense" above a threshold tuned on train (the accuracy-
maximising midpoint between sorted train cosines), scored on dev. Done per biLM layer
(0 = char CNN, context-free: the control) and for the layer average. Sentences are used as WiC
tokenised them (split on single spaces), so the given indices point at the target.
``dev/wic.py`` is the command line of these functions (:func:`format_scores`,
:func:`format_comparison`: its tables).
"""
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

from ..errors import ElmoDataError
from ..text_files import text_lines
from .stats import paired_difference, strip_items
from .views import views

Pair = Tuple[List[str], int, List[str], int]
CV_FOLDS = 10


def read_split(wic_dir, split: str) -> Tuple[List[Pair], numpy.ndarray]:
    """[(tokens_1, index_1, tokens_2, index_2)] and gold labels (bool (n,), True = same sense) of
    one WiC split. Raises FileNotFoundError naming a missing file, ElmoDataError (a ValueError)
    naming a malformed line (``path:line: ...``)."""
    data_path = os.path.join(wic_dir, f"{split}.data.txt")
    gold_path = os.path.join(wic_dir, f"{split}.gold.txt")
    for path in (data_path, gold_path):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"WiC file not found: {path}")
    pairs = []
    for n, line in enumerate(text_lines(data_path), 1):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 5:
            raise ElmoDataError(f"{data_path}:{n}: expected 5 tab-separated fields, got {len(parts)}")
        try:
            i1, i2 = (int(x) for x in parts[2].split("-"))
        except ValueError:
            raise ElmoDataError(f"{data_path}:{n}: field 3 = {parts[2]!r}: expected the two target "
                                "indices as I-J") from None
        t1, t2 = parts[3].split(" "), parts[4].split(" ")
        if not (0 <= i1 < len(t1) and 0 <= i2 < len(t2)):
            raise ElmoDataError(f"{data_path}:{n}: target index out of range")
        pairs.append((t1, i1, t2, i2))
    gold = numpy.array([line.strip() == "T" for line in text_lines(gold_path) if line.strip()])
    if len(gold) != len(pairs):
        raise ElmoDataError(f"{gold_path}: {len(gold)} labels for {len(pairs)} pairs")
    return pairs, gold


def pair_vectors(bilm, pairs: Sequence[Pair], batch_size: int = 64, embed=None) -> numpy.ndarray:
    """float32 (2, n_pairs, L + 1, dim): the target's vectors in sentence 1 ([0]) and 2 ([1]),
    every layer. ``embed(bilm, sentences, index, batch_size)`` -> (m, L + 1, dim) picks the
    vectors (default: :func:`spacy_elmo.probe.embed.embed_targets`, which runs each distinct
    sentence once)."""
    if embed is None:
        from .embed import embed_targets as embed
    sentences = [p[0] for p in pairs] + [p[2] for p in pairs]
    index = [p[1] for p in pairs] + [p[3] for p in pairs]
    vecs = embed(bilm, sentences, index, batch_size=batch_size)
    n = len(pairs)
    return numpy.stack([vecs[:n], vecs[n:]])


def cosine(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    """Row-wise cosine of (n, dim) a and b: (n,) float; 0 where a row has norm 0."""
    num = (a * b).sum(-1)
    den = numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1)
    return num / numpy.maximum(den, 1e-12)


def vector_cosines(pair_vecs: numpy.ndarray, center: Optional[numpy.ndarray] = None) -> Dict[str, numpy.ndarray]:
    """{view: (n_pairs,) cosine} of (2, n_pairs, L + 1, dim) pair vectors (:func:`pair_vectors`);
    views "layer_0".."layer_L" and "average" (:mod:`.views`). ``center``: optional (L + 1, dim)
    mean vectors subtracted from each layer first (:mod:`.centering`)."""
    if center is not None:
        pair_vecs = pair_vecs - center
    return {name: cosine(v[0], v[1]) for name, v in views(pair_vecs).items()}


def pair_cosines(bilm, pairs: Sequence[Pair], batch_size: int = 64,
                 center: Optional[numpy.ndarray] = None) -> Dict[str, numpy.ndarray]:
    """{view: (n_pairs,) cosine} of the target's two vectors: :func:`vector_cosines` of
    :func:`pair_vectors`."""
    return vector_cosines(pair_vectors(bilm, pairs, batch_size), center)


def tune_threshold(cos: numpy.ndarray, gold: numpy.ndarray) -> Tuple[float, float]:
    """(threshold, accuracy in [0, 1]) maximising the accuracy of ``cos > threshold`` on
    (cos, gold): the midpoint between two neighbouring sorted values (or just outside the range
    when one label wins everywhere)."""
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


def threshold_scores(train_cos: Dict[str, numpy.ndarray], train_gold: numpy.ndarray,
                     dev_cos: Dict[str, numpy.ndarray], dev_gold: numpy.ndarray) -> Dict[str, dict]:
    """{view: {"threshold", "train_accuracy", "dev_accuracy", "correct"}} (accuracies in %), the
    threshold tuned on train per view; "correct": bool (n_dev,) per dev pair (for paired tests)."""
    result = {}
    for view in train_cos:
        threshold, train_acc = tune_threshold(train_cos[view], train_gold)
        correct = (dev_cos[view] > threshold) == dev_gold
        result[view] = {"threshold": threshold, "train_accuracy": 100 * train_acc,
                        "dev_accuracy": 100 * float(correct.mean()), "correct": correct}
    return result


def cv_correct(cos: numpy.ndarray, gold: numpy.ndarray, folds: int = CV_FOLDS, seed: int = 0) -> numpy.ndarray:
    """bool (n,): for each item, whether ``cos > threshold`` is right, the threshold tuned
    (:func:`tune_threshold`) on the other folds of a seeded ``folds``-fold split (k-fold
    cross-validation; at most n folds). Raises ElmoDataError (a ValueError) for fewer than 2 items."""
    n = len(cos)
    if n < 2:
        raise ElmoDataError(f"cross-validation needs at least 2 items, got {n}")
    fold = numpy.random.default_rng(seed).permutation(n) % min(folds, n)
    correct = numpy.empty(n, dtype=bool)
    for k in numpy.unique(fold):
        held = fold == k
        threshold, _ = tune_threshold(cos[~held], gold[~held])
        correct[held] = (cos[held] > threshold) == gold[held]
    return correct


def wic_scores(bilm, wic_dir, items: bool = False) -> Dict[str, dict]:
    """{view: {"threshold", "train_accuracy", "dev_accuracy", "train_cv_accuracy"}} (accuracies in
    %) of the cosine threshold per view. "train_cv_accuracy": the same method scored on WiC train
    by 10-fold cross-validation (:func:`cv_correct`): 5,428 pairs against dev's 638, so about a
    third of dev's sampling noise (a second, finer view for comparing two biLMs; dev stays the
    reported score). With ``items``, also "correct" and "train_cv_correct" (bool per dev / train
    pair, for :func:`compare`). ``wic_dir``: the WiC folder (``train``/``dev`` ``.data.txt`` +
    ``.gold.txt``); FileNotFoundError naming the file if one is missing."""
    wic_dir = str(wic_dir)
    train_pairs, train_gold = read_split(wic_dir, "train")
    dev_pairs, dev_gold = read_split(wic_dir, "dev")
    train_cos = pair_cosines(bilm, train_pairs)
    scores = threshold_scores(train_cos, train_gold, pair_cosines(bilm, dev_pairs), dev_gold)
    for view, s in scores.items():
        s["train_cv_correct"] = cv_correct(train_cos[view], train_gold)
        s["train_cv_accuracy"] = 100 * float(s["train_cv_correct"].mean())
    return scores if items else strip_items(scores)


def compare(scores_a: Dict[str, dict], scores_b: Dict[str, dict], seed: int = 0) -> Dict[str, dict]:
    """Two models on the same dev pairs: {view: {"a", "b" (dev accuracy, %), "difference", "low",
    "high" (a minus b, points, 95% paired-bootstrap interval: :func:`.stats.paired_difference`)}}
    for the views both have. ``scores_*``: :func:`wic_scores` with ``items=True``. One WiC dev pair
    is 0.16 points (638 pairs). Where both have "train_cv_correct", the same four numbers for the
    cross-validated train accuracy go under "train_cv" (one train pair is 0.018 points)."""
    result = {}
    for view in scores_a:
        if view not in scores_b:
            continue
        a, b = scores_a[view], scores_b[view]
        result[view] = {"a": a["dev_accuracy"], "b": b["dev_accuracy"],
                        **paired_difference(a["correct"], b["correct"], seed)}
        if "train_cv_correct" in a and "train_cv_correct" in b:
            result[view]["train_cv"] = {"a": a["train_cv_accuracy"], "b": b["train_cv_accuracy"],
                                        **paired_difference(a["train_cv_correct"], b["train_cv_correct"], seed)}
    return result


def format_scores(scores: Dict[str, dict], name: str, wic_dir) -> str:
    """:func:`wic_scores` of model ``name`` as a table: per view the threshold and the train, dev
    and train CV accuracies (%)."""
    lines = [f"WiC, model {name}: threshold tuned on train ({wic_dir})",
             f"{'layer':6} {'threshold':>9} {'train %':>8} {'dev %':>6} {'train CV %':>10}"]
    for view, s in scores.items():
        lines.append(f"{view:6} {s['threshold']:9.3f} {s['train_accuracy']:8.1f} {s['dev_accuracy']:6.1f} "
                     f"{s['train_cv_accuracy']:10.1f}")
    return "\n".join(lines)


def format_comparison(diff: Dict[str, dict], name_a: str, name_b: str) -> str:
    """:func:`compare` of models ``name_a`` and ``name_b`` as a table: per view the dev and the
    train CV accuracies of both, a minus b and its 95% paired-bootstrap interval."""
    lines = [f"WiC, {name_a} (a) against {name_b} (b): dev with the threshold tuned on train, and train "
             "by 10-fold cross-validation; a minus b with its 95% paired-bootstrap interval",
             f"{'layer':6} {'dev a %':>7} {'b %':>6} {'a - b':>6} {'interval':>14}   "
             f"{'train CV a %':>12} {'b %':>6} {'a - b':>6} {'interval':>14}"]
    for view, d in diff.items():
        cv = d["train_cv"]
        lines.append(f"{view:6} {d['a']:7.1f} {d['b']:6.1f} {d['difference']:+6.1f} {_interval(d):>14}   "
                     f"{cv['a']:12.1f} {cv['b']:6.1f} {cv['difference']:+6.1f} {_interval(cv):>14}")
    return "\n".join(lines)


def _interval(d: dict) -> str:
    return f"[{d['low']:+.1f}, {d['high']:+.1f}]"
