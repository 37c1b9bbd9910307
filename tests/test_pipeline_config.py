"""The config shape of the biLM: a ``spacy_elmo.ElmoBiLM.v1`` section (``[components.elmo.model]``,
``Elmo.v1``'s ``bilm``), and the old flat keys, which still build the same model with one
ElmoDeprecationWarning. Round trips through to_disk / spacy.load, and replace_listeners copying
the section."""
import os
import subprocess
import sys
import warnings

import numpy
import pytest
import spacy
from spacy.training import Example

from spacy_elmo.pipeline import learned_mixes
from spacy_elmo.pipeline.bilm_config import ARCHITECTURE, OLD_KEYS, settings_of
from spacy_elmo.pipeline.cache import ElmoDeprecationWarning

from helpers import REPO

TRAIN = [("I like green eggs", ["N", "V", "J", "N"]), ("Eat blue ham", ["V", "J", "N"])]
# one long Doc without sentence boundaries: cut into windows of window_tokens
TEXTS = ["The river bank overflowed.", "", "Green eggs and ham!", " ".join(["word"] * 37)]
SETTINGS = {"window_tokens": 8, "batch_size": 3, "cache_mb": 0, "threads": 1}


def deprecations(record):
    return [w for w in record if issubclass(w.category, ElmoDeprecationWarning)]


def add_elmo(nlp, config):
    """nlp.add_pipe("elmo", config) and the ElmoDeprecationWarnings it gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        nlp.add_pipe("elmo", config=config)
    return deprecations(record)


def new_style(tiny_model, **settings):
    return {"model": {"@architectures": ARCHITECTURE, "name": tiny_model.directory, **SETTINGS, **settings}}


def old_style(tiny_model, **settings):
    return {"model": tiny_model.directory, "max_tokens": 8, "batch_size": 3, "cache_mb": 0, "threads": 1,
            "precision": "float32", **settings}


def layers(nlp):
    return [doc._.elmo.layers for doc in nlp.pipe(TEXTS)]


def assert_same_layers(a, b):
    for x, y in zip(layers(a), layers(b)):
        numpy.testing.assert_array_equal(x, y)


def test_default_config_has_the_section():
    nlp = spacy.blank("en")
    assert add_elmo(nlp, {}) == []
    cfg = nlp.get_pipe_config("elmo")
    assert cfg["model"]["@architectures"] == ARCHITECTURE and cfg["model"]["name"] == "en_elmo_small"
    assert cfg["model"]["window_tokens"] == 128 and cfg["model"]["options_path"] is None
    # spaCy lists every argument of the factory: the old flat keys stay, null (= not used)
    assert {k: v for k, v in cfg.items() if k not in ("factory", "model")} == {
        "store": "all", "dtype": "float32", "vectors": None, **{k: None for k in OLD_KEYS if k != "model"}}


def test_old_style_config_builds_the_same_component_with_one_warning(tiny_model):
    new, old = spacy.blank("en"), spacy.blank("en")
    assert add_elmo(new, new_style(tiny_model)) == []
    (warning,) = add_elmo(old, old_style(tiny_model))
    message = str(warning.message)
    assert message.startswith("[components.elmo] model, max_tokens, batch_size, cache_mb, threads, precision: ")
    assert "[components.elmo.model]" in message and ARCHITECTURE in message and "window_tokens" in message
    assert settings_of(old.get_pipe("elmo").model) == settings_of(new.get_pipe("elmo").model)
    assert old.get_pipe("elmo").cfg == new.get_pipe("elmo").cfg
    assert_same_layers(old, new)
    # the files as options_path / weights_path, and the deprecated cache_size: still one warning
    files = spacy.blank("en")
    (warning,) = add_elmo(files, {**tiny_model.config, "max_tokens": 8, "cache_size": 100})
    assert "options_path, weights_path, max_tokens, cache_size:" in str(warning.message)
    assert "cache_size = 100 is deprecated" in str(warning.message)
    assert_same_layers(files, new)


def test_old_keys_over_a_section_apply_to_its_settings(tiny_model):
    """An old flat key given on top of the section (e.g. an old-style override at load time)
    changes that key only, with one warning."""
    nlp = spacy.blank("en")
    (warning,) = add_elmo(nlp, {**new_style(tiny_model), "max_tokens": 5})
    assert "[components.elmo] max_tokens:" in str(warning.message)
    settings = settings_of(nlp.get_pipe("elmo").model)
    assert settings["window_tokens"] == 5 and settings["name"] == tiny_model.directory and settings["batch_size"] == 3


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
    assert "max_tokens" not in text.split("[components.elmo.model]")[1].split("\n[")[0]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        loaded = spacy.load(tmp_path / "p")
    assert deprecations(record) == []
    assert settings_of(loaded.get_pipe("elmo").model) == settings_of(nlp.get_pipe("elmo").model)
    assert_same_layers(loaded, nlp)
    assert tags(loaded) == tags(nlp)
    # a runtime setting overridden in the section at load time
    other = spacy.load(tmp_path / "p", config={"components": {"elmo": {"model": {"window_tokens": 4}}}})
    assert settings_of(other.get_pipe("elmo").model)["window_tokens"] == 4


@pytest.mark.slow
@pytest.mark.parametrize("style", ["new", "old"])
def test_replace_listeners_copies_the_section(tiny_model, style):
    nlp = trained(new_style(tiny_model) if style == "new" else old_style(tiny_model))
    before = tags(nlp)
    section = settings_of(nlp.get_pipe("elmo").model)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    tok2vec = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    assert tok2vec["@architectures"] == "spacy_elmo.Elmo.v1" and tok2vec["grad_factor"] == 0.5
    bilm = tok2vec["bilm"]
    assert bilm["@architectures"] == ARCHITECTURE
    assert {k: v for k, v in bilm.items() if k != "@architectures"} == {k: section[k] for k in bilm if k in section}
    if style == "new":
        assert bilm == nlp.get_pipe_config("elmo")["model"]  # the section itself
    nlp.remove_pipe("elmo")
    assert tags(nlp) == before
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fresh = spacy.util.load_model_from_config(nlp.config, auto_fill=True).from_bytes(nlp.to_bytes())
    assert deprecations(record) == []
    assert tags(fresh) == before and learned_mixes(fresh) == learned_mixes(nlp)


def test_elmo_v1_takes_the_section_and_old_keys(tiny_model):
    from spacy_elmo.pipeline.architectures import elmo_v1

    def tok2vec(**cfg):
        nlp = spacy.blank("en")
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": {
                "@architectures": "spacy_elmo.Elmo.v1", "width": 8, **cfg}}})
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {"tags": g}) for t, g in TRAIN])
        return nlp, deprecations(record)

    new, none = tok2vec(bilm={"@architectures": ARCHITECTURE, "name": tiny_model.directory, **SETTINGS})
    old, (warning,) = tok2vec(model=tiny_model.directory, max_tokens=8, batch_size=3, cache_mb=0, threads=1)
    assert none == [] and str(warning.message).startswith("[spacy_elmo.Elmo.v1] model, max_tokens, batch_size")
    assert " bilm = {" in str(warning.message)
    assert settings_of(new.get_pipe("tagger").model.get_ref("tok2vec").layers[0]) == \
        settings_of(old.get_pipe("tagger").model.get_ref("tok2vec").layers[0])
    old.get_pipe("tagger").model.from_bytes(new.get_pipe("tagger").model.to_bytes())
    assert tags(old) == tags(new)
    assert elmo_v1().get_ref("bilm").attrs["source"]["name"] == "en_elmo_small"  # the default biLM, no warning


def test_old_style_pipeline_on_disk_loads_with_one_warning(tiny_model, tmp_path):
    """A pipeline saved in the old shape (config.cfg with flat keys, and the old attrs in its
    model bytes) loads and predicts the same."""
    nlp = spacy.blank("en")
    add_elmo(nlp, {**old_style(tiny_model), "cache_size": 1000})
    nlp.initialize()
    nlp.to_disk(tmp_path / "old")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        loaded = spacy.load(tmp_path / "old")
    assert len(deprecations(record)) == 1
    assert_same_layers(loaded, nlp)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tagger-ewt-elmo", "ner-conll-elmo"])
def test_saved_project_pipelines_still_load(name, tmp_path):
    """The pipelines spacy train wrote before the section existed (training/, when present)
    load with one warning, and predict the same after a round trip in the new code."""
    path = REPO / "training" / name / "model-best"
    if not (path / "config.cfg").is_file():
        pytest.skip(f"{path} not trained")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        nlp = spacy.load(path)
    assert len(deprecations(record)) == 1
    texts = ["Maria lives in Lisbon .", "The river bank overflowed after heavy rain ."]
    docs = list(nlp.pipe(texts))
    nlp.to_disk(tmp_path / "again")
    with pytest.warns(ElmoDeprecationWarning):  # its config.cfg is still the old one, as spacy.load read it
        again = list(spacy.load(tmp_path / "again").pipe(texts))
    for a, b in zip(docs, again):
        numpy.testing.assert_array_equal(a._.elmo.layers, b._.elmo.layers)
        assert [t.tag_ for t in a] == [t.tag_ for t in b] and [e.text for e in a.ents] == [e.text for e in b.ents]


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
