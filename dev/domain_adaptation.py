"""The measured example of continued pretraining: a biLM before and after a domain run.

    python dev/domain_adaptation.py RUN_DIR --before spacy_elmo/models/en_elmo_small \\
        --heldout wnut17=domain/wnut17_dev.txt --heldout ewt=domain/ewt_dev.txt \\
        [--seeds 0 1 2] [--out training/domain_ner] [--threads 1] [--json RECORD.json]

RUN_DIR is the output folder of `python -m spacy_elmo pretrain ... --training.init_from BEFORE`
(its `model/` is the tuned biLM). For each held-out text (one sentence per line, e.g. written by
`dev/domain_corpus.py` from a dev split) the script computes the perplexity of BEFORE and of the
tuned model with `spacy_elmo.pretrain.perplexity.perplexity` (the same tokenisation, and the same
softmax vocabulary: a warm start keeps the source's vocabulary, and the script stops if the two
`vocab.txt` differ, since perplexities over different vocabularies, with different words folded
into `<UNK>`, do not compare). Then it trains WNUT-17 NER per seed three times in the project's
full-data setting (configs/ner_base.cfg, and configs/ner_elmo.cfg with each frozen biLM;
`corpus/wnut17/{train,dev}.spacy` from `spacy project run convert-wnut`; max_steps 2000, patience
1000, eval_frequency 200, as docs/results/full_data.json) and scores `model-best` on dev with
`spacy evaluate --gold-preproc`. Runs already evaluated under --out are reused. ``--json`` writes
the record the docs quote: perplexities, F1 per seed with mean and standard deviation, and the
pretraining run's tokens, steps, speed, wall time, CPU, threads and schedule (from its meta.json
and config.cfg), and ``machine`` (``cpu``: the CPU's name and vector extensions, usable cores,
torch) of this run; no date. Run from the repository root.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import srsly

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demo_seeds import model_identity  # noqa: E402

NER_SETTING = {"max_steps": 2000, "patience": 1000, "eval_frequency": 200}
SCHEDULE = ("learning_rate", "warmup_steps", "decay_steps", "final_lr_fraction", "max_steps", "tokens_per_batch",
            "seed", "init_from")
DATA = {"train": "corpus/wnut17/train.spacy", "dev": "corpus/wnut17/dev.spacy"}


def ner_f1(label: str, model, seed: int, out: Path, threads: int) -> float:
    """Train and evaluate WNUT-17 NER once (``model`` None: the tok2vec baseline); dev F1 x 100."""
    name = f"ner-wnut-{label}-s{seed}"
    scores = out / f"{name}.json"
    if not scores.is_file():
        cfg = f"configs/ner_{'base' if model is None else 'elmo'}.cfg"
        train = [sys.executable, "-m", "spacy", "train", cfg, "--output", str(out / name),
                 "--paths.train", DATA["train"], "--paths.dev", DATA["dev"], "--gpu-id", "-1",
                 "--system.seed", str(seed)]
        train += [arg for key, value in NER_SETTING.items() for arg in (f"--training.{key}", str(value))]
        if model is not None:
            train += ["--components.elmo.model.name", str(model), "--components.elmo.model.threads", str(threads)]
        subprocess.run(train, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "spacy", "evaluate", str(out / name / "model-best"), DATA["dev"],
                        "--output", str(scores), "--gold-preproc", "--gpu-id", "-1"],
                       check=True, stdout=subprocess.DEVNULL)
    return 100 * json.loads(scores.read_text())["ents_f"]


def same_vocabulary(before: Path, after: Path) -> None:
    """Raises SystemExit unless both models' softmax vocabularies (vocab.txt) are the same list."""
    a, b = ((p / "vocab.txt").read_text(encoding="utf-8").split("\n") for p in (before, after))
    if a != b:
        raise SystemExit(f"{before / 'vocab.txt'} and {after / 'vocab.txt'} differ: perplexities over different "
                         "vocabularies do not compare; warm-start the run from BEFORE (it keeps its vocabulary)")


def perplexities(models: dict, texts: dict, threads: int) -> dict:
    """{text label: {model label: perplexity's dict}} for every held-out text and model."""
    from spacy_elmo.pretrain.perplexity import perplexity

    return {name: {label: perplexity(str(model), str(path), threads=threads) for label, model in models.items()}
            for name, path in texts.items()}


def spread(scores: list) -> dict:
    """Mean, standard deviation (None for one score), min and max of a list of scores."""
    return {"scores": scores, "mean": statistics.mean(scores),
            "sd": statistics.stdev(scores) if len(scores) > 1 else None, "min": min(scores), "max": max(scores)}


def run_facts(run_dir: Path) -> dict:
    """The pretraining run: tokens, steps, epochs, tokens/s, wall time, CPU, threads, code path and
    the schedule (from RUN_DIR/model/meta.json and RUN_DIR/config.cfg)."""
    from spacy_elmo.pretrain.config import load_config

    meta = srsly.read_json(run_dir / "model" / "meta.json")
    training = meta["training"]
    commands = training.get("commands") or []
    path = commands[-1].get("path", {}) if commands else {}
    cfg = load_config(run_dir / "config.cfg")
    schedule = {key: cfg["training"][key] for key in SCHEDULE}
    return {"tokens": training["tokens_seen"], "steps": training["steps"], "epochs": training.get("epochs_completed"),
            "tokens_per_second": training["tokens_per_second"], "minutes": training["wall_seconds"] / 60,
            "cpu": path.get("cpu"), "threads": path.get("threads"), "cells": path.get("cells"),
            "precision": path.get("precision"), "train_tokens": meta["corpus"]["train_tokens"],
            "corpus_files": meta["corpus"]["files"], "schedule": {**schedule, "dropout": cfg["model"]["dropout"]},
            "commands": [" ".join(c.get("command") or []) for c in commands]}


def machine() -> dict:
    """The CPU (name and vector extensions), its usable cores and torch that the perplexities and
    the NER runs used."""
    import torch

    from spacy_elmo.bilm.cpu_budget import cpu_name, usable_cpus

    return {"cpu": cpu_name(), "cpus": len(usable_cpus()[0]), "torch": torch.__version__}


def relative(record: dict, folder) -> dict:
    """``record`` with every ``FOLDER/`` prefix in its strings removed (None: unchanged)."""
    if folder is None:
        return record
    prefix = str(Path(folder).resolve()).rstrip("/") + "/"
    return json.loads(json.dumps(record).replace(prefix, ""))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, help="the continued-pretraining output folder (its model/ is the tuned biLM)")
    ap.add_argument("--before", type=Path, default=Path("spacy_elmo/models/en_elmo_small"))
    ap.add_argument("--heldout", action="append", default=[], metavar="LABEL=TEXT", help="held-out text file")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path, default=Path("training/domain_ner"))
    ap.add_argument("--threads", type=int, default=1, help="torch threads of perplexity and the biLM in NER")
    ap.add_argument("--json", type=Path, default=None, help="write the record here")
    ap.add_argument("--relative-to", type=Path, default=None,
                    help="write paths under this folder relative to it in the record "
                         "(e.g. the scratch folder of the data)")
    args = ap.parse_args(argv)
    after = args.run_dir / "model"
    same_vocabulary(args.before, after)
    texts = dict(spec.split("=", 1) for spec in args.heldout)
    ppl = perplexities({"before": args.before, "after": after}, texts, args.threads)
    print(json.dumps(ppl, indent=1), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    f1 = {"base": [], "before": [], "after": []}
    for seed in args.seeds:
        for label, model in (("base", None), ("before", args.before), ("after", after)):
            f1[label].append(ner_f1(label, model, seed, args.out, args.threads))
        print(f"seed {seed}: " + "; ".join(f"{k} {v[-1]:.2f}" for k, v in f1.items()), flush=True)
    diff = [a - b for a, b in zip(f1["after"], f1["before"])]
    record = {
        "what": "Continued pretraining of the shipped biLM on domain text: held-out perplexity before and after, "
                "and WNUT-17 NER dev F1 with the frozen biLM (tok2vec baseline, the shipped model, its tuned copy)",
        "model": model_identity(str(args.before)), "tuned": model_identity(str(after)),
        "pretraining": run_facts(args.run_dir), "machine": machine(),
        "heldout": {name: {"file": str(texts[name]), **values} for name, values in ppl.items()},
        "ner": {"data": "WNUT-17 train / dev (corpus/wnut17 from convert-wnut)", "setting": NER_SETTING,
                "config": "configs/ner_base.cfg, configs/ner_elmo.cfg (frozen biLM)", "seeds": args.seeds,
                **{label: spread(scores) for label, scores in f1.items()}, "after_minus_before": spread(diff)},
        "command": "python dev/domain_adaptation.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    print(json.dumps(record["ner"], indent=1))
    if args.json:
        srsly.write_json(args.json, relative(record, args.relative_to))


if __name__ == "__main__":
    main()
