"""How big a model is, computed from its options before anything is built, read or allocated.

- :func:`n_params`: the parameters (float32 values) of the datasets :func:`.weights.layout`
  lists, by arithmetic on the options alone: ``"n_layers": 1000000000`` costs nothing to count.
- :func:`check_size`: that count, plus the values of the other datasets read with the model
  (the vocabularies of a format_version 2 model, the LM head of a pretraining output), against
  the limit (:func:`max_params`: :data:`MAX_PARAMS`, or $SPACY_ELMO_MAX_PARAMS), and their
  bytes against the physical memory, so that a model that cannot fit is refused in
  one line even when the limit has been raised.
- :func:`out_of_memory`: around the loading of a model (:meth:`.model.BiLM.from_files`, the
  pretraining output's reader), turns a ``MemoryError`` into a one-line error.

Both errors name the file; an :class:`~spacy_elmo.errors.ElmoMemoryError` is also a MemoryError.
"""
import contextlib
import os
from typing import Iterator, Optional

from ..errors import ElmoConfigError, ElmoMemoryError, ElmoModelFileError

# The original ELMo (and the 5.5B one, same shapes) has 93,600,848 biLM parameters; 4x that.
MAX_PARAMS = 4 * 93_600_848
MAX_PARAMS_ENV = "SPACY_ELMO_MAX_PARAMS"
BYTES_PER_VALUE = 4  # float32


def n_params(options: dict) -> int:
    """Parameters (float32 values) of the datasets of :func:`.weights.layout` for checked
    ``options`` (see :mod:`.options`), computed without listing them."""
    c, lstm = options["char_cnn"], options["lstm"]
    d, filters = c["embedding"]["dim"], c["filters"]
    F = sum(n for _, n in filters)
    P, C, L = lstm["projection_dim"], lstm["dim"], lstm["n_layers"]
    vocab = options.get("vocab") or {}
    word_dim = vocab.get("word_dim", 0)
    words = vocab.get("n_words", 0) * word_dim if word_dim else 0
    cnn = (c["n_characters"] - 1) * d + sum(w * d * n + n for w, n in filters)
    highways = c["n_highway"] * 2 * (F * F + F)
    projection = (word_dim + F) * P + P
    lstms = 2 * L * (2 * P * 4 * C + 4 * C + C * P)
    return cnn + highways + words + projection + lstms


def max_params(value: Optional[int] = None) -> int:
    """The size limit: ``value``, else $SPACY_ELMO_MAX_PARAMS, else :data:`MAX_PARAMS`. Raises
    ValueError (one line) for an environment value that is not a positive integer."""
    if value is not None:
        return int(value)
    env = os.environ.get(MAX_PARAMS_ENV)
    if env is None or not env.strip():
        return MAX_PARAMS
    try:
        limit = int(env.replace("_", "").replace(",", ""))
    except ValueError:
        limit = 0
    if limit <= 0:
        raise ElmoConfigError(f"${MAX_PARAMS_ENV} = {env!r}: expected a positive integer (parameters)")
    return limit


def physical_memory() -> Optional[int]:
    """The physical memory in bytes, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _gb(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:,.1f} GB"


def check_size(options: dict, path: str, limit: Optional[int] = None, extra: int = 0,
               extra_what: str = "values of other datasets") -> int:
    """The parameter count of ``options`` plus ``extra`` (values of the other datasets read with
    the model, named ``extra_what``). Raises ElmoModelFileError in one line naming the sizes
    (lstm.dim, projection_dim, n_layers, filters) when it is above :func:`max_params` (raise the
    limit with $SPACY_ELMO_MAX_PARAMS or ``limit=`` for a model that really is that big), and
    ElmoMemoryError when its float32 bytes are more than :func:`physical_memory`."""
    params = n_params(options)
    count, limit = params + extra, max_params(limit)
    more = f" and {extra:,} {extra_what}" if extra else ""
    if count > limit:
        lstm, cnn = options["lstm"], options["char_cnn"]
        word = (options.get("vocab") or {}).get("word_dim", 0)
        raise ElmoModelFileError(
            f"{path}: the options imply {params:,} parameters{more} ({_gb(BYTES_PER_VALUE * count)} of float32: "
            f"lstm.dim {lstm['dim']:,}, projection_dim {lstm['projection_dim']:,}, n_layers {lstm['n_layers']:,}, "
            f"{sum(n for _, n in cnn['filters']):,} filters{f', word_dim {word:,}' if word else ''}), above the "
            f"limit of {limit:,}; set ${MAX_PARAMS_ENV} to load a model that big", path=path, dataset="lstm.dim")
    memory = physical_memory()
    if memory and BYTES_PER_VALUE * count > memory:
        raise ElmoMemoryError(
            f"{path}: the options imply {params:,} parameters{more} ({_gb(BYTES_PER_VALUE * count)} of float32), "
            f"more than the {_gb(memory)} of physical memory (the limit ${MAX_PARAMS_ENV} is {limit:,}); "
            "refusing to load it", path=path, dataset="lstm.dim")
    return count


@contextlib.contextmanager
def out_of_memory(path: str, options: dict, limit: Optional[int] = None) -> Iterator[None]:
    """Inside, a ``MemoryError`` (numpy's ``Unable to allocate`` included) becomes an
    ElmoMemoryError (a MemoryError and a ValueError) in one line naming ``path``, the size of
    the model of ``options`` and the limit."""
    try:
        yield
    except ElmoMemoryError:
        raise
    except MemoryError:
        count = n_params(options)
        try:
            limit_text = f"{max_params(limit):,}"
        except ElmoConfigError:
            limit_text = repr(os.environ.get(MAX_PARAMS_ENV))
        raise ElmoMemoryError(f"{path}: out of memory while loading the model ({count:,} parameters, "
                              f"{_gb(BYTES_PER_VALUE * count)} of float32; the limit ${MAX_PARAMS_ENV} is "
                              f"{limit_text}): free memory or load a smaller model", path=path) from None
