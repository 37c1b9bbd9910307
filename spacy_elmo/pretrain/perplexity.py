"""Perplexity of a pretrained biLM (with its LM head) on a text file, same tokenisation as training."""
import os
from typing import Dict, Optional

import numpy
import torch

from .corpus import resolve_paths, tokenize_corpus, type_char_ids
from .export import load_model
from .train import evaluate


def resolve_model_dir(name_or_path: str) -> str:
    """A directory path, or the name of a model shipped in the package."""
    if os.path.isdir(name_or_path):
        return name_or_path
    from ..bilm.pretrained import resolve as resolve_pretrained  # packaged models

    return resolve_pretrained(name_or_path)


def perplexity(model: str, text_path: str, max_sentence_tokens: int = 50, threads: Optional[int] = None) -> Dict[str, float]:
    """{"perplexity": mean of both directions, "forward", "backward", "tokens"} on text_path.

    "tokens" counts predictions per direction (words plus one sentence end per sentence).
    Raises CorpusError for a missing, empty or binary text file; FileNotFoundError for a model
    directory without an LM head.
    """
    if threads:
        torch.set_num_threads(threads)
    lm, words = load_model(resolve_model_dir(model))
    paths = resolve_paths([text_path])
    types, _, split, _ = tokenize_corpus(
        paths, block_lines=1, heldout_every=1, max_sentence_tokens=max_sentence_tokens
    )
    word_ids = {w: i for i, w in enumerate(words)}
    type_to_word = numpy.array([word_ids.get(t, 2) for t in types], dtype=numpy.int64)
    type_to_word[0], type_to_word[1] = 0, 1
    return evaluate(lm, split, type_char_ids(types), type_to_word, 0, 2000)
