"""spacy_elmo.probe: the contextuality measures, the linear probes, the paired bootstrap, and
the whole `probe` command on the tiny random model with small data files."""
import json
import os
import subprocess
import sys

import numpy
import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.probe import contextuality as ctx
from spacy_elmo.probe.ewt import read_conllu, read_words, subset
from spacy_elmo.probe.senses import sense_scores, word_vectors
from spacy_elmo.probe.stats import paired_difference

from helpers import elmo_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = [
    "the cat sat on the mat .", "the dog ran to the park .", "a bird sang in the tree .",
    "the man read the paper .", "we saw the film at the cinema .", "the river bank was muddy .",
    "she paid the bill at the bank .", "the children played in the garden .",
]
TAGS = {"the": "DET", "a": "DET", ".": "PUNCT", "on": "ADP", "to": "ADP", "in": "ADP", "at": "ADP",
        "we": "PRON", "she": "PRON", "was": "AUX"}


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_files(tiny_model.options_path, tiny_model.weights_path)


def _conllu(sentences):
    blocks = []
    for k, sent in enumerate(sentences):
        rows = [f"# sent_id = s{k}"]
        for i, w in enumerate(sent.split(), 1):
            rows.append(f"{i}\t{w}\t{w}\t{TAGS.get(w, 'NOUN')}\t_\t_\t0\tdep\t_\t_")
        blocks.append("\n".join(rows))
    return "\n\n".join(blocks) + "\n\n"


def _wic_files(directory, split, n):
    rows, gold = [], []
    for k in range(n):
        s1, s2 = SENTENCES[k % 8].split(), SENTENCES[(k * 3 + 1) % 8].split()
        rows.append(f"the\tN\t{s1.index('the') if 'the' in s1 else 0}-{s2.index('the') if 'the' in s2 else 0}"
                    f"\t{' '.join(s1)}\t{' '.join(s2)}")
        gold.append("T" if k % 2 else "F")
    (directory / f"{split}.data.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (directory / f"{split}.gold.txt").write_text("\n".join(gold) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Small EWT-like CoNLL-U files, WiC files and a plain-text LM sample."""
    root = tmp_path_factory.mktemp("probe_data")
    (root / "train.conllu").write_text(_conllu(SENTENCES * 3), encoding="utf-8")
    (root / "dev.conllu").write_text("# newdoc\n" + _conllu(SENTENCES) + "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n",
                                     encoding="utf-8")
    wic = root / "wic"
    wic.mkdir()
    _wic_files(wic, "train", 40)
    _wic_files(wic, "dev", 12)
    (root / "lm.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return root


def test_layer_0_is_perfectly_self_similar(bilm):
    """Layer 0 (char CNN) ignores the context: every use of a word gets the same vector, so its
    self-similarity is 1 (Ethayarajh 2019, Definition 1); the biLSTM layers are below 1."""
    from spacy_elmo.probe.embed import embed_tokens

    sentences = [s.split() for s in SENTENCES]
    vecs = embed_tokens(bilm, sentences, progress=False)
    scores = ctx.contextuality(vecs, sentences)
    assert scores["layer_0"]["words"] >= 1  # "the" is in >= 5 sentences
    assert scores["layer_0"]["self_similarity"] == pytest.approx(1.0, abs=1e-6)
    layer_0 = scores["layer_0"]
    assert layer_0["self_similarity_adjusted"] == pytest.approx(1.0 - layer_0["anisotropy"], abs=1e-6)
    for view in ("layer_1", "layer_2", "average"):
        assert scores[view]["self_similarity"] < 1 - 1e-4
        assert -1 <= scores[view]["anisotropy"] <= 1 and -1 <= scores[view]["intra_sentence"] <= 1


def test_measures_on_known_geometry():
    unit = numpy.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    sentence_of = numpy.array([0, 0, 1, 1])
    # pairs across sentences: half identical (cos 1), half orthogonal (cos 0)
    assert ctx.anisotropy(unit, sentence_of, n_pairs=4000) == pytest.approx(0.5, abs=0.05)
    assert ctx.self_similarity(unit, [numpy.array([0, 2]), numpy.array([1, 3])]) == pytest.approx(1.0)
    assert ctx.intra_sentence(unit, numpy.array([0, 2, 4])) == pytest.approx(numpy.sqrt(0.5))
    with pytest.raises(ValueError, match="at least two sentences"):
        ctx.anisotropy(unit, numpy.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="no word occurs"):
        ctx.self_similarity(unit, [])
    words = ["a", "b", "a", "a", "a", "a"]
    assert [len(o) for o in ctx.word_occurrences(words, numpy.array([0, 0, 1, 2, 3, 4]))] == [5]
    assert ctx.word_occurrences(words, numpy.array([0, 0, 1, 1, 3, 4])) == []  # "a" in 4 sentences


def test_sense_scores_on_known_geometry():
    vectors = numpy.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    same, cross, nn = sense_scores(vectors, [0, 0, 1, 1])
    assert (same, cross, nn) == (pytest.approx(1.0), pytest.approx(0.0), 1.0)
    same, cross, nn = sense_scores(vectors, [0, 1, 0, 1])  # every nearest neighbour has the other sense
    assert (same, cross, nn) == (pytest.approx(0.0), pytest.approx(0.5), 0.0)
    same, cross, nn = sense_scores(numpy.ones((3, 2)), [0, 0, 1])  # identical vectors: no neighbour
    assert same == pytest.approx(1.0) and cross == pytest.approx(1.0) and numpy.isnan(nn)


def test_word_vectors_pick_the_word_in_each_sentence(bilm):
    import spacy

    sentences = ["The bank was muddy.", "Money at the bank ."]
    vecs = word_vectors(bilm, spacy.blank("en").tokenizer, sentences, "bank")
    assert vecs.shape == (2, 3, 32)
    layers = bilm.embed_sentences([["The", "bank", "was", "muddy", "."], ["Money", "at", "the", "bank", "."]])
    numpy.testing.assert_array_equal(vecs[0], layers[0][:, 1])
    numpy.testing.assert_array_equal(vecs[1], layers[1][:, 3])
    with pytest.raises(ValueError):
        word_vectors(bilm, spacy.blank("en").tokenizer, ["No such word."], "bank")


def test_paired_difference():
    a = numpy.array([True] * 60 + [False] * 40)
    out = paired_difference(a, a)
    assert out == {"difference": 0.0, "low": 0.0, "high": 0.0}
    b = numpy.zeros(100, dtype=bool)
    out = paired_difference(a, b)
    assert out["difference"] == pytest.approx(60.0) and 45 < out["low"] < 60 < out["high"] < 75
    with pytest.raises(ValueError, match="same items"):
        paired_difference(a, b[:5])


def test_conllu_reader_and_subset(data, tmp_path):
    sents = read_conllu(data / "dev.conllu")
    assert len(sents) == 8 and sents[0][0][:3] == ["the", "cat", "sat"] and sents[0][1][0] == "DET"
    assert read_words(data / "dev.conllu") == [w for w, _ in sents]
    assert read_words(data / "dev.conllu", 2) == [sents[0][0], sents[1][0]]
    picked = subset(list(range(100)), 10, seed=3)
    assert picked == sorted(picked) and len(set(picked)) == 10 and picked == subset(list(range(100)), 10, seed=3)
    assert subset([1, 2], 0, 0) == [1, 2] and subset([1, 2], 5, 0) == [1, 2]
    with pytest.raises(FileNotFoundError, match="nope.conllu"):
        read_conllu(tmp_path / "nope.conllu")
    (tmp_path / "bad.conllu").write_text("1\tcat\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.conllu:1"):
        read_conllu(tmp_path / "bad.conllu")


def _trained_pipeline(model, path):
    """A pipeline with an elmo component and a tagger listening to it, a few updates in."""
    import spacy
    from spacy.training import Example
    from thinc.api import Adam

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(model))
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy_elmo.ElmoListener.v1"}}})
    examples = [Example.from_dict(nlp.make_doc(s), {"tags": [TAGS.get(w, "NOUN") for w in s.split()]})
                for s in SENTENCES]
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    path.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(path)
    return path


@pytest.mark.slow
def test_run_probe_end_to_end(bilm, data, tiny_model, tmp_path):
    """Every view of every probe is scored; probe.md / probe.json / probe.png are written; the
    JSON has no per-item arrays; the learned mix of a saved pipeline is read back."""
    from spacy_elmo.probe import ProbeSettings, run_probe, write_outputs

    pipe = _trained_pipeline(tiny_model, tmp_path / "tagger-elmo" / "model-best")
    settings = ProbeSettings(train_sentences=10, context_sentences=8, center_sentences=4, progress=False,
                             ewt_train=str(data / "train.conllu"), ewt_dev=str(data / "dev.conllu"),
                             wic=str(data / "wic"), lm_text=str(data / "lm.txt"), pipelines=[str(pipe)])
    result = run_probe(**tiny_model.config, settings=settings)
    views = {"layer_0", "layer_1", "layer_2", "average"}
    for task in ("upos", "wic_cosine", "wic_lr"):
        assert set(result[task]) == views
        assert all(0 <= s["dev_accuracy"] <= 100 for s in result[task].values())
    assert set(result["wic_cosine_centred"]["scores"]) == views
    assert result["contextuality"]["layer_0"]["self_similarity"] == pytest.approx(1.0, abs=1e-6)
    assert result["sizes"]["ewt"]["train_sentences"] == 10
    assert result["sizes"]["ewt"]["dev_tokens"] == sum(len(x.split()) for x in SENTENCES)
    assert set(result["splits"]) == {"upos", "wic_cosine", "wic_lr"}
    mix = result["mixes"]["tagger-elmo"]["tagger"]
    assert len(mix["weights"]) == 3 and sum(mix["weights"]) == pytest.approx(1.0)
    paths = write_outputs(result, tmp_path / "out")
    text = json.loads(paths["json"].read_text())
    assert "correct" not in json.dumps(text["upos"]) and text["model"]["dim"] == bilm.output_dim
    from spacy_elmo.bilm.integrity import sha256

    assert text["model"]["weights_sha256"] == sha256(tiny_model.weights_path)  # the record names its weights
    md = paths["md"].read_text()
    assert "| layer 0 (char CNN) |" in md and "| tagger-elmo | tagger |" in md and "97.3 / 96.8" in md
    assert paths["png"].stat().st_size > 20000


@pytest.mark.slow
def test_probe_cli_errors(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    data = ["--ewt-train", "t.conllu", "--ewt-dev", "d.conllu", "--wic", "wic", "--center-sentences", "0"]
    out = subprocess.run([sys.executable, "-m", "spacy_elmo", "probe", str(tmp_path / "no_model"), "--output",
                          str(tmp_path / "o"), "--quiet", *data], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 2 and "error:" in out.stderr and "no_model" in out.stderr
    out = subprocess.run([sys.executable, "-m", "spacy_elmo", "probe", "a", "b", "--output", str(tmp_path / "o")],
                         capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 2 and "pipelines go after --pipelines" in out.stderr


def test_probe_needs_its_data_sets(tmp_path):
    """The probe takes its data sets as options: the ones not given are named in one line (exit
    2), before any model is loaded; --lm-text is only needed for the mean vectors."""
    from typer.testing import CliRunner

    from spacy_elmo.__main__ import app
    from spacy_elmo.errors import ElmoConfigError
    from spacy_elmo.probe import ProbeSettings
    from spacy_elmo.probe.run import check_data

    result = CliRunner().invoke(app, ["probe", str(tmp_path / "no_model"), "--output", str(tmp_path / "o"),
                                      "--wic", str(tmp_path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "data sets are not given: --ewt-train FILE, --ewt-dev FILE, --lm-text GLOB" in result.output
    assert "no_model" not in result.output and "Traceback" not in result.output
    with pytest.raises(ElmoConfigError, match=r"given: --ewt-train FILE \(") as err:
        check_data(ProbeSettings(ewt_dev="d", wic="w", center_sentences=0))
    assert isinstance(err.value, ValueError)
    check_data(ProbeSettings(ewt_train="t", ewt_dev="d", wic="w", lm_text="*.txt"))


def test_malformed_wic_and_conllu_files_are_probe_data_errors(tmp_path):
    """A malformed WiC or CoNLL-U line is an ElmoDataError (an ElmoError and a ValueError) naming
    the file and line; so is a sample too small for the contextuality measures."""
    from spacy_elmo.errors import ElmoDataError, ElmoError
    from spacy_elmo.probe.wic import read_split

    (tmp_path / "dev.gold.txt").write_text("T\nF\n", encoding="utf-8")
    data = tmp_path / "dev.data.txt"
    data.write_text("bank\tN\t0-1\tbank one\tthe bank\nrun\tV\tx-1\trun now\tto run\n", encoding="utf-8")
    with pytest.raises(ElmoDataError, match=r"dev\.data\.txt:2: field 3 = 'x-1': expected the two target") as err:
        read_split(str(tmp_path), "dev")
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    data.write_text("bank\tN\t0-1\tbank one\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev\.data\.txt:1: expected 5 tab-separated fields, got 4") as err:
        read_split(str(tmp_path), "dev")
    assert isinstance(err.value, ElmoError)
    conllu = tmp_path / "bad.conllu"
    conllu.write_text("1\tThe\tthe\n", encoding="utf-8")
    with pytest.raises(ElmoDataError, match=r"bad\.conllu:1: expected a CoNLL-U word line"):
        read_conllu(str(conllu))
    with pytest.raises(ElmoDataError, match="anisotropy needs tokens from at least two sentences"):
        ctx.anisotropy(numpy.ones((3, 4), dtype=numpy.float32), numpy.zeros(3, dtype=numpy.int64))


def test_value_labels_at_one_x_are_stacked_apart_in_order():
    from spacy_elmo.probe.plot import stack

    heights = stack([56.0, 53.6, 54.7], 1.5)  # pushed apart, centred on the values' mean
    assert heights == pytest.approx([53.2 + 3.0 + 1 / 15, 53.2 + 1 / 15, 53.2 + 1.5 + 1 / 15])
    assert sum(heights) / 3 == pytest.approx((56.0 + 53.6 + 54.7) / 3)
    assert stack([1.0, 10.0], 1.0) == [1.0, 10.0]  # far apart: each at its value
    assert stack([5.0, 5.0, 5.0], 1.0) == [4.0, 5.0, 6.0]
    assert stack([0.0, 0.5, 9.0, 9.2], 1.0) == pytest.approx([-0.25, 0.75, 8.6, 9.6])  # two runs, each centred


def _figure_texts(result):
    """(the panels' titles, the value labels of each panel as (text, window extent)) of the drawn figure."""
    import matplotlib.pyplot as plt

    from spacy_elmo.probe.plot import figure

    fig = figure(result)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    labels = [[(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts] for ax in fig.axes]
    legends = [ax.get_legend().get_window_extent(renderer) for ax in fig.axes]
    plt.close(fig)
    return titles, labels, legends


def test_the_shipped_probe_figure_has_no_label_over_another():
    """Drawn from docs/probe/probe.json: three panels labelled (a), (b), (c) once each; every value
    printed once, and no value label overlaps another or a legend."""
    pytest.importorskip("matplotlib")
    with open(os.path.join(REPO, "docs", "probe", "probe.json"), encoding="utf-8") as f:
        result = json.load(f)
    titles, labels, legends = _figure_texts(result)
    assert [t[:3] for t in titles] == ["(a)", "(b)", "(c)"]
    values = lambda task: [f"{s['dev_accuracy']:.1f}" for s in task.values()]  # noqa: E731
    syntax = values(result["upos"]) + [str(v) for v in result["reference"]["upos"]["layers"].values()]
    sense = (values(result["wic_cosine"]) + values(result["wic_lr"]) + values(result["wic_cosine_centred"]["scores"])
             + [str(v) for v in result["reference"]["wsd"]["layers"].values()])
    assert sorted(t for t, _ in labels[0]) == sorted(syntax) and sorted(t for t, _ in labels[1]) == sorted(sense)
    for panel, legend in zip(labels[:2], legends):
        boxes = [box for _, box in panel]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
        assert not any(box.overlaps(legend) for box in boxes)


def test_probe_redraw_writes_the_table_and_figure_from_probe_json(tmp_path):
    """``probe --redraw -o DIR`` runs no probe: probe.md (the same as the shipped page's record
    gives) and probe.png from DIR/probe.json."""
    pytest.importorskip("matplotlib")
    import shutil

    from typer.testing import CliRunner

    from spacy_elmo.__main__ import app

    shutil.copy(os.path.join(REPO, "docs", "probe", "probe.json"), tmp_path / "probe.json")
    result = CliRunner().invoke(app, ["probe", "--redraw", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with open(os.path.join(REPO, "docs", "probe", "probe.md"), encoding="utf-8") as f:
        assert (tmp_path / "probe.md").read_text(encoding="utf-8") == f.read()
    assert (tmp_path / "probe.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(tmp_path)) == ["probe.json", "probe.md", "probe.png"]
    refused = CliRunner().invoke(app, ["probe", "en_elmo_small", "--redraw", "-o", str(tmp_path)])
    assert (refused.exit_code, refused.output) == (2, "error: --redraw runs no probe: give only --output DIR (the "
                                                      "folder holding probe.json)\n")
    missing = CliRunner().invoke(app, ["probe", "--redraw", "-o", str(tmp_path / "none")])
    record = str(tmp_path / "none" / "probe.json")
    assert (missing.exit_code, missing.output) == (2, f"error: no probe result {record!r} to redraw from: run the "
                                                      "probe with --output into that folder first\n")
