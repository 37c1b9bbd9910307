"""Stateless invariance, edge cases, API shapes and options of the biLM (on the tiny random model)."""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMOutput, batch_to_ids


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)


SENTS = [
    "The cat sat on the mat .".split(),
    "Hi".split(),
    "A considerably longer sentence , with several more tokens than the others , to pad the batch .".split(),
    "Short one .".split(),
    "The cat sat on the mat .".split(),
]


def test_output_api(bilm):
    with torch.inference_mode():
        out = bilm(batch_to_ids([["The", "cat", "sat"], ["Hi"]]))
    assert isinstance(out, BiLMOutput)
    assert out.layers.shape == (3, 2, 3, 32) and out.layers.dtype == torch.float32
    assert out.mask.dtype == torch.bool and out.mask.tolist() == [[True] * 3, [True, False, False]]
    assert torch.all(out.layers[:, 1, 1:] == 0)
    assert bilm.num_layers == 2 and bilm.output_dim == 32 and bilm.options["lstm"]["dim"] == 64
    assert not bilm.training


def test_batch_invariance(bilm):
    with torch.inference_mode():
        batched = bilm(batch_to_ids(SENTS)).layers
        for k, sent in enumerate(SENTS):
            alone = bilm(batch_to_ids([sent])).layers[:, 0]
            assert numpy.allclose(alone.numpy(), batched[:, k, : len(sent)].numpy(), atol=1e-5)


def test_embed_sentences_batch_sizes_agree(bilm):
    sents = SENTS + [[]] + [s[::-1] for s in SENTS]
    a = bilm.embed_sentences(sents, batch_size=1)
    b = bilm.embed_sentences(sents, batch_size=64)
    assert len(a) == len(b) == len(sents)
    for x, y, s in zip(a, b, sents):
        assert x.shape == y.shape == (3, len(s), 32) and x.dtype == numpy.float32
        assert numpy.allclose(x, y, atol=1e-5)
    with torch.inference_mode():
        ref = bilm(batch_to_ids(sents[:3])).layers
    assert numpy.allclose(b[2], ref[:, 2].numpy(), atol=1e-5)


def test_forward_with_token_vectors_and_indexed(bilm):
    ids = batch_to_ids(SENTS[:3])
    with torch.inference_mode():
        out = bilm(ids)
        vecs = bilm.embed_tokens(ids.view(-1, 50)).view(*ids.shape[:2], 16)
        out2 = bilm(token_vectors=vecs, mask=out.mask)
    assert torch.allclose(out.layers, out2.layers, atol=1e-6)
    assert torch.equal(out.mask, out2.mask)


def test_empty_inputs(bilm):
    assert bilm.embed_sentences([]) == []
    res = bilm.embed_sentences([[], ["a"], []])
    assert [r.shape for r in res] == [(3, 0, 32), (3, 1, 32), (3, 0, 32)]
    assert bilm.embed_sentences([[], []])[1].shape == (3, 0, 32)
    with torch.inference_mode():
        out = bilm(batch_to_ids([[], []]))
        assert out.layers.shape == (3, 2, 0, 32) and out.mask.shape == (2, 0)
        out = bilm(batch_to_ids([[], ["x", "y"]]))
        assert out.layers.shape == (3, 2, 2, 32) and torch.all(out.layers[:, 0] == 0)


def test_unicode_long_token_long_sentence(bilm):
    long_sentence = [f"w{i % 37}" for i in range(300)]
    sents = [["😀", "猫が座った", "naïve", "🇺🇳🎉"], ["x" * 60, "a" + "é" * 59], long_sentence]
    res = bilm.embed_sentences(sents)
    for r, s in zip(res, sents):
        assert r.shape == (3, len(s), 32)
        assert numpy.isfinite(r).all()
    # a 60-char token is cut to its first 48 bytes
    same = bilm.embed_sentences([["x" * 48], ["x" * 60]])
    assert numpy.array_equal(same[0], same[1])


def test_skip_connections_off(tiny_model):
    on = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    options = dict(on.options, lstm=dict(on.options["lstm"], use_skip_connections=False))
    off = BiLM(options)
    off.load_state_dict(on.state_dict())
    a, b = on.embed_sentences(SENTS[:3]), off.embed_sentences(SENTS[:3])
    for x, y in zip(a, b):
        assert x.shape == y.shape
        assert numpy.array_equal(x[:2], y[:2])  # layer 0 and layer 1 have no residual
        assert not numpy.allclose(x[2], y[2])
        assert numpy.allclose(y[2], x[2] - x[1], atol=1e-5)  # layer 2 input is layer 1's output


def test_no_clipping_and_random_init():
    options = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 3, "cell_clip": None, "proj_clip": 0,
                        "use_skip_connections": True},
               "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 2], [3, 4]], "n_highway": 0,
                            "activation": "tanh"}}
    bilm = BiLM(options)
    assert bilm.lstm.cell_clip is None and bilm.lstm.proj_clip is None
    res = bilm.embed_sentences([["a", "b"], ["c"]])
    assert res[0].shape == (4, 2, 8) and numpy.isfinite(res[0]).all()


def test_stateful_rows_and_batch_size_change(tiny_model):
    bilm = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path, stateful=True)
    fresh = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)
    with torch.inference_mode():
        bilm(batch_to_ids(SENTS[:3]))
        carried = bilm(batch_to_ids([SENTS[3]])).layers  # row 0 continues from row 0
        assert not torch.allclose(carried, fresh(batch_to_ids([SENTS[3]])).layers)
        out = bilm(batch_to_ids(SENTS[:4]))  # row 3 is new: starts from zeros
        alone = fresh(batch_to_ids([SENTS[3]])).layers[:, 0]
        assert torch.allclose(out.layers[:, 3, : len(SENTS[3])], alone, atol=1e-6)


def test_bad_inputs(bilm):
    with pytest.raises(TypeError):
        bilm.embed_sentences(["not tokenised"])
    with pytest.raises(ValueError):
        bilm(torch.zeros(2, 3, 7, dtype=torch.long))
    ids = batch_to_ids([["a", "b"]])
    ids[0, 0] = 0  # padding before a token
    with pytest.raises(ValueError):
        bilm(ids)


def test_copy_pickle_and_weight_changes(bilm):
    """Packed oneDNN weight copies are dropped on copy/pickle and rebuilt when a parameter changes."""
    import copy
    import io

    ids = batch_to_ids(SENTS[:2])
    with torch.no_grad():
        before = bilm(ids).layers
        clone = copy.deepcopy(bilm)
        buf = io.BytesIO()
        torch.save(bilm, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        assert torch.equal(clone(ids).layers, before) and torch.equal(loaded(ids).layers, before)
        clone.lstm.w_state[1].mul_(1.5)
        clone.char_cnn.highways[0].linear.weight.mul_(1.5)
        changed = clone(ids).layers
        fresh = BiLM(clone.options)
        fresh.load_state_dict(clone.state_dict())
        assert not torch.allclose(changed, before)
        assert torch.allclose(changed, fresh(ids).layers, atol=1e-6)


def test_weights_changed_behind_torchs_back(bilm):
    """Writing parameters through a numpy view does not bump version counters: weights_changed() repacks."""
    import copy

    model = copy.deepcopy(bilm)
    ids = batch_to_ids(SENTS[:2])
    with torch.no_grad():
        before = model(ids).layers
        model.lstm.w_state[0].numpy()[...] *= 2.0  # in-place through numpy: invisible to torch
        model.char_cnn.projection.weight.numpy()[...] *= 2.0
        model.weights_changed()
        after = model(ids).layers
        fresh = BiLM(model.options)
        fresh.load_state_dict(model.state_dict())
    assert not torch.allclose(before, after)
    assert torch.allclose(after, fresh(ids).layers, atol=1e-6)
