"""What do the contextual-vector hooks cost? ``nlp.pipe`` throughput with ``vectors`` unset vs
``"top"``, and the cost of reading the vectors afterwards.

    python benchmarks/bench_vector_hooks.py [--texts 500] [--repeats 3] [--model en_elmo_small]

Texts: the first N sentences of UD EWT dev (``$SPACY_ELMO_SHARED``), detokenised by their
``# text =`` line. The two settings run alternately, ``repeats`` times each, same process, so
drift on a shared machine hits both; prints words/s per run and the median, then the time to
read ``token.vector`` for every token and ``doc.vector`` / ``doc.similarity`` for every Doc, and
the time ``set_vector_hooks`` (all the component adds per Doc) takes. ``--out PATH`` also writes
this script's row of docs/results/speed_pipeline.json (result_record.write_row).
"""
import argparse
import os
import statistics
import sys
import time

import spacy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import ewt_path  # noqa: E402


def texts(n: int):
    out = []
    with open(ewt_path("dev"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("# text = "):
                out.append(line[len("# text = "):].strip())
                if len(out) == n:
                    break
    return out


def build(model: str, vectors):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"name": model, "cache_mb": 0}, "vectors": vectors})
    nlp.initialize()
    return nlp


def run(nlp, data):
    t0 = time.perf_counter()
    docs = list(nlp.pipe(data, batch_size=64))
    return docs, time.perf_counter() - t0


def read_cost(docs):
    """Seconds to read every token vector, then every doc vector and a similarity per Doc."""
    t0 = time.perf_counter()
    for doc in docs:
        for token in doc:
            token.vector
    t1 = time.perf_counter()
    for a, b in zip(docs, docs[1:] + docs[:1]):
        a.vector
        a.similarity(b)
    return t1 - t0, time.perf_counter() - t1


def install_cost(docs) -> float:
    """Microseconds per Doc of what the component adds per Doc when ``vectors`` is set."""
    from spacy_elmo.pipeline.vector_hooks import set_vector_hooks

    widths = [int(doc._.elmo.width) for doc in docs]  # the component passes the width it has
    t0 = time.perf_counter()
    for doc, width in zip(docs, widths):
        set_vector_hooks(doc, "top", width)
    return (time.perf_counter() - t0) * 1e6 / len(docs)


def write_row(path: str, rates: dict, install_us: float, token_us: float, doc_ms: float, args, argv) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import result_record
    import torch

    medians = {name: statistics.median(values) for name, values in rates.items()}
    row = {"what": "vectors = 'top' hooks", "install_us_per_doc": round(install_us, 1),
           "read_us_per_token": round(token_us, 1), "doc_vector_and_similarity_ms": round(doc_ms, 2),
           "pipe_words_s_median": {k: round(v) for k, v in medians.items()},
           "pipe_top_over_unset": round(medians["top"] / medians["unset"], 3), "texts": args.texts,
           "repeats": args.repeats, "threads": torch.get_num_threads()}
    result_record.write_row(path, "benchmarks/bench_vector_hooks.py", row, result_record.model_identity(args.model),
                            argv)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default="en_elmo_small")
    ap.add_argument("--out", help="also write this script's row here (docs/results/speed_pipeline.json)")
    args = ap.parse_args(argv)
    data = texts(args.texts)
    pipes = {"unset": build(args.model, None), "top": build(args.model, "top")}
    for nlp in pipes.values():
        run(nlp, data[:20])  # warm up
    rates = {name: [] for name in pipes}
    for _ in range(args.repeats):
        for name, nlp in pipes.items():
            docs, seconds = run(nlp, data)  # the last run is "top": its Docs have the hooks
            words = sum(len(d) for d in docs)
            rates[name].append(words / seconds)
    for name, values in rates.items():
        print(f"vectors={name:6} words/s per run: {', '.join(f'{v:,.0f}' for v in values)}; "
              f"median {statistics.median(values):,.0f}")
    install_us = install_cost(docs)
    print(f"installing the hooks: {install_us:.1f} us/doc")
    token_s, doc_s = read_cost(docs)
    print(f"{len(data)} texts, {words:,} words: reading every token.vector {token_s * 1e6 / words:.1f} us/token; "
          f"doc.vector + doc.similarity {doc_s * 1e3 / len(data):.2f} ms/doc")
    if args.out:
        write_row(args.out, rates, install_us, token_s * 1e6 / words, doc_s * 1e3 / len(data), args,
                  sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
