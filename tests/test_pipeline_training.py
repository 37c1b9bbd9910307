"""Training through ElmoListener.v1 / Elmo.v1 / ElmoConcat.v1: learning, frozen/annotating/
fine-tuning modes, the layer cache and the learned-mix readout (on the tiny random model)."""
from contextlib import contextmanager

import numpy
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import Adam

from spacy_elmo.bilm import BiLM
from spacy_elmo.pipeline import learned_mixes
from spacy_elmo.pipeline.mixes import format_mixes

from helpers import elmo_config

TRAIN = [
    ("I like green eggs", ["PRON", "VERB", "ADJ", "NOUN"]),
    ("Eat blue ham", ["VERB", "ADJ", "NOUN"]),
    ("", []),  # an empty doc in the middle of every batch
    ("She eats red ham", ["PRON", "VERB", "ADJ", "NOUN"]),
    ("They like blue eggs", ["PRON", "VERB", "ADJ", "NOUN"]),
]


def listener(**kwargs):
    return {"@architectures": "spacy_elmo.ElmoListener.v1", **kwargs}


def tagger_config(tok2vec):
    return {"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}}


@pytest.fixture(scope="module")
def files(tiny_model):
    return tiny_model.config


def build(files, *components, elmo=True):
    nlp = spacy.blank("en")
    if elmo:
        nlp.add_pipe("elmo", config=elmo_config(files))
    for name, config in components:
        nlp.add_pipe("tagger", name=name, config=config)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    nlp.initialize(lambda: examples)
    return nlp, examples


def train(nlp, examples, steps, **kwargs):
    optimizer = Adam(0.01)
    history = []
    for _ in range(steps):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses, **kwargs)
        history.append(losses)
    return history


def predicted_tags(nlp):
    return [[t.tag_ for t in doc] for doc in nlp.pipe(t for t, _ in TRAIN)]


@contextmanager
def bilm_runs(nlp):
    """A list that grows by one for each call of one of the biLM's torch modules inside the block
    (torch's global forward hook): empty if the biLM did not run."""
    modules = {id(m) for m in nlp.get_pipe("elmo").bilm.modules()}
    calls = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, args, out: calls.append(type(module).__name__) if id(module) in modules else None)
    try:
        yield calls
    finally:
        handle.remove()


def test_tagger_with_listener_learns_and_mix_moves(files):
    nlp, examples = build(files, ("tagger", tagger_config(listener(width=32))))
    assert learned_mixes(nlp)["tagger"].weights == pytest.approx([1 / 3] * 3)
    with bilm_runs(nlp) as runs:
        history = train(nlp, examples, 40)
    # Frozen biLM: nlp.initialize ran it over the training sentences (ElmoComponent.warm_cache),
    # so every pass came from the cache.
    assert not runs
    assert history[-1]["tagger"] < 0.2 * history[0]["tagger"]
    assert predicted_tags(nlp) == [tags for _, tags in TRAIN]
    mix = learned_mixes(nlp)["tagger"]
    assert max(abs(s - 1 / 3) for s in mix.weights) > 1e-3 and mix.gamma != 1.0
    assert "tagger" in format_mixes(learned_mixes(nlp))


def test_without_the_cache_every_update_runs_the_bilm(files):
    nlp, examples = build(dict(files, cache_mb=0), ("tagger", tagger_config(listener())))
    for _ in range(2):
        with bilm_runs(nlp) as runs:
            train(nlp, examples, 1)
        assert runs


def test_each_listener_has_its_own_mix(files):
    nlp, examples = build(files, ("tagger", tagger_config(listener())),
                          ("tagger2", tagger_config(listener(layer_norm=True, dropout=0.1))))
    assert nlp.get_pipe("elmo").listening_components == ["tagger", "tagger2"]
    train(nlp, examples, 5)
    mixes = learned_mixes(nlp)
    assert set(mixes) == {"tagger", "tagger2"} and mixes["tagger"] != mixes["tagger2"]


def test_frozen_elmo_annotating_and_missing(files):
    nlp, examples = build(files, ("tagger", tagger_config(listener())))
    before = nlp.get_pipe("elmo").model.layers[0].to_bytes()
    history = train(nlp, examples, 10, exclude=["elmo"], annotates=["elmo"])
    assert history[-1]["tagger"] < history[0]["tagger"]
    assert nlp.get_pipe("elmo").model.layers[0].to_bytes() == before
    nlp2, examples2 = build(files, ("tagger", tagger_config(listener())))
    with pytest.raises(ValueError, match="annotating_components"):
        train(nlp2, examples2, 1, exclude=["elmo"])


def test_frozen_elmo_never_initialized(files):
    """[training] frozen_components = ["elmo"] on a fresh (not sourced) elmo: spaCy's init_nlp
    initializes the pipeline with "elmo" disabled, so the listener loads the biLM itself."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(files))
    nlp.add_pipe("tagger", config=tagger_config(listener(width=32)))
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    with nlp.select_pipes(disable=["elmo"]):  # as spacy.training.initialize.init_nlp does
        nlp.initialize(lambda: examples)
    history = train(nlp, examples, 30, exclude=["elmo"], annotates=["elmo"])
    assert history[-1]["tagger"] < 0.3 * history[0]["tagger"]
    assert predicted_tags(nlp) == [tags for _, tags in TRAIN]


def test_fine_tuning_updates_the_bilm(files):
    nlp, examples = build(files, ("tagger", tagger_config(listener(grad_factor=1.0))))
    bilm = nlp.get_pipe("elmo").bilm
    before = bilm.lstm.state_dict()
    before = {k: v.clone() for k, v in before.items()}
    nlp(TRAIN[0][0])  # run the fast path once before the weights change
    history = []
    for _ in range(3):
        with bilm_runs(nlp) as runs:
            history += train(nlp, examples, 1)
        assert runs  # the weights change: no layers are reused from an earlier update
    assert history[-1]["elmo"] > 0
    changed = [k for k, v in bilm.lstm.state_dict().items() if not numpy.array_equal(v.numpy(), before[k].numpy())]
    assert changed
    # Prediction (the biLM's fast path) uses the fine-tuned weights.
    fresh = BiLM(bilm.options)
    fresh.load_state_dict({k: v.clone() for k, v in bilm.state_dict().items()})
    words = TRAIN[0][0].split()
    numpy.testing.assert_allclose(nlp(TRAIN[0][0])._.elmo.layers, fresh.embed_sentences([words])[0], atol=1e-5)


def test_inline_elmo_v1(files):
    tok2vec = {"@architectures": "spacy_elmo.Elmo.v1", "bilm": elmo_config(files, window_tokens=16)["model"],
               "width": 32}
    nlp, examples = build(files, ("tagger", tagger_config(tok2vec)), elmo=False)
    history = train(nlp, examples, 30)
    assert history[-1]["tagger"] < 0.3 * history[0]["tagger"]
    assert predicted_tags(nlp) == [tags for _, tags in TRAIN]
    fresh = spacy.util.load_model_from_config(nlp.config, auto_fill=True).from_bytes(nlp.to_bytes())
    assert predicted_tags(fresh) == predicted_tags(nlp)
    assert learned_mixes(fresh) == learned_mixes(nlp)


def test_elmo_concat_as_tok2vec_embed(files):
    tok2vec = {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {"@architectures": "spacy_elmo.ElmoConcat.v1", "width": 24,
                  "elmo": listener(dropout=0.1),
                  "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": 24, "attrs": ["NORM", "SHAPE"],
                            "rows": [500, 100], "include_static_vectors": False}},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 24, "depth": 1,
                   "window_size": 1, "maxout_pieces": 2},
    }
    nlp, examples = build(files, ("tagger", tagger_config(tok2vec)))
    assert nlp.get_pipe("elmo").listening_components == ["tagger"]
    history = train(nlp, examples, 25)
    assert history[-1]["tagger"] < 0.3 * history[0]["tagger"]
    assert predicted_tags(nlp) == [tags for _, tags in TRAIN]
    assert "tagger" in learned_mixes(nlp)


def test_config_with_entry_points(files):
    config = spacy.util.load_config_from_str(f"""
[nlp]
lang = "en"
pipeline = ["elmo","tagger"]

[components]

[components.elmo]
factory = "elmo"

[components.elmo.model]
@architectures = "spacy_elmo.ElmoBiLM.v1"
options_path = "{files['options_path']}"
weights_path = "{files['weights_path']}"
window_tokens = 64

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"

[components.tagger.model.tok2vec]
@architectures = "spacy_elmo.ElmoListener.v1"
upstream = "elmo"
width = 16

[components.tagger.model.tok2vec.mix]
@architectures = "spacy_elmo.ScalarMix.v1"
initial_weights = [0.0, 1.0, 0.0]
trainable = false
""")
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    nlp.initialize(lambda: examples)
    train(nlp, examples, 2)
    mix = learned_mixes(nlp)["tagger"]
    assert mix.raw == [0.0, 1.0, 0.0] and mix.gamma == 1.0  # fixed weights stay fixed


def test_replace_listeners(files):
    nlp, examples = build(files, ("tagger", tagger_config(listener(width=16, grad_factor=0.5))))
    train(nlp, examples, 5)
    before = predicted_tags(nlp)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.get_pipe("elmo").listening_components == []
    tok2vec_cfg = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    assert tok2vec_cfg["@architectures"] == "spacy_elmo.Elmo.v1" and tok2vec_cfg["grad_factor"] == 0.5
    nlp.remove_pipe("elmo")
    assert predicted_tags(nlp) == before
    fresh = spacy.util.load_model_from_config(nlp.config, auto_fill=True).from_bytes(nlp.to_bytes())
    assert predicted_tags(fresh) == before
    train(fresh, examples, 1)  # the copied biLM fine-tunes inside the tagger now
