"""``doc._.elmo``, ``span._.elmo`` and ``token._.elmo``.

- ``doc._.elmo``: :class:`~.data_classes.ElmoData` or None (not computed, or ``store="none"``).
  Stored in ``doc.user_data``, so it survives ``doc.to_bytes()`` / ``DocBin(store_user_data=True)``.
- ``token._.elmo``: array (K, dim) = ``doc._.elmo.layers[:, token.i]`` or None.
- ``span._.elmo``: array (K, len(span), dim) = ``doc._.elmo.layers[:, span.start:span.end]`` or None.

K = num_layers + 1 for ``store="all"``, 1 for ``"mix"`` / ``"top"``. The token and span values
are views into the Doc's array (no copy).
"""
from spacy.tokens import Doc, Span, Token

from .data_classes import as_elmo_data

ATTR = "elmo"
_KEY = ("._.", ATTR, None, None)  # the key spaCy itself would use for a default-valued extension


def _get_doc(doc):
    value = doc.user_data.get(_KEY)
    data = as_elmo_data(value)
    if data is not value:
        doc.user_data[_KEY] = data
    return data


def _set_doc(doc, value):
    doc.user_data[_KEY] = as_elmo_data(value)


def _get_token(token):
    data = _get_doc(token.doc)
    return None if data is None else data.layers[:, token.i]


def _get_span(span):
    data = _get_doc(span.doc)
    return None if data is None else data.layers[:, span.start: span.end]


def install_extensions() -> None:
    """Register the three extensions (idempotent; ``force=True`` is not used, so a user's own
    ``elmo`` extension is kept)."""
    if not Doc.has_extension(ATTR):
        Doc.set_extension(ATTR, getter=_get_doc, setter=_set_doc)
    if not Token.has_extension(ATTR):
        Token.set_extension(ATTR, getter=_get_token)
    if not Span.has_extension(ATTR):
        Span.set_extension(ATTR, getter=_get_span)
