"""Copy a pretraining run's exported model into the package as a shipped model.

usage: python dev/ship_default_model.py training/en_elmo_small [en_elmo_small]

Copies model/{options.json,weights.hdf5,lm_head.hdf5,vocab.txt,meta.json} and the run's config.cfg
into spacy_elmo/models/NAME/, writes ATTRIBUTION.md for the training text, and checks the 30 MB
package budget. The weights are copied as they are (float32): the model must stay the function
the pretraining command produced.

If the run was warm-started (``[training] init_from``) from the model being replaced, the
replaced release's meta.json goes into the new one as ``init_from`` (its steps, tokens, held-out
perplexity, history and evaluation), and ``training.tokens_seen_total`` counts both: the model's
whole lineage stays on record. With ../shared present, WiC (dev/wic.py) is measured and stored
in ``evaluation.wic``.
"""
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ["options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt", "meta.json"]
LIMIT_MB = 30

ATTRIBUTION = """# Training text of {name}

This biLM was trained by `python -m spacy_elmo pretrain` (see `config.cfg` and `meta.json`
in this folder: the exact command, config, corpus files and their sizes) on:

- **Wikipedia** (English, 2020-21 slice), `wikipedia_en.txt.gz`: text from Wikipedia contributors,
  licensed CC BY-SA 3.0 / 4.0, https://en.wikipedia.org/ .
- **Wikinews** (English), `wikinews_en.txt.gz`: text from Wikinews contributors, licensed CC BY 2.5,
  https://en.wikinews.org/ .
- **UN General Debate speeches** (recent sessions), `un_debates_en.txt.gz`: CC0.

The weights are a statistical model derived from that text; they contain no text beyond the
softmax vocabulary in `vocab.txt` (single tokens). Held-out lines (every 100th block of 1,000 lines
of each file) were not trained on.
"""


def _lineage(src: Path, dst: Path) -> dict:
    """The replaced release's meta.json when the run was warm-started from it, else {}."""
    from confection import Config

    init_from = Config().from_disk(src / "config.cfg", interpolate=False)["training"].get("init_from")
    old = dst / "meta.json"
    if not init_from or not old.is_file() or Path(init_from).resolve() != dst.resolve():
        return {}
    previous = json.loads(old.read_text())
    if "wic" not in previous.get("evaluation", {}):  # releases before dev/wic.py: measure it now
        scores = _wic(dst)
        if scores is not None:
            previous.setdefault("evaluation", {})["wic"] = {"split": "dev, threshold tuned on train (dev/wic.py)", **scores}
    return previous


def _wic(dst: Path):
    sys.path.insert(0, str(ROOT / "dev"))
    import wic

    from spacy_elmo.bilm import BiLM

    if not Path(wic.DEFAULT_WIC).is_dir():
        return None
    return wic.wic_scores(BiLM.from_files(dst / "options.json", dst / "weights.hdf5"))


def main(run_dir: str, name: str = "en_elmo_small") -> None:
    src = Path(run_dir)
    dst = ROOT / "spacy_elmo" / "models" / name
    dst.mkdir(parents=True, exist_ok=True)
    previous = _lineage(src, dst)
    for f in FILES:
        shutil.copy2(src / "model" / f, dst / f)
    from spacy_elmo.bilm import integrity

    integrity.record(str(dst), FILES[:4])  # sha256.json, checked on every load
    meta = json.loads((dst / "meta.json").read_text())
    if previous:
        meta["init_from"] = {k: previous[k] for k in ("training", "heldout", "history", "evaluation", "init_from")
                             if k in previous}
        meta["training"]["tokens_seen_total"] = meta["training"]["tokens_seen"] + previous["training"].get(
            "tokens_seen_total", previous["training"]["tokens_seen"])
    wic_scores = _wic(dst)
    if wic_scores is not None:
        meta.setdefault("evaluation", {})["wic"] = {"split": "dev, threshold tuned on train (dev/wic.py)", **wic_scores}
    (dst / "meta.json").write_text(json.dumps(meta, indent=2))
    shutil.copy2(src / "config.cfg", dst / "config.cfg")
    (dst / "ATTRIBUTION.md").write_text(ATTRIBUTION.format(name=name), encoding="utf-8")
    size = sum(p.stat().st_size for p in dst.iterdir()) / 2 ** 20
    print(f"{dst}: {size:.1f} MB; steps {meta['training']['steps']}, tokens {meta['training']['tokens_seen']:,}, "
          f"held-out {meta.get('heldout')}")
    if size > LIMIT_MB:
        sys.exit(f"{dst} is {size:.1f} MB, over the {LIMIT_MB} MB budget")


if __name__ == "__main__":
    main(*sys.argv[1:])
