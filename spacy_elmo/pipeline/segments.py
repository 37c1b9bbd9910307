"""How a Doc is cut into the sentences the biLM reads.

The biLM was trained on single sentences, so:
- a Doc with sentence boundaries (``doc.has_annotation("SENT_START")``, e.g. set by a
  ``sentencizer``/``senter``/``parser`` placed before ``elmo``) is read sentence by sentence;
- a Doc without them is read in windows of at most ``window_tokens`` tokens;
- a sentence longer than ``window_tokens`` is cut into ``ceil(n / window_tokens)`` windows of nearly
  equal size, at token boundaries (no context crosses a window boundary);
- whitespace tokens (``token.is_space``, e.g. "\\n\\n" or extra spaces) are not shown to the biLM
  (it never saw them in training) and get zero vectors in every layer.
So a Doc's vectors depend only on the Doc (never on the batch), and the biLM's memory is
bounded by ``window_tokens`` per sentence whatever the Doc's length.
"""
from typing import List

import numpy
from spacy.attrs import IS_SPACE
from spacy.tokens import Doc

from ..errors import ElmoConfigError


def doc_segments(doc: Doc, window_tokens: int) -> List[numpy.ndarray]:
    """Token indices (int64 arrays, increasing) of the pieces of ``doc`` the biLM reads, in order.
    An empty or all-whitespace Doc gives []. Raises ValueError if ``window_tokens < 1``."""
    if window_tokens < 1:
        raise ElmoConfigError(f"window_tokens must be >= 1, got {window_tokens}", "window_tokens", None)
    if len(doc) == 0:
        return []
    is_space = doc.to_array([IS_SPACE]).reshape(-1).astype(bool)
    if doc.has_annotation("SENT_START"):
        bounds = [(sent.start, sent.end) for sent in doc.sents]
    else:
        bounds = [(0, len(doc))]
    pieces = []
    for start, end in bounds:
        idx = start + numpy.flatnonzero(~is_space[start:end])
        if len(idx) == 0:
            continue
        n_windows = -(-len(idx) // window_tokens)
        pieces.extend(numpy.array_split(idx, n_windows) if n_windows > 1 else [idx])
    return pieces
