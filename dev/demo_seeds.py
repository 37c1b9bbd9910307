"""The demo's ELMo gain over several seeds, for one or more biLMs in the same run.

    python dev/demo_seeds.py [LABEL=]MODEL ... [--task tagger|ner] [--seeds 0 1 2 3 4] [--out DIR]
                             [--json RECORD.json]

Trains the demo's baseline and, per MODEL, its ELMo pipeline once per seed, in the demo's setting
(`corpus/demo/*.spacy` from `spacy project run demo-subsets`; `demo_max_steps` and
`demo_eval_frequency` from `project.yml`; frozen biLM), evaluates each `model-best` on the demo dev subset with
`spacy evaluate --gold-preproc`, and prints the score of every run, the mean gain of each model
over the baseline of the same seed, and each model's mean paired difference from the first MODEL
(with its standard deviation and how many seeds it is positive in). One run's demo gain moves by a
few tenths of a UPOS point and a few F1 points with the seed, the CPU and the thread count (the
README's demo table); the mean over five seeds is what to compare.
LABEL (default: the model directory's name) names its runs under DIR; runs already evaluated
there are reused. ``--json`` writes the record the docs quote: every seed's scores, each model's
mean gain and its standard deviation over the seeds, the model (weights sha256, lineage tokens
from its meta.json) and the CPU. ``--docs-record OUT TAGGER.json NER.json`` merges the two tasks'
records into the one the README quotes (``docs/results/demo_seeds.json``: per component the
means, the gain's standard deviation and range over the seeds, every seed's scores), without
training. Run from the repository root; `python -m spacy` there imports that checkout's
`spacy_elmo`, so a registered name such as `en_elmo_small` means that checkout's model: pass paths.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import srsly

TASKS = {  # config stem, demo data, score key in spacy evaluate's output
    "tagger": ("tagger", "ewt", "tag_acc"),
    "ner": ("ner", "conll2003", "ents_f"),
}


def run_once(task: str, label: str, model, seed: int, out: Path, overrides=()) -> float:
    """Train and evaluate one demo pipeline (``model`` None: the tok2vec baseline; ``overrides``:
    more ``spacy train`` arguments, e.g. ``--paths.vectors DIR``); the dev score x 100."""
    stem, data, key = TASKS[task]
    name = f"{stem}-{label}-s{seed}"
    scores = out / f"{name}.json"
    if not scores.is_file():
        cfg = f"configs/{stem}_{'base' if model is None else 'elmo'}.cfg"
        demo = srsly.read_yaml("project.yml")["vars"]
        train = [sys.executable, "-m", "spacy", "train", cfg, "--output", str(out / name),
                 "--paths.train", f"corpus/demo/{data}-train.spacy", "--paths.dev", f"corpus/demo/{data}-dev.spacy",
                 "--gpu-id", "-1", "--training.max_steps", str(demo["demo_max_steps"]),
                 "--training.eval_frequency", str(demo["demo_eval_frequency"]), "--system.seed", str(seed)]
        if model is not None:
            train += ["--components.elmo.model.name", str(model)]
        train += list(overrides)
        subprocess.run(train, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "spacy", "evaluate", str(out / name / "model-best"),
                        f"corpus/demo/{data}-dev.spacy", "--output", str(scores), "--gold-preproc", "--gpu-id", "-1"],
                       check=True, stdout=subprocess.DEVNULL)
    return 100 * json.loads(scores.read_text())[key]


def labelled(specs: list) -> dict:
    """{label: model} from ``[LABEL=]MODEL`` arguments. Raises SystemExit on a repeated label."""
    named = {}
    for spec in specs:
        label, _, model = spec.rpartition("=") if "=" in spec else (Path(spec).name, "", spec)
        if label in named or label == "base":
            raise SystemExit(f"label {label!r} is used twice (or is 'base'): give each model LABEL=MODEL")
        named[label] = model
    return named


def summarize(base: list, models: dict) -> list:
    """Lines of the summary: per model its mean score and mean gain over ``base`` (same seeds, same
    order), and for every model after the first its paired difference from the first."""
    names = list(models)
    lines = [f"baseline: mean {statistics.mean(base):.2f}"]
    for name in names:
        gains = [m - b for m, b in zip(models[name], base)]
        lines.append(f"{name}: mean {statistics.mean(models[name]):.2f}, gain {statistics.mean(gains):+.2f}")
    for name in names[1:]:
        diff = [a - b for a, b in zip(models[names[0]], models[name])]
        sd = statistics.stdev(diff) if len(diff) > 1 else float("nan")
        lines.append(f"{names[0]} - {name}: {statistics.mean(diff):+.2f} (sd {sd:.2f}; "
                     f"positive in {sum(d > 0 for d in diff)} of {len(diff)} seeds)")
    return lines


def model_identity(model: str) -> dict:
    """Which weights a run used: the name, the weights' sha256 and the lineage tokens of meta.json."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spacy_elmo.bilm.integrity import sha256
    from spacy_elmo.hub.resolve import resolve

    folder = Path(resolve(model)) if not Path(model).is_dir() else Path(model)
    meta = srsly.read_json(folder / "meta.json") if (folder / "meta.json").is_file() else {}
    training = meta.get("training") or {}
    return {"name": folder.name, "weights_sha256": sha256(str(folder / "weights.hdf5")),
            "lineage_tokens": training.get("lineage_tokens", training.get("tokens_seen"))}


def machine() -> dict:
    """The CPU and torch the runs used (a speed or a score can depend on both)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spacy_elmo.bilm.cpu_budget import cpu_name, usable_cpus

    return {"cpu": cpu_name(), "cpus": len(usable_cpus()[0]), "torch": torch.__version__,
            "threads": "the configs' threads = \"auto\""}


def seed_record(task: str, seeds: list, base: list, models: dict, identities: dict, where=None) -> dict:
    """The JSON record of one run of this script (scores x 100, per seed and summarized); ``where``:
    :func:`machine`'s dict (default: the CPU running the script)."""
    rows = {}
    for label, scores in models.items():
        gains = [m - b for m, b in zip(scores, base)]
        rows[label] = {"model": identities[label], "scores": scores, "gains": gains,
                       "elmo_mean": statistics.mean(scores), "gain_mean": statistics.mean(gains),
                       "gain_sd": statistics.stdev(gains) if len(gains) > 1 else None}
    return {"task": task, "score": TASKS[task][2], "seeds": seeds, "baseline": base,
            "baseline_mean": statistics.mean(base), "models": rows, "machine": where or machine()}


DATA = {"tagger": "UD English-EWT, UPOS accuracy", "ner": "CoNLL-2003, F1"}


def docs_record(records: list, label: str = "en_elmo_small") -> dict:
    """The README's record from per-task records of :func:`seed_record` (one model ``label``, the
    same machine in each): per component its seeds, the baseline, ELMo and gain means, the gain's
    sample standard deviation and its range over the seeds, and every seed's scores (x 100).
    Raises SystemExit when the records differ in model or CPU."""
    first = records[0]
    for other in records[1:]:
        if other["machine"] != first["machine"]:
            raise SystemExit(f"the task records differ in machine: {first['machine']} against {other['machine']}")
        if other["models"][label]["model"] != first["models"][label]["model"]:
            raise SystemExit(f"the task records were made with different weights of {label!r}")
    rows = []
    for rec in records:
        row = rec["models"][label]
        rows.append({"component": rec["task"], "data": DATA[rec["task"]], "seeds": rec["seeds"],
                     "baseline_mean": rec["baseline_mean"],
                     "elmo_mean": row["elmo_mean"], "gain_mean": row["gain_mean"], "gain_sd": row["gain_sd"],
                     "gain_min": min(row["gains"]), "gain_max": max(row["gains"]),
                     "baseline": rec["baseline"], "elmo": row["scores"], "gains": row["gains"]})
    return {"model": first["models"][label]["model"], "machine": first["machine"], "rows": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="[LABEL=]biLM directory or registered name")
    ap.add_argument("--task", choices=sorted(TASKS), default="tagger")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", type=Path, default=Path("training/demo_seeds"))
    ap.add_argument("--json", type=Path, default=None, help="write the record of this run here")
    ap.add_argument("--docs-record", type=Path, default=None,
                    help="merge the task records given as MODELS into this record (no training)")
    args = ap.parse_args(argv)
    if args.docs_record:
        merged = docs_record([srsly.read_json(path) for path in args.models])
        base = srsly.read_json(args.docs_record) if args.docs_record.is_file() else {}
        srsly.write_json(args.docs_record, {**base, **merged})  # keeps the record's prose fields
        return
    args.out.mkdir(parents=True, exist_ok=True)
    named = labelled(args.models)
    base, models = [], {label: [] for label in named}
    for seed in args.seeds:
        base.append(run_once(args.task, "base", None, seed, args.out))
        for label, model in named.items():
            models[label].append(run_once(args.task, label, model, seed, args.out))
        print(f"seed {seed}: baseline {base[-1]:.2f}; " + "; ".join(f"{k} {v[-1]:.2f}" for k, v in models.items()),
              flush=True)
    print("\n".join(summarize(base, models)))
    if args.json:
        identities = {label: model_identity(model) for label, model in named.items()}
        srsly.write_json(args.json, seed_record(args.task, args.seeds, base, models, identities))


if __name__ == "__main__":
    main()
