"""Perplexity of a pretrained biLM (with its LM head) on a text file, same tokenisation as training."""
from typing import Dict, Optional

import torch

from ..bilm.pretrained import resolve
from .corpus import map_types_to_words, resolve_paths, tokenize_corpus, type_char_ids
from .evaluation import evaluate
from .export import load_model


def perplexity(model: str, text_path: str, max_sentence_tokens: int = 50,
               threads: Optional[int] = None) -> Dict[str, float]:
    """{"perplexity": mean of both directions, "forward", "backward", "tokens"} on text_path.

    "tokens" counts predictions per direction (words plus one sentence end per sentence).
    Raises CorpusError for a missing, empty or binary text file; FileNotFoundError for a missing
    model or a model directory without an LM head; ElmoWeightsError (a ValueError) naming the file
    for a corrupt or mismatched options.json, weights.hdf5, lm_head.hdf5 or vocab.txt.
    """
    if threads:
        torch.set_num_threads(threads)
    lm, words = load_model(resolve(model))  # a directory or a packaged model's name
    paths = resolve_paths([text_path])
    types, _, split, _ = tokenize_corpus(
        paths, block_lines=1, heldout_every=1, max_sentence_tokens=max_sentence_tokens
    )
    type_to_word = map_types_to_words(types, words)
    return evaluate(lm, split, type_char_ids(types), type_to_word, 0, 2000)
