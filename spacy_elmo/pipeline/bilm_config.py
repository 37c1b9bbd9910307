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
"""
from typing import Any, Dict, Optional

from thinc.api import Model

from ..errors import ElmoConfigError
from ..package_data import DEFAULT_MODEL
from .layers.bilm_layer import BiLMLayer, ConfigOnly
from .layers.doc_layers import DocLayers

ARCHITECTURE = "spacy_elmo.ElmoBiLM.v1"
WHERE = f"[{ARCHITECTURE}]"
# The ElmoBiLM.v1 keys and their defaults (the factory's DEFAULT_CONFIG and Elmo.v1 use these).
DEFAULTS: Dict[str, Any] = {"name": DEFAULT_MODEL, "options_path": None, "weights_path": None, "window_tokens": 128,
                            "batch_size": 64, "cache_mb": 2048, "cache_dtype": "float32", "threads": "auto",
                            "precision": "float32"}
SETTINGS_ATTR = "elmo_bilm_settings"


def build_bilm(settings: Dict[str, Any], where: str = WHERE) -> Model:
    """Model[List[Doc], List[Floats3d]]: the Docs -> layer stacks model (:func:`.DocLayers` around
    :func:`.BiLMLayer`) from ElmoBiLM.v1 ``settings`` (missing keys take :data:`DEFAULTS`).
    ``where`` names the section in error messages."""
    s = {**DEFAULTS, **settings}
    bilm = BiLMLayer(s["name"], s["options_path"], s["weights_path"], where=where, batch_size=s["batch_size"],
                     cache_mb=s["cache_mb"], cache_dtype=s["cache_dtype"], threads=s["threads"],
                     precision=s["precision"])
    model = DocLayers(bilm, s["window_tokens"], where=where)
    model.attrs[SETTINGS_ATTR] = ConfigOnly(s)
    return model


def settings_of(model: Model) -> Optional[Dict[str, Any]]:
    """The settings a model of :func:`build_bilm` was built from (a copy), or None for another
    model."""
    record = model.attrs.get(SETTINGS_ATTR)
    return dict(record.value) if record is not None else None


def section_of(settings: Dict[str, Any]) -> Dict[str, Any]:
    """The ``ElmoBiLM.v1`` config section of ``settings``."""
    return {"@architectures": ARCHITECTURE, **{key: settings.get(key, value) for key, value in DEFAULTS.items()}}


def check_bilm(model: Optional[Model], where: str) -> Model:
    """The biLM model of a component or Elmo.v1 section: ``model`` itself, the one its
    ElmoBiLM.v1 section built, or the default biLM when None. Raises ValueError for a ``model``
    that is not an ElmoBiLM.v1 model (e.g. a string, the name of a model)."""
    if model is None:
        return build_bilm(DEFAULTS, where)
    if not isinstance(model, Model) or settings_of(model) is None:
        raise ElmoConfigError(f"{where} expected a biLM model built by @architectures = \"{ARCHITECTURE}\", got "
                              f"{getattr(model, 'name', model)!r}", "model", None)
    return model
