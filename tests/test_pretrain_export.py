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
