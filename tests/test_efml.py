"""ELMoForManyLangs models: conversion, the vocabulary indexer, and exactness against that
package's own outputs (tests/data/efml, written by dev/efml_fixtures.py with elmoformanylangs
0.0.4.post2: its first ``sents2elmo(..., output_layer=-2)`` call, one batch)."""
import json
import os
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.indexer import ByteIndexer, VocabularyIndexer
from spacy_elmo.bilm.options import check_options
from spacy_elmo.convert import convert
from spacy_elmo.convert.efml import find_config, read_dic
from spacy_elmo.errors import ElmoModelFileError

from helpers import TINY_OPTIONS, elmo_config

DATA = Path(__file__).resolve().parent / "data" / "efml"
MODELS = sorted(p.name for p in DATA.iterdir() if (p / "expected.npz").is_file())
SENTENCES = json.loads((DATA / "sentences.json").read_text(encoding="utf-8"))
TOL = 1e-5


def expected(name):
    with numpy.load(DATA / name / "expected.npz") as z:
        return [z[str(i)] for i in range(len(SENTENCES))]


def max_diff(got, want) -> float:
    assert [g.shape for g in got] == [w.shape for w in want]
    return max(float(numpy.abs(g - w).max()) for g, w in zip(got, want))


@pytest.fixture(scope="module", params=MODELS)
def converted(request, tmp_path_factory):
    """(fixture name, converted model directory)."""
    out = tmp_path_factory.mktemp("efml") / request.param
    convert(str(DATA / request.param), str(out))
    return request.param, str(out)


def test_fixtures_cover_the_cases():
    assert len(MODELS) >= 3
    words = [w for s in SENTENCES for w in s]
    assert {"<bos>", "<oov>", "\u3000", "\u00a0"} <= set(words) and min(map(len, SENTENCES)) == 1
    assert max(map(len, words)) > 50 and any("\u0301" in w for w in words) and "😀" in words
    configs = [json.loads(next((DATA / m).glob(f"{m}.json")).read_text()) for m in MODELS]
    assert {c["token_embedder"]["activation"] for c in configs} == {"relu", "tanh"}
    assert {c["encoder"]["n_layers"] for c in configs} == {1, 2}
    assert {c["token_embedder"]["word_dim"] > 0 for c in configs} == {True, False}
    assert len({c["token_embedder"]["n_highway"] for c in configs}) == 3
    # both PyTorch pickle formats: zip, and the legacy one of the published models
    assert {zipfile.is_zipfile(DATA / m / "encoder.pkl") for m in MODELS} == {True, False}


def test_embed_sentences_matches_reference(converted):
    name, out = converted
    bilm = BiLM.from_pretrained(out)
    want = expected(name)
    assert max_diff(bilm.embed_sentences(SENTENCES), want) < TOL


def test_forward_on_the_models_own_ids(converted):
    name, out = converted
    bilm = BiLM.from_pretrained(out)
    batch = SENTENCES[:4]
    layers = bilm(bilm.batch_to_ids(batch)).layers.numpy()
    for k, (sent, ref) in enumerate(zip(batch, expected(name))):
        assert float(numpy.abs(layers[:, k, : len(sent)] - ref).max()) < TOL
    with pytest.raises(ValueError, match=f"char_ids must have shape \\(batch, max_len, {bilm.indexer.width}\\)"):
        bilm(torch.zeros(1, 2, 50 if bilm.indexer.width != 50 else 51, dtype=torch.long))


def test_independent_of_batch_composition_and_call_order(converted):
    name, out = converted
    bilm = BiLM.from_pretrained(out)
    want = expected(name)
    for batch_size in (1, 3):
        assert max_diff(bilm.embed_sentences(SENTENCES, batch_size=batch_size), want) < TOL
    order = list(range(len(SENTENCES)))[::-1]
    got = bilm.embed_sentences([SENTENCES[i] for i in order] + [SENTENCES[0]])
    assert max_diff([got[order.index(i)] for i in range(len(SENTENCES))], want) < TOL
    assert numpy.array_equal(got[-1], got[order.index(0)])
    alone = [bilm.embed_sentences([s])[0] for s in SENTENCES[:3]]  # one call each, after the others
    assert max_diff(alone, want[:3]) < TOL


@pytest.mark.parametrize("lang", ["de", "zh"])
def test_spacy_pipeline_of_another_language_matches_reference(converted, lang):
    name, out = converted
    nlp = spacy.blank(lang)
    nlp.add_pipe("elmo", config=elmo_config(None, name=out))
    want = expected(name)
    docs = list(nlp.pipe([Doc(nlp.vocab, words=s) for s in SENTENCES[::-1]], batch_size=4))[::-1]
    for doc, sent, ref in zip(docs, SENTENCES, want):
        space = numpy.array([w.isspace() for w in sent])
        if space.any():  # whitespace tokens are not shown to the biLM (zero vectors): compare the rest
            assert not doc._.elmo.layers[:, space].any()
            ref = BiLM.from_pretrained(out).embed_sentences([[w for w in sent if not w.isspace()]])[0]
            doc_layers = doc._.elmo.layers[:, ~space]
        else:
            doc_layers = doc._.elmo.layers
        assert float(numpy.abs(doc_layers - ref).max()) < TOL


def test_pipeline_round_trip_keeps_the_vocabulary(converted, tmp_path):
    name, out = converted
    nlp = spacy.blank("de")
    nlp.add_pipe("elmo", config=elmo_config(None, name=out))
    doc = Doc(nlp.vocab, words=SENTENCES[1])
    before = nlp(doc)._.elmo.layers
    nlp.to_disk(tmp_path / "p")
    shutil.rmtree(out + "_moved", ignore_errors=True)
    again = spacy.load(tmp_path / "p")
    after = again(Doc(again.vocab, words=SENTENCES[1]))._.elmo.layers
    numpy.testing.assert_array_equal(before, after)
    assert float(numpy.abs(after - expected(name)[1]).max()) < TOL


def test_converted_directory_layout_and_round_trip(converted, tmp_path):
    name, out = converted
    files = sorted(os.listdir(out))
    assert files == ["options.json", "sha256.json", "weights.hdf5"]
    options = json.loads(Path(out, "options.json").read_text())
    assert options["format_version"] == 2 and options["vocab"]["indexer"] == "elmoformanylangs"
    assert "chars" not in options["vocab"] and "words" not in options["vocab"]  # stored in weights.hdf5
    with h5py.File(Path(out, "weights.hdf5"), "r") as f:
        assert "vocab/chars/utf8" in f and ("vocab/words/ids" in f) == (options["vocab"]["word_dim"] > 0)
    digests = json.loads(Path(out, "sha256.json").read_text())
    assert set(digests) == {"options.json", "weights.hdf5"}
    bilm = BiLM.from_pretrained(out)
    bilm.save(tmp_path / "again")
    again = BiLM.from_pretrained(str(tmp_path / "again"))
    assert again.indexer.chars == bilm.indexer.chars and again.indexer.words == bilm.indexer.words
    for k, v in bilm.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k


def test_embed_command_with_converted_model(converted, tmp_path):
    name, out = converted
    text = tmp_path / "in.txt"
    text.write_text("\n".join(" ".join(s) for s in SENTENCES[:2]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["embed", str(text), str(tmp_path / "o.hdf5"), "--model", out,
                                      "--pretokenized", "--quiet"])
    assert result.exit_code == 0, result.output
    with h5py.File(tmp_path / "o.hdf5", "r") as f:
        assert float(numpy.abs(f["1"][()] - expected(name)[1]).max()) < TOL


def test_indexer_rows_follow_the_reference_scheme():
    chars = {"a": 0, "b": 1, "<bos>": 2, "<eos>": 3, "<oov>": 4, "<pad>": 5, "<bow>": 6, "<eow>": 7}
    words = {"<oov>": 0, "ab": 1, "<bos>": 2}
    ix = VocabularyIndexer(chars, words, max_chars=8)
    ids = ix.ids(["ab", "abzabzab", "<bos>", "<oov>", ""])
    assert ix.width == 9 and ix.pad_id == 6
    # +1 shift: <eow>=8 opens the word, <bow>=7 closes it (the reference swaps them), <pad>=6
    assert ids[0].tolist() == [8, 1, 2, 7, 6, 6, 6, 6, 2]
    assert ids[1].tolist() == [8, 1, 2, 5, 1, 2, 5, 7, 1]  # cut to 6 chars "abzabz": z <oov>, word <oov>
    assert ids[2].tolist() == [8, 3, 7, 6, 6, 6, 6, 6, 3]  # the literal <bos> is the sentence boundary
    assert ids[3].tolist() == [8, 5, 5, 5, 5, 5, 7, 6, 1]  # "<oov>" is spelled out; its word is <oov>
    assert ids[4].tolist() == [8, 7, 6, 6, 6, 6, 6, 6, 1]
    assert numpy.array_equal(ix.boundary_ids(), ix.ids(["<bos>", "<eos>"]))
    short = VocabularyIndexer(chars, words, max_chars=6)  # "<bos>" as a token is cut to "<bos"...
    assert short.ids(["<bos>"])[0].tolist() == [8, 5, 2, 5, 5, 7, 1]  # spelled: <, b, o, s; word <oov>
    assert short.boundary_ids()[0].tolist() == [8, 3, 7, 6, 6, 6, 3]  # ...but the boundary never is
    with pytest.raises(TypeError, match="must be str"):
        ix.ids([3])
    with pytest.raises(ValueError, match="lacks <eow>"):
        VocabularyIndexer({k: v for k, v in chars.items() if k != "<eow>"}, None, 6)


def test_byte_models_keep_the_bilm_tf_layout(tmp_path):
    bilm = BiLM(TINY_OPTIONS)
    assert isinstance(bilm.indexer, ByteIndexer) and bilm.indexer.width == 50
    bilm.save(tmp_path)
    options = json.loads((tmp_path / "options.json").read_text())
    assert "format_version" not in options and "vocab" not in options
    with h5py.File(tmp_path / "weights.hdf5", "r") as f:
        assert "vocab" not in f and "word_embed" not in f and f["char_embed"].shape == (261, 4)


def test_options_format_versions_are_checked():
    with pytest.raises(ElmoModelFileError, match="format_version: 3 is newer"):
        check_options({**TINY_OPTIONS, "format_version": 3})
    with pytest.raises(ElmoModelFileError, match="needs a vocab section"):
        check_options({**TINY_OPTIONS, "format_version": 2})
    with pytest.raises(ElmoModelFileError, match="needs \"format_version\": 2"):
        check_options({**TINY_OPTIONS, "vocab": {"indexer": "elmoformanylangs"}})
    cnn = {**TINY_OPTIONS["char_cnn"], "n_characters": 5, "max_characters_per_token": 10}
    vocab = {"indexer": "elmoformanylangs", "chars": {"a": 7}}
    with pytest.raises(ElmoModelFileError, match="vocab.chars: entry 'a': 7 is not an id in 0..3"):
        check_options({**TINY_OPTIONS, "format_version": 2, "char_cnn": cnn, "vocab": vocab})


def test_dictionary_lines_are_read_as_the_reference_reads_them(tmp_path):
    path = tmp_path / "char.dic"
    path.write_bytes("a\t0\n\u3000\t1\n b \t2\nx\t3\r\n\u00a0\t4\nx\t5\n".encode("utf-8"))
    # the line's ends are stripped: U+3000 and NBSP leave single fields, read as U+3000 (the later
    # line wins); " b \t2" keeps "b " (only the line's ends are stripped); \r\n ends a line
    assert read_dic(str(path)) == {"a": 0, "\u3000": 4, "b ": 2, "x": 5}
    path.write_text("a\t0\n\n", encoding="utf-8")
    with pytest.raises(ElmoModelFileError, match="line 2: expected TOKEN<tab>ID"):
        read_dic(str(path))


def copy_model(tmp_path, name="relu-words-1layer") -> Path:
    src = tmp_path / "src"
    shutil.copytree(DATA / name, src)
    (src / "expected.npz").unlink()
    return src


def test_config_is_resolved_as_the_reference_does(tmp_path):
    src = copy_model(tmp_path)
    (src / "config.json").write_text(json.dumps({"config_path": "/somewhere/else/relu-words-1layer.json"}))
    assert find_config(str(src)) == str(src / "relu-words-1layer.json")  # by its file name in SRC
    (src / "config.json").write_text(json.dumps({"config_path": "../outside/cnn_50_100_512_4096_sample.json"}))
    assert Path(find_config(str(src))).parent.name == "configs"  # a standard config, kept as data
    with pytest.raises(ElmoModelFileError, match="tensor 'char_emb_layer.embedding.weight' has shape"):
        convert(str(src), str(tmp_path / "out"))  # the standard config is not this model's
    convert(str(src), str(tmp_path / "out"), config=str(src / "relu-words-1layer.json"))
    (src / "config.json").write_text(json.dumps({"config_path": "nope.json"}))
    with pytest.raises(ElmoModelFileError, match="neither in .* nor a standard config"):
        find_config(str(src))


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_pickles_with_objects_are_refused(tmp_path):
    src = copy_model(tmp_path)
    torch.save({"x": Evil()}, src / "encoder.pkl")
    with pytest.raises(ElmoModelFileError, match="encoder.pkl: refused: not a plain PyTorch state dict"):
        convert(str(src), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_convert_command(tmp_path):
    out = tmp_path / "m"
    result = CliRunner().invoke(app, ["convert", str(DATA / MODELS[0]), str(out), "--format", "elmoformanylangs"])
    assert result.exit_code == 0, result.output
    assert BiLM.from_pretrained(str(out)).num_layers >= 1
    again = CliRunner().invoke(app, ["convert", str(DATA / MODELS[0]), str(out)])
    assert again.exit_code == 2 and "already holds a model" in again.output and "Traceback" not in again.output
    bad = CliRunner().invoke(app, ["convert", str(tmp_path), str(tmp_path / "x"), "--format", "bilm-tf"])
    assert bad.exit_code == 2 and "--format 'bilm-tf': expected one of elmoformanylangs" in bad.output
    missing = CliRunner().invoke(app, ["convert", str(tmp_path), str(tmp_path / "x")])
    assert missing.exit_code == 2 and "config.json: not found" in missing.output


GERMAN = [("Der Hund läuft schnell .", ["DET", "NOUN", "VERB", "ADV", "PUNCT"]),
          ("Die Katze schläft .", ["DET", "NOUN", "VERB", "PUNCT"]),
          ("Ein Hund schläft schnell .", ["DET", "NOUN", "VERB", "ADV", "PUNCT"])]


def test_german_tagger_with_the_listener_from_the_project_config(tmp_path):
    """docs/languages.md: configs/tagger_elmo.cfg with nlp.lang = "de" and the converted model's path."""
    from spacy.training import Example
    from thinc.api import Adam

    out = tmp_path / "de-elmo"
    convert(str(DATA / "relu-words-1layer"), str(out))
    config = spacy.util.load_config(Path(__file__).resolve().parent.parent / "configs" / "tagger_elmo.cfg",
                                    overrides={"nlp.lang": "de", "components.elmo.model.name": str(out)})
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    assert nlp.lang == "de"
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in GERMAN]
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    assert [[t.tag_ for t in doc] for doc in nlp.pipe(t for t, _ in GERMAN)] == [tags for _, tags in GERMAN]
    assert nlp("Der Hund")._.elmo.layers.shape == (2, 2, 16)


@pytest.mark.parametrize("path", ["bmm", "autograd", "bfloat16"])
def test_other_code_paths(converted, path, monkeypatch):
    """The plain-torch path (GPU, float64; no oneDNN), the autograd path of fine-tuning, and the
    opt-in bfloat16 products (not exact: a loose bound) on a converted model."""
    from spacy_elmo.bilm import onednn
    from spacy_elmo.bilm.batching import embed_batches

    name, out = converted
    bilm = BiLM.from_pretrained(out, precision="bfloat16" if path == "bfloat16" else "float32")
    want = expected(name)
    if path == "bmm":
        monkeypatch.setattr(onednn, "_ENABLED", False)
    if path == "autograd":
        got = [None] * len(SENTENCES)
        for batch in embed_batches(bilm, SENTENCES, grad=True):
            assert batch.layers.requires_grad
            for i, layers in batch.split(batch.layers.detach().numpy()):
                got[i] = layers
    else:
        got = bilm.embed_sentences(SENTENCES)
    assert max_diff(got, want) < (0.1 if path == "bfloat16" else TOL)
