"""The parts every result record (``docs/results/*.json``) has, for the scripts that write them.

A record names its model (:func:`shipped_model`: the packaged ``en_elmo_small`` by name, lineage
tokens and weights sha256; :func:`random_model`: ``random weights`` with their shapes), its machine
(:func:`machine`: ``cpu`` as ``spacy_elmo.bilm.cpu_budget.cpu_name`` gives it, the usable cores,
torch's version, the load average when the run started), the command that made it and no date;
a speed record names its code path. tests/test_results.py checks the records and the pages
that quote them. :func:`write` writes one (indented JSON, one final newline).

Import from a script of benchmarks/ or dev/: ``sys.path.insert(0, <repo>/benchmarks)`` then
``import result_record``. Needs torch only for :func:`machine`.
"""
import json
import os
import sys
from typing import Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(REPO, "spacy_elmo", "models", "en_elmo_small")
RANDOM = "random weights"
if REPO not in sys.path:
    sys.path.insert(0, REPO)


def shipped_model() -> dict:
    """The packaged en_elmo_small: name, lineage tokens (meta.json) and weights sha256 (sha256.json)."""
    with open(os.path.join(SHIPPED, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    with open(os.path.join(SHIPPED, "sha256.json"), encoding="utf-8") as f:
        digests = json.load(f)
    return {"name": "en_elmo_small", "lineage_tokens": meta["training"]["lineage_tokens"],
            "weights_sha256": digests["weights.hdf5"]}


def model_identity(name_or_dir: str) -> dict:
    """A trained model by packaged or downloaded name, or directory: its folder name, weights
    sha256 (computed) and lineage tokens (its meta.json's ``training``; None without one)."""
    from spacy_elmo.bilm.integrity import sha256
    from spacy_elmo.hub.resolve import resolve

    folder = name_or_dir if os.path.isdir(name_or_dir) else resolve(name_or_dir)
    meta_path = os.path.join(folder, "meta.json")
    meta = {}
    if os.path.isfile(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    training = meta.get("training") or {}
    return {"name": os.path.basename(os.path.normpath(folder)),
            "lineage_tokens": training.get("lineage_tokens", training.get("tokens_seen")),
            "weights_sha256": sha256(os.path.join(folder, "weights.hdf5"))}


def options_shape(options: dict) -> str:
    """A biLM's shape in words, from its options.json: ``LSTM 4096/512, 2048 char filters, 2 highway layers``."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    highways = cnn["n_highway"]
    return (f"LSTM {lstm['dim']}/{lstm['projection_dim']}, {sum(n for _, n in cnn['filters'])} char filters, "
            f"{highways} highway layer{'' if highways == 1 else 's'}")


def random_model(shapes: dict, **extra) -> dict:
    """``random weights`` with ``shapes`` ({label: shape in words}) and any ``extra`` facts (std, seed)."""
    return {"name": RANDOM, "shapes": shapes, **extra}


def machine(threads: Optional[int] = None, **extra) -> dict:
    """The CPU (``cpu_budget.cpu_name``: model name and vector extensions), the cores this process
    may use, torch's version, the torch threads (``threads``, else torch's current number) and
    the 1-minute load average now (other jobs on the machine; a script may pass the one at its
    start as ``load_average``), plus ``extra``."""
    import torch

    from spacy_elmo.bilm.cpu_budget import cpu_name, usable_cpus

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": cpu_name(), "cores": len(usable_cpus()[0]), "torch": torch.__version__,
            "threads": torch.get_num_threads() if threads is None else threads,
            "load_average": None if load is None else round(load, 2), **extra}


def command(script: str, argv: Optional[Sequence[str]] = None) -> str:
    """``python SCRIPT ARGS`` as run (``argv``: the arguments, default sys.argv[1:])."""
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python", script, *args])


def write(path: str, record: dict) -> None:
    """Write ``record`` to ``path`` as indented JSON ending in a newline. Raises ValueError naming
    the key when the record lacks a model, a machine's cpu, or (``speed_*.json``) a code path."""
    if "model" not in record or not (record.get("machine") or {}).get("cpu"):
        raise ValueError(f"{path}: a record names its model and machine.cpu")
    if os.path.basename(path).startswith("speed_") and not record.get("code_path"):
        raise ValueError(f"{path}: a speed record names its code_path")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2, ensure_ascii=False)
        f.write("\n")


def merge_rows(path: str, record: dict, key: str = "model") -> dict:
    """``record`` with the rows of the record already at ``path`` that this run did not measure
    (their ``key`` differs), for a record that several runs fill (one per model): kept only when
    that record was measured on the same CPU, else left out (printed). The commands are joined."""
    if not os.path.isfile(path):
        return record
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    if (old.get("machine") or {}).get("cpu") != record["machine"]["cpu"]:
        print(f"{path}: measured on {(old.get('machine') or {}).get('cpu')}, not this CPU: its other rows are "
              "left out; rerun them here", file=sys.stderr)
        return record
    mine = {row[key] for row in record["rows"]}
    kept = [row for row in old.get("rows", []) if row.get(key) not in mine]
    commands = [c for c in old.get("command", "").split("; ") if c and kept] + [record["command"]]
    model = record["model"]
    if kept and model.get("name") == RANDOM and old["model"].get("name") == RANDOM:
        model = {**model, "shapes": {**old["model"]["shapes"], **model["shapes"]}}
    return {**record, "model": model, "rows": kept + record["rows"], "command": "; ".join(dict.fromkeys(commands))}
