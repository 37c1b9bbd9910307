"""Contextual vectors behind spaCy's own ``.vector`` / ``.similarity`` (opt-in).

With ``[components.elmo] vectors = "top"`` (or ``"average"``, ``"layer_k"``), the component
installs spaCy's user hooks on each Doc it annotates (``doc.user_hooks``,
``doc.user_span_hooks``, ``doc.user_token_hooks``), so that

    doc[2].vector          # the token's ELMo vector in that view, float32 (dim,)
    doc[2].similarity(other[5])    # cosine of two contextual vectors
    doc.vector, doc[1:4].vector    # mean of the tokens' vectors (whitespace tokens left out)

use the biLM's layers (``doc._.elmo``) instead of the vocabulary's static vectors. Views are
layer specs (:mod:`spacy_elmo.layer_spec`): "top" (the top biLSTM layer), "average" (the uniform
mean of all L + 1 layers), "layer_k" (layer k, 0 = char CNN), "mix:w0,...". Whitespace tokens
have no vector (``has_vector`` False, zero vector).

Hooks and serialization. Every hook is a module-level function (pickled by reference), and the
choice of view is stored in ``doc.user_data`` under :data:`SETTING_KEY`, not in the hooks:
- ``pickle`` keeps the hooks (spaCy pickles them with the Doc);
- ``doc.to_bytes()``, ``DocBin(store_user_data=True)`` and ``nlp.pipe(..., n_process=k)`` (which
  moves Docs between processes with ``to_bytes``) never carry hooks: spaCy drops them by design
  (its warning W109 says so). They do carry ``doc.user_data``, so one call puts the hooks back:
  ``restore_vector_hooks(doc)``, or ``with_vector_hooks(docs)`` over a stream.
spaCy's ``Span.vector_norm`` hook slot calls the ``vector`` hook (spaCy 3.7-3.8,
``span.pyx``), so no span ``vector_norm`` hook is installed: spaCy's own ``Span.vector_norm``
computes the norm from the (hooked) ``Span.vector``.

Only comparable vectors are compared. The setting also records the biLM that made the Doc
(its name and :func:`spacy_elmo.bilm.integrity.parameters_digest`), and ``similarity`` raises
:class:`ElmoDataError`, naming both models and views, when the other object's Doc
was made by another biLM (another digest) or holds another view; or when the other object
has no contextual vectors (a Lexeme, a Doc without the hooks), unless its vocabulary's table
was distilled from the same biLM and view (``static-vectors``, :mod:`spacy_elmo.static.writer`):
a contextual vector is then compared with its word's mean. The guard runs on the hooked side:
``plain_doc.similarity(elmo_doc)`` is spaCy's own method, which this module does not change.
A Doc whose setting records no model (written before the model was recorded) is checked by
its view only.
"""
import warnings
from functools import lru_cache, partial
from typing import Iterable, Iterator, Optional

import numpy
from spacy.attrs import IS_SPACE
from spacy.errors import Warnings
from thinc.api import get_array_module

from ..errors import ElmoConfigError, ElmoDataError
from ..layer_spec import parse

SETTING_KEY = ("spacy_elmo", "vectors", None, None)
_spec = lru_cache(maxsize=64)(partial(parse, where="vectors ="))


def check_view(view: Optional[str], store: str, where: str = "spacy_elmo") -> Optional[str]:
    """Validate a ``vectors`` setting against the component's ``store`` (both layer specs, see
    :mod:`spacy_elmo.layer_spec`): None (off); with store "all", any spec but "all" ("top",
    "average", "layer_k", "mix:..."); with a single-vector store, the same spec. Raises
    ValueError naming ``where``, the value and what is allowed."""
    if view is None:
        return None
    spec = parse(view, f"{where} vectors =")
    if store == "none" or spec.stacked or (store != "all" and spec.name != parse(store).name):
        allowed = {"all": "a layer spec other than 'all' (top, average, layer_k, mix:...)",
                   "none": "null"}.get(store, repr(store))
        raise ElmoConfigError(f"{where} vectors = {view!r} with store = {store!r}: must be null or "
                              f"{allowed} (the view must be among the stored layers)", "vectors", None)
    return spec.name


def select(layers, view: str):
    """float32 (..., dim) rows of one view from stored layers (K, ..., dim) (``ElmoData.layers``
    or a token's (K, dim)). K = 1 (a single-vector store) holds the one view :func:`check_view`
    allows. Raises ValueError for a layer index beyond the K stored layers."""
    if layers.shape[0] == 1:
        return layers[0].astype("float32", copy=False)
    return _spec(view).apply(layers)


def set_vector_hooks(doc, view: str, width: Optional[int] = None, model: Optional[dict] = None) -> None:
    """Record ``view`` (and the vector width, read from ``doc._.elmo`` unless given, and the biLM
    ``model``: {"name": str, "digest": str} or None) in ``doc.user_data`` and install the hooks.
    The vectors come from ``doc._.elmo`` (a Doc without it gets zero vectors and ``has_vector``
    False)."""
    if width is None:
        data = doc._.elmo
        width = None if data is None else int(data.width)
    doc.user_data[SETTING_KEY] = {"view": view, "width": width, "model": dict(model) if model else None}
    _install(doc)


def restore_vector_hooks(doc):
    """Put the hooks back on a Doc read with ``Doc.from_bytes``, ``DocBin.get_docs`` or received
    from ``nlp.pipe(n_process=k)``, if its user data records a view (else leave it as it is).
    Returns the Doc."""
    if _setting(doc) is not None:
        _install(doc)
    return doc


def with_vector_hooks(docs: Iterable) -> Iterator:
    """``restore_vector_hooks`` over a stream: ``for doc in with_vector_hooks(nlp.pipe(texts, n_process=2))``."""
    for doc in docs:
        yield restore_vector_hooks(doc)


def _install(doc) -> None:
    doc.user_hooks.update({"vector": doc_vector, "has_vector": doc_has_vector, "vector_norm": doc_vector_norm,
                           "similarity": similarity})
    doc.user_span_hooks.update({"vector": span_vector, "has_vector": span_has_vector, "similarity": similarity})
    doc.user_token_hooks.update({"vector": token_vector, "has_vector": token_has_vector,
                                 "vector_norm": token_vector_norm, "similarity": similarity})


def _setting(doc) -> Optional[dict]:
    setting = doc.user_data.get(SETTING_KEY)
    return setting if isinstance(setting, dict) and setting.get("view") else None


def _zeros(doc):
    width = (_setting(doc) or {}).get("width") or 0
    return numpy.zeros((width,), dtype="float32")


def _rows(doc, start: int, end: int):
    """(vectors (end - start, dim) float32, not-space mask bool (end - start,)) or (None, None)."""
    data = doc._.elmo
    if data is None:
        return None, None
    rows = select(data.layers[:, start:end], _setting(doc)["view"])
    xp = get_array_module(rows)
    mask = xp.asarray(doc[start:end].to_array([IS_SPACE]).reshape(-1) == 0) if end > start else xp.zeros(0, bool)
    return rows, mask


def _mean_vector(doc, start: int, end: int):
    rows, mask = _rows(doc, start, end)
    if rows is None or not bool(mask.any()):
        return _zeros(doc)
    return rows[mask].mean(axis=0)


# -- the hooks (module level: pickled by reference) ---------------------------------------------
def token_vector(token):
    """float32 (dim,): the token's vector in the recorded view; zeros for whitespace."""
    rows = token._.elmo
    if rows is None:
        return _zeros(token.doc)
    vector = select(rows, _setting(token.doc)["view"])
    return vector * 0 if token.is_space else vector


def token_has_vector(token) -> bool:
    return not token.is_space and token._.elmo is not None


def token_vector_norm(token) -> float:
    return _norm(token_vector(token))


def span_vector(span):
    """float32 (dim,): mean of the span's non-whitespace tokens' vectors (zeros if none)."""
    return _mean_vector(span.doc, span.start, span.end)


def span_has_vector(span) -> bool:
    return span.doc._.elmo is not None and any(not t.is_space for t in span)


def doc_vector(doc):
    """float32 (dim,): mean of the Doc's non-whitespace tokens' vectors (zeros if none)."""
    return _mean_vector(doc, 0, len(doc))


def doc_has_vector(doc) -> bool:
    return doc._.elmo is not None and any(not t.is_space for t in doc)


def doc_vector_norm(doc) -> float:
    return _norm(doc_vector(doc))


def similarity(obj, other) -> float:
    """Cosine of ``obj.vector`` and ``other.vector`` (Token, Span, Doc or Lexeme). 0.0, with
    spaCy's warning W008, when either has no vector (as spaCy does). Raises
    ElmoDataError (a ValueError) when the two are not comparable (see the module
    docstring) or their widths differ."""
    check_comparable(obj, other)
    a, b = obj.vector, other.vector
    if a.shape != b.shape:
        raise ElmoDataError(f"cannot compare a {a.shape[-1]}-dim contextual vector with a {b.shape[-1]}-dim "
                            f"vector of {type(other).__name__} {other.text!r}")
    na, nb = _norm(a), _norm(b)
    if na == 0 or nb == 0:
        warnings.warn(Warnings.W008.format(obj=type(obj).__name__))
        return 0.0
    return float((a * b).sum()) / (na * nb)


def _doc_of(obj):
    from spacy.tokens import Doc

    return obj if isinstance(obj, Doc) else getattr(obj, "doc", None)


def _describe(obj, setting: dict) -> str:
    model = setting.get("model") or {}
    made = f"model {model.get('name')!r} (digest {model.get('digest')})" if model else "an unrecorded model"
    return f"{type(obj).__name__} {_short(obj.text)!r} ({made}, view {setting['view']!r})"


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def check_comparable(obj, other) -> None:
    """Raise ElmoDataError unless ``other``'s vector is comparable with ``obj``'s
    contextual one (see the module docstring)."""
    mine = _setting(_doc_of(obj))
    doc = _doc_of(other)
    theirs = _setting(doc) if doc is not None else None
    if mine is None:
        return
    a, b = (mine.get("model") or {}).get("digest"), None
    if theirs is not None:
        b = (theirs.get("model") or {}).get("digest")
        if theirs["view"] == mine["view"] and (a is None or b is None or a == b):
            return
        raise ElmoDataError(f"cannot compare vectors of different biLMs or views: {_describe(obj, mine)} "
                            f"against {_describe(other, theirs)}")
    from .static_tables import parse_table_name

    name = getattr(getattr(getattr(other, "vocab", None), "vectors", None), "name", None)
    table = parse_table_name(name)
    if table is not None and table[1] == mine["view"] and (a is None or table[0] == a):
        return
    source = (f"a table distilled from the biLM of digest {table[0]}, view {table[1]!r}" if table else
              f"the vocabulary's table {name!r}" if name else "the vocabulary's vectors")
    theirs_text = f"{type(other).__name__} {_short(other.text)!r}"
    raise ElmoDataError(f"cannot compare a contextual vector with a static one: {_describe(obj, mine)} "
                        f"against {theirs_text}, whose vector comes from {source}, not from the same "
                        "biLM and view")


def _norm(v) -> float:
    return float((v * v).sum()) ** 0.5


def check_layer(view: str, n_layers: int, where: str = "spacy_elmo") -> None:
    """Raise ValueError naming ``where`` if the view does not fit a biLM of ``n_layers``
    stacked layers (layer_k with k >= n_layers, a mix with another weight count)."""
    parse(view, f"{where} vectors =").validate(n_layers, f"{where} vectors =")
