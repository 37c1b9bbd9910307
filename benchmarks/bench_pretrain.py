"""Pretraining throughput: today's trainer and the new one, side by side in one process.

Both runs are the real ``pretrain()`` command on the same corpus slice, at the shipped
en_elmo_small shape, warm-started from the same weights (default: the packaged model, so the loss
is that of a realistic continued run), for the same number of training tokens:

- ``torch``: ``lstm_impl = "torch"``: plain torch modules under autograd, float32, batches of 2,000
  tokens, learning rate 0.0015;
- ``fused``: ``lstm_impl = "fused"``, ``precision = "auto"``, ``compile = true`` (native kernels
  where they build: ``bilm/native.py``), batches of ``--tokens-per-batch`` with the learning
  rate scaled by sqrt(batch ratio); the path column names the LSTM path that ran
  (``spacy_elmo.bilm.lstm_paths``) and its cells (native, inductor or eager), and "native" where the
  char CNN and the loss ran natively;
- with ``--with-previous``, also ``fused-prev``: the same config without the native kernels (as
  ``SPACY_ELMO_NATIVE=0``: torch.compile'd cells, autocast softmax and char CNN), the trainer
  before them.

Prints, per run: steady-state tokens/s, by wall clock and by process CPU time (medians over
steps, first steps excluded: they include compiling; CPU time counts all threads), the mean
training loss (nats per prediction, both directions) over the last quarter of the tokens,
held-out perplexity after the same number of tokens, the achieved GFLOP/s (nominal FLOPs: 3x the
forward products of the LSTMs, the char CNN over each batch's distinct tokens and the softmax
head; by wall clock, and per CPU-second x threads), and the machine's GEMM ceiling measured in
the same process the same two ways (float32, and bfloat16 where the CPU has it). Then the
ratios. ``--repeats N`` runs the trainers N times, alternating (for a shared machine), and
reports the medians.

``--out PATH`` also writes the record (docs/results/speed_pretrain.json): one row per trainer,
threads and batch size (``run``), with tokens/s, tokens per CPU-second, their ratios to the
``torch`` run and the held-out perplexity; rows of other settings already in the record stay
when it was measured on this CPU (so the 1- and 2-thread runs fill one record).

Run with pretraining paused:  bash dev/ops/pause_pretraining.sh python benchmarks/bench_pretrain.py
"""
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spacy_elmo.bilm import lstm_train  # noqa: E402
from spacy_elmo.pretrain import lm as lm_mod, train as train_mod  # noqa: E402
from spacy_elmo.pretrain.hardware import cpu_bf16_capability  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

SHARED = shared_dir()
MODEL = ROOT / "spacy_elmo" / "models" / "en_elmo_small"


def gemm_ceiling(dtype: torch.dtype, n: int = 2048, reps: int = 5) -> tuple:
    """(GFLOP/s by wall clock, GFLOP per CPU-second x threads) of an n^3 product, best of reps: on
    a shared machine the second is the one to compare with the trainers' tokens per CPU-second."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    walls, cpus = [], []
    for _ in range(reps):
        wall, cpu = time.perf_counter(), time.process_time()
        a @ b
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    flop = 2 * n ** 3 / 1e9
    return flop / min(walls), flop / min(cpus) * torch.get_num_threads()


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


def shape_overrides(options: dict) -> dict:
    """The [model] values of a biLM's options.json (the shipped en_elmo_small: projection 256, 1,024
    cells, 2 layers, skip connections), so a run from scratch has the shipped shape too."""
    lstm = options["lstm"]
    return {"model.projection_dim": lstm["projection_dim"], "model.lstm_dim": lstm["dim"],
            "model.n_layers": lstm["n_layers"], "model.use_skip_connections": bool(lstm.get("use_skip_connections"))}


def run(name: str, out: Path, overrides: dict, n_tokens: int, native: bool = True) -> dict:
    """pretrain() for n_tokens, with each training step's wall and CPU time, tokens and loss
    captured from the training loop. native False: without the native kernels."""
    steps_seen, types, tokens = [], [], []
    original_step, original_batch = train_mod._Run.step, train_mod.make_batch

    def timed_step(self, batch_ids):
        wall, cpu = time.perf_counter(), time.process_time()
        n_tok, nll, seconds = original_step(self, batch_ids)
        steps_seen.append((time.perf_counter() - wall, time.process_time() - cpu, n_tok, nll))
        return n_tok, nll, seconds

    def counting_make_batch(*args, **kwargs):  # distinct types per batch, for the char CNN's FLOPs
        batch = original_batch(*args, **kwargs)
        types.append(batch["char_ids"].shape[0])
        tokens.append(int((batch["targets"] >= 0).sum()) - len(batch["targets"]))  # forward predictions
        return batch

    saved_native, saved_loss = dict(lstm_train._NATIVE), dict(lm_mod._LOSS_OPS)
    if not native:  # the LSTMs' recurrence, the char CNN and the loss without the native ops
        lstm_train._NATIVE["ops"] = lm_mod._LOSS_OPS["ops"] = None
    train_mod._Run.step, train_mod.make_batch = timed_step, counting_make_batch
    try:
        meta = train_mod.pretrain(str(out), None, dict(overrides, **{"training.max_tokens": n_tokens}), progress=False)
    finally:
        train_mod._Run.step, train_mod.make_batch = original_step, original_batch
        lstm_train._NATIVE.clear()
        lstm_train._NATIVE.update(saved_native)
        lm_mod._LOSS_OPS.clear()
        lm_mod._LOSS_OPS.update(saved_loss)
    steps = meta["training"]["steps"]
    timed = steps_seen[3:]  # the first steps compile (torch.compile) and warm the buffers
    tail = steps_seen[len(steps_seen) * 3 // 4:]
    return {
        "name": name,
        "steps": steps,
        "tokens": meta["training"]["tokens_seen"],
        "tokens_per_batch": int(overrides["training.tokens_per_batch"]),
        "tok_s": statistics.median(n / w for w, _, n, _ in timed) if timed else float("nan"),
        "tok_cpu_s": statistics.median(n / c for _, c, n, _ in timed) if timed else float("nan"),
        "train_loss": sum(nll for *_, nll in tail) / max(1, sum(2 * n for _, _, n, _ in tail)),
        "heldout_ppl": meta["heldout"]["perplexity"],
        "path": meta["training"]["commands"][-1]["path"],
        "types_per_token": sum(types[:steps]) / max(1, sum(tokens[:steps])),
    }


def _median_runs(runs: list) -> dict:
    """One result from repeated runs of a trainer: medians of the speeds (loss and perplexity are
    the same in every repeat up to float rounding; the first run's are kept)."""
    out = dict(runs[0])
    for key in ("tok_s", "tok_cpu_s"):
        out[key] = statistics.median(r[key] for r in runs)
    out["repeats"] = len(runs)
    return out


TRAINERS = {"torch": "torch modules under autograd, float32",
            "fused": "fused, native kernels (default)", "fused-prev": "fused, torch.compile'd cells"}


def path_name(p: dict) -> str:
    lstm = "/".join(x for x in (p.get("lstm_path"), p.get("cells")) if x) or "eager"
    return f"{p['lstm_impl']}/{p['precision']}/{lstm}" + ("/native" if p.get("native_ops") else "")


def record(results: list, args, argv) -> dict:
    """The record docs/results/speed_pretrain.json of one run's ``results`` (medians per trainer)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import result_record

    speed = {r["name"]: r for r in results}
    untimed = [r["name"] for r in results if math.isnan(r["tok_s"])]
    if untimed:
        raise SystemExit(f"--out: {', '.join(untimed)} ran too few steps to time (the first 3 are left out): "
                         "raise --tokens")
    rows = []
    for r in results:
        row = {"run": f"{r['name']}/{args.threads} threads/batch {r['tokens_per_batch']}",
               "trainer": TRAINERS[r["name"]], "path": path_name(r["path"]), "threads": args.threads,
               "tokens_per_batch": r["tokens_per_batch"], "tokens_s": round(r["tok_s"]),
               "tokens_cpu_s": round(r["tok_cpu_s"]), "heldout_ppl": round(r["heldout_ppl"], 2)}
        if "torch" in speed and r["name"] != "torch":
            row.update(ratio=round(r["tok_s"] / speed["torch"]["tok_s"], 2),
                       ratio_cpu=round(r["tok_cpu_s"] / speed["torch"]["tok_cpu_s"], 2))
        rows.append(row)
    return {"what": "The pretraining trainers side by side in one process on the same corpus slice, warm-started "
                    f"from the same model, alternating, medians of {args.repeats} run(s) each",
            "model": start_model(args.init_from),
            "machine": result_record.machine(threads=args.threads, bf16=cpu_bf16_capability() or "none"),
            "code_path": "; ".join(f"{TRAINERS[r['name']]}: {path_name(r['path'])}" for r in results),
            "command": result_record.command("benchmarks/bench_pretrain.py", argv),
            "after_tokens": args.tokens, "rows": rows}


def start_model(init_from: str) -> dict:
    """The record's model: the one the runs start from (random weights of the shipped shape for '')."""
    import result_record

    from spacy_elmo.bilm.integrity import sha256

    if not init_from:
        shape = result_record.options_shape(json.loads((MODEL / "options.json").read_text()))
        return result_record.random_model({"en_elmo_small's shape": shape})
    if Path(init_from).resolve() == MODEL.resolve():
        return result_record.shipped_model()
    return {"name": Path(init_from).name, "weights_sha256": sha256(str(Path(init_from) / "weights.hdf5"))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=300_000, help="training tokens per run")
    ap.add_argument("--tokens-per-batch", type=int, default=8000, help="batch size of the fused run")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lines", type=int, default=20_000, help="lines read from each corpus file")
    ap.add_argument("--init-from", default=str(MODEL), help="model directory both runs start from ('' = scratch)")
    ap.add_argument("--only", choices=["torch", "fused", "fused-prev"], help="run one trainer only")
    ap.add_argument("--with-previous", action="store_true",
                    help="also the fused trainer without the native kernels (the trainer before them)")
    ap.add_argument("--repeats", type=int, default=1, help="runs per trainer, alternating; medians reported")
    ap.add_argument("--out", help="also write the record here (docs/results/speed_pretrain.json)")
    args = ap.parse_args(argv)
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
        **shape_overrides(json.loads((MODEL / "options.json").read_text())),
    }
    fused = {"training.lstm_impl": "fused", "training.precision": "auto", "training.compile": True,
             "training.tokens_per_batch": args.tokens_per_batch,
             "training.learning_rate": 0.0015 * math.sqrt(args.tokens_per_batch / 2000)}
    runs = {
        "torch": ({"training.lstm_impl": "torch", "training.precision": "float32", "training.tokens_per_batch": 2000,
                   "training.learning_rate": 0.0015}, True),
        "fused": (fused, True),
    }
    if args.with_previous or args.only == "fused-prev":
        runs["fused-prev"] = (fused, False)
    names = [n for n in runs if not args.only or n == args.only]
    ceilings = {"float32": gemm_ceiling(torch.float32)}
    if cpu_bf16_capability():
        ceilings["bfloat16"] = gemm_ceiling(torch.bfloat16)
    by_name = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = None  # the first run's tokenised corpus (pretrain's cache), copied to the others
        for repeat in range(args.repeats):
            for name in names if repeat % 2 == 0 else names[::-1]:
                extra, native = runs[name]
                out = Path(tmp) / f"{name}-{repeat}"
                if corpus is not None:
                    shutil.copytree(corpus, out / "corpus")
                by_name[name].append(run(name, out, dict(base, **extra), args.tokens, native))
                corpus = corpus or out / "corpus"
    results = [_median_runs(by_name[n]) for n in names]
    options = json.loads((MODEL / "options.json").read_text())
    print(f"CPU: {results[0]['path']['cpu']}; torch {torch.__version__}; {args.threads} threads; "
          f"bf16 capability: {cpu_bf16_capability() or 'none'}; {args.repeats} run(s) per trainer")
    print("GEMM ceiling (2048^3), GFLOP/s by wall clock / per CPU-second x threads: "
          + ", ".join(f"{k} {wall:.0f} / {cpu:.0f}" for k, (wall, cpu) in ceilings.items()))
    print(f"{'trainer':10} {'path':32} {'batch':>6} {'steps':>6} {'tokens':>9} {'tok/s':>8} {'tok/cpu-s':>9} "
          f"{'GFLOP/s':>13} {'train loss':>10} {'held-out ppl':>12}")
    for r in results:
        fpt = flops_per_token(options, r["types_per_token"], vocab_head=2003)
        path = path_name(r["path"])
        print(f"{r['name']:10} {path:32} {r['tokens_per_batch']:>6} {r['steps']:>6} {r['tokens']:>9,} "
              f"{r['tok_s']:>8,.0f} {r['tok_cpu_s']:>9,.0f} "
              f"{r['tok_s'] * fpt / 1e9:>6.0f} / {r['tok_cpu_s'] * args.threads * fpt / 1e9:<4.0f} "
              f"{r['train_loss']:>10.4f} "
              f"{r['heldout_ppl']:>12.2f}   ({fpt / 1e6:.1f} MFLOP/token, {r['types_per_token']:.2f} types/token)")
    speed = {r["name"]: r for r in results}
    for name in ("fused", "fused-prev"):
        if name in speed and "torch" in speed:
            print(f"ratio {name} / torch: {speed[name]['tok_s'] / speed['torch']['tok_s']:.2f}x tokens/s, "
                  f"{speed[name]['tok_cpu_s'] / speed['torch']['tok_cpu_s']:.2f}x tokens per CPU-second")
    if "fused" in speed and "fused-prev" in speed:
        print(f"ratio fused / fused-prev: {speed['fused']['tok_s'] / speed['fused-prev']['tok_s']:.2f}x tokens/s, "
              f"{speed['fused']['tok_cpu_s'] / speed['fused-prev']['tok_cpu_s']:.2f}x tokens per CPU-second")
    if args.out:
        import result_record

        result_record.write(args.out, result_record.merge_rows(args.out, record(results, args, argv if argv is not None
                                                                            else sys.argv[1:]), key="run"))


if __name__ == "__main__":
    main()
