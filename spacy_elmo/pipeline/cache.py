"""The layer cache: biLM layers per sentence, kept while the biLM is frozen.

Why: with the biLM frozen (``grad_factor = 0``, the default), its output for a sentence never
changes, yet spaCy's training loop shows it the same training sentences every epoch and the same
dev sentences at every evaluation (every ``eval_frequency`` steps: ten dev passes in a
2,000-step run). So each sentence goes through the biLM once per training run.

- Keyed by the sentence's token strings (a tuple), so the same sentence in another Doc hits.
- Filled by frozen training (``is_train`` and not fine-tuning: ``ElmoComponent.update``, or a
  tagger's ``Elmo.v1`` tok2vec), and before it: ``ElmoComponent.initialize`` (so ``spacy
  train``) runs the biLM over the training set in large length-sorted calls until the cache is
  full (``ElmoComponent.warm_cache``), so the first epoch reads the cache too.
  From the first such call on it is *serving* (:attr:`serving`):
  prediction (``nlp.pipe``, ``nlp.evaluate`` in ``spacy train``) reads and fills it too. A model
  that has not been trained in this process (``spacy.load``, ``spacy evaluate``, a new
  pipeline) never caches: prediction runs the biLM and stores nothing.
- Fine-tuning (``grad_factor > 0``) clears it and stops it serving; so does loading weights
  (``from_bytes`` / ``from_disk``). A frozen component that only annotates
  (``[training] frozen_components`` + ``annotating_components``) never trains, so never caches.
- ``dtype``: ``"float32"`` (default): exact, the very floats the biLM computed, so a pipeline
  trained in this process predicts exactly what it will after ``to_disk`` / ``spacy.load``.
  ``"float16"`` stores half the bytes; then every layer the frozen training, its evaluations
  and any later prediction in this process see is rounded to float16 (2^-11 relative), served
  from the cache or just computed, so nothing depends on what fitted; a loaded copy of the
  pipeline predicts float32 again.
- Bounded by ``capacity_mb`` megabytes (2^20 bytes): the arrays exactly, plus an estimate of
  the keys and bookkeeping (``sys.getsizeof`` of the tuple and strings, 1 KB per entry).
  It admits sentences until full, then admits no more (no eviction): spaCy reshuffles the
  training set every epoch, and through an LRU of C < N entries a reshuffled pass over N
  sentences hits ~C^2 / 2N^2 of the time (3% at C = N / 4), while keeping the first C hits C / N.
- Memory per token, 2-layer biLM with dim 512 (``en_elmo_small``): 3 x 512 x 4 = 6,144 bytes in
  float32 (3,072 in float16), plus ~60-70 bytes of key and 1 KB / n_tokens of bookkeeping. The
  component's default 2,048 MB hold ~330,000 tokens in float32: UD English-EWT train + dev
  (229k tokens) or CoNLL-2003 train + dev (255k); float16 doubles that. An original-size biLM
  (dim 1024) takes 2x as much per token.
- Never serialized: a copy or an unpickled model starts empty, with the same capacity.

"""
import sys
from typing import Hashable, Optional

from ..bilm.finite import is_finite_number
from ..errors import ElmoConfigError

DTYPES = ("float16", "float32")
# Bytes per entry besides the array data and the key: dict slot, array object, allocator (600-1,000
# measured with tracemalloc).
ENTRY_OVERHEAD = 1024
MB = 1 << 20


def _key_bytes(key) -> int:
    return sys.getsizeof(key) + sum(sys.getsizeof(t) for t in key)


class LayersCache:
    """Map ``tuple of token strings -> array (nL, n_tokens, dim)``, as described above.
    ``capacity_mb = 0`` disables it (the component's default capacity and dtype are
    :class:`~.bilm_config.BiLMSettings`'s ``cache_mb`` and ``cache_dtype``).
    Raises ValueError naming the config key for a capacity that is not a finite number >= 0 or
    an unknown dtype."""

    def __init__(self, capacity_mb: float, dtype: str):
        if not is_finite_number(capacity_mb) or capacity_mb < 0:
            raise ElmoConfigError(f"cache_mb must be a finite number >= 0 (MB), got {capacity_mb!r}", "cache_mb", None)
        if dtype not in DTYPES:
            raise ElmoConfigError(f"cache_dtype must be one of {list(DTYPES)}, got {dtype!r}", "cache_dtype", None)
        self.capacity_mb = float(capacity_mb)
        self.dtype = dtype
        self.capacity_bytes = int(self.capacity_mb * MB)
        self._data = {}
        self.n_bytes = 0
        self.n_tokens = 0
        self.hits = 0
        self.misses = 0
        self.rejected = 0  # sentences that did not fit
        self.serving = False

    def __len__(self) -> int:
        return len(self._data)

    @property
    def enabled(self) -> bool:
        return self.capacity_bytes > 0

    def start_serving(self) -> None:
        """Frozen training has begun: prediction may read and fill the cache from now on."""
        if self.enabled:
            self.serving = True

    def get(self, key: Hashable) -> Optional[object]:
        """The float32 layers stored for ``key``, or None. With float32 entries this is the
        stored array itself (read-only by convention); with float16, a new float32 array."""
        value = self._data.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value if self.dtype == "float32" else value.astype("float32")

    def store(self, key: Hashable, value):
        """Keep ``value`` (float32 array (nL, n_tokens, dim) of sentence ``key``) if it fits, and
        return it as :meth:`get` will (rounded to float16 and back when ``dtype`` is float16,
        whether kept or not)."""
        size = value.size * (4 if self.dtype == "float32" else 2) + _key_bytes(key) + ENTRY_OVERHEAD
        keep = key not in self._data and self.n_bytes + size <= self.capacity_bytes
        if self.dtype == "float32":
            stored = served = value
            if keep:
                stored = value.copy()  # never a view of a batch's output
        else:
            stored = value.astype("float16")
            served = stored.astype("float32")
        if keep:
            self._data[key] = stored
            self.n_bytes += size
            self.n_tokens += int(value.shape[1])
        elif key not in self._data:
            self.rejected += 1
        return served

    def clear(self) -> None:
        """Forget everything and stop serving prediction (called whenever the biLM weights change)."""
        self._data.clear()
        self.n_bytes = self.n_tokens = 0
        self.serving = False

    # A copy or a pickle carries the capacity, not the (large) contents.
    def __deepcopy__(self, memo):
        return LayersCache(self.capacity_mb, self.dtype)

    def __reduce__(self):
        return (LayersCache, (self.capacity_mb, self.dtype))
