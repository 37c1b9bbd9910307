"""The project's report: a markdown table of dev scores and two PNG plots.

    python scripts/report.py METRICS_DIR REPORT.md PLOTS_DIR [--title TITLE] [--elmo-model NAME_OR_DIR]
                             [--training-dir TRAINING_DIR]

Reads, for every run of RUNS that has one, `METRICS_DIR/<run>.json` (`spacy evaluate --output`)
and `METRICS_DIR/<run>.mixes.json` (scripts/scalar_mixes.py: the learned ELMo layer weights), and,
with --training-dir, the settings each run was trained with (`TRAINING_DIR/<run>/model-best/config.cfg`:
step cap, patience, training sentences), so the report states what was run, not what the project
variables say now. Writes
- REPORT.md: component, data, config, dev score (UPOS accuracy or NER P/R/F1), words/s; the runs'
  settings; ELMo minus baseline (one run each); the learned layer weights s_j and gamma;
- PLOTS_DIR/dev_scores.png: dev score, baseline vs ELMo, per task;
- PLOTS_DIR/layer_weights.png: s_0, s_1, s_2 and gamma of each ELMo component side by side.
Missing runs are left out (and listed), so the report works on part of the runs.
``--record PATH`` also writes the table as a result record (JSON: per task the baseline, ELMo and
gain in points, the ELMo biLM's name, lineage tokens and weights sha256, the runs' settings, the
CPU; the maintainers keep theirs as docs/results/full_data.json).
"""
import argparse
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional

# (run name, component, data, config, task key)
RUNS = [
    ("tagger-ewt-base", "tagger", "UD EWT", "baseline", "tagger-ewt"),
    ("tagger-ewt-elmo", "tagger", "UD EWT", "ELMo", "tagger-ewt"),
    ("ner-conll-base", "ner", "CoNLL-2003", "baseline", "ner-conll"),
    ("ner-conll-elmo", "ner", "CoNLL-2003", "ELMo", "ner-conll"),
    ("ner-wnut-base", "ner", "WNUT-17", "baseline", "ner-wnut"),
    ("ner-wnut-elmo", "ner", "WNUT-17", "ELMo", "ner-wnut"),
]
# task key -> (label of the dev score, metric key)
TASKS = {
    "tagger-ewt": ("UPOS acc", "tag_acc"),
    "ner-conll": ("NER F1", "ents_f"),
    "ner-wnut": ("NER F1", "ents_f"),
}


def _read_json(path: Path) -> Optional[Dict]:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def run_settings(model_dir: Path) -> Optional[Dict]:
    """Step cap, patience, eval frequency and training sentences of a run trained by `spacy train`.

    Read from the trained pipeline's own config.cfg (what `spacy train` ran with, CLI overrides
    included) and from its training corpus (number of docs, when the file is still there).
    None when there is no config.cfg.
    """
    cfg_path = model_dir / "config.cfg"
    if not cfg_path.is_file():
        return None
    from spacy.util import load_config

    config = load_config(cfg_path, interpolate=False)
    training = config.get("training", {})
    settings = {key: training.get(key) for key in ("max_steps", "patience", "eval_frequency")}
    train_path = (config.get("paths") or {}).get("train")
    settings["train_docs"] = None
    if train_path and Path(train_path).is_file():
        from spacy.tokens import DocBin

        settings["train_docs"] = len(DocBin().from_disk(train_path))
    return settings


def load_runs(metrics_dir: Path, training_dir: Optional[Path] = None) -> List[Dict]:
    runs = []
    for name, component, data, config, task in RUNS:
        scores = _read_json(metrics_dir / f"{name}.json")
        if scores is None:
            continue
        runs.append(
            {
                "name": name,
                "component": component,
                "data": data,
                "config": config,
                "task": task,
                "scores": scores,
                "mixes": _read_json(metrics_dir / f"{name}.mixes.json"),
                "settings": run_settings(training_dir / name / "model-best") if training_dir else None,
            }
        )
    return runs


def dev_score(run: Dict) -> Optional[float]:
    return run["scores"].get(TASKS[run["task"]][1])


def bilm_summary(name_or_path: Optional[str]) -> Optional[str]:
    """One line on the biLM the ELMo configs used, from its meta.json (written by pretraining)."""
    if not name_or_path:
        return None
    path = Path(name_or_path)
    try:
        from spacy_elmo.hub.resolve import resolve

        path = Path(resolve(name_or_path))
    except Exception:
        pass
    meta = _read_json(path / "meta.json")
    if not meta:
        return f"ELMo biLM: `{name_or_path}` (no meta.json found)."
    parts = []
    training = meta.get("training") or {}
    lineage = training.get("lineage_tokens")
    if lineage and lineage != training.get("tokens_seen"):  # warm-started: the last stage, then all stages
        parts.append(f"{training['steps']:,} steps and {training['tokens_seen'] / 1e6:.1f}M tokens in its last "
                     f"stage, {lineage / 1e6:.1f}M training tokens seen through all warm starts")
    else:
        if training.get("tokens_seen"):
            parts.append(f"{training['tokens_seen'] / 1e6:.1f}M training tokens seen")
        if training.get("steps"):
            parts.append(f"{training['steps']:,} steps")
    heldout = meta.get("heldout") or {}
    if heldout.get("perplexity"):
        parts.append(f"held-out perplexity {heldout['perplexity']:.1f}")
    params = (meta.get("parameters") or {}).get("biLM")
    if params:
        parts.append(f"{params / 1e6:.1f}M parameters")
    return f"ELMo biLM: `{name_or_path}` ({', '.join(parts) or 'no training record'}), frozen."


def markdown(runs: List[Dict], title: str, plots: Dict[str, str], missing: List[str],
             bilm: Optional[str] = None) -> str:
    lines = [f"# {title}", ""]
    if bilm:
        lines += [bilm, ""]
    lines += [
        "Dev scores from `spacy evaluate` (gold tokenization); words/s is spaCy's evaluation speed",
        "of the whole pipeline on the machine that ran it (for ELMo configs it includes running the biLM).",
        "",
        "| Component | Data (dev) | Config | UPOS acc | NER P | NER R | NER F1 | words/s |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        s = run["scores"]
        upos = _pct(s.get("tag_acc")) if run["component"] == "tagger" else ""
        ner = [_pct(s.get(k)) for k in ("ents_p", "ents_r", "ents_f")] if run["component"] == "ner" else ["", "", ""]
        speed = s.get("speed")
        speed = "-" if speed is None else f"{speed:,.0f}"
        lines.append(f"| {run['component']} | {run['data']} | {run['config']} | {upos} | {' | '.join(ner)} | {speed} |")
    lines.append("")

    with_settings = [r for r in runs if r.get("settings")]
    if with_settings:
        lines += [
            "## Runs",
            "",
            "As trained (from each run's `model-best/config.cfg`): `spacy train` stops at the step cap or",
            "after `patience` steps without a better dev score; the best model is the one evaluated.",
            "",
            "| Component | Data | Config | Train sentences | Step cap | Patience | Eval every |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for run in with_settings:
            st = run["settings"]
            cells = ["-" if st.get(k) is None else f"{st[k]:,}"
                     for k in ("train_docs", "max_steps", "patience", "eval_frequency")]
            lines.append(f"| {run['component']} | {run['data']} | {run['config']} | {' | '.join(cells)} |")
        lines.append("")

    # ELMo minus baseline
    gains = []
    for task, (label, _key) in TASKS.items():
        pair = {r["config"]: r for r in runs if r["task"] == task}
        if "baseline" in pair and "ELMo" in pair:
            base, elmo = dev_score(pair["baseline"]), dev_score(pair["ELMo"])
            if base is None or elmo is None:
                continue
            gains.append(f"| {pair['ELMo']['data']} | {label} | {_pct(base)} | {_pct(elmo)} | "
                         f"{100 * (elmo - base):+.2f} |")
    if gains:
        lines += [
            "## ELMo minus baseline (points)",
            "",
            "| Data | Score | Baseline | ELMo | Gain |",
            "|---|---|---:|---:|---:|",
            *gains,
            "",
            "One run each: a run's gain moves by a few tenths of a UPOS point and a few F1 points with the "
            "seed, the CPU and the thread count (the README's demo table gives the mean over seeds and its spread).",
            "",
        ]

    mixed = [(r, c, m) for r in runs if r["mixes"] for c, m in sorted(r["mixes"].items())]
    if mixed:
        n_layers = max(len(m["weights"]) for _r, _c, m in mixed)
        header = " | ".join(f"s_{j}" for j in range(n_layers))
        lines += [
            "## Learned ELMo layer weights",
            "",
            "Softmax-normalized weights s_j of each component's own scalar mix (layer 0: the",
            "context-independent char-CNN token layer; 1 and 2: the biLSTM layers) and its scale gamma.",
            f"Uniform is {1 / n_layers:.3f}.",
            "",
            f"| Component | Data | {header} | gamma |",
            "|---|---|" + "---:|" * (n_layers + 1),
        ]
        for run, component, mix in mixed:
            weights = " | ".join(f"{w:.3f}" for w in mix["weights"])
            lines.append(f"| {component} | {run['data']} | {weights} | {mix['gamma']:.3f} |")
        lines.append("")

    if plots:
        lines += ["## Plots", ""]
        for caption, path in plots.items():
            lines += [f"![{caption}]({path})", ""]
    if missing:
        lines += ["Runs without metrics (not run yet): " + ", ".join(missing) + ".", ""]
    return "\n".join(lines)


def plot_dev_scores(runs: List[Dict], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in TASKS if any(r["task"] == t for r in runs)]
    if not tasks:
        return False
    fig, axes = plt.subplots(1, len(tasks), figsize=(max(5.0, 3.6 * len(tasks)), 3.6), squeeze=False)
    colors = {"baseline": "#999999", "ELMo": "#1f77b4"}
    for ax, task in zip(axes[0], tasks):
        pair = [r for r in runs if r["task"] == task]
        names = [r["config"] for r in pair]
        values = [100 * (dev_score(r) or 0.0) for r in pair]
        bars = ax.bar(names, values, color=[colors.get(n, "#ff7f0e") for n in names])
        for bar, value in zip(bars, values):
            ax.annotate(f"{value:.2f}", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom",
                        fontsize=9)
        low = min(values)
        ax.set_ylim(max(0.0, low - max(5.0, 0.3 * (100 - low))), min(100.0, max(values) + 0.15 * (100 - low) + 1))
        ax.set_title(f"{pair[0]['data']}: {TASKS[task][0]}")
        ax.set_ylabel("dev score (%)")
    fig.suptitle("Dev score: spaCy tok2vec baseline vs ELMo")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_layer_weights(runs: List[Dict], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mixed = [(r, c, m) for r in runs if r["mixes"] for c, m in sorted(r["mixes"].items())]
    if not mixed:
        return False
    fig, axes = plt.subplots(1, len(mixed), figsize=(max(5.0, 3.4 * len(mixed)), 3.6), squeeze=False, sharey=True)
    for ax, (run, component, mix) in zip(axes[0], mixed):
        weights = mix["weights"]
        labels = [f"s_{j}" for j in range(len(weights))]
        bars = ax.bar(labels, weights, color=["#bbbbbb", "#2ca02c", "#d62728", "#9467bd"][: len(weights)])
        for bar, w in zip(bars, weights):
            ax.annotate(f"{w:.2f}", (bar.get_x() + bar.get_width() / 2, w), ha="center", va="bottom", fontsize=9)
        ax.axhline(1 / len(weights), color="k", lw=0.8, ls="--")
        ax.set_ylim(0, 1)
        ax.set_title(f"{component} ({run['data']})\ngamma = {mix['gamma']:.2f}", fontsize=10)
    axes[0][0].set_ylabel("softmax weight (dashed: uniform)")
    fig.suptitle("Learned ELMo layer weights (softmax) per component")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


DATA = {"tagger-ewt": "UD English-EWT, UPOS accuracy", "ner-conll": "CoNLL-2003, F1", "ner-wnut": "WNUT-17, F1"}


def record(runs: List[Dict], elmo_model: str, command: str) -> Dict:
    """The result record of ``runs`` (load_runs): per task with both runs, baseline, ELMo and
    their difference (dev scores x 100, 2 decimals); the ELMo biLM; the settings; this CPU."""
    import torch

    from spacy_elmo.bilm.cpu_budget import cpu_name, usable_cpus
    from spacy_elmo.bilm.integrity import sha256
    from spacy_elmo.hub.resolve import resolve

    folder = Path(elmo_model) if Path(elmo_model).is_dir() else Path(resolve(elmo_model))
    training = (_read_json(folder / "meta.json") or {}).get("training") or {}
    by_task = {}
    for run in runs:
        by_task.setdefault(run["task"], {})[run["config"]] = run
    rows = []
    for task, pair in by_task.items():
        if {"baseline", "ELMo"} <= set(pair) and None not in (dev_score(pair["baseline"]), dev_score(pair["ELMo"])):
            base, elmo = (round(100 * dev_score(pair[c]), 2) for c in ("baseline", "ELMo"))
            rows.append({"component": pair["ELMo"]["component"], "data": DATA[task], "baseline": base, "elmo": elmo,
                         "gain": round(elmo - base, 2)})
    settings = {run["name"]: run["settings"] for run in runs if run.get("settings")}
    return {"what": "ELMo (frozen biLM) against spaCy's tok2vec, dev scores (spacy evaluate), one run each",
            "model": {"name": folder.name,
                      "lineage_tokens": training.get("lineage_tokens", training.get("tokens_seen")),
                      "weights_sha256": sha256(str(folder / "weights.hdf5"))},
            "command": command, "settings": settings,
            "machine": {"cpu": cpu_name(), "cores": len(usable_cpus()[0]), "torch": torch.__version__},
            "rows": rows}


def report(metrics_dir: Path, report_path: Path, plots_dir: Path, title: str = "spacy-elmo: ELMo vs spaCy's tok2vec",
           elmo_model: Optional[str] = None, training_dir: Optional[Path] = None,
           expected: Optional[List[str]] = None) -> str:
    """Write the report and plots; returns the markdown. ``expected``: the runs this workflow
    makes (default: all of RUNS), listed as missing if they have no metrics."""
    known = [name for name, *_ in RUNS]
    unknown = sorted(set(expected or []) - set(known))
    if unknown:
        raise ValueError(f"unknown runs {unknown}; known: {known}")
    runs = load_runs(metrics_dir, training_dir)
    missing = [name for name in (expected or known) if name not in {r["name"] for r in runs}]
    plots_dir.mkdir(parents=True, exist_ok=True)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    plots = {}
    for caption, filename, plot in (
        ("Dev score, baseline vs ELMo", "dev_scores.png", plot_dev_scores),
        ("Learned layer weights", "layer_weights.png", plot_layer_weights),
    ):
        if plot(runs, plots_dir / filename):
            rel = os.path.relpath(plots_dir / filename, report_path.parent)
            plots[caption] = Path(rel).as_posix()
    text = markdown(runs, title, plots, missing, bilm_summary(elmo_model))
    report_path.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics_dir", type=Path)
    parser.add_argument("report_path", type=Path)
    parser.add_argument("plots_dir", type=Path)
    parser.add_argument("--title", default="spacy-elmo: ELMo vs spaCy's tok2vec")
    parser.add_argument("--elmo-model", default=None, help="the ELMo configs' biLM (name or directory), to describe it")
    parser.add_argument("--training-dir", type=Path, default=None,
                        help="where the runs' trained pipelines are (<dir>/<run>/model-best), to report their settings")
    parser.add_argument("--runs", nargs="+", default=None, metavar="RUN",
                        help="the runs this workflow makes (default: all); others are not reported as missing")
    parser.add_argument("--record", type=Path, default=None, help="also write the table as a result record (JSON)")
    args = parser.parse_args()
    print(report(args.metrics_dir, args.report_path, args.plots_dir, args.title, args.elmo_model, args.training_dir,
                 args.runs))
    if args.record:
        if not args.elmo_model:
            parser.error("--record names the ELMo biLM: give --elmo-model")
        result = record(load_runs(args.metrics_dir, args.training_dir), args.elmo_model,
                        "python scripts/report.py " + " ".join(sys.argv[1:]))
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
