"""Is a biLM contextual? Per word, mean cosine of same-sense vs cross-sense uses, per layer.

    python dev/contextual_probe.py MODEL [SENSES_JSON]

MODEL: a packaged model name or a model directory. SENSES_JSON: {"words": {word: {"sentences":
[[sense-1 sentences], [sense-2 sentences]]}}} (default tests/data/senses_blind.json). Sentences
are tokenized with spaCy's English tokenizer, as in the pipeline. Prints, per word and layer
(layer spec names: layer_0 = char CNN, which is context-free), the mean same-sense and
cross-sense cosine and the share of uses whose nearest other use (cosine) has the same sense
(1-NN, as the nearest-neighbour sense disambiguation of Peters et al. 2018 §5.3; n/a where all
vectors are identical). The measures live in :mod:`spacy_elmo.probe.senses` (the tests of the
shipped model use them too).
"""
import json
import os
import sys

import spacy

from spacy_elmo.bilm import BiLM
from spacy_elmo.probe.senses import sense_scores, word_vectors

HERE = os.path.dirname(os.path.abspath(__file__))


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
        views = [(f"layer_{k}", vectors[:, k]) for k in range(vectors.shape[1])]
        views += [("top-fwd", vectors[:, -1, :half]), ("top-bwd", vectors[:, -1, half:])]
        for name, v in views:
            same, cross, nn = sense_scores(v, labels)
            print(f"{word:8} {name:7} {same:.3f}  {cross:.3f}  {same - cross:+.3f}  {nn:.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
