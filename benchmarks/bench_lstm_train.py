"""Training speed of the biLM's LSTM: the training path of ``spacy_elmo.bilm.lstm_train`` on packed
batches against the same path on the batch padded to its longest row, forward + backward, in one
process.

- ``packed``: ``ElmoLstm.forward`` under autograd on packed batches (2, N, P) (rows sorted by
  length, the active batch shrinking), skip connections inside ``ElmoLstm``; optionally with cell
  and projection clipping (``--clip``);
- ``padded``: the same on the batch padded to its longest row (what unpacking to padded batches,
  running and repacking would cost, the copies not counted).

Both use the same recurrence (``--cells``: native C++ ops, torch.compile'd or eager cells) and the
same product dtype (float32 and bfloat16 where the CPU has it), at the shipped en_elmo_small shape
(options.json: LSTM dim, projection, layers) and the pretraining's batches: ``--batch`` sentences
(default 64) of ``--min-len`` .. ``--max-len`` tokens (default 28 .. 32: length-sorted batches of
~2,000 tokens as ``tokens_per_batch = 2000`` makes them; ``--min-len 1 --max-len 40`` for ragged
ones). Each timing is the mean of ``--iters`` forward + backward passes after one warm-up pass,
by wall clock and by process CPU time (with one thread, the CPU time is the less disturbed by
other jobs on a shared machine); ``--repeats`` timings per batch layout, alternating; the medians
are reported, with the ratio padded / packed (> 1: packing is faster). The trainer as a whole:
``benchmarks/bench_pretrain.py``.

Run:  python benchmarks/bench_lstm_train.py --threads 1
"""
import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spacy_elmo.bilm import lstm_train  # noqa: E402
from spacy_elmo.bilm.lstm import ElmoLstm  # noqa: E402
from spacy_elmo.bilm.packing import pack  # noqa: E402
from spacy_elmo.pretrain.hardware import cpu_bf16_capability  # noqa: E402

MODEL = ROOT / "spacy_elmo" / "models" / "en_elmo_small"


def new_step(lstm, x, packing):
    x = x.clone().requires_grad_(True)
    out, _ = lstm(x, packing)
    out.sum().backward()


def timed(fn, iters: int) -> tuple:
    """(wall seconds, process CPU seconds) per call, mean of ``iters`` calls after one warm-up call."""
    fn()  # warm-up (buffers, compiled variants)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - wall) / iters, (time.process_time() - cpu) / iters


def setup(options: dict, dtype: torch.dtype, cells: str, lengths, clip: bool):
    o = options["lstm"]
    C, P, L, skip = o["dim"], o["projection_dim"], o["n_layers"], o.get("use_skip_connections", False)
    lstm = ElmoLstm(C, P, L, 3.0 if clip else None, 3.0 if clip else None, skip)
    lstm.requires_grad_(True)
    lstm.train_recurrence, lstm.train_gemm_dtype = cells, dtype
    B, T = len(lengths), max(lengths)
    packing, padded = pack(lengths), pack([T] * B)
    x, x_pad = torch.randn(2, packing.n_packed, P), torch.randn(2, padded.n_packed, P)
    steps = {"packed": lambda: new_step(lstm, x, packing), "padded": lambda: new_step(lstm, x_pad, padded)}
    return steps, lstm, x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--min-len", type=int, default=28)
    ap.add_argument("--max-len", type=int, default=32)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", choices=["native", "compiled", "eager"], default="native")
    ap.add_argument("--clip", action="store_true", help="with cell and projection clipping at 3")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    options = json.loads((MODEL / "options.json").read_text())
    lengths = numpy.random.default_rng(0).integers(args.min_len, args.max_len + 1, args.batch).tolist()
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    if not cpu_bf16_capability():
        dtypes = [d for d in dtypes if d != torch.bfloat16]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"CPU: {cpu}; torch {torch.__version__}; {args.threads} thread(s); shape {options['lstm']}; "
          f"batch {args.batch} rows, lengths {args.min_len}..{args.max_len} ({sum(lengths)} tokens, padded "
          f"{len(lengths) * max(lengths)}); {args.iters} passes per timing, median of {args.repeats}")
    print(f"{'dtype':9} {'cells':9} {'clock':5} {'packed ms':>9} {'padded ms':>9} {'padded/packed':>13}  path")
    for dtype in dtypes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            steps, lstm, x = setup(options, dtype, args.cells, lengths, args.clip)
            path = type(lstm_train.train_path(lstm, x, True)).__name__
            names = list(steps)
            times = {name: [] for name in names}
            for r in range(args.repeats):
                for name in (names if r % 2 == 0 else names[::-1]):
                    times[name].append(timed(steps[name], args.iters))
        kind = lstm_train.cells_kind(lstm_train.resolve(args.cells, dtype))
        for i, clock in enumerate(("wall", "cpu")):
            ms = {name: statistics.median(t[i] for t in times[name]) * 1e3 for name in names}
            print(f"{str(dtype).split('.')[1]:9} {kind:9} {clock:5} {ms['packed']:9.1f} {ms['padded']:9.1f} "
                  f"{ms['padded'] / ms['packed']:13.2f}  {path}{' clip' if args.clip else ''}")


if __name__ == "__main__":
    main()
