"""Finite numbers in options and configs, in one place.

Python's JSON reader and confection (spaCy's config reader) accept ``NaN``, ``Infinity`` and
``1e999``; a clip, dropout rate, learning rate, mix weight or scale that is not finite makes a
model silently compute NaN. :func:`is_finite_number` is the test, :func:`non_finite` finds
such a number inside nested options (``options.json``, a pretraining config's lists); the
readers of options (:mod:`.options`), of the pipeline's configs (:mod:`spacy_elmo.pipeline`)
and of the pretraining config (:mod:`spacy_elmo.pretrain.config`) refuse them with these.
"""
import math
import numbers
from typing import Any, Optional, Tuple


def is_number(value: Any) -> bool:
    """An int or float (numpy scalars included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """An int or float (not a bool) that is neither NaN nor infinite."""
    return is_number(value) and math.isfinite(value)


def non_finite(value: Any) -> Optional[Tuple[str, Any]]:
    """(dotted key, number) of the first number in ``value`` (walking dicts, lists and tuples;
    list items by index: ``filters.0.1``) that is NaN or infinite; the key is "" if ``value``
    itself is one. None if there is none."""
    stack = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            children = item.items()
        elif isinstance(item, (list, tuple)):
            children = enumerate(item)
        else:
            if is_number(item) and not math.isfinite(item):
                return key, item
            continue
        stack.extend((f"{key}.{k}" if key else str(k), v) for k, v in reversed(list(children)))
    return None
