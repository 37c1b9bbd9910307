"""The elmo pipeline on a machine whose cores are shared: tokens/s by thread setting, idle and loaded.

Conditions, each timed in a fresh worker process (so every run starts with a fresh OpenMP pool):
- load: "idle", or "loaded" (a busy-looping process pinned to the first CPU of this process's
  affinity, the way another worker on the same box would keep a core busy);
- the component's ``threads``: 1, the CPU count, and "auto" (the default; see
  spacy_elmo/bilm/cpu_budget.py).
torch itself runs with its default thread count (the CPU count) in every worker.

Prints tokens/s (median of --repeats passes over --docs UD EWT dev sentences) for each condition
and the ratios that matter: auto vs the best fixed setting under each load. Pause a background
pretraining job first (the "idle" rows are meaningless otherwise):

    bash dev/ops/pause_pretraining.sh python benchmarks/bench_shared_cores.py

``--out PATH`` also writes this script's row of docs/results/speed_pipeline.json
(result_record.write_row): tokens/s per load and setting, and how much slower the CPU-count
setting ran than 1 thread with one core busy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

HERE = Path(__file__).resolve().parent
SHARED = shared_dir()


def worker(threads: str, docs: int, repeats: int, text_file: str) -> None:
    import spacy
    import torch

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"threads": threads if threads == "auto" else int(threads)}})
    texts = [t for t in Path(text_file).read_text(encoding="utf-8").splitlines() if t.strip()][:docs]
    list(nlp.pipe(texts[:32]))  # warm-up: load the biLM, first oneDNN primitives
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = sum(len(d) for d in nlp.pipe(texts, batch_size=64))
        rates.append(n / (time.perf_counter() - t0))
    print(json.dumps({"tok_s": statistics.median(rates), "all": rates, "torch_threads": torch.get_num_threads()}))


def ewt_dev_sentences(path: Path) -> str:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / "spacy_elmo_bench_ewt_dev.txt"
    lines = [ln[len("# text = "):] for ln in path.read_text(encoding="utf-8").splitlines()
             if ln.startswith("# text = ")]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(out)


def busy_loop(cpu: int) -> subprocess.Popen:
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    proc = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(1.0)  # let the load show in /proc/stat before the worker samples it
    return proc


def run(threads: str, args, text_file: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", threads, "--docs", str(args.docs), "--repeats", str(args.repeats),
           "--text", text_file]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def write_row(path: str, table: dict, settings: list, args, argv) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import result_record

    from spacy_elmo import DEFAULT_MODEL

    row = {"what": "shared cores", "docs": args.docs, "repeats": args.repeats, "threads": settings,
           "tok_s": {f"{load}/{t}": round(v) for (load, t), v in table.items()}}
    if len(settings) > 2:
        row["all_threads_slowdown_with_one_core_busy"] = round(table[("loaded", "1")] / table[("loaded", settings[1])])
    result_record.write_row(path, "benchmarks/bench_shared_cores.py", row, result_record.model_identity(DEFAULT_MODEL),
                            argv)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--text", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also write this script's row here (docs/results/speed_pipeline.json)")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.docs, args.repeats, args.text)
    text_file = ewt_dev_sentences(SHARED / "data" / "ud_en_ewt" / "en_ewt-ud-dev.conllu")
    cpus = sorted(os.sched_getaffinity(0))
    settings = ["1", str(len(cpus)), "auto"] if len(cpus) > 1 else ["1", "auto"]
    cpu_name = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"CPU: {cpu_name}; {len(cpus)} usable CPUs; {args.docs} EWT dev sentences, median of {args.repeats}")
    table = {}
    for load in ("idle", "loaded"):
        loader = busy_loop(cpus[0]) if load == "loaded" else None
        try:
            for t in settings:
                r = run(t, args, text_file)
                table[(load, t)] = r["tok_s"]
                print(f"{load:7s} threads={t:5s} {r['tok_s']:9,.0f} tokens/s  (passes: "
                      f"{', '.join(f'{x:,.0f}' for x in r['all'])})", flush=True)
        finally:
            if loader is not None:
                loader.kill()
                loader.wait()
    for load in ("idle", "loaded"):
        best = max((t for t in settings if t != "auto"), key=lambda t: table[(load, t)])
        worst = min((t for t in settings if t != "auto"), key=lambda t: table[(load, t)])
        print(f"{load}: auto / best fixed (threads={best}) = {table[(load, 'auto')] / table[(load, best)]:.2f}; "
              f"auto / worst fixed (threads={worst}) = {table[(load, 'auto')] / table[(load, worst)]:.2f}")
    if args.out:
        write_row(args.out, table, settings, args, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
