"""ELMoForManyLangs' ``Embedder`` against the converted model's ``BiLM.embed_sentences``, on the
same full-size model, alternating in one process; and the sizes of the source and converted
directories.

Runs in the reference package's environment (see dev/efml_fixtures.py) with this repository on
the path (``spacy_elmo.bilm`` needs torch, numpy and h5py only)::

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 15 /tmp/efml-venv/bin/python benchmarks/bench_efml.py

The model: that package's standard config (``cnn_50_100_512_4096_sample.json``: 2048 filters, 2
highways, 4096 cells, projection 512, 2 layers, word_dim 100) with a 150,000-word vocabulary (its
README's ``--max_vocab_size``) and ``--chars`` characters, built with its own classes and random
N(0, 0.02^2) weights. The workload: ``--sentences`` seeded sentences of 5-30 tokens drawn from the
vocabulary plus 10% unseen words; both sides in batches of 64, one torch thread. Prints one JSON
line: seconds per run (all; tokens/s and the ratio from the best), sizes in bytes, and the max abs
difference (over every layer and sentence) between ours and the reference's: its first call with
all sentences in one batch (exactness), the second call of that Embedder, and a first call in
batches of 64 (its default; later batches start from the earlier batches' final states).
``--out PATH`` also writes the record docs/results/speed_efml.json (the CPU, the code path, sizes
in MB, tokens/s of the best runs, ``run_variation``: the largest slowest / fastest run of a side).
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time
from importlib.metadata import version

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dev"))

from efml_fixtures import write_dic  # noqa: E402


def build(directory: str, n_chars: int, n_words: int, std: float) -> list:
    """A full-size model with the standard config; returns its words."""
    from elmoformanylangs.frontend import Model
    from elmoformanylangs.modules.embedding_layer import EmbeddingLayer

    from spacy_elmo.convert.efml import CONFIGS_DIR

    name = "cnn_50_100_512_4096_sample.json"
    config = json.loads((CONFIGS_DIR / name).read_text())
    rng = random.Random(0)
    alphabet = [chr(c) for c in range(0x61, 0x7B)] + [chr(0x4E00 + i) for i in range(n_chars - 32)]
    chars = {c: i for i, c in enumerate(alphabet)}
    for special in ["<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"]:
        chars.setdefault(special, len(chars))
    words = {w: i for i, w in enumerate(["<oov>", "<bos>", "<eos>", "<pad>"])}
    while len(words) < n_words:
        words.setdefault("".join(rng.choice(alphabet[:200]) for _ in range(rng.randint(1, 12))), len(words))
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"config_path": name}, f)  # found among the standard configs, as that package does
    write_dic(os.path.join(directory, "char.dic"), chars)
    write_dic(os.path.join(directory, "word.dic"), words)
    tok = config["token_embedder"]
    model = Model(config, EmbeddingLayer(tok["word_dim"], words, fix_emb=False),
                  EmbeddingLayer(tok["char_dim"], chars, fix_emb=False), use_cuda=False)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * std)
    torch.save(model.token_embedder.state_dict(), os.path.join(directory, "token_embedder.pkl"))
    torch.save(model.encoder.state_dict(), os.path.join(directory, "encoder.pkl"))
    return [w for w in words if not w.startswith("<")]


def sentences(words: list, n: int) -> list:
    rng = random.Random(1)
    out = []
    for _ in range(n):
        out.append([rng.choice(words) if rng.random() > 0.1 else f"unseen{rng.randint(0, 10 ** 6)}"
                    for _ in range(rng.randint(5, 30))])
    return out


def max_diff(theirs, ours) -> float:
    return max(float(numpy.abs(a - b).max()) for a, b in zip(theirs, ours))


def size(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))


def record(result: dict, args, argv) -> dict:
    """The record docs/results/speed_efml.json of one run's ``result`` (main's JSON line)."""
    sys.path.insert(0, HERE)
    import result_record

    mb = {k: round(result[f"{k}_bytes"] / 1e6, 1) for k in ("source", "converted")}
    mb["change_percent"] = round(100 * (result["converted_bytes"] / result["source_bytes"] - 1), 1)
    tok_s = result["tokens_per_s"]
    shape = ("2048 filters, 2 highways, 4096 cells, projection 512, 2 layers, 100-dim words, "
             f"{args.words:,}-word and {args.chars:,}-character vocabulary")
    return {"what": "ELMoForManyLangs' Embedder.sents2elmo against the converted model's BiLM.embed_sentences on "
                    "the same full-size model (its standard config, random weights), alternating in one process, "
                    f"best of {args.runs}; sizes of the source and converted directories",
            "model": result_record.random_model({"efml standard": shape}, std=0.02),
            "machine": result_record.machine(threads=result["threads"], load_average=result["load_average"]),
            "code_path": "BiLM.embed_sentences, float32 (OneDnnPath, oneDNN char CNN with word embeddings); "
                         f"elmoformanylangs {result['reference_version']}'s own code",
            "command": result_record.command("benchmarks/bench_efml.py", argv) + " (in the reference package's "
                       "environment, dev/efml_fixtures.py)",
            "workload": f"{args.sentences} sentences ({result['tokens']:,} tokens), batches of 64",
            "size_mb": mb, "convert_s": round(result["convert_s"]), "max_abs_diff": result["max_abs_diff"],
            "tokens_s": {"reference": round(tok_s["reference"]), "spacy_elmo": round(tok_s["ours"]),
                         "ratio": round(result["speedup"], 1)},
            "run_variation": round(max(max(t) / min(t) for t in result["seconds"].values()), 1)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=120)
    ap.add_argument("--chars", type=int, default=5000)
    ap.add_argument("--words", type=int, default=150_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", help="also write the record here (docs/results/speed_efml.json)")
    args = ap.parse_args(argv)
    load = round(os.getloadavg()[0], 2)
    torch.set_num_threads(1)
    from elmoformanylangs import Embedder

    from spacy_elmo.bilm import BiLM
    from spacy_elmo.convert import convert

    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
        sents = sentences(build(src, args.chars, args.words, 0.02), args.sentences)
        t0 = time.perf_counter()
        convert(src, out)
        convert_s = time.perf_counter() - t0
        ours = BiLM.from_pretrained(out)
        got = ours.embed_sentences(sents, batch_size=64)
        one_batch = Embedder(src, batch_size=len(sents))  # one batch: every LSTM starts from zeros
        diff = {"one_batch_first_call": max_diff(one_batch.sents2elmo(sents, output_layer=-2), got),
                "one_batch_second_call": max_diff(one_batch.sents2elmo(sents, output_layer=-2), got),
                "batch_size_64_first_call": max_diff(Embedder(src, batch_size=64).sents2elmo(sents, output_layer=-2),
                                                     got)}
        times = {"reference": [], "ours": []}
        for _ in range(args.runs):
            ref = Embedder(src, batch_size=64)  # a fresh Embedder each run: its state starts at zero
            t0 = time.perf_counter()
            ref.sents2elmo(sents, output_layer=-2)
            times["reference"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ours.embed_sentences(sents, batch_size=64)
            times["ours"].append(time.perf_counter() - t0)
        tokens = sum(map(len, sents))
        best = {k: min(v) for k, v in times.items()}
        result = {"tokens": tokens, "seconds": times, "tokens_per_s": {k: round(tokens / v, 1)
                  for k, v in best.items()}, "speedup": round(best["reference"] / best["ours"], 2),
                  "max_abs_diff": diff, "source_bytes": size(src), "converted_bytes": size(out),
                  "convert_s": round(convert_s, 1), "threads": torch.get_num_threads(), "load_average": load,
                  "reference_version": version("elmoformanylangs")}
    print(json.dumps(result))
    if args.out:
        import result_record

        result_record.write(args.out, record(result, args, argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
