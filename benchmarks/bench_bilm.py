"""Speed of ``BiLM.embed_sentences`` on the AllenNLP-anchor workload; prints ONE JSON line.

usage: python benchmarks/bench_bilm.py {original|small|MODEL_DIR} [--models DIR] [--std 0.05] [--runs 3]
           [--threads 2] [--batch-size 32] [--sentences 200] [--conllu PATH] [--dump OUT.npz]
           [--ceiling-gflops X] [--precision float32|bfloat16]

original / small: seeded random-weight models (seed 0, std 0.05), written on first use to
``--models``/{original,small} (default ~/.cache/elmo-anchor) with exactly the datasets, order and
random stream of ../shared/bench/allennlp-anchor/make_weights.py, so AllenNLP's bench_anchor.py can
run on the same files. Workload: the first 200 sentences (4,007 words) of
../shared/data/ud_en_ewt/en_ewt-ud-dev.conllu, batches of 32, 2 threads, one warm-up pass, median
of --runs passes, stateless. The timed call is the public ``bilm.embed_sentences(sents, 32)``
(char ids included: bench_anchor.py leaves them out of its timing).

Reported: tokens_per_s; peak_rss_mib; nominal_gflops_per_s = tok/s x FLOPs/token as
bench/allennlp-anchor/flops.py counts them (char CNN over all 50 positions of every token) and
its fraction of the GEMM ceiling (2048^3 float32 matmul, measured here unless --ceiling-gflops);
executed_gflops_per_s: FLOPs this implementation really does (distinct tokens, truncated char
positions, <S>/</S> steps) per second.
--dump OUT.npz writes the outputs in bench_anchor.py's --dump format (compare_dumps.py);
--runs 0 skips the timing (outputs only).
Timing is meaningless while other CPU-heavy jobs run: see dev/ops/pause_pretraining.sh.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = str(shared_dir())
FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


def preset(name):
    dim, proj, n_highway = {"original": (4096, 512, 2), "small": (1024, 128, 1)}[name]
    return {
        "lstm": {"cell_clip": 3, "use_skip_connections": True, "n_layers": 2,
                 "proj_clip": 3, "projection_dim": proj, "dim": dim},
        "char_cnn": {"embedding": {"dim": 16}, "filters": FILTERS,
                     "n_highway": n_highway, "n_characters": 262,
                     "max_characters_per_token": 50, "activation": "relu"},
    }


def write_random_model(outdir, options, seed=0, std=0.05):
    """Same files as make_weights.py: N(0, std^2) float32 drawn in layout order from default_rng(seed)."""
    import h5py
    import numpy as np

    from spacy_elmo.bilm.weights import layout

    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(seed)
    with open(os.path.join(outdir, "options.json"), "w") as f:
        json.dump(options, f, indent=2)
    with h5py.File(os.path.join(outdir, "weights.hdf5"), "w") as f:
        for name, shape in layout(options).items():
            f.create_dataset(name, data=(rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32))


def model_dir(arg, models, std=0.05):
    """original / small: the seeded random model in models/<size> (std 0.05, make_weights.py's
    default) or models/<size>-std<std>, written if missing; anything else: a model directory."""
    if arg in ("original", "small"):
        d = os.path.join(models, arg if std == 0.05 else f"{arg}-std{std:g}")
        if not os.path.isfile(os.path.join(d, "weights.hdf5")):
            write_random_model(d, preset(arg), std=std)
        return d
    return arg


def read_workload(path, n):
    """First n sentences of a CoNLL-U file, syntactic words only (as allennlp-anchor/workload.py)."""
    from spacy_elmo.probe.ewt import read_words

    return read_words(path, n)


def flops_per_token(options):
    """bench/allennlp-anchor/flops.py's count: (char part per token over 50 chars, LSTM part per step)."""
    c, l = options["char_cnn"], options["lstm"]
    d, nf = c["embedding"]["dim"], sum(n for _, n in c["filters"])
    P, H = l["projection_dim"], l["dim"]
    conv = sum(2 * (50 - w + 1) * w * d * n for w, n in c["filters"])
    dense = c["n_highway"] * 2 * nf * 2 * nf + 2 * nf * P
    lstm = 2 * l["n_layers"] * (2 * P * 4 * H * 2 + 2 * H * P)
    return conv, dense, lstm


def executed_flops(options, sentences):
    """FLOPs embed_sentences performs: each distinct token (+ <S>, </S>) once, length-sorted chunks
    of CharCNN.CHUNK tokens, a filter of width w over the chunk's longest + w positions; the LSTMs
    over every word plus the two boundary steps of each sentence."""
    import torch

    from spacy_elmo.bilm.char_cnn import CHUNK
    from spacy_elmo.bilm.chars import char_lengths, tokens_to_char_array

    c = options["char_cnn"]
    d = c["embedding"]["dim"]
    vocab = list(dict.fromkeys(t for s in sentences for t in s))
    lengths = sorted(char_lengths(torch.from_numpy(tokens_to_char_array(vocab))).tolist() + [3, 3])
    chunks = [lengths] if len(lengths) <= CHUNK else [lengths[i:i + CHUNK] for i in range(0, len(lengths), CHUNK)]
    conv_total = 0
    for chunk in chunks:
        conv_total += len(chunk) * sum(2 * (min(50, max(chunk) + w) - w + 1) * w * d * n for w, n in c["filters"])
    _, dense, lstm = flops_per_token(options)
    steps = sum(len(s) + 2 for s in sentences if s)
    return conv_total + dense * len(lengths) + lstm * steps


def gemm_ceiling(seconds=1.0):
    import torch

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    out = torch.empty(2048, 2048)
    for _ in range(2):
        torch.mm(a, b, out=out)
    rates, t_end = [], time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(rates) < 3:
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        rates.append(2 * 2048 ** 3 / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="original | small | a directory with options.json + weights.hdf5")
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/elmo-anchor"))
    ap.add_argument("--std", type=float, default=0.05, help="weight std of the random models (make_weights.py --std)")
    ap.add_argument("--conllu", default=os.path.join(SHARED, "data", "ud_en_ewt", "en_ewt-ud-dev.conllu"))
    ap.add_argument("--sentences", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dump", default=None, metavar="OUT.npz")
    ap.add_argument("--ceiling-gflops", type=float, default=None)
    ap.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                    help="BiLM(precision=...); float32 vs bfloat16 side by side: bench_precision.py")
    a = ap.parse_args()

    import numpy as np
    import torch

    from spacy_elmo.bilm import BiLM

    torch.set_num_threads(a.threads)
    mdir = model_dir(a.model, a.models, a.std)
    sents = read_workload(a.conllu, a.sentences)
    ntok = sum(len(s) for s in sents)
    t0 = time.perf_counter()
    bilm = BiLM.from_files(os.path.join(mdir, "options.json"), os.path.join(mdir, "weights.hdf5"),
                           precision=a.precision)
    t_load = time.perf_counter() - t0

    def run():
        return bilm.embed_sentences(sents, batch_size=a.batch_size)

    t0 = time.perf_counter()
    run()
    warm = time.perf_counter() - t0
    times = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    conv, dense, lstm = flops_per_token(bilm.options)
    res = dict(impl="spacy_elmo.bilm.BiLM.embed_sentences", model=os.path.abspath(mdir), torch=torch.__version__,
               precision=a.precision, effective_precision=bilm.effective_precision,
               threads=torch.get_num_threads(), malloc_env={k: v for k, v in sorted(os.environ.items())
                                                            if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"},
               sentences=len(sents), tokens=ntok, batch_size=a.batch_size, runs=a.runs,
               warmup_s=round(warm, 3), load_s=round(t_load, 2), peak_rss_mib=round(rss),
               nominal_mflop_per_token=round((conv + dense + lstm) / 1e6, 1))
    if times:  # --runs 0: outputs only (with --dump)
        med = statistics.median(times)
        tps = ntok / med
        nominal = tps * (conv + dense + lstm) / 1e9
        executed = executed_flops(bilm.options, sents) / med / 1e9
        ceiling = a.ceiling_gflops or gemm_ceiling()
        res.update(tokens_per_s=round(tps, 1), median_s=round(med, 3), per_run_s=[round(t, 3) for t in times],
                   nominal_gflops_per_s=round(nominal, 1), executed_gflops_per_s=round(executed, 1),
                   gemm_ceiling_gflops=round(ceiling, 1), nominal_fraction_of_ceiling=round(nominal / ceiling, 3),
                   executed_fraction_of_ceiling=round(executed / ceiling, 3))
    if a.dump:
        outs = run()
        arrays = {f"sent_{i:05d}": v for i, v in enumerate(outs)}
        meta = dict(impl=res["impl"], model=res["model"], sentences=len(sents), batch_size=a.batch_size,
                    stateless=True, layers="all", boundaries_removed=True)
        np.savez(a.dump, lengths=np.array([len(s) for s in sents], dtype=np.int64),
                 words=np.array([w for s in sents for w in s], dtype=str), meta=np.array(json.dumps(meta)), **arrays)
        res["dump"] = os.path.abspath(a.dump)
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
