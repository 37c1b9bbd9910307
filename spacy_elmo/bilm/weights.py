"""Read and write ELMo weights in the bilm-tf / AllenNLP HDF5 layout.

Datasets (bilm-tf ``dump_weights``; AllenNLP ``_ElmoCharacterEncoder`` / ``ElmoLstm`` read them)::

    char_embed                                   (261, d)      char ids 1..261 (row 0, "no token", is zeros)
    CNN/W_cnn_{i}, CNN/b_cnn_{i}                 (1, w_i, d, n_i), (n_i,)
    CNN_high_{k}/W_{carry,transform}             (F, F)        F = sum(n_i); y = x W + b
    CNN_high_{k}/b_{carry,transform}             (F,)
    CNN_proj/W_proj, CNN_proj/b_proj             (F, P), (P,)
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0    (2P, 4C)  [x; h_prev] -> gates i, j, f, o
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/B      (4C,)     without TF's run-time forget bias 1.0
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_P_0  (C, P)

d = 0 is the forward LM, 1 the backward LM. Float16 files are read as float32; files are written in
float32. Every problem raises :class:`~.errors.ElmoWeightsError` naming the file and the dataset;
external links, external storage and virtual datasets are refused (:func:`check_self_contained`).

``format_version`` 2 (see :mod:`.options`) changes ``char_embed`` to (V, d) (V characters of the
learned vocabulary; row 0 internal is again the zero "no token" row) and adds::

    word_embed                                   (W, D)        with a word embedding (vocab.word_dim D > 0)
    CNN_proj/W_proj                              (D + F, P)    input [word vector; highway output]
    vocab/chars/utf8, vocab/words/utf8           uint8         the strings' UTF-8, concatenated
    vocab/chars/lengths, vocab/words/lengths     int64         bytes of each string
    vocab/chars/ids, vocab/words/ids             int64         the id of each string

(:func:`write_vocab`, :func:`read_vocab`; ``vocab/words`` only with a word embedding).

The mapping to :class:`~.model.BiLM` parameter names (``to_state_dict`` / ``from_state_dict``):
conv weight (n, d, w) = ``W_cnn[0].transpose(2, 1, 0)``; highway ``linear.weight`` =
``[W_transform.T; W_carry.T]``, bias ``[b_transform; b_carry]``; ``projection.weight`` = ``W_proj.T``;
LSTM ``w_input[l][d]`` = ``W_0[:P]``, ``w_state[l][d]`` = ``W_0[P:]``, ``bias[l][d]`` = ``B``,
``w_proj[l][d]`` = ``W_P_0``, with gate columns reordered from bilm-tf's (i, j, f, o) to (i, f, o, j).
"""
import math
import os
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple, Union

import numpy

from .errors import ElmoInputError, ElmoWeightsError

if TYPE_CHECKING:
    import h5py

TF_TO_INTERNAL = (0, 2, 3, 1)  # internal gate k (i, f, o, j) is bilm-tf gate block TF_TO_INTERNAL[k]
INTERNAL_TO_TF = (0, 3, 1, 2)


def lstm_prefix(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def layout(options: dict) -> Dict[str, Tuple[int, ...]]:
    """Dataset name -> shape expected for ``options`` (checked options, see :mod:`.options`)."""
    c, l = options["char_cnn"], options["lstm"]
    d = c["embedding"]["dim"]
    n_filters = sum(n for _, n in c["filters"])
    P, C = l["projection_dim"], l["dim"]
    shapes = {"char_embed": (c["n_characters"] - 1, d)}
    for i, (w, n) in enumerate(c["filters"]):
        shapes[f"CNN/W_cnn_{i}"] = (1, w, d, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(c["n_highway"]):
        for name in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{name}"] = (n_filters, n_filters)
            shapes[f"CNN_high_{k}/b_{name}"] = (n_filters,)
    word_dim = options.get("vocab", {}).get("word_dim", 0)
    if word_dim:
        shapes["word_embed"] = (options["vocab"]["n_words"], word_dim)
    shapes["CNN_proj/W_proj"] = (word_dim + n_filters, P)
    shapes["CNN_proj/b_proj"] = (P,)
    for direction in range(2):
        for layer in range(l["n_layers"]):
            p = lstm_prefix(direction, layer)
            shapes[f"{p}/W_0"] = (2 * P, 4 * C)
            shapes[f"{p}/B"] = (4 * C,)
            shapes[f"{p}/W_P_0"] = (C, P)
    return shapes


# The original ELMo (and the 5.5B one, same shapes) has 93,600,848 biLM parameters; 4x that.
MAX_PARAMS = 4 * 93_600_848
MAX_PARAMS_ENV = "SPACY_ELMO_MAX_PARAMS"


def n_params(options: dict) -> int:
    """Parameters (float32 values) of the datasets of :func:`layout` for ``options``."""
    return sum(math.prod(shape) for shape in layout(options).values())


def max_params(value: Optional[int] = None) -> int:
    """The size limit: ``value``, else $SPACY_ELMO_MAX_PARAMS, else :data:`MAX_PARAMS`. Raises
    ValueError (one line) for an environment value that is not a positive integer."""
    if value is not None:
        return int(value)
    env = os.environ.get(MAX_PARAMS_ENV)
    if env is None or not env.strip():
        return MAX_PARAMS
    try:
        limit = int(env.replace("_", "").replace(",", ""))
    except ValueError:
        limit = 0
    if limit <= 0:
        raise ElmoInputError(f"${MAX_PARAMS_ENV} = {env!r}: expected a positive integer (parameters)")
    return limit


def check_size(options: dict, path: str, limit: Optional[int] = None) -> int:
    """The parameter count of ``options``; raises ElmoWeightsError in one line naming the sizes
    (lstm.dim, projection_dim, n_layers, filters) when it is above :func:`max_params` (raise the
    limit with $SPACY_ELMO_MAX_PARAMS or ``max_params=`` for a model that really is that big)."""
    count, limit = n_params(options), max_params(limit)
    if count > limit:
        lstm, cnn = options["lstm"], options["char_cnn"]
        word = options.get("vocab", {}).get("word_dim", 0)
        raise ElmoWeightsError(
            f"{path}: the options imply {count:,} parameters ({4 * count / 1e9:.1f} GB of float32: lstm.dim "
            f"{lstm['dim']:,}, projection_dim {lstm['projection_dim']:,}, n_layers {lstm['n_layers']}, "
            f"{sum(n for _, n in cnn['filters']):,} filters{f', word_dim {word:,}' if word else ''}), above the "
            f"limit of {limit:,}; set ${MAX_PARAMS_ENV} to load a model that big", path=path, dataset="lstm.dim")
    return count


def open_hdf5(path: str) -> "h5py.File":
    """``h5py.File(path, "r")``, checked by :func:`check_self_contained`. Raises ElmoWeightsError
    naming the file if it is not a readable HDF5 file (truncated, or another format), and naming
    the dataset if one reads data from outside the file."""
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ElmoWeightsError(f"{path}: not a readable HDF5 file (truncated or not HDF5?): {e}", path=path) from e
    try:
        check_self_contained(f, path)
    except BaseException:
        f.close()
        raise
    return f


def check_self_contained(f: "h5py.File", path: str) -> None:
    """Refuse an HDF5 file whose data lives outside it: an external link (``h5py.ExternalLink``),
    a dataset with external raw storage (``Dataset.external``) or a virtual dataset
    (``Dataset.is_virtual``). Such objects make h5py open other files, named by the file itself,
    when a dataset is read. Raises ElmoWeightsError naming the file and the object; follows no link."""
    import h5py

    def visit(name, link):  # a returned error stops the walk (raising inside h5py's callback is unsafe)
        if isinstance(link, h5py.ExternalLink):
            return ElmoWeightsError(f"{path}: {name!r} is an external link to {link.filename}:{link.path}; refusing "
                                    "it (a model file must hold its own data)", path=path, dataset=name)
        if not isinstance(link, h5py.HardLink):
            return None  # a soft link names an object of this file, itself visited
        obj = f[name]
        if isinstance(obj, h5py.Dataset):
            if obj.is_virtual:
                return ElmoWeightsError(f"{path}: dataset {name!r} is a virtual dataset (data mapped from other "
                                        "files); refusing it (a model file must hold its own data)",
                                        path=path, dataset=name)
            if obj.external:
                return ElmoWeightsError(f"{path}: dataset {name!r} keeps its data in external file(s) "
                                        f"{[e[0] for e in obj.external]}; refusing it (a model file must hold "
                                        "its own data)", path=path, dataset=name)
        return None

    try:
        error = f.visititems_links(visit)
    except (OSError, RuntimeError, KeyError) as e:
        raise ElmoWeightsError(f"{path}: the file's objects cannot be listed (file truncated?): {e}",
                               path=path) from e
    if error is not None:
        raise error


def self_contained_dataset(f: "h5py.File", name: str, path: str) -> "h5py.Dataset":
    """The dataset ``name`` of the open file ``f``, refused like :func:`check_self_contained`
    does for the whole file (for files with many datasets, checked one at a time). Raises
    ElmoWeightsError naming the dataset; KeyError if there is none."""
    import h5py

    link = f.get(name, getlink=True)
    if link is None:
        raise KeyError(name)
    if isinstance(link, h5py.ExternalLink):
        raise ElmoWeightsError(f"{path}: {name!r} is an external link to {link.filename}:{link.path}; refusing it",
                               path=path, dataset=name)
    obj = f[name]
    if isinstance(obj, h5py.Dataset) and (obj.is_virtual or obj.external):
        kind = "a virtual dataset" if obj.is_virtual else "stored in external file(s)"
        raise ElmoWeightsError(f"{path}: dataset {name!r} is {kind}; refusing it", path=path, dataset=name)
    return obj


def read_weights(path: Union[str, os.PathLike], options: dict,
                 max_params: Optional[int] = None) -> Dict[str, numpy.ndarray]:
    """Read every dataset of :func:`layout` from ``path`` as float32 arrays.

    Before anything is read, the parameter count implied by ``options`` is checked against
    ``max_params`` (default: $SPACY_ELMO_MAX_PARAMS, else :data:`MAX_PARAMS`, 4x the largest
    published ELMo), see :func:`check_size`: a small (sparse) file with huge options would
    otherwise allocate gigabytes.

    Raises ElmoWeightsError: options above the size limit; file missing, not HDF5 or truncated; a
    dataset missing, not numeric, of the wrong shape, unreadable, or with NaN/infinite values.
    Extra datasets are ignored.
    """
    import h5py

    path = os.fspath(path)
    check_size(options, path, max_params)
    if not os.path.isfile(path):
        raise ElmoWeightsError(f"{path}: weight file not found", path=path)
    out = {}
    with open_hdf5(path) as f:
        for name, shape in layout(options).items():
            try:
                obj = f.get(name)
            except (OSError, RuntimeError, KeyError, ValueError) as e:
                raise ElmoWeightsError(f"{path}: dataset {name!r} cannot be read (file truncated?): {e}",
                                       path=path, dataset=name) from e
            if obj is None or not isinstance(obj, h5py.Dataset):
                raise ElmoWeightsError(f"{path}: dataset {name!r} is missing (expected shape {shape})",
                                       path=path, dataset=name)
            if tuple(obj.shape) != shape:
                raise ElmoWeightsError(
                    f"{path}: dataset {name!r} has shape {tuple(obj.shape)}, but options.json implies {shape}",
                    path=path, dataset=name)
            if obj.dtype.kind != "f":
                raise ElmoWeightsError(f"{path}: dataset {name!r} has dtype {obj.dtype}, expected float",
                                       path=path, dataset=name)
            try:
                arr = obj[()]
            except (OSError, RuntimeError, ValueError) as e:
                raise ElmoWeightsError(f"{path}: dataset {name!r} cannot be read (file truncated?): {e}",
                                       path=path, dataset=name) from e
            arr = numpy.ascontiguousarray(arr, dtype=numpy.float32)
            bad = arr.size - int(numpy.isfinite(arr).sum())
            if bad:
                raise ElmoWeightsError(f"{path}: dataset {name!r} has {bad:,} NaN or infinite values "
                                       "(corrupt file or diverged training)", path=path, dataset=name)
            out[name] = arr
    return out


def write_weights(path: Union[str, os.PathLike], arrays: Dict[str, numpy.ndarray]) -> None:
    """Write ``arrays`` (dataset name -> array) as float32 datasets to a new HDF5 file ``path``."""
    import h5py

    with h5py.File(os.fspath(path), "w") as f:
        for name, arr in arrays.items():
            f.create_dataset(name, data=numpy.asarray(arr, dtype=numpy.float32))


def _gate_cols(a: numpy.ndarray, order, C: int) -> numpy.ndarray:
    return numpy.concatenate([a[..., k * C: (k + 1) * C] for k in order], axis=-1)


def to_state_dict(arrays: Dict[str, numpy.ndarray], options: dict, consume: bool = False) -> Dict[str, numpy.ndarray]:
    """bilm-tf datasets -> BiLM state-dict arrays (see the module docstring for the mapping).

    ``consume=True`` empties ``arrays`` as it goes (lower peak memory when loading big models).
    """
    take = arrays.pop if consume else arrays.__getitem__
    c, l = options["char_cnn"], options["lstm"]
    P, C = l["projection_dim"], l["dim"]
    emb = take("char_embed")
    sd = {"char_cnn.char_embedding.weight": numpy.concatenate([numpy.zeros_like(emb[:1]), emb])}
    for i in range(len(c["filters"])):
        sd[f"char_cnn.convs.{i}.weight"] = numpy.ascontiguousarray(
            numpy.transpose(take(f"CNN/W_cnn_{i}")[0], (2, 1, 0)))
        sd[f"char_cnn.convs.{i}.bias"] = take(f"CNN/b_cnn_{i}")
    for k in range(c["n_highway"]):
        h = f"CNN_high_{k}"
        sd[f"char_cnn.highways.{k}.linear.weight"] = numpy.concatenate(
            [take(f"{h}/W_transform").T, take(f"{h}/W_carry").T])
        sd[f"char_cnn.highways.{k}.linear.bias"] = numpy.concatenate([take(f"{h}/b_transform"), take(f"{h}/b_carry")])
    if "word_embed" in layout(options):
        words = take("word_embed")
        sd["char_cnn.word_embedding.weight"] = numpy.concatenate([numpy.zeros_like(words[:1]), words])
    sd["char_cnn.projection.weight"] = numpy.ascontiguousarray(take("CNN_proj/W_proj").T)
    sd["char_cnn.projection.bias"] = take("CNN_proj/b_proj")
    for layer in range(l["n_layers"]):
        w0 = [_gate_cols(take(f"{lstm_prefix(d, layer)}/W_0"), TF_TO_INTERNAL, C) for d in range(2)]
        sd[f"lstm.w_input.{layer}"] = numpy.stack([w[:P] for w in w0])
        sd[f"lstm.w_state.{layer}"] = numpy.stack([w[P:] for w in w0])
        sd[f"lstm.bias.{layer}"] = numpy.stack(
            [_gate_cols(take(f"{lstm_prefix(d, layer)}/B"), TF_TO_INTERNAL, C) for d in range(2)])
        sd[f"lstm.w_proj.{layer}"] = numpy.stack([take(f"{lstm_prefix(d, layer)}/W_P_0") for d in range(2)])
    return {k: numpy.ascontiguousarray(v, dtype=numpy.float32) for k, v in sd.items()}


def from_state_dict(sd: Dict[str, numpy.ndarray], options: dict) -> Dict[str, numpy.ndarray]:
    """BiLM state-dict arrays -> bilm-tf datasets (the inverse of :func:`to_state_dict`, exact)."""
    c, l = options["char_cnn"], options["lstm"]
    C = l["dim"]
    out = {"char_embed": sd["char_cnn.char_embedding.weight"][1:]}
    for i in range(len(c["filters"])):
        out[f"CNN/W_cnn_{i}"] = numpy.transpose(sd[f"char_cnn.convs.{i}.weight"], (2, 1, 0))[None]
        out[f"CNN/b_cnn_{i}"] = sd[f"char_cnn.convs.{i}.bias"]
    F = sum(n for _, n in c["filters"])
    for k in range(c["n_highway"]):
        w, b = sd[f"char_cnn.highways.{k}.linear.weight"], sd[f"char_cnn.highways.{k}.linear.bias"]
        out[f"CNN_high_{k}/W_carry"] = w[F:].T
        out[f"CNN_high_{k}/W_transform"] = w[:F].T
        out[f"CNN_high_{k}/b_carry"] = b[F:]
        out[f"CNN_high_{k}/b_transform"] = b[:F]
    if "char_cnn.word_embedding.weight" in sd:
        out["word_embed"] = sd["char_cnn.word_embedding.weight"][1:]
    out["CNN_proj/W_proj"] = sd["char_cnn.projection.weight"].T
    out["CNN_proj/b_proj"] = sd["char_cnn.projection.bias"]
    for d in range(2):
        for layer in range(l["n_layers"]):
            p = lstm_prefix(d, layer)
            w0 = numpy.concatenate([sd[f"lstm.w_input.{layer}"][d], sd[f"lstm.w_state.{layer}"][d]])
            out[f"{p}/W_0"] = _gate_cols(w0, INTERNAL_TO_TF, C)
            out[f"{p}/B"] = _gate_cols(sd[f"lstm.bias.{layer}"][d], INTERNAL_TO_TF, C)
            out[f"{p}/W_P_0"] = sd[f"lstm.w_proj.{layer}"][d]
    return {k: numpy.ascontiguousarray(v, dtype=numpy.float32) for k, v in out.items()}


def write_vocab(path: Union[str, os.PathLike], vocab: dict) -> None:
    """Append the vocabularies of a ``vocab`` options section (``chars``, and ``words`` unless
    None) to the HDF5 file ``path`` as the ``vocab/...`` datasets of the module docstring."""
    import h5py

    with h5py.File(os.fspath(path), "a") as f:
        for part in ("chars", "words"):
            lexicon = vocab.get(part)
            if lexicon is None:
                continue
            encoded = [k.encode("utf-8") for k in lexicon]
            f.create_dataset(f"vocab/{part}/utf8", data=numpy.frombuffer(b"".join(encoded), dtype=numpy.uint8))
            f.create_dataset(f"vocab/{part}/lengths", data=numpy.array([len(e) for e in encoded], dtype=numpy.int64))
            f.create_dataset(f"vocab/{part}/ids", data=numpy.array(list(lexicon.values()), dtype=numpy.int64))


def read_vocab(path: Union[str, os.PathLike], parts: Sequence[str] = ("chars", "words")) -> Dict[str, Dict[str, int]]:
    """The vocabularies stored by :func:`write_vocab`: {"chars": {str: id}, "words": ...} for
    each part present. Raises ElmoWeightsError naming the file and dataset when a part is
    malformed (lengths that do not add up, not UTF-8, counts that differ)."""
    out = {}
    with open_hdf5(os.fspath(path)) as f:
        for part in parts:
            if f"vocab/{part}/ids" not in f:
                continue
            name = f"vocab/{part}"
            try:
                data = bytes(f[f"{name}/utf8"][()])
                lengths, ids = f[f"{name}/lengths"][()], f[f"{name}/ids"][()]
                ends = numpy.cumsum(lengths)
                if len(lengths) != len(ids) or (len(ends) and ends[-1] != len(data)) or (lengths < 0).any():
                    raise ValueError("lengths, ids and bytes disagree")
                starts = ends - lengths
                out[part] = {data[a:b].decode("utf-8"): int(i) for a, b, i in zip(starts, ends, ids)}
            except (KeyError, OSError, ValueError) as e:
                raise ElmoWeightsError(f"{path}: dataset {name!r} is malformed: {e}", path=path, dataset=name) from e
    return out
