"""Where the default model's compute wall is: perplexity and WiC against tokens seen, one PNG.

    python dev/compute_wall.py [RECORD.json] [OUT.png] [--tokens-per-second N]

RECORD: every decayed candidate evaluated so far (default dev/default_model_candidates.json).
OUT: default docs/img/en_elmo_small_compute_wall.png.

Prints, per lineage, a power law of full held-out perplexity in tokens seen,
log(ppl) = a + b * log(tokens) (least squares over the lineage's candidates at its current width:
a widening warm start changes the curve), with no irreducible term, so its extrapolation is the
optimistic one: the tokens at which it reaches the target perplexity 50, and the hours
that would take at ``--tokens-per-second`` (default 2,600: run 5 on 2 Zen 4 cores,
11.2M tokens in 71 minutes including its evaluations). Then, over all candidates, the
least-squares slope of WiC dev accuracy against log2(tokens) (points per doubling of tokens) with
its 95% interval (Student t, n - 2 degrees of freedom), for the top layer and the layer average.
Then the data wall, per stretch (:func:`stretches`: each release, and each stretch that ended
unreleased, from the candidate it started from): passes over the training corpus at
its end (``train_tokens_per_pass``), its held-out perplexity change per 10M tokens, the
train / held-out perplexity ratio where measured (``dev/train_heldout_gap.py``), and whether the
stop rule of dev/RELEASING.md (:func:`stop_rule`) has fired.
Left panel: perplexity (log-log), stretches that ended unreleased hollow, fits dashed, the target
dotted, each full pass over the corpus a thin numbered vertical line. Right panel: WiC dev with 95%
binomial intervals (638 pairs), train-CV where measured (hollow), the target 57.0, and the
published ELMo (57.7) and random-weight biLM (53.8) on WiC test for reference.
"""
import argparse
import json
import math
import os
import sys

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
DEFAULT_RECORD = os.path.join(HERE, "default_model_candidates.json")
DEFAULT_OUT = os.path.join(ROOT, "docs", "img", "en_elmo_small_compute_wall.png")
TARGET_PPL, TARGET_WIC = 50.0, 57.0
TOP = "layer_2"  # the record's key of the top layer (a 2-layer biLM: layer_0 char CNN, layer_1, layer_2)
PUBLISHED_ELMO_WIC, RANDOM_BILM_WIC = 57.7, 53.8  # WiC test: Pilehvar & Camacho-Collados 2019


def load_record(path: str) -> dict:
    """The candidates record. Raises OSError for an unreadable file; ValueError for invalid JSON,
    a record without a 'candidates' list, or an entry that lacks a required key (named)."""
    record = json.load(open(path, encoding="utf-8"))
    if not isinstance(record, dict) or not isinstance(record.get("candidates"), list):
        raise ValueError(f"{path}: no 'candidates' list (see dev/default_model_candidates.json)")
    for i, c in enumerate(record["candidates"]):
        missing = {"run", "lineage", "tokens", "perplexity", "wic_dev"} - set(c)
        if missing:
            raise ValueError(f"{path}: candidate {i} lacks {sorted(missing)}")
    return record


def power_law_fit(tokens, ppl):
    """(a, b) of log(ppl) = a + b * log(tokens), least squares. Needs 2+ distinct token counts."""
    b, a = numpy.polyfit(numpy.log(numpy.asarray(tokens, float)), numpy.log(numpy.asarray(ppl, float)), 1)
    return float(a), float(b)


def tokens_for(ppl: float, fit) -> float:
    """Tokens at which the fit reaches `ppl`; inf if the fit does not fall (b >= 0)."""
    a, b = fit
    return math.exp((math.log(ppl) - a) / b) if b < 0 else math.inf


def slope_per_doubling(tokens, accuracy):
    """(slope, low, high, intercept): least-squares change of `accuracy` per doubling of `tokens`,
    with its 95% interval (Student t on n - 2 degrees of freedom), and the fit's value at 1 token
    (accuracy = intercept + slope * log2(tokens)). Needs 3+ points. The candidates share WiC's
    638 dev pairs, so their errors are correlated and the interval is narrower than it should be."""
    from scipy import stats

    x, y = numpy.log2(numpy.asarray(tokens, float)), numpy.asarray(accuracy, float)
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
    return float(fit.slope), float(fit.slope - half), float(fit.slope + half), float(fit.intercept)


def binomial_halfwidth(percent: float, n: int) -> float:
    """Half-width (points) of the normal-approximation 95% interval of an accuracy over n items."""
    p = percent / 100.0
    return 100.0 * 1.96 * math.sqrt(p * (1 - p) / n)


def _lineages(record):
    """{lineage name: its candidates in the record's order}."""
    out = {}
    for c in record["candidates"]:
        for name in c["lineage"]:
            out.setdefault(name, []).append(c)
    return out


def current_shape(cands):
    """The candidates of a lineage at its last candidate's width: a widening warm start changes
    the curve, so a fit spans one shape only."""
    width = cands[-1].get("projection_dim")
    return [c for c in cands if c.get("projection_dim") == width]


def report(record, tokens_per_second: float) -> list:
    """The printed lines: one per lineage fit, one per WiC view."""
    lines = []
    for name, cands in _lineages(record).items():
        cands = current_shape(cands)
        if len({c["tokens"] for c in cands}) < 2:
            continue
        fit = power_law_fit([c["tokens"] for c in cands], [c["perplexity"] for c in cands])
        need = tokens_for(TARGET_PPL, fit)
        last = max(c["tokens"] for c in cands)
        hours = (need - last) / tokens_per_second / 3600 if math.isfinite(need) else math.inf
        lines.append(f"{name}: perplexity ~ tokens^{fit[1]:.3f} over its {len(cands)} candidates at projection "
                     f"{cands[-1].get('projection_dim')}; reaches "
                     f"{TARGET_PPL:.0f} at {need / 1e6:,.0f}M tokens ({max(0.0, hours):,.1f} h more at "
                     f"{tokens_per_second:,.0f} tokens/s after {last / 1e6:.1f}M)")
    for view, label in ((TOP, "top layer"), ("average", "layer average")):
        pts = [(c["tokens"], c["wic_dev"][view]) for c in record["candidates"] if c["wic_dev"].get(view) is not None]
        slope, lo, hi, intercept = slope_per_doubling(*zip(*pts))
        reach = "; no trend (the interval holds 0): this curve does not say when it reaches " + str(TARGET_WIC)
        if lo > 0:
            reach = f"; at this slope {TARGET_WIC} at {2 ** ((TARGET_WIC - intercept) / slope) / 1e6:,.0f}M tokens"
        elif hi < 0:
            reach = "; falling (the whole interval is below 0): more tokens of this text do not bring it to " + str(
                TARGET_WIC)
        lines.append(f"WiC dev, {label}: {slope:+.2f} points per doubling of tokens [{lo:+.2f}, {hi:+.2f}] "
                     f"over {len(pts)} candidates ({min(p[1] for p in pts):.1f}-{max(p[1] for p in pts):.1f}){reach}")
    return lines


STOP_GAIN_PER_20M, STOP_STRETCHES, STOP_RATIO = 0.01, 3, 0.90


def stretches(record) -> list:
    """The stretches in the record's (time) order: each released candidate, and each decayed
    candidate that ended a stretch unreleased (``stretch_from``: the run number of the candidate
    its tokens count from: the released model it warm-started from, or an unreleased stretch whose
    stable phase it continued from ``checkpoint-stable.pt``). Dicts of ``run``,
    ``released``, ``tokens`` (lineage, at its end), ``passes`` (tokens / train_tokens_per_pass),
    ``perplexity``, ``gain_per_10m`` (fractional held-out perplexity drop per 10M tokens of the
    stretch, compounded: 1 - (ppl / ppl_before) ** (1e7 / tokens_in_stretch); None for the first
    release), ``ratio`` (the lowest train / held-out ratio measured up to its tokens, or None) and
    ``own_ratio`` (the ratio measured on this candidate, or None), ``start_tokens`` (the tokens of
    the candidate it started from, or None) and ``rewarmed`` (it started from a release, whose
    decayed learning rate was warmed up again, not from the stable phase of an earlier stretch)."""
    per_pass = record.get("train_tokens_per_pass")
    ends = [c for c in record["candidates"] if c.get("released") or c.get("stretch_from") is not None]
    out = []
    for c in ends:
        before = _start_of(c, ends)
        gain = None
        if before is not None:
            gain = 1 - (c["perplexity"] / before["perplexity"]) ** (1e7 / (c["tokens"] - before["tokens"]))
        ratios = [x["train_heldout_ratio"] for x in record["candidates"]
                  if x.get("train_heldout_ratio") and x["tokens"] <= c["tokens"]]
        out.append({"run": c["run"], "released": bool(c.get("released")), "tokens": c["tokens"],
                    "passes": c["tokens"] / per_pass if per_pass else None, "perplexity": c["perplexity"],
                    "gain_per_10m": gain, "ratio": min(ratios) if ratios else None,
                    "own_ratio": c.get("train_heldout_ratio"),
                    "start_tokens": before["tokens"] if before else None,
                    "rewarmed": before is not None and bool(before.get("released"))})
    return out


def _start_of(c, ends):
    """The candidate a stretch started from: the release before a released one; for an unreleased
    one, the stretch end (released or not) named by ``stretch_from`` (None for the first release).
    Raises ValueError when ``stretch_from`` names no earlier stretch end."""
    if c.get("released"):
        earlier = sorted((r for r in ends if r.get("released") and r["tokens"] < c["tokens"]),
                         key=lambda r: r["tokens"])
        return earlier[-1] if earlier else None
    start = [r for r in ends if r["run"] == c["stretch_from"] and r["tokens"] < c["tokens"]]
    if not start:
        raise ValueError(f"run {c['run']}: stretch_from = {c['stretch_from']!r} names no earlier stretch end")
    return start[-1]


def rule_text() -> str:
    """The stop rule in words, from its constants."""
    return (f"{STOP_STRETCHES} stretches in a row under {STOP_GAIN_PER_20M:.0%} per 20M tokens, or a train / "
            f"held-out ratio under {STOP_RATIO:.2f}")


def stop_rule(rows) -> tuple:
    """(fired, reason) of dev/RELEASING.md's rule (when not fired, the reason gives the last stretch's
    gain): the last STOP_STRETCHES stretches each gained less than STOP_GAIN_PER_20M held-out
    perplexity per 20M tokens, or a train / held-out ratio fell below STOP_RATIO (memorising: the
    model scores its seen text much better than new text)."""
    gains = [r["gain_per_10m"] for r in rows if r["gain_per_10m"] is not None]
    per_20m = [1 - (1 - g) ** 2 for g in gains]
    if len(per_20m) >= STOP_STRETCHES and all(g < STOP_GAIN_PER_20M for g in per_20m[-STOP_STRETCHES:]):
        return True, f"the last {STOP_STRETCHES} stretches each gained < {STOP_GAIN_PER_20M:.0%} per 20M tokens"
    low = [r["ratio"] for r in rows if r["ratio"] is not None and r["ratio"] < STOP_RATIO]
    if low:
        return True, f"train / held-out perplexity ratio {min(low):.3f} < {STOP_RATIO}"
    return False, f"{per_20m[-1]:.1%} per 20M tokens in the last stretch" if per_20m else "no stretch yet"


def wall_lines(record) -> list:
    """The printed data-wall lines: one per release, then the stop rule's verdict."""
    rows = stretches(record)
    lines = []
    for r in rows:
        gain = f", {r['gain_per_10m']:.1%} perplexity drop per 10M tokens" if r["gain_per_10m"] is not None else ""
        ratio = f", train/held-out ratio {r['ratio']:.3f}" if r["ratio"] is not None else ""
        passes = f", {r['passes']:.2f} passes" if r["passes"] is not None else ""
        what = "release run" if r["released"] else "stretch run"
        kept = "" if r["released"] else " (not released)"
        lines.append(f"{what} {r['run']}{kept}: {r['tokens'] / 1e6:.1f}M tokens{passes}, perplexity "
                     f"{r['perplexity']:.2f}{gain}{ratio}")
    fired, reason = stop_rule(rows)
    lines.append(f"stop rule: fired: {reason}" if fired else f"stop rule: not fired ({reason})")
    return lines


def _plain_ticks(axis, values) -> None:
    """Plain numbers as the ticks of a log axis (no 10^x labels)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    axis.set_major_locator(FixedLocator(values))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(ScalarFormatter())


def plot(record, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    _plot_perplexity(ax, record)
    _plot_wic(ax2, record)
    fig.suptitle("en_elmo_small candidates: held-out perplexity and WiC against tokens seen")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110)


def _plot_perplexity(ax, record) -> None:
    """Perplexity per lineage (log-log), its fit at the current width (dashed), the target."""
    for k, (name, cands) in enumerate(_lineages(record).items()):
        kept = [c for c in cands if c.get("stretch_from") is None]
        ax.plot([c["tokens"] / 1e6 for c in kept], [c["perplexity"] for c in kept], "o", color=f"C{k}", label=name)
        later = [c for c in cands if c.get("stretch_from") is not None]
        if later:
            ax.plot([c["tokens"] / 1e6 for c in later], [c["perplexity"] for c in later], "o", mfc="none",
                    color=f"C{k}", label=f"{name}: later stretches (not released)")
        same = current_shape(cands)
        xs = numpy.array([c["tokens"] for c in same], float)
        if len(set(xs)) > 1:
            fit = power_law_fit(xs, [c["perplexity"] for c in same])
            grid = numpy.geomspace(xs.min(), max(xs.max(), min(tokens_for(TARGET_PPL, fit), 1e10)), 50)
            ax.plot(grid / 1e6, numpy.exp(fit[0] + fit[1] * numpy.log(grid)), "--", color=f"C{k}", lw=1,
                    label=f"fit: tokens^{fit[1]:.2f}")
    ax.axhline(TARGET_PPL, color="grey", ls=":", label="target 50")
    per_pass = record.get("train_tokens_per_pass")
    if per_pass:
        top = max(c["tokens"] for c in record["candidates"])
        for k in range(1, int(top // per_pass) + 1):
            ax.axvline(k * per_pass / 1e6, color="grey", lw=0.5, label="passes over the corpus" if k == 1 else None)
            ax.text(k * per_pass / 1e6, 0.01, f" pass {k}", transform=ax.get_xaxis_transform(), fontsize=7,
                    color="grey", va="bottom")
    ax.set_xscale("log"), ax.set_yscale("log")
    _plain_ticks(ax.xaxis, [30, 40, 50, 60, 80, 100, 150])
    _plain_ticks(ax.yaxis, [50, 55, 60, 65, 70, 75, 80])
    ax.set_xlabel("tokens seen (millions, log)"), ax.set_ylabel("full held-out perplexity (log)")
    ax.legend(fontsize=7, loc="upper right")


def _plot_wic(ax2, record) -> None:
    """WiC dev (filled) and train CV (hollow) per view with 95% intervals, target and references."""
    n_dev, n_cv = record["wic_dev_pairs"], record["wic_train_pairs"]
    for view, marker, color, shift in ((TOP, "s", "C3", 0.99), ("average", "^", "C2", 1.01)):
        cands = [c for c in record["candidates"] if c["wic_dev"].get(view) is not None]
        xs = numpy.array([c["tokens"] for c in cands]) / 1e6 * shift
        ys = [c["wic_dev"][view] for c in cands]
        ax2.errorbar(xs, ys, yerr=[binomial_halfwidth(y, n_dev) for y in ys], fmt=marker, color=color, capsize=2,
                     label=f"dev, {'top layer' if view == TOP else 'layer average'}")
        cv = [c for c in cands if (c.get("wic_train_cv") or {}).get(view) is not None]
        ax2.errorbar([c["tokens"] / 1e6 * shift for c in cv], [c["wic_train_cv"][view] for c in cv],
                     yerr=[binomial_halfwidth(c["wic_train_cv"][view], n_cv) for c in cv], fmt=marker, mfc="none",
                     color=color, capsize=2, label=f"train CV, {'top layer' if view == TOP else 'layer average'}")
    ax2.axhline(TARGET_WIC, color="grey", ls=":", label="target 57.0 (dev)")
    ax2.axhline(PUBLISHED_ELMO_WIC, color="k", ls="--", lw=0.8, label="published ELMo, test")
    ax2.axhline(RANDOM_BILM_WIC, color="k", ls="-.", lw=0.8, label="random-weight biLM, test")
    ax2.set_xscale("log"), ax2.set_ylim(50, 64)
    _plain_ticks(ax2.xaxis, [30, 40, 50, 60, 80, 100, 150])
    ax2.set_xlabel("tokens seen (millions, log)"), ax2.set_ylabel("WiC accuracy (%), 95% CI")
    ax2.legend(fontsize=7, loc="upper left", ncol=2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record", nargs="?", default=DEFAULT_RECORD)
    ap.add_argument("out", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--tokens-per-second", type=float, default=2600.0)
    args = ap.parse_args(argv)
    try:
        record = load_record(args.record)
    except (OSError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        sys.exit(f"compute_wall.py: {err}")
    for line in report(record, args.tokens_per_second) + wall_lines(record):
        print(line)
    plot(record, args.out)
    print(args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
