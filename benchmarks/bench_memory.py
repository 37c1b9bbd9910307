"""Does memory level off? Stream short varied docs through the biLM and print RSS as it goes.

usage: python benchmarks/bench_memory.py [--docs 100000] [--every 10000] [--path {pipe,bilm,spacy}]
           [--batch-size 64] [--store all] [--model NAME_OR_DIR] [--threads 1] [--seed 0]
           [--text FILE[.gz] | --distinct] [--no-buckets] [--trim] [--json]

--path pipe (default): ``nlp = spacy.blank("en"); nlp.add_pipe("elmo", config={"store": ...})``,
then ``for doc in nlp.pipe(texts, batch_size=64): pass`` (no Doc is kept).
--path bilm: the raw ``BiLM.embed_sentences(chunk, batch_size)`` on chunks of ``--batch-size``
whitespace-tokenised docs (nothing kept). --path spacy: ``spacy.blank("en").pipe`` alone, no elmo:
the baseline growth of spaCy's own vocabulary and string store.

Docs: a deterministic endless stream (``--seed``) of 10-30 tokens drawn uniformly from a fixed
synthetic vocabulary of 20,000 words (1-15 letters, some capitalised, numbers, punctuation), so
spaCy's own vocabulary (which grows with every new string, as in any spaCy pipeline) is full
after a few thousand docs and what remains is our growth. ``--text FILE`` reads docs from a text
file instead (one doc per line, 10-30 whitespace tokens kept; cycled); real text keeps adding new
strings to ``nlp.vocab``. ``--distinct``: every token is a word never seen before in the run
(lower-case letters, 1-15 long as above; deterministic by ``--seed``, no set of seen words kept), so
spaCy's string store grows with every token: the worst case of real text.

Every ``--every`` docs it prints docs, VmRSS (MiB, from /proc/self/status, else psutil), the
change since the first checkpoint, docs/s (and, on the spaCy paths, the size of
``nlp.vocab.strings``); at the end the growth from the first checkpoint to the last, in MiB and %.
``--trim`` also prints RSS after glibc ``malloc_trim(0)`` (memory in use, without the free heap
the allocator keeps). ``--json`` prints one JSON line instead ({"checkpoints": [[docs, rss_mib
(, trimmed_mib)], ...], "malloc_trim": ran, ...}; tests/test_memory.py reads it).
``--no-buckets`` turns off oneDNN row bucketing (:func:`spacy_elmo.bilm.onednn.set_row_buckets`:
products on their exact row counts), which brings back the growth of before the fix
(benchmarks/README.md, "Memory").

``--out PATH`` (with ``--trim``) writes this run's columns into the record
docs/results/memory.json, rows by docs: ``--path pipe --distinct`` gives ``pipe_rss``,
``pipe_trimmed`` and ``strings``; ``--path spacy --distinct`` ``spacy_rss``, ``spacy_trimmed``;
``--path pipe`` on the default stream ``fixed_vocabulary_rss``, ``fixed_vocabulary_trimmed``. The
other runs' columns already in the record stay when it was measured on this CPU with this model
(else they are left out); ``gap`` and the ``summary`` are computed from whatever columns are there.
"""
import argparse
import gzip
import itertools
import json
import os
import random
import sys
import time

N_WORDS = 20000


def rss_mib() -> float:
    """Resident set size of this process now (MiB): VmRSS of /proc/self/status, else psutil.
    Raises RuntimeError if neither is available."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        raise RuntimeError("cannot read RSS: no /proc/self/status and psutil is not installed") from None
    return psutil.Process().memory_info().rss / 2 ** 20


def malloc_trim() -> bool:
    """glibc ``malloc_trim(0)`` (give free heap pages back); False where there is no glibc."""
    import ctypes

    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def synthetic_vocab(rng: random.Random):
    """N_WORDS distinct tokens: lower-case words of 1-15 letters (short ones likelier), ~10%
    capitalised, ~3% numbers, plus punctuation tokens."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {".", ",", ";", ":", "!", "?", "(", ")", "'s", "-", '"'}
    while len(words) < N_WORDS:
        r = rng.random()
        if r < 0.03:
            w = str(rng.randint(0, 10 ** rng.randint(1, 6)))
        else:
            w = "".join(rng.choice(letters) for _ in range(min(15, 1 + int(rng.expovariate(1 / 5)))))
            if r < 0.13:
                w = w.capitalize()
        words.add(w)
    return sorted(words)


def synthetic_docs(seed: int):
    """Endless stream of docs, each a list of 10-30 tokens of :func:`synthetic_vocab`."""
    rng = random.Random(seed)
    vocab = synthetic_vocab(rng)
    while True:
        yield [rng.choice(vocab) for _ in range(rng.randint(10, 30))]


def distinct_words(seed: int):
    """Endless stream of distinct lower-case words. Word i of length L is the L-letter base-26
    number ``(i * A_L + B_L) mod 26**L`` (A_L coprime to 26: a permutation, so no word repeats);
    lengths are drawn as in :func:`synthetic_vocab`, moving to the next once one is used up."""
    rng = random.Random(seed)
    units = [c for c in range(1, 26, 2) if c != 13]  # residues coprime to 26
    affine = {n: (26 * rng.randrange(26 ** 14) + rng.choice(units), rng.randrange(26 ** 15)) for n in range(1, 40)}
    used = {}  # length -> words of that length given so far
    while True:
        n = min(15, 1 + int(rng.expovariate(1 / 5)))
        while used.get(n, 0) >= 26 ** n:
            n += 1
        i = used[n] = used.get(n, 0) + 1
        a, b = affine[n]
        k = (i * a + b) % 26 ** n
        yield "".join(chr(97 + (k // 26 ** j) % 26) for j in range(n))


def distinct_docs(seed: int):
    """Endless stream of docs, each 10-30 words of :func:`distinct_words` (no word twice)."""
    rng = random.Random(seed)
    words = distinct_words(seed + 1)
    while True:
        yield [next(words) for _ in range(rng.randint(10, 30))]


def file_docs(path: str):
    """Endless stream of docs from a text file (one per line, first 10-30 tokens; shorter lines skipped)."""
    opener = gzip.open if path.endswith(".gz") else open
    rng = random.Random(0)
    while True:
        with opener(path, "rt", encoding="utf8") as f:
            for line in f:
                tokens = line.split()
                if len(tokens) >= 10:
                    yield tokens[: rng.randint(10, 30)]


def run_pipe(docs, args, on_doc) -> None:
    """``nlp.pipe`` over the docs (joined with spaces); with ``--path spacy`` no elmo component."""
    import spacy

    nlp = spacy.blank("en")
    if args.path == "pipe":
        nlp.add_pipe("elmo", config={"store": args.store, "model": {"batch_size": args.batch_size,
                                     **({"name": args.model} if args.model else {})}})
    on_doc.strings = lambda: len(nlp.vocab.strings)
    for _ in nlp.pipe((" ".join(d) for d in docs), batch_size=args.batch_size):
        on_doc(1)


def run_bilm(docs, args, on_doc) -> None:
    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.bilm import BiLM

    bilm = BiLM.from_pretrained(args.model or DEFAULT_MODEL)
    while True:
        chunk = list(itertools.islice(docs, args.batch_size))
        if not chunk:
            return
        bilm.embed_sentences(chunk, batch_size=args.batch_size)
        on_doc(len(chunk))


class Checkpoints:
    """Counts docs; records (docs, rss MiB[, trimmed MiB]) every ``every`` docs; stops at ``total``."""

    class Done(Exception):
        pass

    def __init__(self, every: int, total: int, trim: bool, quiet: bool):
        self.every, self.total, self.trim, self.quiet = every, total, trim, quiet
        self.n = 0
        self.rows = []
        self.t0 = time.perf_counter()
        self.strings = None  # () -> size of nlp.vocab.strings, on the spaCy paths
        self.string_counts = []  # its size at each checkpoint
        self.trimmed = False  # whether malloc_trim ran (glibc)

    def __call__(self, k: int) -> None:
        before, self.n = self.n, self.n + k
        if self.n // self.every > before // self.every:
            self.record()
        if self.n >= self.total:
            raise Checkpoints.Done

    def record(self) -> None:
        row = [self.n, round(rss_mib(), 1)]
        if self.trim:
            self.trimmed = malloc_trim() or self.trimmed
            row.append(round(rss_mib(), 1))
        self.rows.append(row)
        if self.strings is not None:
            self.string_counts.append(self.strings())
        if not self.quiet:
            elapsed = time.perf_counter() - self.t0
            delta = row[1] - self.rows[0][1]
            extra = f"  after malloc_trim {row[2]:7.1f}" if self.trim else ""
            if self.strings is not None:
                extra += f"  {self.string_counts[-1]:8d} strings in nlp.vocab"
            print(f"{self.n:8d} docs  RSS {row[1]:7.1f} MiB  {delta:+7.1f} since first  "
                  f"{self.n / elapsed:6.1f} docs/s{extra}", flush=True)


PER_DOCS = 10_000  # the summary's growth rates are per this many docs


def columns(args) -> str:
    """The record's column prefix of a run: pipe / spacy (distinct words) or fixed_vocabulary."""
    if args.path == "pipe" and args.distinct:
        return "pipe"
    if args.path == "spacy" and args.distinct:
        return "spacy"
    if args.path == "pipe" and not args.text:
        return "fixed_vocabulary"
    raise SystemExit("--out records --path pipe --distinct, --path spacy --distinct or --path pipe (fixed vocabulary)")


def summary(rows: list) -> dict:
    """The growth figures of the record's rows (each computed only when its columns are there)."""
    first, last = rows[0], rows[-1]
    span = (last["docs"] - first["docs"]) / PER_DOCS
    out = {"per_docs": PER_DOCS}
    if span <= 0:
        return out
    if all("pipe_trimmed" in r and "spacy_trimmed" in r for r in (first, last)):
        pipe = last["pipe_trimmed"] - first["pipe_trimmed"]
        strings = last["strings"] - first["strings"]
        out.update(spacy_growth_trimmed=round(last["spacy_trimmed"] - first["spacy_trimmed"], 1),
                   pipe_growth_trimmed=round(pipe, 1), mib_per_10k_docs_distinct=round(pipe / span),
                   new_strings_per_10k_docs=int(round(strings / span, -4)),
                   bytes_per_string=int(round(pipe * 2 ** 20 / strings, -1)),
                   gap_range=[round(min(r["gap"] for r in rows)), round(max(r["gap"] for r in rows))])
    if "fixed_vocabulary_trimmed" in first:
        fixed = [r["fixed_vocabulary_trimmed"] for r in rows]
        rss = [r["fixed_vocabulary_rss"] for r in rows]
        out.update(fixed_vocabulary_trimmed=[min(fixed), max(fixed)],
                   fixed_mib_per_10k_docs=round((fixed[-1] - fixed[0]) / span, 1),
                   fixed_rss_range=[int(round(min(rss), -1)), int(round(max(rss), -1))])
    return out


def record(counter, args, argv) -> dict:
    """The record docs/results/memory.json with this run's columns, merged into the one at --out."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import result_record
    import spacy

    from spacy_elmo.bilm.chars import TOKEN_CACHE_SIZE

    prefix = columns(args)
    model = result_record.shipped_model() if args.model is None else {"name": args.model}
    machine = result_record.machine(threads=args.threads, spacy=spacy.__version__)
    old = {}
    if os.path.isfile(args.out):
        with open(args.out, encoding="utf-8") as f:
            old = json.load(f)
    same = old.get("model") == model and (old.get("machine") or {}).get("cpu") == machine["cpu"]
    rows = {r["docs"]: r for r in old.get("rows", [])} if same else {}
    for i, (docs, rss, trimmed) in enumerate(counter.rows):
        row = rows.setdefault(docs, {"docs": docs})
        row.update({f"{prefix}_rss": rss, f"{prefix}_trimmed": trimmed})
        if prefix == "pipe":
            row["strings"] = counter.string_counts[i]
        if "pipe_trimmed" in row and "spacy_trimmed" in row:
            row["gap"] = round(row["pipe_trimmed"] - row["spacy_trimmed"], 1)
    rows = [rows[d] for d in sorted(rows)]
    commands = (old.get("commands", []) if same else []) + [result_record.command("benchmarks/bench_memory.py", argv)]
    kept = {k: old[k] for k in ("tracemalloc",) if same and k in old}
    return {"what": f"VmRSS (MiB) of a streaming pipeline over {args.docs:,} docs: the elmo pipeline and spaCy alone "
                    "on docs whose words never repeat, and the pipeline on a fixed 20,000-word vocabulary; "
                    "'trimmed' after malloc_trim(0)",
            "model": model, "machine": machine,
            "code_path": f"nlp.pipe over the elmo component, store '{args.store}', float32 (OneDnnPath"
                         f"{' with bucketed row counts' if not args.no_buckets else ''}, bilm/onednn.py)",
            "commands": list(dict.fromkeys(commands)), "docs_words": "10-30 lower-case words of 1-15 letters",
            "rows": rows, "summary": {**summary(rows), **kept, "char_cache_entries": TOKEN_CACHE_SIZE}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100000)
    ap.add_argument("--every", type=int, default=10000)
    ap.add_argument("--path", choices=["pipe", "bilm", "spacy"], default="pipe")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--store", default="all", choices=["all", "average", "top", "none"])
    ap.add_argument("--model", default=None, help="packaged model name or directory (default: the packaged one)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--text", default=None, help="read docs from this text file (.gz ok) instead")
    ap.add_argument("--distinct", action="store_true", help="every token a word never seen before")
    ap.add_argument("--no-buckets", action="store_true", help="oneDNN row bucketing off (the old behaviour)")
    ap.add_argument("--trim", action="store_true", help="also report RSS after malloc_trim(0)")
    ap.add_argument("--json", action="store_true", help="print one JSON line at the end, nothing else")
    ap.add_argument("--out", help="write this run's columns into the record here (docs/results/memory.json)")
    args = ap.parse_args(argv)
    if args.out and not args.trim:
        ap.error("--out records RSS and trimmed RSS: add --trim")
    if args.out:
        columns(args)

    import torch

    from spacy_elmo.bilm import onednn

    torch.set_num_threads(args.threads)
    if args.no_buckets:
        onednn.set_row_buckets(False)
    if args.text and args.distinct:
        ap.error("--text and --distinct exclude each other")
    docs = file_docs(args.text) if args.text else (distinct_docs if args.distinct else synthetic_docs)(args.seed)
    counter = Checkpoints(args.every, args.docs, args.trim, args.json)
    if not args.json:
        source = args.text or ("distinct" if args.distinct else "synthetic")
        print(f"# path={args.path} batch_size={args.batch_size} store={args.store} threads={args.threads} "
              f"row_buckets={not args.no_buckets} docs={source} torch={torch.__version__}")
    try:
        (run_bilm if args.path == "bilm" else run_pipe)(docs, args, counter)
    except Checkpoints.Done:
        pass
    rows = counter.rows
    growth = rows[-1][1] - rows[0][1] if rows else 0.0
    pct = 100.0 * growth / rows[0][1] if rows else 0.0
    if args.json:
        print(json.dumps({"checkpoints": rows, "growth_mib": round(growth, 1), "growth_pct": round(pct, 2),
                          "path": args.path, "row_buckets": not args.no_buckets, "malloc_trim": counter.trimmed}))
    elif len(rows) > 1:
        print(f"# growth from {rows[0][0]} to {rows[-1][0]} docs: {growth:+.1f} MiB ({pct:+.2f}%)")
    if args.out:
        import result_record

        result_record.write(args.out, record(counter, args, argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
