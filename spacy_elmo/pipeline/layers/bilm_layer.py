"""The biLM as a Thinc layer: sentences (lists of token strings) -> per-sentence layer stacks.

Input: list of sentences, each a tuple/list of str. Output: list of float32 arrays
(num_layers + 1, n_tokens, dim) on the current Thinc device (numpy on CPU, cupy on GPU); an
empty sentence gives (num_layers + 1, 0, dim). Stateless: a sentence's output never depends on
the rest of the batch.

Three modes:
- prediction (``is_train=False``): the biLM core's fast path under ``torch.inference_mode``;
  every distinct token goes through the char CNN once; identical sentences run once; sentences
  sorted by length into batches of ``batch_size``.
- frozen training (``is_train=True``, attr ``finetune`` False, the default): as prediction, plus
  the bounded :class:`~..cache.LayersCache`; backprop returns nothing.
- fine-tuning (``is_train=True``, ``finetune`` True, set from ``grad_factor > 0``): autograd
  through the biLM; backprop takes the gradients of the outputs and leaves parameter gradients
  for ``finish_update``. The cache is cleared (the weights change).
Char ids are built on the CPU and moved to the biLM's device.
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from thinc.api import Model, torch2xp, xp2torch

from ...bilm.cpu_budget import ThreadBudget, parse_threads
from ..cache import LayersCache
from ..loading import check_paths, load_bilm
from .bilm_shim import BiLMShim


def BiLMLayer(model: Optional[str], options_path: Optional[str] = None, weights_path: Optional[str] = None,
              *, where: str = "spacy_elmo", batch_size: int = 64, cache_size: int = 0,
              finetune: bool = False, threads: Union[int, str] = "auto") -> Model:
    """Model[List[Sequence[str]], List[Floats3d]] around a lazily loaded biLM.

    model / options_path / weights_path: see :func:`~..loading.resolve_files`; ``where`` names the
    config section in error messages. batch_size: sentences per biLM call. cache_size: tokens kept
    by the frozen-training cache (0 = off). threads: torch intra-op threads for each biLM call on
    CPU, "auto" (fewer when other processes keep cores busy; see
    :mod:`spacy_elmo.bilm.cpu_budget`) or a positive int. Dims ``nL`` (num_layers + 1) and ``nO`` (dim) are set
    when the biLM is loaded. Raises ElmoConfigError at once if only one of options_path /
    weights_path is set, and on first use if the files cannot be loaded; ValueError for a bad
    batch_size or threads.
    """
    check_paths(model, options_path, weights_path, where)
    threads = parse_threads(threads, f"{where} threads")
    if batch_size < 1:
        raise ValueError(f"{where} batch_size must be >= 1, got {batch_size}")
    return Model(
        "elmo_bilm", forward, init=init, shims=[BiLMShim()], dims={"nL": None, "nO": None},
        attrs={"source": {"model": model, "options_path": options_path, "weights_path": weights_path,
                          "where": where},
               "batch_size": int(batch_size), "finetune": bool(finetune), "cache": LayersCache(cache_size),
               "threads": ThreadBudget(threads)},
    )


def get_bilm(model: Model):
    """The layer's BiLM, loading it from its source files on first use."""
    shim = model.shims[0]
    if shim.bilm is None:
        src = model.attrs["source"]
        shim.set_bilm(load_bilm(src["model"], src["options_path"], src["weights_path"], src["where"]))
    bilm = shim.bilm
    if not model.has_dim("nL"):
        model.set_dim("nL", bilm.num_layers + 1)
        model.set_dim("nO", bilm.output_dim)
    return bilm


def init(model: Model, X=None, Y=None) -> None:
    get_bilm(model)


def forward(model: Model, sentences: List[Sequence[str]], is_train: bool):
    bilm = get_bilm(model)
    grad = bool(is_train and model.attrs["finetune"])
    cache: LayersCache = model.attrs["cache"]
    if grad:
        cache.clear()
    use_cache = is_train and not grad and cache.max_tokens > 0
    xp = model.ops.xp
    empty = xp.zeros((bilm.num_layers + 1, 0, bilm.output_dim), dtype="float32")
    outputs: List = [None] * len(sentences)
    todo: Dict[Tuple[str, ...], List[int]] = {}
    for i, sent in enumerate(sentences):
        key = tuple(sent)
        hit = cache.get(key) if use_cache and key else None
        if not key:
            outputs[i] = empty
        elif hit is not None:
            outputs[i] = hit
        else:
            todo.setdefault(key, []).append(i)
    keys = list(todo)
    with model.attrs["threads"]:
        arrays, batches = _run(bilm, keys, model.attrs["batch_size"], grad, xp)
    for key, array in zip(keys, arrays):
        for i in todo[key]:
            outputs[i] = array
        if use_cache:
            cache.put(key, xp.ascontiguousarray(array), len(key))

    def backprop(d_outputs: List) -> List:
        if not grad or not batches:
            return []
        tensors, grads = [], []
        for out, rows in batches:  # out: (nL, B, T, dim) tensor; rows: index into keys per batch row
            d = xp.zeros(out.shape, dtype="float32")
            for b, k in enumerate(rows):
                for i in todo[keys[k]]:
                    if d_outputs[i] is not None:
                        d[:, b, : len(keys[k])] += d_outputs[i]
            tensors.append(out)
            grads.append(xp2torch(d, device=out.device))
        torch.autograd.backward(tensors, grads)
        return []

    return outputs, backprop


def _run(bilm, sentences: List[Tuple[str, ...]], batch_size: int, grad: bool, xp):
    """Run the biLM on non-empty sentences: (list of xp arrays per sentence, list of
    (output tensor, row -> sentence index) per batch, kept only when ``grad``)."""
    from ...bilm.chars import tokens_to_char_array

    if not sentences:
        return [], []
    if bilm.char_cnn.projection.weight.requires_grad != grad:
        bilm.requires_grad_(grad)
    device = bilm.char_cnn.projection.weight.device
    vocab: Dict[str, int] = {}
    rows = [numpy.fromiter((vocab.setdefault(t, len(vocab)) for t in s), dtype=numpy.int64, count=len(s))
            for s in sentences]
    arrays: List = [None] * len(sentences)
    batches = []
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
    context = torch.enable_grad() if grad else torch.inference_mode()
    with context:
        table = bilm.embed_tokens(torch.from_numpy(tokens_to_char_array(list(vocab))).to(device))
        for start in range(0, len(order), batch_size):
            members = order[start: start + batch_size]
            index = numpy.full((len(members), len(rows[members[0]])), -1, dtype=numpy.int64)
            for b, i in enumerate(members):
                index[b, : len(rows[i])] = rows[i]
            out = bilm.forward_indexed(table, torch.from_numpy(index).to(device), stateless=True).layers
            layers = torch2xp(out.detach() if grad else out)
            for b, i in enumerate(members):
                arrays[i] = layers[:, b, : len(rows[i])]
            if grad:
                batches.append((out, members))
    return arrays, batches
