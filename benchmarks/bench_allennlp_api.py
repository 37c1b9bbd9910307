"""AllenNLP 2.10.1's ELMo API against ``spacy_elmo.allennlp``, on the same random-weight model and
sentences, in one run; prints one line per size and side, then ONE JSON line.

usage:
    bash ../shared/bench/allennlp-anchor/setup.sh ~/.cache/elmo-anchor/venv    # once, ~1 min
    python benchmarks/bench_allennlp_api.py [small original] [--sentences 100] [--runs 2] [--rounds 2]

Timed, per pass over the first ``--sentences`` EWT dev sentences, ``--threads`` torch threads
(default 2), under no_grad:

- ``Elmo``: ``Elmo(options, weights, 1, dropout=0)`` in eval mode, ``batch_to_ids`` + forward,
  batches of 32, stateless (AllenNLP's LSTM state reset before every batch);
- ``ElmoEmbedder``: ``list(embed_sentences(sentences, 32))`` (AllenNLP: 0.9's class over
  ``_ElmoBiLm``, from tests/data/allennlp/make_reference.py, state reset before every batch).

Each side runs in its own process (AllenNLP in its venv), ``--rounds`` times, alternately, one
warm-up pass then ``--runs`` timed passes each; tok/s from the best timed pass of a side (the
least disturbed by other processes; the medians are printed too).
The models are bench_bilm.py's (``~/.cache/elmo-anchor/{small,original}``, written on first use).
``--out PATH`` also writes the record docs/results/speed_allennlp_api.json (tokens/s rounded, the
ratio, the CPU, the load averages, how far the medians were from the best passes).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _allennlp_api():
    import torch
    from allennlp.modules.elmo import Elmo, batch_to_ids

    sys.path.insert(0, os.path.join(REPO, "tests", "data", "allennlp"))
    from make_reference import ElmoEmbedder

    def reset(elmo):
        elmo._elmo_lstm._elmo_lstm.reset_states()

    return torch, Elmo, batch_to_ids, ElmoEmbedder, reset


def _our_api():
    import torch

    from spacy_elmo.allennlp import Elmo, ElmoEmbedder, batch_to_ids

    return torch, Elmo, batch_to_ids, ElmoEmbedder, lambda elmo: None


def side(name, model_dir, sentences, runs, threads, batch_size=32):
    """Time both APIs of one side; returns {"Elmo": [seconds...], "ElmoEmbedder": [...]}."""
    torch, Elmo, batch_to_ids, ElmoEmbedder, reset = _allennlp_api() if name == "allennlp" else _our_api()
    torch.set_num_threads(threads)
    files = (os.path.join(model_dir, "options.json"), os.path.join(model_dir, "weights.hdf5"))
    elmo = Elmo(*files, 1, dropout=0.0).eval()
    embedder = ElmoEmbedder(*files)
    batches = [sentences[i: i + batch_size] for i in range(0, len(sentences), batch_size)]

    def run_elmo():
        for batch in batches:
            reset(elmo)
            elmo(batch_to_ids(batch))

    def run_embedder():
        list(embedder.embed_sentences(sentences, batch_size))

    times = {}
    with torch.no_grad():
        for label, fn in (("Elmo", run_elmo), ("ElmoEmbedder", run_embedder)):
            fn()  # warm-up
            times[label] = []
            for _ in range(runs):
                t0 = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - t0)
    return times


def _cpu_name():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return f"{names[0]} x {len(names)}" if names else "?"


def _run_side(python, name, model_dir, sentences_file, runs, threads):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(PYTHONWARNINGS="ignore", PYTHONPATH=REPO)
    cmd = [python, os.path.abspath(__file__), "--side", name, "--model-dir", model_dir,
           "--sentences-file", sentences_file, "--runs", str(runs), "--threads", str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def compare(size, a, anchor_py):
    sys.path.insert(0, HERE)
    import bench_bilm

    model_dir = bench_bilm.model_dir(size, a.models)
    conllu = a.conllu or os.path.join(bench_bilm.SHARED, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu")
    sentences = bench_bilm.read_workload(conllu, a.sentences)
    tokens = sum(len(s) for s in sentences)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sentences, f)
    times = {"allennlp": {}, "ours": {}}
    for _ in range(a.rounds):
        for name, python in (("allennlp", anchor_py), ("ours", sys.executable)):
            for label, seconds in _run_side(python, name, model_dir, f.name, a.runs, a.threads).items():
                times[name].setdefault(label, []).extend(seconds)
    os.unlink(f.name)
    result = {"tokens": tokens}
    for label in ("Elmo", "ElmoEmbedder"):
        best = {name: tokens / min(times[name][label]) for name in times}
        median = {name: tokens / statistics.median(times[name][label]) for name in times}
        result[label] = {**{f"{n}_tok_s": round(r, 1) for n, r in best.items()},
                         **{f"{n}_median_tok_s": round(r, 1) for n, r in median.items()},
                         "ratio": round(best["ours"] / best["allennlp"], 2)}
        print(f"{size} {label}: AllenNLP {best['allennlp']:.1f} tok/s, ours {best['ours']:.1f} tok/s, "
              f"{result[label]['ratio']}x (best passes; medians {median['allennlp']:.1f} / {median['ours']:.1f})",
              flush=True)
    return result


SIZE_NAMES = {"small": "small (1024/128)", "original": "original (4096/512)"}
CALL_NAMES = {"Elmo": "Elmo", "ElmoEmbedder": "ElmoEmbedder.embed_sentences"}


def record(summary: dict, argv) -> dict:
    """The record docs/results/speed_allennlp_api.json of one run's ``summary`` (main's JSON line)."""
    sys.path.insert(0, HERE)
    import result_record

    import bench_bilm

    rows, spread = [], 0.0
    for size, result in summary["sizes"].items():
        for label, call in CALL_NAMES.items():
            r = result[label]
            rows.append({"model": SIZE_NAMES.get(size, size), "call": call, "allennlp": round(r["allennlp_tok_s"]),
                         "spacy_elmo": round(r["ours_tok_s"]), "ratio": round(r["ratio"], 1)})
            spread = max(spread, *(1 - r[f"{n}_median_tok_s"] / r[f"{n}_tok_s"] for n in ("allennlp", "ours")))
    passes = summary["runs"] * summary["rounds"]
    load = f"{summary['loadavg_before']:.1f} before, {summary['loadavg_after']:.1f} after"
    return {"what": "AllenNLP 2.10.1's Elmo (batch_to_ids + forward, state reset per batch) and 0.9's "
                    "ElmoEmbedder.embed_sentences against spacy_elmo.allennlp's, on the same random-weight models "
                    "of the official shapes, each side in its own process, alternately; tokens/s of the best of "
                    f"{passes} passes (medians within {100 * spread:.0f}%)",
            "model": result_record.random_model(
                {s: result_record.options_shape(bench_bilm.preset(s)) for s in summary["sizes"]},
                std=0.05, made_by="benchmarks/bench_bilm.py (seed 0)"),
            "machine": result_record.machine(threads=summary["threads"], load_average=load),
            "code_path": "spacy_elmo.allennlp.Elmo / ElmoEmbedder over the float32 BiLM (OneDnnPath, oneDNN char "
                         "CNN), torch.no_grad(); AllenNLP 2.10.1 from ../shared/bench/allennlp-anchor/setup.sh",
            "command": result_record.command("benchmarks/bench_allennlp_api.py", argv),
            "workload": f"the first {summary['sentences']} EWT dev sentences ({summary['tokens']:,} words) in batches "
                        "of 32", "medians_within_percent": round(100 * spread), "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="*", default=["small", "original"])
    ap.add_argument("--sentences", type=int, default=100)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conllu", default=None)
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/elmo-anchor/venv"))
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--side", choices=("allennlp", "ours"), help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--sentences-file", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="also write the record here (docs/results/speed_allennlp_api.json)")
    a = ap.parse_args(argv)
    if a.side:
        with open(a.sentences_file, encoding="utf-8") as f:
            print(json.dumps(side(a.side, a.model_dir, json.load(f), a.runs, a.threads)))
        return
    anchor_py = os.path.join(a.venv, "bin", "python")
    if not os.path.isfile(anchor_py):
        sys.exit(f"no AllenNLP venv at {a.venv}: bash ../shared/bench/allennlp-anchor/setup.sh {a.venv}")
    summary = {"cpu": _cpu_name(), "loadavg_before": os.getloadavg()[0], "sentences": a.sentences,
               "runs": a.runs, "rounds": a.rounds, "threads": a.threads, "sizes": {}}
    for size in a.sizes:
        summary["sizes"][size] = compare(size, a, anchor_py)
        summary["tokens"] = summary["sizes"][size]["tokens"]
    summary["loadavg_after"] = os.getloadavg()[0]
    print(json.dumps(summary))
    if a.out:
        import result_record

        result_record.write(a.out, record(summary, argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
