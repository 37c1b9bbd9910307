"""Keep ``doc._.elmo`` aligned with the Doc's tokens when components after ``elmo`` retokenize.

The vectors are computed for the tokens the Doc has when the ``elmo`` component runs; later
components may merge or split tokens (``merge_entities``, ``merge_noun_chunks``,
``doc.retokenize()``). So :class:`~.data_classes.ElmoData` remembers the character offsets
``(token.idx, token.idx + len(token))`` of the tokens its rows belong to, and a checksum of the
text, and the getters (:mod:`.extensions`) map the rows onto the current tokens when those differ:

- a token with the same offsets keeps its row;
- a token that exactly covers several old tokens (a merge) gets the mean of their rows, per
  layer; whitespace parts (zero rows: they have no vector) are left out of the mean;
- each token inside one old token (a split) gets that old token's row;
- a whitespace token that covers no old token gets zeros.

Anything else raises :class:`ElmoDataError` (a ValueError): a token that crosses the
boundary of an old token, a text other than the one the vectors were computed for, or a value
without offsets (stored by an older spacy-elmo, or built by hand) whose row count differs from
the Doc's token count; such a value is taken to belong to the tokens the Doc has when first read.
Realignment happens once per change: the realigned value replaces the stored one.
"""
import zlib
from dataclasses import replace

import numpy
from spacy.attrs import IDX, LENGTH
from thinc.api import get_array_module

from ..errors import ElmoDataError
from .data_classes import ElmoData


def token_offsets(doc_or_span) -> numpy.ndarray:
    """int64 (n_tokens, 2): each token's (start, end) character offsets in the Doc's text."""
    arr = doc_or_span.to_array([IDX, LENGTH]).astype("int64").reshape(-1, 2)
    arr[:, 1] += arr[:, 0]
    return arr


def text_hash(text: str) -> int:
    """zlib.crc32 of the UTF-8 text (stored as ``ElmoData.text_hash``)."""
    return zlib.crc32(text.encode("utf-8"))


def bind(data: ElmoData, doc, *, check_text: bool = False) -> ElmoData:
    """``data`` with the Doc's token offsets and text checksum filled in where missing (a fresh
    value, or one stored without them), else ``data`` itself. ``check_text``: also raise if
    ``data`` was computed for another text (the ``doc._.elmo`` setter). Raises
    ElmoDataError if the offsets are missing and the row count is not the Doc's token count,
    or if the offsets and the rows disagree in number."""
    if data.offsets is None:
        if len(data) != len(doc):
            raise ElmoDataError(
                f"doc._.elmo has {len(data)} rows for a Doc of {len(doc)} tokens and no token offsets "
                f"to realign them by")
        data = replace(data, offsets=token_offsets(doc))
    elif len(data.offsets) != len(data):
        raise ElmoDataError(f"doc._.elmo has {len(data)} rows but offsets for {len(data.offsets)} tokens")
    if data.text_hash is None:
        data = replace(data, text_hash=text_hash(doc.text))
    elif check_text and data.text_hash != text_hash(doc.text):
        raise _text_error()
    return data


def rows_match(data: ElmoData, start: int, offsets: numpy.ndarray) -> bool:
    """Whether rows ``start:start + len(offsets)`` of ``data`` belong to tokens with these offsets."""
    stored = data.offsets[start: start + len(offsets)]
    return stored.shape == offsets.shape and bool((stored == offsets).all())


def aligned(data: ElmoData, doc) -> ElmoData:
    """``data`` (bound, see :func:`bind`) if its offsets are the Doc's, else a realigned copy
    (module rules). Raises ElmoDataError where realignment is impossible."""
    new = token_offsets(doc)
    if rows_match(data, 0, new):
        return data
    return _realign(data, doc.text, new)


def _text_error() -> ElmoDataError:
    return ElmoDataError("doc._.elmo was computed for a different text than this Doc's (set from another "
                         "Doc?): cannot realign its vectors to the tokens")


def _realign(data: ElmoData, text: str, new: numpy.ndarray) -> ElmoData:
    old = data.offsets
    if (data.text_hash is not None and data.text_hash != text_hash(text)) or (len(old) and old[-1, 1] > len(text)):
        raise _text_error()
    old_s, old_e, s, e = old[:, 0], old[:, 1], new[:, 0], new[:, 1]
    n_old = len(old)
    lo = numpy.searchsorted(old_e, s, side="right")  # first old token ending after s
    hi = numpy.searchsorted(old_s, e, side="left")   # first old token starting at or after e
    count = hi - lo                                  # old tokens overlapping [s, e)
    first = numpy.clip(lo, 0, max(n_old - 1, 0))
    last = numpy.clip(hi - 1, 0, max(n_old - 1, 0))
    if n_old:
        contained = (count >= 1) & (old_s[first] >= s) & (old_e[last] <= e)      # merge (or same)
        inside = (count == 1) & (old_s[first] <= s) & (old_e[first] >= e)        # split (or same)
    else:
        contained = inside = numpy.zeros(len(new), dtype=bool)
    single = inside | (contained & (count == 1))
    merged = contained & (count > 1)
    blank = count <= 0
    for j in numpy.flatnonzero(blank):  # a whitespace token between old tokens: zeros
        blank[j] = not text[s[j]:e[j]].strip()
    bad = ~(single | merged | blank)
    if bad.any():
        j = int(numpy.flatnonzero(bad)[0])
        parts = ", ".join(f"{text[a:b]!r}" for a, b in old[lo[j]:max(hi[j], lo[j])]) or "none"
        raise ElmoDataError(
            f"doc._.elmo cannot be realigned to the Doc's tokens: token {j} {text[s[j]:e[j]]!r} (chars "
            f"{s[j]}-{e[j]}) crosses the boundaries of the tokens the vectors were computed for "
            f"(overlapping: {parts})")
    layers = data.layers
    xp = get_array_module(layers)
    out = xp.zeros((layers.shape[0], len(new), layers.shape[2]), dtype=layers.dtype)
    idx = numpy.flatnonzero(single)
    if len(idx):
        out[:, xp.asarray(idx)] = layers[:, xp.asarray(first[idx])]
    for j in numpy.flatnonzero(merged):
        parts = [i for i in range(lo[j], hi[j]) if not text[old_s[i]:old_e[i]].isspace()]
        if parts:
            out[:, j] = layers[:, xp.asarray(parts)].astype("float32").mean(axis=1).astype(layers.dtype)
    return replace(data, layers=out, offsets=new)
