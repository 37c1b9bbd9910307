"""Continued pretraining ([training] init_from) from a bilm-tf model: the TF reference fixture
(cell and projection clipping 3, skip connections, 2 highway layers, no softmax)."""
import json
import os

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoConfigError
from spacy_elmo.pretrain.batching import make_batch
from spacy_elmo.pretrain.train import pretrain

from helpers import write_corpus
from test_pretrain import SENTENCES

SETTINGS = {
    "vocab.size": 100, "vocab.min_count": 1, "softmax.cutoffs": [20], "softmax.div_value": 2.0,
    "model.dropout": 0.0, "training.tokens_per_batch": 200, "training.learning_rate": 0.01,
    "training.warmup_steps": 0, "training.eval_every_steps": 0, "training.checkpoint_minutes": 1000,
    "training.threads": 1, "training.precision": "float32", "training.compile": False,
    "corpus.block_lines": 10, "corpus.heldout_every": 5,
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "text.txt.gz", SENTENCES, 60)


def _run(out, corpus, fixture_dir, steps, stop_after=None, **extra):
    overrides = {**SETTINGS, "corpus.paths": [corpus], "training.init_from": fixture_dir,
                 "training.max_steps": steps, **extra}
    return pretrain(str(out), overrides=overrides, progress=False, stop_after=stop_after)


def _reference_top_layers(fixture_dir):
    """TF's top layer (n, 2P) of the first sentence of each of the three lists (batch 0: stateless)."""
    with open(os.path.join(fixture_dir, "sentences.json"), encoding="utf-8") as f:
        lists = json.load(f)
    out = []
    for k, sentences in enumerate(lists):
        with h5py.File(os.path.join(fixture_dir, f"lm_embeddings_{k}.hdf5"), "r") as f:
            fwd_bwd = f["0"][...]  # (2, n, P)
        out.append((sentences[0].split(), numpy.concatenate([fwd_bwd[0], fwd_bwd[1]], -1)))
    return out


def test_the_written_model_before_training_is_the_source(corpus, fixture_dir, tmp_path):
    """0 steps: the biLM the trainer writes reproduces TensorFlow's outputs of the fixture (atol
    1e-6), keeps its options (clipping, skip connections, highway layers), and has a new LM head
    for the corpus's vocabulary."""
    meta = _run(tmp_path / "run", corpus, fixture_dir, steps=5, stop_after=0)
    assert meta["training"]["steps"] == 0
    model = tmp_path / "run" / "model"
    bilm = BiLM.from_pretrained(str(model))
    source = json.loads((model / "options.json").read_text())
    lstm = source["lstm"]
    assert (lstm["cell_clip"], lstm["proj_clip"], lstm["use_skip_connections"]) == (3, 3, True)
    assert source["char_cnn"]["n_highway"] == 2 and lstm["projection_dim"] == 16
    for tokens, want in _reference_top_layers(fixture_dir):
        got = bilm.embed_sentences([tokens])[0][-1]
        numpy.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    vocab = (model / "vocab.txt").read_text().split("\n")
    assert vocab[:3] == ["<S>", "</S>", "<UNK>"] and "bank" in vocab
    config = (tmp_path / "run" / "config.cfg").read_text()
    assert "n_highway = 2" in config and "lstm_dim = 64" in config  # the run's shape is the source's


def test_training_from_the_fixture_learns_and_round_trips(corpus, fixture_dir, tmp_path):
    """A few steps from the fixture: finite losses falling on a repeated batch; the written model
    loads with BiLM.from_pretrained and gives the trained module's outputs."""
    from spacy_elmo.pretrain import train as train_mod

    meta = _run(tmp_path / "run", corpus, fixture_dir, steps=3)
    assert meta["training"]["steps"] == 3
    lm, words, corpus_data, _ = train_mod._model_and_corpus(
        train_mod.load_config(tmp_path / "run" / "config.cfg"), tmp_path / "run", False, False,
        train_mod.distributed.Ranks(0, 1), set())
    batch = make_batch(corpus_data["train"], numpy.arange(8), corpus_data["char_table"], corpus_data["type_to_word"])
    optimizer = torch.optim.Adam(lm.parameters(), lr=0.01)
    lm.train()
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = lm(**batch)["loss"]
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert all(numpy.isfinite(losses)) and losses[-1] < losses[0] - 0.1, losses
    lm.eval()
    written = BiLM.from_pretrained(str(tmp_path / "run" / "model"))
    trained = BiLM.from_state_dict(lm.bilm.options, {k: v.detach() for k, v in lm.bilm.state_dict().items()})
    assert written.options["lstm"]["cell_clip"] == 3
    before = written.embed_sentences([s.split() for s in SENTENCES])
    after = trained.embed_sentences([s.split() for s in SENTENCES])
    assert max(float(numpy.abs(a - b).max()) for a, b in zip(before, after)) > 1e-3  # 4 more steps moved it
    from spacy_elmo.pretrain.export import lm_layers, write_model

    write_model(lm, words, str(tmp_path / "again"), {})
    again = BiLM.from_pretrained(str(tmp_path / "again")).embed_sentences([s.split() for s in SENTENCES])
    for a, b, sentence in zip(after, again, SENTENCES):
        numpy.testing.assert_array_equal(a, b)
        # the trained module's LSTM training path (float32, its own order of sums) gives the same
        # layers within float32 rounding
        numpy.testing.assert_allclose(lm_layers(lm, sentence.split()).numpy(), b, atol=1e-6, rtol=1e-6)


def test_a_model_value_that_contradicts_the_source_is_one_line(corpus, fixture_dir, tmp_path):
    with pytest.raises(ElmoConfigError) as err:
        _run(tmp_path / "run", corpus, fixture_dir, steps=1, **{"model.n_highway": 1})
    message = str(err.value)
    assert "\n" not in message
    assert "[model] n_highway = 1 contradicts [training] init_from" in message and "n_highway is 2" in message
    assert not (tmp_path / "run" / "corpus").exists()  # refused before the corpus was read


def test_init_from_takes_model_names(corpus, fixture_dir, tmp_path, monkeypatch):
    """A catalog name resolves as BiLM.from_pretrained resolves it: downloaded into the cache, it
    trains (here the fixture's files stand in for elmo-small's, which cannot be downloaded in
    tests); not downloaded, the error gives the download command before the corpus is read."""
    import shutil

    from spacy_elmo.bilm import integrity

    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match=r"\[training\] init_from = 'elmo-small': .*download elmo-small"):
        _run(tmp_path / "missing", corpus, "elmo-small", steps=1)
    cached = tmp_path / "cache" / "elmo-small"
    cached.mkdir(parents=True)
    shutil.copy(os.path.join(fixture_dir, "options.json"), cached / "options.json")
    shutil.copy(os.path.join(fixture_dir, "lm_weights.hdf5"), cached / "weights.hdf5")
    integrity.record(str(cached))
    meta = _run(tmp_path / "run", corpus, "elmo-small", steps=2)
    assert meta["training"]["steps"] == 2 and meta["options"]["lstm"]["cell_clip"] == 3
    assert BiLM.from_pretrained(str(tmp_path / "run" / "model")).options["char_cnn"]["n_highway"] == 2


def test_init_from_a_converted_elmoformanylangs_model(corpus, tmp_path):
    """An efml-* model (its own character and word vocabulary, <bos>/<eos> boundaries) trains on
    and keeps its vocabulary: the written model loads and embeds as the trained module does."""
    from pathlib import Path

    from spacy_elmo.convert import convert
    from spacy_elmo.pretrain.export import lm_layers, load_model

    data = Path(__file__).resolve().parent / "data" / "efml"
    name = next(p.name for p in sorted(data.iterdir()) if (p / "expected.npz").is_file())
    convert(str(data / name), str(tmp_path / "efml"))
    meta = _run(tmp_path / "run", corpus, str(tmp_path / "efml"), steps=2)
    assert meta["training"]["steps"] == 2
    source = BiLM.from_pretrained(str(tmp_path / "efml"))
    written = BiLM.from_pretrained(str(tmp_path / "run" / "model"))
    assert written.options["vocab"]["chars"] == source.options["vocab"]["chars"]
    lm, _ = load_model(str(tmp_path / "run" / "model"))
    tokens = SENTENCES[2].split()
    numpy.testing.assert_allclose(written.embed_sentences([tokens])[0], lm_layers(lm, tokens).numpy(), atol=1e-5)
