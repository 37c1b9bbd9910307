"""Does removing the common direction help? Contextual vectors are anisotropic (Ethayarajh
2019): every vector shares a large mean component, so unrelated words get high cosines.
Subtracting a per-layer mean vector before the cosine (as in Mu & Viswanath 2018, "All-but-the-
top", step 1) is the simplest fix; this module estimates the means on the pretraining text and
lets the probe score WiC with them.
"""
import glob
import os
from typing import List

import numpy

from ..text_files import text_lines
from .embed import embed_tokens


def lm_sample(pattern: str, n_lines: int) -> List[List[str]]:
    """The first ``ceil(n_lines / n_files)`` non-empty lines of each file matching ``pattern``
    (gzip or plain, sorted by name), tokenised with spaCy's English tokenizer (the pipeline's),
    whitespace tokens dropped. Raises FileNotFoundError if nothing matches."""
    import spacy

    files = sorted(glob.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no pretraining text matches {pattern!r} "
                                "(give another --lm-text, or --center-sentences 0)")
    per_file = -(-n_lines // len(files))
    tokenizer = spacy.blank("en").tokenizer
    out = []
    for path in files:
        taken = 0
        for line in text_lines(path):
            tokens = [t.text for t in tokenizer(line.strip()) if not t.is_space]
            if tokens:
                out.append(tokens)
                taken += 1
            if taken >= per_file:
                break
    return out[:n_lines]


def layer_means(bilm, sentences: List[List[str]], batch_size: int = 64, progress: bool = True) -> numpy.ndarray:
    """float32 (L + 1, dim): the mean vector of each layer over all tokens of ``sentences``."""
    vecs = embed_tokens(bilm, sentences, batch_size=batch_size, desc="embed LM text (means)", progress=progress)
    return vecs.mean(axis=0)


def describe(pattern: str, n_sentences: int, n_tokens: int) -> str:
    """One line for the report: where the means came from."""
    names = ", ".join(sorted(os.path.basename(p) for p in glob.glob(pattern)))
    return f"{n_sentences:,} sentences ({n_tokens:,} tokens), the first lines of {names}"
