"""``batch_to_ids`` exactly as AllenNLP's (``allennlp.modules.elmo.batch_to_ids``).

The byte ids are :mod:`spacy_elmo.bilm.chars`' (UTF-8 bytes + 1, begin/end-of-word ids, padding id
261, tokens cut to 48 bytes, zero rows past a sentence's tokens). One difference from the core: as
in AllenNLP and bilm-tf, a token that is exactly ``<S>`` or ``</S>`` gets the sentence-boundary
ids. The core (``spacy_elmo.bilm.chars``, the spaCy component, ``embed``, pretraining) reads
such a token as text: there a token is always text of the document, never a control symbol.
"""
from typing import List, Sequence

import torch

from ..bilm import chars

BOS_TOKEN, EOS_TOKEN = "<S>", "</S>"
_BOUNDARIES = {BOS_TOKEN: chars.BOS_IDS, EOS_TOKEN: chars.EOS_IDS}


def batch_to_ids(batch: Sequence[Sequence[str]]) -> torch.Tensor:
    """Char ids of tokenised sentences: int64 (len(batch), max_len, 50); rows past a sentence's
    length are 0, ``<S>`` / ``</S>`` are the sentence boundaries. max_len is 0 when every
    sentence is empty. Raises :class:`~spacy_elmo.errors.ElmoTypeError` (a TypeError) if
    ``batch`` or a sentence is a str or a token is not a str."""
    ids = chars.batch_to_ids(batch)
    for i, sentence in enumerate(batch):
        for j, token in enumerate(sentence):
            boundary = _BOUNDARIES.get(token)
            if boundary is not None:
                ids[i, j] = torch.from_numpy(boundary)
    return ids


def boundary_tokens() -> List[str]:
    """``["<S>", "</S>"]``: the tokens that :func:`batch_to_ids` maps to the sentence boundaries."""
    return [BOS_TOKEN, EOS_TOKEN]
