"""The ``[training]`` settings dataclass: its fields are exactly default.cfg's ``[training]`` keys,
its values from the default config are default.cfg's (one place for the defaults), and it reads
a run's config as the loop uses it."""
import dataclasses

import pytest
from confection import Config

from spacy_elmo.pretrain.config import DEFAULT_CONFIG_PATH, load_config
from spacy_elmo.pretrain.settings import TrainingSettings, training_settings


def default_section() -> dict:
    return dict(Config().from_disk(DEFAULT_CONFIG_PATH, interpolate=False)["training"])


def test_every_field_is_a_key_of_default_cfg_and_back():
    fields = [f.name for f in dataclasses.fields(TrainingSettings)]
    assert sorted(fields) == sorted(default_section())
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(TrainingSettings))  # no second default


def test_settings_of_the_default_config_are_default_cfg():
    section = default_section()
    settings = training_settings(load_config())
    for name, value in section.items():
        assert getattr(settings, name) == value, name
    # the values the old loop's fallbacks contradicted: default.cfg wins
    assert settings.eval_every_steps == 1000 and settings.compile is True and settings.eval_tokens == 30000
    assert isinstance(settings.max_minutes, float) and isinstance(settings.checkpoint_minutes, float)
    assert settings.stint_seconds == 0.0 and settings.checkpoint_seconds == 300.0


def test_overrides_and_missing_keys():
    cfg = load_config(None, {"training.max_minutes": 3, "training.init_from": "", "training.threads": 1})
    s = training_settings(cfg)
    assert s.max_minutes == 3.0 and s.init_from is None and s.threads == 1
    # a section without a key (a hand-made dict) takes default.cfg's value
    assert training_settings({"training": {"seed": 5}}).eval_every_steps == 1000
    with pytest.raises(ValueError, match=r"\[training\] max_steps = 'many'"):
        training_settings({"training": {"max_steps": "many"}})
