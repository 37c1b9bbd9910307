"""BiLM.forward(..., sentence_boundaries=True): the outputs at <S> / </S> too (AllenNLP's
_ElmoBiLm layout), the same values elsewhere, in every input form and in stateful mode."""
import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids

SENTENCES = [["The", "cat", "sat", "."], [], ["A", "dog"]]


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)


def test_layout_and_values(bilm):
    x = batch_to_ids(SENTENCES)
    plain, kept = bilm(x), bilm(x, sentence_boundaries=True)
    L1, B, T, D = plain.layers.shape
    assert kept.layers.shape == (L1, B, T + 2, D)
    assert kept.mask.tolist() == [[True] * 6, [True, True] + [False] * 4, [True] * 4 + [False] * 2]
    for b, sentence in enumerate(SENTENCES):
        n = len(sentence)
        assert torch.equal(kept.layers[:, b, 1:n + 1], plain.layers[:, b, :n])
        assert bool((kept.layers[:, b, n + 2:] == 0).all())
    P = D // 2
    bos, eos = bilm.boundary_vectors()
    for b, sentence in enumerate(SENTENCES):
        n = len(sentence)
        assert torch.allclose(kept.layers[0, b, 0], torch.cat([bos, bos]), atol=1e-6)
        assert torch.allclose(kept.layers[0, b, n + 1], torch.cat([eos, eos]), atol=1e-6)
    # the empty sentence: the LSTMs read <S> </S>, so its boundary outputs are not zero
    assert float(kept.layers[1:, 1, :2, :P].abs().sum()) > 0 and float(kept.layers[1:, 1, :2, P:].abs().sum()) > 0


def test_token_vectors_and_indexed_inputs_agree(bilm):
    x = batch_to_ids(SENTENCES)
    kept = bilm(x, sentence_boundaries=True)
    mask = (x > 0).any(-1)
    vectors = torch.zeros(*mask.shape, bilm.projection_dim)
    vectors[mask] = bilm.embed_tokens(x[mask])
    by_vectors = bilm(token_vectors=vectors, mask=mask, sentence_boundaries=True)
    assert torch.allclose(by_vectors.layers, kept.layers, atol=1e-6) and torch.equal(by_vectors.mask, kept.mask)


def test_stateful_mode_carries_the_same_state_either_way(tiny_model):
    plain = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, stateful=True)
    kept = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, stateful=True)
    x = batch_to_ids(SENTENCES)
    for _ in range(2):
        a, b = plain(x), kept(x, sentence_boundaries=True)
    assert torch.equal(b.layers[:, 0, 1:5], a.layers[:, 0, :4])
