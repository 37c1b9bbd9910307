"""Trained :class:`LanguageModel` <-> the standard ELMo files.

The biLM goes to ``options.json`` + ``weights.hdf5`` in the bilm-tf layout (what
``BiLM.from_files`` and AllenNLP read). The LM head goes to ``lm_head.hdf5`` (the
``AdaptiveLogSoftmaxWithLoss`` state dict) and the softmax vocabulary to ``vocab.txt`` (bilm-tf's
vocabulary format: one token a line, starting with <S>, </S>, <UNK>).

LSTM mapping (torch.nn.LSTM with proj_size -> TF LSTMCell with num_proj, as bilm-tf saves it):
torch gates are ordered (i, f, g, o), TF's W_0 / B columns (i, j=g, f, o); W_0 is
[W_ih, W_hh]^T of shape (input + proj, 4 * dim); B = b_ih + b_hh minus the forget_bias 1.0 that
TF adds at run time; W_P_0 = W_hr^T of shape (dim, proj).
"""
import json
import os
from typing import List, Optional, Tuple

import h5py
import numpy
import torch

from ..bilm import integrity
from ..bilm.errors import ElmoWeightsError
from ..bilm.options import read_options
from ..bilm.weights import open_hdf5, read_weights
from .lm import LanguageModel


def _tf_gate_order(x: numpy.ndarray, dim: int) -> numpy.ndarray:
    """(i, f, g, o) -> (i, g, f, o) along the last axis; the map is its own inverse."""
    i, f, g, o = (x[..., k * dim : (k + 1) * dim] for k in range(4))
    return numpy.concatenate([i, g, f, o], axis=-1)


def biLM_datasets(lm: LanguageModel) -> dict:
    """dataset name -> float32 array, in the bilm-tf layout."""
    out = {}
    sd = {k: v.detach().cpu().numpy().astype(numpy.float32) for k, v in lm.state_dict().items()}
    out["char_embed"] = sd["char_cnn.char_embedding.weight"][1:]
    for i in range(len(lm.char_cnn.convs)):
        out[f"CNN/W_cnn_{i}"] = numpy.transpose(sd[f"char_cnn.convs.{i}.weight"], (2, 1, 0))[None]
        out[f"CNN/b_cnn_{i}"] = sd[f"char_cnn.convs.{i}.bias"]
    n = lm.char_cnn.n_filters
    for k in range(len(lm.char_cnn.highways)):
        w = sd[f"char_cnn.highways.{k}.linear.weight"]
        b = sd[f"char_cnn.highways.{k}.linear.bias"]
        out[f"CNN_high_{k}/W_transform"] = w[:n].T.copy()
        out[f"CNN_high_{k}/W_carry"] = w[n:].T.copy()
        out[f"CNN_high_{k}/b_transform"] = b[:n]
        out[f"CNN_high_{k}/b_carry"] = b[n:]
    out["CNN_proj/W_proj"] = sd["char_cnn.projection.weight"].T.copy()
    out["CNN_proj/b_proj"] = sd["char_cnn.projection.bias"]
    C = lm.lstm_dim
    for d, name in enumerate(("forward_lstms", "backward_lstms")):
        for layer in range(lm.n_layers):
            p = f"{name}.{layer}."
            w = numpy.concatenate([sd[p + "weight_ih_l0"], sd[p + "weight_hh_l0"]], axis=1).T
            b = sd[p + "bias_ih_l0"] + sd[p + "bias_hh_l0"]
            b = _tf_gate_order(b, C)
            b[2 * C : 3 * C] -= 1.0
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            out[f"{cell}/W_0"] = _tf_gate_order(w, C).copy()
            out[f"{cell}/B"] = b
            out[f"{cell}/W_P_0"] = sd[p + "weight_hr_l0"].T.copy()
    return out


def load_biLM_datasets(lm: LanguageModel, data: dict) -> None:
    """Inverse of :func:`biLM_datasets` (b_hh is set to zero, b_ih takes the whole bias)."""
    C = lm.lstm_dim
    sd = {}
    emb = numpy.zeros((data["char_embed"].shape[0] + 1, data["char_embed"].shape[1]), numpy.float32)
    emb[1:] = data["char_embed"]
    sd["char_cnn.char_embedding.weight"] = emb
    for i in range(len(lm.char_cnn.convs)):
        sd[f"char_cnn.convs.{i}.weight"] = numpy.transpose(data[f"CNN/W_cnn_{i}"][0], (2, 1, 0))
        sd[f"char_cnn.convs.{i}.bias"] = data[f"CNN/b_cnn_{i}"]
    for k in range(len(lm.char_cnn.highways)):
        sd[f"char_cnn.highways.{k}.linear.weight"] = numpy.concatenate(
            [data[f"CNN_high_{k}/W_transform"].T, data[f"CNN_high_{k}/W_carry"].T]
        )
        sd[f"char_cnn.highways.{k}.linear.bias"] = numpy.concatenate(
            [data[f"CNN_high_{k}/b_transform"], data[f"CNN_high_{k}/b_carry"]]
        )
    sd["char_cnn.projection.weight"] = data["CNN_proj/W_proj"].T
    sd["char_cnn.projection.bias"] = data["CNN_proj/b_proj"]
    for d, name in enumerate(("forward_lstms", "backward_lstms")):
        for layer in range(lm.n_layers):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            w = _tf_gate_order(data[f"{cell}/W_0"], C).T
            b = data[f"{cell}/B"].astype(numpy.float32).copy()
            b[2 * C : 3 * C] += 1.0
            b = _tf_gate_order(b, C)
            in_dim = w.shape[1] - lm.projection_dim
            p = f"{name}.{layer}."
            sd[p + "weight_ih_l0"] = w[:, :in_dim]
            sd[p + "weight_hh_l0"] = w[:, in_dim:]
            sd[p + "bias_ih_l0"] = b
            sd[p + "bias_hh_l0"] = numpy.zeros_like(b)
            sd[p + "weight_hr_l0"] = data[f"{cell}/W_P_0"].T
    own = lm.state_dict()
    tensors = {k: torch.from_numpy(numpy.ascontiguousarray(v, dtype=numpy.float32)) for k, v in sd.items()}
    for k, v in tensors.items():
        if own[k].shape != v.shape:
            raise ValueError(f"Shape mismatch for {k}: model {tuple(own[k].shape)}, file {tuple(v.shape)}")
    lm.load_state_dict(tensors, strict=False)


def write_model(lm: LanguageModel, words: List[str], directory: str, meta: dict) -> None:
    """Write options.json, weights.hdf5, lm_head.hdf5, vocab.txt and meta.json into directory,
    and the sha256 of the first four into sha256.json (checked when the biLM is loaded)."""
    os.makedirs(directory, exist_ok=True)
    tmp = lambda name: os.path.join(directory, name + ".tmp")  # noqa: E731
    with open(tmp("options.json"), "w", encoding="utf-8") as f:
        json.dump(lm.options(), f, indent=2)
    with h5py.File(tmp("weights.hdf5"), "w") as f:
        for name, array in biLM_datasets(lm).items():
            f.create_dataset(name, data=array)
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
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def _read_lm_head(path: str) -> Tuple[dict, List[int], float, Optional[int]]:
    """(state dict arrays, cutoffs, div_value, vocab_size or None) of lm_head.hdf5; ElmoWeightsError if unreadable."""
    with open_hdf5(path) as f:
        try:
            head = {k: f[k][...] for k in f.keys()}
            cutoffs = [int(c) for c in json.loads(f.attrs["cutoffs"])]
            div_value = float(f.attrs["div_value"])
            vocab_size = int(f.attrs["vocab_size"]) if "vocab_size" in f.attrs else None
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            raise ElmoWeightsError(f"{path}: cannot read the LM head (truncated, or not written by "
                                   f"`python -m spacy_elmo pretrain`?): {e}", path=path) from e
    return head, cutoffs, div_value, vocab_size


def load_model(directory: str) -> Tuple[LanguageModel, List[str]]:
    """Rebuild the trained LanguageModel (biLM + head) from a pretraining output directory.

    Raises FileNotFoundError naming the missing file; ElmoWeightsError (a ValueError) naming the
    file for an unreadable or malformed options.json, weights.hdf5 or lm_head.hdf5, or a vocab.txt /
    lm_head.hdf5 / options.json that do not belong together; ValueError if the biLM uses clipping
    (the training LM has no clipping, see :mod:`.lm`).
    """
    paths = {name: os.path.join(directory, name) for name in ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt")}
    for path in paths.values():
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{path} not found: a pretrained model directory needs options.json, weights.hdf5, "
                "lm_head.hdf5 and vocab.txt (as written by `python -m spacy_elmo pretrain`)"
            )
    options = read_options(paths["options.json"])
    lstm, cnn = options["lstm"], options["char_cnn"]
    if lstm.get("cell_clip") or lstm.get("proj_clip"):
        raise ValueError(f"{directory}: models with cell_clip/proj_clip are not supported by the training LM")
    try:
        words = read_vocab(paths["vocab.txt"])
    except (OSError, UnicodeDecodeError) as e:
        raise ElmoWeightsError(f"{paths['vocab.txt']}: cannot read the vocabulary (not UTF-8 text?): {e}",
                               path=paths["vocab.txt"]) from e
    head_path = paths["lm_head.hdf5"]
    head, cutoffs, div_value, vocab_size = _read_lm_head(head_path)
    if vocab_size is not None and vocab_size != len(words):
        raise ElmoWeightsError(
            f"{paths['vocab.txt']}: vocab.txt has {len(words):,} words but lm_head.hdf5 was trained for "
            f"{vocab_size:,} (truncated vocab.txt, or files from different models?)", path=paths["vocab.txt"]
        )
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
    try:
        lm = LanguageModel(model_cfg, {"cutoffs": cutoffs, "div_value": div_value}, len(words))
    except ValueError as e:
        raise ElmoWeightsError(f"{head_path}: its cutoffs {cutoffs} do not fit the {len(words):,} words of "
                               f"vocab.txt ({e})", path=head_path) from e
    load_biLM_datasets(lm, read_weights(paths["weights.hdf5"], options))
    try:
        lm.softmax.load_state_dict({k: torch.from_numpy(v.astype(numpy.float32)) for k, v in head.items()})
    except RuntimeError as e:
        lines = str(e).splitlines()
        reason = lines[min(1, len(lines) - 1)].strip()
        raise ElmoWeightsError(f"{head_path}: does not match options.json / vocab.txt of {directory} "
                               f"(lm_head.hdf5 from another model?): {reason}", path=head_path) from e
    lm.eval()
    return lm, words
