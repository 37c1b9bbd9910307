"""The ``[training]`` section as a typed, frozen dataclass, read once per run.

The defaults live in one place, ``default.cfg``: the fields have none of their own, and
:func:`training_settings` fills a missing key from ``default.cfg`` (a config from
:func:`.config.load_config` already has every key, validated). The field names are exactly the
keys of ``default.cfg``'s ``[training]`` section (``tests/test_pretrain_settings.py`` checks both
ways, and every default).
"""
import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping, Optional

from confection import Config

from ..errors import ElmoConfigError
from .config import default_config_text


@dataclass(frozen=True)
class TrainingSettings:
    """One run's ``[training]`` settings (see ``default.cfg`` for what each means). Numbers are
    converted to the field's type (``max_minutes = 5`` -> 5.0); ``init_from`` is None for null
    or an empty string."""

    seed: int
    max_steps: int
    max_tokens: int
    max_minutes: float
    stop_after_minutes: float
    tokens_per_batch: int
    accumulate_batches: int
    learning_rate: float
    warmup_steps: int
    final_lr_fraction: float
    decay_steps: int
    grad_clip: float
    checkpoint_minutes: float
    eval_every_steps: int
    eval_tokens: int
    threads: int
    device: str
    lstm_impl: str
    precision: str
    compile: bool
    init_from: Optional[str]

    @property
    def stint_seconds(self) -> float:
        """``stop_after_minutes`` in seconds (0 = no stint limit)."""
        return 60.0 * self.stop_after_minutes

    @property
    def checkpoint_seconds(self) -> float:
        return 60.0 * self.checkpoint_minutes


@lru_cache(maxsize=1)
def default_training() -> Mapping[str, Any]:
    """``default.cfg``'s ``[training]`` section (a copy is made by each caller)."""
    return dict(Config().from_str(default_config_text(), interpolate=False)["training"])


def training_settings(cfg) -> TrainingSettings:
    """The TrainingSettings of a config (``cfg["training"]``; a missing key takes its value in
    ``default.cfg``). Raises ElmoConfigError (a ValueError) naming the key for a value that does not convert to the
    field's type (:func:`.config.load_config` has already refused those in a file or override)."""
    section = {**default_training(), **dict(cfg["training"])}
    values = {}
    for field in dataclasses.fields(TrainingSettings):
        value = section[field.name]
        try:
            values[field.name] = _convert(field.type, value)
        except (TypeError, ValueError):
            raise ElmoConfigError(f"[training] {field.name} = {value!r}: expected {field.type}") from None
    return TrainingSettings(**values)


def _convert(kind, value):
    if kind == Optional[str]:
        return str(value) if value else None
    if kind is bool:
        return bool(value)
    return kind(value)
