"""Throughput of ``python -m spacy_elmo embed`` against ``BiLM.embed_sentences`` on the same text,
in one process; prints one JSON line.

usage: python benchmarks/bench_embed.py [--model NAME_OR_DIR] [--lines 2000] [--text PATH]
           [--batch-size 64] [--threads 2] [--runs 2] [--layers all] [--dtype float32]

Workload: the first --lines lines of --text (default ../shared/data/lm/wikinews_en.txt.gz), split
on whitespace (``embed --pretokenized``), so both read the same tokens. Timed, alternately, --runs
times each:
  embed_sentences: ``bilm.embed_sentences(sentences, batch_size)`` on a loaded model (results in
      memory, nothing written);
  embed_file: the whole command ``embed_file(...)``: model load, reading the file, length-sorted
      groups, HDF5 parts, final merge into OUTPUT (a fresh OUTPUT each run).
tok/s use the best (least disturbed) wall time of the runs; also reported: the ratio of CPU times
(process_time: less sensitive to other jobs on the same core), of median wall times, embed_file's
loop alone (without model load and merge) and the output size. ratio = embed_file tok/s /
embed_sentences tok/s (target >= 0.9). Other CPU-heavy jobs disturb the numbers; say which cores
it ran on. ``--out PATH`` also writes this script's row of docs/results/speed_pipeline.json
(result_record.write_row).
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = str(shared_dir())


def read_lines(path, n):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        out = []
        for line in f:
            out.append(line.rstrip("\n"))
            if len(out) >= n:
                break
    return out


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--text", default=os.path.join(SHARED, "data", "lm", "wikinews_en.txt.gz"))
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--layers", default="all")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", help="also write this script's row here (docs/results/speed_pipeline.json)")
    a = ap.parse_args(argv)

    import torch

    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.bilm import BiLM
    from spacy_elmo.embed import embed_file

    torch.set_num_threads(a.threads)
    model = a.model or DEFAULT_MODEL
    lines = read_lines(a.text, a.lines)
    sentences = [line.split() for line in lines]
    n_tokens = sum(map(len, sentences))
    tmp = tempfile.mkdtemp(prefix="bench_embed_")
    src = os.path.join(tmp, "input.txt")
    with open(src, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    bilm = BiLM.from_pretrained(model)
    bilm.embed_sentences(sentences[:64], batch_size=a.batch_size)  # warm-up

    wall = {"embed_sentences": [], "embed_file": []}
    cpu = {"embed_sentences": [], "embed_file": []}
    loop = []
    for run in range(a.runs):
        t, c = time.perf_counter(), time.process_time()
        out = bilm.embed_sentences(sentences, batch_size=a.batch_size)
        wall["embed_sentences"].append(time.perf_counter() - t)
        cpu["embed_sentences"].append(time.process_time() - c)
        del out
        dst = os.path.join(tmp, f"out{run}.hdf5")
        t, c = time.perf_counter(), time.process_time()
        summary = embed_file(src, dst, model=model, layer_spec=a.layers, dtype=a.dtype, pretokenized=True,
                             batch_size=a.batch_size, progress=False)
        wall["embed_file"].append(time.perf_counter() - t)
        cpu["embed_file"].append(time.process_time() - c)
        loop.append(summary["seconds"])
        size = os.path.getsize(dst)
        os.remove(dst)
    best = {k: min(v) for k, v in wall.items()}
    best_cpu = {k: min(v) for k, v in cpu.items()}
    result = {
        "model": model, "lines": len(lines), "tokens": n_tokens, "batch_size": a.batch_size, "threads": a.threads,
        "layers": a.layers, "dtype": a.dtype, "runs": a.runs, "cpu": cpu_name(), "torch": torch.__version__,
        "embed_sentences_tok_s": round(n_tokens / best["embed_sentences"], 1),
        "embed_file_tok_s": round(n_tokens / best["embed_file"], 1),
        "embed_file_loop_tok_s": round(n_tokens / min(loop), 1),
        "ratio_wall": round(best["embed_sentences"] / best["embed_file"], 3),
        "ratio_cpu": round(best_cpu["embed_sentences"] / best_cpu["embed_file"], 3),
        "ratio_wall_median": round(statistics.median(wall["embed_sentences"])
                                   / statistics.median(wall["embed_file"]), 3),
        "output_mb": round(size / 1e6, 1),
        "wall_s": {k: [round(x, 2) for x in v] for k, v in wall.items()},
        "cpu_s": {k: [round(x, 2) for x in v] for k, v in cpu.items()},
    }
    print(json.dumps(result))
    shutil.rmtree(tmp)
    if a.out:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import result_record

        row = {"what": "embed against BiLM.embed_sentences", "ratio_tok_s": round(result["ratio_wall"], 3),
               "ratio_cpu_time": result["ratio_cpu"], "lines": result["lines"], "threads": a.threads}
        result_record.write_row(a.out, "benchmarks/bench_embed.py", row, result_record.model_identity(model), argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
