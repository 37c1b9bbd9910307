"""Convert an ELMoForManyLangs model directory (Che et al. 2018, HIT-SCIR; the ``elmoformanylangs``
package) into a spacy-elmo model directory: ``options.json`` (format_version 2, see
:mod:`spacy_elmo.bilm.options`) + ``weights.hdf5`` + ``sha256.json``, loadable by path wherever a
model is named.

The source directory holds ``config.json`` (``{"config_path": ...}``, naming the model config),
``char.dic``, ``word.dic`` (models with a word embedding), ``token_embedder.pkl`` and
``encoder.pkl`` (PyTorch state dicts). The model config is found as that package's ``Embedder``
finds it: ``config_path`` under the source directory, else its file name there, else one of the
two standard configs the package ships (kept here as data: ``configs/*.json``); a path that
leads outside the source directory is only tried by its file name. ``config=`` overrides it.

Every text file (``config.json``, the model config, the dictionaries) is read only if it is a regular
file of at most :data:`~spacy_elmo.bilm.files.CONFIG_BYTES` (``word.dic``:
:data:`~spacy_elmo.bilm.files.VOCAB_BYTES`), and a ``.pkl`` only if it is a regular file: a FIFO or a
symlink to ``/dev/zero`` is refused at once (:mod:`spacy_elmo.bilm.files`).

Dictionaries are read as that package reads them: line by line (Unicode line boundaries), each
line stripped of surrounding whitespace and split on tabs, ``TOKEN\\tID``; a line with a single
field is U+3000 (its stripped token), and a later line for the same token wins.

Weights are read with ``torch.load(weights_only=True)``: plain tensors only, no arbitrary
objects are unpickled; anything else is refused. The mapping (``elmoformanylangs/modules``):
char and word embeddings gain a zero row 0 ("no token"); each highway's gate half is negated
(theirs: g * x + (1 - g) * f(x); ours, bilm-tf's: c * f(x) + (1 - c) * x, so c = 1 - g =
sigmoid(-z), as AllenNLP converts bilm-tf's highways); LSTM gates are reordered from
``LstmCellWithProjection``'s (i, f, j, o) to ours (i, f, o, j), and 1.0 is taken off the forget
bias (our LSTM adds bilm-tf's forget bias at run time); residual connections between layers.
"""
import os
import pickle
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy

from ..bilm.files import CONFIG_BYTES, VOCAB_BYTES, check_regular, read_json, read_text
from ..bilm.finite import non_finite
from ..errors import ElmoConfigError, ElmoDataError, ElmoFileError, ElmoModelFileError
from ..locks import Lock, folder_in_the_way, hold

CONFIGS_DIR = Path(__file__).resolve().parent / "configs"
SOURCE_FILES = ("config.json", "char.dic", "token_embedder.pkl", "encoder.pkl")


def _inside(directory: str, path: str) -> bool:
    root = os.path.realpath(directory)
    return os.path.commonpath([root, os.path.realpath(path)]) == root


def find_config(src: str) -> str:
    """The model config file of ``src``, resolved as described in the module docstring. Raises
    ElmoModelFileError if config.json is missing or malformed, or no config is found."""
    path = os.path.join(src, "config.json")
    try:
        named = read_json(path, CONFIG_BYTES, "config.json")["config_path"]
        if not isinstance(named, str) or not named:
            raise ValueError("config_path is not a file name")
    except FileNotFoundError:
        raise ElmoModelFileError(f"{path}: not found (is {src} an ELMoForManyLangs model directory?)", path) from None
    except ElmoFileError as err:
        raise ElmoModelFileError(str(err), path) from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ElmoModelFileError(f"{path}: expected {{\"config_path\": FILE}}: {err}", path) from None
    first = os.path.join(src, named)
    base = os.path.basename(named.replace("\\", "/"))
    for candidate in (first, os.path.join(src, base), str(CONFIGS_DIR / base)):
        inside = _inside(src, candidate) or candidate.startswith(str(CONFIGS_DIR))
        if inside and base and os.path.isfile(candidate):
            return candidate
    raise ElmoModelFileError(f"{path}: config_path {named!r} is neither in {src} nor a standard config "
                             f"({', '.join(sorted(p.name for p in CONFIGS_DIR.glob('*.json')))}); give --config", path)


def read_config(path: str) -> dict:
    """The model config, checked for what the conversion supports (a CNN token embedder with
    characters, the ``elmo`` encoder) and for numbers that are NaN or infinite. Raises
    ElmoModelFileError naming the file and key."""
    try:
        config = read_json(path, CONFIG_BYTES, "model config")
    except ElmoFileError as err:
        raise ElmoModelFileError(str(err), path) from None
    except (OSError, ValueError) as err:
        raise ElmoModelFileError(f"{path}: not a readable ELMoForManyLangs model config: {err!r}", path) from None
    bad = non_finite(config)
    if bad is not None:
        raise ElmoModelFileError(f"{path}: {bad[0]}: expected a finite number, got {bad[1]!r}", path)
    try:
        enc, tok = config["encoder"], config["token_embedder"]
        checks = [(str(enc.get("name", "")).lower() == "elmo", "encoder.name: only 'elmo' is supported"),
                  (str(tok.get("name", "")).lower() == "cnn", "token_embedder.name: only 'cnn' is supported"),
                  (int(tok.get("char_dim", 0)) > 0, "token_embedder.char_dim: models without characters "
                                                    "are not supported")]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ElmoModelFileError(f"{path}: not a readable ELMoForManyLangs model config: {err!r}", path) from None
    for ok, why in checks:
        if not ok:
            raise ElmoModelFileError(f"{path}: {why}", path)
    return config


def read_dic(path: str, max_bytes: int = CONFIG_BYTES) -> Dict[str, int]:
    """A ``char.dic`` / ``word.dic`` (a regular file of at most ``max_bytes``), read as the module
    docstring says. Raises ElmoModelFileError naming the file, and the line for a line that is
    not ``TOKEN\\tID``."""
    try:
        text = read_text(path, max_bytes, "dictionary")
    except FileNotFoundError:
        raise ElmoModelFileError(f"{path}: not found", path) from None
    except (ElmoFileError, ElmoDataError) as err:
        raise ElmoModelFileError(str(err), path) from None
    except OSError as err:
        raise ElmoModelFileError(f"{path}: cannot read: {err}", path) from None
    lexicon = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        try:
            token, index = fields
            lexicon[token] = int(index)
        except ValueError:
            raise ElmoModelFileError(f"{path}: line {number}: expected TOKEN<tab>ID, got {line[:60]!r}", path) from None
    if not lexicon:
        raise ElmoModelFileError(f"{path}: empty dictionary", path)
    return lexicon


def load_state(path: str) -> Dict[str, numpy.ndarray]:
    """A ``.pkl`` state dict as float32 arrays, read with ``torch.load(weights_only=True)``.
    Raises ElmoModelFileError for a missing file or anything but a mapping of names to tensors."""
    import torch

    try:
        check_regular(path, "state dict")
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ElmoModelFileError(f"{path}: not found", path) from None
    except ElmoFileError as err:
        raise ElmoModelFileError(str(err), path) from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError, AttributeError) as err:
        why = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ElmoModelFileError(f"{path}: refused: not a plain PyTorch state dict of tensors (weights_only "
                                 f"load failed: {why})", path) from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ElmoModelFileError(f"{path}: refused: expected a state dict (name -> tensor)", path)
    return {str(k): v.detach().float().numpy() for k, v in state.items()}


def _take(state: Dict[str, numpy.ndarray], key: str, shape: Tuple[int, ...], path: str) -> numpy.ndarray:
    if key not in state:
        raise ElmoModelFileError(f"{path}: missing tensor {key!r}", path)
    value = state[key]
    if tuple(value.shape) != shape:
        raise ElmoModelFileError(f"{path}: tensor {key!r} has shape {tuple(value.shape)}, the config implies {shape}",
                                 path)
    if not numpy.isfinite(value).all():
        raise ElmoModelFileError(f"{path}: tensor {key!r} has NaN or infinite values", path)
    return value


def _with_zero_row(emb: numpy.ndarray) -> numpy.ndarray:
    return numpy.concatenate([numpy.zeros_like(emb[:1]), emb])


def _gates(a: numpy.ndarray, C: int) -> numpy.ndarray:
    """Columns in blocks (i, f, j, o) -> (i, f, o, j)."""
    return numpy.concatenate([a[..., k * C: (k + 1) * C] for k in (0, 1, 3, 2)], axis=-1)


def token_embedder_state(te: Dict[str, numpy.ndarray], tok: dict, P: int, n_words: int,
                         path: str) -> Dict[str, numpy.ndarray]:
    """``token_embedder.pkl`` (``ConvTokenEmbedder``) -> our ``char_cnn.*`` parameters."""
    d, D = int(tok["char_dim"]), int(tok.get("word_dim", 0))
    emb = te.get("char_emb_layer.embedding.weight")
    if emb is None or emb.ndim != 2:
        raise ElmoModelFileError(f"{path}: missing tensor 'char_emb_layer.embedding.weight'", path)
    sd = {"char_cnn.char_embedding.weight": _with_zero_row(_take(te, "char_emb_layer.embedding.weight",
                                                                 (emb.shape[0], d), path))}
    for i, (w, n) in enumerate(tok["filters"]):
        sd[f"char_cnn.convs.{i}.weight"] = _take(te, f"convolutions.{i}.weight", (n, d, w), path)
        sd[f"char_cnn.convs.{i}.bias"] = _take(te, f"convolutions.{i}.bias", (n,), path)
    F = sum(n for _, n in tok["filters"])
    for k in range(int(tok["n_highway"])):
        w = _take(te, f"highways._layers.{k}.weight", (2 * F, F), path)
        b = _take(te, f"highways._layers.{k}.bias", (2 * F,), path)
        sd[f"char_cnn.highways.{k}.linear.weight"] = numpy.concatenate([w[:F], -w[F:]])
        sd[f"char_cnn.highways.{k}.linear.bias"] = numpy.concatenate([b[:F], -b[F:]])
    if D:
        sd["char_cnn.word_embedding.weight"] = _with_zero_row(_take(te, "word_emb_layer.embedding.weight",
                                                                    (n_words, D), path))
    sd["char_cnn.projection.weight"] = _take(te, "projection.weight", (P, D + F), path)
    sd["char_cnn.projection.bias"] = _take(te, "projection.bias", (P,), path)
    return sd


def encoder_state(enc: Dict[str, numpy.ndarray], encoder: dict, path: str) -> Dict[str, numpy.ndarray]:
    """``encoder.pkl`` (``ElmobiLm``: per layer and direction an ``LstmCellWithProjection``) ->
    our ``lstm.*`` parameters (see :mod:`spacy_elmo.bilm.lstm`)."""
    from ..bilm.lstm import FORGET_BIAS

    P, C = int(encoder["projection_dim"]), int(encoder["dim"])
    sd = {}
    for layer in range(int(encoder["n_layers"])):
        parts = {"w_input": [], "w_state": [], "bias": [], "w_proj": []}
        for direction in ("forward", "backward"):
            p = f"{direction}_layer_{layer}"
            parts["w_input"].append(_gates(_take(enc, f"{p}.input_linearity.weight", (4 * C, P), path).T, C))
            parts["w_state"].append(_gates(_take(enc, f"{p}.state_linearity.weight", (4 * C, P), path).T, C))
            bias = _gates(_take(enc, f"{p}.state_linearity.bias", (4 * C,), path), C).copy()
            bias[C: 2 * C] -= FORGET_BIAS
            parts["bias"].append(bias)
            parts["w_proj"].append(_take(enc, f"{p}.state_projection.weight", (P, C), path).T)
        for name, arrays in parts.items():
            sd[f"lstm.{name}.{layer}"] = numpy.stack(arrays)
    return sd


def options_for(config: dict, chars: Dict[str, int], words: Optional[Dict[str, int]], n_chars: int,
                n_words: int) -> dict:
    """Our options (format_version 2) for an ELMoForManyLangs model config and its vocabularies."""
    enc, tok = config["encoder"], config["token_embedder"]
    word_dim = int(tok.get("word_dim", 0)) if words is not None else 0
    return {
        "format_version": 2,
        "lstm": {"dim": int(enc["dim"]), "projection_dim": int(enc["projection_dim"]),
                 "n_layers": int(enc["n_layers"]), "cell_clip": enc.get("cell_clip"),
                 "proj_clip": enc.get("proj_clip"), "use_skip_connections": True},
        "char_cnn": {"embedding": {"dim": int(tok["char_dim"])}, "filters": [list(map(int, f)) for f in tok["filters"]],
                     "n_highway": int(tok["n_highway"]), "activation": tok.get("activation", "relu"),
                     "n_characters": n_chars + 1, "max_characters_per_token": int(tok["max_characters_per_token"])},
        "vocab": {"indexer": "elmoformanylangs", "word_dim": word_dim, "n_words": n_words if word_dim else 0,
                  "chars": chars, "words": words if word_dim else None},
    }


def load_source(src: str, config: Optional[str] = None):
    """Read an ELMoForManyLangs directory: a :class:`~spacy_elmo.bilm.BiLM` (frozen, CPU).
    ``config``: a model config file instead of the one config.json names. Raises
    ElmoModelFileError (a ValueError) naming the file for anything missing or malformed."""
    from ..bilm import BiLM

    src = os.fspath(src)
    if not os.path.isdir(src):
        raise ElmoModelFileError(f"{src}: not a directory (expected an ELMoForManyLangs model directory)", src)
    config_path = os.fspath(config) if config else find_config(src)
    cfg = read_config(config_path)
    tok = cfg["token_embedder"]
    chars = read_dic(os.path.join(src, "char.dic"))
    words = read_dic(os.path.join(src, "word.dic"), VOCAB_BYTES) if int(tok.get("word_dim", 0)) > 0 else None
    te_path, enc_path = os.path.join(src, "token_embedder.pkl"), os.path.join(src, "encoder.pkl")
    te, enc = load_state(te_path), load_state(enc_path)
    n_chars = te.get("char_emb_layer.embedding.weight", numpy.zeros((0, 0))).shape[0]
    n_words = te["word_emb_layer.embedding.weight"].shape[0] if words is not None and \
        "word_emb_layer.embedding.weight" in te else 0
    if words is not None and not n_words:
        raise ElmoModelFileError(f"{te_path}: missing tensor 'word_emb_layer.embedding.weight'", te_path)
    sd = token_embedder_state(te, tok, int(cfg["encoder"]["projection_dim"]), n_words, te_path)
    sd.update(encoder_state(enc, cfg["encoder"], enc_path))
    options = options_for(cfg, chars, words, n_chars, n_words)
    import torch

    try:
        return BiLM.from_state_dict(options, {k: torch.from_numpy(numpy.ascontiguousarray(v, dtype=numpy.float32))
                                              for k, v in sd.items()})
    except (ElmoModelFileError, ValueError) as err:
        raise ElmoModelFileError(f"{src}: {err}", src) from None


def convert(src: str, out: str, config: Optional[str] = None, force: bool = False) -> str:
    """Convert ``src`` into the model directory ``out`` (created; an existing model there is
    refused unless ``force``): ``options.json``, ``weights.hdf5`` (with the vocabularies),
    ``sha256.json``. Returns ``out``. Raises ElmoModelFileError, FileExistsError for an
    existing model at ``out``, ElmoConfigError where ``out`` or a parent is a file, or
    ElmoLockError (a RuntimeError) at once, before anything is read or written, while another
    conversion writes ``out``: the whole conversion holds the exclusive lock ``out/.lock``
    (:func:`lock_model_dir`)."""
    out = os.fspath(out)
    why = folder_in_the_way(out)
    if why is not None:  # before the lock, whose folder it would be
        raise ElmoConfigError(f"OUT {out!r}{why}: give a directory to write the model into")
    with lock_model_dir(out):
        if not force and os.path.exists(os.path.join(out, "options.json")):
            raise FileExistsError(f"{out} already holds a model (options.json); give --force to replace it")
        bilm = load_source(src, config)
        bilm.save(out)
    return out


LOCK = ".lock"


def lock_model_dir(out: str) -> Lock:
    """The exclusive lock of the model directory ``out``: ``out/.lock`` (:mod:`spacy_elmo.locks`;
    ``out`` and its missing parents are created for it, and removed again where the conversion
    leaves them empty). The lock file is removed on release; one left inside ``out`` by a run
    killed with ``kill -9`` blocks nothing. Raises ElmoLockError, one line naming the holder's
    pid, while another process (or another call in this one) holds it."""
    return hold(os.path.join(out, LOCK), f"OUT {out!r}", "wait for that conversion to finish (or stop it), or "
                "choose another OUT", make_folder=True)
