"""The one batching routine (spacy_elmo.bilm.batching.embed_batches) that BiLM.embed_sentences and
the pipeline's biLM layer share, and BiLM.device."""
import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.batching import embed_batches
from spacy_elmo.errors import ElmoConfigError

from helpers import elmo_config

SENTS = [["The", "cat", "sat", "on", "the", "mat", "."], [], ["Hi"], ["The", "cat", "ran", "."],
         ["A", "very", "long", "sentence", "with", "many", "words", "in", "it", "today", "."], ["Hi"]]


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)


def test_batches_cover_each_sentence_once_longest_first(bilm):
    batches = list(embed_batches(bilm, SENTS, batch_size=2))
    members = [i for b in batches for i in b.members]
    assert sorted(members) == [i for i, s in enumerate(SENTS) if s]  # empty ones are in no batch
    lengths = [n for b in batches for n in b.lengths]
    assert lengths == sorted(lengths, reverse=True) == [len(SENTS[i]) for i in members]
    assert all(len(b.members) <= 2 for b in batches) and len(batches) == 3
    for b in batches:
        assert b.layers.shape == (bilm.num_layers + 1, len(b.members), b.lengths[0], bilm.output_dim)
        assert not b.layers.requires_grad
    assert list(embed_batches(bilm, [])) == [] and list(embed_batches(bilm, [[], []])) == []


def test_split_gives_embed_sentences_results(bilm):
    expected = bilm.embed_sentences(SENTS, batch_size=2)
    got = {}
    for batch in embed_batches(bilm, SENTS, batch_size=2):
        for i, layers in batch.split(batch.layers.numpy()):
            got[i] = layers
    for i, sent in enumerate(SENTS):
        if sent:
            numpy.testing.assert_array_equal(got[i], expected[i])
        else:
            assert expected[i].shape == (bilm.num_layers + 1, 0, bilm.output_dim)
    # Stateless: a sentence's layers do not depend on the rest of the call or on the batch size.
    for i, sent in enumerate(SENTS):
        if sent:
            numpy.testing.assert_array_equal(bilm.embed_sentences([sent], batch_size=1)[0], expected[i])


def test_grad_switch(bilm):
    trainable = BiLM.from_state_dict(bilm.options, {k: v.clone() for k, v in bilm.state_dict().items()})
    (batch,) = embed_batches(trainable, SENTS[:3], grad=True)
    assert batch.layers.requires_grad and all(p.requires_grad for p in trainable.parameters())
    batch.layers.sum().backward()
    assert trainable.lstm.w_state[0].grad is not None and trainable.char_cnn.projection.weight.grad is not None
    for i, layers in batch.split():
        torch.testing.assert_close(layers.detach(), torch.from_numpy(bilm.embed_sentences([SENTS[i]])[0]),
                                   rtol=0, atol=1e-5)


def test_grad_mode_is_set_only_around_the_routines_own_work(bilm):
    before = torch.is_grad_enabled()
    for grad in (False, True):
        for _batch in embed_batches(bilm, SENTS, batch_size=1, grad=grad):
            assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled() == before
    bilm.requires_grad_(False)


def test_bad_input(bilm):
    with pytest.raises(TypeError):
        embed_batches(bilm, "a sentence")
    with pytest.raises(TypeError):
        embed_batches(bilm, [["ok"], "not tokenised"])
    with pytest.raises(TypeError):
        embed_batches(bilm, [["ok", 3]])
    with pytest.raises(ValueError):
        embed_batches(bilm, [["ok"]], batch_size=0)
    with pytest.raises(TypeError):
        bilm.embed_sentences("a sentence")


def test_pipeline_and_embed_sentences_agree_bit_for_bit(tiny_model, bilm):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, batch_size=2))
    docs = [Doc(nlp.vocab, words=s) for s in SENTS]
    expected = bilm.embed_sentences(SENTS, batch_size=2)
    for doc, ref in zip(nlp.pipe(docs), expected):
        numpy.testing.assert_array_equal(doc._.elmo.layers, ref)
    numpy.testing.assert_array_equal(nlp("The cat sat on the mat .")._.elmo.layers, expected[0])


def test_device_property(bilm):
    assert bilm.device == torch.device("cpu") == bilm.lstm.w_state[0].device  # on CUDA: test_gpu_bilm.py


def test_bad_input_is_an_elmo_error_of_the_old_builtin_type(bilm):
    """A str where tokenised sentences are expected is an ElmoTypeError (ElmoError and
    TypeError); a batch size < 1 an ElmoConfigError (ElmoError and ValueError)."""
    from spacy_elmo.errors import ElmoError, ElmoTypeError

    with pytest.raises(ElmoTypeError, match="expected a list of tokenised sentences .*got a str") as err:
        embed_batches(bilm, "a sentence")
    assert isinstance(err.value, ElmoError) and isinstance(err.value, TypeError)
    with pytest.raises(ElmoConfigError, match="batch_size must be >= 1, got 0") as err:
        embed_batches(bilm, [["ok"]], batch_size=0)
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
