"""The pipeline's tax over the raw biLM: ``nlp.pipe`` against ``BiLM.embed_sentences`` on the same
sentences, and the latency of ``nlp(one sentence)``.

    python benchmarks/bench_pipeline.py [--sentences 500] [--repeats 7] [--latency 200] [--model en_elmo_small]

Sentences: UD English-EWT dev (``$SPACY_ELMO_SHARED``), their CoNLL-U word forms (what both sides
read), in file order.

1. Throughput (``store = "all"``, float32): ``nlp.pipe`` over Docs made from the words (so no
   tokenizer; ``Doc`` construction is outside the timed region) against
   ``bilm.embed_sentences(sentences, batch_size=64)`` (the component's biLM, the same object).
   Two pipe settings: ``nlp.pipe(docs)`` (spaCy's default batch of ``nlp.batch_size`` = 1000
   Docs: the component sees all the sentences at once, as embed_sentences does), and
   ``batch_size=64``, timed against embed_sentences called on the same 64-sentence chunks (the
   batch composition the component gets). Each pair runs back to back, in alternating order,
   ``--repeats`` times; printed: the median tokens/s of each and the median of the per-pair
   ratios pipe / embed_sentences (tokens/s), by wall time and by this process's CPU time (on a
   core shared with other jobs the wall time mostly measures them: compare the CPU figures).
2. Latency: for each of the first ``--latency`` sentences (by the ``# text =`` line, through the
   tokenizer), ``nlp(text)`` and then ``bilm.embed_sentences([words])`` on the same words;
   p50 / p99 per call in ms (wall and CPU) and the tokens/s of each loop.

One JSON object per part. Run it with the thread count you want to report
(``OMP_NUM_THREADS=1``); on a shared machine only the ratios of one run mean much.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy
import spacy
import torch
from spacy.tokens import Doc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dev"))  # dev/shared_data.py
from shared_data import ewt_path  # noqa: E402


def ewt_dev(n: int):
    """(texts, word lists) of the first n sentences of EWT dev."""
    texts, sents, cur = [], [], []
    with open(ewt_path("dev"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# text = "):
                texts.append(line[len("# text = "):])
            elif not line:
                if cur:
                    sents.append(cur)
                    cur = []
                    if len(sents) == n:
                        break
            elif not line.startswith("#"):
                cols = line.split("\t")
                if "-" not in cols[0] and "." not in cols[0]:
                    cur.append(cols[1])
    return texts[:n], sents[:n]


def timed(fn):
    """(wall seconds, CPU seconds of this process) of ``fn()``."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def throughput(nlp, bilm, sents, repeats: int) -> dict:
    n_tok = sum(map(len, sents))
    chunks = [sents[i: i + 64] for i in range(0, len(sents), 64)]
    settings = {
        "pipe_default": (lambda docs: list(nlp.pipe(docs)), lambda: bilm.embed_sentences(sents, batch_size=64)),
        "pipe_64": (lambda docs: list(nlp.pipe(docs, batch_size=64)),
                    lambda: [bilm.embed_sentences(c, batch_size=64) for c in chunks]),
    }
    out = {"tokens": n_tok, "sentences": len(sents)}
    for name, (pipe, embed) in settings.items():
        rows = []  # (pipe wall, pipe cpu, embed wall, embed cpu) per repeat
        for r in range(repeats):
            docs = [Doc(nlp.vocab, words=s) for s in sents]
            if r % 2:
                te = timed(embed)
                tp = timed(lambda: pipe(docs))
            else:
                tp = timed(lambda: pipe(docs))
                te = timed(embed)
            rows.append((*tp, *te))
        res = {}
        for clock, (p_i, e_i) in (("wall", (0, 2)), ("cpu", (1, 3))):
            res[clock] = {"pipe_tok_s": round(statistics.median(n_tok / row[p_i] for row in rows)),
                          "embed_sentences_tok_s": round(statistics.median(n_tok / row[e_i] for row in rows)),
                          "ratio_median": round(statistics.median(row[e_i] / row[p_i] for row in rows), 3),
                          "ratios": [round(row[e_i] / row[p_i], 3) for row in rows]}
        out[name] = res
    return out


def latency(nlp, bilm, texts) -> dict:
    words = [[t.text for t in nlp.make_doc(text) if not t.is_space] for text in texts]
    for text, w in zip(texts[:10], words[:10]):  # warm-up
        nlp(text)
        bilm.embed_sentences([w])
    t_nlp, t_bilm = [], []
    for text, w in zip(texts, words):
        t_nlp.append(timed(lambda: nlp(text)))
        t_bilm.append(timed(lambda: bilm.embed_sentences([w])))
    n_tok = sum(map(len, words))
    out = {"sentences": len(texts), "tokens": n_tok}
    for name, t in (("nlp(text)", t_nlp), ("embed_sentences([words])", t_bilm)):
        for clock, col in (("wall", 0), ("cpu", 1)):
            ms = numpy.array([x[col] for x in t]) * 1000
            out.setdefault(name, {})[clock] = {"p50_ms": round(float(numpy.percentile(ms, 50)), 2),
                                               "p99_ms": round(float(numpy.percentile(ms, 99)), 2),
                                               "tok_s": round(n_tok / (ms.sum() / 1000))}
    for clock in ("wall", "cpu"):
        out[f"p50_ratio_{clock}"] = round(out["nlp(text)"][clock]["p50_ms"]
                                          / out["embed_sentences([words])"][clock]["p50_ms"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--model", default="en_elmo_small")
    args = parser.parse_args()
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"name": args.model}, "store": "all"})
    nlp.initialize()
    bilm = nlp.get_pipe("elmo").bilm
    texts, sents = ewt_dev(max(args.sentences, args.latency))
    list(nlp.pipe([Doc(nlp.vocab, words=s) for s in sents[:64]]))  # warm-up: oneDNN primitives
    bilm.embed_sentences(sents[:64])
    print(json.dumps({"torch_threads": torch.get_num_threads(), "model": args.model}))
    print(json.dumps({"throughput": throughput(nlp, bilm, sents[: args.sentences], args.repeats)}), flush=True)
    if args.latency:
        print(json.dumps({"latency": latency(nlp, bilm, texts[: args.latency])}))


if __name__ == "__main__":
    main()
