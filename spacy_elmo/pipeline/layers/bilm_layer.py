"""The biLM as a Thinc layer: sentences (lists of token strings) -> per-sentence layer stacks.

Input: list of sentences, each a tuple/list of str. Output: list of float32 arrays
(num_layers + 1, n_tokens, dim) on the current Thinc device (numpy on CPU, cupy on GPU); an
empty sentence gives (num_layers + 1, 0, dim). Stateless: a sentence's output never depends on
the rest of the batch.

The biLM runs through :func:`spacy_elmo.bilm.batching.embed_batches` (the batching that
``BiLM.embed_sentences`` uses too): every distinct token through the char CNN once, sentences
sorted by length into batches of ``batch_size``; identical sentences of a call run once.
Three modes:
- prediction (``is_train=False``): without autograd (``torch.inference_mode``). Once frozen
  training has run in this process, the layer cache serves prediction too (see
  :mod:`..cache`); otherwise prediction stores nothing.
- frozen training (``is_train=True``, attr ``finetune`` False, the default): as prediction, with
  the :class:`~..cache.LayersCache` (when its capacity is > 0); backprop returns nothing.
- fine-tuning (``is_train=True``, ``finetune`` True, set from ``grad_factor > 0``): autograd
  through the biLM; backprop takes the gradients of the outputs and leaves parameter gradients
  for ``finish_update``. The cache is cleared and stops serving (the weights change).
Char ids are built on the CPU and moved to the biLM's device.
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from thinc.api import Model, torch2xp, xp2torch

from ...bilm.batching import embed_batches
from ...bilm.cpu_budget import ThreadBudget, parse_threads
from ...bilm.precision import check_precision
from ...errors import ElmoConfigError
from .. import threads
from ..cache import LayersCache
from ..loading import check_paths, load_config_bilm
from .bilm_shim import BiLMShim


def BiLMLayer(name: Optional[str], options_path: Optional[str], weights_path: Optional[str], *, where: str,
              batch_size: int, cache_mb: float, cache_dtype: str, threads: Union[int, str], precision: str,
              finetune: bool = False) -> Model:
    """Model[List[Sequence[str]], List[Floats3d]] around a lazily loaded biLM. The settings have
    no defaults here: :class:`~..bilm_config.BiLMSettings` holds them.

    name / options_path / weights_path: see :func:`~..loading.resolve_files`; ``where`` names
    the config section in error messages. batch_size:
    sentences per biLM call. cache_mb / cache_dtype: capacity (MB) and entry dtype of the layer
    cache (0 = off; see :mod:`..cache`).
    threads: torch intra-op threads for each biLM call on CPU, "auto" (fewer when other
    processes keep cores busy; see :mod:`spacy_elmo.bilm.cpu_budget`) or a positive int.
    precision: "float32" (exact), "bfloat16" or "int8" for the biLM's products at prediction and frozen
    training (``BiLM.precision``, see :mod:`spacy_elmo.bilm.precision`); set on the biLM however
    it was loaded (files, ``from_bytes``, unpickling), so a config override applies. Dims
    ``nL`` (num_layers + 1) and ``nO`` (dim) are set when the biLM is loaded. Raises
    ElmoConfigError at once if only one of options_path / weights_path is set, and on first use
    if the files cannot be loaded; ValueError for a bad batch_size, cache setting or threads.
    """
    check_paths(name, options_path, weights_path, where)
    threads = parse_threads(threads, f"{where} threads")
    if batch_size < 1:
        raise ElmoConfigError(f"{where} batch_size must be >= 1, got {batch_size}", "batch_size", None)
    check_precision(precision, f"{where} precision")
    try:
        cache = LayersCache(cache_mb, cache_dtype)
    except ValueError as err:
        raise ElmoConfigError(f"{where} {err}", "cache_mb", None) from None
    return Model(
        "elmo_bilm", forward, init=init, shims=[BiLMShim()], dims={"nL": None, "nO": None},
        attrs={"source": {"name": name, "options_path": options_path, "weights_path": weights_path,
                          "where": where},
               "batch_size": int(batch_size), "finetune": bool(finetune), "cache": cache,
               "threads": ThreadBudget(threads), "precision": ConfigOnly(precision)},
    )


class ConfigOnly:
    """An attr value that ``Model.to_bytes`` leaves out (Thinc skips attrs msgpack cannot
    encode), so ``from_bytes`` / ``spacy.load`` keep the value the config gave: a config override
    at load time (``spacy.load(path, config={"components": {"elmo": {"model": {"precision": ...}}}})``) wins
    over the saved one. ``value``: the setting."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"ConfigOnly({self.value!r})"


def get_bilm(model: Model):
    """The layer's BiLM, loading it from its source files on first use."""
    shim = model.shims[0]
    if shim.bilm is None:
        src = model.attrs["source"]
        shim.set_bilm(load_config_bilm(src["name"], src["options_path"], src["weights_path"], src["where"]))
    bilm = shim.bilm
    threads.check_device(bilm.device)
    precision = model.attrs["precision"].value if "precision" in model.attrs else "float32"
    if bilm.precision != precision:  # e.g. deserialized (the bytes hold weights, not settings)
        bilm.precision = precision
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
    elif is_train:
        cache.start_serving()
    use_cache = not grad and cache.serving
    xp = model.ops.xp
    outputs: List = [None] * len(sentences)
    todo: Dict[Tuple[str, ...], List[int]] = {}
    empty = None
    for i, sent in enumerate(sentences):
        key = tuple(sent)
        hit = cache.get(key) if use_cache and key else None
        if hit is not None:
            outputs[i] = hit
        elif key:
            todo.setdefault(key, []).append(i)
        else:
            if empty is None:
                empty = xp.zeros((bilm.num_layers + 1, 0, bilm.output_dim), dtype="float32")
            outputs[i] = empty
    keys = list(todo)
    batches = []
    if keys:
        if not grad and next(bilm.parameters()).requires_grad:
            bilm.requires_grad_(False)  # back to frozen after fine-tuning
        with model.attrs["threads"]:
            for batch in embed_batches(bilm, keys, model.attrs["batch_size"], grad=grad):
                layers = torch2xp(batch.layers.detach() if grad else batch.layers)
                for k, array in batch.split(layers):
                    if use_cache:
                        array = cache.store(keys[k], array)
                    for i in todo[keys[k]]:
                        outputs[i] = array
                if grad:
                    batches.append(batch)

    def backprop(d_outputs: List) -> List:
        if not batches:
            return []
        tensors, grads = [], []
        for batch in batches:
            d = xp.zeros(batch.layers.shape, dtype="float32")
            for b, (k, n) in enumerate(zip(batch.members, batch.lengths)):
                for i in todo[keys[k]]:
                    if d_outputs[i] is not None:
                        d[:, b, :n] += d_outputs[i]
            tensors.append(batch.layers)
            grads.append(xp2torch(d, device=batch.layers.device))
        torch.autograd.backward(tensors, grads)
        return []

    return outputs, backprop
