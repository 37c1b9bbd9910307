"""The release rule of the embedded default model: may a candidate biLM replace ``en_elmo_small``?

    python dev/release_gate.py CANDIDATE --run RUN_DIR [--shipped en_elmo_small]
        [--demo-candidate DIR --demo-shipped DIR] [--json OUT.json]

CANDIDATE: a model directory as it would ship (e.g. written by ``dev/ship_default_model.py`` under
a staging name, float16 rounding included). RUN_DIR: the candidate's pretraining directory, whose
held-out split (its corpus cache) scores both models on the same text. ``--demo-*``: the root of a
checkout in which ``spacy project run demo`` ran with that biLM (its ``training/demo`` and
``corpus/demo``). The rule, every part on measurements printed here:

- perplexity: the candidate's full held-out perplexity is at least 3% below the shipped model's;
- senses (non-inferiority): on WiC train, 10-fold threshold CV, the 95% paired-bootstrap interval
  of candidate minus shipped has a lower bound >= -1.0 point, for the top layer and for the layer
  average; on the blind sense set (tests/data/senses_blind.json) the top layer's 1-NN accuracy
  (mean over its words) is at most 0.05 below the shipped model's;
- downstream: the demo's dev UPOS accuracy and CoNLL-2003 F1 with the candidate are not lower
  than with the shipped model by more than their noise, taken as the 95% paired-bootstrap interval
  over the dev sentences (both runs' pipelines tag the same 1,000 sentences): the upper bound of
  candidate minus shipped must be >= 0. Training-seed noise comes on top of it and is not counted;
- size: the candidate's folder is at most 30 MB.
Exit status 0 if all parts pass, 1 otherwise.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "dev"))  # dev/shared_data.py

PPL_GAIN = 0.03
WIC_MARGIN = -1.0
NN_MARGIN = 0.05
LIMIT_MB = 30
N_RESAMPLES = 2000


def heldout(run_dir: str, shipped: str, candidate: str) -> dict:
    """Full held-out perplexity of both models on the run's held-out split."""
    from spacy_elmo.pretrain.perplexity import run_scorer

    corpus, score_c = run_scorer(run_dir, candidate)
    _, score_s = run_scorer(run_dir, shipped)
    c, s = score_c(corpus["heldout"]), score_s(corpus["heldout"])
    return {"candidate": c, "shipped": s, "ratio": c["perplexity"] / s["perplexity"],
            "pass": c["perplexity"] <= (1 - PPL_GAIN) * s["perplexity"]}


def wic(shipped_bilm, candidate_bilm) -> dict:
    """WiC dev and train-CV of both, candidate minus shipped per view (probe.wic.compare)."""
    from shared_data import wic_dir

    from spacy_elmo.probe.views import AVERAGE, top_view
    from spacy_elmo.probe.wic import compare, wic_scores

    directory = wic_dir()
    diff = compare(wic_scores(candidate_bilm, directory, items=True), wic_scores(shipped_bilm, directory, items=True))
    checked = {"top": diff[top_view(diff)], "average": diff[AVERAGE]}
    return {"views": diff, "pass": all(d["train_cv"]["low"] >= WIC_MARGIN for d in checked.values())}


def blind_nn(bilm) -> dict:
    """Top-layer 1-NN accuracy per word of the blind sense set, and their mean."""
    import spacy

    from spacy_elmo.probe.senses import sense_scores, word_vectors

    words = json.loads((ROOT / "tests" / "data" / "senses_blind.json").read_text(encoding="utf-8"))["words"]
    tokenizer = spacy.blank("en").tokenizer
    out = {}
    for word, entry in words.items():
        sentences = [s for group in entry["sentences"] for s in group]
        labels = [k for k, group in enumerate(entry["sentences"]) for _ in group]
        out[word] = sense_scores(word_vectors(bilm, tokenizer, sentences, word)[:, -1], labels)[2]
    return {"words": out, "mean": float(numpy.mean(list(out.values())))}


def _tag_counts(nlp, docs):
    """(n_sentences, 2): correct and all tokens per gold sentence (gold tokenisation)."""
    from spacy.tokens import Doc

    preds = nlp.pipe(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d])
                     for d in docs)
    return numpy.array([[sum(p.tag_ == g.tag_ for p, g in zip(pred, gold)), len(gold)]
                        for pred, gold in zip(preds, docs)], dtype=float)


def _ent_counts(nlp, docs):
    """(n_sentences, 3): true positives, predicted and gold entities per sentence."""
    from spacy.tokens import Doc

    preds = nlp.pipe(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d])
                     for d in docs)
    rows = []
    for pred, gold in zip(preds, docs):
        p = {(e.start, e.end, e.label_) for e in pred.ents}
        g = {(e.start, e.end, e.label_) for e in gold.ents}
        rows.append([len(p & g), len(p), len(g)])
    return numpy.array(rows, dtype=float)


def _score(counts, kind):
    if kind == "tag":
        return 100 * counts[..., 0] / counts[..., 1]
    tp, pred, gold = counts[..., 0], counts[..., 1], counts[..., 2]
    return 100 * 2 * tp / numpy.maximum(pred + gold, 1)


def paired_bootstrap(a: numpy.ndarray, b: numpy.ndarray, kind: str, seed: int = 0) -> dict:
    """Score of a minus score of b (points) over per-sentence count rows, and the 95% percentile
    interval over sentence resamples (the same resample for both: paired)."""
    rng = numpy.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(N_RESAMPLES, len(a)))
    diffs = _score(a[idx].sum(1), kind) - _score(b[idx].sum(1), kind)
    low, high = numpy.percentile(diffs, [2.5, 97.5])
    return {"candidate": float(_score(a.sum(0), kind)), "shipped": float(_score(b.sum(0), kind)),
            "difference": float(_score(a.sum(0), kind) - _score(b.sum(0), kind)),
            "low": float(low), "high": float(high)}


def demo(candidate_root: str, shipped_root: str) -> dict:
    """Paired comparison of the demo's ELMo tagger and CoNLL NER, trained with each biLM."""
    import spacy
    from spacy.tokens import DocBin

    out = {}
    for task, run, data, counts, kind in (("upos", "tagger-ewt-elmo", "ewt-dev", _tag_counts, "tag"),
                                          ("conll_f1", "ner-conll-elmo", "conll2003-dev", _ent_counts, "ent")):
        rows = []
        for root in (candidate_root, shipped_root):
            nlp = spacy.load(Path(root) / "training" / "demo" / run / "model-best")
            docs = list(DocBin().from_disk(Path(root) / "corpus" / "demo" / f"{data}.spacy").get_docs(nlp.vocab))
            rows.append(counts(nlp, docs))
        out[task] = paired_bootstrap(rows[0], rows[1], kind)
    return {"tasks": out, "pass": all(t["high"] >= 0 for t in out.values())}


def size_mb(model_dir: str) -> float:
    return sum(p.stat().st_size for p in Path(model_dir).iterdir() if p.is_file()) / 2 ** 20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidate")
    ap.add_argument("--run", required=True)
    ap.add_argument("--shipped", default=str(ROOT / "spacy_elmo" / "models" / "en_elmo_small"))
    ap.add_argument("--demo-candidate")
    ap.add_argument("--demo-shipped")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import torch

    from spacy_elmo.bilm import BiLM

    torch.set_num_threads(1)
    result = {}

    def part(name, value):  # each part is printed and saved as soon as it is measured
        result[name] = value
        print(f"{name}: {'pass' if value['pass'] else 'FAIL'}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")

    mb = size_mb(args.candidate)
    part("size", {"mb": mb, "pass": mb <= LIMIT_MB})
    if args.demo_candidate and args.demo_shipped:
        part("demo", demo(args.demo_candidate, args.demo_shipped))
    part("perplexity", heldout(args.run, args.shipped, args.candidate))
    shipped, candidate = BiLM.from_pretrained(args.shipped), BiLM.from_pretrained(args.candidate)
    part("wic", wic(shipped, candidate))
    nn_c, nn_s = blind_nn(candidate), blind_nn(shipped)
    part("blind_1nn", {"candidate": nn_c, "shipped": nn_s, "pass": nn_c["mean"] >= nn_s["mean"] - NN_MARGIN})
    result["pass"] = all(p["pass"] for p in result.values() if isinstance(p, dict)) and "demo" in result
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    _print(result)
    return 0 if result["pass"] else 1


def _print(r: dict) -> None:
    p = r["perplexity"]
    print(f"perplexity  {p['candidate']['perplexity']:.2f} vs {p['shipped']['perplexity']:.2f} "
          f"(ratio {p['ratio']:.3f}, need <= {1 - PPL_GAIN:.2f}): {'pass' if p['pass'] else 'FAIL'}")
    for view, d in r["wic"]["views"].items():
        cv = d["train_cv"]
        print(f"WiC {view:7} dev {d['a']:.1f} vs {d['b']:.1f} [{d['low']:+.1f}, {d['high']:+.1f}]   "
              f"train CV {cv['a']:.1f} vs {cv['b']:.1f} {cv['difference']:+.1f} [{cv['low']:+.1f}, {cv['high']:+.1f}]")
    print(f"WiC train CV top and average lower bounds >= {WIC_MARGIN}: {'pass' if r['wic']['pass'] else 'FAIL'}")
    b = r["blind_1nn"]
    print(f"blind 1-NN  {b['candidate']['mean']:.3f} vs {b['shipped']['mean']:.3f}: {'pass' if b['pass'] else 'FAIL'}")
    for task, t in r.get("demo", {}).get("tasks", {}).items():
        print(f"demo {task:8} {t['candidate']:.2f} vs {t['shipped']:.2f} {t['difference']:+.2f} "
              f"[{t['low']:+.2f}, {t['high']:+.2f}]")
    if "demo" in r:
        print(f"demo not lower beyond its noise: {'pass' if r['demo']['pass'] else 'FAIL'}")
    print(f"size {r['size']['mb']:.1f} MB: {'pass' if r['size']['pass'] else 'FAIL'}")
    print("release: " + ("yes" if r["pass"] else "no"))


if __name__ == "__main__":
    sys.exit(main())
