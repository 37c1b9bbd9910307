"""Pretraining throughput: today's trainer and the new one, side by side in one process.

Both runs are the real ``pretrain()`` command on the same corpus slice, at the shipped
en_elmo_small shape, warm-started from the same weights (default: the packaged model, so the loss
is that of a realistic continued run), for the same number of training tokens:

- ``torch``: the first release's trainer: ``torch.nn.LSTM(proj_size)``, float32, batches of 2,000
  tokens, learning rate 0.0015;
- ``fused``: ``lstm_impl = "fused"``, ``precision = "auto"``, torch.compile'd cells, batches of
  ``--tokens-per-batch`` with the learning rate scaled by sqrt(batch ratio).

Prints, per run: steady-state tokens/s (median over steps, first steps excluded: they include
torch.compile), the training loss over the last quarter of the tokens, held-out perplexity after
the same number of tokens, the achieved GFLOP/s (nominal FLOPs: 3x the forward products of the
LSTMs, the char CNN over each batch's distinct tokens and the softmax head), and the machine's GEMM
ceiling measured in the same process (float32, and bfloat16 where the CPU has it). Then the ratio.

Run with pretraining paused:  bash benchmarks/paused.sh python benchmarks/bench_pretrain.py
"""
import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spacy_elmo.pretrain import train as train_mod  # noqa: E402
from spacy_elmo.pretrain.hardware import cpu_bf16_capability  # noqa: E402
from spacy_elmo.shared_data import shared_dir  # noqa: E402

SHARED = shared_dir()
MODEL = ROOT / "spacy_elmo" / "models" / "en_elmo_small"


def gemm_ceiling(dtype: torch.dtype, n: int = 2048, reps: int = 5) -> float:
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n ** 3 / min(times) / 1e9


def flops_per_token(options: dict, batch_types_per_token: float, vocab_head: int) -> float:
    """Nominal training FLOPs per token (both directions): 3 x forward matrix products."""
    lstm, cnn = options["lstm"], options["char_cnn"]
    C, P, L = lstm["dim"], lstm["projection_dim"], lstm["n_layers"]
    per_dir_layer = 2 * (4 * C * P + 4 * C * P + C * P)
    lstm_f = 2 * L * per_dir_layer
    e = cnn["embedding"]["dim"]
    n_filters = sum(n for _, n in cnn["filters"])
    conv = sum(2 * w * e * n * (50 - w + 1) for w, n in cnn["filters"])
    highway = cnn["n_highway"] * 2 * n_filters * 2 * n_filters
    char_f = (conv + highway + 2 * n_filters * P) * batch_types_per_token
    softmax_f = 2 * 2 * P * vocab_head  # head only (tails are a small share), both directions
    return 3 * (lstm_f + char_f + softmax_f)


def run(name: str, out: Path, overrides: dict, n_tokens: int) -> dict:
    """pretrain() for n_tokens, with per-step times captured from the training loop."""
    step_times, types, tokens = [], [], []
    original = train_mod.make_batch

    def timed_make_batch(*args, **kwargs):  # marks step boundaries: one make_batch per training step
        step_times.append(time.perf_counter())
        batch = original(*args, **kwargs)
        types.append(batch["char_ids"].shape[0])
        tokens.append(int((batch["fwd_targets"] >= 0).sum()))
        return batch

    train_mod.make_batch = timed_make_batch
    try:
        meta = train_mod.pretrain(str(out), None, dict(overrides, **{"training.max_tokens": n_tokens}), progress=False)
    finally:
        train_mod.make_batch = original
    tpb = int(overrides["training.tokens_per_batch"])
    steps = meta["training"]["steps"]
    # make_batch is also called by the final evaluation: keep the training-step marks only
    marks = step_times[: steps + 1]
    durations = [b - a for a, b in zip(marks, marks[1:])][3:]
    tokens_per_step = meta["training"]["tokens_seen"] / steps
    return {
        "name": name,
        "steps": steps,
        "tokens": meta["training"]["tokens_seen"],
        "tokens_per_batch": tpb,
        "tok_s": tokens_per_step / statistics.median(durations) if durations else float("nan"),
        "heldout_ppl": meta["heldout"]["perplexity"],
        "path": meta["training"]["commands"][-1]["path"],
        "types_per_token": sum(types[:steps]) / max(1, sum(tokens[:steps])),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=300_000, help="training tokens per run")
    ap.add_argument("--tokens-per-batch", type=int, default=8000, help="batch size of the fused run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lines", type=int, default=20_000, help="lines read from each corpus file")
    ap.add_argument("--init-from", default=str(MODEL), help="model directory both runs start from ('' = scratch)")
    ap.add_argument("--only", choices=["torch", "fused"], help="run one trainer only")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    base = {
        "corpus.paths": [str(p) for p in sorted((SHARED / "data" / "lm").glob("*.txt.gz"))],
        "corpus.max_lines_per_file": args.lines,
        "training.threads": args.threads,
        "training.eval_every_steps": 0,
        "training.checkpoint_minutes": 1_000_000,
        "training.warmup_steps": 0,
        "training.final_lr_fraction": 1.0,
        "training.init_from": args.init_from or None,
        "model.dropout": 0.0,
    }
    runs = {
        "torch": {"training.lstm_impl": "torch", "training.precision": "float32", "training.tokens_per_batch": 2000,
                  "training.learning_rate": 0.0015},
        "fused": {"training.lstm_impl": "fused", "training.precision": "auto", "training.compile": True,
                  "training.tokens_per_batch": args.tokens_per_batch,
                  "training.learning_rate": 0.0015 * math.sqrt(args.tokens_per_batch / 2000)},
    }
    ceilings = {"float32": gemm_ceiling(torch.float32)}
    if cpu_bf16_capability():
        ceilings["bfloat16"] = gemm_ceiling(torch.bfloat16)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in runs.items():
            if not args.only or name == args.only:
                results.append(run(name, Path(tmp) / name, dict(base, **extra), args.tokens))
    options = json.loads((MODEL / "options.json").read_text())
    print(f"CPU: {results[0]['path']['cpu']}; torch {torch.__version__}; {args.threads} threads; "
          f"bf16 capability: {cpu_bf16_capability() or 'none'}")
    print("GEMM ceiling (2048^3): " + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in ceilings.items()))
    print(f"{'trainer':8} {'path':38} {'batch':>6} {'steps':>6} {'tokens':>9} {'tok/s':>8} {'GFLOP/s':>8} "
          f"{'held-out ppl':>12}")
    for r in results:
        fpt = flops_per_token(options, r["types_per_token"], vocab_head=2003)
        p = r["path"]
        path = f"{p['lstm_impl']}/{p['precision']}/{'compiled' if p['compiled_cells'] else 'eager'}"
        print(f"{r['name']:8} {path:38} {r['tokens_per_batch']:>6} {r['steps']:>6} {r['tokens']:>9,} "
              f"{r['tok_s']:>8,.0f} {r['tok_s'] * fpt / 1e9:>8.0f} {r['heldout_ppl']:>12.2f}"
              f"   ({fpt / 1e6:.1f} MFLOP/token, {r['types_per_token']:.2f} distinct types/token)")
    if len(results) == 2:
        print(f"ratio fused / torch tokens/s: {results[1]['tok_s'] / results[0]['tok_s']:.2f}x")


if __name__ == "__main__":
    main()
