"""How far ``precision = "bfloat16"`` moves a trained biLM's layers, and a tagger built on them.

    python dev/precision_check.py [MODEL] [--conllu PATH] [--tagger DIR] [--dev-spacy PATH]
                                  [--sentences N] [--threads 1] [--json]

1. Deviation: MODEL (default the packaged ``spacy_elmo.DEFAULT_MODEL``) embeds the EWT dev
   sentences (syntactic words of ../shared/data/ud_en_ewt/en_ewt-ud-dev.conllu, all 2,001 unless
   ``--sentences``) twice, ``BiLM(precision="float32")`` and ``BiLM(precision="bfloat16")``; for
   every token and layer, the cosine of the bfloat16 vector to the float32 one. Prints per
   layer the minimum, mean and the count below 0.999 (the acceptance bound), and the worst token
   (text, sentence, position, layer, cosine, its sentence).
2. Tagger (``--tagger``, default training/tagger-ewt-elmo/model-best when it exists; ``--tagger
   none`` skips): the trained pipeline loaded twice, its ``elmo`` component's precision set by a
   config override at load time, run over ``--dev-spacy`` (default corpus/ewt/dev.spacy, gold
   tokenisation as in training) and scored as ``spacy train`` does (``Scorer.score_token_attr``,
   "tag"); prints tag accuracy for each and the number of tokens whose predicted tag differs.

Both runs of a part happen in one process. The bfloat16 path needs a CPU with AVX512-BF16 or
AMX (elsewhere it falls back to float32 with a warning, and the deviation is 0).
``--out PATH`` also writes the record docs/results/precision_quality.json (the model's name,
lineage tokens and weights sha256, the CPU, each layer's smallest cosine, the tagger's scores).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..")
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from shared_data import ewt_path  # noqa: E402  (dev/shared_data.py, beside this script)

from spacy_elmo.probe.ewt import read_words  # noqa: E402

BOUND = 0.999


def deviation(model, sentences, batch_size=64):
    import numpy as np

    from spacy_elmo.bilm import BiLM

    f32 = BiLM.from_pretrained(model)
    bf16 = BiLM.from_pretrained(model, precision="bfloat16")
    t0 = time.perf_counter()
    ref = f32.embed_sentences(sentences, batch_size)
    t1 = time.perf_counter()
    low = bf16.embed_sentences(sentences, batch_size)
    t2 = time.perf_counter()
    L1 = f32.num_layers + 1
    per_layer = [[] for _ in range(L1)]
    worst = (2.0, None)
    for s, (r, o) in enumerate(zip(ref, low)):
        if r.shape[1] == 0:
            continue
        cos = (r * o).sum(-1) / np.maximum(np.linalg.norm(r, axis=-1) * np.linalg.norm(o, axis=-1), 1e-30)
        for layer in range(L1):
            per_layer[layer].append(cos[layer])
        layer, pos = np.unravel_index(int(np.argmin(cos)), cos.shape)
        if cos[layer, pos] < worst[0]:
            worst = (float(cos[layer, pos]), (s, int(pos), int(layer)))
    layers = []
    for layer, chunks in enumerate(per_layer):
        c = np.concatenate(chunks)
        layers.append(dict(layer=layer, min=float(c.min()), mean=float(c.mean()),
                           below_bound=int((c < BOUND).sum()), tokens=int(c.size)))
    s, pos, layer = worst[1]
    return dict(model=model, effective=bf16.effective_precision, sentences=len(sentences),
                tokens=sum(len(x) for x in sentences), seconds_float32=round(t1 - t0, 2),
                seconds_bfloat16=round(t2 - t1, 2), bound=BOUND, layers=layers,
                worst=dict(cosine=worst[0], text=sentences[s][pos], sentence=s, position=pos, layer=layer,
                           sentence_text=" ".join(sentences[s])),
                ok=all(x["below_bound"] == 0 for x in layers))


def tagger(path, dev_spacy):
    import spacy
    from spacy.scorer import Scorer
    from spacy.training import Corpus, Example

    out = {"pipeline": os.path.abspath(path), "dev": os.path.abspath(dev_spacy)}
    tags = {}
    # the setting sits in the [components.elmo.model] section, or flat in pipelines saved before it
    saved = spacy.util.load_config(os.path.join(path, "config.cfg"))
    sectioned = isinstance(saved["components"]["elmo"]["model"], dict)
    for precision in ("float32", "bfloat16"):
        setting = {"model": {"precision": precision}} if sectioned else {"precision": precision}
        nlp = spacy.load(path, config={"components": {"elmo": setting}})
        examples = list(Corpus(dev_spacy, gold_preproc=True)(nlp))
        t0 = time.perf_counter()
        docs = list(nlp.pipe((eg.predicted.copy() for eg in examples), batch_size=256))
        seconds = time.perf_counter() - t0
        scored = [Example(doc, eg.reference) for doc, eg in zip(docs, examples)]
        out[precision] = dict(tag_acc=Scorer.score_token_attr(scored, "tag")["tag_acc"],
                              effective=nlp.get_pipe("elmo").bilm.effective_precision, seconds=round(seconds, 1))
        tags[precision] = [t.tag_ for doc in docs for t in doc]
    out["tokens"] = len(tags["float32"])
    out["tags_differing"] = sum(a != b for a, b in zip(tags["float32"], tags["bfloat16"]))
    out["tag_acc_difference_points"] = 100 * (out["bfloat16"]["tag_acc"] - out["float32"]["tag_acc"])
    return out


def record(res: dict, argv) -> dict:
    """The record docs/results/precision_quality.json of one run's ``res`` (main's JSON)."""
    import result_record

    dev = res["deviation"]
    out = {"what": "bfloat16 against float32 layers of a trained biLM, and a tagger on it in both precisions",
           "model": result_record.model_identity(dev["model"]),
           "machine": result_record.machine(threads=res["threads"], bf16=res["bf16_capability"]),
           "code_path": f"BiLM(precision='bfloat16') (ran as {dev['effective']}): OneDnnBf16Path; float32: OneDnnPath",
           "command": result_record.command("dev/precision_check.py", argv),
           "data": f"{dev['sentences']:,} sentences of {os.path.basename(dev['conllu'])}, {dev['tokens']:,} tokens",
           "min_cosine": {f"layer_{x['layer']}": round(x["min"], 6) for x in dev["layers"]},
           f"tokens_below_{BOUND}": sum(x["below_bound"] for x in dev["layers"]),
           "bound": {"min_cosine": BOUND, "note": f"the bound checked: every token's cosine at least {BOUND} on "
                                                   "every layer"}}
    if "tagger" in res:
        t = res["tagger"]
        out["tagger"] = {"pipeline": os.path.relpath(t["pipeline"], REPO),
                         "tag_acc_float32": round(100 * t["float32"]["tag_acc"], 3),
                         "tag_acc_bfloat16": round(100 * t["bfloat16"]["tag_acc"], 3),
                         "tokens_changed": t["tags_differing"], "tokens": t["tokens"]}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None, help="packaged name or model directory (default en_elmo_small)")
    ap.add_argument("--conllu", default=str(ewt_path("dev")))
    ap.add_argument("--sentences", type=int, default=None)
    ap.add_argument("--tagger", default=os.path.join(REPO, "training", "tagger-ewt-elmo", "model-best"))
    ap.add_argument("--dev-spacy", default=os.path.join(REPO, "corpus", "ewt", "dev.spacy"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the record here (docs/results/precision_quality.json)")
    a = ap.parse_args(argv)

    import torch

    from spacy_elmo import DEFAULT_MODEL
    from spacy_elmo.bilm.precision import cpu_bf16_capability, cpu_name

    torch.set_num_threads(a.threads)
    res = dict(cpu=cpu_name(), bf16_capability=cpu_bf16_capability() or "none", torch=torch.__version__,
               threads=torch.get_num_threads())
    res["deviation"] = dev = deviation(a.model or DEFAULT_MODEL, read_words(a.conllu, a.sentences))
    dev["conllu"] = a.conllu
    if a.tagger != "none" and os.path.isdir(a.tagger):
        res["tagger"] = tagger(a.tagger, a.dev_spacy)
    if a.out:
        import result_record

        result_record.write(a.out, record(res, argv if argv is not None else sys.argv[1:]))
    if a.json:
        print(json.dumps(res))
        return 0
    print(f"{res['cpu']} (bf16: {res['bf16_capability']}), torch {res['torch']}, {res['threads']} thread(s)")
    print(f"{dev['model']}: {dev['sentences']} sentences, {dev['tokens']} tokens; bfloat16 ran as {dev['effective']} "
          f"({dev['seconds_float32']} s float32, {dev['seconds_bfloat16']} s bfloat16, one pass each)")
    print("layer  min cosine   mean cosine   tokens < 0.999")
    for x in dev["layers"]:
        print(f"{x['layer']:5d}  {x['min']:.6f}    {x['mean']:.7f}     {x['below_bound']} / {x['tokens']}")
    w = dev["worst"]
    print(f"worst token: {w['text']!r} (sentence {w['sentence']}, position {w['position']}, layer {w['layer']}): "
          f"cosine {w['cosine']:.6f}\n  in: {w['sentence_text']}")
    print(f"bound {BOUND} on every layer: {'met' if dev['ok'] else 'NOT met'}")
    if "tagger" in res:
        t = res["tagger"]
        print(f"tagger {t['pipeline']} on {t['dev']} ({t['tokens']} tokens):")
        for p in ("float32", "bfloat16"):
            print(f"  {p:9s} (ran as {t[p]['effective']}): tag_acc {100 * t[p]['tag_acc']:.3f}  ({t[p]['seconds']} s)")
        print(f"  difference {t['tag_acc_difference_points']:+.3f} points; "
              f"{t['tags_differing']} tokens tagged differently")
    return 0


if __name__ == "__main__":
    sys.exit(main())
