"""Pretraining config: confection (spaCy-style) files with dotted CLI overrides."""
import os
from pathlib import Path
from typing import Dict, Optional, Union

from confection import Config

DEFAULT_CONFIG_PATH = Path(__file__).parent / "default.cfg"

REQUIRED = {
    "corpus": ["paths", "block_lines", "heldout_every", "max_sentence_tokens"],
    "vocab": ["size", "min_count"],
    "model": ["char_dim", "filters", "n_highway", "activation", "lstm_dim", "projection_dim", "n_layers"],
    "softmax": ["cutoffs", "div_value"],
    "training": ["seed", "max_steps", "tokens_per_batch", "learning_rate"],
}


def default_config_text() -> str:
    return DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")


def load_config(path: Optional[Union[str, Path]] = None, overrides: Optional[Dict[str, object]] = None) -> Config:
    """Load a config (default: the packaged default.cfg) and apply ``{"section.key": value}``.

    Missing sections/keys are filled from the default. Raises ValueError naming a bad override.
    """
    base = Config().from_str(default_config_text(), interpolate=False)
    if path is not None:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Config file not found: {path}")
        user = Config().from_disk(path, interpolate=False)
        base = base.merge(user)
    for key, value in (overrides or {}).items():
        section, _, name = key.partition(".")
        if not name or section not in base:
            raise ValueError(f"Unknown config override --{key}: expected --section.key with a section of {list(base)}")
        base[section][name] = value
    for section, keys in REQUIRED.items():
        for key in keys:
            if key not in base.get(section, {}):
                raise ValueError(f"Config is missing [{section}] {key}")
    return base
