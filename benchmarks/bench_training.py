"""Wall time of ``spacy train`` for the project's ELMo tagger against its baseline, evaluations
included: seconds per 1,000 steps and the ratio ELMo / baseline.

    python benchmarks/bench_training.py [--steps 600] [--eval-frequency 200] [--repeats 1]

Runs ``python -m spacy train`` (a subprocess each, same interpreter and environment, started in
its output folder so that ``PYTHONPATH`` decides which ``spacy_elmo`` it imports) on
``configs/tagger_base.cfg`` and ``configs/tagger_elmo.cfg`` (``--base`` / ``--elmo``: a name in
``configs/`` or a path) with the project's corpora
(``corpus/ewt/{train,dev}.spacy``, made by ``spacy project run convert``), alternately
(base, elmo, base, elmo, ...) so that drift on a shared machine hits both, with
``--training.max_steps``, ``--training.eval_frequency`` and ``patience = 0`` overridden. Each
run's wall time covers everything ``spacy train`` does: loading, initialize, the steps, the
evaluations on the whole dev set and the saves of model-best / model-last. Prints one JSON line
per run and a summary line: median seconds per 1,000 steps of each (wall, and CPU time of the
``spacy train`` process: on a core shared with other jobs the CPU time is the figure to compare),
their ratios, and the dev scores reached (the same seed gives the same score whatever the speed).

``--elmo-override KEY=VALUE`` (repeatable) adds an override to the ELMo run only, e.g.
``--elmo-override components.elmo.model.cache_mb=0`` to time it without the layer cache.
Thread count: whatever the environment gives torch (set ``OMP_NUM_THREADS``); the elmo
component's ``threads = "auto"`` never goes above it. ``--out PATH`` also writes this comparison's
row of docs/results/speed_pipeline.json (result_record.write_row; one row per pair of configs).
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(config: str, args, out_dir: str, extra) -> dict:
    path = Path(config) if os.path.isfile(config) else ROOT / "configs" / config
    cmd = [sys.executable, "-m", "spacy", "train", str(path), "--output", out_dir,
           "--paths.train", str(ROOT / args.train), "--paths.dev", str(ROOT / args.dev),
           "--training.max_steps", str(args.steps), "--training.eval_frequency", str(args.eval_frequency),
           "--training.patience", "0", "--system.seed", "0"]
    for item in extra:
        key, value = item.split("=", 1)
        cmd += [f"--{key}", value]
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"spacy train {config} failed ({proc.returncode})")
    scores = [float(m.group(1)) for m in re.finditer(r"^\s*\d+\s+\d+\s+.*?\s([\d.]+)\s*$", proc.stdout, re.M)]
    return {"config": config, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "s_per_1000_steps": round(wall / args.steps * 1000, 2),
            "cpu_s_per_1000_steps": round(cpu / args.steps * 1000, 2), "final_score": scores[-1] if scores else None}


def write_row(path: str, summary: dict, args, argv) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import result_record
    import torch

    from spacy_elmo import DEFAULT_MODEL

    row = {"what": "frozen-biLM training", "configs": [args.base, args.elmo], "steps": args.steps,
           "eval_frequency": args.eval_frequency, "repeats": args.repeats, "threads": torch.get_num_threads(),
           "elmo_over_baseline_wall": summary["ratio"], "elmo_over_baseline_cpu": summary["cpu_ratio"],
           "s_per_1000_steps": {"base": summary["base_s_per_1000_steps"], "elmo": summary["elmo_s_per_1000_steps"]},
           "scores": {"base": summary["base_score"], "elmo": summary["elmo_score"]}}
    result_record.write_row(path, "benchmarks/bench_training.py", row, result_record.model_identity(DEFAULT_MODEL),
                            argv, label=f"{args.base} / {args.elmo}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--eval-frequency", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--train", default="corpus/ewt/train.spacy")
    parser.add_argument("--dev", default="corpus/ewt/dev.spacy")
    parser.add_argument("--base", default="tagger_base.cfg")
    parser.add_argument("--elmo", default="tagger_elmo.cfg")
    parser.add_argument("--elmo-override", action="append", default=[])
    parser.add_argument("--out", help="also write this comparison's row here (docs/results/speed_pipeline.json)")
    args = parser.parse_args(argv)
    for path in (args.train, args.dev):
        if not (ROOT / path).is_file():
            raise SystemExit(f"{ROOT / path} not found: run `python -m spacy project run convert` first")
    import torch

    print(json.dumps({"torch_threads": torch.get_num_threads(), "cpus": sorted(os.sched_getaffinity(0)),
                      "steps": args.steps, "eval_frequency": args.eval_frequency}), flush=True)
    results = {"base": [], "elmo": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for kind, config, extra in (("base", args.base, []), ("elmo", args.elmo, args.elmo_override)):
                out_dir = os.path.join(tmp, f"{kind}{r}")
                os.makedirs(out_dir)
                res = run(config, args, out_dir, extra)
                results[kind].append(res)
                print(json.dumps(res), flush=True)
    summary = {}
    for key in ("s_per_1000_steps", "cpu_s_per_1000_steps"):
        base = statistics.median(r[key] for r in results["base"])
        elmo = statistics.median(r[key] for r in results["elmo"])
        summary.update({f"base_{key}": base, f"elmo_{key}": elmo,
                        "ratio" if key == "s_per_1000_steps" else "cpu_ratio": round(elmo / base, 3)})
    summary.update(base_score=results["base"][-1]["final_score"], elmo_score=results["elmo"][-1]["final_score"])
    print(json.dumps(summary))
    if args.out:
        write_row(args.out, summary, args, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
