"""The config shape of the biLM: a ``spacy_elmo.ElmoBiLM.v1`` section (``[components.elmo.model]``,
``Elmo.v1``'s ``bilm``); flat biLM keys are config errors. Round trips through to_disk /
spacy.load, and replace_listeners copying the section."""
import dataclasses
import inspect
import os
import subprocess
import sys

import numpy
import pytest
import spacy
from spacy.training import Example
from thinc.api import ConfigValidationError

from spacy_elmo.pipeline import learned_mixes
from spacy_elmo.pipeline.bilm_config import ARCHITECTURE, BiLMSettings, settings_of

from helpers import REPO

TRAIN = [("I like green eggs", ["N", "V", "J", "N"]), ("Eat blue ham", ["V", "J", "N"])]
# one long Doc without sentence boundaries: cut into windows of window_tokens
TEXTS = ["The river bank overflowed.", "", "Green eggs and ham!", " ".join(["word"] * 37)]
SETTINGS = {"window_tokens": 8, "batch_size": 3, "cache_mb": 0, "threads": 1}


def add_elmo(nlp, config):
    nlp.add_pipe("elmo", config=config)


def new_style(tiny_model, **settings):
    return {"model": {"@architectures": ARCHITECTURE, "name": tiny_model.directory, **SETTINGS, **settings}}


def layers(nlp):
    return [doc._.elmo.layers for doc in nlp.pipe(TEXTS)]


def assert_same_layers(a, b):
    for x, y in zip(layers(a), layers(b)):
        numpy.testing.assert_array_equal(x, y)


def test_default_config_has_the_section():
    nlp = spacy.blank("en")
    add_elmo(nlp, {})
    cfg = nlp.get_pipe_config("elmo")
    assert cfg["model"]["@architectures"] == ARCHITECTURE and cfg["model"]["name"] == "en_elmo_small"
    assert cfg["model"]["window_tokens"] == 128 and cfg["model"]["options_path"] is None
    # spaCy lists every argument of the factory: the component's own keys, nothing else
    assert {k: v for k, v in cfg.items() if k not in ("factory", "model")} == {
        "store": "all", "dtype": "float32", "vectors": None}


def test_the_filled_config_the_dataclass_and_the_built_layers_agree(tiny_model):
    """The biLM's defaults are written once (BiLMSettings): the factory's filled config, the
    architecture's signature, a section that names only the model (filled by spaCy from that
    signature), Elmo.v1's default biLM and the layers built all hold the same values."""
    from spacy_elmo.pipeline.architectures import elmo_bilm_v1, elmo_v1
    from spacy_elmo.pipeline.layers.doc_layers import bilm_of

    defaults = dataclasses.asdict(BiLMSettings())
    assert defaults == {"name": "en_elmo_small", "options_path": None, "weights_path": None, "window_tokens": 128,
                        "batch_size": 64, "cache_mb": 2048, "cache_dtype": "float32", "threads": "auto",
                        "precision": "float32"}
    signature = {k: p.default for k, p in inspect.signature(elmo_bilm_v1).parameters.items()}
    assert signature == defaults
    nlp, named = spacy.blank("en"), spacy.blank("en")
    nlp.add_pipe("elmo")
    named.add_pipe("elmo", config={"model": {"@architectures": ARCHITECTURE, "name": tiny_model.directory}})
    assert nlp.config["components"]["elmo"]["model"] == {"@architectures": ARCHITECTURE, **defaults}
    assert named.config["components"]["elmo"]["model"] == {"@architectures": ARCHITECTURE, **defaults,
                                                           "name": tiny_model.directory}
    doc_layers = nlp.get_pipe("elmo").model
    assert settings_of(doc_layers) == defaults and doc_layers.attrs["window_tokens"] == 128
    for layer in (bilm_of(doc_layers), elmo_v1().get_ref("bilm")):
        cache = layer.attrs["cache"]
        assert (layer.attrs["batch_size"], cache.capacity_mb, cache.dtype) == (64, 2048.0, "float32")
        assert layer.attrs["precision"].value == "float32" and layer.attrs["source"]["name"] == "en_elmo_small"
    with pytest.raises(TypeError, match="unexpected keyword argument 'cache_size'"):
        dataclasses.replace(BiLMSettings(), cache_size=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        BiLMSettings().cache_mb = 0


def test_flat_bilm_keys_are_config_errors(tiny_model):
    """The biLM's settings live in the model section only: a flat key of the component (or of
    Elmo.v1) or a model given by name is refused by spaCy's config validation."""
    for config in ({**new_style(tiny_model), "max_tokens": 5}, {**new_style(tiny_model), "cache_size": 100},
                   {"model": tiny_model.directory}):
        with pytest.raises(ConfigValidationError):
            add_elmo(spacy.blank("en"), config)
    tok2vec = {"@architectures": "spacy_elmo.Elmo.v1", "width": 8, "model": tiny_model.directory}
    with pytest.raises(ConfigValidationError, match="unexpected argument: 'model'"):
        spacy.blank("en").add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                                               "tok2vec": tok2vec}})


def test_bad_model_section_names_the_new_keys(tiny_model):
    with pytest.raises(ValueError, match=r"window_tokens must be >= 1"):
        spacy.blank("en").add_pipe("elmo", config=new_style(tiny_model, window_tokens=0))
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": {"name": "no_such_model"}})
    with pytest.raises(ValueError, match=r"\[components.elmo.model\] name = 'no_such_model'") as err:
        nlp.initialize()
    assert err.value.key == "name"


def trained(config):
    nlp = spacy.blank("en")
    add_elmo(nlp, config)
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": {
        "@architectures": "spacy_elmo.ElmoListener.v1", "width": 16, "grad_factor": 0.5}}})
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    return nlp


def tags(nlp):
    return [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]


@pytest.mark.slow
def test_new_style_round_trips_through_disk(tiny_model, tmp_path):
    nlp = trained(new_style(tiny_model))
    nlp.to_disk(tmp_path / "p")
    text = (tmp_path / "p" / "config.cfg").read_text(encoding="utf-8")
    assert "[components.elmo.model]" in text and f'@architectures = "{ARCHITECTURE}"' in text
    assert "max_tokens" not in text and "cache_size" not in text and "options_path = null\n" in text
    loaded = spacy.load(tmp_path / "p")
    assert settings_of(loaded.get_pipe("elmo").model) == settings_of(nlp.get_pipe("elmo").model)
    assert_same_layers(loaded, nlp)
    assert tags(loaded) == tags(nlp)
    # a runtime setting overridden in the section at load time
    other = spacy.load(tmp_path / "p", config={"components": {"elmo": {"model": {"window_tokens": 4}}}})
    assert settings_of(other.get_pipe("elmo").model)["window_tokens"] == 4


@pytest.mark.slow
def test_replace_listeners_copies_the_section(tiny_model):
    nlp = trained(new_style(tiny_model))
    before = tags(nlp)
    section = settings_of(nlp.get_pipe("elmo").model)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    tok2vec = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    assert tok2vec["@architectures"] == "spacy_elmo.Elmo.v1" and tok2vec["grad_factor"] == 0.5
    bilm = tok2vec["bilm"]
    assert bilm["@architectures"] == ARCHITECTURE
    assert {k: v for k, v in bilm.items() if k != "@architectures"} == {k: section[k] for k in bilm if k in section}
    assert bilm == nlp.get_pipe_config("elmo")["model"]  # the section itself
    nlp.remove_pipe("elmo")
    assert tags(nlp) == before
    fresh = spacy.util.load_model_from_config(nlp.config, auto_fill=True).from_bytes(nlp.to_bytes())
    assert tags(fresh) == before and learned_mixes(fresh) == learned_mixes(nlp)


def test_elmo_v1_takes_the_section(tiny_model):
    from spacy_elmo.pipeline.architectures import elmo_v1

    nlp = spacy.blank("en")
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": {
        "@architectures": "spacy_elmo.Elmo.v1", "width": 8,
        "bilm": {"@architectures": ARCHITECTURE, "name": tiny_model.directory, **SETTINGS}}}})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g in TRAIN])
    settings = settings_of(nlp.get_pipe("tagger").model.get_ref("tok2vec").layers[0])
    assert settings["name"] == tiny_model.directory and settings["window_tokens"] == 8
    assert settings["batch_size"] == 3 and settings["precision"] == "float32"
    assert elmo_v1().get_ref("bilm").attrs["source"]["name"] == "en_elmo_small"  # the default biLM
    with pytest.raises(ValueError, match=r"\[spacy_elmo.Elmo.v1\] expected a biLM model built by"):
        elmo_v1(tiny_model.directory)


def test_section_resolves_in_a_fresh_process(tiny_model):
    """spaCy finds spacy_elmo.ElmoBiLM.v1 through its entry point, also when it is the first
    spacy_elmo name a config resolves (inside an Elmo.v1 tok2vec, no elmo component)."""
    code = f"""
import spacy
nlp = spacy.blank("en")
nlp.add_pipe("tagger", config={{"model": {{"@architectures": "spacy.Tagger.v2", "tok2vec": {{
    "@architectures": "spacy_elmo.Elmo.v1", "width": 8,
    "bilm": {{"@architectures": "{ARCHITECTURE}", "name": {tiny_model.directory!r}}}}}}}}})
print(nlp.pipe_names)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=os.fspath(REPO))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['tagger']"


def test_bad_pipeline_settings_are_config_errors_naming_the_key(tiny_model):
    """An out-of-range setting of the elmo component is an ElmoConfigError (an ElmoError and, as
    before, a ValueError) whose ``key`` is the setting."""
    from spacy_elmo.errors import ElmoConfigError, ElmoError

    with pytest.raises(ElmoConfigError, match=r"window_tokens must be >= 1, got 0") as err:
        spacy.blank("en").add_pipe("elmo", config=new_style(tiny_model, window_tokens=0))
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    assert err.value.key == "window_tokens" and err.value.path is None
