"""The biLM's settings in a config: the ``spacy_elmo.ElmoBiLM.v1`` section, and the old flat keys.

The ``elmo`` component and the ``spacy_elmo.Elmo.v1`` tok2vec take their biLM as a Thinc model
built by a registered architecture (the spacy-transformers pattern), in its own section::

    [components.elmo]
    factory = "elmo"
    store = "all"

    [components.elmo.model]
    @architectures = "spacy_elmo.ElmoBiLM.v1"
    name = "en_elmo_small"
    window_tokens = 128

(for ``Elmo.v1``: ``[components.tagger.model.tok2vec.bilm]``). Configs written before it put the
same settings flat in ``[components.elmo]`` (``model = "en_elmo_small"``, a string, and
``max_tokens`` for the window) or in the ``Elmo.v1`` section. They still build the same model,
with one :class:`~.cache.ElmoDeprecationWarning` that shows the section to write instead
(:func:`resolve_bilm`). Old key -> new key: ``model`` -> ``name``, ``max_tokens`` ->
``window_tokens``; ``options_path``, ``weights_path``, ``batch_size``, ``cache_mb``,
``cache_dtype``, ``threads`` and ``precision`` keep their names; the deprecated ``cache_size``
stays a flat key (the new section has no place for it).

The model built here records its settings (:func:`settings_of`, never serialized), so old keys
given on top of a section (e.g. ``spacy.load(path, config={"components": {"elmo":
{"precision": ...}}})`` on a pipeline saved in the new shape) apply to that section's settings,
and ``nlp.replace_listeners`` can write the section into the listener's place.
"""
import json
import warnings
from typing import Any, Dict, Optional

from thinc.api import Model

from ..package_data import DEFAULT_MODEL
from .cache import ElmoDeprecationWarning, cache_size_deprecation
from .layers.bilm_layer import BiLMLayer, ConfigOnly
from .layers.doc_layers import DocLayers

ARCHITECTURE = "spacy_elmo.ElmoBiLM.v1"
WHERE = f"[{ARCHITECTURE}]"
# The ElmoBiLM.v1 keys and their defaults (the factory's DEFAULT_CONFIG and Elmo.v1 use these).
DEFAULTS: Dict[str, Any] = {"name": DEFAULT_MODEL, "options_path": None, "weights_path": None, "window_tokens": 128,
                            "batch_size": 64, "cache_mb": 1024, "cache_dtype": "float32", "threads": "auto",
                            "precision": "float32"}
RENAMED = {"model": "name", "max_tokens": "window_tokens"}  # old flat key -> ElmoBiLM.v1 key
OLD_KEYS = ("model", "options_path", "weights_path", "max_tokens", "batch_size", "cache_mb", "cache_dtype",
            "cache_size", "threads", "precision")
SETTINGS_ATTR = "elmo_bilm_settings"


def build_bilm(settings: Dict[str, Any], where: str = WHERE, old_names: bool = False) -> Model:
    """Model[List[Doc], List[Floats3d]]: the Docs -> layer stacks model (:func:`.DocLayers` around
    :func:`.BiLMLayer`) from ElmoBiLM.v1 ``settings`` (missing keys take :data:`DEFAULTS`; a
    ``cache_size`` key, the deprecated token capacity, is passed on). ``where`` and
    ``old_names`` (the old key names ``model`` / ``max_tokens``) are for error messages."""
    s = {**DEFAULTS, **settings}
    bilm = BiLMLayer(s["name"], s["options_path"], s["weights_path"], where=where,
                     name_key="model" if old_names else "name", batch_size=s["batch_size"], cache_mb=s["cache_mb"],
                     cache_dtype=s["cache_dtype"], cache_size=s.get("cache_size"), threads=s["threads"],
                     precision=s["precision"])
    model = DocLayers(bilm, s["window_tokens"], where=where, key="max_tokens" if old_names else "window_tokens")
    model.attrs[SETTINGS_ATTR] = ConfigOnly(s)
    return model


def settings_of(model: Model) -> Optional[Dict[str, Any]]:
    """The settings a model of :func:`build_bilm` was built from (a copy), or None for another
    model."""
    record = model.attrs.get(SETTINGS_ATTR)
    return dict(record.value) if record is not None else None


def section_of(settings: Dict[str, Any]) -> Dict[str, Any]:
    """The ``ElmoBiLM.v1`` config section of ``settings`` (without ``cache_size``)."""
    return {"@architectures": ARCHITECTURE, **{key: settings.get(key, value) for key, value in DEFAULTS.items()}}


def resolve_bilm(model: Optional[Model], old: Dict[str, Any], where: str, section: str) -> Model:
    """The biLM model of a component or Elmo.v1 section.

    ``model``: the one its ElmoBiLM.v1 section built (None when there is none); ``old``: the old
    flat keys that are set (their values). Without old keys, ``model`` itself (or the default
    biLM when None). With them, a model built from ``model``'s settings (or :data:`DEFAULTS`)
    with the old keys applied, and one ElmoDeprecationWarning naming the keys and showing the
    ``section`` (e.g. "[components.elmo.model]") to write instead. Raises ValueError for a
    ``model`` that is not an ElmoBiLM.v1 model."""
    if model is not None:
        base = settings_of(model) if isinstance(model, Model) else None
        if base is None:
            raise ValueError(f"{where} expected a biLM model built by @architectures = \"{ARCHITECTURE}\", got "
                             f"{getattr(model, 'name', type(model).__name__)!r}")
        if not old:
            return model
    elif not old:
        return build_bilm(DEFAULTS, where)
    settings = dict(base) if model is not None else dict(DEFAULTS)
    settings.pop("cache_size", None)
    for key, value in old.items():
        settings[RENAMED.get(key, key)] = value
    message = (f"{where} {', '.join(k for k in OLD_KEYS if k in old)}: biLM settings as flat keys are "
               f"deprecated. Put them in a {section} section built by @architectures = \"{ARCHITECTURE}\" "
               f"(model -> name, max_tokens -> window_tokens; the other keys keep their names). This "
               f"config is read as {section} = {json.dumps(section_of(settings))}")
    if "cache_size" in old:
        message += f"; and: {cache_size_deprecation(old['cache_size'], where)}"
    warnings.warn(message, ElmoDeprecationWarning, stacklevel=3)
    return build_bilm(settings, where, old_names=True)


def old_keys(**values) -> Dict[str, Any]:
    """The old flat keys of a call that are set (not None)."""
    return {key: value for key, value in values.items() if value is not None}
