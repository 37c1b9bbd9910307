"""The demo tagger with a distilled table as spaCy static vectors, against the plain tok2vec
baseline and against ELMo, in the demo's setting, in one run.

    SPACY_ELMO_SHARED=../shared nice -n 5 python dev/static_tagger.py [--view average]
        [--max-lines 10000] [--threads 1] [--model spacy_elmo/models/en_elmo_small] [--seed 0]
        [--with-both] [--workdir training/static_tagger] [--json docs/results/static_tagger.json]

1. distil: ``python -m spacy_elmo static-vectors MODEL CORPUS WORKDIR/table`` with ``--view``
   (default ``average``, the view of the record), ``--min-count 5``, ``--max-contexts 100``, on
   the first ``--max-lines`` lines of each file of ``$SPACY_ELMO_SHARED/data/lm/*.txt.gz`` (the
   pretraining text of ``en_elmo_small``); its wall time and peak RSS (the child's ``ru_maxrss``)
   go to ``WORKDIR/distil.json``.
2. train and evaluate, as ``dev/demo_seeds.py`` does (``corpus/demo/ewt-*.spacy`` from
   ``spacy project run demo-subsets``; ``demo_max_steps``, ``demo_eval_frequency`` from
   ``project.yml``; ``spacy evaluate --gold-preproc`` of ``model-best``): ``configs/tagger_base.cfg``
   (baseline); the same with ``--paths.vectors WORKDIR/table/spacy`` (``[initialize] vectors``)
   and ``include_static_vectors = true`` in its MultiHashEmbed (static); ``configs/tagger_elmo.cfg``
   (ELMo: the tagger's scalar mix of the frozen biLM, concatenated with its MultiHashEmbed); with
   ``--with-both``, ELMo with the table in its MultiHashEmbed too. Same seed, same steps.
3. the record (``--json``): UPOS accuracy of each run on the demo dev subset (x 100), each run's
   wall time, the table (view, words, corpus slice and its sha256, its card's counts and rates),
   the distillation's wall time and peak RSS, the model (weights sha256, lineage tokens), the CPU.

Stages already done in WORKDIR are reused (runs already evaluated, a table with its distil.json).
Run from the repository root with ``PYTHONPATH`` = the root.
"""
import argparse
import glob
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import srsly

DEV = Path(__file__).resolve().parent
sys.path.insert(0, str(DEV))
from demo_seeds import model_identity, run_once  # noqa: E402
from shared_data import shared_dir  # noqa: E402

STATIC = "--components.tok2vec.model.embed.include_static_vectors"
STATIC_IN_ELMO = "--components.tagger.model.tok2vec.embed.embed.include_static_vectors"


def distil(args) -> dict:
    """Distil the table into WORKDIR/table once; {"seconds", "peak_rss_mb", "command", "card"}."""
    done = args.workdir / "distil.json"
    if done.is_file():
        return srsly.read_json(done)
    files = sorted(glob.glob(str(shared_dir() / "data" / "lm" / "*.txt.gz")))
    if not files:
        raise SystemExit(f"no *.txt.gz under {shared_dir() / 'data' / 'lm'}: set SPACY_ELMO_SHARED")
    cmd = [sys.executable, "-m", "spacy_elmo", "static-vectors", args.model, *files, str(args.workdir / "table"),
           "--view", args.view, "--max-lines", str(args.max_lines), "--threads", str(args.threads), "--quiet"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = {"seconds": seconds, "peak_rss_mb": rss, "threads": args.threads,
              "command": "python -m spacy_elmo static-vectors MODEL $SPACY_ELMO_SHARED/data/lm/*.txt.gz TABLE "
                         f"--view {args.view} --max-lines {args.max_lines} --threads {args.threads}",
              "card": srsly.read_json(args.workdir / "table" / "card.json")}
    srsly.write_json(done, result)
    return result


def timed_run(label: str, model, overrides: list, args) -> dict:
    """One demo run (:func:`demo_seeds.run_once`) and its wall time, kept beside its scores
    (``tagger-LABEL-sSEED.seconds.json``) so that a re-run that reuses the run reports it too."""
    name = args.workdir / f"tagger-{label}-s{args.seed}"
    timing = Path(f"{name}.seconds.json")
    fresh = not Path(f"{name}.json").is_file()
    start = time.perf_counter()
    score = run_once("tagger", label, model, args.seed, args.workdir, overrides)
    if fresh:
        srsly.write_json(timing, {"seconds": time.perf_counter() - start})
    return {"upos": score, "seconds": srsly.read_json(timing)["seconds"] if timing.is_file() else None}


def coverage(table: Path, corpora: dict) -> dict:
    """{name: {"tokens", "token_coverage", "type_coverage"}}: the share in percent of the tokens
    (and of the distinct words) of each ``.spacy`` corpus that have a row in the table. spaCy's StaticVectors
    looks a token up by its exact text (ORTH); a token without a row gets a zero vector."""
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.load(table)
    rows = nlp.vocab.vectors.key2row
    out = {}
    for name, path in corpora.items():
        words = [t.orth for doc in DocBin().from_disk(path).get_docs(nlp.vocab) for t in doc]
        types = set(words)
        out[name] = {"tokens": len(words), "token_coverage": 100 * sum(w in rows for w in words) / len(words),
                     "type_coverage": 100 * sum(w in rows for w in types) / len(types)}
    return out


def table_record(d: dict) -> dict:
    card = d["card"]
    shared = str(shared_dir())
    files = [{**f, "path": os.path.relpath(f["path"], shared)} for f in card["corpus"]["files"]]
    return {"view": card["view"], "vectors_name": card["vectors_name"], "dim": card["model"]["dim"],
            "words": card["counts"]["words"], "counts": card["counts"],
            "corpus": {"slice": f"the first {card['corpus']['max_lines']:,} lines of each file of "
                                "$SPACY_ELMO_SHARED/data/lm (the biLM's pretraining text)",
                       "lines": card["counts"]["records"], "tokens": card["counts"]["tokens"],
                       "sha256_of_whole_files": card["corpus"]["sha256"], "files": files},
            "distil_seconds": d["seconds"], "distil_peak_rss_mb": d["peak_rss_mb"], "threads": d["threads"],
            "tokens_per_second": card["tokens_per_second"], "bilm_tokens_per_second": card["bilm_tokens_per_second"],
            "command": d["command"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="spacy_elmo/models/en_elmo_small")
    ap.add_argument("--view", default="average", help="the table's view (static-vectors --view)")
    ap.add_argument("--max-lines", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--with-both", action="store_true", help="also ELMo with the table in its MultiHashEmbed")
    ap.add_argument("--workdir", type=Path, default=Path("training/static_tagger"))
    ap.add_argument("--json", type=Path, default=None, help="write the record of this run here")
    args = ap.parse_args(argv)
    from spacy_elmo.bilm.cpu_budget import cpu_name

    args.workdir.mkdir(parents=True, exist_ok=True)
    load = [round(x, 2) for x in os.getloadavg()]
    d = distil(args)
    vectors = ["--paths.vectors", str(args.workdir / "table" / "spacy")]
    runs = {"baseline": timed_run("base", None, [], args),
            "static": timed_run("static", None, vectors + [STATIC, "true"], args),
            "elmo": timed_run("elmo", args.model, [], args)}
    if args.with_both:
        runs["elmo_static"] = timed_run("elmo-static", args.model, vectors + [STATIC_IN_ELMO, "true"], args)
    for name, r in runs.items():
        print(f"{name}: UPOS {r['upos']:.2f}" + (f" ({r['seconds']:.0f} s)" if r["seconds"] else ""))
    demo = srsly.read_yaml("project.yml")["vars"]
    record = {
        "what": "The demo tagger (UD English-EWT UPOS) with a table distilled from the biLM as spaCy static "
                "vectors, against the plain tok2vec baseline and against ELMo: same seed, same steps",
        "model": model_identity(args.model),
        "setting": f"spacy project run demo's data and steps: demo_train_sents {demo['demo_train_sents']}, "
                   f"demo_dev_sents {demo['demo_dev_sents']}, demo_max_steps {demo['demo_max_steps']}, "
                   f"demo_eval_frequency {demo['demo_eval_frequency']}; seed {args.seed}; frozen biLM; "
                   "dev scores from spacy evaluate --gold-preproc",
        "command": "python dev/static_tagger.py " + " ".join((argv if argv is not None else sys.argv[1:])),
        "machine": {"cpu": cpu_name(), "cpus": os.cpu_count(), "shared": "with other jobs",
                    "load_average_at_start": load},
        "table": table_record(d),
        "table_coverage": coverage(args.workdir / "table" / "spacy", {
            split: Path(f"corpus/demo/ewt-{split}.spacy") for split in ("train", "dev")}),
        "runs": runs,
        "gains": {name: r["upos"] - runs["baseline"]["upos"] for name, r in runs.items() if name != "baseline"},
    }
    record["static_share_of_elmo_gain_pct"] = 100 * record["gains"]["static"] / record["gains"]["elmo"]
    if args.json:
        srsly.write_json(args.json, record)


if __name__ == "__main__":
    main()
