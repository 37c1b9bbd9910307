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
float32. Every problem raises :class:`~spacy_elmo.errors.ElmoModelFileError` naming the file and the dataset;
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
import os
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import ElmoFileError, ElmoModelFileError
from .files import check_regular
from .sizes import check_size

if TYPE_CHECKING:
    import h5py

TF_TO_INTERNAL = (0, 2, 3, 1)  # internal gate k (i, f, o, j) is bilm-tf gate block TF_TO_INTERNAL[k]
INTERNAL_TO_TF = (0, 3, 1, 2)


def lstm_prefix(direction: int, layer: int) -> str:
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def iter_layout(options: dict) -> Iterator[Tuple[str, Tuple[int, ...]]]:
    """(dataset name, shape) expected for ``options`` (checked options, see :mod:`.options`), one
    at a time: a reader stops at the first dataset a file lacks, whatever ``n_layers`` says."""
    c, l = options["char_cnn"], options["lstm"]
    d = c["embedding"]["dim"]
    n_filters = sum(n for _, n in c["filters"])
    P, C = l["projection_dim"], l["dim"]
    yield "char_embed", (c["n_characters"] - 1, d)
    for i, (w, n) in enumerate(c["filters"]):
        yield f"CNN/W_cnn_{i}", (1, w, d, n)
        yield f"CNN/b_cnn_{i}", (n,)
    for k in range(c["n_highway"]):
        for name in ("carry", "transform"):
            yield f"CNN_high_{k}/W_{name}", (n_filters, n_filters)
            yield f"CNN_high_{k}/b_{name}", (n_filters,)
    word_dim = _word_dim(options)
    if word_dim:
        yield "word_embed", (options["vocab"]["n_words"], word_dim)
    yield "CNN_proj/W_proj", (word_dim + n_filters, P)
    yield "CNN_proj/b_proj", (P,)
    for direction in range(2):
        for layer in range(l["n_layers"]):
            p = lstm_prefix(direction, layer)
            yield f"{p}/W_0", (2 * P, 4 * C)
            yield f"{p}/B", (4 * C,)
            yield f"{p}/W_P_0", (C, P)


def layout(options: dict) -> Dict[str, Tuple[int, ...]]:
    """Dataset name -> shape expected for ``options`` (checked options, see :mod:`.options`);
    for options within the size limit (:func:`.sizes.check_size`), :func:`iter_layout` otherwise."""
    return dict(iter_layout(options))


def _word_dim(options: dict) -> int:
    return (options.get("vocab") or {}).get("word_dim", 0)


def open_hdf5(path: str) -> "h5py.File":
    """``h5py.File(path, "r")``, checked by :func:`check_self_contained`. Raises ElmoModelFileError
    naming the file if it is not a regular file (a FIFO, a device: refused before HDF5 opens it)
    or not a readable HDF5 file (truncated, or another format), and naming the dataset if one
    reads data from outside the file."""
    import h5py

    try:
        check_regular(path, "HDF5 file")
        f = h5py.File(path, "r")
    except ElmoFileError as e:
        raise ElmoModelFileError(str(e), path=path) from e
    except OSError as e:
        raise ElmoModelFileError(f"{path}: not a readable HDF5 file (truncated or not HDF5?): {e}", path=path) from e
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
    when a dataset is read. Raises ElmoModelFileError naming the file and the object; follows no link."""
    import h5py

    def visit(name, link):  # a returned error stops the walk (raising inside h5py's callback is unsafe)
        if isinstance(link, h5py.ExternalLink):
            return ElmoModelFileError(f"{path}: {name!r} is an external link to {link.filename}:{link.path}; refusing "
                                      "it (a model file must hold its own data)", path=path, dataset=name)
        if not isinstance(link, h5py.HardLink):
            return None  # a soft link names an object of this file, itself visited
        obj = f[name]
        if isinstance(obj, h5py.Dataset):
            if obj.is_virtual:
                return ElmoModelFileError(f"{path}: dataset {name!r} is a virtual dataset (data mapped from other "
                                          "files); refusing it (a model file must hold its own data)",
                                          path=path, dataset=name)
            if obj.external:
                return ElmoModelFileError(f"{path}: dataset {name!r} keeps its data in external file(s) "
                                          f"{[e[0] for e in obj.external]}; refusing it (a model file must hold "
                                          "its own data)", path=path, dataset=name)
        return None

    try:
        error = f.visititems_links(visit)
    except (OSError, RuntimeError, KeyError) as e:
        raise ElmoModelFileError(f"{path}: the file's objects cannot be listed (file truncated?): {e}",
                                 path=path) from e
    if error is not None:
        raise error


def self_contained_dataset(f: "h5py.File", name: str, path: str) -> "h5py.Dataset":
    """The dataset ``name`` of the open file ``f``, refused like :func:`check_self_contained`
    does for the whole file (for files with many datasets, checked one at a time). Raises
    ElmoModelFileError naming the dataset; KeyError if there is none."""
    import h5py

    link = f.get(name, getlink=True)
    if link is None:
        raise KeyError(name)
    if isinstance(link, h5py.ExternalLink):
        raise ElmoModelFileError(f"{path}: {name!r} is an external link to {link.filename}:{link.path}; refusing it",
                                 path=path, dataset=name)
    obj = f[name]
    if isinstance(obj, h5py.Dataset) and (obj.is_virtual or obj.external):
        kind = "a virtual dataset" if obj.is_virtual else "stored in external file(s)"
        raise ElmoModelFileError(f"{path}: dataset {name!r} is {kind}; refusing it", path=path, dataset=name)
    return obj


def read_weights(path: Union[str, os.PathLike], options: dict,
                 max_params: Optional[int] = None) -> Dict[str, numpy.ndarray]:
    """Read every dataset of :func:`layout` from ``path`` as float32 arrays.

    Before anything is read, the parameter count implied by ``options`` is checked against
    ``max_params`` (default: $SPACY_ELMO_MAX_PARAMS, else :data:`.sizes.MAX_PARAMS`, 4x the
    largest published ELMo) and the physical memory, see :func:`.sizes.check_size`: a small
    (sparse) file with huge options would otherwise allocate gigabytes. Then every dataset's
    declared shape and dtype are checked, all of them before the first is read.

    Raises ElmoModelFileError: options above the size limit (ElmoMemoryError: above the machine's
    memory); file missing, not a regular file, not HDF5 or truncated; a dataset missing, not
    numeric, of the wrong shape, unreadable, or with NaN/infinite values. Extra datasets are
    ignored.
    """
    path = os.fspath(path)
    check_size(options, path, max_params)
    if not os.path.exists(path):
        raise ElmoModelFileError(f"{path}: weight file not found", path=path)
    with open_hdf5(path) as f:
        datasets = [(name, float_dataset(f, name, shape, path)) for name, shape in iter_layout(options)]
        return {name: read_float(obj, name, path) for name, obj in datasets}


def float_dataset(f: "h5py.File", name: str, shape: Tuple[int, ...], path: str,
                  source: str = "options.json") -> "h5py.Dataset":
    """The dataset ``name`` of ``f``, checked to exist with ``shape`` (what ``source`` implies) and a
    float dtype, nothing read. Raises ElmoModelFileError naming the dataset."""
    import h5py

    try:
        obj = f.get(name)
    except (OSError, RuntimeError, KeyError, ValueError) as e:
        raise ElmoModelFileError(f"{path}: dataset {name!r} cannot be read (file truncated?): {e}",
                                 path=path, dataset=name) from e
    if obj is None or not isinstance(obj, h5py.Dataset):
        raise ElmoModelFileError(f"{path}: dataset {name!r} is missing (expected shape {shape})", path=path,
                                 dataset=name)
    if tuple(obj.shape) != shape:
        raise ElmoModelFileError(f"{path}: dataset {name!r} has shape {tuple(obj.shape)}, but {source} implies {shape}",
                                 path=path, dataset=name)
    if obj.dtype.kind != "f":
        raise ElmoModelFileError(f"{path}: dataset {name!r} has dtype {obj.dtype}, expected float",
                                 path=path, dataset=name)
    return obj


def read_float(obj: "h5py.Dataset", name: str, path: str) -> numpy.ndarray:
    """The checked dataset ``obj`` as a float32 array; ElmoModelFileError if unreadable or not finite."""
    try:
        arr = obj[()]
    except (OSError, RuntimeError, ValueError) as e:
        raise ElmoModelFileError(f"{path}: dataset {name!r} cannot be read (file truncated?): {e}",
                                 path=path, dataset=name) from e
    arr = numpy.ascontiguousarray(arr, dtype=numpy.float32)
    bad = arr.size - int(numpy.isfinite(arr).sum())
    if bad:
        raise ElmoModelFileError(f"{path}: dataset {name!r} has {bad:,} NaN or infinite values "
                                 "(corrupt file or diverged training)", path=path, dataset=name)
    return arr


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
    if _word_dim(options):
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


def read_vocab(path: Union[str, os.PathLike], options: dict,
               max_params: Optional[int] = None) -> Dict[str, Dict[str, int]]:
    """The vocabularies stored by :func:`write_vocab`: {"chars": {str: id}, "words": ...} (words
    when ``vocab.n_words`` > 0) for the checked format_version 2 ``options`` they belong to.

    Before anything is read, each part's declared shapes are checked against what the options
    imply (:func:`_vocab_datasets`), and their values, with the model's parameters, against the
    size limit and memory (:func:`.sizes.check_size`). Raises ElmoModelFileError naming the file
    and dataset for a shape the options do not allow, a part that is malformed (lengths that do
    not add up, not UTF-8, counts that differ), or a size above the limit."""
    path = os.fspath(path)
    parts = ("chars", "words") if options["vocab"].get("n_words") else ("chars",)
    with open_hdf5(path) as f:
        found = {part: _vocab_datasets(f, part, options, path) for part in parts}
        extra = sum(ds.size for datasets in found.values() for ds in datasets)
        check_size(options, path, max_params, extra, "vocabulary values")
        return {part: _read_lexicon(datasets, f"vocab/{part}", path) for part, datasets in found.items()}


VOCAB_NAMES = ("utf8", "lengths", "ids")


def _vocab_datasets(f: "h5py.File", part: str, options: dict, path: str) -> List["h5py.Dataset"]:
    """The (utf8, lengths, ids) datasets of vocab/``part``, checked against the options (nothing
    read): 1-D integer datasets, lengths and ids of one length k with 1 <= k <= the vocabulary's
    size (``n_characters - 1`` characters; ``vocab.n_words`` words), and at most 4 bytes (the
    longest UTF-8 character) x ``max_characters_per_token`` per entry of UTF-8 (a longer string
    is never looked up)."""
    import h5py

    name = f"vocab/{part}"
    size = options["char_cnn"]["n_characters"] - 1 if part == "chars" else options["vocab"]["n_words"]
    datasets = []
    for key in VOCAB_NAMES:
        try:
            obj = f.get(f"{name}/{key}")
        except (OSError, RuntimeError, KeyError, ValueError) as e:
            raise ElmoModelFileError(f"{path}: dataset {name}/{key} cannot be read (file truncated?): {e}",
                                     path=path, dataset=f"{name}/{key}") from e
        if not isinstance(obj, h5py.Dataset) or obj.ndim != 1 or obj.dtype.kind not in "iu":
            raise ElmoModelFileError(f"{path}: dataset {name}/{key} is missing or not a 1-D integer dataset",
                                     path=path, dataset=f"{name}/{key}")
        datasets.append(obj)
    utf8, lengths, ids = datasets
    k = ids.shape[0]
    if lengths.shape[0] != k or not 1 <= k <= size:
        raise ElmoModelFileError(f"{path}: datasets {name}/lengths and {name}/ids declare {lengths.shape[0]:,} and "
                                 f"{k:,} entries, but options.json implies one count of 1 to {size:,}",
                                 path=path, dataset=f"{name}/ids")
    most = 4 * options["char_cnn"]["max_characters_per_token"] * k
    if utf8.shape[0] > most:
        raise ElmoModelFileError(f"{path}: dataset {name}/utf8 declares {utf8.shape[0]:,} bytes, but options.json "
                                 f"implies at most {most:,} for {k:,} entries", path=path, dataset=f"{name}/utf8")
    return datasets


def _read_lexicon(datasets: Sequence["h5py.Dataset"], name: str, path: str) -> Dict[str, int]:
    """{string: id} of checked (utf8, lengths, ids) datasets; ElmoModelFileError if malformed."""
    try:
        data = bytes(datasets[0][()])
        lengths, ids = datasets[1][()], datasets[2][()]
        ends = numpy.cumsum(lengths)
        if (len(ends) and ends[-1] != len(data)) or (lengths < 0).any():
            raise ValueError("lengths, ids and bytes disagree")
        starts = ends - lengths
        return {data[a:b].decode("utf-8"): int(i) for a, b, i in zip(starts, ends, ids)}
    except (KeyError, OSError, ValueError) as e:
        raise ElmoModelFileError(f"{path}: dataset {name!r} is malformed: {e}", path=path, dataset=name) from e
