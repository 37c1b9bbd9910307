"""The biLM's settings in a config: the ``spacy_elmo.ElmoBiLM.v1`` section.

The ``elmo`` component and the ``spacy_elmo.Elmo.v1`` tok2vec take their biLM as a Thinc model
built by a registered architecture (the spacy-transformers pattern), in its own section::

    [components.elmo]
    factory = "elmo"
    store = "all"

    [components.elmo.model]
    @architectures = "spacy_elmo.ElmoBiLM.v1"
    name = "en_elmo_small"
    window_tokens = 128

(for ``Elmo.v1``: ``[components.tagger.model.tok2vec.bilm]``). The model built here records its
settings (:func:`settings_of`, never serialized), so ``nlp.replace_listeners`` can write the
section into the listener's place.

The section's keys and their defaults are written once, in :class:`BiLMSettings`: the
architecture's signature, the ``elmo`` factory's default config and the layers take them from
there (tests/test_pipeline_config.py checks that a filled config agrees).
"""
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Dict, Optional, Union

from thinc.api import Model

from ..errors import ElmoConfigError
from ..package_data import DEFAULT_MODEL
from .layers.bilm_layer import BiLMLayer, ConfigOnly
from .layers.doc_layers import DocLayers

ARCHITECTURE = "spacy_elmo.ElmoBiLM.v1"
WHERE = f"[{ARCHITECTURE}]"
SETTINGS_ATTR = "elmo_bilm_settings"


@dataclass(frozen=True)
class BiLMSettings:
    """The keys of an ``ElmoBiLM.v1`` section and their defaults: which biLM, and how it runs.
    Values are checked where they are used (:func:`.BiLMLayer`, :func:`.DocLayers`), each bad one
    an :class:`~spacy_elmo.errors.ElmoConfigError` naming the key.

    name: packaged model name (``spacy_elmo.DEFAULT_MODEL``), downloaded model name or a directory
        with options.json + weights.hdf5. options_path / weights_path: files of any official ELMo
        model (both or neither); they win over ``name``.
    window_tokens: the longest piece (tokens) the biLM reads (see :mod:`.segments`).
    batch_size: sentences per biLM call.
    cache_mb / cache_dtype: the layer cache of frozen training (MB, 0 = off; "float32" or
        "float16" entries; see :mod:`.cache`).
    threads: torch intra-op threads per biLM call on CPU: "auto" or a positive int.
    precision: "float32" (exact) or "bfloat16" (see :mod:`spacy_elmo.bilm.precision`).
    """

    name: Optional[str] = DEFAULT_MODEL
    options_path: Optional[str] = None
    weights_path: Optional[str] = None
    window_tokens: int = 128
    batch_size: int = 64
    cache_mb: float = 2048
    cache_dtype: str = "float32"
    threads: Union[int, str] = "auto"
    precision: str = "float32"


DEFAULTS = BiLMSettings()
KEYS = tuple(field.name for field in fields(BiLMSettings))


def build_bilm(settings: Dict[str, Any], where: str = WHERE) -> Model:
    """Model[List[Doc], List[Floats3d]]: the Docs -> layer stacks model (:func:`.DocLayers` around
    :func:`.BiLMLayer`) from ElmoBiLM.v1 ``settings`` (a dict of :class:`BiLMSettings` keys;
    missing keys take their defaults). ``where`` names the section in error messages."""
    s = replace(DEFAULTS, **settings)
    bilm = BiLMLayer(s.name, s.options_path, s.weights_path, where=where, batch_size=s.batch_size,
                     cache_mb=s.cache_mb, cache_dtype=s.cache_dtype, threads=s.threads, precision=s.precision)
    model = DocLayers(bilm, s.window_tokens, where=where)
    model.attrs[SETTINGS_ATTR] = ConfigOnly(asdict(s))
    return model


def settings_of(model: Model) -> Optional[Dict[str, Any]]:
    """The settings a model of :func:`build_bilm` was built from (a copy), or None for another
    model."""
    record = model.attrs.get(SETTINGS_ATTR)
    return dict(record.value) if record is not None else None


def section_of(settings: Dict[str, Any]) -> Dict[str, Any]:
    """The ``ElmoBiLM.v1`` config section of ``settings`` (a dict; missing keys take their
    defaults)."""
    return {"@architectures": ARCHITECTURE, **asdict(replace(DEFAULTS, **settings))}


def check_bilm(model: Optional[Model], where: str) -> Model:
    """The biLM model of a component or Elmo.v1 section: ``model`` itself, the one its
    ElmoBiLM.v1 section built, or the default biLM when None. Raises ValueError for a ``model``
    that is not an ElmoBiLM.v1 model (e.g. a string, the name of a model)."""
    if model is None:
        return build_bilm({}, where)
    if not isinstance(model, Model) or settings_of(model) is None:
        raise ElmoConfigError(f"{where} expected a biLM model built by @architectures = \"{ARCHITECTURE}\", got "
                              f"{getattr(model, 'name', model)!r}", "model", None)
    return model
