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

from . import architectures, component  # noqa: F401  (registers the factory and the architectures)
from .component import ElmoComponent
from .data_classes import ElmoData
from .layers.listener import ElmoListener
from .layers.scalar_mix import ScalarMix
from .mixes import Mix, format_mixes, learned_mixes
from .vector_hooks import restore_vector_hooks, set_vector_hooks, with_vector_hooks

# The public API. The registered functions (``make_elmo``, ``elmo_v1``, ``elmo_bilm_v1``, ...)
# stay in :mod:`.component` and :mod:`.architectures`: configs reach them by their registered names.
__all__ = ["ElmoComponent", "ElmoData", "ElmoListener", "Mix", "ScalarMix", "format_mixes", "learned_mixes",
           "restore_vector_hooks", "set_vector_hooks", "with_vector_hooks"]
