"""The spaCy side of spacy-elmo: the ``elmo`` component, ``doc._.elmo``, the listener and the
architectures. spaCy finds the factory and the architectures through the package's entry points;
importing this module also registers them (and the msgpack codec of :class:`ElmoData`).

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")          # config: store, dtype, vectors; model: the biLM, an
                                  # ElmoBiLM.v1 section (name, window_tokens, ...; see make_elmo)
    doc = nlp("The river bank overflowed.")
    doc._.elmo.layers             # (num_layers + 1, len(doc), dim) float32
    doc[2]._.elmo                 # (num_layers + 1, dim);  doc[1:3]._.elmo: (num_layers + 1, 2, dim)

Downstream components use ``spacy_elmo.ElmoListener.v1`` as their ``tok2vec`` (or inside
``spacy_elmo.ElmoConcat.v1`` as the ``embed`` of ``spacy.Tok2Vec.v2``); each learns its own
:class:`ScalarMix` of the layers. :func:`learned_mixes` reads those mixes back.
"""
# spaCy first: its first import runs spacy_elmo's import hook, which imports .extensions (and so
# .alignment); importing spaCy from inside .alignment instead would find it half-initialised.
import spacy  # noqa: F401,E402  isort: skip

from .alignment import ElmoAlignmentError
from .architectures import DEFAULT_MODEL, elmo_bilm_v1, elmo_concat_v1, elmo_listener_v1, elmo_v1, scalar_mix_v1
from .component import ElmoComponent, make_elmo
from .data_classes import ElmoData
from .extensions import install_extensions
from .layers.listener import ElmoListener
from .layers.scalar_mix import ScalarMix
from .loading import ElmoConfigError
from .mixes import Mix, format_mixes, learned_mixes
from .vector_hooks import restore_vector_hooks, set_vector_hooks, with_vector_hooks

__all__ = ["DEFAULT_MODEL", "ElmoAlignmentError", "ElmoComponent", "ElmoConfigError", "ElmoData",
           "ElmoListener",
           "ScalarMix", "elmo_bilm_v1", "elmo_concat_v1", "elmo_listener_v1", "elmo_v1", "Mix", "format_mixes",
           "install_extensions",
           "learned_mixes", "make_elmo", "restore_vector_hooks", "scalar_mix_v1", "set_vector_hooks",
           "with_vector_hooks"]
