"""The spaCy side of spacy-elmo: the ``elmo`` component, ``doc._.elmo``, the listener and the
architectures. Importing this module registers the factory, the architectures and the msgpack
codec of :class:`ElmoData` (spaCy also finds them through the package's entry points)."""
from .architectures import DEFAULT_MODEL, elmo_concat_v1, elmo_listener_v1, elmo_v1, scalar_mix_v1
from .component import ElmoComponent, make_elmo
from .data_classes import ElmoData
from .extensions import install_extensions
from .layers.listener import ElmoListener
from .layers.scalar_mix import ScalarMix
from .loading import ElmoConfigError
from .mixes import Mix, format_mixes, learned_mixes

__all__ = ["DEFAULT_MODEL", "ElmoComponent", "ElmoConfigError", "ElmoData", "ElmoListener", "ScalarMix",
           "elmo_concat_v1", "elmo_listener_v1", "elmo_v1", "Mix", "format_mixes", "install_extensions", "learned_mixes",
           "make_elmo", "scalar_mix_v1"]
