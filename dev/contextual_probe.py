"""Is a biLM contextual? Per word, mean cosine of same-sense vs cross-sense uses, per layer.

    python dev/contextual_probe.py MODEL [SENSES_JSON]

MODEL: a packaged model name or a model directory. SENSES_JSON: {"words": {word: {"sentences":
[[sense-1 sentences], [sense-2 sentences]]}}} (default tests/data/senses_blind.json). Sentences
are tokenized with spaCy's English tokenizer, as in the pipeline. Prints, per word and layer
(0 = char CNN, which is context-free), the mean same-sense and cross-sense cosine and the
share of uses whose nearest other use (cosine) has the same sense (1-NN, as the nearest-neighbour sense
disambiguation of Peters et al. 2018 §5.3; n/a where all vectors are identical).
"""
import itertools
import json
import os
import sys

import numpy
import spacy

from spacy_elmo.bilm import BiLM

HERE = os.path.dirname(os.path.abspath(__file__))


def word_vectors(bilm, tokenizer, sentences, word):
    token_lists = [[t.text for t in tokenizer(s)] for s in sentences]
    layers = bilm.embed_sentences(token_lists)
    return numpy.stack([lay[:, toks.index(word)] for lay, toks in zip(layers, token_lists)])  # (n, L+1, dim)


def scores(vectors, labels):
    """(mean same-sense cosine, mean cross-sense cosine, 1-NN accuracy) of (n, dim) vectors."""
    unit = vectors / numpy.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    pairs = list(itertools.combinations(range(len(labels)), 2))
    same = [sims[i, j] for i, j in pairs if labels[i] == labels[j]]
    cross = [sims[i, j] for i, j in pairs if labels[i] != labels[j]]
    if numpy.ptp(vectors, axis=0).max() == 0:  # identical vectors (layer 0): no nearest neighbour
        return float(numpy.mean(same)), float(numpy.mean(cross)), float("nan")
    numpy.fill_diagonal(sims, -numpy.inf)
    nn = numpy.mean([labels[int(sims[i].argmax())] == labels[i] for i in range(len(labels))])
    return float(numpy.mean(same)), float(numpy.mean(cross)), float(nn)


def main(model, senses_path=os.path.join(HERE, "..", "tests", "data", "senses_blind.json")):
    bilm = BiLM.from_pretrained(model)
    tokenizer = spacy.blank("en").tokenizer
    words = json.load(open(senses_path, encoding="utf-8"))["words"]
    print(f"{'word':8} layer  same   cross  margin  1-NN")
    for word, entry in words.items():
        sentences = [s for group in entry["sentences"] for s in group]
        labels = [k for k, group in enumerate(entry["sentences"]) for _ in group]
        vectors = word_vectors(bilm, tokenizer, sentences, word)
        half = vectors.shape[-1] // 2
        views = [(str(k), vectors[:, k]) for k in range(vectors.shape[1])]
        views += [("top-fwd", vectors[:, -1, :half]), ("top-bwd", vectors[:, -1, half:])]
        for name, v in views:
            same, cross, nn = scores(v, labels)
            print(f"{word:8} {name:7} {same:.3f}  {cross:.3f}  {same - cross:+.3f}  {nn:.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
