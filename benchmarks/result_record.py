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
    (their ``key`` differs), for a record that several runs fill (one per model or script): kept
    only when that record was measured on the same CPU and with the same model (random weights
    of any shapes count as the same: the shapes are joined), else left out (printed). The
    records' ``command`` strings are joined."""
    if not os.path.isfile(path):
        return record
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    model, old_model = record["model"], old.get("model") or {}
    random = model.get("name") == RANDOM and old_model.get("name") == RANDOM
    if (old.get("machine") or {}).get("cpu") != record["machine"]["cpu"] or not (random or old_model == model):
        print(f"{path}: measured on {(old.get('machine') or {}).get('cpu')} with {old_model.get('name')}, not this "
              "CPU and model: its other rows are left out; rerun them here", file=sys.stderr)
        return record
    mine = {row[key] for row in record["rows"]}
    kept = [row for row in old.get("rows", []) if row.get(key) not in mine]
    out = {**record, "rows": kept + record["rows"]}
    if random and kept:
        out["model"] = {**model, "shapes": {**old_model["shapes"], **model["shapes"]}}
    if "command" in record:
        commands = [c for c in old.get("command", "").split("; ") if c and kept] + [record["command"]]
        out["command"] = "; ".join(dict.fromkeys(commands))
    return out


PIPELINE = "docs/results/speed_pipeline.json"


def write_row(path: str, script: str, row: dict, model: dict, argv=None, label: Optional[str] = None) -> None:
    """Write one script's ``row`` (keyed by ``run``: ``script``, and ``label`` where one script
    fills several rows; with its command) into the record at ``path`` that several scripts fill
    (:data:`PIPELINE`: the pipeline, ``embed``, Ray, the vector hooks, shared cores, training),
    keeping the other rows as :func:`merge_rows` does."""
    record = {"what": "The pipeline, embed, Ray, the vector hooks, shared cores and frozen-biLM training: one row "
                      "per script (benchmarks/), each written by its --out",
              "model": model, "machine": machine(),
              "code_path": "float32 CPU path (OneDnnPath, oneDNN char CNN); the elmo component through nlp.pipe; "
                           "spacy_elmo.embed (HDF5 journal); spacy_elmo.scale.embed_file_ray; "
                           "pipeline/vector_hooks.py; bilm/cpu_budget.py (threads = 'auto'); pipeline/cache.py",
              "rows": [{"run": script if label is None else f"{script} ({label})", "script": script,
                        "command": command(script, argv), **row}]}
    write(path, merge_rows(path, record, key="run"))
