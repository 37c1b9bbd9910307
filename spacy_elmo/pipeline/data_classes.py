"""What the ``elmo`` component stores on a Doc: :class:`ElmoData` (``doc._.elmo``).

It serializes with ``doc.to_bytes()`` / ``DocBin`` through a registered srsly msgpack
encoder: arrays are written as little-endian numpy (cupy arrays are copied to the host), and
read back as numpy. A process that has not imported ``spacy_elmo.pipeline`` reads the value
back as a plain dict; the ``doc._.elmo`` getter turns such a dict into :class:`ElmoData`.
Values stored before ``offsets`` / ``text_hash`` existed read back with both None (see
:mod:`.alignment` for how they are then matched to the tokens).
"""
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

import srsly
from thinc.api import get_array_module
from thinc.util import to_numpy

from ..errors import ElmoConfigError, ElmoTypeError

_MARK = "__spacy_elmo_data__"


@dataclass
class ElmoData:
    """ELMo vectors of one Doc.

    layers: array (K, n_tokens, dim), float32 or float16, numpy on CPU (cupy when computed on
        GPU; numpy after deserialization). ``K = num_layers + 1`` for ``store="all"`` (layer 0 =
        char-CNN token layer, layer j = biLSTM layer j, each ``[forward; backward]``); ``K = 1``
        for a single-vector store (``"average"``, ``"top"``, ``"layer_k"``, ``"mix:..."``; see
        :mod:`spacy_elmo.layer_spec`).
    store: which of those (the layer spec's name).
    offsets: int64 numpy (n_tokens, 2), the (start, end) character offsets of the tokens the rows
        belong to, or None (filled in from the Doc when the value is set or first read). When the
        Doc's tokens change (merged or split after ``elmo`` ran), the ``doc._.elmo`` /
        ``span._.elmo`` / ``token._.elmo`` getters realign the rows: see :mod:`.alignment`.
    text_hash: ``zlib.crc32`` of the Doc's UTF-8 text, or None (filled in like ``offsets``).
    """

    layers: Any
    store: str = "all"
    offsets: Any = None
    text_hash: Optional[int] = None

    def __len__(self) -> int:
        return int(self.layers.shape[1])

    @property
    def width(self) -> int:
        """dim (= 2 * projection_dim of the biLM)."""
        return int(self.layers.shape[2])

    def mix(self, weights: Optional[Sequence[float]] = None, gamma: float = 1.0):
        """ELMo_k = gamma * sum_j s_j h_kj (Peters et al. 2018, eq. 1) with ``s = softmax(weights)``
        (``weights=None``: uniform). Returns float32 (n_tokens, dim) on the array's device.
        Raises ValueError if ``store != "all"`` and weights are given, or if the number of
        weights differs from the number of stored layers."""
        xp = get_array_module(self.layers)
        K = self.layers.shape[0]
        if weights is None:
            s = xp.full((K,), 1.0 / K, dtype="float32")
        else:
            w = xp.asarray(weights, dtype="float32")
            if w.shape != (K,):
                raise ElmoConfigError(f"mix() needs {K} weights (one per stored layer), got {w.shape[0]}")
            s = xp.exp(w - w.max())
            s /= s.sum()
        return gamma * xp.tensordot(s, self.layers.astype("float32"), axes=1)

    def to_dict(self) -> Dict[str, Any]:
        return {"layers": to_numpy(self.layers), "store": self.store, "offsets": self.offsets,
                "text_hash": self.text_hash}

    @classmethod
    def from_dict(cls, msg: Dict[str, Any]) -> "ElmoData":
        return cls(layers=msg["layers"], store=msg.get("store", "all"), offsets=msg.get("offsets"),
                   text_hash=msg.get("text_hash"))


@srsly.msgpack_encoders("spacy_elmo_data")
def _encode(obj, chain=None):
    if isinstance(obj, ElmoData):
        return {_MARK: obj.to_dict()}
    return obj if chain is None else chain(obj)


@srsly.msgpack_decoders("spacy_elmo_data")
def _decode(obj, chain=None):
    if isinstance(obj, dict) and _MARK in obj:
        return ElmoData.from_dict(obj[_MARK])
    return obj if chain is None else chain(obj)


def as_elmo_data(value) -> Optional[ElmoData]:
    """Accept an ElmoData, an encoded dict (read without the decoder) or None."""
    if value is None or isinstance(value, ElmoData):
        return value
    if isinstance(value, dict):
        msg = value.get(_MARK, value)
        if "layers" in msg:
            return ElmoData.from_dict(msg)
    raise ElmoTypeError(f"doc._.elmo must be ElmoData or None, got {type(value).__name__}")
