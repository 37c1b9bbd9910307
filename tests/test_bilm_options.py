"""BiLMOptions: options.json as one frozen dataclass, and its agreement with the pretraining
config's [model] section (same names) and the options.json that pretraining writes."""
import dataclasses
import json
from pathlib import Path

import pytest
from confection import Config

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.options import JSON_KEYS, BiLMOptions, check_options, read_options, write_options
from spacy_elmo.errors import ElmoModelFileError
from spacy_elmo.pretrain.config import load_config
from spacy_elmo.pretrain.lm import MODEL_KEYS, model_config, model_options

from helpers import REPO, TINY_OPTIONS, reference_dir, tiny_corpus_overrides

PACKAGED = REPO / "spacy_elmo" / "models" / "en_elmo_small"
FIXED = {"n_characters": 262, "max_characters_per_token": 50, "cell_clip": None, "proj_clip": None}


def _at(options: dict, key: tuple):
    for part in key:
        options = options[part]
    return options


def _assert_agree(model: dict, options_file: Path) -> None:
    """[model] of a config, the options.json file and BiLMOptions hold the same values, field by field."""
    document = json.loads(options_file.read_text(encoding="utf-8"))
    spec = BiLMOptions.from_json(document, options_file)
    assert set(model) == set(MODEL_KEYS) | {"dropout"}  # dropout: a training setting, not in options.json
    for name, key in JSON_KEYS.items():
        value = getattr(spec, name)
        if name == "filters":
            value = [list(f) for f in value]
        assert value == _at(document, key), name
        assert value == (model[name] if name in MODEL_KEYS else FIXED[name]), name
    assert spec.fields(MODEL_KEYS) == {k: model[k] for k in MODEL_KEYS} == model_config(document)


def test_default_config_model_section_options_json_and_dataclass_agree(tmp_path):
    cfg = load_config()
    BiLM(model_options(cfg["model"])).save(tmp_path)
    _assert_agree(dict(cfg["model"]), tmp_path / "options.json")


def test_pretrain_run_config_and_written_options_agree(tmp_path):
    from spacy_elmo.pretrain.train import pretrain

    overrides = tiny_corpus_overrides(tmp_path / "run")
    overrides.update({"training.max_steps": 1, "model.n_highway": 2, "model.activation": "tanh"})
    pretrain(str(tmp_path / "run"), overrides=overrides, progress=False)
    cfg = Config().from_disk(tmp_path / "run" / "config.cfg", interpolate=False)
    assert (cfg["model"]["n_highway"], cfg["model"]["activation"], cfg["model"]["lstm_dim"]) == (2, "tanh", 16)
    _assert_agree(dict(cfg["model"]), tmp_path / "run" / "model" / "options.json")


def test_packaged_model_config_options_json_and_dataclass_agree():
    cfg = Config().from_disk(PACKAGED / "config.cfg", interpolate=False)
    _assert_agree(dict(cfg["model"]), PACKAGED / "options.json")


def _options_files():
    files = [PACKAGED / "options.json"]
    ref = reference_dir() / "options.json"
    return files + ([ref] if ref.is_file() else [])


@pytest.mark.parametrize("path", _options_files(), ids=lambda p: p.parent.name)
def test_to_json_writes_the_file_it_read_byte_for_byte(path, tmp_path):
    """The writer's output of from_json(...).to_json() equals the writer's output of the checked
    dict (the format before the dataclass); the packaged file is that output (it was written
    before the writer ended the file with a newline)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    write_options(BiLMOptions.from_json(raw).to_json(), tmp_path / "new.json")
    write_options(check_options(raw), tmp_path / "old.json")
    assert (tmp_path / "new.json").read_bytes() == (tmp_path / "old.json").read_bytes()
    if path.parent == PACKAGED:
        assert (tmp_path / "new.json").read_bytes() == path.read_bytes() + b"\n"
    bilm = BiLM.from_files(path, path.parent / ("weights.hdf5" if path.parent == PACKAGED else "lm_weights.hdf5"))
    assert bilm.spec == BiLMOptions.from_json(read_options(path)) and bilm.options == bilm.spec.to_json()


def test_unmodelled_keys_and_values_are_kept():
    raw = {**TINY_OPTIONS, "lstm": {**TINY_OPTIONS["lstm"], "dropout": 0.1}, "bidirectional": True}
    spec = BiLMOptions.from_json(raw)
    assert spec.to_json() == check_options(raw)
    assert spec.to_json()["bidirectional"] is True and spec.to_json()["lstm"]["dropout"] == 0.1
    assert (spec.cell_clip, spec.proj_clip, spec.lstm_dim, spec.filters[1]) == (3, 3, 64, (2, 8))
    assert spec.format_version == 1 and spec.activation == "relu"


def test_frozen_and_to_json_returns_a_copy():
    spec = BiLMOptions.from_json(TINY_OPTIONS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.lstm_dim = 8
    spec.to_json()["lstm"]["dim"] = 8
    assert spec.to_json()["lstm"]["dim"] == 64 == spec.lstm_dim
    bilm = BiLM(spec)
    assert bilm.spec is spec and bilm.lstm.projection_dim == 16


def test_new_lays_out_options_as_bilm_tf():
    spec = BiLMOptions.new(char_dim=4, filters=[[1, 4], [2, 8]], n_highway=1, activation="relu", lstm_dim=16,
                           projection_dim=8, n_layers=2, use_skip_connections=True)
    assert list(spec.to_json()["lstm"]) == ["dim", "projection_dim", "n_layers", "use_skip_connections", "cell_clip",
                                            "proj_clip"]
    assert list(spec.to_json()["char_cnn"]) == ["embedding", "filters", "n_highway", "activation", "n_characters",
                                                "max_characters_per_token"]


@pytest.mark.parametrize("change,match", [
    ({"lstm": {**TINY_OPTIONS["lstm"], "dim": 0}}, r"^options: lstm\.dim: expected a positive integer"),
    ({"lstm": {**TINY_OPTIONS["lstm"], "cell_clip": -1}}, r"^options: lstm\.cell_clip: expected a finite number"),
    ({"char_cnn": {**TINY_OPTIONS["char_cnn"], "activation": "gelu"}},
     r"^options: char_cnn\.activation: expected 'relu' or 'tanh', got 'gelu'$"),
])
def test_from_json_errors_are_check_options_one_liners(change, match):
    bad = {**TINY_OPTIONS, **change}
    with pytest.raises(ElmoModelFileError, match=match) as got:
        BiLMOptions.from_json(bad)
    with pytest.raises(ElmoModelFileError) as want:
        check_options(bad)
    assert str(got.value) == str(want.value) and "\n" not in str(got.value)


def test_new_rejects_a_bad_model_value_in_one_line():
    with pytest.raises(ElmoModelFileError, match=r"^options: char_cnn\.filters: expected a non-empty list"):
        model_options({**dict(load_config()["model"]), "filters": [4, 8]})


def test_pretraining_docs_table_is_json_keys():
    """docs/pretraining.md's table of [model] names and options.json keys is JSON_KEYS."""
    text = (REPO / "docs" / "pretraining.md").read_text(encoding="utf-8")
    section = text[text.index("**`[model]` and `options.json`:**"):].split("\n\n")[1]
    rows = [line.split("|")[1:3] for line in section.splitlines()[2:]]  # below the header and its rule
    table = {}
    for names, keys in rows:
        for name, key in zip(names.split(","), keys.split(",")):
            table[name.strip(" `")] = tuple(key.strip(" `").split("."))
    assert table == {name: JSON_KEYS[name] for name in MODEL_KEYS}
