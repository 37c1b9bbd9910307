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
    """Tensors for :meth:`.lm.LanguageModel.forward` from sentence indices: ``char_ids`` (2 + U,
    width) int64, the rows of <S> and </S> (char_table's rows 0 and 1) then those of the batch's U
    distinct token types; ``index`` (B, T) int64, each token's row in ``char_ids[2:]``, -1 after
    a sentence's T_b tokens (T the longest); ``targets`` (B, T + 2) int64, the softmax word ids
    of [<S>, t_1..t_N, </S>], -1 after. Both directions predict N + 1 words per sentence."""
    sents = [split.tokens[split.offsets[i] : split.offsets[i + 1]] for i in sentence_ids]
    B, T = len(sents), max(len(s) for s in sents)
    tokens = numpy.full((B, T), -1, dtype=numpy.int64)
    seqs = numpy.full((B, T + 2), -1, dtype=numpy.int64)
    for b, s in enumerate(sents):
        tokens[b, : len(s)] = s
        seqs[b, : len(s) + 2] = numpy.concatenate([[0], s, [1]])
    valid = tokens >= 0
    uniq, inverse = numpy.unique(tokens[valid], return_inverse=True)
    index = numpy.full_like(tokens, -1)
    index[valid] = inverse.reshape(-1)
    targets = numpy.where(seqs >= 0, type_to_word[numpy.maximum(seqs, 0)], -1)
    return {
        "char_ids": torch.from_numpy(char_table[numpy.concatenate([[0, 1], uniq])].astype(numpy.int64)),
        "index": torch.from_numpy(index),
        "targets": torch.from_numpy(targets.astype(numpy.int64)),
    }
