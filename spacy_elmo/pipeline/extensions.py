"""``doc._.elmo``, ``span._.elmo`` and ``token._.elmo``.

- ``doc._.elmo``: :class:`~.data_classes.ElmoData` or None (not computed, or ``store="none"``).
  Stored in ``doc.user_data``, so it survives ``doc.to_bytes()`` / ``DocBin(store_user_data=True)``.
- ``token._.elmo``: array (K, dim) = ``doc._.elmo.layers[:, token.i]`` or None.
- ``span._.elmo``: array (K, len(span), dim) = ``doc._.elmo.layers[:, span.start:span.end]`` or None.

K = num_layers + 1 for ``store="all"``, 1 for a single-vector store (``"average"``, ``"top"``,
...). The token and span values are views into the Doc's array (no copy).

The rows always belong to the Doc's current tokens: if tokens were merged or split after the
``elmo`` component ran, the getters realign the stored rows first (a merged token gets the mean
of its parts, each piece of a split token the vector of the token it came from) and keep the
result; where that is impossible they raise :class:`~.alignment.ElmoDataError`. See
:mod:`.alignment`. The setter records the Doc's token offsets with the value.
"""
import numpy
from spacy.tokens import Doc, Span, Token

from .alignment import aligned, bind, rows_match, token_offsets
from .data_classes import as_elmo_data

ATTR = "elmo"
_KEY = ("._.", ATTR, None, None)  # the key spaCy itself would use for a default-valued extension


def _stored(doc):
    """The stored value as ElmoData (bound to its token offsets), not yet checked against the tokens."""
    value = doc.user_data.get(_KEY)
    data = as_elmo_data(value)
    if data is not None:
        data = bind(data, doc)
    if data is not value:
        doc.user_data[_KEY] = data
    return data


def _get_doc(doc):
    data = _stored(doc)
    if data is not None:
        realigned = aligned(data, doc)
        if realigned is not data:
            doc.user_data[_KEY] = data = realigned
    return data


def _set_doc(doc, value):
    data = as_elmo_data(value)
    doc.user_data[_KEY] = None if data is None else bind(data, doc, check_text=True)


def _get_token(token):
    data = _stored(token.doc)
    if data is None:
        return None
    if not rows_match(data, token.i, numpy.array([[token.idx, token.idx + len(token)]])):
        data = _get_doc(token.doc)
    return data.layers[:, token.i]


def _get_span(span):
    data = _stored(span.doc)
    if data is None:
        return None
    if not rows_match(data, span.start, token_offsets(span)):
        data = _get_doc(span.doc)
    return data.layers[:, span.start: span.end]


def install_extensions() -> None:
    """Register the three extensions (idempotent; ``force=True`` is not used, so a user's own
    ``elmo`` extension is kept)."""
    if not Doc.has_extension(ATTR):
        Doc.set_extension(ATTR, getter=_get_doc, setter=_set_doc)
    if not Token.has_extension(ATTR):
        Token.set_extension(ATTR, getter=_get_token)
    if not Span.has_extension(ATTR):
        Span.set_extension(ATTR, getter=_get_span)
