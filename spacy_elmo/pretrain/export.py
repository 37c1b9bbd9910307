"""Trained :class:`LanguageModel` <-> the standard ELMo files.

The biLM goes to ``options.json`` + ``weights.hdf5`` in the bilm-tf layout (what
``BiLM.from_files`` and AllenNLP read). The LM head goes to ``lm_head.hdf5`` (the
``AdaptiveLogSoftmaxWithLoss`` state dict) and the softmax vocabulary to ``vocab.txt`` (bilm-tf's
vocabulary format: one token a line, starting with <S>, </S>, <UNK>).

The training LSTMs (torch.nn.LSTM's parameters, gates (i, f, g, o)) are converted into the
inference :class:`~spacy_elmo.bilm.BiLM`'s state dict (:func:`to_bilm_state_dict`), which
:mod:`spacy_elmo.bilm.weights` maps to and from the bilm-tf datasets: one reader and one writer
of the format. In bilm-tf terms: W_0 = [W_ih, W_hh]^T (input + proj, 4 * dim) with columns
(i, j=g, f, o); B = b_ih + b_hh minus the forget_bias 1.0 that TF adds at run time;
W_P_0 = W_hr^T (dim, proj).
"""
import json
import os
from typing import Dict, List, Optional, Tuple

import h5py
import numpy
import torch

from ..bilm import integrity
from ..bilm.files import VOCAB_BYTES, read_text
from ..bilm.finite import is_finite_number
from ..bilm.lstm import FORGET_BIAS
from ..bilm.options import read_options
from ..bilm.sizes import check_size, out_of_memory
from ..bilm.weights import (
    float_dataset,
    from_state_dict,
    open_hdf5,
    read_float,
    read_weights,
    to_state_dict,
    write_weights,
)
from ..errors import ElmoModelFileError
from .lm import LanguageModel, softmax_cutoffs

TORCH_TO_INTERNAL = (0, 1, 3, 2)  # BiLM gate k (i, f, o, j) is torch's gate block TORCH_TO_INTERNAL[k] (i, f, g=j, o)
INTERNAL_TO_TORCH = (0, 1, 3, 2)  # the permutation is its own inverse
F_BLOCK = 1  # the forget gate's block, the same in both orders


def _gates(a: numpy.ndarray, order, C: int) -> numpy.ndarray:
    """Reorder the four C-wide gate blocks of the last axis."""
    return numpy.concatenate([a[..., k * C: (k + 1) * C] for k in order], axis=-1)


def to_bilm_state_dict(lm: LanguageModel) -> dict:
    """The training LM's biLM part as :class:`~spacy_elmo.bilm.BiLM` state-dict arrays (float32):
    the char CNN has the same names; each layer's LSTMs of both directions become
    ``lstm.w_input.{l}`` (2, P_in, 4C) = W_ih^T, ``lstm.w_state.{l}`` (2, P, 4C) = W_hh^T,
    ``lstm.bias.{l}`` (2, 4C) = b_ih + b_hh minus bilm-tf's run-time forget bias, and
    ``lstm.w_proj.{l}`` (2, C, P) = W_hr^T, gates reordered from torch's (i, f, g, o) to (i, f, o, j)."""
    sd = {k: v.detach().cpu().float().numpy() for k, v in lm.state_dict().items()}
    out = {k: v for k, v in sd.items() if k.startswith("char_cnn.")}
    C = lm.lstm_dim
    for layer in range(lm.n_layers):
        parts = {"w_input": [], "w_state": [], "bias": [], "w_proj": []}
        for name in ("forward_lstms", "backward_lstms"):
            p = f"{name}.{layer}."
            bias = _gates(sd[p + "bias_ih_l0"] + sd[p + "bias_hh_l0"], TORCH_TO_INTERNAL, C)
            bias[F_BLOCK * C:(F_BLOCK + 1) * C] -= FORGET_BIAS
            parts["w_input"].append(_gates(sd[p + "weight_ih_l0"].T, TORCH_TO_INTERNAL, C))
            parts["w_state"].append(_gates(sd[p + "weight_hh_l0"].T, TORCH_TO_INTERNAL, C))
            parts["bias"].append(bias)
            parts["w_proj"].append(sd[p + "weight_hr_l0"].T)
        for key, arrays in parts.items():
            out[f"lstm.{key}.{layer}"] = numpy.stack(arrays)
    return {k: numpy.ascontiguousarray(v, dtype=numpy.float32) for k, v in out.items()}


def from_bilm_state_dict(lm: LanguageModel, sd: dict) -> dict:
    """The inverse of :func:`to_bilm_state_dict` as the training LM's state-dict arrays (b_ih takes
    the whole bias, b_hh is zero; the sum is what the LSTM uses)."""
    out = {k: v for k, v in sd.items() if k.startswith("char_cnn.")}
    C = lm.lstm_dim
    for layer in range(lm.n_layers):
        for d, name in enumerate(("forward_lstms", "backward_lstms")):
            p = f"{name}.{layer}."
            bias = sd[f"lstm.bias.{layer}"][d].copy()
            bias[F_BLOCK * C:(F_BLOCK + 1) * C] += FORGET_BIAS
            out[p + "weight_ih_l0"] = _gates(sd[f"lstm.w_input.{layer}"][d], INTERNAL_TO_TORCH, C).T
            out[p + "weight_hh_l0"] = _gates(sd[f"lstm.w_state.{layer}"][d], INTERNAL_TO_TORCH, C).T
            out[p + "bias_ih_l0"] = _gates(bias, INTERNAL_TO_TORCH, C)
            out[p + "bias_hh_l0"] = numpy.zeros_like(bias)
            out[p + "weight_hr_l0"] = sd[f"lstm.w_proj.{layer}"][d].T
    return out


def biLM_datasets(lm: LanguageModel) -> dict:
    """dataset name -> float32 array, in the bilm-tf layout (through BiLM's state dict and
    :func:`spacy_elmo.bilm.weights.from_state_dict`, the one mapping of the format)."""
    return from_state_dict(to_bilm_state_dict(lm), lm.options())


def load_biLM_datasets(lm: LanguageModel, data: dict) -> None:
    """Inverse of :func:`biLM_datasets`: load bilm-tf datasets into the training LM. Raises
    ElmoWeightsError (a ValueError) naming the parameter on a shape mismatch."""
    sd = from_bilm_state_dict(lm, to_state_dict(dict(data), lm.options()))
    own = lm.state_dict()
    tensors = {k: torch.from_numpy(numpy.ascontiguousarray(v, dtype=numpy.float32)) for k, v in sd.items()}
    for k, v in tensors.items():
        if own[k].shape != v.shape:
            raise ElmoModelFileError(f"Shape mismatch for {k}: model {tuple(own[k].shape)}, file {tuple(v.shape)}")
    lm.load_state_dict(tensors, strict=False)


def write_model(lm: LanguageModel, words: List[str], directory: str, meta: dict) -> None:
    """Write options.json, weights.hdf5, lm_head.hdf5, vocab.txt and meta.json into directory,
    and the sha256 of the first four into sha256.json (checked when the biLM is loaded)."""
    os.makedirs(directory, exist_ok=True)
    tmp = lambda name: os.path.join(directory, name + ".tmp")  # noqa: E731
    with open(tmp("options.json"), "w", encoding="utf-8") as f:
        json.dump(lm.options(), f, indent=2)
    write_weights(tmp("weights.hdf5"), biLM_datasets(lm))
    with h5py.File(tmp("lm_head.hdf5"), "w") as f:
        for name, tensor in lm.softmax.state_dict().items():
            f.create_dataset(name, data=tensor.detach().cpu().numpy().astype(numpy.float32))
        f.attrs["cutoffs"] = json.dumps([int(c) for c in lm.softmax.cutoffs[:-1]])
        f.attrs["div_value"] = float(lm.softmax.div_value)
        f.attrs["vocab_size"] = int(lm.softmax.n_classes)
    with open(tmp("vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")
    with open(tmp("meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    for name in ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt", "meta.json"):
        os.replace(tmp(name), os.path.join(directory, name))
    integrity.record(directory, ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt"))


def read_vocab(path: str) -> List[str]:
    """The words of a ``vocab.txt``, one a line (empty lines skipped; a regular file of at most
    :data:`~spacy_elmo.bilm.files.VOCAB_BYTES`). Raises ElmoWeightsError naming the file."""
    try:
        text = read_text(path, VOCAB_BYTES, "vocabulary")
    except (OSError, UnicodeDecodeError) as e:
        raise ElmoModelFileError(f"{path}: cannot read the vocabulary (not UTF-8 text?): {e}", path=path) from e
    return [line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line]


def _head_attrs(f: h5py.File, path: str) -> Tuple[List[int], float, Optional[int]]:
    """(cutoffs, div_value, vocab_size or None) of an open lm_head.hdf5; ElmoWeightsError if unreadable."""
    try:
        cutoffs = [int(c) for c in json.loads(f.attrs["cutoffs"])]
        div_value = float(f.attrs["div_value"])
        vocab_size = int(f.attrs["vocab_size"]) if "vocab_size" in f.attrs else None
        if not is_finite_number(div_value):
            raise ValueError(f"div_value {div_value!r} is not a finite number")
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, OverflowError) as e:
        raise ElmoModelFileError(f"{path}: cannot read the LM head (truncated, or not written by "
                               f"`python -m spacy_elmo pretrain`?): {e}", path=path) from e
    return cutoffs, div_value, vocab_size


def _head_shapes(projection_dim: int, words: List[str], cutoffs: List[int], div_value: float,
                 path: str) -> Dict[str, Tuple[int, ...]]:
    """Dataset name -> shape of the LM head these settings give (built on the meta device: nothing
    is allocated). Raises ElmoWeightsError when the cutoffs do not fit the vocabulary."""
    try:
        with torch.device("meta"):
            head = torch.nn.AdaptiveLogSoftmaxWithLoss(projection_dim, len(words), div_value=div_value,
                                                       cutoffs=softmax_cutoffs(cutoffs, len(words))[0])
    except ValueError as e:
        raise ElmoModelFileError(f"{path}: its cutoffs {cutoffs} do not fit the {len(words):,} words of "
                               f"vocab.txt ({e})", path=path) from e
    return {k: tuple(v.shape) for k, v in head.state_dict().items()}


def _read_head(paths: dict, options: dict) -> Tuple[dict, List[int], float, List[str]]:
    """(head arrays, cutoffs, div_value, words) of a pretraining output: every lm_head.hdf5 dataset
    checked against the shapes vocab.txt and options.json imply, and counted against the size
    limit with the biLM, before any is read."""
    words, head_path = read_vocab(paths["vocab.txt"]), paths["lm_head.hdf5"]
    with open_hdf5(head_path) as f:
        cutoffs, div_value, vocab_size = _head_attrs(f, head_path)
        if vocab_size is not None and vocab_size != len(words):
            raise ElmoModelFileError(
                f"{paths['vocab.txt']}: vocab.txt has {len(words):,} words but lm_head.hdf5 was trained for "
                f"{vocab_size:,} (truncated vocab.txt, or files from different models?)", path=paths["vocab.txt"])
        shapes = _head_shapes(options["lstm"]["projection_dim"], words, cutoffs, div_value, head_path)
        datasets = {k: float_dataset(f, k, shape, head_path, "options.json / vocab.txt") for k, shape in shapes.items()}
        check_size(options, head_path, extra=sum(d.size for d in datasets.values()), extra_what="LM head values")
        with out_of_memory(head_path, options):
            head = {k: read_float(d, k, head_path) for k, d in datasets.items()}
    return head, cutoffs, div_value, words


def load_model(directory: str) -> Tuple[LanguageModel, List[str]]:
    """Rebuild the trained LanguageModel (biLM + head) from a pretraining output directory.

    Raises FileNotFoundError naming the missing file; ElmoWeightsError (a ValueError) naming the
    file for an unreadable or malformed options.json, weights.hdf5 or lm_head.hdf5, or a vocab.txt /
    lm_head.hdf5 / options.json that do not belong together (every lm_head.hdf5 dataset's shape
    is checked before any is read); ElmoWeightsError (a ValueError) if the biLM uses clipping
    (the training LM has no clipping, see :mod:`.lm`); ElmoWeightsError for options above the size
    limit of :func:`~spacy_elmo.bilm.sizes.check_size` ($SPACY_ELMO_MAX_PARAMS), the LM head
    included; ElmoMemoryError (also a MemoryError) for a model larger than the physical memory
    or a MemoryError while loading.
    """
    paths = {name: os.path.join(directory, name)
             for name in ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt")}
    for path in paths.values():
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} not found: a pretrained model directory needs options.json, weights.hdf5, "
                "lm_head.hdf5 and vocab.txt (as written by `python -m spacy_elmo pretrain`)"
            )
    options = read_options(paths["options.json"])
    check_size(options, paths["weights.hdf5"])  # before LanguageModel allocates (see BiLM.from_files)
    lstm, cnn = options["lstm"], options["char_cnn"]
    if lstm.get("cell_clip") or lstm.get("proj_clip"):
        raise ElmoModelFileError(f"{directory}: models with cell_clip/proj_clip are not supported by the training LM")
    head, cutoffs, div_value, words = _read_head(paths, options)
    model_cfg = {
        "char_dim": cnn["embedding"]["dim"],
        "filters": cnn["filters"],
        "n_highway": cnn["n_highway"],
        "activation": cnn.get("activation", "relu"),
        "lstm_dim": lstm["dim"],
        "projection_dim": lstm["projection_dim"],
        "n_layers": lstm["n_layers"],
        "use_skip_connections": lstm.get("use_skip_connections", False),
        "dropout": 0.0,
    }
    with out_of_memory(paths["weights.hdf5"], options):
        lm = LanguageModel(model_cfg, {"cutoffs": cutoffs, "div_value": div_value}, len(words))
        load_biLM_datasets(lm, read_weights(paths["weights.hdf5"], options))
        lm.softmax.load_state_dict({k: torch.from_numpy(v) for k, v in head.items()})
    lm.eval()
    return lm, words


def lm_layers(lm: LanguageModel, tokens: List[str]) -> torch.Tensor:
    """The ELMo layers of one sentence as the training modules compute them (L + 1, n, 2P)
    float32, on lm's device: layer 0 the token vectors twice, layer k the concatenated forward
    and backward LSTM outputs, sentence boundaries dropped. What ``BiLM.from_files`` of the
    exported files must give for ``tokens`` (the export's check, with either ``lstm_impl``)."""
    from ..bilm.chars import BOS_IDS, EOS_IDS, tokens_to_char_array

    ids = numpy.concatenate([BOS_IDS[None], tokens_to_char_array(tokens), EOS_IDS[None]])
    x = lm.char_cnn(torch.from_numpy(ids).to(lm.device))[None]  # (1, n + 2, P)
    layers = [torch.cat([x, x], -1)[0, 1:-1]]
    h_f, h_b = x, x.flip(1)
    for i, (lstm_f, lstm_b) in enumerate(zip(lm.forward_lstms, lm.backward_lstms)):
        out_f, out_b = lstm_f(h_f)[0], lstm_b(h_b)[0]
        if lm.use_skip_connections and i > 0:
            out_f, out_b = out_f + h_f, out_b + h_b
        h_f, h_b = out_f, out_b
        layers.append(torch.cat([h_f, h_b.flip(1)], -1)[0, 1:-1])
    return torch.stack(layers)
