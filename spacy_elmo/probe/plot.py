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


LABEL_GAP = 9  # points between the centres of two value labels at one x (7-point text)
LABEL_DX = 7  # points from a point to its label


def _line(ax, result: dict, task: str, label: str, color: str, marker: str) -> list:
    """One task's dev accuracy per view, drawn; returns its ``(x, y, color)`` points to label
    (:func:`_values`), [] when the result lacks the task."""
    keys, xs, _ = _x(result)
    scores = result.get(task)
    if task == "wic_cosine_centred":
        scores = (scores or {}).get("scores")
    if not scores:
        return []
    ys = [scores[k]["dev_accuracy"] for k in keys]
    ax.plot(xs[:-1], ys[:-1], marker=marker, color=color, label=label)
    ax.plot(xs[-1:], ys[-1:], marker=marker, color=color, linestyle="none")
    return [(x, y, color) for x, y in zip(xs, ys)]


def stack(ys: list, gap: float) -> list:
    """Label heights for the values ``ys`` at one x, in their order: sorted as the values, each at
    least ``gap`` above the one below, and each run of labels pushed together centred on its
    values (a value far from the others keeps its own height). A least-squares placement under
    the ordering constraint, by merging adjacent runs (pool adjacent violators)."""
    order = sorted(range(len(ys)), key=ys.__getitem__)
    runs = []  # [sum of (value - gap * rank in the run), count]: the run's lowest label is sum / count
    for i in order:
        runs.append([ys[i], 1])
        while len(runs) > 1 and runs[-2][0] / runs[-2][1] + gap * runs[-2][1] > runs[-1][0] / runs[-1][1]:
            total, n = runs.pop()
            runs[-1][0] += total - gap * runs[-1][1] * n
            runs[-1][1] += n
    placed = [total / n + gap * j for total, n in runs for j in range(n)]
    heights = [0.0] * len(ys)
    for rank, i in enumerate(order):
        heights[i] = placed[rank]
    return heights


def _values(ax, points: list) -> None:
    """Print each point's value: above it where it is the only point at its x; else beside it
    (left of the first x, right of the others, on a white ground), the labels at one x stacked in
    the order of the values, :data:`LABEL_GAP` points apart (:func:`stack`), so that no label
    covers another. Call once the y limits are final."""
    if not points:
        return
    low, high = ax.get_ylim()
    box = ax.get_position()  # figure fraction
    per_point = (high - low) / (box.height * ax.figure.get_figheight() * 72)  # data units per point
    first = min(x for x, _, _ in points)
    for x in sorted({x for x, _, _ in points}):
        here = [(y, color) for px, y, color in points if px == x]
        if len(here) == 1:
            ax.annotate(f"{here[0][0]:.1f}", (x, here[0][0]), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7, color=here[0][1])
            continue
        side = -1 if x == first else 1
        for (y, color), height in zip(here, stack([y for y, _ in here], LABEL_GAP * per_point)):
            shift = (side * LABEL_DX, (height - y) / per_point)
            ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=shift,
                        ha="right" if side < 0 else "left", va="center", fontsize=7, color=color,
                        bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.85))


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
    ax.set_xlim(xs[0] - 0.45, xs[-1] + 0.45)  # room for the labels left of the first x and right of the last
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.18)


def _syntax(ax, result: dict) -> None:
    points = _line(ax, result, "upos", "UPOS linear probe, UD EWT dev (this model)", "tab:blue", "o")
    _reference(ax, result, "upos", "Peters et al. 2018: POS, PTB (full ELMo)", "tab:blue")
    _style(ax, result, "accuracy (%)", "(a) Syntax: part of speech from one layer")
    ax.legend(fontsize=7, loc="lower right")
    _values(ax, points)


def _sense(ax, result: dict) -> None:
    points = []
    for task, label, color, marker in SENSE:
        points += _line(ax, result, task, label + " (dev)", color, marker)
    points += _line(ax, result, "wic_cosine_centred", "WiC: cosine after removing the layer mean", "tab:brown", "^")
    _reference(ax, result, "wsd", "Peters et al. 2018: WSD F1, SemCor (other task)", "tab:red")
    ax.axhline(50, color="grey", linestyle="--", linewidth=0.8, label="chance (WiC)")
    _style(ax, result, "accuracy (%)", "(b) Word sense: same sense in two contexts?")
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.8 * (high - low))  # room above the points for the legend
    ax.legend(fontsize=7, loc="upper left")
    ax.set_xlabel("biLM layer (representation probed)")
    _values(ax, points)


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


def figure(result: dict):
    """The three-panel matplotlib Figure of a probe result (Agg backend; ImportError if
    matplotlib is missing). Close it with ``matplotlib.pyplot.close``."""
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
    return fig


def plot_probe(result: dict, path) -> None:
    """Write the three-panel PNG (:func:`figure`) to ``path`` (110 dpi)."""
    import matplotlib.pyplot as plt

    fig = figure(result)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
