"""Registered architectures (``[... .model] @architectures = "spacy_elmo...."``).

- ``spacy_elmo.ElmoBiLM.v1``: the biLM as a Docs -> layer stacks model: the ``model`` of the
  ``elmo`` component and the ``bilm`` of ``Elmo.v1`` (see :mod:`.bilm_config`).
- ``spacy_elmo.ScalarMix.v1``: the scalar mix layer alone.
- ``spacy_elmo.ElmoListener.v1``: tok2vec for a component that listens to an ``elmo`` component.
- ``spacy_elmo.Elmo.v1``: tok2vec with its own biLM (single-component pipelines).
- ``spacy_elmo.ElmoConcat.v1``: ELMo concatenated with the task's own token vectors and
  projected, to use as the ``embed`` of ``spacy.Tok2Vec.v2`` (how Peters et al. 2018 use ELMo).
The ELMo readout is: scalar mix (eq. 1 of the paper) -> dropout (if > 0) -> Linear projection to
``width`` (if given; else the output width is the biLM's dim = 2 * projection_dim).
"""
from typing import List, Optional, Union

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Linear, Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d, Floats3d

from ..errors import ElmoConfigError
from .bilm_config import DEFAULTS as BILM, build_bilm, check_bilm
from .layers.doc_layers import bilm_of
from .layers.listener import ElmoListener
from .layers.scalar_mix import ScalarMix
from .loading import check_number


@registry.architectures("spacy_elmo.ElmoBiLM.v1")
def elmo_bilm_v1(name: Optional[str] = BILM.name, options_path: Optional[str] = BILM.options_path,
                 weights_path: Optional[str] = BILM.weights_path, window_tokens: int = BILM.window_tokens,
                 batch_size: int = BILM.batch_size, cache_mb: float = BILM.cache_mb,
                 cache_dtype: str = BILM.cache_dtype, threads: Union[int, str] = BILM.threads,
                 precision: str = BILM.precision) -> Model[List[Doc], List[Floats3d]]:
    """The biLM: Docs -> one float32 array (num_layers + 1, len(doc), dim) per Doc. The defaults
    are :class:`.bilm_config.BiLMSettings`'s.

    name: packaged model name (``spacy_elmo.DEFAULT_MODEL``), downloaded model name
        (``python -m spacy_elmo download elmo-original``) or a directory with options.json +
        weights.hdf5. options_path / weights_path: files of any official ELMo model (both or
        neither); they win over ``name``. The biLM is loaded on initialize or first use, and then
        saved inside the model (``spacy.load`` reads it from the saved pipeline).
    window_tokens: the longest piece the biLM reads: Docs with sentence boundaries are read
        sentence by sentence, others (and longer sentences) in near-equal windows of at most this
        many tokens (see :mod:`.segments`).
    batch_size: sentences per biLM call.
    cache_mb / cache_dtype: the layer cache of frozen training (MB, 0 = off; "float32" or
        "float16" entries; see :mod:`.cache`).
    threads: torch intra-op threads per biLM call on CPU: "auto" (fewer while other processes
        keep cores busy; see :mod:`spacy_elmo.bilm.cpu_budget`) or a positive int.
    precision: "float32" (exact), "bfloat16" or "int8" (see :mod:`spacy_elmo.bilm.precision`); a runtime
        setting, not part of the saved weights.
    """
    return build_bilm({"name": name, "options_path": options_path, "weights_path": weights_path,
                       "window_tokens": window_tokens, "batch_size": batch_size, "cache_mb": cache_mb,
                       "cache_dtype": cache_dtype, "threads": threads, "precision": precision})


@registry.architectures("spacy_elmo.ScalarMix.v1")
def scalar_mix_v1(initial_weights: Optional[List[float]] = None, gamma: float = 1.0, trainable: bool = True,
                  layer_norm: bool = False) -> Model[List[Floats3d], List[Floats2d]]:
    """See :func:`.layers.scalar_mix.ScalarMix`: (nL, n, dim) arrays -> (n, dim) arrays."""
    return ScalarMix(initial_weights, gamma=gamma, trainable=trainable, layer_norm=layer_norm)


def elmo_readout(mix: Optional[Model], initial_weights: Optional[List[float]], trainable: bool, layer_norm: bool,
                 dropout: float, width: Optional[int]) -> Model[List[Floats3d], List[Floats2d]]:
    """Scalar mix -> dropout -> optional Linear(width). ``mix`` replaces the ScalarMix built from
    the other options (ValueError if both are given). ElmoConfigError (a ValueError) for a
    dropout that is not a finite number in [0, 1)."""
    dropout = check_number(dropout, "dropout", below=1)
    if mix is not None and (initial_weights is not None or not trainable or layer_norm):
        raise ElmoConfigError("give either a mix model or initial_weights/trainable/layer_norm, not both", "mix", None)
    if width is not None and width < 1:
        raise ElmoConfigError(f"width must be >= 1 or null, got {width}", "width", None)
    layers = [mix if mix is not None else ScalarMix(initial_weights, trainable=trainable, layer_norm=layer_norm)]
    if dropout:
        layers.append(Dropout(dropout))
    if width:
        layers.append(with_array(Linear(nO=width)))
    if len(layers) == 1:
        return layers[0]
    model = chain(*layers)
    model.set_ref("mix", layers[0])
    return model


@registry.architectures("spacy_elmo.ElmoListener.v1")
def elmo_listener_v1(upstream: str = "*", grad_factor: float = 0.0, mix: Optional[Model] = None,
                     initial_weights: Optional[List[float]] = None, trainable: bool = True, layer_norm: bool = False,
                     dropout: float = 0.0, width: Optional[int] = None) -> Model[List[Doc], List[Floats2d]]:
    """Tok2vec that reads the biLM layers of an upstream ``elmo`` component (``upstream``: its
    name or "*") and mixes them with its own ScalarMix, so each component learns its own layer
    weights. ``grad_factor`` > 0 fine-tunes the shared biLM through this component (scaled
    gradient); 0 keeps it frozen. Output: float32 (len(doc), width or dim) per Doc.
    """
    listener = ElmoListener(upstream, grad_factor)
    model = chain(listener, elmo_readout(mix, initial_weights, trainable, layer_norm, dropout, width))
    model.set_ref("listener", listener)
    return model


@registry.architectures("spacy_elmo.Elmo.v1")
def elmo_v1(bilm: Optional[Model[List[Doc], List[Floats3d]]] = None, grad_factor: float = 0.0,
            mix: Optional[Model] = None, initial_weights: Optional[List[float]] = None, trainable: bool = True,
            layer_norm: bool = False, dropout: float = 0.0,
            width: Optional[int] = None) -> Model[List[Doc], List[Floats2d]]:
    """Tok2vec with its own biLM: Doc -> sentences/windows -> biLM -> ScalarMix -> dropout ->
    Linear(width). ``bilm``: the biLM model, a ``spacy_elmo.ElmoBiLM.v1`` section (default: that
    architecture's defaults, the packaged default biLM); saved inside this model. Frozen unless
    ``grad_factor > 0``. Output: float32 (len(doc), width or dim) per Doc. Raises ValueError
    for a ``bilm`` that is not an ElmoBiLM.v1 model.
    """
    doc_layers = check_bilm(bilm, "[spacy_elmo.Elmo.v1]")
    layers = elmo_layers_part(doc_layers, grad_factor)
    out = chain(layers, elmo_readout(mix, initial_weights, trainable, layer_norm, dropout, width))
    out.set_ref("bilm", bilm_of(doc_layers))
    return out


def elmo_layers_part(doc_layers: Model, grad_factor: float) -> Model:
    """The Docs -> layers part of Elmo.v1 (also what replaces a listener in
    ``nlp.replace_listeners``): the biLM fine-tunes iff ``grad_factor > 0``, with its gradient
    scaled by ``grad_factor``."""
    grad_factor = check_number(grad_factor, "grad_factor")
    bilm_of(doc_layers).attrs["finetune"] = grad_factor > 0
    return doc_layers if grad_factor in (0, 1) else chain(doc_layers, _scale_grad(grad_factor))


@registry.architectures("spacy_elmo.ElmoConcat.v1")
def elmo_concat_v1(elmo: Model[List[Doc], List[Floats2d]], embed: Model[List[Doc], List[Floats2d]], width: int,
                   maxout_pieces: int = 3, dropout: float = 0.0) -> Model[List[Doc], List[Floats2d]]:
    """[ELMo; task embedding] per token -> Maxout(width, pieces, layer-normalised) (as spaCy's
    MultiHashEmbed mixes its features). Use as ``embed`` of ``spacy.Tok2Vec.v2`` with an encoder of
    the same ``width``. Output: float32 (len(doc), width) per Doc. ElmoConfigError (a ValueError)
    for a dropout that is not a finite number in [0, 1)."""
    dropout = check_number(dropout, "dropout", "[spacy_elmo.ElmoConcat.v1]", below=1)
    project = with_array(Maxout(nO=width, nP=maxout_pieces, normalize=True, dropout=dropout or None))
    model = chain(concatenate(elmo, embed), project)
    model.set_dim("nO", width)
    model.set_ref("elmo", elmo)
    model.set_ref("embed", embed)
    return model


def _scale_grad(factor: float) -> Model:
    """Identity whose backprop multiplies the gradients (a list of arrays) by ``factor``."""
    return Model("scale_grad", _scale_grad_forward, attrs={"factor": float(factor)})


def _scale_grad_forward(model: Model, X, is_train: bool):
    factor = model.attrs["factor"]
    return X, lambda dX: [d * factor for d in dX]
