"""Same sense or not? A word's vectors in sentences of two (or more) known senses.

Used by ``dev/contextual_probe.py`` (per word and layer, printed) and by the tests of the shipped
model (``tests/test_default_model.py``): a contextual layer should put same-sense uses closer
than cross-sense ones; the char-CNN layer 0 cannot, its vectors are the same for every use.
"""
import itertools
from typing import List, Sequence, Tuple

import numpy


def word_vectors(bilm, tokenizer, sentences: Sequence[str], word: str) -> numpy.ndarray:
    """float32 (n, L + 1, dim): every layer's vector of the first token ``word`` of each sentence,
    tokenized with ``tokenizer`` (e.g. ``spacy.blank("en").tokenizer``, as in the pipeline).
    Raises ValueError if a sentence has no such token."""
    token_lists: List[List[str]] = [[t.text for t in tokenizer(s)] for s in sentences]
    layers = bilm.embed_sentences(token_lists)
    return numpy.stack([lay[:, toks.index(word)] for lay, toks in zip(layers, token_lists)])


def sense_scores(vectors: numpy.ndarray, labels: Sequence[int]) -> Tuple[float, float, float]:
    """(mean same-sense cosine, mean cross-sense cosine, 1-NN accuracy) of (n, dim) vectors with
    sense ``labels``. 1-NN: the share of uses whose nearest other use (cosine) has the same sense
    (the nearest-neighbour sense disambiguation of Peters et al. 2018, sec. 5.3); NaN where all
    vectors are identical (layer 0), as there is no nearest neighbour then."""
    unit = vectors / numpy.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    pairs = list(itertools.combinations(range(len(labels)), 2))
    same = [sims[i, j] for i, j in pairs if labels[i] == labels[j]]
    cross = [sims[i, j] for i, j in pairs if labels[i] != labels[j]]
    if numpy.ptp(vectors, axis=0).max() == 0:
        return float(numpy.mean(same)), float(numpy.mean(cross)), float("nan")
    numpy.fill_diagonal(sims, -numpy.inf)
    nn = numpy.mean([labels[int(sims[i].argmax())] == labels[i] for i in range(len(labels))])
    return float(numpy.mean(same)), float(numpy.mean(cross)), float(nn)
