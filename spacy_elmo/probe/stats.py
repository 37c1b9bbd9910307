"""Is one layer's probe really better than another's? A paired bootstrap over the dev items.

Both probes are scored on the same dev items, so the difference in accuracy is resampled item by
item (Efron & Tibshirani 1993, ch. 16; for NLP: Koehn 2004, "Statistical significance tests for
machine translation evaluation"). UPOS items are tokens: tokens of one sentence are not
independent, so the UPOS interval is somewhat too narrow.
"""
from typing import Dict

import numpy

N_RESAMPLES = 2000


def paired_difference(correct_a: numpy.ndarray, correct_b: numpy.ndarray, seed: int = 0,
                      n_resamples: int = N_RESAMPLES) -> Dict[str, float]:
    """{"difference", "low", "high"}: accuracy of a minus accuracy of b, in points (%), and its
    95% percentile interval over ``n_resamples`` bootstrap resamples of the items.
    correct_a, correct_b: bool (n,) per dev item. Raises ValueError if the shapes differ."""
    a, b = numpy.asarray(correct_a, dtype=float), numpy.asarray(correct_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired_difference needs the same items: {a.shape} vs {b.shape}")
    d = a - b
    rng = numpy.random.default_rng(seed)
    # resample in blocks of 100 to bound memory: (100, n) indices at a time
    means = numpy.concatenate([d[rng.integers(0, len(d), size=(min(100, n_resamples - k), len(d)))].mean(1)
                               for k in range(0, n_resamples, 100)])
    low, high = numpy.percentile(means, [2.5, 97.5])
    return {"difference": 100 * float(d.mean()), "low": 100 * float(low), "high": 100 * float(high)}


def layer_split(scores: Dict[str, dict], top: str, seed: int = 0) -> Dict[str, float]:
    """Layer 1 against the top layer for one task: {"layer_1", "layer_top" (dev accuracy, %),
    "difference", "low", "high" (layer 1 minus top, points, 95% interval)}. ``scores``: {view:
    {"dev_accuracy", "correct"}} as the probes return them (views "layer_1", ``top``)."""
    diff = paired_difference(scores["layer_1"]["correct"], scores[top]["correct"], seed)
    return {"layer_1": scores["layer_1"]["dev_accuracy"], "layer_top": scores[top]["dev_accuracy"], **diff}


def strip_items(scores: Dict[str, dict]) -> Dict[str, dict]:
    """The scores without their per-item arrays ("correct", "train_cv_correct": what goes into
    the JSON)."""
    return {view: {k: v for k, v in s.items() if not k.endswith("correct")} for view, s in scores.items()}
