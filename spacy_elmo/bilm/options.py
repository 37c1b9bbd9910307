"""ELMo ``options.json``: read, check and write the bilm-tf / AllenNLP options format.

Keys used (bilm-tf names)::

    {"lstm": {"dim": C, "projection_dim": P, "n_layers": L, "cell_clip": x|null,
              "proj_clip": x|null, "use_skip_connections": bool},
     "char_cnn": {"embedding": {"dim": d}, "filters": [[width, n], ...], "n_highway": k,
                  "activation": "relu"|"tanh", "n_characters": 262, "max_characters_per_token": 50}}

``cell_clip`` / ``proj_clip`` of ``null`` or ``0`` mean "no clipping". Other keys (bilm-tf's
training settings such as ``n_tokens_vocab``, ``dropout``, ``bidirectional``) are kept and ignored.
"""
import copy
import json
import os
from typing import Any, Dict

from .errors import ElmoWeightsError

REQUIRED_INT = (("lstm", "dim"), ("lstm", "projection_dim"), ("lstm", "n_layers"), ("char_cnn", "n_highway"))


def _fail(path, key, why):
    where = f"{path}: " if path else "options: "
    raise ElmoWeightsError(f"{where}{'.'.join(key)}: {why}", path=path, dataset=".".join(key))


def check_options(options: Any, path=None) -> Dict[str, Any]:
    """Validate an options dict and return a normalised deep copy.

    Required: ``lstm.dim``, ``lstm.projection_dim``, ``lstm.n_layers``, ``char_cnn.embedding.dim``,
    ``char_cnn.filters``, ``char_cnn.n_highway``. Defaults filled in: ``activation`` "relu",
    ``n_characters`` 262 (261 accepted, as bilm-tf writes it), ``max_characters_per_token`` 50,
    clips null, ``use_skip_connections`` false.
    Raises :class:`ElmoWeightsError` naming ``path`` and the bad key.
    """
    if not isinstance(options, dict):
        _fail(path, ("<root>",), f"expected a JSON object, got {type(options).__name__}")
    opts = copy.deepcopy(options)
    for section in ("lstm", "char_cnn"):
        if not isinstance(opts.get(section), dict):
            _fail(path, (section,), "missing section (expected an object)")
    for key in REQUIRED_INT:
        value = opts[key[0]].get(key[1])
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key[1] == "n_highway" else 1):
            _fail(path, key, f"expected a positive integer, got {value!r}")
    lstm, cnn = opts["lstm"], opts["char_cnn"]
    for clip in ("cell_clip", "proj_clip"):
        value = lstm.setdefault(clip, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            _fail(path, ("lstm", clip), f"expected a non-negative number or null, got {value!r}")
    skip = lstm.setdefault("use_skip_connections", False)
    if not isinstance(skip, bool):
        _fail(path, ("lstm", "use_skip_connections"), f"expected true/false, got {skip!r}")
    emb = cnn.get("embedding")
    if (not isinstance(emb, dict) or isinstance(emb.get("dim"), bool) or not isinstance(emb.get("dim"), int)
            or emb["dim"] < 1):
        _fail(path, ("char_cnn", "embedding", "dim"), f"expected a positive integer, got {emb!r}")
    filters = cnn.get("filters")
    ok = isinstance(filters, list) and len(filters) > 0 and all(
        isinstance(f, (list, tuple)) and len(f) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in f)
        for f in filters
    )
    if not ok:
        _fail(path, ("char_cnn", "filters"), f"expected a non-empty list of [width, n_filters], got {filters!r}")
    cnn["filters"] = [list(f) for f in filters]
    activation = cnn.setdefault("activation", "relu")
    if activation not in ("relu", "tanh"):
        _fail(path, ("char_cnn", "activation"), f"expected 'relu' or 'tanh', got {activation!r}")
    if cnn.setdefault("n_characters", 262) not in (261, 262):
        # bilm-tf writes 261 (training) or 262 (the +1 shifted ids); both mean the same vocabulary.
        _fail(path, ("char_cnn", "n_characters"), f"expected 262, got {cnn['n_characters']!r}")
    cnn["n_characters"] = 262
    if cnn.setdefault("max_characters_per_token", 50) != 50:
        _fail(path, ("char_cnn", "max_characters_per_token"), f"expected 50, got {cnn['max_characters_per_token']!r}")
    if max(w for w, _ in cnn["filters"]) > 50:
        _fail(path, ("char_cnn", "filters"), "a filter is wider than max_characters_per_token (50)")
    return opts


def read_options(path) -> Dict[str, Any]:
    """Read and check ``options.json``. Raises :class:`ElmoWeightsError` (missing file, bad JSON, bad key)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ElmoWeightsError(f"{path}: options file not found", path=path)
    try:
        with open(path, encoding="utf-8") as f:
            options = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ElmoWeightsError(f"{path}: cannot read options JSON: {e}", path=path) from e
    return check_options(options, path)


def write_options(options: Dict[str, Any], path) -> None:
    """Write ``options`` as indented JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(options, f, indent=2)
        f.write("\n")
