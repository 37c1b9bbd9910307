"""float32 against bfloat16 inference (``BiLM(precision=...)``) in ONE process, alternately.

usage: python benchmarks/bench_precision.py {original|small|MODEL_DIR} [--variants float32,bfloat16]
           [--runs 5] [--threads 1] [--batch-size 32] [--sentences 200] [--models DIR] [--std 0.05]
           [--conllu PATH]

Workload: bench_bilm.py's (first 200 EWT dev sentences, 4,007 words, batches of 32, the seeded
random models in ~/.cache/elmo-anchor, written on first use). Each variant is its own BiLM (its
own packed weights); after one warm-up pass each, the variants run in turn, ``--runs`` rounds,
so that a change in the machine's load hits all of them alike; the median of each is reported.
Variants: ``float32`` (the exact path), ``bfloat16`` (oneDNN bfloat16 products, see
spacy_elmo/bilm/precision.py), ``int8`` (oneDNN int8 LSTM products, spacy_elmo/bilm/int8.py; the
full float32 / bfloat16 / int8 table with a record file is bench_int8.py), ``bfloat16-autocast``
(the same setting with oneDNN turned off:
autocast for the char CNN and ``bmm`` on bfloat16 copies in the LSTMs, the path CUDA uses).

Timing: wall time and this process's CPU time (``time.process_time``) per run. On a core shared
with other jobs the CPU time is the steadier measure (the wall time includes the others' turns);
the CPU-time ratio of each round (float32 and bfloat16 back to back, under the same load) is
reported too. Also measured in the same process, alternately, by CPU time: the GEMM ceilings
(2048^3 ``torch.mm``, float32 and bfloat16) and the oneDNN packed-weight rate at the LSTM's
per-step shape (batch x P @ P x 4C), both dtypes. Prints a readable summary, then one JSON line:
tok/s per variant (wall and CPU), ratios to the first, nominal GFLOP per CPU second
(bench_bilm.py's count) and its fraction of the ceiling of the variant's dtype, the largest
|difference| and the smallest per-token cosine of each variant's layers against the first's
(random weights: not a quality measure, and the original-size random model is chaotic, see
benchmarks/README.md "Outputs"; dev/precision_check.py measures the trained model).
``--out PATH`` (float32 and bfloat16 variants) also writes this model's row of the record
docs/results/speed_precision.json, keeping the other model's row when it was measured on this CPU.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_bilm  # noqa: E402


def _rate(fn, flops, seconds):
    """Median GFLOP/s of ``fn`` over ``seconds`` of calls, by this process's CPU time (on a core
    shared with other jobs, wall time measures their load as much as ours)."""
    for _ in range(2):
        fn()
    rates, t_end = [], time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(rates) < 3:
        t0 = time.process_time()
        fn()
        rates.append(flops / max(time.process_time() - t0, 1e-9) / 1e9)
    return statistics.median(rates)


def ceilings(options, batch, rounds=3, seconds=0.5):
    """GFLOP/s medians: 2048^3 torch.mm and the packed oneDNN per-step product, per dtype,
    measured alternately (``rounds`` rounds of ``seconds`` each)."""
    import torch

    from spacy_elmo.bilm import onednn

    P, C4 = options["lstm"]["projection_dim"], 4 * options["lstm"]["dim"]
    gen = torch.Generator().manual_seed(0)
    cube = [torch.randn(2048, 2048, generator=gen) for _ in range(2)]
    x, w = torch.randn(batch, P, generator=gen), torch.randn(P, C4, generator=gen) * 0.05
    cases = {}
    for dt, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        a, b = (t.to(dt) for t in cube)
        out = torch.empty(2048, 2048, dtype=dt)
        cases[f"mm_2048_{name}"] = (lambda a=a, b=b, out=out: torch.mm(a, b, out=out), 2 * 2048 ** 3)
        if onednn.available(torch.device("cpu"), torch.float32):
            packed, xd = onednn.pack(w, batch, dtype=dt), x.to(dt)
            cases[f"onednn_step_{batch}x{P}x{C4}_{name}"] = (
                lambda xd=xd, packed=packed: onednn.linear(xd, packed, exact=batch), 2 * batch * P * C4)
    got = {k: [] for k in cases}
    for _ in range(rounds):
        for k, (fn, flops) in cases.items():
            got[k].append(_rate(fn, flops, seconds))
    return {k: round(statistics.median(v), 1) for k, v in got.items()}


def cosines(ref, other):
    """(largest |difference|, smallest per-token cosine) over all layers and sentences."""
    import numpy as np

    worst_abs, worst_cos = 0.0, 1.0
    for r, o in zip(ref, other):
        if r.shape[1] == 0:
            continue
        worst_abs = max(worst_abs, float(np.abs(r - o).max()))
        nr, no = np.linalg.norm(r, axis=-1), np.linalg.norm(o, axis=-1)
        ok = (nr > 0) & (no > 0)
        if ok.any():
            worst_cos = min(worst_cos, float(((r * o).sum(-1)[ok] / (nr * no)[ok]).min()))
    return worst_abs, worst_cos


def record(res: dict, size: str, argv) -> dict:
    """The record docs/results/speed_precision.json with the row of one run's ``res`` (main's
    JSON line, variants float32 then bfloat16) for the preset ``size``."""
    import result_record

    f32, bf16 = res["variants"]["float32"], res["variants"]["bfloat16"]
    rounds = bf16["cpu_ratio_per_round"]
    gemm = res["gemm_gflops"]
    step = next(k for k in gemm if k.startswith("onednn_step_") and k.endswith("_float32"))[:-len("_float32")]
    options = bench_bilm.preset(size)
    lstm = options["lstm"]
    row = {"model": f"{size} ({lstm['dim']}/{lstm['projection_dim']})",
           "float32_tok_cpu_s": f32["tokens_per_cpu_s"], "bfloat16_tok_cpu_s": bf16["tokens_per_cpu_s"],
           "ratio": round(bf16["cpu_ratio_vs_ref"], 2), "ratio_rounds": f"{min(rounds):.2f}-{max(rounds):.2f}",
           "gemm_ratio_lstm_step": round(gemm[f"{step}_bfloat16"] / gemm[f"{step}_float32"], 2),
           "gemm_ratio_2048": round(gemm["mm_2048_bfloat16"] / gemm["mm_2048_float32"], 2)}
    return {"what": "BiLM float32 against bfloat16 on the same random-weight models, alternating in one process, "
                    f"{res['runs']} rounds after a warm-up each, medians; rates by the process's CPU time",
            "model": result_record.random_model({size: result_record.options_shape(options)}, std=0.05,
                                          made_by="benchmarks/bench_bilm.py (seeded, as make_weights.py)"),
            "machine": result_record.machine(threads=res["threads"], bf16=res["bf16_capability"]),
            "code_path": "float32: OneDnnPath (bilm/lstm_paths.py) and the oneDNN char CNN; bfloat16: OneDnnBf16Path "
                         "(bilm/lstm_paths.py: oneDNN products on weights packed once as bfloat16, float32 "
                         "accumulation, float32 gate non-linearities and cell state) and char_cnn.py "
                         "_encode_onednn_bf16",
            "command": result_record.command("benchmarks/bench_precision.py", argv),
            "workload": f"the first {res['sentences']} UD EWT dev sentences, {res['tokens']:,} words, batches of "
                        f"{res['batch_size']}", "rows": [row]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="original | small | a directory with options.json + weights.hdf5")
    ap.add_argument("--variants", default="float32,bfloat16",
                    help="comma-separated: float32, bfloat16, bfloat16-autocast, int8 (first = reference)")
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--std", type=float, default=0.05, help="weight std of the random models (bench_bilm.py --std)")
    ap.add_argument("--conllu", default=os.path.join(bench_bilm.SHARED, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu"))
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="also write this model's row of the record here (docs/results/speed_precision.json)")
    a = ap.parse_args(argv)
    if a.out and (a.model not in ("original", "small") or a.variants.replace(" ", "") != "float32,bfloat16"):
        ap.error("--out records the presets original / small with --variants float32,bfloat16")

    import torch

    from spacy_elmo.bilm import BiLM, onednn
    from spacy_elmo.bilm.precision import cpu_bf16_capability, cpu_name

    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ("float32", "bfloat16", "bfloat16-autocast", "int8"):
            ap.error(f"unknown variant {v!r}")
    torch.set_num_threads(a.threads)
    mdir = bench_bilm.model_dir(a.model, a.models, a.std)
    sents = bench_bilm.read_workload(a.conllu, a.sentences)
    ntok = sum(len(s) for s in sents)
    files = os.path.join(mdir, "options.json"), os.path.join(mdir, "weights.hdf5")
    models = {v: BiLM.from_files(*files, precision=v.split("-")[0]) for v in variants}

    def run(v):
        before = onednn.set_enabled(not v.endswith("-autocast"))
        try:
            return models[v].embed_sentences(sents, batch_size=a.batch_size)
        finally:
            onednn.set_enabled(before)

    outputs = {v: run(v) for v in variants}  # warm-up (packs the weights), kept for the comparison
    effective = {v: models[v].effective_precision for v in variants}
    times = {v: [] for v in variants}
    cpu_times = {v: [] for v in variants}
    for _ in range(a.runs):
        for v in variants:
            t0, c0 = time.perf_counter(), time.process_time()
            run(v)
            times[v].append(time.perf_counter() - t0)
            cpu_times[v].append(time.process_time() - c0)
    ceil = ceilings(models[variants[0]].options, a.batch_size)
    conv, dense, lstm = bench_bilm.flops_per_token(models[variants[0]].options)
    ref = variants[0]
    res = dict(model=os.path.abspath(mdir), cpu=cpu_name(), bf16_capability=cpu_bf16_capability() or "none",
               torch=torch.__version__, threads=torch.get_num_threads(), sentences=len(sents), tokens=ntok,
               batch_size=a.batch_size, runs=a.runs, gemm_gflops=ceil, variants={})
    for v in variants:
        med = statistics.median(times[v]) if times[v] else float("nan")
        cpu_med = statistics.median(cpu_times[v]) if cpu_times[v] else float("nan")
        tps, cpu_tps = ntok / med, ntok / cpu_med
        nominal = cpu_tps * (conv + dense + lstm) / 1e9
        dt = "bfloat16" if effective[v] == "bfloat16" else "float32"
        cmax = ceil.get(f"mm_2048_{dt}", float("nan"))
        diff, cos = cosines(outputs[ref], outputs[v])
        res["variants"][v] = dict(effective=effective[v], tokens_per_s=round(tps, 1), median_s=round(med, 3),
                                  per_run_s=[round(t, 3) for t in times[v]],
                                  tokens_per_cpu_s=round(cpu_tps, 1), median_cpu_s=round(cpu_med, 3),
                                  per_run_cpu_s=[round(t, 3) for t in cpu_times[v]],
                                  nominal_gflops_per_cpu_s=round(nominal, 1),
                                  nominal_fraction_of_ceiling=round(nominal / cmax, 3),
                                  max_abs_diff_vs_ref=diff, min_token_cosine_vs_ref=round(cos, 6))
    base, cpu_base = res["variants"][ref]["tokens_per_s"], res["variants"][ref]["tokens_per_cpu_s"]
    for v in variants:
        res["variants"][v]["ratio_vs_ref"] = round(res["variants"][v]["tokens_per_s"] / base, 3)
        res["variants"][v]["cpu_ratio_vs_ref"] = round(res["variants"][v]["tokens_per_cpu_s"] / cpu_base, 3)
        pair = [r / o for r, o in zip(cpu_times[ref], cpu_times[v])]  # per round: same load for both
        res["variants"][v]["cpu_ratio_per_round"] = [round(x, 3) for x in pair]
    print(f"{res['cpu']} (bf16: {res['bf16_capability']}), torch {res['torch']}, {res['threads']} thread(s); "
          f"{ntok} tokens, batch {a.batch_size}, median of {a.runs} alternating runs")
    print("GEMM GFLOP/s per CPU second: " + ", ".join(f"{k} {v}" for k, v in ceil.items()))
    for v in variants:
        r = res["variants"][v]
        print(f"{v:18s} ({r['effective']:8s}) {r['tokens_per_cpu_s']:8.1f} tok/CPU-s x{r['cpu_ratio_vs_ref']:.2f} "
              f"(wall {r['tokens_per_s']:.1f} tok/s x{r['ratio_vs_ref']:.2f})  "
              f"{r['nominal_gflops_per_cpu_s']:6.1f} GFLOP/CPU-s "
              f"({r['nominal_fraction_of_ceiling']:.2f} of its 2048^3 ceiling)  "
              f"max|diff| {r['max_abs_diff_vs_ref']:.3g}  min cos {r['min_token_cosine_vs_ref']:.6f}")
        if v != ref:
            print(f"{'':18s} CPU-time ratio per round: {r['cpu_ratio_per_round']}")
    print(json.dumps(res))
    if a.out:
        import result_record

        new = record(res, a.model, argv if argv is not None else sys.argv[1:])
        result_record.write(a.out, result_record.merge_rows(a.out, new))


if __name__ == "__main__":
    sys.exit(main())
