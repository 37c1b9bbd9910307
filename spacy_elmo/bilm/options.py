"""ELMo ``options.json``: read, check and write the bilm-tf / AllenNLP options format.

Keys used (bilm-tf names)::

    {"lstm": {"dim": C, "projection_dim": P, "n_layers": L, "cell_clip": x|null,
              "proj_clip": x|null, "use_skip_connections": bool},
     "char_cnn": {"embedding": {"dim": d}, "filters": [[width, n], ...], "n_highway": k,
                  "activation": "relu"|"tanh", "n_characters": 262, "max_characters_per_token": 50}}

``cell_clip`` / ``proj_clip`` of ``null`` or ``0`` mean "no clipping". Other keys (bilm-tf's
training settings such as ``n_tokens_vocab``, ``dropout``, ``bidirectional``) are kept and ignored.
No number anywhere in the options may be NaN or infinite (Python's JSON reader accepts ``NaN``
and ``Infinity``; a NaN clip would make every vector NaN), and every size is at most
:data:`MAX_SIZE`. The file is read with :func:`.files.read_json` (a regular file of at most
:data:`.files.CONFIG_BYTES`).

Format versions. Options without ``format_version`` (or 1) are bilm-tf's: byte ids
(:class:`~.indexer.ByteIndexer`), ``n_characters`` 262, ``max_characters_per_token`` 50, read and
written exactly as bilm-tf does. ``"format_version": 2`` adds a ``vocab`` section for models with
a learned character vocabulary (ELMoForManyLangs, converted by ``python -m spacy_elmo convert``)::

    "format_version": 2,
    "vocab": {"indexer": "elmoformanylangs", "word_dim": D, "n_words": W},
    "char_cnn": {..., "n_characters": V + 1, "max_characters_per_token": M}

V: size of the character vocabulary (``n_characters`` counts the "no token" row 0, as bilm-tf's
262 does); M: the model's own limit (3..1000). ``word_dim`` > 0 (with ``n_words`` = W > 0) adds a
word embedding concatenated before the char CNN's projection (0 and 0 for none). The vocabularies
(``vocab.chars``, ``vocab.words``: string -> id, as in :class:`~.indexer.VocabularyIndexer`) are
stored in ``weights.hdf5`` (:mod:`.weights`), or inline in ``vocab`` (both are read; an in-memory
model holds them inline). A later ``format_version`` is refused with a one-line error.

:class:`BiLMOptions` is the same document as one frozen dataclass: flat, typed fields (the names
of the pretraining config's ``[model]`` section, mapped to their options.json keys by
:data:`JSON_KEYS`) read with the validation above (:meth:`BiLMOptions.from_json`) and written back
unchanged (:meth:`BiLMOptions.to_json`).
"""
import copy
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Union

from ..errors import ElmoDataError, ElmoFileError, ElmoModelFileError
from .files import CONFIG_BYTES, read_json
from .finite import is_finite_number, non_finite

REQUIRED_INT = (("lstm", "dim"), ("lstm", "projection_dim"), ("lstm", "n_layers"), ("char_cnn", "n_highway"))
FORMAT_VERSION = 2  # the newest format_version read and written
INDEXERS = ("elmoformanylangs",)
MAX_CHARS_LIMIT = 1000
MAX_SIZE = 2 ** 31 - 1  # the largest dimension, layer count or vocabulary size accepted


def _fail(path, key, why):
    where = f"{path}: " if path else "options: "
    raise ElmoModelFileError(f"{where}{'.'.join(key)}: {why}", path=path, dataset=".".join(key))


def check_options(options: Any, path: Union[str, os.PathLike, None] = None) -> Dict[str, Any]:
    """Validate an options dict and return a normalised deep copy.

    Required: ``lstm.dim``, ``lstm.projection_dim``, ``lstm.n_layers``, ``char_cnn.embedding.dim``,
    ``char_cnn.filters``, ``char_cnn.n_highway``. Defaults filled in: ``activation`` "relu",
    ``n_characters`` 262 (261 accepted, as bilm-tf writes it), ``max_characters_per_token`` 50,
    clips null, ``use_skip_connections`` false.
    Raises :class:`ElmoModelFileError` naming ``path`` and the bad key, also for a NaN or infinite
    number anywhere in the options and a size above :data:`MAX_SIZE`.
    """
    if not isinstance(options, dict):
        _fail(path, ("<root>",), f"expected a JSON object, got {type(options).__name__}")
    bad = non_finite(options)
    if bad is not None:
        _fail(path, (bad[0],), f"expected a finite number, got {bad[1]!r}")
    opts = copy.deepcopy(options)
    for section in ("lstm", "char_cnn"):
        if not isinstance(opts.get(section), dict):
            _fail(path, (section,), "missing section (expected an object)")
    for key in REQUIRED_INT:
        value = opts[key[0]].get(key[1])
        if not _int_at_least(value, 0 if key[1] == "n_highway" else 1):
            _fail(path, key, f"expected a positive integer (at most {MAX_SIZE:,}), got {value!r}")
    lstm, cnn = opts["lstm"], opts["char_cnn"]
    for clip in ("cell_clip", "proj_clip"):
        value = lstm.setdefault(clip, None)
        if value is not None and not (is_finite_number(value) and value >= 0):
            _fail(path, ("lstm", clip), f"expected a finite number >= 0 or null, got {value!r}")
    skip = lstm.setdefault("use_skip_connections", False)
    if not isinstance(skip, bool):
        _fail(path, ("lstm", "use_skip_connections"), f"expected true/false, got {skip!r}")
    emb = cnn.get("embedding")
    if not isinstance(emb, dict) or not _int_at_least(emb.get("dim"), 1):
        _fail(path, ("char_cnn", "embedding", "dim"), f"expected a positive integer (at most {MAX_SIZE:,}), "
                                                      f"got {emb!r}")
    filters = cnn.get("filters")
    ok = isinstance(filters, list) and len(filters) > 0 and all(
        isinstance(f, (list, tuple)) and len(f) == 2 and all(_int_at_least(v, 1) for v in f) for f in filters)
    if not ok:
        _fail(path, ("char_cnn", "filters"), f"expected a non-empty list of [width, n_filters], got {filters!r}")
    cnn["filters"] = [list(f) for f in filters]
    activation = cnn.setdefault("activation", "relu")
    if activation not in ("relu", "tanh"):
        _fail(path, ("char_cnn", "activation"), f"expected 'relu' or 'tanh', got {activation!r}")
    if _format_version(opts, path) == 1:
        _check_byte_chars(cnn, path)
    else:
        _check_vocab(opts, path)
    if max(w for w, _ in cnn["filters"]) > cnn["max_characters_per_token"]:
        _fail(path, ("char_cnn", "filters"),
              f"a filter is wider than max_characters_per_token ({cnn['max_characters_per_token']})")
    return opts


def _format_version(opts: dict, path) -> int:
    version = opts.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        _fail(path, ("format_version",), f"expected 1 or 2, got {version!r}")
    if version > FORMAT_VERSION:
        _fail(path, ("format_version",), f"{version} is newer than this spacy-elmo reads ({FORMAT_VERSION}): "
                                         "upgrade spacy-elmo")
    if version == 1 and "vocab" in opts:
        _fail(path, ("vocab",), "a vocab section needs \"format_version\": 2")
    if version == 2 and not isinstance(opts.get("vocab"), dict):
        _fail(path, ("vocab",), "format_version 2 needs a vocab section (an object)")
    return version


def _check_byte_chars(cnn: dict, path) -> None:
    if cnn.setdefault("n_characters", 262) not in (261, 262):
        # bilm-tf writes 261 (training) or 262 (the +1 shifted ids); both mean the same vocabulary.
        _fail(path, ("char_cnn", "n_characters"), f"expected 262, got {cnn['n_characters']!r}")
    cnn["n_characters"] = 262
    if cnn.setdefault("max_characters_per_token", 50) != 50:
        _fail(path, ("char_cnn", "max_characters_per_token"), f"expected 50, got {cnn['max_characters_per_token']!r}")


def _int_at_least(value, least: int) -> bool:
    """An int (not a bool) in least..MAX_SIZE."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_SIZE


def _check_vocab(opts: dict, path) -> None:
    """format_version 2: the vocab section and the char CNN sizes it implies."""
    cnn, vocab = opts["char_cnn"], opts["vocab"]
    if vocab.get("indexer") not in INDEXERS:
        _fail(path, ("vocab", "indexer"), f"expected one of {', '.join(INDEXERS)}, got {vocab.get('indexer')!r}")
    for key in ("n_characters", "max_characters_per_token"):
        if not _int_at_least(cnn.get(key), 3) or (key != "n_characters" and cnn[key] > MAX_CHARS_LIMIT):
            _fail(path, ("char_cnn", key), f"expected an integer in 3..{MAX_CHARS_LIMIT} (or >= 3 for "
                                           f"n_characters), got {cnn.get(key)!r}")
    for key in ("word_dim", "n_words"):
        if not _int_at_least(vocab.setdefault(key, 0), 0):
            _fail(path, ("vocab", key), f"expected a non-negative integer (at most {MAX_SIZE:,}), got {vocab[key]!r}")
    if (vocab["word_dim"] > 0) != (vocab["n_words"] > 0):
        _fail(path, ("vocab", "n_words"), "word_dim and n_words are both > 0 (a word embedding) or both 0")
    _check_lexicon(vocab.get("chars"), cnn["n_characters"] - 1, ("vocab", "chars"), path)
    if vocab["n_words"]:
        _check_lexicon(vocab.get("words"), vocab["n_words"], ("vocab", "words"), path)
    elif vocab.get("words") is not None:
        _fail(path, ("vocab", "words"), "a word vocabulary without a word embedding (word_dim 0)")


def _check_lexicon(lexicon, size: int, key, path) -> None:
    """None (stored in weights.hdf5), or a str -> id mapping with ids in 0..size-1."""
    if lexicon is None:
        return
    if not isinstance(lexicon, dict) or not lexicon:
        _fail(path, key, f"expected a non-empty object (string -> id), got {type(lexicon).__name__}")
    bad = next(((k, v) for k, v in lexicon.items() if not isinstance(k, str) or not _int_at_least(v, 0)
                or v >= size), None)
    if bad is not None:
        _fail(path, key, f"entry {bad[0]!r}: {bad[1]!r} is not an id in 0..{size - 1}")


def read_options(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """Read and check ``options.json``. Raises :class:`ElmoModelFileError` (missing file, not a
    regular file or above :data:`.files.CONFIG_BYTES`, bad JSON, bad key)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ElmoModelFileError(f"{path}: options file not found", path=path)
    try:
        options = read_json(path, CONFIG_BYTES, "options file")
    except (ElmoFileError, ElmoDataError) as e:  # not a regular file, too large, not UTF-8
        raise ElmoModelFileError(str(e), path=path) from e
    except (OSError, ValueError) as e:  # json.JSONDecodeError, a 5,000-digit number
        raise ElmoModelFileError(f"{path}: cannot read options JSON: {e}", path=path) from e
    return check_options(options, path)


def write_options(options: Dict[str, Any], path: Union[str, os.PathLike]) -> None:
    """Write ``options`` as indented JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(options, f, indent=2)
        f.write("\n")


# Each BiLMOptions field (the flat name, also a key of the pretraining config's [model]) and the
# key path of the same value in options.json. The one mapping between the two.
JSON_KEYS = {
    "char_dim": ("char_cnn", "embedding", "dim"),
    "filters": ("char_cnn", "filters"),
    "n_highway": ("char_cnn", "n_highway"),
    "activation": ("char_cnn", "activation"),
    "n_characters": ("char_cnn", "n_characters"),
    "max_characters_per_token": ("char_cnn", "max_characters_per_token"),
    "lstm_dim": ("lstm", "dim"),
    "projection_dim": ("lstm", "projection_dim"),
    "n_layers": ("lstm", "n_layers"),
    "use_skip_connections": ("lstm", "use_skip_connections"),
    "cell_clip": ("lstm", "cell_clip"),
    "proj_clip": ("lstm", "proj_clip"),
}


@dataclass(frozen=True)
class BiLMOptions:
    """A checked ``options.json`` (see the module docstring) as typed, read-only fields.

    Char CNN: ``char_dim`` (character embedding width), ``filters`` ((width, n_filters), ...),
    ``n_highway``, ``activation`` ("relu" | "tanh"), ``n_characters``, ``max_characters_per_token``.
    LSTM: ``lstm_dim`` (cell width C), ``projection_dim`` (P), ``n_layers``,
    ``use_skip_connections``, ``cell_clip`` / ``proj_clip`` (float, None: no clipping).
    ``format_version`` (1 or 2). :data:`JSON_KEYS` maps every field but ``format_version`` to its
    options.json key. The whole document, keys this class does not model included (bilm-tf's
    ``dropout``, the ``vocab`` section), is kept so that :meth:`to_json` returns exactly what
    :func:`check_options` returned (same keys, values and order: ``options.json`` round trips
    byte for byte).
    """

    char_dim: int
    filters: Tuple[Tuple[int, int], ...]
    n_highway: int
    activation: str
    n_characters: int
    max_characters_per_token: int
    lstm_dim: int
    projection_dim: int
    n_layers: int
    use_skip_connections: bool
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    format_version: int
    document: str = field(repr=False, compare=False)  # the checked options as JSON text

    @classmethod
    def from_json(cls, options: Any, path: Union[str, os.PathLike, None] = None) -> "BiLMOptions":
        """The options of an options.json object. Raises :class:`ElmoModelFileError` as
        :func:`check_options` (one line naming ``path`` and the bad key)."""
        opts = check_options(options, path)
        values = {}
        for name, key in JSON_KEYS.items():
            value = opts
            for part in key:
                value = value[part]
            values[name] = value
        values["filters"] = tuple((w, n) for w, n in values["filters"])
        return cls(**values, format_version=opts.get("format_version", 1), document=json.dumps(opts))

    @classmethod
    def new(cls, char_dim: int, filters, n_highway: int, activation: str, lstm_dim: int, projection_dim: int,
            n_layers: int, use_skip_connections: bool, cell_clip: Optional[float] = None,
            proj_clip: Optional[float] = None) -> "BiLMOptions":
        """Options of a byte-character (format_version 1, bilm-tf's 262 ids and 50 characters)
        biLM of these sizes, laid out as bilm-tf writes them. Raises :class:`ElmoModelFileError`
        for a bad value, as :meth:`from_json`."""
        return cls.from_json({
            "lstm": {"dim": lstm_dim, "projection_dim": projection_dim, "n_layers": n_layers,
                     "use_skip_connections": use_skip_connections, "cell_clip": cell_clip, "proj_clip": proj_clip},
            "char_cnn": {"embedding": {"dim": char_dim}, "filters": list(filters),
                         "n_highway": n_highway, "activation": activation,
                         "n_characters": 262, "max_characters_per_token": 50},
        })

    def to_json(self) -> Dict[str, Any]:
        """The options as a new options.json object (what :func:`check_options` returns)."""
        return json.loads(self.document)

    def fields(self, names=tuple(JSON_KEYS)) -> Dict[str, Any]:
        """``{name: value}`` of the fields ``names`` (default: all of :data:`JSON_KEYS`), with
        ``filters`` as a list of [width, n_filters] lists (as a config or JSON holds it)."""
        out = {name: getattr(self, name) for name in names}
        if "filters" in out:
            out["filters"] = [list(f) for f in out["filters"]]
        return out
