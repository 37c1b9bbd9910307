"""How contextual is each layer? The measures of Ethayarajh (2019), "How contextual are
contextualized word representations? Comparing the geometry of BERT, ELMo, and GPT-2
embeddings" (EMNLP), sec. 3.2-3.4, all on cosines of one layer's vectors:

- anisotropy (the baseline): the mean cosine between randomly drawn tokens of *different*
  sentences. Isotropic vectors give 0; a high value means every vector points the same way.
- self-similarity (Definition 1): for a word w seen in contexts s_1..s_n (n >= 5 distinct
  sentences, as in the paper), the mean cosine between its n vectors over all pairs j != k;
  averaged over the words. A context-free layer gives exactly 1.
- intra-sentence similarity (Definition 2): for a sentence, the mean cosine between each token
  and the sentence's mean vector; averaged over sentences (with >= 2 tokens).
Self- and intra-sentence similarity are also reported "adjusted": minus the layer's anisotropy,
as the paper does for its figures, so that a layer is not called context-free merely because all
its vectors are alike. Words are compared by their exact text (the char CNN sees case).
"""
from collections import defaultdict
from typing import Dict, List, Sequence

import numpy

from ..errors import ElmoDataError
from .views import views

MIN_CONTEXTS = 5
N_PAIRS = 10000


def unit_rows(x: numpy.ndarray) -> numpy.ndarray:
    """float64 (n, dim) rows of x scaled to norm 1 (zero rows stay zero)."""
    x = x.astype(numpy.float64)
    norm = numpy.linalg.norm(x, axis=-1, keepdims=True)
    return x / numpy.maximum(norm, 1e-12)


def anisotropy(unit: numpy.ndarray, sentence_of: numpy.ndarray, seed: int = 0, n_pairs: int = N_PAIRS) -> float:
    """Mean cosine of ``n_pairs`` seeded random token pairs from different sentences.
    unit: (n_tokens, dim) unit rows; sentence_of: int (n_tokens,) sentence id of each token."""
    rng = numpy.random.default_rng(seed)
    a = rng.integers(0, len(unit), size=4 * n_pairs)
    b = rng.integers(0, len(unit), size=4 * n_pairs)
    keep = sentence_of[a] != sentence_of[b]
    a, b = a[keep][:n_pairs], b[keep][:n_pairs]
    if len(a) == 0:
        raise ElmoDataError("anisotropy needs tokens from at least two sentences")
    return float((unit[a] * unit[b]).sum(-1).mean())


def word_occurrences(words: Sequence[str], sentence_of: numpy.ndarray,
                     min_contexts: int = MIN_CONTEXTS) -> List[numpy.ndarray]:
    """Token indices of each word type seen in at least ``min_contexts`` distinct sentences."""
    where: Dict[str, List[int]] = defaultdict(list)
    for i, word in enumerate(words):
        where[word].append(i)
    return [numpy.array(idx) for idx in where.values() if len(set(sentence_of[idx].tolist())) >= min_contexts]


def self_similarity(unit: numpy.ndarray, occurrences: List[numpy.ndarray]) -> float:
    """Mean over words of the mean pairwise cosine of the word's vectors (pairs j != k):
    (|sum of unit vectors|^2 - n) / (n^2 - n) per word (Ethayarajh 2019, Definition 1).
    Raises ElmoDataError (a ValueError) if no word qualifies."""
    if not occurrences:
        raise ElmoDataError(f"no word occurs in {MIN_CONTEXTS} or more sentences of the sample: use more sentences")
    sims = []
    for idx in occurrences:
        n = len(idx)
        total = unit[idx].sum(0)
        sims.append((float(total @ total) - n) / (n * n - n))
    return float(numpy.mean(sims))


def intra_sentence(unit: numpy.ndarray, offsets: numpy.ndarray) -> float:
    """Mean over sentences (>= 2 tokens) of the mean cosine between each token and the mean of
    the sentence's (unit) token vectors (Ethayarajh 2019, Definition 2). offsets: (S + 1,)."""
    sims = []
    for start, end in zip(offsets[:-1], offsets[1:]):
        if end - start < 2:
            continue
        rows = unit[start:end]
        centre = unit_rows(rows.mean(0, keepdims=True))[0]
        sims.append(float((rows @ centre).mean()))
    return float(numpy.mean(sims))


def contextuality(vecs: numpy.ndarray, sentences: Sequence[Sequence[str]], seed: int = 0) -> Dict[str, dict]:
    """{view: {"anisotropy", "self_similarity", "self_similarity_adjusted", "intra_sentence",
    "intra_sentence_adjusted", "words"}} for token vectors (n_tokens, L + 1, dim) of
    ``sentences`` (their tokens in order); "words": how many word types entered self-similarity."""
    lengths = [len(s) for s in sentences]
    offsets = numpy.concatenate([[0], numpy.cumsum(lengths)]).astype(int)
    sentence_of = numpy.repeat(numpy.arange(len(sentences)), lengths)
    words = [w for s in sentences for w in s]
    occurrences = word_occurrences(words, sentence_of)
    out = {}
    for view, x in views(vecs).items():
        unit = unit_rows(x)
        base = anisotropy(unit, sentence_of, seed)
        self_sim, intra = self_similarity(unit, occurrences), intra_sentence(unit, offsets)
        out[view] = {"anisotropy": base, "self_similarity": self_sim, "self_similarity_adjusted": self_sim - base,
                     "intra_sentence": intra, "intra_sentence_adjusted": intra - base, "words": len(occurrences)}
    return out
