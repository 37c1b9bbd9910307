"""Static vectors distilled from a biLM against word2vec trained on the same text: word similarity
(SimLex-999, WordSim-353), the cost of a lookup against a forward pass, distilling against
``embed`` on the same text, peak RSS, and a projection of the wall time for the whole corpus.

    pip install "gensim>=4.3"     # benchmark-only; SimLex-999 and WordSim-353 are read from its test data
    nice -n 10 python benchmarks/bench_static_vectors.py --max-lines 33500 --threads 1 \\
        [--model en_elmo_small] [--max-contexts 100] [--workdir DIR] [--out docs/results/static_vectors.json]

Corpus: ``$SPACY_ELMO_SHARED/data/lm/*.txt.gz`` (the pretraining text of ``en_elmo_small``),
the first ``--max-lines`` lines of each file (0: all of it), tokenised as ``static-vectors``
tokenises (spaCy's English tokenizer, whitespace tokens dropped). Stages (each kept in
``--workdir``, so a re-run goes on where a killed one stopped):

1. distil: :func:`spacy_elmo.static.distil_means` with the view "all" (one pass gives every
   layer; the average and any mix of the layer means is the mean of that view, the views being
   linear), ``--min-count 5``, ``--max-contexts``, resumable;
2. word2vec: gensim skip-gram, 300 dimensions, window 5, min_count 5, 5 epochs, negative
   sampling (gensim's defaults otherwise), seed 0, on the same tokens (one line per corpus line);
3. word similarity: Spearman's rho of cosine against the human scores, with gensim's
   ``evaluate_word_pairs`` for every system alike (case-insensitive: a word maps to its most
   frequent cased form; pairs with an unknown word are left out and the coverage is reported).
   The two vocabularies are the same words (both keep the tokens seen at least 5 times). For the
   biLM also "all pairs": an unknown word gets the vector of the word alone as a one-token
   sentence (for layer 0, the char CNN, that is exactly its context-free vector);
   post-processing (centring, all-but-the-top with D = dim / 100) for both;
4. cost: tokens/s of a table lookup (numpy, and spaCy ``token.vector``) against the biLM's
   forward pass on the same sentences; distilling (``distil_vectors``, no context limit, so
   every token goes through the biLM) against ``embed_file`` on the same text, alternating;
5. projection: the share of the corpus that reaches the biLM grows as more words fill their
   ``--max-contexts``; it is simulated (no biLM, the same claiming code) on prefixes of the
   slice and extrapolated to the whole corpus; the wall time at 2 threads uses the measured
   1-thread rates and the measured 1 -> 2 thread scaling of the LSTM (benchmarks/README.md).

Writes a JSON record (``--out``) naming the model's sha256 and digest, the corpus slice and its
sha256, and prints a summary. The CPU may be shared with other jobs: the record says which.
"""
import argparse
import glob
import json
import os
import platform
import resource
import statistics
import sys
import time

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import shared_dir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LSTM_TWO_THREAD_SCALING = 1.82  # benchmarks/README.md: "LSTM alone: 1 -> 2 threads scales 1.82x"
PUBLISHED = {"source": "Ethayarajh 2019, How Contextual are Contextualized Word Representations? (EMNLP), "
                       "Table 1: static vectors from the first principal component of a word's layer-1 "
                       "representations of the original ELMo (93.6M parameters, 1B Word Benchmark); approximate",
             "simlex999": 0.28, "wordsim353": 0.32}


def rss_mb() -> float:
    """Peak resident set size of this process so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def corpus_files() -> list:
    return sorted(glob.glob(str(shared_dir() / "data" / "lm" / "*.txt.gz")))


def load_avg() -> list:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


# -- 1. distil ------------------------------------------------------------------------------------
def distil(args, paths):
    """The distilled means, kept in workdir/distil_result.npz once complete (a re-run reads them)."""
    from spacy_elmo.static import Distilled, distil_means, plan
    from spacy_elmo.static.checkpoint import Partial

    p = plan(args.model, paths, "all", min_count=args.min_count, max_contexts=args.max_contexts,
             max_lines=args.max_lines, precision=args.precision)
    done = os.path.join(args.workdir, "distil_result.npz")
    if os.path.isfile(done):
        with numpy.load(done) as f:
            meta = json.loads(str(f["meta"]))
            if meta["args"] == p.args:
                return p, Distilled(meta["words"], f["counts"], f["contexts"], f["means"], meta["digest"],
                                    meta["stats"])
    partial = Partial(os.path.join(args.workdir, "distil"), p.args)
    d = distil_means(p, threads=args.threads, progress=not args.quiet, partial=partial, checkpoint_every=300)
    d.stats["peak_rss_mb"] = rss_mb()
    meta = {"args": p.args, "words": d.words, "digest": d.digest, "stats": d.stats}
    with open(done + ".tmp", "wb") as f:
        numpy.savez(f, counts=d.counts, contexts=d.contexts, means=d.means, meta=numpy.array(json.dumps(meta)))
    os.replace(done + ".tmp", done)
    partial.remove()
    return p, d


def views(d, n_layers: int) -> dict:
    """name -> float32 (V, dim) table: each layer and the average of the layers."""
    out = {f"layer_{k}": d.means[:, k] for k in range(n_layers)}
    out["average"] = d.means.mean(axis=1)
    return out


# -- 2. word2vec ----------------------------------------------------------------------------------
def tokenized_corpus(args, paths) -> tuple:
    """workdir/tokens.txt (one corpus line per line, tokens joined by spaces) and the number of
    lines of each file in it."""
    from spacy_elmo.static import corpus

    path = os.path.join(args.workdir, "tokens.txt")
    counts_path = path + ".lines.json"
    if os.path.isfile(counts_path):
        return path, json.load(open(counts_path))
    tokenize = corpus.make_tokenizer(False, "en")
    lines, start = [], time.perf_counter()
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for p in paths:
            n = 0
            for line in corpus.records([p], args.max_lines):
                f.write(" ".join(tokenize(line)) + "\n")
                n += 1
            lines.append(n)
    seconds = time.perf_counter() - start
    os.replace(path + ".tmp", path)
    json.dump({"lines": lines, "seconds": seconds}, open(counts_path, "w"))
    return path, {"lines": lines, "seconds": seconds}


def word2vec(args, tokens_path):
    from gensim.models import Word2Vec

    path = os.path.join(args.workdir, "word2vec.kv")
    if os.path.isfile(path):
        from gensim.models import KeyedVectors

        return KeyedVectors.load(path), json.load(open(path + ".json"))
    start = time.perf_counter()
    model = Word2Vec(corpus_file=tokens_path, sg=1, vector_size=300, window=5, min_count=args.min_count, epochs=5,
                     workers=args.threads, seed=0)
    info = {"seconds": time.perf_counter() - start, "words": len(model.wv), "settings":
            "skip-gram, 300 dims, window 5, min_count 5, 5 epochs, negative 5, seed 0"}
    model.wv.save(path)
    json.dump(info, open(path + ".json", "w"))
    return model.wv, info


# -- 3. word similarity ---------------------------------------------------------------------------
def datasets() -> dict:
    import gensim

    folder = os.path.join(os.path.dirname(gensim.__file__), "test", "test_data")
    return {"simlex999": os.path.join(folder, "simlex999.txt"), "wordsim353": os.path.join(folder, "wordsim353.tsv")}


def keyed(words, table):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(table.shape[1])
    kv.add_vectors(list(words), numpy.ascontiguousarray(table, dtype=numpy.float32))
    return kv


def score(kv) -> dict:
    """{dataset: {"spearman", "pearson", "coverage", "pairs"}} for one KeyedVectors."""
    out = {}
    for name, path in datasets().items():
        pearson, spearman, oov = kv.evaluate_word_pairs(path, restrict_vocab=len(kv), case_insensitive=True)
        pairs = sum(1 for line in open(path, encoding="utf-8") if line.strip() and not line.startswith("#"))
        out[name] = {"spearman": round(float(spearman[0]), 4), "pearson": round(float(pearson[0]), 4),
                     "coverage": round(1 - oov / 100, 4), "pairs": pairs,
                     "covered_pairs": pairs - round(oov * pairs / 100)}
    return out


def dataset_words() -> set:
    words = set()
    for path in datasets().values():
        for line in open(path, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                words.update(line.split("\t")[:2])
    return words


def alone(bilm, words) -> numpy.ndarray:
    """(n, L+1, dim): each word as a one-token sentence through the biLM."""
    layers = bilm.embed_sentences([[w] for w in words])
    return numpy.stack([x[:, 0] for x in layers])


def all_pairs_tables(bilm, words, tables, n_layers):
    """The tables with every dataset word they lack appended (the word alone through the biLM)."""
    known = {w.upper() for w in words}
    missing = sorted(w for w in dataset_words() if w.upper() not in known)
    extra = alone(bilm, missing) if missing else numpy.zeros((0, n_layers, tables["average"].shape[1]))
    extra_views = {f"layer_{k}": extra[:, k] for k in range(n_layers)}
    extra_views["average"] = extra.mean(axis=1)
    return missing, {name: (list(words) + missing, numpy.concatenate([t, extra_views[name]]))
                     for name, t in tables.items()}


def similarity(args, d, wv, bilm, n_layers) -> dict:
    from spacy_elmo.static import postprocess

    tables = views(d, n_layers)
    results = {"word2vec": score(wv)}
    dim_w2v = wv.vectors.shape[1]
    results[f"word2vec+abtt{dim_w2v // 100}"] = score(keyed(wv.index_to_key, postprocess.apply(
        wv.vectors, remove_top_d=dim_w2v // 100)[0]))
    for name, table in tables.items():
        results[name] = score(keyed(d.words, table))
        results[f"{name}+centred"] = score(keyed(d.words, postprocess.apply(table, centre=True)[0]))
        k = table.shape[1] // 100
        results[f"{name}+abtt{k}"] = score(keyed(d.words, postprocess.apply(table, remove_top_d=k)[0]))
    missing, full = all_pairs_tables(bilm, d.words, tables, n_layers)
    for name, (words, table) in full.items():
        results[f"{name}, all pairs"] = score(keyed(words, table))
    return {"systems": results, "oov_words_embedded_alone": len(missing)}


# -- 4. cost --------------------------------------------------------------------------------------
def speed_text(args, paths) -> tuple:
    """workdir/speed.txt: the first --speed-lines / 3 lines of each file; and their tokens."""
    from spacy_elmo.static import corpus

    path = os.path.join(args.workdir, "speed.txt")
    per_file = max(1, args.speed_lines // len(paths))
    lines = [line for p in paths for line in corpus.records([p], per_file)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    tokenize = corpus.make_tokenizer(False, "en")
    return path, [tokenize(line) for line in lines]


def lookup_cost(bilm, words, table, sentences, threads) -> dict:
    import spacy
    from spacy.tokens import Doc
    from spacy.vectors import Vectors

    from spacy_elmo.bilm.cpu_budget import ThreadBudget

    n = sum(map(len, sentences))
    with ThreadBudget(threads):
        start = time.perf_counter()
        bilm.embed_sentences(sentences, batch_size=64)
        forward = time.perf_counter() - start
    row_of = {w: i for i, w in enumerate(words)}
    start = time.perf_counter()
    for _ in range(5):
        for s in sentences:
            table[[row_of.get(t, 0) for t in s]]
    numpy_s = (time.perf_counter() - start) / 5
    nlp = spacy.blank("en")
    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=table, keys=list(words))
    start = time.perf_counter()
    for s in sentences:
        for token in Doc(nlp.vocab, words=s):
            token.vector
    spacy_s = time.perf_counter() - start
    return {"tokens": n, "forward_tokens_per_second": n / forward, "numpy_lookup_tokens_per_second": n / numpy_s,
            "spacy_token_vector_tokens_per_second": n / spacy_s,
            "lookup_over_forward": (n / numpy_s) / (n / forward)}


def distil_vs_embed(args, text, rounds: int = 2) -> dict:
    """tokens/s of distil_vectors (min_count 1, no context limit: every token through the biLM)
    and of embed_file on the same file, alternating ``rounds`` times, both at ``--precision``;
    torch threads fixed. With a precision other than float32, distil_vectors at float32 too
    ("distil_contexts_pass_float32"), for the float32 wall time of the whole corpus."""
    import shutil

    from spacy_elmo.embed import embed_file
    from spacy_elmo.static import distil_vectors

    os.environ["SPACY_ELMO_THREADS"] = str(args.threads)  # embed's own budget too
    rows = []
    for r in range(rounds):
        out = os.path.join(args.workdir, "speed_embed.hdf5")
        e = embed_file(text, out, model=args.model, layer_spec="average", progress=False, overwrite=True,
                       precision=args.precision)
        os.remove(out)
        target = os.path.join(args.workdir, "speed_static")
        shutil.rmtree(target, ignore_errors=True)
        c = distil_vectors(args.model, [text], target, view="average", min_count=1, max_contexts=0,
                           threads=args.threads, precision=args.precision, progress=False)
        shutil.rmtree(target, ignore_errors=True)
        whole = c["counts"]["tokens"] / (c["seconds"]["count"] + c["seconds"]["contexts"])
        rows.append({"embed": e["embedded_tokens"] / e["seconds"], "distil_contexts_pass": c["bilm_tokens_per_second"],
                     "distil_both_passes": whole, "distil_with_write": c["counts"]["tokens"] / (
                         c["seconds"]["count"] + c["seconds"]["contexts"] + c["seconds"]["write"])})
        if args.precision != "float32":
            f32 = distil_vectors(args.model, [text], target, view="average", min_count=1, max_contexts=0,
                                 threads=args.threads, progress=False)
            shutil.rmtree(target, ignore_errors=True)
            rows[-1]["distil_contexts_pass_float32"] = f32["bilm_tokens_per_second"]
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"rounds": rows, "median": med, "ratio_contexts_pass": med["distil_contexts_pass"] / med["embed"],
            "ratio_both_passes": med["distil_both_passes"] / med["embed"]}


def float32_wall(record: dict):
    """The distillation's wall time at float32, from a run at another precision: its counting
    pass, and its contexts pass scaled by the same-run ratio of the two precisions' tokens/s on
    the speed text (None for a float32 run)."""
    med, d = record["distil_vs_embed"]["median"], record["distil"]
    if "distil_contexts_pass_float32" not in med:
        return None
    slower = med["distil_contexts_pass"] / med["distil_contexts_pass_float32"]
    return d["seconds_count"] + d["seconds_contexts"] * slower


# -- 5. projection --------------------------------------------------------------------------------
def simulate(tokens_path, file_lines, fraction, min_count, max_contexts, window=128) -> dict:
    """Tokens that would reach the biLM (the claiming code of static-vectors, no biLM) on the
    first ``fraction`` of each file's lines in the slice."""
    from collections import Counter

    from spacy_elmo.pretrain.corpus import split_even
    from spacy_elmo.static import accumulate, corpus

    keep, start = [], 0
    for n in file_lines:
        keep.append((start, start + int(n * fraction)))
        start += n
    sents = [line.split() for i, line in enumerate(open(tokens_path, encoding="utf-8"))
             if any(a <= i < b for a, b in keep)]
    vocab = corpus.build_vocab(Counter(t for s in sents for t in s), min_count)
    claims = accumulate.Claims(numpy.zeros(len(vocab.words), dtype=numpy.int64), max_contexts)
    row_of = {w: i for i, w in enumerate(vocab.words)}
    embedded = sum(len(p) for s in sents for p in split_even(s, window) if claims.claim(p, row_of) is not None)
    tokens = sum(map(len, sents))
    return {"tokens": tokens, "words": len(vocab.words), "embedded_tokens": embedded, "share": embedded / tokens}


def full_corpus_tokens(paths, file_lines, tokens_path) -> dict:
    """Lines of the whole files (counted) and their tokens, estimated with each file's tokens per
    line in the slice."""
    from spacy_elmo.static import corpus

    per_line, start = [], 0
    with open(tokens_path, encoding="utf-8") as f:
        lengths = [len(line.split()) for line in f]
    for n in file_lines:
        per_line.append(sum(lengths[start:start + n]) / max(1, n))
        start += n
    lines = [corpus.count_records([p]) for p in paths]
    return {"lines": sum(lines), "tokens": int(sum(n * r for n, r in zip(lines, per_line)))}


def local_slope(xs, ys) -> float:
    """d log y / d log x between the last two points."""
    return float(numpy.log(ys[-1] / ys[-2]) / numpy.log(xs[-1] / xs[-2]))


def projection(args, file_lines, tokens_path, paths, tokenize_rate, bilm_1, dim) -> dict:
    """Wall time of static-vectors on the whole corpus at 2 threads: two tokenising passes and
    the biLM on the projected tokens that reach it (see the module docstring). The tokens that
    reach the biLM, and the vocabulary, are extrapolated from the slice's last doubling with
    their log-log slope held constant; the slope falls as words fill up, so this errs high."""
    curve = [simulate(tokens_path, file_lines, f, args.min_count, args.max_contexts) for f in (0.125, 0.25, 0.5, 1.0)]
    full = full_corpus_tokens(paths, file_lines, tokens_path)
    tokens = [c["tokens"] for c in curve]
    growth = full["tokens"] / tokens[-1]
    slope = local_slope(tokens, [c["embedded_tokens"] for c in curve])
    embedded = min(full["tokens"], curve[-1]["embedded_tokens"] * growth ** slope)
    words_slope = local_slope(tokens, [c["words"] for c in curve])
    words = curve[-1]["words"] * growth ** words_slope
    bilm_2 = bilm_1 * LSTM_TWO_THREAD_SCALING
    tokenizing = 2 * full["tokens"] / tokenize_rate
    return {"curve": curve, "full_corpus": full, "embedded_slope": slope, "projected_embedded_tokens": int(embedded),
            "projected_share": embedded / full["tokens"], "tokenize_tokens_per_second": tokenize_rate,
            "bilm_tokens_per_second_1_thread": bilm_1, "bilm_tokens_per_second_2_threads": bilm_2,
            "two_thread_scaling": LSTM_TWO_THREAD_SCALING, "tokenizing_seconds": tokenizing,
            "wall_seconds_2_threads": tokenizing + embedded / bilm_2,
            "wall_seconds_2_threads_no_skipping": tokenizing + full["tokens"] / bilm_2,
            "vocabulary_slope": words_slope, "projected_words": int(words),
            "projected_sums_mb_one_view": words * dim * 8 / 1e6}


# -- the run --------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="en_elmo_small")
    ap.add_argument("--max-lines", type=int, default=33500, help="lines of each corpus file (0: all)")
    ap.add_argument("--max-contexts", type=int, default=100)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", default="float32", help="the biLM's products: float32, bfloat16 or int8")
    ap.add_argument("--speed-lines", type=int, default=600)
    ap.add_argument("--workdir", default=os.path.join(os.path.expanduser("~"), ".cache", "spacy_elmo_bench_static"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "results", "static_vectors.json"))
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--plot-from", metavar="JSON", help="only draw --plot from a record this script wrote")
    ap.add_argument("--plot", default=os.path.join(REPO, "docs", "img", "static_vectors.png"))
    ap.add_argument("--probe", default=os.path.join(REPO, "docs", "probe", "probe.json"),
                    help="the probe's record (python -m spacy_elmo probe): per-layer contextuality")
    return ap.parse_args(argv)


def plot(record: dict, probe: dict, path: str) -> None:
    """Two panels: the probe's anisotropy and self-similarity per view, and the distilled
    vectors' Spearman rho per view with word2vec's as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["layer_0", "layer_1", "layer_2", "average"]
    ctx = probe["contextuality"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    x = numpy.arange(len(names))
    for i, (key, label) in enumerate((("anisotropy", "anisotropy"), ("self_similarity", "self-similarity"),
                                      ("self_similarity_adjusted", "self-similarity - anisotropy"))):
        a.bar(x + (i - 1) * 0.27, [ctx[n][key] for n in names], 0.27, label=label)
    a.set_xticks(x, names)
    a.set_title("contextuality (probe, EWT dev)")
    a.legend(fontsize=8)
    systems = record["similarity"]["systems"]
    for i, (key, label, colour) in enumerate((("simlex999", "SimLex-999", "C0"), ("wordsim353", "WS-353", "C1"))):
        b.bar(x + (i - 0.5) * 0.4, [systems[n][key]["spearman"] for n in names], 0.4, label=label, color=colour)
        b.axhline(systems["word2vec"][key]["spearman"], color=colour, linestyle="--", linewidth=1,
                  label=f"word2vec, {label}")
    b.set_xticks(x, names)
    b.set_title(f"distilled static vectors, Spearman rho ({record['corpus']['slice']})", fontsize=9)
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def model_record(args, p, d) -> dict:
    from spacy_elmo.bilm.integrity import sha256

    weights = os.path.join(p.model_dir, "weights.hdf5")
    meta_path = os.path.join(p.model_dir, "meta.json")
    meta = json.load(open(meta_path)) if os.path.isfile(meta_path) else {}
    return {"name": args.model, "weights_sha256": sha256(weights), "digest": d.digest, "layers": p.n_layers,
            "dim": p.dim, "lineage_tokens": (meta.get("training") or {}).get("lineage_tokens")}


def corpus_record(args, paths, d, file_lines) -> dict:
    from spacy_elmo.static.corpus import corpus_digest

    whole, files = corpus_digest(paths)
    for f, n in zip(files, file_lines):
        f["path"] = os.path.relpath(f["path"], shared_dir())
        f["lines_read"] = n
    s = d.stats
    return {"slice": f"the first {args.max_lines:,} lines of each file" if args.max_lines else "whole files",
            "sha256_of_whole_files": whole, "files": files, "lines": s["records"], "tokens": s["tokens"],
            "types": s["types"]}


def main(argv=None):
    import torch

    args = parse_args(argv)
    if args.plot_from:
        plot(json.load(open(args.plot_from)), json.load(open(args.probe)), args.plot)
        return
    os.makedirs(args.workdir, exist_ok=True)
    torch.set_num_threads(args.threads)
    paths = corpus_files()
    from spacy_elmo.bilm.cpu_budget import cpu_name as cpu_words

    record = {"machine": {"cpu": cpu_words(), "model_name": cpu_name()}, "threads": args.threads,
              "precision": args.precision, "load_average_at_start": load_avg(),
              "command": (f"python benchmarks/bench_static_vectors.py --model {args.model} --max-lines "
                          f"{args.max_lines} --max-contexts {args.max_contexts} --min-count {args.min_count} "
                          f"--threads {args.threads} --precision {args.precision}")}
    t0 = time.perf_counter()
    p, d = distil(args, paths)
    record["distil"] = dict(d.stats, sums_mb=d.means.size * 8 / 1e6)
    tokens_path, tokenized = tokenized_corpus(args, paths)
    file_lines = tokenized["lines"]
    wv, record["word2vec"] = word2vec(args, tokens_path)
    w2v_words, our_words = set(wv.index_to_key), set(d.words)
    record["vocabularies"] = {"word2vec": len(w2v_words), "distilled": len(our_words),
                              "common": len(w2v_words & our_words)}
    from spacy_elmo.bilm import BiLM

    bilm = BiLM.from_pretrained(p.model_dir, precision=args.precision)
    record["similarity"] = similarity(args, d, wv, bilm, p.n_layers)
    record["published"] = PUBLISHED
    text, sentences = speed_text(args, paths)
    record["lookup"] = lookup_cost(bilm, d.words, views(d, p.n_layers)["average"], sentences, args.threads)
    record["distil_vs_embed"] = distil_vs_embed(args, text)
    record["float32_wall_seconds"] = float32_wall(record)
    if args.max_lines:  # a slice: project the whole corpus; the whole corpus is measured in "distil"
        record["projection"] = projection(args, file_lines, tokens_path, paths,
                                          d.stats["tokens"] / tokenized["seconds"],
                                          record["lookup"]["forward_tokens_per_second"], p.dim)
    record.update(model=model_record(args, p, d), corpus=corpus_record(args, paths, d, file_lines),
                  max_contexts=args.max_contexts, min_count=args.min_count, peak_rss_mb=rss_mb(),
                  load_average_at_end=load_avg(), seconds=time.perf_counter() - t0)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True, default=float)
        f.write("\n")
    plot(record, json.load(open(args.probe)), args.plot)
    print_summary(record)


def print_summary(r: dict) -> None:
    print(f"corpus: {r['corpus']['slice']}: {r['corpus']['lines']:,} lines, {r['corpus']['tokens']:,} tokens")
    print(f"{'system':28s} {'SimLex rho':>10s} {'cover':>6s} {'WS353 rho':>10s} {'cover':>6s}")
    for name, s in r["similarity"]["systems"].items():
        a, b = s["simlex999"], s["wordsim353"]
        print(f"{name:28s} {a['spearman']:10.3f} {a['coverage']:6.1%} {b['spearman']:10.3f} {b['coverage']:6.1%}")
    d, e = r["distil"], r["distil_vs_embed"]
    print(f"distil: {d['tokens_read']:,} tokens read, {d['tokens_embedded']:,} through the biLM, "
          f"{d['sentences_skipped']:,} sentences skipped, {d['seconds_contexts']:.0f} s, "
          f"peak RSS {d['peak_rss_mb']:.0f} MB")
    print(f"distil / embed tokens/s: {e['ratio_contexts_pass']:.2f} (contexts pass), {e['ratio_both_passes']:.2f} "
          f"(both passes); lookup / forward: {r['lookup']['lookup_over_forward']:,.0f}x")
    if "projection" not in r:
        return
    pr = r["projection"]
    print(f"projected: {pr['full_corpus']['tokens']:,} tokens, {pr['wall_seconds_2_threads'] / 3600:.1f} h at 2 "
          f"threads ({pr['projected_share']:.0%} of the tokens through the biLM; "
          f"{pr['wall_seconds_2_threads_no_skipping'] / 3600:.1f} h without skipping)")


if __name__ == "__main__":
    main()
