"""Perplexity of a pretrained biLM (with its LM head): on a text file, same tokenisation as
training, or on the splits of a pretraining run's own corpus."""
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

import torch

from ..hub.resolve import resolve
from .config import load_config
from .corpus import Split, map_types_to_words, resolve_paths, tokenize_corpus
from .corpus_cache import prepare_corpus
from .evaluation import evaluate
from .export import load_model
from .settings import training_settings


def perplexity(model: str, text_path: str, max_sentence_tokens: int = 50,
               threads: Optional[int] = None) -> Dict[str, float]:
    """{"perplexity": mean of both directions, "forward", "backward", "tokens"} on text_path.

    "tokens" counts predictions per direction (words plus one sentence end per sentence).
    Raises ElmoDataError for a missing, empty or binary text file; FileNotFoundError for a missing
    model or a model directory without an LM head; ElmoModelFileError (a ValueError) naming the file
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
    return evaluate(lm, split, lm.char_table(types), type_to_word, 0, 2000)


def run_scorer(run_dir: str, model_dir: Optional[str] = None) -> Tuple[dict, Callable[[Split], Dict[str, float]]]:
    """(corpus, score) for a pretraining output directory.

    corpus: the run's tokenised corpus (``prepare_corpus``: "train" and "heldout" Splits, "types"),
    read from its corpus/ cache, or tokenised again from its config.cfg if the cache is missing
    (minutes for the shared corpus). score(split): ``evaluate``'s dict ("perplexity", "forward",
    "backward", "tokens") of the model in model_dir (default RUN_DIR/model; any model of that run's
    vocabulary) on a Split of that corpus, batched by the run's ``tokens_per_batch``.
    Raises FileNotFoundError if RUN_DIR has no config.cfg or the model lacks a file;
    ElmoModelFileError (a ValueError) for a corrupt or mismatched model file.
    """
    out = Path(run_dir)
    if not (out / "config.cfg").is_file():
        raise FileNotFoundError(f"{out / 'config.cfg'} not found: give a pretraining output directory")
    cfg = load_config(out / "config.cfg")
    corpus = prepare_corpus(cfg, out, progress=False)
    lm, words = load_model(str(model_dir or out / "model"))
    char_table = lm.char_table(corpus["types"])
    type_to_word = map_types_to_words(corpus["types"], words)
    batch_tokens = training_settings(cfg).tokens_per_batch
    return corpus, lambda split: evaluate(lm, split, char_table, type_to_word, 0, batch_tokens)
