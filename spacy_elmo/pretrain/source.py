"""Continued pretraining: the model ``[training] init_from`` names, and the warm start from it.

The source is any biLM that ``BiLM.from_pretrained`` loads (a packaged or downloaded model name,
e.g. ``elmo-small``, ``efml-de`` or the shipped ``en_elmo_small``, or a directory), also a
bilm-tf folder whose weights are named ``lm_weights.hdf5``. Its options (widths, filters,
highway layers, skip connections, cell and projection clipping) become the trained model's: the
config's ``[model]`` shape comes from the source, and a ``[model]`` value the user set that
differs from it is an error naming both (a larger ``projection_dim`` or ``lstm_dim`` widens the
source instead, :mod:`.widen`). A source with an LM head (``lm_head.hdf5`` + ``vocab.txt``, as
this command writes) keeps it and its vocabulary: corpus words outside it are ``<UNK>``. A source
without one (the official models have no softmax) gets a new head for the corpus's vocabulary
(``[vocab]``, ``[softmax]``).
"""
import copy
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

from ..bilm import BiLM
from ..bilm.options import JSON_KEYS
from ..errors import ElmoConfigError, ElmoModelFileError
from ..hub.resolve import resolve
from .export import read_head
from .lm import MODEL_KEYS, LanguageModel, SoftmaxHead, model_config
from .widen import SHAPE_KEYS, widened_state_dict, width_change

WEIGHT_NAMES = ("weights.hdf5", "lm_weights.hdf5")  # ours / AllenNLP's, then bilm-tf's dump_weights


@dataclass
class Source:
    """A loaded init_from model: its biLM (frozen, CPU) and its LM head (state dict,
    {"cutoffs", "div_value"}, words) or None."""

    name: str
    bilm: BiLM
    head: Optional[Tuple[Dict[str, torch.Tensor], dict, List[str]]]

    @property
    def words(self) -> Optional[List[str]]:
        """The head's softmax vocabulary, None without a head."""
        return None if self.head is None else self.head[2]


def _where(init_from: str) -> str:
    return f"[training] init_from = {init_from!r}"


def _files(init_from: str) -> Tuple[str, str, str]:
    """(directory, options.json, weights file) of a model name or directory."""
    try:
        directory = resolve(init_from)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{_where(init_from)}: {err}") from None
    weights = next((os.path.join(directory, n) for n in WEIGHT_NAMES if os.path.exists(os.path.join(directory, n))),
                   os.path.join(directory, WEIGHT_NAMES[0]))
    return directory, os.path.join(directory, "options.json"), weights


def load_source(init_from: str) -> Source:
    """The biLM and LM head of ``init_from``. Raises FileNotFoundError (an unknown or not
    downloaded name, a directory without options.json and weights, an LM head without its
    vocab.txt or the reverse) or ElmoModelFileError (a ValueError: malformed files), naming
    ``[training] init_from``."""
    directory, options_file, weight_file = _files(init_from)
    for path in (options_file, weight_file):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{_where(init_from)}: {path} not found: give a model name or a directory with "
                                    "options.json and weights.hdf5 (or bilm-tf's lm_weights.hdf5), or null to "
                                    "train from scratch")
    try:
        bilm = BiLM.from_files(options_file, weight_file)
        return Source(init_from, bilm, read_head(directory, bilm.options))
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{_where(init_from)}: {err}") from None
    except ElmoModelFileError as err:
        raise ElmoModelFileError(f"{_where(init_from)}: {err}", path=err.path, dataset=err.dataset) from None


def trained_options(cfg, source: Source, user_set: set) -> dict:
    """The options of the biLM to train from ``source``: the source's, with ``projection_dim`` /
    ``lstm_dim`` widened where the user set larger ones. Writes the resulting shape into
    ``cfg["model"]`` (the run's config.cfg then records it). Raises ElmoConfigError (a
    ValueError, one line) for a ``[model]`` value in ``user_set`` (``"model.key"`` names) that
    differs from the source's, naming both."""
    have = model_config(source.bilm.options)
    options = copy.deepcopy(source.bilm.options)
    for key in MODEL_KEYS:
        want = cfg["model"][key]
        if f"model.{key}" in user_set and want != have[key]:
            if key in SHAPE_KEYS and isinstance(want, int) and want > have[key]:
                section, name = JSON_KEYS[key]
                options[section][name] = want
                continue
            raise ElmoConfigError(f"[model] {key} = {want!r} contradicts {_where(source.name)}, whose {key} is "
                                      f"{have[key]!r}: remove [model] {key} (the shape comes from the source)")
        cfg["model"][key] = have[key]
    return options


def source_lm(source: Source, vocab_size: int, softmax_cfg: dict) -> LanguageModel:
    """The source as a LanguageModel: its own head, or (without one) a new head of the config's
    [softmax] for ``vocab_size`` words."""
    bilm = source.bilm
    if source.head is None:
        return LanguageModel(bilm, SoftmaxHead(bilm.projection_dim, vocab_size, softmax_cfg))
    state, settings, words = source.head
    head = SoftmaxHead(bilm.projection_dim, len(words), settings)
    head.load_state_dict(state)
    return LanguageModel(bilm, head)


def warm_start(lm: LanguageModel, source: LanguageModel, init_from: str) -> dict:
    """Load source's weights into lm, widened (:mod:`.widen`) where lm's projection or cells are
    larger; returns the width change ({} if none). Raises ElmoConfigError (a ValueError)
    naming [training] init_from for any other difference of architecture."""
    try:
        change = width_change(source, lm)
        lm.load_state_dict(widened_state_dict(source, lm) if change else source.state_dict())
    except (RuntimeError, ValueError) as err:
        raise ElmoConfigError(f"{_where(init_from)}: its architecture differs from [model] / [softmax] of "
                                  f"this config ({str(err).splitlines()[0]})") from None
    return change
