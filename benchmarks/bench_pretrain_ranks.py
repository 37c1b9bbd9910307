"""Pretraining on one 2-core machine: one process with 2 threads against two data-parallel ranks
(``torchrun``, 1 thread each), alternating, same corpus slice, same start, same training tokens.

Runs the real command (``python -m spacy_elmo pretrain``) in subprocesses, with a run's
``config.cfg`` (default: the packaged en_elmo_small's; ``--projection-dim`` widens it, e.g. 256 for
run 4's 512-dim layers), warm-started from ``--init-from`` (default: the config's ``init_from``, else
the packaged model), and reads each run's ``model/meta.json``: tokens/s over the
training steps (``training.tokens_per_second``: step time only, start-up and evaluation
excluded) and the full held-out perplexity of the slice after the same number of tokens.

Conditions (``--conditions``, default all):

- ``torch-1x2``: the first trainer (``lstm_impl = "torch"``, float32), 1 process x 2 threads
  (the baseline of the throughput comparison);
- ``native-1x2``: the native trainer (``fused``, ``precision = "auto"``), 1 process x 2 threads;
- ``native-2x1``: the native trainer, 2 ranks x 1 thread, each rank a batch of
  ``--tokens-per-batch`` (a step takes twice the tokens);
- ``native-2x1-half``: 2 ranks x 1 thread with half a batch each (a step takes the same tokens as
  one process: the same optimisation, only the work is split).

Prints one line per condition (median tokens/s over ``--repeats``) and the ratios to
``native-1x2`` and ``torch-1x2``. Run with pretraining paused:

    bash dev/ops/pause_pretraining.sh python benchmarks/bench_pretrain_ranks.py --projection-dim 256 --repeats 2
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

MODEL = ROOT / "spacy_elmo" / "models" / "en_elmo_small"
CONDITIONS = ("torch-1x2", "native-1x2", "native-2x1", "native-2x1-half")


def command(name: str, out: Path, config: Path, steps: int, tpb: int) -> list:
    """The pretrain command line of one condition (2 cores: taskset -c 0,1 where it exists)."""
    pin = ["taskset", "-c", "0,1"] if shutil.which("taskset") else []
    ranks = name.endswith(("2x1", "2x1-half"))
    launcher = ["torchrun", "--standalone", "--nproc_per_node", "2"] if ranks else [sys.executable]
    per_rank = tpb // 2 if name.endswith("half") else tpb
    n_steps = steps if not ranks or name.endswith("half") else steps // 2
    args = [*pin, *launcher, "-m", "spacy_elmo", "pretrain", str(out), "--config", str(config), "--quiet",
            "--training.threads", "1" if ranks else "2", "--training.max_steps", str(n_steps),
            "--training.tokens_per_batch", str(per_rank)]
    if name.startswith("torch"):
        args += ["--training.lstm_impl", "torch", "--training.precision", "float32"]
    return args


def bench_config(src: Path, dst: Path, lines: int, init_from: str, projection_dim: int = 0) -> None:
    """A copy of a run's config: a corpus slice, no evaluations or checkpoints during the run,
    a constant learning rate (no warm-up, no decay), warm-started from init_from (widened where
    projection_dim is larger than its model's)."""
    from spacy_elmo.pretrain.config import load_config

    cfg = load_config(src)
    cfg["corpus"]["paths"] = [str(p) for p in sorted((shared_dir() / "data" / "lm").glob("*.txt.gz"))]
    cfg["corpus"]["max_lines_per_file"] = lines
    cfg["training"].update(eval_every_steps=0, checkpoint_minutes=1_000_000, warmup_steps=0, decay_steps=0,
                           final_lr_fraction=1.0, max_tokens=0, max_minutes=0, stop_after_minutes=0,
                           accumulate_batches=1, init_from=init_from, lstm_impl="fused", precision="auto",
                           device="cpu")
    if projection_dim:
        cfg["model"]["projection_dim"] = projection_dim
    cfg.to_disk(dst)


def run_one(name: str, tmp: Path, config: Path, steps: int, tpb: int, corpus: Path) -> dict:
    out = tmp / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    if corpus.is_dir():
        shutil.copytree(corpus, out / "corpus")
    env = dict(os.environ, OMP_NUM_THREADS="1" if "2x1" in name else "2")
    done = subprocess.run(command(name, out, config, steps, tpb), cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed (rc {done.returncode}): {(done.stderr or done.stdout).strip()[-600:]}")
    if not corpus.is_dir():
        shutil.copytree(out / "corpus", corpus)
    meta = json.loads((out / "model" / "meta.json").read_text())
    t = meta["training"]
    return {"tok_s": t["tokens_per_second"], "tokens": t["tokens_seen"], "steps": t["steps"],
            "ppl": meta["heldout"]["perplexity"], "path": t["commands"][-1].get("path", {})}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(MODEL / "config.cfg"))
    ap.add_argument("--projection-dim", type=int, default=0, help="the biLM's projection (0 = the config's)")
    ap.add_argument("--init-from", default="", help="model directory every run starts from (default: the config's)")
    ap.add_argument("--lines", type=int, default=4000, help="lines read from each corpus file")
    ap.add_argument("--steps", type=int, default=160, help="steps of one process (2 ranks: half as many)")
    ap.add_argument("--tokens-per-batch", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    args = ap.parse_args()
    names = [n for n in args.conditions.split(",") if n]
    unknown = sorted(set(names) - set(CONDITIONS))
    if unknown:
        raise SystemExit(f"unknown condition(s) {unknown}: expected some of {', '.join(CONDITIONS)}")
    from spacy_elmo.pretrain.config import load_config

    init_from = args.init_from or str(load_config(Path(args.config))["training"].get("init_from") or MODEL)
    results = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        config = tmp / "bench.cfg"
        bench_config(Path(args.config), config, args.lines, init_from, args.projection_dim)
        for repeat in range(args.repeats):
            for name in names if repeat % 2 == 0 else names[::-1]:
                results[name].append(run_one(name, tmp, config, args.steps, args.tokens_per_batch, tmp / "corpus"))
    first = next(iter(results.values()))[0]["path"]
    print(f"CPU: {first.get('cpu', '?')}; {args.repeats} run(s) per condition, alternating; "
          f"config {args.config}, {args.tokens_per_batch} tokens per batch, {args.lines} lines per file")
    med = {n: statistics.median(r["tok_s"] for r in rs) for n, rs in results.items()}
    for n, rs in results.items():
        r = rs[0]
        runs = " / ".join(f"{x['tok_s']:,.0f}" for x in rs)
        print(f"{n:16} tokens/s {med[n]:>7,.0f} (runs {runs})  steps {r['steps']:>4}  tokens {r['tokens']:>8,}  "
              f"held-out ppl {r['ppl']:.2f}  ({r['path'].get('lstm_impl')}/{r['path'].get('precision')}/"
              f"{r['path'].get('cells', '')})")
    for base in ("native-1x2", "torch-1x2"):
        if base in med:
            print(f"ratios to {base}: " + ", ".join(f"{n} {med[n] / med[base]:.2f}x" for n in med if n != base))


if __name__ == "__main__":
    main()
