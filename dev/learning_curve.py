"""Learning curve of a shipped model and its warm-start lineage: one PNG.

    python dev/learning_curve.py [MODEL_DIR | RUN_DIR] [OUT.png] [--wic]

Defaults: spacy_elmo/models/en_elmo_small and its docs image
(docs/img/en_elmo_small_learning_curve.png; images stay out of the package). A pretraining run
directory (or its model/) that is not shipped yet is followed back through its config.cfg's
``init_from`` the way dev/ship_default_model.py records a release's lineage; ``--wic`` measures
WiC (dev/wic.py, about a minute per model) for the models of the lineage without it. A running
run rewrites its model/ at every checkpoint: to draw a decayed candidate later, copy its model/
into a folder of its own with the run's config.cfg beside it, and pass that folder.
Left axis: held-out perplexity on the first 30k held-out tokens (meta.json ``history``, every
evaluation of every run in the lineage) against the tokens seen since training from scratch.
Right axis: WiC dev accuracy (top layer and layer average; threshold tuned on train) where a
release recorded it (``evaluation.wic``) or ``--wic`` measured it. Vertical lines mark warm starts.
"""
import os
import sys
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def load_meta(model_dir: str, measure_wic: bool = False) -> dict:
    """meta.json of a shipped model, or of a run's model with its lineage (dev/ship_default_model.py).
    Raises SystemExit (one line) when there is no meta.json."""
    path = Path(model_dir)
    if (path / "model" / "meta.json").is_file():
        path = path / "model"
    if not (path / "meta.json").is_file():
        raise SystemExit(f"{model_dir}: no meta.json (pass a shipped model's folder or a pretraining run directory)")
    sys.path.insert(0, HERE)
    import ship_default_model

    return ship_default_model._source_meta(path, None, measure_wic)


def lineage(meta: dict):
    """Releases from the first to this one: [(meta-like dict, tokens seen before it)]."""
    chain = []
    node = meta
    while node:
        chain.append(node)
        node = node.get("init_from")
    chain.reverse()
    out, offset = [], 0
    for node in chain:
        out.append((node, offset))
        offset += node["training"]["tokens_seen"]
    return out


def main(model_dir=os.path.join(ROOT, "spacy_elmo", "models", "en_elmo_small"),
         out=os.path.join(ROOT, "docs", "img", "en_elmo_small_learning_curve.png"), measure_wic=False):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = load_meta(model_dir, measure_wic)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax2 = ax.twinx()
    wic_x, wic_top, wic_mean = [], [], []
    for k, (node, offset) in enumerate(lineage(meta)):
        hist = [h for h in node.get("history", []) if not h.get("full_heldout")]
        xs = [(offset + h["tokens_seen"]) / 1e6 for h in hist]
        ax.plot(xs, [h["perplexity"] for h in hist], "o-", ms=3, color="C0",
                label="held-out perplexity (30k slice)" if k == 0 else None)
        if k:
            ax.axvline(offset / 1e6, color="grey", ls=":", lw=1)
        wic = node.get("evaluation", {}).get("wic")
        if wic:
            top = max((v for v in wic if v.startswith("layer_")), key=lambda v: int(v[6:]))
            wic_x.append((offset + node["training"]["tokens_seen"]) / 1e6)
            wic_top.append(wic[top]["dev_accuracy"])
            wic_mean.append(wic["average"]["dev_accuracy"])
    ax2.plot(wic_x, wic_top, "s--", color="C3", label="WiC dev, top layer")
    ax2.plot(wic_x, wic_mean, "^--", color="C2", label="WiC dev, layer average")
    if wic_x:  # a fixed 10-point span: WiC dev's 95% interval for one model is about +-3.9 points
        ax2.set_ylim(min(50.0, min(wic_top + wic_mean) - 1), max(60.0, max(wic_top + wic_mean) + 1))
    ax.set_xlabel("tokens seen (millions, from scratch; dotted: warm start of the next run)")
    ax.set_ylabel("held-out perplexity")
    ax2.set_ylabel("WiC dev accuracy (%)")
    ax.set_title(f"{meta['name']}: learning curve")
    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
    ax.legend(lines, labels, loc="upper right", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main(*[a for a in sys.argv[1:] if a != "--wic"], measure_wic="--wic" in sys.argv[1:])
