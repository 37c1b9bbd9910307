"""Regenerate the ELMoForManyLangs fixtures of tests/data/efml/ with that package's own code.

Runs in a separate environment holding the reference package (never a dependency of
spacy-elmo; ``elmoformanylangs`` 0.0.4.post2 fails at import with a current ``overrides``)::

    python -m venv /tmp/efml-venv
    /tmp/efml-venv/bin/pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu \
        elmoformanylangs==0.0.4.post2 overrides==3.1.0 h5py tqdm
    PYTHONPATH=$PWD /tmp/efml-venv/bin/python dev/efml_fixtures.py tests/data/efml \
        [--record docs/results/efml_statefulness.json]

For each model of ``MODELS`` it builds the reference ``Model`` (``ConvTokenEmbedder`` +
``ElmobiLm``) with that package's classes, sets every parameter from a seeded N(0, std^2)
(trained-like magnitudes; the package's own init leaves NaN in the padding rows of its
normalised embeddings), and writes a model directory as that package's training does:
``config.json`` (naming the model config), the model config, ``char.dic``, ``word.dic`` (models
with words), ``token_embedder.pkl``, ``encoder.pkl``. Then it loads the directory with
``elmoformanylangs.Embedder`` and writes ``expected.npz``: the layers of every sentence of
``sentences.json`` from its FIRST ``sents2elmo(..., output_layer=-2)`` call, in one batch (so every
LSTM starts from zeros), keys ``"0"``, ``"1"``, ... (float32, (n_layers + 1, n_tokens, 2 * P)).

``--record PATH`` (``docs/results/efml_statefulness.json``) records how far that package's later
calls drift from that first one (max abs difference over every layer and sentence): per fixture,
a second call of the same ``Embedder`` on the same sentences and a first call with
``batch_size=1``; and for a full-size model (``benchmarks/bench_efml.py``'s: the standard config,
150,000 words, random N(0, 0.02^2) weights, ``--full-size-sentences`` of its sentences; 0 leaves
it out), a second call and a first call in its default batches of 64. The package shuffles the
order of its batches with Python's ``random``, so each call is made after ``random.seed(s)``:
seed 0, and for ``batch_size=1`` the largest drift over ``--seeds`` seeds (the list is kept).
Each row also holds ``spacy_elmo_max_abs_diff``: how far spacy-elmo's ``BiLM.embed_sentences`` of
the converted model (``spacy_elmo.convert``, batches of 3 and 64) is from that first call.
"""
import argparse
import codecs
import json
import os
import random
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


def first_call(directory: str, sentences: list) -> list:
    """That package's layers of ``sentences`` from the first call of a fresh ``Embedder`` with
    all of them in one batch (every LSTM starts from zeros)."""
    from elmoformanylangs import Embedder

    return Embedder(directory, batch_size=max(64, len(sentences))).sents2elmo(sentences, output_layer=-2)


def seeded_call(embedder, sentences: list, seed: int) -> list:
    random.seed(seed)  # the package shuffles its batches' order with Python's random
    return embedder.sents2elmo(sentences, output_layer=-2)


def drift(directory: str, sentences: list, first: list, seeds: list, single: bool = True) -> dict:
    """Max abs differences from ``first``: the second call of an ``Embedder`` (batches of 64), its
    first call in batches of 64, and (``single``) first calls with ``batch_size=1`` per seed."""
    from elmoformanylangs import Embedder

    again = Embedder(directory, batch_size=64)
    out = {"batch_size_64_first_call": max_diff(first, seeded_call(again, sentences, 0))}
    out["second_call"] = max_diff(first, seeded_call(again, sentences, 0))
    if single:
        by_seed = [max_diff(first, seeded_call(Embedder(directory, batch_size=1), sentences, seed)) for seed in seeds]
        out.update(batch_size_1=max(by_seed), batch_size_1_by_seed=by_seed)
    return out


def ours(directory: str, sentences: list, first: list) -> float:
    """Max abs difference of spacy-elmo's layers of the converted model from ``first``, over
    batches of 3 and of 64 (spacy_elmo needs torch, numpy and h5py only)."""
    import tempfile

    from spacy_elmo.bilm import BiLM
    from spacy_elmo.convert import convert

    with tempfile.TemporaryDirectory() as tmp:
        convert(directory, tmp)
        bilm = BiLM.from_pretrained(tmp)
        return max(max_diff(first, bilm.embed_sentences(sentences, batch_size=b)) for b in (3, 64))


def full_size(n_sentences: int, seeds: list) -> dict:
    """The drift of benchmarks/bench_efml.py's full-size model on its first ``n_sentences``."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
    import tempfile

    import bench_efml

    with tempfile.TemporaryDirectory() as tmp:
        sents = bench_efml.sentences(bench_efml.build(tmp, 5000, 150_000, 0.02), n_sentences)
        first = first_call(tmp, sents)
        row = drift(tmp, sents, first, seeds, single=False)
        row["spacy_elmo_max_abs_diff"] = ours(tmp, sents, first)
    return {"model": "full size", "sentences": n_sentences, **row}


def _portable(arg: str) -> str:
    """A command-line argument as a record shows it: an absolute path inside the repository made
    relative to it, one outside it (a scratch folder) shown as ``OUT_DIR``."""
    if not os.path.isabs(arg):
        return arg
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(arg, root) if os.path.commonpath([arg, root]) == root else "OUT_DIR"


def record(rows: list, seeds: list, argv: list) -> dict:
    """The statefulness record (model: random weights with their shapes; the CPU; no date)."""
    from importlib.metadata import version

    from spacy_elmo.bilm.cpu_budget import cpu_name

    shapes = {name: (f"{cnn['activation']} char CNN, filters {cnn['filters']} ({len(cnn['filters'])} widths, "
                     f"{sum(n for _, n in cnn['filters'])} filters), {cnn['n_highway']} highway(s), "
                     f"{word_dim}-dim words; LSTM {encoder['n_layers']} layer(s) of {encoder['dim']} cells, "
                     f"projection {encoder['projection_dim']}; N(0, {std}^2)")
              for name, (cnn, encoder, word_dim, std, _) in MODELS.items()}
    if any(row["model"] == "full size" for row in rows):
        shapes["full size"] = ("cnn_50_100_512_4096_sample.json (7 filter widths, 2048 filters, 2 highways, 4096 "
                               "cells, projection 512, 2 layers, 100-dim words), 150,000 words, 5,000 characters; "
                               "N(0, 0.02^2)")
    return {"what": "ELMoForManyLangs' Embedder carries each batch row's LSTM states into the next batch and "
                    "call: max abs difference (every layer and sentence) from its first call with all sentences "
                    "in one batch",
            "model": {"name": "random weights", "shapes": shapes},
            "machine": {"cpu": cpu_name(), "torch": torch.__version__, "threads": torch.get_num_threads()},
            "reference": f"elmoformanylangs {version('elmoformanylangs')}",
            "command": "python dev/efml_fixtures.py " + " ".join(map(_portable, argv)),
            "batch_sizes": [64, 1], "batch_order_seeds": seeds, "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default="tests/data/efml")
    ap.add_argument("--record", help="write the statefulness record here (docs/results/efml_statefulness.json)")
    ap.add_argument("--seeds", type=int, default=5, help="batch orders tried with batch_size=1")
    ap.add_argument("--full-size-sentences", type=int, default=120, help="0: no full-size row")
    args = ap.parse_args(argv)
    out, seeds = args.out, list(range(args.seeds))
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "sentences.json"), "w", encoding="utf-8") as f:
        json.dump(SENTENCES, f, ensure_ascii=False, indent=0)
    rows = []
    for name, spec in MODELS.items():
        directory = os.path.join(out, name)
        build(directory, name, spec)
        first = first_call(directory, SENTENCES)
        numpy.savez_compressed(os.path.join(directory, "expected.npz"),
                               **{str(i): numpy.asarray(a, dtype=numpy.float32) for i, a in enumerate(first)})
        if args.record:
            rows.append({"model": name, "sentences": len(SENTENCES), **drift(directory, SENTENCES, first, seeds),
                         "spacy_elmo_max_abs_diff": ours(directory, SENTENCES, first)})
            print(rows[-1])
    if args.record:
        if args.full_size_sentences:
            rows.append(full_size(args.full_size_sentences, seeds))
            print(rows[-1])
        with open(args.record, "w", encoding="utf-8") as f:
            json.dump(record(rows, seeds, argv if argv is not None else sys.argv[1:]), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
