"""Run the biLM once over a list of sentences, with a progress bar, and keep what a probe needs.

Sentences go through :meth:`spacy_elmo.bilm.BiLM.embed_sentences` in chunks of similar length
(longest first, so batches pad little), which is exact: a sentence's vectors do not depend on
the other sentences of its chunk. Each call runs under the component's thread budget
(``threads = "auto"``, :mod:`spacy_elmo.bilm.cpu_budget`): on cores shared with other processes,
2 torch threads embedded about 12x slower than 1.
"""
from typing import Callable, List, Sequence

import numpy
from tqdm import tqdm

CHUNK = 256  # sentences per embed_sentences call: bounds the memory of one call


def _each_sentence(bilm, sentences: Sequence[Sequence[str]], consume: Callable[[int, numpy.ndarray], None],
                   batch_size: int, desc: str, progress: bool) -> None:
    """Call ``consume(i, layers)`` once per sentence i, layers float32 (L + 1, len, dim)."""
    from ..bilm.cpu_budget import ThreadBudget

    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    total = sum(len(s) for s in sentences)
    budget = ThreadBudget("auto")
    with tqdm(total=total, desc=desc, unit="tok", disable=not progress, leave=False) as bar:
        for start in range(0, len(order), CHUNK):
            rows = order[start: start + CHUNK]
            with budget:
                outs = bilm.embed_sentences([list(sentences[i]) for i in rows], batch_size=batch_size)
            for i, layers in zip(rows, outs):
                consume(i, layers)
            bar.update(sum(len(sentences[i]) for i in rows))


def embed_tokens(bilm, sentences: Sequence[Sequence[str]], batch_size: int = 64, desc: str = "embed",
                 progress: bool = True) -> numpy.ndarray:
    """float32 (n_tokens, L + 1, dim): every token of every sentence, in input order
    (sentence 0's tokens first). Memory: n_tokens * (L + 1) * dim * 4 bytes."""
    offsets = numpy.concatenate([[0], numpy.cumsum([len(s) for s in sentences])]).astype(int)
    out = numpy.empty((int(offsets[-1]), bilm.num_layers + 1, bilm.output_dim), dtype=numpy.float32)

    def consume(i: int, layers: numpy.ndarray) -> None:
        out[offsets[i]: offsets[i + 1]] = layers.transpose(1, 0, 2)

    _each_sentence(bilm, sentences, consume, batch_size, desc, progress)
    return out


def embed_targets(bilm, sentences: Sequence[Sequence[str]], index: Sequence[int], batch_size: int = 64,
                  desc: str = "embed", progress: bool = True) -> numpy.ndarray:
    """float32 (n, L + 1, dim): the vectors of token ``index[i]`` of ``sentences[i]``. Each
    distinct sentence runs once (WiC repeats many). Raises IndexError for an index out of range."""
    distinct: dict = {}
    keys: List[tuple] = [tuple(s) for s in sentences]
    for key in keys:
        distinct.setdefault(key, len(distinct))
    unique = list(distinct)
    wanted: List[List[int]] = [[] for _ in unique]
    for i, key in enumerate(keys):
        wanted[distinct[key]].append(i)
    out = numpy.empty((len(keys), bilm.num_layers + 1, bilm.output_dim), dtype=numpy.float32)

    def consume(u: int, layers: numpy.ndarray) -> None:
        for i in wanted[u]:
            out[i] = layers[:, index[i]]

    _each_sentence(bilm, unique, consume, batch_size, desc, progress)
    return out
