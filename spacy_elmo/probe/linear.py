"""Linear probes (scikit-learn ``LogisticRegression``): the syntax probe (UPOS of one token's
vector) and the WiC probe (same sense from the pair features [u * v, |u - v|]).

A linear probe asks what a layer makes *linearly* readable (Peters et al. 2018, sec. 5.3 use
one for POS; Liu et al. 2019, "Linguistic knowledge and transferability of contextual
representations", do so per layer). Features are standardised on train (mean 0, variance 1 per
dimension) so the L2 penalty treats layers of different scales alike.
"""
import warnings
from typing import Dict, Sequence

import numpy

from .views import views

POS_C = 1.0  # inverse L2 strength of the UPOS probe: fixed (200k+ tokens leave little to tune)
WIC_CS = (0.001, 0.01, 0.1, 1.0)  # the WiC probe picks C from these by 5-fold CV on train
MAX_ITER = 300


def _sklearn():
    try:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
        from sklearn.preprocessing import StandardScaler
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("the probe needs scikit-learn: pip install 'spacy-elmo[probe]' "
                          "(or pip install scikit-learn)") from err
    return LogisticRegression, LogisticRegressionCV, StandardScaler, ConvergenceWarning


def _fit(model, X: numpy.ndarray, y: numpy.ndarray):
    """Fit, recording instead of printing a ConvergenceWarning. Returns (model, converged)."""
    *_, ConvergenceWarning = _sklearn()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    return model, not any(issubclass(w.category, ConvergenceWarning) for w in caught)


def probe_accuracy(train_X: numpy.ndarray, train_y: Sequence, dev_X: numpy.ndarray, dev_y: Sequence,
                   Cs: Sequence[float] = (POS_C,), seed: int = 0) -> Dict[str, float]:
    """Train a standardised logistic regression on (train_X (n, d), train_y) and score it.
    One C: fixed; several: chosen by 5-fold CV on train. Returns {"train_accuracy",
    "dev_accuracy" (in %), "C", "converged" (lbfgs reached its tolerance within MAX_ITER),
    "correct" (bool numpy (n_dev,): each dev item right; for paired tests, not for JSON)}."""
    LogisticRegression, LogisticRegressionCV, StandardScaler, _ = _sklearn()
    scaler = StandardScaler().fit(train_X)
    Xt, Xd = scaler.transform(train_X), scaler.transform(dev_X)
    if len(Cs) == 1:
        model = LogisticRegression(C=Cs[0], max_iter=MAX_ITER)
    else:
        model = LogisticRegressionCV(Cs=list(Cs), cv=5, max_iter=MAX_ITER, random_state=seed)
    model, converged = _fit(model, Xt, numpy.asarray(train_y))
    C = float(model.C_[0]) if hasattr(model, "C_") else float(Cs[0])
    correct = model.predict(Xd) == numpy.asarray(dev_y)
    return {"train_accuracy": 100 * float(model.score(Xt, train_y)), "dev_accuracy": 100 * float(correct.mean()),
            "C": C, "converged": bool(converged), "correct": correct}


def upos_scores(train_vecs: numpy.ndarray, train_tags: Sequence[str], dev_vecs: numpy.ndarray,
                dev_tags: Sequence[str]) -> Dict[str, dict]:
    """{view: probe_accuracy(...)} of the UPOS probe on token vectors (n, L + 1, dim) per view."""
    dev_views = views(dev_vecs)
    return {view: probe_accuracy(X, train_tags, dev_views[view], dev_tags) for view, X in views(train_vecs).items()}


def pair_features(u: numpy.ndarray, v: numpy.ndarray) -> numpy.ndarray:
    """(n, 2 * dim) float [u * v, |u - v|] of (n, dim) vectors: symmetric in u and v (a pair's
    order carries no label); the two comparison features of Tai et al. (2015, "Improved semantic
    representations from tree-structured LSTM networks", sec. 4.2: h_x = h_L * h_R,
    h_+ = |h_L - h_R|)."""
    return numpy.concatenate([u * v, numpy.abs(u - v)], axis=-1)


def wic_lr_scores(train_pairs: numpy.ndarray, train_gold: numpy.ndarray, dev_pairs: numpy.ndarray,
                  dev_gold: numpy.ndarray, seed: int = 0) -> Dict[str, dict]:
    """{view: probe_accuracy(...)} of a logistic regression on :func:`pair_features`, from
    (2, n, L + 1, dim) target vectors (sentence 1, sentence 2); C by 5-fold CV on train."""
    train_v, dev_v = views(train_pairs), views(dev_pairs)
    return {view: probe_accuracy(pair_features(*train_v[view]), train_gold, pair_features(*dev_v[view]), dev_gold,
                                 Cs=WIC_CS, seed=seed)
            for view in train_v}
