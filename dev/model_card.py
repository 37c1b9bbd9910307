"""Write the default model's card and the README's model table from the model's ``meta.json``.

    python dev/model_card.py [MODEL_DIR] [--readme README.md] [--check]

MODEL_DIR: a shipped model folder (default spacy_elmo/models/en_elmo_small). Writes
MODEL_DIR/README.md (the model card: data, shape, training commands, tokens seen, held-out and
sense scores, passes over the corpus, the demo, limits) and, in the repository README, the block
between ``<!-- begin: default-model -->`` / ``<!-- end: default-model -->`` (the README's demo table
quotes ``docs/results/demo_seeds.json``; tests/test_results.py checks it). Everything but the
passes comes from meta.json: ``dev/ship_default_model.py`` stores there the lineage, the held-out
perplexity of the shipped files, WiC, the blind sense set and the demo's dev scores (``--demo``).
The passes section of the default model comes from ``dev/default_model_candidates.json`` (every
stage end and later stretch, with the stop rule of dev/RELEASING.md: :func:`load_wall`). With ``--check``
nothing is written; the exit status is 1 if a file differs from what would be written
(tests/test_results.py runs it).
"""
import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Optional

import srsly

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "spacy_elmo" / "models" / "en_elmo_small"
WALL_RECORD = ROOT / "dev" / "default_model_candidates.json"


def lineage_tokens(meta: dict) -> int:
    t = meta["training"]
    return int(t.get("lineage_tokens", t.get("tokens_seen_total", t["tokens_seen"])))


def _shape(meta: dict) -> dict:
    o = meta["options"]
    cnn, lstm = o["char_cnn"], o["lstm"]
    return {"filters": sum(n for _, n in cnn["filters"]), "widths": f"{cnn['filters'][0][0]}-{cnn['filters'][-1][0]}",
            "char_dim": cnn["embedding"]["dim"], "highway": cnn["n_highway"], "proj": lstm["projection_dim"],
            "cells": lstm["dim"], "layers": lstm["n_layers"], "out": 2 * lstm["projection_dim"]}


def _ppl(meta: dict) -> float:
    return (meta.get("heldout_shipped") or meta["heldout"])["perplexity"]


def default_model_block(meta: dict) -> str:
    s = _shape(meta)
    wic = meta.get("evaluation", {}).get("wic", {})
    rows = [
        ("shape", f"char CNN ({s['filters']} filters), {s['layers']}-layer biLSTM ({s['cells']} cells, projection "
                  f"{s['proj']}); output {s['layers'] + 1} layers x {s['out']} dims"),
        ("parameters", f"{meta['parameters']['biLM'] / 1e6:.2f}M biLM + {meta['parameters']['lm_head'] / 1e6:.2f}M "
                       "softmax head"),
        ("tokens seen (all warm starts)", f"{lineage_tokens(meta) / 1e6:.1f}M"),
        ("held-out perplexity", f"{_ppl(meta):.1f} ({meta['heldout']['tokens']:,} held-out tokens)"),
    ]
    top = f"layer_{s['layers']}"
    if top in wic:
        avg = wic.get("average", {})
        rows.append(("WiC dev, top layer / layer average", f"{wic[top]['dev_accuracy']:.1f} / "
                                                           f"{avg.get('dev_accuracy', float('nan')):.1f}"))
    body = "\n".join(f"| {k} | {v} |" for k, v in rows)
    return (f"| `en_elmo_small` (from its `meta.json`) | |\n|---|---|\n{body}\n")


def demo_block(meta: dict) -> str:
    demo = meta.get("evaluation", {}).get("demo")
    if not demo:
        return "(no demo scores recorded in the model's meta.json)\n"
    lines = ["| component | data (dev) | baseline | ELMo | gain |", "|---|---|---:|---:|---:|"]
    for row in demo["rows"]:
        lines.append(f"| {row['component']} | {row['data']} | {row['baseline']:.2f} | **{row['elmo']:.2f}** | "
                     f"{row['elmo'] - row['baseline']:+.2f} |")
    lines.append("")
    lines.append(f"One run of `spacy project run demo` ({demo['setting']}); dev scores from `spacy evaluate`. "
                 "One run's gain moves by a few tenths of a UPOS point and a few F1 points with the seed, the CPU "
                 "and the thread count; the mean over seeds, with its spread, is in the repository's README.")
    return "\n".join(lines) + "\n"


def _commands(meta: dict) -> str:
    lines = []
    for k, stage in enumerate(meta.get("lineage") or []):
        start = "from scratch" if k == 0 else "warm-started from the stage above"
        for name, (old, new) in (stage.get("widened") or {}).items():
            start += f" (its {name} widened from {old} to {new}, function-preserving: pretrain/widen.py)"
        lines.append(f"{k + 1}. {stage['steps']:,} steps, {stage['tokens_seen'] / 1e6:.1f}M tokens, {start}:")
        for c in stage["commands"]:
            lines.append(f"   - from step {c['at_step']:,}: `{c['command']}`")
        if not stage["commands"]:
            lines.append("   - (commands not recorded)")
    return "\n".join(lines)


def _record(meta: dict) -> str:
    """Where the repository keeps the model's full record (its meta.json's ``record``)."""
    return (meta.get("record") or "dev/models/").split()[0]


def _wic_table(meta: dict) -> str:
    wic = meta.get("evaluation", {}).get("wic")
    if not wic:
        return "(not measured)\n"
    lines = ["| view | WiC dev | WiC train, 10-fold CV |", "|---|---:|---:|"]
    for view, v in wic.items():
        if isinstance(v, dict) and "dev_accuracy" in v:
            name = "layer average" if view == "average" else view.replace("_", " ")
            lines.append(f"| {name} | {v['dev_accuracy']:.1f} | {v.get('train_cv_accuracy', float('nan')):.1f} |")
    return "\n".join(lines) + "\n"


def model_card(meta: dict, size_mb: float, wall: Optional[dict] = None) -> str:
    s, corpus, t = _shape(meta), meta["corpus"], meta["training"]
    files = "\n".join(f"- `{name}`: {f['lines']:,} lines, {f['tokens']:,} tokens"
                      for name, f in corpus["files"].items())
    senses = meta.get("evaluation", {}).get("senses", {})
    h = meta.get("heldout_shipped") or meta["heldout"]
    return f"""# en_elmo_small: the embedded default English biLM of spacy-elmo

`spacy_elmo.DEFAULT_MODEL`: used by `nlp.add_pipe("elmo")` and `BiLM.from_pretrained("en_elmo_small")`.
It ships inside the package; it is not AllenNLP's `elmo-small` (`python -m spacy_elmo download
elmo-small`). This card is written from `meta.json` in this folder.

## Data

{files}

{corpus['train_tokens']:,} training tokens after tokenisation ({corpus['tokenizer']}); held out:
{corpus['heldout_rule']}. Licences: {corpus['license']} (see `ATTRIBUTION.md`).

## Shape

- char CNN over UTF-8 bytes: {s['char_dim']}-dim byte embeddings, {s['filters']} filters (widths {s['widths']}),
  {s['highway']} highway layer(s), projection to {s['proj']}
- biLSTM: {s['layers']} layers per direction, {s['cells']} cells with projection to {s['proj']}, residual
  connection between the layers, no cell or projection clipping
- output: {s['layers'] + 1} layers of {s['out']} dims (layer 0 = char CNN [x; x])
- parameters: {meta['parameters']['biLM']:,} biLM + {meta['parameters']['lm_head']:,} adaptive-softmax head
  ({meta['softmax']['vocab_size']:,} words, `lm_head.hdf5` + `vocab.txt`, for perplexity and further training)
- files: `options.json` + `weights.hdf5` (the bilm-tf / AllenNLP layout), stored as
  {meta.get('storage', 'float32')}; {size_mb:.1f} MB in the package

## Training

`python -m spacy_elmo pretrain` on the corpus files above (the config of the last stage is `config.cfg`
in this folder; its `[corpus] paths` name those files):

{_commands(meta)}

Each command runs from the repository root (`configs/`), with the corpus files where the config's
`[corpus] paths` say. Left out: resumes that only continued an interrupted run (a resume is exact)
and each invocation's `--training.threads` (1 or 2 cores); `{_record(meta)}` in the repository keeps
every command.

Tokens seen through all stages: **{lineage_tokens(meta):,}**; the last stage ran {t['steps']:,} steps
at {t.get('tokens_per_second', 0):,.0f} tokens/s.

## Evaluation

- held-out perplexity of the files as shipped: **{h['perplexity']:.2f}** (forward {h['forward']:.2f}, backward
  {h['backward']:.2f}) on {h['tokens']:,} held-out tokens
- WiC (Pilehvar and Camacho-Collados 2019; cosine threshold tuned on WiC train):

{_wic_table(meta)}
- blind sense set (`tests/data/senses_blind.json`), top layer, nearest-neighbour sense accuracy:
  {senses.get('blind_1nn_mean', float('nan')):.3f} (mean of {len(senses.get('blind_1nn', {}))} words)

{data_wall_block(meta, wall)}## Demo: ELMo against spaCy's tok2vec

{demo_block(meta)}
## Limits

- English only, trained on encyclopedic, news and debate text: other registers (social media, chat)
  are further from what it saw.
- A small biLM: about a tenth of the original ELMo's parameters and a small fraction of its
  training tokens; the original ELMo models (`python -m spacy_elmo download`) tell senses apart
  better (published WiC 57.7).
- The char CNN reads the first 48 UTF-8 bytes of a token; longer tokens that agree on those bytes
  share layer 0. It was trained on sentences of at most 50 tokens; longer ones are cut into windows.
{_speed(meta)}"""


def load_wall(record_path: Path = WALL_RECORD) -> Optional[dict]:
    """The data wall of the default model's lineage, from dev/compute_wall.py on the candidates
    record: ``{"rows": its stretches, "fired": bool, "reason": str, "rule": the rule in words}``;
    None when the record is absent."""
    if not record_path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("compute_wall", ROOT / "dev" / "compute_wall.py")
    wall = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wall)
    rows = wall.stretches(wall.load_record(str(record_path)))
    fired, reason = wall.stop_rule(rows)
    return {"rows": rows, "fired": fired, "reason": reason, "rule": wall.rule_text()}


def _unreleased(row: dict) -> str:
    how = "warm start from" if row["rewarmed"] else "continues the stable phase of"
    return f"not released; {how} {row['start_tokens'] / 1e6:.1f}M"


def data_wall_block(meta: dict, wall: Optional[dict]) -> str:
    """The card's section on passes over the corpus: one row per stage end and per later stretch of
    the same shape, then whether the stop rule of dev/RELEASING.md has fired ('' without a record)."""
    if not wall:
        return ""
    shipped, per_pass = lineage_tokens(meta), meta["corpus"]["train_tokens"]
    lines = ["| tokens seen | passes | held-out perplexity | change per 10M tokens | train / held-out "
             "perplexity | |", "|---:|---:|---:|---:|---:|---|"]
    for r in wall["rows"]:
        change = f"{-100 * r['gain_per_10m']:+.2f}%" if r["gain_per_10m"] is not None else ""
        ratio = f"{r['own_ratio']:.3f}" if r["own_ratio"] else ""
        what = "**this model**" if r["tokens"] == shipped else ("released" if r["released"] else _unreleased(r))
        lines.append(f"| {r['tokens'] / 1e6:.1f}M | {r['tokens'] / per_pass:.2f} | {r['perplexity']:.2f} | {change} "
                     f"| {ratio} | {what} |")
    more = ("For better vectors, use an official ELMo (`python -m spacy_elmo download elmo-original`, trained on "
            "the 1B Word Benchmark), or continue pretraining this model or an official one on your own text "
            "(`--training.init_from en_elmo_small`; see \"Continued pretraining\" in the documentation).")
    if wall["fired"]:
        verdict = (f"The stop rule of the release process has fired ({wall['reason']}): this shape has reached "
                   f"what this corpus gives, and no further stage is trained. {more}")
    else:
        verdict = (f"The stop rule of the release process ({wall['rule']}) has not fired ({wall['reason']}), "
                   f"so the lineage goes on until it does. {more}")
    table = "\n".join(lines)
    return f"""## Passes over the corpus

The training text is {per_pass:,} tokens, so this model has read it
{shipped / per_pass:.2f} times. Every stage end, and every later stretch of the same shape (a
continued run, decayed and measured, released only if it passes the release gate), as held-out
perplexity (float32, {meta['heldout']['tokens']:,} held-out tokens) against the tokens seen:

{table}

{verdict}

"""


def _speed(meta: dict) -> str:
    sp = meta.get("evaluation", {}).get("speed")
    if not sp:
        return ""
    previous = (f"; {sp['previous_shape']}: {sp['previous_tokens_per_s']:,.0f} tokens/s and "
                f"{sp['previous_bytes_per_token']:,} bytes per token" if sp.get("previous_shape") else "")
    measured = f"; measured with {sp['measured_with']}" if sp.get("measured_with") else ""
    return (f"- Speed and memory: {sp['tokens_per_s']:,.0f} tokens/s and {sp['bytes_per_token']:,} bytes per token "
            f"in `doc._.elmo` (`{sp['command']}`, {sp['machine']}{measured}{previous}).\n")


def replace_block(text: str, name: str, body: str, path: Path) -> str:
    begin, end = f"<!-- begin: {name} -->", f"<!-- end: {name} -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: markers {begin} / {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def render(model_dir: Path, readme: Optional[Path]) -> dict:
    """{path: new text} of the files this script writes."""
    meta = srsly.read_json(model_dir / "meta.json")
    size = sum(p.stat().st_size for p in model_dir.iterdir() if p.is_file() and p.name != "README.md") / 2 ** 20
    out = {model_dir / "README.md": model_card(meta, size, load_wall() if model_dir.resolve() == DEFAULT else None)}
    if readme is not None:
        text = readme.read_text(encoding="utf-8")
        out[readme] = replace_block(text, "default-model", default_model_block(meta), readme)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?", default=str(DEFAULT))
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--no-readme", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    files = render(Path(args.model_dir), None if args.no_readme else Path(args.readme))
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in stale:
            print(f"{p} is not what dev/model_card.py writes: run it", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(files[p], encoding="utf-8")
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
