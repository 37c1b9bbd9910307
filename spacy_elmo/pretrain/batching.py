"""Deterministic, length-bucketed batches of sentences for biLM pretraining.

An epoch's batch list depends only on (seed, epoch), so training resumes exactly at
(epoch, batch index) after an interruption.
"""
from typing import Dict, List

import numpy
import torch

from .corpus import Split

POOL_BATCHES = 100  # sentences are length-sorted within pools of ~100 batches


def pack(sorted_ids: numpy.ndarray, lengths: numpy.ndarray, tokens_per_batch: int) -> List[numpy.ndarray]:
    """Cut sentence ids, already sorted by length, into consecutive batches whose padded size
    (longest sentence + 2 boundary tokens, times the number of sentences) stays within
    ``tokens_per_batch`` (a longer sentence gets a batch of its own). lengths: tokens per
    sentence id (without the boundaries). The one batching rule of training and evaluation."""
    batches: List[numpy.ndarray] = []
    current: List[int] = []
    longest = 0
    for idx in sorted_ids:
        n = int(lengths[idx]) + 2
        if current and max(longest, n) * (len(current) + 1) > tokens_per_batch:
            batches.append(numpy.asarray(current))
            current, longest = [], 0
        current.append(int(idx))
        longest = max(longest, n)
    if current:
        batches.append(numpy.asarray(current))
    return batches


def epoch_batches(split: Split, tokens_per_batch: int, seed: int, epoch: int) -> List[numpy.ndarray]:
    """Sentence indices of each batch of one epoch (shuffled, similar lengths together)."""
    rng = numpy.random.default_rng([seed, epoch])
    lengths = numpy.diff(split.offsets)
    order = rng.permutation(len(lengths))
    mean_len = max(1.0, float(lengths.mean())) if len(lengths) else 1.0
    pool_size = max(1, int(POOL_BATCHES * tokens_per_batch / (mean_len + 2)))
    batches: List[numpy.ndarray] = []
    for start in range(0, len(order), pool_size):
        pool = order[start : start + pool_size]
        pool_batches = pack(pool[numpy.argsort(lengths[pool], kind="stable")], lengths, tokens_per_batch)
        for j in rng.permutation(len(pool_batches)):
            batches.append(pool_batches[j])
    return batches


def make_batch(
    split: Split, sentence_ids: numpy.ndarray, char_table: numpy.ndarray, type_to_word: numpy.ndarray
) -> Dict[str, torch.Tensor]:
    """Tensors for :meth:`LanguageModel.forward` from sentence indices.

    Each sentence is [<S>(type 0), t_1..t_N, </S>(type 1)]; both directions see N + 1 inputs.
    """
    sents = [split.tokens[split.offsets[i] : split.offsets[i + 1]] for i in sentence_ids]
    B = len(sents)
    T = max(len(s) for s in sents) + 1
    seqs = numpy.full((B, T + 1), -1, dtype=numpy.int64)
    rev = numpy.full((B, T + 1), -1, dtype=numpy.int64)
    for b, s in enumerate(sents):
        full = numpy.concatenate([[0], s, [1]])
        seqs[b, : len(full)] = full
        rev[b, : len(full)] = full[::-1]
    valid = seqs >= 0
    uniq, inverse = numpy.unique(seqs[valid], return_inverse=True)
    local_f = numpy.full_like(seqs, -1)
    local_f[valid] = inverse
    local_b = numpy.full_like(rev, -1)
    # rev holds the same multiset per row; map through a lookup table
    lookup = numpy.full(int(uniq.max()) + 1, -1, dtype=numpy.int64)
    lookup[uniq] = numpy.arange(len(uniq))
    local_b[valid] = lookup[rev[valid]]
    words_f = numpy.where(valid, type_to_word[numpy.maximum(seqs, 0)], -1)
    words_b = numpy.where(valid, type_to_word[numpy.maximum(rev, 0)], -1)
    return {
        "char_ids": torch.from_numpy(char_table[uniq].astype(numpy.int64)),
        "fwd_inputs": torch.from_numpy(local_f[:, :-1].copy()),
        "bwd_inputs": torch.from_numpy(local_b[:, :-1].copy()),
        "fwd_targets": torch.from_numpy(words_f[:, 1:].copy()),
        "bwd_targets": torch.from_numpy(words_b[:, 1:].copy()),
    }
