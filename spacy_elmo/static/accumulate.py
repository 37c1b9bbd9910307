"""The second pass: running sums of a view's contextual vectors, word by word.

For each record (line), its tokens are cut into pieces of at most ``window_tokens``
(:func:`spacy_elmo.pretrain.corpus.split_even`, as pretraining cuts long sentences); each piece
is one biLM sentence. A token *claims* a context when it is a vocabulary word that has fewer
than ``max_contexts`` contexts so far (0: no limit), in corpus order. A sentence without any
claim is skipped: it never reaches the biLM. Consecutive sentences with claims form a group of
at least ``group_tokens`` tokens (the last one may be shorter), cut on record boundaries, so
that a state saved between groups is consistent and a resumed run cuts the same groups.

A group goes through :func:`spacy_elmo.bilm.batching.embed_batches` (the batching of
``BiLM.embed_sentences`` and ``embed``: distinct tokens through the char CNN once,
length-sorted batches of ``batch_size``); only the claimed positions are read out of each
batch, the view is applied to them and they are added to their words' rows. Memory: the sums,
float64 (V, K, dim) (K = 1, or num_layers + 1 for the stacked view "all"), and one group.
"""
from typing import Callable, Iterator, List, NamedTuple, Optional

import numpy
import torch

from ..bilm.batching import embed_batches
from ..layer_spec import LayerSpec
from ..pretrain.corpus import split_even


class Group(NamedTuple):
    """records: lines it covers (sentences with and without claims); tokens: their tokens;
    sentences: the pieces with claims; claims[i]: (token positions, vocabulary rows) of
    sentence i; skipped: pieces without a claim."""

    records: int
    tokens: int
    sentences: List[List[str]]
    claims: List[tuple]
    skipped: int


class Claims:
    """Contexts taken per word (a list of ints for speed; ``counts`` as int64), and how many
    words have all ``max_contexts`` of theirs (``full``)."""

    def __init__(self, counts: numpy.ndarray, max_contexts: int):
        self.taken = [int(c) for c in counts]
        self.max = int(max_contexts)
        self.full = sum(1 for c in self.taken if self.max and c >= self.max)

    @property
    def counts(self) -> numpy.ndarray:
        return numpy.asarray(self.taken, dtype=numpy.int64)

    @property
    def done(self) -> bool:
        """Every word has its max_contexts contexts (nothing left to read)."""
        return bool(self.max) and self.full == len(self.taken)

    def claim(self, tokens: List[str], row_of: dict) -> Optional[tuple]:
        """(positions, rows) of the tokens that take a context, or None if none does."""
        positions, rows = [], []
        taken, limit = self.taken, self.max
        for i, token in enumerate(tokens):
            r = row_of.get(token)
            if r is not None and (not limit or taken[r] < limit):
                taken[r] += 1
                positions.append(i)
                rows.append(r)
                if limit and taken[r] == limit:
                    self.full += 1
        return (positions, rows) if rows else None


def groups(lines: Iterator[str], tokenize: Callable[[str], List[str]], row_of: dict, claims: Claims,
           window_tokens: int, group_tokens: int) -> Iterator[Group]:
    """The groups of the remaining records (see the module docstring); stops early once every
    word is full. Claims are taken as a group is made: save a state only between groups."""
    sentences, taken, records, tokens, kept, skipped = [], [], 0, 0, 0, 0
    for line in lines:
        words = tokenize(line)
        records += 1
        tokens += len(words)
        for piece in split_even(words, window_tokens):
            claim = claims.claim(piece, row_of)
            if claim is None:
                skipped += 1
                continue
            sentences.append(piece)
            taken.append(claim)
            kept += len(piece)
        if kept >= group_tokens or claims.done:
            yield Group(records, tokens, sentences, taken, skipped)
            sentences, taken, records, tokens, kept, skipped = [], [], 0, 0, 0, 0
            if claims.done:
                return
    if records:
        yield Group(records, tokens, sentences, taken, skipped)


def add_group(bilm, spec: LayerSpec, group: Group, sums: numpy.ndarray, batch_size: int) -> int:
    """Add the view of every claimed context of ``group`` to ``sums`` (float64 (V, K, dim)).
    Returns the tokens that went through the biLM."""
    for batch in embed_batches(bilm, group.sentences, batch_size):
        b_index, t_index, rows = [], [], []
        for b, i in enumerate(batch.members):
            positions, word_rows = group.claims[i]
            b_index.extend([b] * len(positions))
            t_index.extend(positions)
            rows.extend(word_rows)
        picked = batch.layers[:, torch.tensor(b_index), torch.tensor(t_index)].cpu().numpy()  # (L+1, m, dim)
        view = picked if spec.stacked else spec.apply(picked)[None]
        # sums[rows[j]] += view[:, j] in index order, float64; torch's index_add_ is numpy.add.at's
        # result at 3x its speed (the running sums are a numpy array: from_numpy shares its memory)
        torch.from_numpy(sums).index_add_(0, torch.tensor(rows, dtype=torch.long),
                                          torch.from_numpy(view.transpose(1, 0, 2)).to(torch.float64))
    return sum(len(s) for s in group.sentences)
