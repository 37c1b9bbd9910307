"""Write AllenNLP's own outputs for tests/test_allennlp*.py (run once, with AllenNLP 2.10.1).

    bash ../shared/bench/allennlp-anchor/setup.sh ~/.cache/elmo-anchor/venv
    ~/.cache/elmo-anchor/venv/bin/python tests/data/allennlp/make_reference.py \
        --fixture ../shared/fixtures/elmo-reference --out tests/data/allennlp

Needs only AllenNLP (``allennlp.modules.elmo``), torch, numpy and h5py; it imports nothing of
spacy_elmo. It writes into ``--out``:

- ``random/options.json``, ``random/weights.hdf5``: a random model of small shapes (numpy seed 7;
  tanh char CNN, one highway, 2 layers of 32 cells, projection 12), in the bilm-tf layout;
- ``inputs.json``: every input below (sentences, mix parameters, vocabulary, word ids, the call
  sequence of the stateful case, the tokens of ``batch_to_ids``);
- ``reference.npz``: ``ids`` (AllenNLP's ``batch_to_ids`` of the tokens), and for each model
  (``tf``: the bilm-tf fixture, ``random``) and case ``{model}/{case}/rep{k}`` and
  ``{model}/{case}/mask``; the embedder's ``{model}/embed_sentence``,
  ``{model}/embed_batch/{i}``, ``{model}/embed_sentences/{i}``, ``{model}/embedder_stateful/{call}``;
- ``{model}_embed_file_all.hdf5`` and ``{model}_embed_file_top_keys.hdf5``: ``embed_file``'s output.

Every case but ``stateful`` and ``embedder_stateful`` resets the LSTM states before each call
(AllenNLP's carried state is its default; ours is stateless). ``stateful`` is AllenNLP's default
over a call sequence; ``embedder_stateful`` embeds the same sentence twice. Dropout is 0.
``ElmoEmbedder`` is AllenNLP 0.9's class (``allennlp/commands/elmo.py``, removed in 1.0), written
out below over 2.10.1's ``_ElmoBiLm``.
"""
import argparse
import io
import json
import os
import shutil

import h5py
import numpy
import torch
from allennlp.common.util import lazy_groups_of
from allennlp.modules.elmo import Elmo, _ElmoBiLm, batch_to_ids
from allennlp.nn.util import remove_sentence_boundaries

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["A", "dog", "barked"],
    [],
    ["Ünïcödé", "日本語", "😀", "x" * 60, "<S>"],
]
MIXES = {"scalar_mix_0.gamma": [0.7], "scalar_mix_0.scalar_parameters.0": [0.3],
         "scalar_mix_0.scalar_parameters.1": [-0.2], "scalar_mix_0.scalar_parameters.2": [0.9],
         "scalar_mix_1.gamma": [1.6], "scalar_mix_1.scalar_parameters.0": [-0.5],
         "scalar_mix_1.scalar_parameters.1": [0.4], "scalar_mix_1.scalar_parameters.2": [0.1]}
FIXED_MIX = [0.2, -0.5, 1.0]
STATEFUL_CALLS = [[0, 1, 2, 3], [0, 1, 2, 3], [0, 1], [3, 0, 1, 2, 0]]  # rows of SENTENCES per call
IDS_TOKENS = [["<S>", "</S>", "<s>", "", " ", "x" * 47 + "é", "é" * 30, "😀🎉", "日本語"], ["</S>"], []]
EMBED_SENTENCES = [["Hello", "world", "!"], ["One"], ["The", "cat", "sat", "on", "the", "mat"],
                   ["Another", "one"], ["Hello", "world", "!"]]
FILE_LINES = ["The cat sat .", "  A dog  barked ", "Hello world !", "The cat sat ."]

RANDOM_OPTIONS = {
    "lstm": {"cell_clip": 3, "use_skip_connections": True, "n_layers": 2, "proj_clip": 3,
             "projection_dim": 12, "dim": 32},
    "char_cnn": {"embedding": {"dim": 8}, "filters": [[1, 8], [2, 8], [3, 16], [4, 16]], "n_highway": 1,
                 "n_characters": 262, "max_characters_per_token": 50, "activation": "tanh"},
}


def write_random_model(directory: str, seed: int = 7, std: float = 0.3) -> None:
    """options.json + weights.hdf5 of RANDOM_OPTIONS in the bilm-tf layout, N(0, std^2) values."""
    rng = numpy.random.default_rng(seed)
    c, lstm = RANDOM_OPTIONS["char_cnn"], RANDOM_OPTIONS["lstm"]
    d, n_filters = c["embedding"]["dim"], sum(n for _, n in c["filters"])
    P, C = lstm["projection_dim"], lstm["dim"]
    shapes = {"char_embed": (c["n_characters"] - 1, d), "CNN_proj/W_proj": (n_filters, P), "CNN_proj/b_proj": (P,)}
    for i, (width, num) in enumerate(c["filters"]):
        shapes[f"CNN/W_cnn_{i}"], shapes[f"CNN/b_cnn_{i}"] = (1, width, d, num), (num,)
    for k in range(c["n_highway"]):
        for part in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{part}"], shapes[f"CNN_high_{k}/b_{part}"] = (n_filters, n_filters), (n_filters,)
    for direction in range(2):
        for layer in range(lstm["n_layers"]):
            prefix = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            shapes[f"{prefix}/W_0"], shapes[f"{prefix}/B"], shapes[f"{prefix}/W_P_0"] = (2 * P, 4 * C), (4 * C,), (C, P)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "options.json"), "w", encoding="utf-8") as f:
        json.dump(RANDOM_OPTIONS, f, indent=2)
    with h5py.File(os.path.join(directory, "weights.hdf5"), "w") as f:
        for name in sorted(shapes):
            f.create_dataset(name, data=(rng.standard_normal(shapes[name]) * std).astype(numpy.float32))


class ElmoEmbedder:
    """AllenNLP 0.9's ElmoEmbedder (allennlp/commands/elmo.py), over 2.10.1's _ElmoBiLm; ``reset``
    clears the LSTM state before every batch (our default: stateless)."""

    def __init__(self, options_file, weight_file, reset=True):
        self.elmo_bilm, self.reset = _ElmoBiLm(options_file, weight_file), reset

    def batch_to_embeddings(self, batch):
        if self.reset:
            self.elmo_bilm._elmo_lstm.reset_states()
        bilm_output = self.elmo_bilm(batch_to_ids(batch))
        without = [remove_sentence_boundaries(layer, bilm_output["mask"]) for layer in bilm_output["activations"]]
        return torch.cat([ele[0].unsqueeze(1) for ele in without], dim=1), without[0][1]

    def embed_sentence(self, sentence):
        return self.embed_batch([sentence])[0]

    def embed_batch(self, batch):
        if batch == [[]]:
            return [numpy.zeros((3, 0, 1024))]
        out = []
        embeddings, mask = self.batch_to_embeddings(batch)
        for i in range(len(batch)):
            length = int(mask[i, :].sum())
            empty = length == 0
            out.append(numpy.zeros((3, 0, 1024)) if empty else embeddings[i, :, :length, :].detach().cpu().numpy())
        return out

    def embed_sentences(self, sentences, batch_size=64):
        for batch in lazy_groups_of(iter(sentences), batch_size):
            yield from self.embed_batch(batch)

    def embed_file(self, input_file, output_file_path, output_format="all", batch_size=64,
                   forget_sentences=False, use_sentence_keys=False):
        sentences = [line.strip() for line in input_file]
        blank_lines = [i for (i, line) in enumerate(sentences) if line == ""]
        if blank_lines:
            raise ValueError(f"Your input file contains empty lines at indexes {blank_lines}. Please remove them.")
        split_sentences = [sentence.split() for sentence in sentences]
        if use_sentence_keys:
            embedded_sentences = zip(sentences, self.embed_sentences(split_sentences, batch_size))
        else:
            embedded_sentences = ((str(i), x) for i, x in enumerate(self.embed_sentences(split_sentences, batch_size)))
        sentence_to_index = {}
        with h5py.File(output_file_path, "w") as fout:
            for key, embeddings in embedded_sentences:
                if use_sentence_keys and key in fout.keys():
                    raise ValueError(f"Key already exists in {output_file_path}.")
                if not forget_sentences and not use_sentence_keys:
                    sentence_to_index[sentences[int(key)]] = key
                output = {"all": embeddings, "top": embeddings[-1],
                          "average": numpy.average(embeddings, axis=0)}[output_format]
                fout.create_dataset(str(key), output.shape, dtype="float32", data=output)
            if not forget_sentences and not use_sentence_keys:
                dataset = fout.create_dataset("sentence_to_index", (1,), dtype=h5py.special_dtype(vlen=str))
                dataset[0] = json.dumps(sentence_to_index)
        input_file.close()


def elmo(files, n_reps=1, mixes=True, **kw):
    model = Elmo(*files, n_reps, dropout=0.0, **kw)
    if mixes:
        mine = {k: torch.tensor(v) for k, v in MIXES.items() if int(k.split(".")[0][len("scalar_mix_"):]) < n_reps}
        assert model.load_state_dict(mine, strict=False).unexpected_keys == []
    return model


def run(model, ids, reset=True, **kw):
    if reset:
        model._elmo_lstm._elmo_lstm.reset_states()
    with torch.no_grad():
        out = model(ids, **kw)
    return out


def store(out, arrays, key):
    for k, rep in enumerate(out["elmo_representations"]):
        arrays[f"{key}/rep{k}"] = rep.numpy()
    arrays[f"{key}/mask"] = out["mask"].numpy()


def vocabulary():
    """(vocab_to_cache, word ids of SENTENCES, the same with one id past the vocabulary)."""
    vocab = ["@@PADDING@@"] + sorted({t for s in SENTENCES for t in s})
    T = max(len(s) for s in SENTENCES)
    ids = [[vocab.index(t) for t in s] + [0] * (T - len(s)) for s in SENTENCES]
    outside = [row[:] for row in ids]
    outside[0][1] = len(vocab)
    return vocab, ids, outside


def elmo_cases(files, arrays, prefix):
    ids = batch_to_ids(SENTENCES)
    store(run(elmo(files, 2), ids), arrays, f"{prefix}/two")
    store(run(elmo(files, 1, do_layer_norm=True), ids), arrays, f"{prefix}/layer_norm")
    store(run(elmo(files, 2, keep_sentence_boundaries=True), ids), arrays, f"{prefix}/keep")
    store(run(elmo(files, 1, do_layer_norm=True, keep_sentence_boundaries=True), ids), arrays,
          f"{prefix}/keep_layer_norm")
    fixed = elmo(files, 1, mixes=False, scalar_mix_parameters=FIXED_MIX)
    assert not any(p.requires_grad for p in fixed.parameters())
    store(run(fixed, ids), arrays, f"{prefix}/fixed")
    vocab, word_ids, outside = vocabulary()
    cached = elmo(files, 1, vocab_to_cache=vocab)
    store(run(cached, ids, word_inputs=torch.tensor(word_ids)), arrays, f"{prefix}/cache")
    store(run(cached, ids, word_inputs=torch.tensor(outside)), arrays, f"{prefix}/cache_fallback")
    four_d = ids.view(2, 2, *ids.shape[1:])
    store(run(elmo(files, 1), four_d), arrays, f"{prefix}/four_d")
    store(run(cached, four_d, word_inputs=torch.tensor(word_ids).view(2, 2, -1)), arrays, f"{prefix}/four_d_cache")
    stateful = elmo(files, 1)
    for call, rows in enumerate(STATEFUL_CALLS):
        store(run(stateful, batch_to_ids([SENTENCES[r] for r in rows]), reset=False), arrays,
              f"{prefix}/stateful/{call}")


def embedder_cases(files, arrays, prefix, out_dir):
    embedder = ElmoEmbedder(*files)
    with torch.no_grad():
        arrays[f"{prefix}/embed_sentence"] = embedder.embed_sentence(EMBED_SENTENCES[2])
        for i, x in enumerate(embedder.embed_batch(EMBED_SENTENCES[:3])):
            arrays[f"{prefix}/embed_batch/{i}"] = x
        for i, x in enumerate(embedder.embed_sentences(EMBED_SENTENCES, batch_size=2)):
            arrays[f"{prefix}/embed_sentences/{i}"] = x
        text = "\n".join(FILE_LINES) + "\n"
        embedder.embed_file(io.StringIO(text), os.path.join(out_dir, f"{prefix}_embed_file_all.hdf5"))
        text = "\n".join(FILE_LINES[:3]) + "\n"  # sentence keys: no repeated line
        embedder.embed_file(io.StringIO(text), os.path.join(out_dir, f"{prefix}_embed_file_top_keys.hdf5"),
                            output_format="top", batch_size=3, use_sentence_keys=True)
        stateful = ElmoEmbedder(*files, reset=False)
        for call in range(2):
            arrays[f"{prefix}/embedder_stateful/{call}"] = stateful.embed_sentence(EMBED_SENTENCES[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture", required=True, help="the bilm-tf reference model folder")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    write_random_model(os.path.join(a.out, "random"))
    models = {"tf": (os.path.join(a.fixture, "options.json"), os.path.join(a.fixture, "lm_weights.hdf5")),
              "random": (os.path.join(a.out, "random", "options.json"), os.path.join(a.out, "random", "weights.hdf5"))}
    arrays = {"ids": batch_to_ids(IDS_TOKENS).numpy()}
    for prefix, files in models.items():
        elmo_cases(files, arrays, prefix)
        embedder_cases(files, arrays, prefix, a.out)
    numpy.savez_compressed(os.path.join(a.out, "reference.npz"), **arrays)
    vocab, word_ids, outside = vocabulary()
    from allennlp.version import VERSION

    inputs = {"allennlp": VERSION, "torch": torch.__version__, "sentences": SENTENCES, "mixes": MIXES,
              "fixed_mix": FIXED_MIX, "vocab_to_cache": vocab, "word_ids": word_ids, "word_ids_outside": outside,
              "stateful_calls": STATEFUL_CALLS, "ids_tokens": IDS_TOKENS, "embed_sentences": EMBED_SENTENCES,
              "file_lines": FILE_LINES}
    with open(os.path.join(a.out, "inputs.json"), "w", encoding="utf-8") as f:
        json.dump(inputs, f, ensure_ascii=False, indent=1)
    shutil.rmtree(os.path.join(a.out, "__pycache__"), ignore_errors=True)


if __name__ == "__main__":
    main()
