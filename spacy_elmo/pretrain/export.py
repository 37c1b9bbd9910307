"""A trained :class:`.lm.LanguageModel` <-> a model directory.

The biLM is written by :meth:`BiLM.save <spacy_elmo.bilm.BiLM.save>` (``options.json`` +
``weights.hdf5`` in the bilm-tf layout, what ``BiLM.from_files``, bilm-tf and AllenNLP read) and
read back by ``BiLM.from_files``: one writer and one reader of the format, for inference and
training alike. The LM head goes to ``lm_head.hdf5`` (the :class:`.lm.SoftmaxHead` state dict,
with its cutoffs, div_value and vocabulary size as attributes) and the softmax vocabulary to
``vocab.txt`` (bilm-tf's vocabulary format: one token a line, starting with <S>, </S>, <UNK>).
"""
import json
import os
import shutil
from typing import Dict, List, Optional, Tuple

import h5py
import numpy
import torch

from ..bilm import BiLM, integrity
from ..bilm.files import VOCAB_BYTES, read_text
from ..bilm.finite import is_finite_number
from ..bilm.sizes import check_size, out_of_memory
from ..bilm.weights import float_dataset, open_hdf5, read_float
from ..errors import ElmoDataError, ElmoFileError, ElmoModelFileError
from .lm import LanguageModel, SoftmaxHead, softmax_cutoffs

MODEL_FILES = ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt")


def write_model(lm: LanguageModel, words: List[str], directory: str, meta: dict) -> None:
    """Write options.json and weights.hdf5 (``lm.bilm.save``), lm_head.hdf5, vocab.txt and
    meta.json into directory, each written beside its place and then renamed into it, and the
    sha256 of the first four into sha256.json (checked when the biLM is loaded)."""
    os.makedirs(directory, exist_ok=True)
    tmp = lambda name: os.path.join(directory, name + ".tmp")  # noqa: E731
    staging = tmp("bilm")
    shutil.rmtree(staging, ignore_errors=True)
    lm.bilm.save(staging)
    for name in ("options.json", "weights.hdf5"):
        os.replace(os.path.join(staging, name), tmp(name))
    shutil.rmtree(staging)
    head = lm.softmax
    with h5py.File(tmp("lm_head.hdf5"), "w") as f:
        for name, tensor in head.state_dict().items():
            f.create_dataset(name, data=tensor.detach().cpu().numpy().astype(numpy.float32))
        f.attrs["cutoffs"] = json.dumps(head.settings()["cutoffs"])
        f.attrs["div_value"] = float(head.div_value)
        f.attrs["vocab_size"] = int(head.n_classes)
    with open(tmp("vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(words) + "\n")
    with open(tmp("meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    for name in MODEL_FILES + ("meta.json",):
        os.replace(tmp(name), os.path.join(directory, name))
    integrity.record(directory, MODEL_FILES)


def read_vocab(path: str) -> List[str]:
    """The words of a ``vocab.txt``, one a line (empty lines skipped; a regular file of at most
    :data:`~spacy_elmo.bilm.files.VOCAB_BYTES`). Raises ElmoModelFileError naming the file."""
    try:
        text = read_text(path, VOCAB_BYTES, "vocabulary")
    except (ElmoFileError, ElmoDataError) as e:
        raise ElmoModelFileError(str(e), path=path) from e
    except OSError as e:
        raise ElmoModelFileError(f"{path}: cannot read the vocabulary: {e}", path=path) from e
    return [line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line]


def _head_attrs(f: h5py.File, path: str) -> Tuple[List[int], float, Optional[int]]:
    """(cutoffs, div_value, vocab_size or None) of an open lm_head.hdf5; ElmoModelFileError if unreadable."""
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
    is allocated). Raises ElmoModelFileError when the cutoffs do not fit the vocabulary."""
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


def read_head(directory: str, options: dict) -> Optional[Tuple[Dict[str, torch.Tensor], dict, List[str]]]:
    """(head state dict, {"cutoffs", "div_value"}, words) of the LM head in ``directory``
    (lm_head.hdf5 + vocab.txt), every dataset checked against the shapes vocab.txt and
    ``options`` imply before any is read; None when the directory has neither file (a biLM
    without a head, e.g. the official models). Raises FileNotFoundError when only one of the two
    is there; ElmoModelFileError (a ValueError) naming the file as :func:`load_model`."""
    paths = {name: os.path.join(directory, name) for name in ("lm_head.hdf5", "vocab.txt")}
    present = [name for name, path in paths.items() if os.path.exists(path)]
    if not present:
        return None
    if len(present) == 1:
        missing = next(path for name, path in paths.items() if name not in present)
        raise FileNotFoundError(f"{missing} not found: an LM head needs lm_head.hdf5 and vocab.txt together "
                                "(as written by `python -m spacy_elmo pretrain`)")
    head, cutoffs, div_value, words = _read_head(paths, options)
    return {k: torch.from_numpy(v) for k, v in head.items()}, {"cutoffs": cutoffs, "div_value": div_value}, words


def load_model(directory: str) -> Tuple[LanguageModel, List[str]]:
    """Rebuild the trained LanguageModel (biLM + head, eval mode) from a pretraining output
    directory: the biLM with ``BiLM.from_files`` (any options it reads, clipping included),
    the head with :func:`read_head`.

    Raises FileNotFoundError naming the missing file; ElmoModelFileError (a ValueError) naming the
    file for an unreadable or malformed options.json, weights.hdf5 (or one failing its sha256),
    lm_head.hdf5, or a vocab.txt / lm_head.hdf5 / options.json that do not belong together (every
    lm_head.hdf5 dataset's shape is checked before any is read); ElmoModelFileError for options
    above the size limit of :func:`~spacy_elmo.bilm.sizes.check_size` ($SPACY_ELMO_MAX_PARAMS),
    the LM head included; ElmoMemoryError (also a MemoryError) for a model larger than the
    physical memory or a MemoryError while loading.
    """
    paths = {name: os.path.join(directory, name) for name in MODEL_FILES}
    for path in paths.values():
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} not found: a pretrained model directory needs options.json, weights.hdf5, "
                "lm_head.hdf5 and vocab.txt (as written by `python -m spacy_elmo pretrain`)"
            )
    bilm = BiLM.from_files(paths["options.json"], paths["weights.hdf5"])
    state, settings, words = read_head(directory, bilm.options)
    head = SoftmaxHead(bilm.projection_dim, len(words), settings)
    head.load_state_dict(state)
    lm = LanguageModel(bilm, head)
    lm.eval()
    return lm, words


def lm_layers(lm: LanguageModel, tokens: List[str]) -> torch.Tensor:
    """The ELMo layers of one sentence as training computes them (L + 1, n, 2P) float32, on lm's
    device: ``lm.bilm`` with autograd on, so its LSTMs run the path training runs
    (:func:`spacy_elmo.bilm.lstm_paths.choose`), detached. What ``BiLM.from_files`` of the written
    files must give for ``tokens`` on its inference paths (the export's check)."""
    bilm = lm.bilm
    ids = bilm.batch_to_ids([tokens]).to(lm.device)
    with torch.enable_grad():
        layers = bilm(ids).layers
    return layers[:, 0].detach()
