"""The layer cache while the biLM is frozen: evaluation during training reads it instead of running
the biLM again, fine-tuning clears it, outputs do not change and the memory budget holds. The
biLM's work is counted by wrapping ``BiLM.forward_indexed`` (every biLM call of the pipeline goes
through it)."""
import tracemalloc

import numpy
import pytest
import spacy
from spacy.training import Example
from spacy.util import fix_random_seed
from thinc.api import Adam

from spacy_elmo.pipeline.cache import LayersCache

from helpers import elmo_config

TRAIN = [("I like green eggs", ["PRON", "VERB", "ADJ", "NOUN"]),
         ("Eat blue ham", ["VERB", "ADJ", "NOUN"]),
         ("She eats red ham", ["PRON", "VERB", "ADJ", "NOUN"])]
DEV = [("They like blue eggs", ["PRON", "VERB", "ADJ", "NOUN"]),
       ("Eat red eggs", ["VERB", "ADJ", "NOUN"])]


def tagger(grad_factor=0.0):
    return {"model": {"@architectures": "spacy.Tagger.v2",
                      "tok2vec": {"@architectures": "spacy_elmo.ElmoListener.v1", "width": 16,
                                  "grad_factor": grad_factor}}}


def build(tiny_model, grad_factor=0.0, **settings):
    """(nlp, train examples, dev examples, Calls of its biLM counted from before initialize)."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, **settings))
    nlp.add_pipe("tagger", config=tagger(grad_factor))
    calls = Calls(nlp.get_pipe("elmo").bilm)
    train = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    dev = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in DEV]
    nlp.initialize(lambda: train)
    return nlp, train, dev, calls


class Calls:
    """Counts the sentences (rows) the biLM runs on."""

    def __init__(self, bilm):
        self.rows = 0
        inner = bilm.forward_indexed

        def counted(table, index, *args, **kwargs):
            self.rows += int(index.shape[0])
            return inner(table, index, *args, **kwargs)

        bilm.forward_indexed = counted

    def take(self) -> int:
        rows, self.rows = self.rows, 0
        return rows


def scores(nlp, examples) -> dict:
    return {k: v for k, v in nlp.evaluate(examples).items() if k != "speed"}


def train(nlp, examples, steps, optimizer=None):
    optimizer = optimizer or Adam(0.01)
    losses = []
    for _ in range(steps):
        step = {}
        nlp.update(examples, sgd=optimizer, losses=step)
        losses.append(step["tagger"])
    return losses


def test_evaluation_during_frozen_training_does_not_rerun_the_bilm(tiny_model, tmp_path):
    nlp, train_egs, dev, calls = build(tiny_model)
    assert calls.take() == len(TRAIN)  # initialize filled the cache with the training sentences
    train(nlp, train_egs, 4)
    assert calls.take() == 0  # every epoch comes from the cache
    first = scores(nlp, dev)
    assert calls.take() == len(DEV)  # the dev sentences run once...
    second = scores(nlp, dev)
    assert calls.take() == 0  # ...and never again while the biLM is frozen
    assert second == first
    train(nlp, train_egs, 1)
    assert nlp.evaluate(dev)["tag_acc"] is not None and calls.take() == 0
    # A loaded copy (what `spacy evaluate` runs) runs the biLM and gives the same scores.
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    calls = Calls(loaded.get_pipe("elmo").bilm)
    assert scores(loaded, dev) == scores(nlp, dev)
    assert calls.take() == len(DEV)
    loaded.evaluate(dev)
    assert calls.take() == len(DEV)  # not trained in this process: prediction stores nothing


def test_clear_cache_frees_it_and_stops_serving(tiny_model):
    nlp, train_egs, dev, calls = build(tiny_model)
    train(nlp, train_egs, 1)
    before = scores(nlp, dev)
    calls.take()
    nlp.get_pipe("elmo").clear_cache()
    for _ in range(2):
        assert scores(nlp, dev) == before and calls.take() == len(DEV)
    train(nlp, train_egs, 1)  # frozen training again: cached from here on
    assert calls.take() == len(TRAIN)
    scores(nlp, dev)
    assert calls.take() == len(DEV)
    scores(nlp, dev)
    assert calls.take() == 0


def test_warm_up_stops_when_full_and_training_computes_the_rest(tiny_model):
    probe = LayersCache(1.0, "float32")
    probe.store(("I", "like", "green", "eggs"), numpy.zeros((3, 4, 32), dtype="float32"))
    nlp, train_egs, dev, calls = build(tiny_model, cache_mb=1.3 * probe.n_bytes / 2 ** 20)  # room for one
    assert calls.take() == len(TRAIN)  # one call of all three sentences; one of them fits
    train(nlp, train_egs, 2)
    assert calls.take() == 2 * (len(TRAIN) - 1)  # the other two run in every epoch


def test_no_warm_up_or_caching_without_frozen_listeners(tiny_model):
    nlp, train_egs, dev, calls = build(tiny_model, grad_factor=0.5)
    assert calls.take() == 0  # fine-tuning ahead: initialize runs no biLM
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model))
    calls = Calls(nlp.get_pipe("elmo").bilm)
    nlp.initialize(lambda: train_egs)
    assert calls.take() == 0
    for _ in range(2):  # no training in this process: prediction stores nothing
        list(nlp.pipe(t for t, _ in DEV))
        assert calls.take() == len(DEV)


def test_outputs_identical_with_and_without_cache(tiny_model):
    runs = {}
    for cache_mb in (0, 64):
        nlp, train_egs, dev, _ = build(tiny_model, cache_mb=cache_mb)
        losses = train(nlp, train_egs, 6)
        docs = [nlp(t) for t, _ in TRAIN + DEV]  # training and dev sentences, twice
        docs += [nlp(t) for t, _ in TRAIN + DEV]
        runs[cache_mb] = (losses, [d._.elmo.layers for d in docs], [[t.tag_ for t in d] for d in docs])
    (loss0, layers0, tags0), (loss1, layers1, tags1) = runs[0], runs[64]
    assert loss0 == loss1 and tags0 == tags1
    for a, b in zip(layers0, layers1):
        numpy.testing.assert_array_equal(a, b)


def test_float16_entries_round_hits_and_misses_alike(tiny_model):
    exact, train_egs, _, _ = build(tiny_model, cache_mb=0)
    half, _, _, _ = build(tiny_model, cache_dtype="float16")
    train(half, train_egs, 1)  # frozen training: the cache serves from here on
    for text in [t for t, _ in TRAIN + DEV] * 2:  # seen in training, new, then all again as hits
        ref = exact(text)._.elmo.layers
        numpy.testing.assert_array_equal(half(text)._.elmo.layers, ref.astype("float16").astype("float32"))


def test_fine_tuning_clears_the_cache_and_predicts_with_the_new_weights(tiny_model):
    nlp, train_egs, dev, calls = build(tiny_model)
    bilm = nlp.get_pipe("elmo").bilm
    optimizer = Adam(0.01)
    train(nlp, train_egs, 2, optimizer)
    nlp.evaluate(dev)
    calls.take()
    nlp.get_pipe("tagger").model.get_ref("tok2vec").get_ref("listener").attrs["grad_factor"] = 1.0
    train(nlp, train_egs, 2, optimizer)  # fine-tuning: the weights change
    assert calls.take() == 2 * len(TRAIN)
    for _ in range(2):
        doc = nlp(DEV[0][0])
        assert calls.take() == 1  # the cached layers are gone and prediction stores nothing
    fresh = type(bilm).from_state_dict(bilm.options, {k: v.clone() for k, v in bilm.state_dict().items()})
    (expected,) = fresh.embed_sentences([[t.text for t in doc]])
    numpy.testing.assert_array_equal(doc._.elmo.layers, expected)


def test_budget_is_respected():
    budget_mb = 0.25
    cache = LayersCache(budget_mb, "float16")
    rng = numpy.random.default_rng(0)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = 0
        for i in range(400):
            n = int(rng.integers(1, 40))
            key = tuple(f"w{i}_{j}" for j in range(n))
            value = rng.standard_normal((3, n, 32), dtype=numpy.float32)
            served = cache.store(key, value)
            numpy.testing.assert_array_equal(served, value.astype("float16").astype("float32"))
            kept += cache.get(key) is not None
            del key, value, served
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < kept < 400 and len(cache) == kept
    assert cache.n_bytes <= budget_mb * 2 ** 20
    assert held <= budget_mb * 2 ** 20  # what the process really holds for it, keys included
    assert held >= 0.8 * budget_mb * 2 ** 20  # and it was filled, not left empty
    assert cache.get(("never", "stored")) is None


def test_cache_settings_are_checked(tiny_model):
    with pytest.raises(ValueError, match=r"\[spacy_elmo.ElmoBiLM.v1\] cache_dtype must be one of"):
        build(tiny_model, cache_dtype="int8")
    with pytest.raises(ValueError, match=r"\[spacy_elmo.ElmoBiLM.v1\] cache_mb must be a finite number >= 0"):
        build(tiny_model, cache_mb=-1)
    # what a config file can still pass through spaCy's validation: nan, inf, a quoted number
    for bad in (float("nan"), float("inf"), "1024"):
        with pytest.raises(ValueError, match=r"cache_mb must be a finite number >= 0 \(MB\), got "):
            LayersCache(bad, "float32")
