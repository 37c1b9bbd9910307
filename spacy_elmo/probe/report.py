"""Write the probe's result: ``probe.json`` (everything), ``probe.md`` (tables) and ``probe.png``."""
import json
from pathlib import Path
from typing import Dict, List

from .views import model_label, view_label, view_names


def _layer_views(result: dict) -> List[str]:
    return list(view_names(result["model"]["num_layers"]))


def _cell(scores: Dict[str, dict], view: str, key: str = "dev_accuracy", fmt: str = "{:.1f}") -> str:
    if not scores or view not in scores:
        return "-"
    return fmt.format(scores[view][key])


# task -> (name, the layer the paper finds better: "1" or "top")
SPLIT_TASKS = {"upos": ("UPOS (syntax)", "1"), "wic_cosine": ("WiC, cosine threshold (sense)", "top"),
               "wic_lr": ("WiC, logistic regression (sense)", "top")}


def split_verdict(split: dict, paper_better: str) -> str:
    """"as in the paper" / "the other way round" when the 95% interval of (layer 1 - top)
    excludes 0 on the paper's side / the other side; "no clear difference" when it includes 0."""
    if split["low"] <= 0 <= split["high"]:
        return "no clear difference"
    layer_1_better = split["low"] > 0
    return "as in the paper" if layer_1_better == (paper_better == "1") else "the other way round"


def _verdict_lines(result: dict) -> List[str]:
    splits, top = result.get("splits"), result["model"]["num_layers"]
    if not splits:
        return ["- (a one-layer biLM: no layer 1 / top layer comparison)"]
    lines = []
    for task, (name, paper_better) in SPLIT_TASKS.items():
        sp = splits[task]
        lines.append(f"- {name}: layer 1 {sp['layer_1']:.2f}, layer {top} {sp['layer_top']:.2f}; "
                     f"layer 1 - layer {top} = {sp['difference']:+.2f} points "
                     f"(95% paired-bootstrap interval {sp['low']:+.2f} to {sp['high']:+.2f}); "
                     f"paper: layer {1 if paper_better == '1' else 2} better: **{split_verdict(sp, paper_better)}**")
    return lines


def _centring_lines(result: dict) -> List[str]:
    centred = result.get("wic_cosine_centred")
    if not centred:
        return []
    parts = [f"{view_label(v)} {d['difference']:+.1f} ({d['low']:+.1f} to {d['high']:+.1f})"
             for v, d in centred["vs_plain"].items()]
    return ["", "WiC cosine with each layer's mean vector removed, minus without (dev points, 95% paired-bootstrap "
            "interval): " + "; ".join(parts) + "."]


def _probe_table(result: dict) -> List[str]:
    centred = (result.get("wic_cosine_centred") or {}).get("scores")
    ctx = result["contextuality"]
    lines = ["| view | UPOS acc. (EWT dev) | WiC cosine (dev) | WiC cosine, mean removed "
             "| WiC LR [u*v, abs(u-v)] (dev) "
             "| anisotropy | self-sim. | self-sim. - aniso. | intra-sent. | intra-sent. - aniso. |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for view in _layer_views(result):
        label = view_label(view) + (" (char CNN)" if view == "layer_0" else "")
        c = ctx[view]
        lines.append(f"| {label} | {_cell(result['upos'], view, fmt='{:.2f}')} | {_cell(result['wic_cosine'], view)} "
                     f"| {_cell(centred, view)} | {_cell(result['wic_lr'], view)} | {c['anisotropy']:.3f} "
                     f"| {c['self_similarity']:.3f} | {c['self_similarity_adjusted']:.3f} | {c['intra_sentence']:.3f} "
                     f"| {c['intra_sentence_adjusted']:.3f} |")
    ref = result["reference"]
    lines.append(f"| Peters et al. 2018, layer 1 / 2 "
                 f"| {ref['upos']['layers']['layer_1']} / {ref['upos']['layers']['layer_2']} (PTB POS) "
                 f"| - | - | {ref['wsd']['layers']['layer_1']} / {ref['wsd']['layers']['layer_2']} (WSD F1, not WiC) "
                 f"| | | | | |")
    return lines


def _mix_table(result: dict) -> List[str]:
    mixes = result["mixes"]
    if not mixes:
        return ["No trained pipelines given (`--pipelines DIR ...`)."]
    n = result["model"]["num_layers"] + 1
    lines = ["| pipeline | component | " + " | ".join(f"s_{j}" for j in range(n)) + " | gamma |",
             "|---|---|" + "---:|" * (n + 1)]
    for pipe, comps in mixes.items():
        for comp, mix in comps.items():
            weights = " | ".join(f"{w:.3f}" for w in mix["weights"])
            lines.append(f"| {pipe} | {comp} | {weights} | {mix['gamma']:.3f} |")
    return lines


def markdown(result: dict) -> str:
    """The probe.md text: the per-view table, the split verdict, the mixes, sizes and times."""
    m, sz, t = result["model"], result["sizes"], result["timings_s"]
    name = model_label(m)
    centred = result.get("wic_cosine_centred")
    lines = [f"# Layer probe: {name} ({m['num_layers']} biLSTM layers, {m['dim']} dims per layer)", "",
             *_probe_table(result), "", "Does the split of Peters et al. (2018) show (layer 1 vs top layer, dev)?",
             *_verdict_lines(result), *_centring_lines(result), "",
             "Learned scalar mixes (softmax weights s_j, gamma):", "", *_mix_table(result), "",
             f"Data: UPOS probe trained on {sz['ewt']['train_sentences']:,} EWT train sentences "
             f"({sz['ewt']['train_tokens']:,} tokens, seed {result['settings']['seed']}), scored on "
             f"{sz['ewt']['dev_sentences']:,} dev sentences ({sz['ewt']['dev_tokens']:,} tokens); WiC "
             f"{sz['wic']['train_pairs']:,} train / {sz['wic']['dev_pairs']:,} dev pairs; contextuality on "
             f"{sz['contextuality']['sentences']:,} EWT dev sentences ({sz['contextuality']['tokens']:,} tokens, "
             f"{result['contextuality']['layer_0']['words']} words in >= 5 sentences)"
             + (f"; layer means from {centred['means_from']}." if centred else "."),
             f"Time: {t['total']:.0f} s in all ({', '.join(f'{k} {v:.0f} s' for k, v in t.items() if k != 'total')}); "
             f"{result['machine']['cpu']}, torch {result['machine']['torch']}, "
             f"torch threads {result['machine']['torch_threads']}, usable CPUs {result['machine']['cpus_usable']}."]
    return "\n".join(lines) + "\n"


def write_outputs(result: dict, output_dir) -> Dict[str, Path]:
    """Write probe.json, probe.md and probe.png into ``output_dir`` (created). Returns the paths."""
    from .plot import plot_probe

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = _paths(out)
    paths["json"].write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown(result), encoding="utf-8")
    plot_probe(result, paths["png"])
    return paths


def _paths(out: Path) -> Dict[str, Path]:
    return {"json": out / "probe.json", "md": out / "probe.md", "png": out / "probe.png"}


def redraw(output_dir) -> Dict[str, Path]:
    """Write probe.md and probe.png again from ``output_dir``/probe.json, as :func:`write_outputs`
    does, without running the probe (after a change of the table or the figure; probe.json is
    left as it is). Returns the paths. Raises FileNotFoundError where there is no probe.json,
    ElmoDataError where it is not a probe result (no JSON object with a ``model``)."""
    from ..bilm.files import CONFIG_BYTES, read_text
    from ..errors import ElmoDataError
    from .plot import plot_probe

    paths = _paths(Path(output_dir))
    if not paths["json"].exists():
        raise FileNotFoundError(f"no probe result {str(paths['json'])!r} to redraw from: run the probe with "
                                "--output into that folder first")
    try:
        result = json.loads(read_text(paths["json"], CONFIG_BYTES, "probe result"))
    except ValueError as err:
        raise ElmoDataError(f"{paths['json']} is not JSON ({err}): run the probe again", paths["json"]) from None
    if not isinstance(result, dict) or "model" not in result:
        raise ElmoDataError(f"{paths['json']} is not a probe result (no \"model\"): run the probe again", paths["json"])
    paths["md"].write_text(markdown(result), encoding="utf-8")
    plot_probe(result, paths["png"])
    return paths
