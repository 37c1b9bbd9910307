"""A trained LM's files: the biLM through BiLM's own writer and reader, the head beside it."""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.pretrain.export import load_model, write_model
from spacy_elmo.pretrain.lm import LanguageModel, model_options

MODEL = {
    "char_dim": 4, "filters": [[1, 8], [2, 8], [3, 16]], "n_highway": 2, "activation": "relu",
    "lstm_dim": 32, "projection_dim": 8, "n_layers": 2, "use_skip_connections": True,
}
SOFTMAX = {"cutoffs": [10], "div_value": 2.0}
SENTENCES = [["The", "river", "bank", "overflowed", "."], ["Hi"], ["日本", "😀", "x" * 60]]


@pytest.mark.parametrize("skip,clip", [(True, None), (False, None), (True, 0.4)])
def test_written_bilm_equals_training_lm(tmp_path, skip, clip):
    torch.manual_seed(0)
    options = model_options(dict(MODEL, use_skip_connections=skip))
    options["lstm"].update(cell_clip=clip, proj_clip=clip)
    lm = LanguageModel.new(options, SOFTMAX, 20)
    with torch.no_grad():  # make the gates non-trivial (and the clipping bite)
        for p in lm.parameters():
            p.mul_(3.0)
    lm.eval()
    write_model(lm, [f"w{i}" for i in range(20)], str(tmp_path), {"test": True})
    bilm = BiLM.from_pretrained(str(tmp_path))
    assert bilm.options["lstm"] == lm.options()["lstm"]
    ours = bilm.embed_sentences(SENTENCES)
    with torch.no_grad():
        expected = lm.bilm.embed_sentences(SENTENCES)
    for got, want, sent in zip(ours, expected, SENTENCES):
        assert got.shape == (3, len(sent), 16)
        numpy.testing.assert_array_equal(got, want)
    # and the whole LM (biLM, head, vocabulary) comes back: the same parameters, bit for bit
    lm2, words = load_model(str(tmp_path))
    assert words == [f"w{i}" for i in range(20)]
    assert lm2.state_dict().keys() == lm.state_dict().keys()
    for key, value in lm.state_dict().items():
        assert torch.equal(value, lm2.state_dict()[key]), key


def test_loss_is_the_two_language_models_nll_over_the_bilm_outputs():
    """LanguageModel's loss, computed on packed rows, equals the definition written over
    BiLM.forward's outputs with the boundaries kept: the forward LM's output at position k of
    <S> t_1..t_n </S> predicts position k + 1, the backward LM's predicts position k - 1."""
    from spacy_elmo.pretrain.batching import make_batch
    from spacy_elmo.pretrain.corpus import Split, type_char_ids

    torch.manual_seed(0)
    options = model_options(MODEL)
    options["lstm"].update(cell_clip=0.5, proj_clip=0.5)
    lm = LanguageModel.new(options, SOFTMAX, 20).eval()
    types = ["<S>", "</S>", "the", "river", "bank", "rose", "."]
    type_to_word = numpy.array([0, 1, 5, 6, 2, 7, 3])  # any map into the 20 words
    sentences = [[2, 3, 4, 5, 6], [4, 6], [5]]
    tokens = numpy.array([t for s in sentences for t in s], dtype=numpy.int32)
    offsets = numpy.cumsum([0] + [len(s) for s in sentences]).astype(numpy.int64)
    batch = make_batch(Split(tokens, offsets), numpy.arange(3), type_char_ids(types), type_to_word)
    with torch.no_grad():
        got = lm(**batch)
        layers = lm.bilm(lm.bilm.batch_to_ids([[types[t] for t in s] for s in sentences]),
                         sentence_boundaries=True).layers[-1]
    P, nll, count = lm.projection_dim, [], 0
    for b, s in enumerate(sentences):
        words = torch.from_numpy(type_to_word[[0, *s, 1]])
        n = len(s)
        log_p = lm.softmax.log_prob(layers[b, : n + 1, :P])  # forward: positions 0..n predict 1..n+1
        nll.append(-log_p[torch.arange(n + 1), words[1:]])
        log_p = lm.softmax.log_prob(layers[b, 1: n + 2, P:])  # backward: positions 1..n+1 predict 0..n
        nll.append(-log_p[torch.arange(n + 1), words[:-1]])
        count += n + 1
    want = torch.cat(nll)
    assert got["fwd_count"] == got["bwd_count"] == count
    torch.testing.assert_close(got["loss"], want.mean(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got["fwd_nll"] + got["bwd_nll"], want.sum(), rtol=1e-6, atol=1e-5)
