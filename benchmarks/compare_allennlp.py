"""Run AllenNLP's ``_ElmoBiLm`` (../shared/bench/allennlp-anchor) and our ``BiLM`` side by side on
the same random-weight models and workload; report tokens/s of both, the ratio, and whether the
outputs agree (the anchor's compare_dumps.py: allclose atol 2e-6, rtol 1e-5, every layer).

usage (pause the background pretraining job while timing; pause_pretraining.sh always resumes it):
    bash /work/shared/bench/allennlp-anchor/setup.sh ~/.cache/elmo-anchor/venv    # once, ~1 min
    bash dev/ops/pause_pretraining.sh python benchmarks/compare_allennlp.py [original small] [--runs 2]

Both sides: 2 threads, default glibc malloc (no MALLOC_* variables), stateless, first 200 EWT dev
sentences in batches of 32, one warm-up pass then the median of --runs passes. Each side runs in
its own process, AllenNLP first, then ours, size by size. Prints one line per size and a final
JSON line. Exit status 1 if outputs differ. ``--out PATH`` (with ``--runs`` > 0) also writes the
record docs/results/speed_allennlp.json: per size, both sides' tokens/s and peak RSS, the ratio
and the largest difference of the outputs; the GEMM ceiling measured in the same run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_bilm  # noqa: E402

ANCHOR = os.path.join(bench_bilm.SHARED, "bench", "allennlp-anchor")
TARGET = {"original": 3.0, "small": 6.0}


def run_json(cmd, env):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


def record(summary: dict, argv) -> dict:
    """The record docs/results/speed_allennlp.json of one timed run's ``summary`` (main's JSON line)."""
    import result_record

    shapes, rows = {}, []
    for size, e in summary["sizes"].items():
        options = bench_bilm.preset(size)
        shapes[size] = result_record.options_shape(options)
        lstm = options["lstm"]
        rows.append({"model": f"{size} (LSTM {lstm['dim']}/{lstm['projection_dim']}, "
                              f"{sum(n for _, n in options['char_cnn']['filters'])} char filters)",
                     "allennlp_tok_s": round(e["allennlp_tokens_per_s"], 1),
                     "spacy_elmo_tok_s": round(e["ours_tokens_per_s"], 1), "ratio": round(e["ratio"], 1),
                     "peak_rss_mib": {"allennlp": round(e["allennlp_peak_rss_mib"]),
                                      "spacy_elmo": round(e["ours_peak_rss_mib"])},
                     "max_abs_diff": e["max_abs_diff"], "outputs_allclose": e["outputs_allclose"]})
    return {"what": "Inference speed and peak memory of AllenNLP 2.10.1's _ElmoBiLm and spacy-elmo's BiLM on the "
                    "same random-weight models and workload, one process per side, AllenNLP first, size by size",
            "model": result_record.random_model(shapes, std=summary["std"],
                                          made_by="benchmarks/bench_bilm.py (seeded, as make_weights.py)"),
            "machine": result_record.machine(threads=2),
            "code_path": "spacy-elmo: BiLM.embed_sentences, float32; char CNN once per distinct token as im2col "
                         "GEMMs on pre-packed oneDNN weights (bilm/char_cnn.py); LSTM OneDnnPath "
                         "(bilm/lstm_paths.py). AllenNLP: _ElmoBiLm in eager float32 torch",
            "command": result_record.command("benchmarks/compare_allennlp.py", argv),
            "workload": "the first 200 UD EWT dev sentences, 4,007 words, batches of 32",
            "gemm_2048_gflops": summary["gemm_ceiling_gflops"], "runs": summary["runs"], "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="*", default=["original", "small"])
    ap.add_argument("--runs", type=int, default=2, help="timed passes per side; 0: compare outputs only")
    ap.add_argument("--std", type=float, default=0.05,
                    help="weight std of the random models; 0.02 makes the original size non-chaotic "
                         "(see check_float64.py)")
    ap.add_argument("--venv", default=os.path.expanduser("~/.cache/elmo-anchor/venv"))
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--out-dir", default=None, help="where the dumps go (default: a temporary folder)")
    ap.add_argument("--out", help="also write the record here (docs/results/speed_allennlp.json)")
    a = ap.parse_args(argv)
    if a.out and (not a.runs or set(a.sizes) - {"original", "small"}):
        ap.error("--out records timed runs (--runs > 0) of the sizes original and small")
    anchor_py = os.path.join(a.venv, "bin", "python")
    if not os.path.isfile(anchor_py):
        sys.exit(f"no AllenNLP venv at {a.venv}: bash {ANCHOR}/setup.sh {a.venv}")
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="elmo-compare-")
    os.makedirs(out_dir, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONWARNINGS"] = "ignore"
    ceiling = bench_bilm.gemm_ceiling() if a.runs else 0.0
    summary = dict(gemm_ceiling_gflops=round(ceiling, 1), runs=a.runs, std=a.std, malloc_env={}, sizes={})
    ok = True
    for size in a.sizes:
        mdir = bench_bilm.model_dir(size, a.models, a.std)
        ref_npz, our_npz = os.path.join(out_dir, f"allennlp-{size}.npz"), os.path.join(out_dir, f"ours-{size}.npz")
        theirs = run_json([anchor_py, os.path.join(ANCHOR, "bench_anchor.py"), mdir, "--runs", str(a.runs),
                           "--dump", ref_npz], env)
        ours = run_json([sys.executable, os.path.join(HERE, "bench_bilm.py"), mdir, "--runs", str(a.runs),
                         "--dump", our_npz] + (["--ceiling-gflops", str(ceiling)] if a.runs else []), env)
        cmp = subprocess.run([sys.executable, os.path.join(ANCHOR, "compare_dumps.py"), ref_npz, our_npz],
                             capture_output=True, text=True)
        import numpy as np

        r, o = np.load(ref_npz), np.load(our_npz)
        diff = max(float(np.abs(r[k].astype(np.float64) - o[k]).max()) for k in r.files
                   if k.startswith("sent_") and r[k].size)
        same = cmp.returncode == 0
        ok &= same
        entry = dict(model=mdir, max_abs_diff=diff, outputs_allclose=same)
        if a.runs:
            ratio = ours["tokens_per_s"] / theirs["tokens_per_s"]
            entry.update(
                allennlp_tokens_per_s=theirs["tokens_per_s"], ours_tokens_per_s=ours["tokens_per_s"],
                ratio=round(ratio, 2), target_ratio=TARGET.get(size), allennlp_peak_rss_mib=theirs["peak_rss_mib"],
                ours_peak_rss_mib=ours["peak_rss_mib"],
                ours_nominal_fraction_of_ceiling=ours["nominal_fraction_of_ceiling"],
                ours_executed_fraction_of_ceiling=ours["executed_fraction_of_ceiling"],
                allennlp_steal_pct=[p.get("steal_pct") for p in theirs["full"]["per_run"]])
            print(f"{size:9s} AllenNLP {theirs['tokens_per_s']:8.1f} tok/s   ours {ours['tokens_per_s']:8.1f} tok/s   "
                  f"ratio {ratio:5.2f}x (target {TARGET.get(size, '-')}x)   max|diff| {diff:.2g}   "
                  f"compare_dumps {'OK' if same else 'FAILED'}")
        else:
            print(f"{size:9s} max|diff| {diff:.2g}   compare_dumps {'OK' if same else 'FAILED'}")
        summary["sizes"][size] = entry
        print("   " + cmp.stdout.strip().replace("\n", "\n   "))
    print(json.dumps(summary))
    if a.out:
        import result_record

        result_record.write(a.out, record(summary, argv if argv is not None else sys.argv[1:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
