"""Copy a pretraining run's exported model into the package as a shipped model.

usage: python dev/ship_default_model.py training/en_elmo_small [en_elmo_small] [--float16] [--demo METRICS_DIR]

Copies model/{options.json,weights.hdf5,lm_head.hdf5,vocab.txt,meta.json} and the run's config.cfg
into spacy_elmo/models/NAME/, writes ATTRIBUTION.md for the training text, and checks the 30 MB
package budget. The weights are copied as they are (float32), or with ``--float16`` stored as
float16 (half the size; every reader restores float32, so the shipped function is the trained
one with its weights rounded to float16). The held-out perplexity of the shipped files (after any
rounding) is measured again on the run's whole held-out split and stored as ``heldout_shipped``.

If the run was warm-started (``[training] init_from``), the source model's meta.json goes into the
new one as ``init_from`` (its steps, tokens, held-out perplexity, history and evaluation), and so
on back to the first run (the replaced release's meta.json carries its own lineage; a run's model
directory is followed through its run's config.cfg); ``training.tokens_seen_total`` counts them
all, and so does ``training.lineage_tokens`` (the name the model card reads). With ../shared present,
WiC (dev/wic.py) is measured for the new model and for any model of the lineage without it, and
stored in ``evaluation.wic``; the blind sense set's top-layer 1-NN accuracy goes into
``evaluation.senses``. ``--demo METRICS_DIR`` (``metrics/demo`` after ``spacy project run demo``
with this model) stores the demo's dev scores in ``evaluation.demo``.

That full record (every run's commands with their run paths, every evaluation of the history,
the lineage) stays in the repository as ``dev/models/NAME.json``; the package's ``meta.json`` is
its short form (:func:`user_meta`: shape, data, tokens, perplexity, evaluation, and per stage the
commands that set what it trained, with relative paths). Then ``python dev/model_card.py`` writes
the model card and the README's tables from that meta.json.
"""
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parent.parent
FILES = ["options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt", "meta.json"]
MODELS = ROOT / "spacy_elmo" / "models"
RECORDS = ROOT / "dev" / "models"  # the full meta.json of each shipped model
# [training] settings of how one invocation runs, not of what it trains (left out of the card)
INVOCATION = {"--training.threads", "--training.device", "--training.stop_after_minutes",
              "--training.checkpoint_minutes"}
LIMIT_MB = 30
WIC_SPLIT = "dev, threshold tuned on train; train_cv_accuracy: train, 10-fold cross-validation (dev/wic.py)"

ATTRIBUTION = """# Training text of {name}

This biLM was trained by `python -m spacy_elmo pretrain` (see `config.cfg` and `meta.json`
in this folder: the exact command, config, corpus files and their sizes) on:

- **Wikipedia** (English, 2020-21 slice), `wikipedia_en.txt.gz`: text from Wikipedia contributors,
  licensed CC BY-SA 3.0 / 4.0, https://en.wikipedia.org/ .
- **Wikinews** (English), `wikinews_en.txt.gz`: text from Wikinews contributors, licensed CC BY 2.5,
  https://en.wikinews.org/ .
- **UN General Debate speeches** (recent years), `un_debates_en.txt.gz`: CC0.

The weights are a statistical model derived from that text; they contain no text beyond the
softmax vocabulary in `vocab.txt` (single tokens). Held-out lines (every 100th block of 1,000 lines
of each file) were not trained on.
"""


def _init_from(run_dir: Path):
    """The [training] init_from of a run directory's config.cfg (a Path), or None."""
    from confection import Config

    cfg = run_dir / "config.cfg"
    if not cfg.is_file():
        return None
    value = Config().from_disk(cfg, interpolate=False)["training"].get("init_from")
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() or path.exists() else ROOT / path  # configs name paths from the repo root


def full_meta(model_dir: Path) -> dict:
    """The full meta of a model folder: ``dev/models/NAME.json`` for a model shipped in the package
    (its meta.json is the short form), else the folder's meta.json."""
    record = RECORDS / f"{model_dir.name}.json"
    if model_dir.resolve().parent == MODELS.resolve() and record.is_file():
        return json.loads(record.read_text())
    return json.loads((model_dir / "meta.json").read_text())


def _source_meta(model_dir: Path, dst: Optional[Path] = None, measure_wic: bool = True) -> dict:
    """The full meta of a warm start's source model (:func:`full_meta`), with its own lineage
    under ``init_from``, and WiC measured where it is missing (if ``measure_wic``). ``dst`` (the
    release being replaced) carries its lineage already; a run's model/ directory is followed
    through the run's config.cfg."""
    meta = full_meta(model_dir)
    if measure_wic and "wic" not in meta.get("evaluation", {}):
        scores = _wic(model_dir)
        if scores is not None:
            meta.setdefault("evaluation", {})["wic"] = {"split": WIC_SPLIT, **scores}
    if (dst is None or model_dir.resolve() != dst.resolve()) and "init_from" not in meta:
        parent = _init_from(model_dir.parent) if model_dir.name == "model" else None
        if parent is not None and (parent / "meta.json").is_file():
            meta["init_from"] = _source_meta(parent, dst, measure_wic)
    if "init_from" in meta:
        previous = meta["init_from"]
        meta["training"]["tokens_seen_total"] = meta["training"]["tokens_seen"] + previous["training"].get(
            "tokens_seen_total", previous["training"]["tokens_seen"])
    return meta


def _lineage(src: Path, dst: Path) -> dict:
    """The warm start's source model's full meta with its lineage (see :func:`_source_meta`), or
    {} for a run trained from scratch. Read before anything in ``dst`` is replaced."""
    init_from = _init_from(src)
    if init_from is None or not (init_from / "meta.json").is_file():
        return {}
    return _source_meta(init_from, dst)


def stages(meta: dict) -> List[dict]:
    """The lineage of a full meta, oldest first: each stage's meta (the model's own last)."""
    out, m = [], meta
    while m is not None:
        out.append(m)
        m = m.get("init_from")
    return out[::-1]


def shown(command: List[str]) -> List[str]:
    """A recorded command as users see it: an absolute OUTPUT_DIR becomes ``training/NAME`` (where
    the run lay on its machine says nothing about how to reproduce it), and the invocation's
    settings (threads, device, time limits) are left out."""
    out, skip = [], False
    for k, arg in enumerate(command):
        if skip:
            skip = False
        elif arg.split("=", 1)[0] in INVOCATION:
            skip = "=" not in arg
        elif k and command[k - 1] == "pretrain" and arg.startswith("/"):
            out.append(f"training/{Path(arg).name}")
        else:
            out.append(arg)
    return out


def _settings(args: List[str]) -> dict:
    """{--section.key: value} of a command line."""
    found = {}
    for k, arg in enumerate(args):
        if arg.startswith("--") and "." in arg:
            key, _, value = arg.partition("=")
            found[key] = value if _ else (args[k + 1] if k + 1 < len(args) else "")
    return found


def stage_commands(commands: List[dict]) -> List[dict]:
    """The commands that set what a stage trained: the first, and each later one that changes a
    setting or passes ``--from-stable`` (a resume that only continued an interrupted run is left
    out: resuming is exact). [{"at_step": N, "command": "python -m spacy_elmo pretrain ..."}]."""
    out, settings = [], {}
    for c in commands:
        args = shown(c["command"])
        new = _settings(args)
        if not out or "--from-stable" in args or any(settings.get(k) != v for k, v in new.items()):
            out.append({"at_step": c.get("at_step", 0), "command": shlex.join(args)})
        settings.update(new)
    return out


def user_meta(meta: dict, name: str) -> dict:
    """The short meta.json shipped in the package, from the full one: no run paths, no history."""
    t = meta["training"]
    out = {k: meta[k] for k in ("name", "description", "options", "parameters", "softmax", "corpus", "storage")
           if k in meta}
    out["training"] = {"steps": t["steps"], "tokens_seen": t["tokens_seen"],
                       "lineage_tokens": t.get("lineage_tokens", t["tokens_seen"]),
                       "tokens_per_second": t.get("tokens_per_second"), "torch": t.get("torch")}
    out["lineage"] = []
    for stage in stages(meta):
        cmds = stage["training"].get("commands") or []
        widened = next((c["path"]["widened"] for c in cmds if c.get("path", {}).get("widened")), None)
        out["lineage"].append({"steps": stage["training"]["steps"], "tokens_seen": stage["training"]["tokens_seen"],
                               **({"widened": widened} if widened else {}), "commands": stage_commands(cmds)})
    out["heldout"] = {k: v for k, v in (meta.get("heldout") or {}).items() if k != "full_heldout"}
    for key in ("heldout_shipped", "evaluation"):
        if key in meta:
            out[key] = meta[key]
    out["record"] = f"dev/models/{name}.json in the repository: every command, evaluation and run of the lineage"
    return out


def _carry_speed(meta: dict, previous: Optional[dict]) -> None:
    """Keep the shipped model's ``evaluation.speed`` when the shape (``options``) is unchanged: speed
    and ``doc._.elmo`` bytes per token depend on the shape and the code, not on the weights."""
    speed = (previous or {}).get("evaluation", {}).get("speed")
    if speed and previous.get("options") == meta.get("options"):
        meta["evaluation"]["speed"] = speed


def _to_float16(path: Path) -> None:
    """Rewrite every floating-point dataset of an HDF5 file as float16, keeping names and the
    file's attributes (atomically: a temporary file renamed into place)."""
    import h5py
    import numpy

    tmp = path.with_suffix(path.suffix + ".tmp")
    with h5py.File(path, "r") as src, h5py.File(tmp, "w") as out:
        for key, value in src.attrs.items():
            out.attrs[key] = value

        def copy(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = obj[...]
                out.create_dataset(name, data=data.astype(numpy.float16) if data.dtype.kind == "f" else data)

        src.visititems(copy)
    tmp.replace(path)


def _heldout(src: Path, dst: Path) -> dict:
    """Perplexity of the shipped files on the run's whole held-out split (its corpus cache)."""
    from spacy_elmo.pretrain.perplexity import run_scorer

    corpus, score = run_scorer(str(src), str(dst))
    return {**score(corpus["heldout"]), "files": "as shipped (after any float16 rounding)"}


def _wic(dst: Path):
    sys.path.insert(0, str(ROOT / "dev"))
    import wic

    from spacy_elmo.bilm import BiLM

    if not Path(wic.DEFAULT_WIC).is_dir():
        return None
    return wic.wic_scores(BiLM.from_files(dst / "options.json", dst / "weights.hdf5"), wic.DEFAULT_WIC)


DEMO_RUNS = [("tagger", "UD English-EWT, UPOS accuracy", "tagger-ewt", "tag_acc"),
             ("ner", "CoNLL-2003, F1", "ner-conll", "ents_f")]


def _demo(metrics_dir: Path) -> dict:
    """The demo's dev scores (``spacy evaluate --output`` files in METRICS_DIR), in points."""
    rows = []
    for component, data, run, key in DEMO_RUNS:
        scores = [json.loads((metrics_dir / f"{run}-{kind}.json").read_text())[key] for kind in ("base", "elmo")]
        rows.append({"component": component, "data": data, "baseline": 100 * scores[0], "elmo": 100 * scores[1]})
    cfg = (ROOT / "project.yml").read_text()
    setting = ", ".join(f"{k} {_var(cfg, k)}" for k in ("demo_train_sents", "demo_dev_sents", "demo_max_steps"))
    return {"rows": rows, "setting": setting + ", frozen biLM, seed 0"}


def _var(project_yml: str, key: str) -> str:
    line = next(line for line in project_yml.splitlines() if line.strip().startswith(key + ":"))
    return line.split(":", 1)[1].strip()


def _senses(dst: Path) -> dict:
    sys.path.insert(0, str(ROOT / "dev"))
    import release_gate

    from spacy_elmo.bilm import BiLM

    nn = release_gate.blind_nn(BiLM.from_files(dst / "options.json", dst / "weights.hdf5"))
    return {"blind_1nn": nn["words"], "blind_1nn_mean": nn["mean"]}


def shipped_config(text: str) -> str:
    """The run's config.cfg as it ships: ``[corpus] paths`` name the corpus files (their base
    names; meta.json records their sizes), not where they lay on the training machine."""
    out, section = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            section = line.strip()
        elif section == "[corpus]" and line.startswith("paths = "):
            paths = json.loads(line[len("paths = "):])
            line = f"paths = {json.dumps([Path(p).name for p in paths])}\n"
        out.append(line)
    return "".join(out)


def main(run_dir: str, name: str = "en_elmo_small", float16: bool = False, demo: Optional[str] = None) -> None:
    src = Path(run_dir)
    dst = ROOT / "spacy_elmo" / "models" / name
    dst.mkdir(parents=True, exist_ok=True)
    previous = _lineage(src, dst)
    for f in FILES:
        shutil.copy2(src / "model" / f, dst / f)
    if float16:
        for f in ("weights.hdf5", "lm_head.hdf5"):
            _to_float16(dst / f)
    from spacy_elmo.bilm import integrity

    integrity.record(str(dst), FILES[:4])  # sha256.json, checked on every load
    meta = json.loads((dst / "meta.json").read_text())
    meta["storage"] = "float16 (read as float32)" if float16 else "float32"
    if previous:
        meta["init_from"] = {k: previous[k] for k in ("training", "heldout", "heldout_shipped", "history",
                                                       "evaluation", "init_from") if k in previous}
        meta["training"]["tokens_seen_total"] = meta["training"]["tokens_seen"] + previous["training"].get(
            "tokens_seen_total", previous["training"]["tokens_seen"])
    meta["training"]["lineage_tokens"] = meta["training"].get("tokens_seen_total", meta["training"]["tokens_seen"])
    if (src / "corpus" / "key.json").is_file():
        meta["heldout_shipped"] = _heldout(src, dst)
    wic_scores = _wic(dst)
    if wic_scores is not None:
        meta.setdefault("evaluation", {})["wic"] = {"split": WIC_SPLIT, **wic_scores}
    meta.setdefault("evaluation", {})["senses"] = _senses(dst)
    if demo:
        meta["evaluation"]["demo"] = _demo(Path(demo))
    _carry_speed(meta, previous)
    RECORDS.mkdir(parents=True, exist_ok=True)
    (RECORDS / f"{name}.json").write_text(json.dumps(meta, indent=2))
    (dst / "meta.json").write_text(json.dumps(user_meta(meta, name), indent=2))
    (dst / "config.cfg").write_text(shipped_config((src / "config.cfg").read_text(encoding="utf-8")),
                                    encoding="utf-8")
    (dst / "ATTRIBUTION.md").write_text(ATTRIBUTION.format(name=name), encoding="utf-8")
    size = sum(p.stat().st_size for p in dst.iterdir()) / 2 ** 20
    print(f"{dst}: {size:.1f} MB; steps {meta['training']['steps']}, tokens {meta['training']['tokens_seen']:,}, "
          f"held-out {meta.get('heldout')}, as shipped {meta.get('heldout_shipped')}")
    if size > LIMIT_MB:
        sys.exit(f"{dst} is {size:.1f} MB, over the {LIMIT_MB} MB budget")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("name", nargs="?", default="en_elmo_small")
    ap.add_argument("--float16", action="store_true")
    ap.add_argument("--demo", default=None, metavar="METRICS_DIR")
    a = ap.parse_args()
    main(a.run_dir, a.name, float16=a.float16, demo=a.demo)
