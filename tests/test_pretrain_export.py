"""The exported pretraining LM and the inference BiLM compute the same function."""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.pretrain.export import lm_layers, load_model, write_model
from spacy_elmo.pretrain.lm import LanguageModel

MODEL = {
    "char_dim": 4, "filters": [[1, 8], [2, 8], [3, 16]], "n_highway": 2, "activation": "relu",
    "lstm_dim": 32, "projection_dim": 8, "n_layers": 2, "use_skip_connections": True, "dropout": 0.0,
}
SOFTMAX = {"cutoffs": [10], "div_value": 2.0}


def _lm_layers(lm: LanguageModel, tokens):
    """(L + 1, n, 2P) computed with the training modules."""
    return lm_layers(lm, tokens).numpy()


@pytest.mark.parametrize("skip", [True, False])
def test_exported_bilm_equals_training_lm(tmp_path, skip):
    torch.manual_seed(0)
    lm = LanguageModel(dict(MODEL, use_skip_connections=skip), SOFTMAX, 20)
    with torch.no_grad():  # make the gates non-trivial
        for p in lm.parameters():
            p.mul_(3.0)
    lm.eval()
    write_model(lm, [f"w{i}" for i in range(20)], str(tmp_path), {"test": True})
    bilm = BiLM.from_files(tmp_path / "options.json", tmp_path / "weights.hdf5")
    sentences = [["The", "river", "bank", "overflowed", "."], ["Hi"], ["日本", "😀", "x" * 60]]
    ours = bilm.embed_sentences(sentences)
    with torch.no_grad():
        for sent, got in zip(sentences, ours):
            expected = _lm_layers(lm, sent)
            assert got.shape == expected.shape == (3, len(sent), 16)
            numpy.testing.assert_allclose(got, expected, atol=2e-6, rtol=1e-5)
    # and the LM head + vocabulary come back too
    lm2, words = load_model(str(tmp_path))
    assert words == [f"w{i}" for i in range(20)]
    for key, value in lm.softmax.state_dict().items():
        assert torch.equal(value, lm2.softmax.state_dict()[key])
