"""``nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])``: give a component its own copy
of the biLM (e.g. before sourcing it into another pipeline), as spaCy does for ``tok2vec`` and
spacy-transformers for ``transformer``.

spaCy replaces the listener node by a copy of the ``elmo`` component's model (same input and
output: Docs -> layer stacks, weights included) and the listener's config section by what
:func:`replace_listener_cfg` returns: a ``spacy_elmo.Elmo.v1`` config whose ``bilm`` is a copy
of the component's ``spacy_elmo.ElmoBiLM.v1`` section, with the listener's readout settings,
which builds the same model structure.
"""
import copy
from typing import Any, Dict, Optional

from thinc.api import Model

from ..errors import ElmoConfigError
from .bilm_config import ARCHITECTURE, section_of

LISTENER = "spacy_elmo.ElmoListener.v1"
READOUT_KEYS = ("grad_factor", "mix", "initial_weights", "trainable", "layer_norm", "dropout", "width")


def _find_listener(cfg: Any) -> Optional[Dict[str, Any]]:
    if isinstance(cfg, dict):
        if cfg.get("@architectures") == LISTENER:
            return cfg
        for value in cfg.values():
            found = _find_listener(value)
            if found is not None:
                return found
    return None


def replace_listener_cfg(settings: Dict[str, Any], tok2vec_model_cfg: Any, listener_cfg: Dict[str, Any]) -> Dict:
    """The ``Elmo.v1`` section that takes the listener's place. ``settings``: the ``elmo``
    component's biLM settings (:func:`.bilm_config.settings_of`); ``tok2vec_model_cfg``: its
    ElmoBiLM.v1 section, copied as it is (when it is not one, the section is written from
    ``settings``). ``listener_cfg``: the component's
    ``model.tok2vec`` section, searched for the (first) ElmoListener.v1 config. Raises ValueError
    if there is none."""
    listener = _find_listener(listener_cfg)
    if listener is None:
        raise ElmoConfigError(f"replace_listeners: no {LISTENER} section found in {dict(listener_cfg)}", "tok2vec",
                              None)
    own = isinstance(tok2vec_model_cfg, dict) and tok2vec_model_cfg.get("@architectures") == ARCHITECTURE
    new = {"@architectures": "spacy_elmo.Elmo.v1",
           "bilm": copy.deepcopy(dict(tok2vec_model_cfg)) if own else section_of(settings)}
    new.update({key: listener[key] for key in READOUT_KEYS if key in listener})
    return new


def replace_listener(copied: Model, listener: Model, upstream) -> Model:
    """The node that takes the listener's place: the copied Docs -> layers model, frozen or
    fine-tuned like the listener (its grad_factor)."""
    from .architectures import elmo_layers_part

    return elmo_layers_part(copied, listener.attrs["grad_factor"])
