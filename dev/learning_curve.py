"""Learning curve of a shipped model and its warm-start lineage: one PNG.

    python dev/learning_curve.py [MODEL_DIR] [OUT.png]

Defaults: spacy_elmo/models/en_elmo_small and its docs image
(docs/img/en_elmo_small_learning_curve.png; images stay out of the package).
Left axis: held-out perplexity on the first 30k held-out tokens (meta.json ``history``, every
evaluation of every run in the lineage) against the tokens seen since training from scratch.
Right axis: WiC dev accuracy (top layer and layer average; threshold tuned on train) where a
release recorded it (``evaluation.wic``). Vertical lines mark warm starts.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


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
         out=os.path.join(ROOT, "docs", "img", "en_elmo_small_learning_curve.png")):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = json.load(open(os.path.join(model_dir, "meta.json"), encoding="utf-8"))
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
            top = str(max(int(v) for v in wic if v.isdigit()))
            wic_x.append((offset + node["training"]["tokens_seen"]) / 1e6)
            wic_top.append(wic[top]["dev_accuracy"])
            wic_mean.append(wic["mean"]["dev_accuracy"])
    ax2.plot(wic_x, wic_top, "s--", color="C3", label="WiC dev, top layer")
    ax2.plot(wic_x, wic_mean, "^--", color="C2", label="WiC dev, layer average")
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
    main(*sys.argv[1:])
