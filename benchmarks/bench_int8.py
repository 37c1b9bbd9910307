"""float32 / bfloat16 / int8 inference (``BiLM(precision=...)``) in one run: speed, closeness and
memory, written to a record (docs/results/precision_int8.json) that the docs quote.

usage: python benchmarks/bench_int8.py [--parts speed,memory,downstream] [--threads 1,2] [--runs 3]
           [--sentences 200] [--batch-size 32] [--models DIR] [--out docs/results/precision_int8.json]
           [--pipeline NAME=PIPELINE_DIR,DEV.spacy ...]

Models: the original-size biLM (bench_bilm.py's seeded random weights: 2,048 char filters, 2
highway layers, LSTM 4,096 cells / projection 512, 2 layers; written to ``--models`` on first
use) and the packaged trained ``en_elmo_small``. Workload: the first ``--sentences`` EWT dev
sentences (syntactic words), batches of ``--batch-size``.

1. Speed, per model and thread count: one BiLM per precision, one warm-up pass each (packs and
   quantizes the weights), then ``--runs`` rounds in which the three run in turn (a change in the
   machine's load hits all alike); tokens/s of the median wall time and of the median CPU time
   (``time.process_time``; steadier on shared cores), ratios to float32.
2. Closeness (1 thread, the warm-up outputs): per layer, the per-token cosine of each precision's
   vectors to float32's (mean, minimum) and the largest |difference|. On the trained model this is
   the accuracy measure; the original-size random model is chaotic (benchmarks/README.md,
   "Outputs"), so its numbers only show that int8 is no worse than bfloat16 there.
3. Memory: per precision, a fresh process loads the original-size model, embeds the workload once
   (building the packed / quantized copies) and reports its resident set (VmRSS) and peak (VmHWM)
   in MiB.
4. Downstream (``--pipeline``, repeatable): a trained pipeline with an ``elmo`` component, loaded
   once per precision with a config override (float32, int8), run over a DocBin (gold
   tokenisation) and scored as ``spacy train`` does (``Scorer``): tag_acc / pos_acc / ents_f,
   their differences in points, and how many tokens' predictions differ.

Prints a readable table, then writes the record (``machine.cpu``: the CPU's name and vector
extensions; torch; the original-size model's shape; each number's code path; no date). Only
the ``--parts`` run are replaced in an existing record; the others are kept.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from result_record import shipped_model  # noqa: E402

import bench_bilm  # noqa: E402

PRECISIONS = ("float32", "bfloat16", "int8")
PATHS = {"float32": "oneDNN float32 products (exact)",
         "bfloat16": "oneDNN bfloat16 products, float32 accumulation (char CNN and LSTM)",
         "int8": "LSTM, highway and token projection: oneDNN int8 products (per-channel weights, per-row "
                 "activations, int32 accumulation); char convolutions: oneDNN float32"}


def load(model, precision, models_dir):
    from spacy_elmo.bilm import BiLM

    if model == "original":
        d = bench_bilm.model_dir("original", models_dir)
        return BiLM.from_files(os.path.join(d, "options.json"), os.path.join(d, "weights.hdf5"), precision=precision)
    return BiLM.from_pretrained(model, precision=precision)


def closeness(ref, other):
    """Per layer: mean and minimum per-token cosine of ``other`` to ``ref``, largest |difference|."""
    import numpy as np

    cos, diff = [], []
    for r, o in zip(ref, other):
        if r.shape[1]:
            cos.append((r * o).sum(-1) / np.maximum(np.linalg.norm(r, axis=-1) * np.linalg.norm(o, axis=-1), 1e-30))
            diff.append(np.abs(r - o).max(axis=(1, 2)))
    c, d = np.concatenate(cos, axis=1), np.max(np.stack(diff), axis=0)
    return [dict(layer=k, mean_cosine=round(float(c[k].mean()), 6), min_cosine=round(float(c[k].min()), 6),
                 max_abs_diff=round(float(d[k]), 4)) for k in range(c.shape[0])]


def speed(model, threads, sents, a):
    """tokens/s (wall and CPU) per precision, medians of ``a.runs`` alternating rounds; and the
    warm-up outputs."""
    import torch

    torch.set_num_threads(threads)
    models = {p: load(model, p, a.models) for p in PRECISIONS}
    outputs = {p: m.embed_sentences(sents, batch_size=a.batch_size) for p, m in models.items()}
    wall, cpu = {p: [] for p in PRECISIONS}, {p: [] for p in PRECISIONS}
    for _ in range(a.runs):
        for p, m in models.items():
            t0, c0 = time.perf_counter(), time.process_time()
            m.embed_sentences(sents, batch_size=a.batch_size)
            wall[p].append(time.perf_counter() - t0)
            cpu[p].append(time.process_time() - c0)
    ntok = sum(len(s) for s in sents)
    rows = {}
    for p in PRECISIONS:
        tps, cps = ntok / statistics.median(wall[p]), ntok / statistics.median(cpu[p])
        rows[p] = dict(effective=models[p].effective_precision, tokens_per_s=round(tps, 1),
                       tokens_per_cpu_s=round(cps, 1), wall_s=[round(t, 3) for t in wall[p]],
                       cpu_s=[round(t, 3) for t in cpu[p]])
    for p in PRECISIONS:
        rows[p]["ratio"] = round(rows[p]["tokens_per_s"] / rows["float32"]["tokens_per_s"], 2)
        rows[p]["cpu_ratio"] = round(rows[p]["tokens_per_cpu_s"] / rows["float32"]["tokens_per_cpu_s"], 2)
    return rows, outputs


RSS_CODE = """
import json, sys
sys.path.insert(0, {here!r})
import bench_int8, bench_bilm, torch
torch.set_num_threads(1)
sents = bench_bilm.read_workload({conllu!r}, {n})
m = bench_int8.load("original", {precision!r}, {models!r})
m.embed_sentences(sents, batch_size={batch})
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
print(json.dumps({{k: round(int(status[k].split()[0]) / 1024, 1) for k in ("VmRSS", "VmHWM")}}))
"""


def rss(precision, conllu, a):
    code = RSS_CODE.format(here=HERE, conllu=conllu, n=a.sentences, precision=precision, models=a.models,
                           batch=a.batch_size)
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return dict(rss_mib=got["VmRSS"], peak_rss_mib=got["VmHWM"])


def downstream(spec):
    """``NAME=PIPELINE,DEV``: float32 and int8 scores of the pipeline on the DocBin DEV."""
    import spacy
    from spacy.scorer import Scorer
    from spacy.training import Corpus, Example

    name, rest = spec.split("=", 1)
    path, dev = rest.split(",", 1)
    out = dict(pipeline=os.path.abspath(path), dev=os.path.abspath(dev))
    predicted = {}
    for p in ("float32", "int8"):
        nlp = spacy.load(path, config={"components": {"elmo": {"model": {"precision": p}}}})
        examples = list(Corpus(dev, gold_preproc=True)(nlp))
        t0 = time.perf_counter()
        docs = list(nlp.pipe((eg.predicted.copy() for eg in examples), batch_size=256))
        seconds = time.perf_counter() - t0
        scores = Scorer(nlp).score([Example(d, eg.reference) for d, eg in zip(docs, examples)])
        keep = {k: round(100 * scores[k], 3) for k in ("tag_acc", "pos_acc", "ents_f") if scores.get(k) is not None}
        out[p] = dict(keep, effective=nlp.get_pipe("elmo").bilm.effective_precision, seconds=round(seconds, 1))
        predicted[p] = [(t.tag_, t.pos_, t.ent_iob_, t.ent_type_) for d in docs for t in d]
    out["tokens"] = len(predicted["float32"])
    out["tokens_differing"] = sum(a != b for a, b in zip(predicted["float32"], predicted["int8"]))
    out["difference_points"] = {k: round(out["int8"][k] - out["float32"][k], 3) for k in out["float32"]
                                if k.endswith(("_acc", "_f"))}
    return name, out


def original_shape():
    """The original-size model's shape (bench_bilm.py's ``original`` preset), for the record."""
    options = bench_bilm.preset("original")
    cnn, lstm = options["char_cnn"], options["lstm"]
    return {"weights": "random (seed 0, std 0.05)", "char_filters": sum(n for _, n in cnn["filters"]),
            "highway_layers": cnn["n_highway"], "lstm_cells": lstm["dim"], "projection_dim": lstm["projection_dim"],
            "lstm_layers": lstm["n_layers"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--conllu", default=os.path.join(bench_bilm.SHARED, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "results", "precision_int8.json"))
    ap.add_argument("--parts", default="speed,memory,downstream")
    ap.add_argument("--pipeline", action="append", default=[], metavar="NAME=PIPELINE_DIR,DEV.spacy")
    a = ap.parse_args(argv)
    parts = set(a.parts.split(","))

    import torch

    from spacy_elmo.bilm.cpu_budget import cpu_name
    from spacy_elmo.bilm.precision import cpu_bf16_capability, cpu_int8_capability

    sents = bench_bilm.read_workload(a.conllu, a.sentences)
    threads = [int(t) for t in a.threads.split(",")]
    record = dict(what="float32 / bfloat16 / int8 biLM inference: tokens/s, per-token cosine to float32, RSS",
                  model=shipped_model(), command="python benchmarks/bench_int8.py " + " ".join(argv or sys.argv[1:]),
                  machine=dict(cpu=cpu_name(), cpus=os.cpu_count(), torch=torch.__version__,
                               int8=cpu_int8_capability(), bf16=cpu_bf16_capability()),
                  shapes=dict(original=original_shape()),
                  workload=dict(sentences=len(sents), tokens=sum(len(s) for s in sents), batch_size=a.batch_size,
                                runs=a.runs, statistic="median of the runs, the precisions alternating"),
                  paths=PATHS, speed={}, closeness={}, memory={}, downstream={})
    for model in ("original", "en_elmo_small") if "speed" in parts else ():
        for t in threads:
            rows, outputs = speed(model, t, sents, a)
            record["speed"][f"{model}/{t}"] = dict(model=model, threads=t, precisions=rows)
            if model not in record["closeness"]:
                record["closeness"][model] = {p: closeness(outputs["float32"], outputs[p]) for p in PRECISIONS[1:]}
            print(f"{model:14s} {t} thread(s): " + "  ".join(
                f"{p} {r['tokens_per_s']:.0f} tok/s x{r['ratio']:.2f} (CPU x{r['cpu_ratio']:.2f})"
                for p, r in rows.items()), flush=True)
    for model, per in record["closeness"].items():
        for p, layers in per.items():
            print(f"{model:14s} {p:8s} " + "  ".join(
                f"layer {x['layer']}: mean {x['mean_cosine']:.6f} min {x['min_cosine']:.6f} "
                f"max|diff| {x['max_abs_diff']:.4g}" for x in layers))
    if "memory" in parts:
        for p in PRECISIONS:
            record["memory"][p] = rss(p, a.conllu, a)
            print(f"original-size model, {p}: RSS {record['memory'][p]['rss_mib']:.1f} MiB "
                  f"(peak {record['memory'][p]['peak_rss_mib']:.1f} MiB)")
    for spec in a.pipeline if "downstream" in parts else ():
        name, got = downstream(spec)
        record["downstream"][name] = got
        print(f"{name}: " + "  ".join(f"{p} {got[p]}" for p in ("float32", "int8"))
              + f"  int8 - float32: {got['difference_points']}; {got['tokens_differing']} tokens differ")
    machine = record["machine"]
    print(f"{machine['cpu']} (int8: {machine['int8']}, bf16: {machine['bf16']}); paths: {json.dumps(PATHS)}")
    write(record, a.out, parts)
    print(f"wrote {a.out}")
    return 0


def write(record, path, parts):
    """Write ``record`` to ``path``, keeping the parts not run from the record already there."""
    kept = {"speed": ("speed", "closeness", "workload"), "memory": ("memory",), "downstream": ("downstream",)}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        for part, keys in kept.items():
            if part not in parts:
                record.update({k: old[k] for k in keys if k in old})
        if set(parts) != set(kept):
            record["command"] = old.get("command", "") + "; " + record["command"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
