"""Parity with the TensorFlow reference (bilm-tf outputs from AllenNLP's test fixtures)."""
import json
import os

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, batch_to_ids, lstm_paths, onednn
from spacy_elmo.bilm.chars import BOS_IDS, EOS_IDS, token_to_char_ids


@pytest.fixture(scope="module")
def sentences(fixture_dir):
    with open(os.path.join(fixture_dir, "sentences.json")) as f:
        return [[s.split() for s in group] for group in json.load(f)]


@pytest.fixture(scope="module")
def expected_top(fixture_dir):
    """expected[k][i]: top layer (n_tokens, 32) of sentence i of group k = [forward; backward]."""
    out = []
    for k in range(3):
        with h5py.File(os.path.join(fixture_dir, f"lm_embeddings_{k}.hdf5"), "r") as f:
            out.append([numpy.concatenate([f[str(i)][0], f[str(i)][1]], axis=-1) for i in range(10)])
    return out


def load(fixture_dir, **kw):
    return BiLM.from_files(os.path.join(fixture_dir, "options.json"), os.path.join(fixture_dir, "lm_weights.hdf5"),
                           **kw)


def check_batch(out, batch, expected_rows):
    for k, (sent, ref) in enumerate(zip(batch, expected_rows)):
        got = out.layers[-1, k, : len(sent)].detach().numpy()
        assert got.shape == ref.shape
        assert numpy.allclose(got, ref, atol=1e-6), float(numpy.abs(got - ref).max())


@pytest.fixture(params=["onednn", "bmm", "bmm-chunked", "onednn-chunked", "autograd"])
def lstm_path(request, monkeypatch):
    """Each LSTM implementation: oneDNN (default on CPU), plain bmm, step-chunked input projection, autograd."""
    if "bmm" in request.param:
        monkeypatch.setattr(onednn, "_ENABLED", False)
    if "chunked" in request.param:
        monkeypatch.setattr(lstm_paths, "WORKSPACE_FLOATS", 2 * 4 * 64 * 7)  # 7 rows per input-projection chunk
        monkeypatch.setattr(lstm_paths, "ONEDNN_CHUNK_FLOATS", 2 * 4 * 64 * 7)
    return request.param


def test_stateful_all_batches(fixture_dir, sentences, expected_top, lstm_path):
    """Batch i = [sentences[0][i], sentences[1][i], sentences[2][i]], state carried row to row."""
    bilm = load(fixture_dir, stateful=True)
    train_path = lstm_path == "autograd"
    if train_path:
        bilm.requires_grad_(True)
    for i in range(10):
        batch = [sentences[k][i] for k in range(3)]
        with torch.set_grad_enabled(train_path):
            out = bilm(batch_to_ids(batch))
        check_batch(out, batch, [expected_top[k][i] for k in range(3)])


def test_stateless_batch0_and_reset(fixture_dir, sentences, expected_top):
    bilm = load(fixture_dir)
    batch = [sentences[k][0] for k in range(3)]
    with torch.inference_mode():
        check_batch(bilm(batch_to_ids(batch)), batch, [expected_top[k][0] for k in range(3)])
        # stateless: a second call gives the same result
        check_batch(bilm(batch_to_ids(batch)), batch, [expected_top[k][0] for k in range(3)])
    stateful = load(fixture_dir, stateful=True)
    with torch.inference_mode():
        stateful(batch_to_ids(batch))
        stateful.reset_states()
        check_batch(stateful(batch_to_ids(batch)), batch, [expected_top[k][0] for k in range(3)])


def test_char_cnn_matches_token_embeddings(fixture_dir):
    """Row i of elmo_token_embeddings.hdf5 is vocab_test.txt line i (<S>/</S> are the boundary ids)."""
    bilm = load(fixture_dir)
    with open(os.path.join(fixture_dir, "vocab_test.txt"), encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    special = {"<S>": BOS_IDS, "</S>": EOS_IDS}
    ids = numpy.stack([special[t] if t in special else token_to_char_ids(t) for t in vocab])
    with h5py.File(os.path.join(fixture_dir, "elmo_token_embeddings.hdf5"), "r") as f:
        expected = f["embedding"][()]
    assert expected.shape[0] == len(vocab)
    with torch.inference_mode():
        got = bilm.embed_tokens(torch.from_numpy(ids)).numpy()
    assert numpy.allclose(got, expected, atol=1e-6), float(numpy.abs(got - expected).max())
    # layer 0 of the full model is [x; x] of the same vectors
    with torch.inference_mode():
        out = bilm(batch_to_ids([vocab[5:9]]))
    assert numpy.allclose(out.layers[0, 0, :, :16].numpy(), expected[5:9], atol=1e-6)
    assert torch.equal(out.layers[0, 0, :, :16], out.layers[0, 0, :, 16:])
