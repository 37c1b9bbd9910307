"""The learned scalar mixes of trained pipelines: which layers each component chose.

Each ELMo listener learns ``ELMo_k = gamma * sum_j s_j h_kj`` with ``s = softmax(w)`` (Peters et
al. 2018, eq. 1); :func:`spacy_elmo.pipeline.learned_mixes` reads them back from a pipeline.
"""
import os
from typing import Dict, Iterable

from ..errors import ElmoDataError


def mixes_as_json(nlp) -> Dict[str, dict]:
    """{component: {"weights": [s_0..s_L], "gamma": g, "raw": [w_0..w_L]}} of ``nlp``'s mixes
    (``learned_mixes``; plain floats, ready for ``json.dumps``)."""
    from ..pipeline import learned_mixes

    return {name: {"weights": list(mix.weights), "gamma": float(mix.gamma), "raw": list(mix.raw)}
            for name, mix in learned_mixes(nlp).items()}


def pipeline_name(path) -> str:
    """A short name for a pipeline directory: ".../tagger-ewt-elmo/model-best" -> "tagger-ewt-elmo"."""
    parts = os.path.normpath(os.fspath(path)).split(os.sep)
    return parts[-2] if len(parts) > 1 and parts[-1] in ("model-best", "model-last") else parts[-1]


def pipeline_mixes(paths: Iterable) -> Dict[str, Dict[str, dict]]:
    """{pipeline name: mixes_as_json(spacy.load(path))} for each trained pipeline directory.
    Raises OSError (spaCy's) for a path that is not a pipeline, ElmoDataError (a ValueError) naming a pipeline
    without any ELMo scalar mix."""
    import spacy

    out = {}
    for path in paths:
        mixes = mixes_as_json(spacy.load(path))
        if not mixes:
            raise ElmoDataError(f"{path}: no component with an ELMo scalar mix (a listener of the elmo component)")
        out[pipeline_name(path)] = mixes
    return out
