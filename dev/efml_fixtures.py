"""Regenerate the ELMoForManyLangs fixtures of tests/data/efml/ with that package's own code.

Runs in a separate environment holding the reference package (never a dependency of
spacy-elmo; ``elmoformanylangs`` 0.0.4.post2 fails at import with a current ``overrides``)::

    python -m venv /tmp/efml-venv
    /tmp/efml-venv/bin/pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu \
        elmoformanylangs==0.0.4.post2 overrides==3.1.0
    /tmp/efml-venv/bin/python dev/efml_fixtures.py tests/data/efml

For each model of ``MODELS`` it builds the reference ``Model`` (``ConvTokenEmbedder`` +
``ElmobiLm``) with that package's classes, sets every parameter from a seeded N(0, std^2)
(trained-like magnitudes; the package's own init leaves NaN in the padding rows of its
normalised embeddings), and writes a model directory as that package's training does:
``config.json`` (naming the model config), the model config, ``char.dic``, ``word.dic`` (models
with words), ``token_embedder.pkl``, ``encoder.pkl``. Then it loads the directory with
``elmoformanylangs.Embedder`` and writes ``expected.npz``: the layers of every sentence of
``sentences.json`` from its FIRST ``sents2elmo(..., output_layer=-2)`` call, in one batch (so every
LSTM starts from zeros), keys ``"0"``, ``"1"``, ... (float32, (n_layers + 1, n_tokens, 2 * P)).

``statefulness.json`` records, per model, how far that package's later calls drift from the first
one (max abs difference over every layer): a second call on the same sentences, and a call with
``batch_size=1``.
"""
import codecs
import json
import os
import sys

import numpy
import torch

# Sentences: OOV characters and words, tokens longer than the limit (10 characters for most
# models, 50 for one), CJK, emoji (one with a skin-tone modifier), combining marks, NBSP and
# U+3000, the literal special strings as tokens, a one-token sentence.
SENTENCES = [
    ["Der", "Hund", "läuft", "schnell", "."],
    ["北京", "是", "中国", "的", "首都", "。"],
    ["emoji", "😀", "👍🏽", "ok"],
    ["e\u0301", "café", "cafe\u0301", "Cafe"],
    ["a\u00a0b", "\u3000", "x", "\u00a0"],
    ["<bos>", "<oov>", "<eos>", "<pad>", "<bow>", "<eow>"],
    ["Donaudampfschifffahrtsgesellschaftskapitänswitwe", "supercalifragilistic",
     "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", "Hund"],
    ["Ω"],
    ["zzqx", "Hund", "hund", "der", "Der", "中国"],
    ["ß", "Straße", "über", "Ü", "the", "cat", "sat", "on", "the", "mat", "."],
]

# Words of the (pretend) training text: their characters form char.dic, the words word.dic.
WORDS = ["Der", "der", "Hund", "läuft", "schnell", ".", "北京", "是", "中国", "的", "首都", "。", "ok",
         "café", "Straße", "über", "the", "cat", "sat", "on", "mat", "😀", "a", "x", "e",
         "Donaudampfschiff"]

MODELS = {
    # name: (config, word_dim or 0, std, legacy pickle format)
    "relu-words-1layer": ({"filters": [[1, 4], [2, 8], [3, 8]], "n_highway": 1, "activation": "relu",
                           "char_dim": 4, "max_characters_per_token": 10},
                          {"projection_dim": 8, "dim": 16, "n_layers": 1, "cell_clip": 3, "proj_clip": 3},
                          6, 0.3, False),
    "tanh-chars-2layers": ({"filters": [[1, 4], [2, 4], [3, 8], [4, 8]], "n_highway": 2, "activation": "tanh",
                            "char_dim": 5, "max_characters_per_token": 50},
                           {"projection_dim": 8, "dim": 16, "n_layers": 2, "cell_clip": 3, "proj_clip": 3},
                           0, 0.3, False),
    "relu-words-2layers-noclip": ({"filters": [[2, 6], [3, 6]], "n_highway": 0, "activation": "relu",
                                   "char_dim": 3, "max_characters_per_token": 10},
                                  {"projection_dim": 6, "dim": 12, "n_layers": 2, "cell_clip": None,
                                   "proj_clip": None},
                                  5, 0.25, True),
}


def model_config(cnn: dict, encoder: dict, word_dim: int) -> dict:
    return {"encoder": {"name": "elmo", **encoder},
            "token_embedder": {"name": "cnn", "word_dim": word_dim, **cnn},
            "classifier": {"name": "sampled_softmax", "n_samples": 8192}, "dropout": 0.1}


def lexicons():
    """char and word lexicons built as the package's training does (biLM.py: characters of the
    training words, then the specials; words after the specials)."""
    chars = {}
    for word in WORDS:
        for ch in word:
            chars.setdefault(ch, len(chars))
    chars.setdefault("\u3000", len(chars))  # written as one field (str.strip drops it on reading)
    for special in ["<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"]:
        chars.setdefault(special, len(chars))
    words = {}
    for special in ["<oov>", "<bos>", "<eos>", "<pad>"]:
        words.setdefault(special, len(words))
    for word in WORDS:
        words.setdefault(word, len(words))
    return chars, words


def write_dic(path: str, lexicon: dict) -> None:
    with codecs.open(path, "w", encoding="utf-8") as f:
        for token, i in lexicon.items():
            print(f"{token}\t{i}", file=f)


def build(directory: str, name: str, spec) -> None:
    from elmoformanylangs.frontend import Model
    from elmoformanylangs.modules.embedding_layer import EmbeddingLayer

    cnn, encoder, word_dim, std, legacy = spec
    config = model_config(cnn, encoder, word_dim)
    chars, words = lexicons()
    os.makedirs(directory, exist_ok=True)
    config_name = f"{name}.json"
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"config_path": config_name}, f)
    with open(os.path.join(directory, config_name), "w") as f:
        json.dump(config, f, indent=1)
    write_dic(os.path.join(directory, "char.dic"), chars)
    char_layer = EmbeddingLayer(cnn["char_dim"], chars, fix_emb=False)
    word_layer = None
    if word_dim:
        write_dic(os.path.join(directory, "word.dic"), words)
        word_layer = EmbeddingLayer(word_dim, words, fix_emb=False)
    model = Model(config, word_layer, char_layer, use_cuda=False)
    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    kw = {"_use_new_zipfile_serialization": False} if legacy else {}
    torch.save(model.token_embedder.state_dict(), os.path.join(directory, "token_embedder.pkl"), **kw)
    torch.save(model.encoder.state_dict(), os.path.join(directory, "encoder.pkl"), **kw)


def max_diff(a, b) -> float:
    return float(max(numpy.abs(x - y).max() for x, y in zip(a, b)))


def expected(directory: str):
    from elmoformanylangs import Embedder

    first = Embedder(directory, batch_size=64).sents2elmo(SENTENCES, output_layer=-2)
    numpy.savez_compressed(os.path.join(directory, "expected.npz"),
                           **{str(i): numpy.asarray(a, dtype=numpy.float32) for i, a in enumerate(first)})
    again = Embedder(directory, batch_size=64)
    again.sents2elmo(SENTENCES, output_layer=-2)
    second = again.sents2elmo(SENTENCES, output_layer=-2)
    single = Embedder(directory, batch_size=1).sents2elmo(SENTENCES, output_layer=-2)
    return {"second_call": max_diff(first, second), "batch_size_1": max_diff(first, single)}


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "sentences.json"), "w", encoding="utf-8") as f:
        json.dump(SENTENCES, f, ensure_ascii=False, indent=0)
    drift = {}
    for name, spec in MODELS.items():
        directory = os.path.join(out, name)
        build(directory, name, spec)
        drift[name] = expected(directory)
        print(name, drift[name])
    with open(os.path.join(out, "statefulness.json"), "w") as f:
        json.dump(drift, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/efml")
