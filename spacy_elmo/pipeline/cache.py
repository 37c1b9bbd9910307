"""A bounded LRU cache of biLM layers per sentence, for training with a frozen biLM.

Why: with the biLM frozen (the default, ``grad_factor = 0``), its output for a sentence never
changes, yet spaCy's training loop shows the same sentences every epoch. Keyed by the
sentence's token strings (a tuple), so the same sentence in another Doc also hits.
Bounded by tokens: memory <= ``max_tokens * (num_layers + 1) * dim * 4`` bytes (float32), e.g.
50,000 tokens of a 2-layer biLM with dim 256 is ~150 MB. Only used in training; prediction
(``nlp.pipe``) never fills it. It is never serialized: a copy or an unpickled model starts empty.
"""
from collections import OrderedDict
from typing import Hashable, Optional


class LayersCache:
    """LRU map ``tuple of token strings -> array (nL, n_tokens, dim)``; ``max_tokens=0`` disables."""

    def __init__(self, max_tokens: int = 0):
        if max_tokens < 0:
            raise ValueError(f"cache_size must be >= 0 tokens, got {max_tokens}")
        self.max_tokens = int(max_tokens)
        self._data: "OrderedDict[Hashable, object]" = OrderedDict()
        self.n_tokens = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Optional[object]:
        value = self._data.get(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
            self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value, n_tokens: int) -> None:
        """Store ``value`` (a sentence of ``n_tokens`` tokens), evicting least recently used."""
        if n_tokens > self.max_tokens or key in self._data:
            return
        self._data[key] = value
        self.n_tokens += n_tokens
        while self.n_tokens > self.max_tokens:
            _, old = self._data.popitem(last=False)
            self.n_tokens -= old.shape[1]

    def clear(self) -> None:
        """Forget everything (called whenever the biLM weights change)."""
        self._data.clear()
        self.n_tokens = 0

    # A copy or a pickle carries the capacity, not the (large) contents.
    def __deepcopy__(self, memo):
        return LayersCache(self.max_tokens)

    def __reduce__(self):
        return (LayersCache, (self.max_tokens,))
