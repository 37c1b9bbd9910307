"""Is the word-similarity comparison of distilled vectors against word2vec fair, and which view of
the biLM scores best? Small runs beside ``bench_static_vectors.py``:

    pip install "gensim>=4.3"     # benchmark-only; SimLex-999 and WordSim-353 from its test data
    SPACY_ELMO_SHARED=../shared nice -n 5 python benchmarks/static_similarity_checks.py TABLE_DIR \\
        [--slices 10000 33500 100000] [--contexts 10] [--threads 1] [--workdir DIR] [--out RECORD.json]

TABLE_DIR: a ``static-vectors`` OUTPUT_DIR distilled from the first ``--slices[0]`` lines of each
file of ``$SPACY_ELMO_SHARED/data/lm/*.txt.gz`` (its card says which model, view and slice);
``--extra DIR ...``: tables of other views of the same slice, scored beside it.

1. data size: word2vec (``bench_static_vectors.word2vec``: skip-gram, 300 dims, window 5,
   min_count 5, 5 epochs, seed 0) on the first N lines of each file for each N of ``--slices``;
   the biLM itself was pretrained on all of the text, word2vec sees only the slice.
2. coverage and case: every system is scored on the pairs that all of them cover (Spearman's
   rho of cosine against the human scores), beside each one's own coverage; words are looked up
   case-insensitively (a word takes its most frequent cased form, as gensim's
   ``evaluate_word_pairs(case_insensitive=True)``) and, as a check, lowercase only.
3. views: for the data sets' words only, the biLM's layers over their first ``--contexts``
   uses in the slice (one pass over those sentences, each at most 128 tokens): each layer, the
   average, the top layer's forward and backward halves alone and averaged, and the top layer
   centred (minus the mean over every token of those sentences) and with the top D = dim / 100
   principal directions of those tokens removed (all-but-the-top, Mu & Viswanath 2018); the
   same post-processing of the table.

Writes a JSON record naming the model (weights sha256, lineage tokens), the CPU (``machine.cpu``:
name and vector extensions) and the slices; no date.
"""
import argparse
import gzip
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_static_vectors as bench  # noqa: E402

REPO = os.path.dirname(HERE)


def read_pairs() -> dict:
    """{data set: [(word1, word2, human score)]} from gensim's test data."""
    out = {}
    for name, path in bench.datasets().items():
        rows = []
        for line in open(path, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                a, b, s = line.rstrip("\n").split("\t")[:3]
                rows.append((a, b, float(s)))
        out[name] = rows
    return out


class Table:
    """Words (most frequent first) and their (V, dim) float32 vectors, looked up by a word's
    most frequent cased form (``mode="fold"``) or by its lowercase form alone (``"lower"``)."""

    def __init__(self, words, vectors):
        self.words, self.vectors = list(words), numpy.asarray(vectors, dtype=numpy.float32)
        self.exact = {w: i for i, w in enumerate(self.words)}
        self.fold = {}
        for i, w in enumerate(self.words):
            self.fold.setdefault(w.lower(), i)

    def row(self, word: str, mode: str):
        i = self.fold.get(word.lower()) if mode == "fold" else self.exact.get(word.lower())
        return None if i is None else self.vectors[i]

    def with_vectors(self, vectors) -> "Table":
        return Table(self.words, vectors)


def read_table(folder: str) -> tuple:
    """(Table, card) of a static-vectors OUTPUT_DIR (its vectors.txt.gz)."""
    with gzip.open(os.path.join(folder, "vectors.txt.gz"), "rt", encoding="utf-8") as f:
        rows, dim = map(int, f.readline().split())
        words, vectors = [], numpy.empty((rows, dim), dtype=numpy.float32)
        for i, line in enumerate(f):
            word, rest = line.rstrip("\n").split(" ", 1)
            words.append(word)
            vectors[i] = numpy.array(rest.split(" "), dtype=numpy.float32)
    return Table(words, vectors), json.load(open(os.path.join(folder, "card.json"), encoding="utf-8"))


def cosines(table: Table, pairs, mode: str) -> list:
    """Cosine of each pair (None where a word is unknown)."""
    out = []
    for a, b, _ in pairs:
        u, v = table.row(a, mode), table.row(b, mode)
        out.append(None if u is None or v is None else
                   float(u @ v / (numpy.linalg.norm(u) * numpy.linalg.norm(v) + 1e-12)))
    return out


def compare(systems: dict, mode: str = "fold") -> dict:
    """{data set: {"common_pairs", "pairs", system: {"rho_common", "rho_own", "coverage"}}}:
    Spearman's rho on the pairs every system covers, and on each one's own covered pairs."""
    from scipy.stats import spearmanr

    out = {}
    for name, pairs in read_pairs().items():
        human = numpy.array([s for _, _, s in pairs])
        cos = {k: cosines(t, pairs, mode) for k, t in systems.items()}
        common = [i for i in range(len(pairs)) if all(c[i] is not None for c in cos.values())]
        row = {"pairs": len(pairs), "common_pairs": len(common)}
        for k, c in cos.items():
            own = [i for i, x in enumerate(c) if x is not None]
            row[k] = {"coverage": round(len(own) / len(pairs), 4),
                      "rho_own": round(float(spearmanr([c[i] for i in own], human[own])[0]), 4),
                      "rho_common": round(float(spearmanr([c[i] for i in common], human[common])[0]), 4)}
        out[name] = row
    return out


def word2vec_slices(args, paths) -> tuple:
    """{"word2vec@N": Table} and their stats, one per --slices N (cached in workdir/slice-N)."""
    tables, stats = {}, {}
    for n in args.slices:
        ns = SimpleNamespace(workdir=os.path.join(args.workdir, f"slice-{n}"), max_lines=n, min_count=5,
                             threads=args.threads)
        os.makedirs(ns.workdir, exist_ok=True)
        tokens_path, tokenized = bench.tokenized_corpus(ns, paths)
        wv, info = bench.word2vec(ns, tokens_path)
        tables[f"word2vec@{n}"] = Table(wv.index_to_key, wv.vectors)
        n_tokens = sum(len(line.split()) for line in open(tokens_path, encoding="utf-8"))
        stats[f"word2vec@{n}"] = dict(info, lines=sum(tokenized["lines"]), tokens=n_tokens)
    return tables, stats


def dataset_contexts(args, paths, words: set) -> list:
    """The sentences (token lists, <= 128 tokens) of the first --contexts uses of each word of
    ``words`` (case-insensitive) in the first --slices[0] lines of each file."""
    from spacy_elmo.static import corpus

    tokenize = corpus.make_tokenizer(False, "en")
    need = {w: args.contexts for w in words}
    sentences = []
    for line in corpus.records(paths, args.slices[0]):
        tokens = tokenize(line)[:128]
        hit = [t.lower() for t in tokens if need.get(t.lower(), 0) > 0]
        if hit:
            for t in set(hit):
                need[t] -= 1
            sentences.append(tokens)
    return sentences


def layer_means(args, paths, model_dir: str, words: set) -> dict:
    """Per data-set word (lowercase): the mean of each layer (L+1, dim) over its contexts, and
    the token mean and covariance of each layer over every token of those sentences (cached)."""
    cache = os.path.join(args.workdir, f"layers-{args.slices[0]}-{args.contexts}.npz")
    if os.path.isfile(cache):
        with numpy.load(cache) as f:
            return {"words": list(f["words"]), "means": f["means"], "token_mean": f["token_mean"],
                    "token_cov": f["token_cov"], "stats": json.loads(str(f["stats"]))}
    from spacy_elmo.bilm import BiLM

    sentences = dataset_contexts(args, paths, words)
    bilm = BiLM.from_pretrained(model_dir)
    index = {w: i for i, w in enumerate(sorted(words))}
    n_layers, dim = bilm.num_layers + 1, bilm.output_dim
    sums = numpy.zeros((len(index), n_layers, dim))
    counts = numpy.zeros(len(index))
    tsum, touter, n_tok = numpy.zeros((n_layers, dim)), numpy.zeros((n_layers, dim, dim)), 0
    start = time.perf_counter()
    for b in range(0, len(sentences), 64):
        batch = sentences[b:b + 64]
        for tokens, layers in zip(batch, bilm.embed_sentences(batch)):
            x = layers.astype(numpy.float64)  # (L+1, n, dim)
            tsum += x.sum(1)
            touter += numpy.einsum("lnd,lne->lde", x, x)
            n_tok += x.shape[1]
            for j, t in enumerate(tokens):
                i = index.get(t.lower())
                if i is not None and counts[i] < args.contexts:
                    sums[i] += x[:, j]
                    counts[i] += 1
    seconds = time.perf_counter() - start
    keep = counts > 0
    mean = tsum / n_tok
    cov = touter / n_tok - numpy.einsum("ld,le->lde", mean, mean)
    out = {"words": [w for w, k in zip(sorted(words), keep) if k],
           "means": (sums[keep] / counts[keep, None, None]).astype(numpy.float32), "token_mean": mean,
           "token_cov": cov, "stats": {"sentences": len(sentences), "tokens": n_tok, "seconds": seconds,
                                       "tokens_per_second": n_tok / seconds, "words_found": int(keep.sum())}}
    numpy.savez(cache, words=numpy.array(out["words"]), means=out["means"], token_mean=mean, token_cov=cov,
                stats=numpy.array(json.dumps(out["stats"])))
    return out


def abtt(vectors: numpy.ndarray, mean: numpy.ndarray, cov: numpy.ndarray, d: int) -> numpy.ndarray:
    """Centre on ``mean`` and remove the projections on the top ``d`` eigenvectors of ``cov``."""
    x = vectors - mean
    if d:
        top = numpy.linalg.eigh(cov)[1][:, ::-1][:, :d]
        x = x - (x @ top) @ top.T
    return x.astype(numpy.float32)


def view_tables(lm: dict) -> dict:
    """The views of the data sets' words: each layer, average, top halves, top centred / abtt."""
    means, words = lm["means"], lm["words"]
    n_layers, dim = means.shape[1], means.shape[2]
    top, half = n_layers - 1, dim // 2
    views = {f"layer_{k}": means[:, k] for k in range(n_layers)}
    views["average"] = means.mean(1)
    views["top forward half"] = means[:, top, :half]
    views["top backward half"] = means[:, top, half:]
    views["top, halves averaged"] = (means[:, top, :half] + means[:, top, half:]) / 2
    views["top centred"] = abtt(means[:, top], lm["token_mean"][top], lm["token_cov"][top], 0)
    views[f"top abtt{dim // 100}"] = abtt(means[:, top], lm["token_mean"][top], lm["token_cov"][top], dim // 100)
    views["average centred"] = (means.mean(1) - lm["token_mean"].mean(0)).astype(numpy.float32)
    return {k: Table(words, v) for k, v in views.items()}


def table_systems(table: Table, card: dict, max_lines: int) -> dict:
    """The table as it is, centred and with all-but-the-top (D = dim / 100), named by its view.
    Raises SystemExit if it was not distilled from ``max_lines`` lines a file."""
    from spacy_elmo.static import postprocess

    if card["corpus"]["max_lines"] != max_lines:
        raise SystemExit(f"the table was distilled from {card['corpus']['max_lines']} lines a file, not "
                         f"--slices[0] = {max_lines}")
    k, view = table.vectors.shape[1] // 100, card["view"]
    return {f"distilled {view}": table,
            f"distilled {view} centred": table.with_vectors(postprocess.apply(table.vectors, centre=True)[0]),
            f"distilled {view} abtt{k}": table.with_vectors(postprocess.apply(table.vectors, remove_top_d=k)[0])}


def main(argv=None) -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table")
    ap.add_argument("--slices", type=int, nargs="+", default=[10000, 33500, 100000])
    ap.add_argument("--contexts", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workdir", default=os.path.join(REPO, "training", "static_similarity"))
    ap.add_argument("--extra", nargs="*", default=[], help="more tables (other views) of the same slice")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(args.workdir, exist_ok=True)
    paths = bench.corpus_files()
    from spacy_elmo.bilm.cpu_budget import cpu_name

    record = {"machine": {"cpu": cpu_name()}, "threads": args.threads, "load_average_at_start": bench.load_avg()}
    table, card = read_table(args.table)
    systems = table_systems(table, card, args.slices[0])
    for extra in args.extra:
        systems.update(table_systems(*read_table(extra), args.slices[0]))
    w2v, record["word2vec"] = word2vec_slices(args, paths)
    record["tables"] = compare({**systems, **w2v})
    record["tables_lowercase_only"] = compare({**systems, **w2v}, mode="lower")
    words = {w.lower() for rows in read_pairs().values() for a, b, _ in rows for w in (a, b)}
    lm = layer_means(args, paths, card["model"]["path"], words)
    record["views"] = compare({**view_tables(lm), f"distilled {card['view']}": table,
                               f"word2vec@{args.slices[0]}": w2v[f"word2vec@{args.slices[0]}"]})
    record["views_run"] = dict(lm["stats"], contexts_per_word=args.contexts)
    same = f"word2vec@{args.slices[0]}"
    record["minus_word2vec_same_slice"] = {
        system: {name: round(row[system]["rho_common"] - row[same]["rho_common"], 4)
                 for name, row in record["tables"].items()} for system in systems}
    from spacy_elmo.bilm.integrity import sha256

    meta_path = os.path.join(card["model"]["path"], "meta.json")
    meta = json.load(open(meta_path)) if os.path.isfile(meta_path) else {}
    record.update(command="python benchmarks/static_similarity_checks.py " + " ".join(
                      argv if argv is not None else sys.argv[1:]),
                  model={"name": os.path.basename(os.path.normpath(card["model"]["name"])),
                         "digest": card["model"]["digest"],
                         "weights_sha256": sha256(os.path.join(card["model"]["path"], "weights.hdf5")),
                         "lineage_tokens": (meta.get("training") or {}).get("lineage_tokens")},
                  table={"view": card["view"], "words": card["counts"]["words"], "tokens": card["counts"]["tokens"],
                         "max_lines": card["corpus"]["max_lines"], "corpus_sha256": card["corpus"]["sha256"],
                         "max_contexts": card["counts"]["max_contexts"]},
                  slices=args.slices, peak_rss_mb=bench.rss_mb(), load_average_at_end=bench.load_avg())
    for part in ("tables", "views"):
        for name, row in record[part].items():
            print(f"{part} {name}: {row['common_pairs']} of {row['pairs']} pairs common")
            for system, s in row.items():
                if isinstance(s, dict):
                    print(f"  {system:32s} rho {s['rho_common']:.3f} (own {s['rho_own']:.3f}, "
                          f"coverage {s['coverage']:.1%})")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
