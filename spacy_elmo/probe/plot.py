"""The probe's figure (one PNG, three panels), readable without the text: probe accuracy by
layer, (a) syntax (UPOS) and (b) word sense (WiC), with the per-layer values of Peters et al.
(2018, Tables 5-6) marked; (c) the learned layer weights s_j of every listener of each trained
pipeline, against the uniform mix."""
from .views import model_label, view_names

SENSE = [("wic_cosine", "WiC: cosine, threshold tuned on train", "tab:orange", "o"),
         ("wic_lr", "WiC: logistic regression on [u*v, |u-v|]", "tab:red", "s")]


def _x(result: dict):
    """x positions and tick labels of the views: layers 0..L, then the average after a gap."""
    L = result["model"]["num_layers"]
    keys = list(view_names(L))
    xs = list(range(L + 1)) + [L + 1.4]
    labels = ["0\nchar CNN"] + [f"{j}\nbiLSTM {j}" for j in range(1, L + 1)] + ["average\nof layers"]
    return keys, xs, labels


def _line(ax, result: dict, task: str, label: str, color: str, marker: str, dx: int = 0) -> None:
    """One task's dev accuracy per view; values printed beside the points, ``dx`` points to the side."""
    keys, xs, _ = _x(result)
    scores = result.get(task)
    if task == "wic_cosine_centred":
        scores = (scores or {}).get("scores")
    if not scores:
        return
    ys = [scores[k]["dev_accuracy"] for k in keys]
    ax.plot(xs[:-1], ys[:-1], marker=marker, color=color, label=label)
    ax.plot(xs[-1:], ys[-1:], marker=marker, color=color, linestyle="none")
    for x, y in zip(xs, ys):
        ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(dx, 6), ha="center", fontsize=7,
                    color=color)


def _reference(ax, result: dict, key: str, label: str, color: str) -> None:
    ref = result["reference"][key]["layers"]
    xs = [int(j.split("_")[1]) for j in ref]
    ys = list(ref.values())
    ax.plot(xs, ys, marker="*", markersize=13, color=color, linestyle=":", markerfacecolor="white", label=label)
    for x, y in zip(xs, ys):
        ax.annotate(f"{y}", (x, y), textcoords="offset points", xytext=(0, 9), ha="center", fontsize=8, color=color)


def _style(ax, result: dict, ylabel: str, title: str) -> None:
    _, xs, labels = _x(result)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.margins(y=0.18)


def _syntax(ax, result: dict) -> None:
    _line(ax, result, "upos", "UPOS linear probe, UD EWT dev (this model)", "tab:blue", "o")
    _reference(ax, result, "upos", "Peters et al. 2018: POS, PTB (full ELMo)", "tab:blue")
    _style(ax, result, "accuracy (%)", "(a) Syntax: part of speech from one layer")


def _sense(ax, result: dict) -> None:
    for k, (task, label, color, marker) in enumerate(SENSE):
        _line(ax, result, task, label + " (dev)", color, marker, dx=-20 + 20 * k)
    _line(ax, result, "wic_cosine_centred", "WiC: cosine after removing the layer mean", "tab:brown", "^", dx=20)
    _reference(ax, result, "wsd", "Peters et al. 2018: WSD F1, SemCor (other task)", "tab:red")
    ax.axhline(50, color="grey", linestyle="--", linewidth=0.8, label="chance (WiC)")
    _style(ax, result, "accuracy (%)", "(b) Word sense: same sense in two contexts?")
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.8 * (high - low))  # room above the points for the legend
    ax.legend(fontsize=7, loc="upper left")
    ax.set_xlabel("biLM layer (representation probed)")


def _mixes(ax, result: dict) -> None:
    L1 = result["model"]["num_layers"] + 1
    rows = [(f"{pipe}: {comp}", mix["weights"])
            for pipe, comps in result["mixes"].items() for comp, mix in comps.items()]
    ax.set_title("(c) Learned layer weights of each trained component", fontsize=10, loc="left")
    ax.set_xlabel("biLM layer j")
    ax.set_ylabel("softmax weight s_j (sums to 1)")
    ax.set_xticks(range(L1))
    ax.set_xticklabels(["0\nchar CNN"] + [f"{j}\nbiLSTM {j}" for j in range(1, L1)], fontsize=8)
    ax.axhline(1 / L1, color="grey", linestyle="--", linewidth=0.8, label=f"uniform mix (1/{L1})")
    if not rows:
        ax.text(0.5, 0.5, "no trained pipelines given\n(--pipelines DIR ...)", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    width = 0.8 / max(1, len(rows))
    for k, (label, weights) in enumerate(rows):
        xs = [j - 0.4 + width * (k + 0.5) for j in range(L1)]
        ax.bar(xs, weights, width=width * 0.95, label=label)
    ax.set_ylim(0, max([1 / L1] + [w for _, ws in rows for w in ws]) * 1.3)
    ax.set_xlim(-0.6, L1 - 0.4)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)


def plot_probe(result: dict, path) -> None:
    """Write the three-panel PNG to ``path`` (matplotlib, Agg backend; ImportError if missing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(13, 7.5))
    grid = fig.add_gridspec(2, 2, width_ratios=[1.15, 1], hspace=0.45, wspace=0.22)
    _syntax(fig.add_subplot(grid[0, 0]), result)
    _sense(fig.add_subplot(grid[1, 0]), result)
    _mixes(fig.add_subplot(grid[:, 1]), result)

    name = model_label(result["model"])
    fig.suptitle(f"What each biLM layer knows: {name} ({result['model']['num_layers']} biLSTM layers, "
                 f"{result['model']['dim']} dims)", fontsize=12)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
