"""Light tests of the spaCy project (project.yml, configs/, scripts/): no training, a few seconds.

Converters run on a few lines of the real data in ../shared when it is there (else on samples
written here; never on committed Reuters text), the report on fake metrics.
"""
import hashlib
import random
from pathlib import Path

import numpy
import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from helpers import REPO, load_script, shared_dir


def _script(name):
    return load_script(f"scripts/{name}.py")


@pytest.fixture(scope="module")
def project():
    from weasel.util import load_project_config

    return load_project_config(REPO)


def _shared_data(rel):
    path = shared_dir() / rel
    if not path.is_file():
        pytest.skip(f"{path} not found (set SPACY_ELMO_SHARED)")
    return path


# ------------------------------------------------------------------------------ project.yml
def test_project_yml_is_consistent(project):
    names = {c["name"] for c in project["commands"]}
    assert {"all", "demo"} <= set(project["workflows"])
    for workflow in project["workflows"].values():
        assert set(workflow) <= names
        assert workflow[0] == "copy-assets" and workflow[-1].endswith("report")
    for command in project["commands"]:
        for line in command["script"]:
            for word in line.split():
                if word.startswith(("configs/", "scripts/")):
                    assert (REPO / word).is_file(), f"{command['name']}: {word} missing"
        for dep in command.get("deps", []):
            if dep.startswith(("configs/", "scripts/")):
                assert (REPO / dep).is_file(), dep
    for asset in project["assets"]:
        assert asset["url"].startswith("https://") and len(asset["checksum"]) == 32
        assert asset["shared"].startswith("data/") and asset["dest"].startswith("assets/")


def test_asset_checksums_match_shared_data(project):
    for asset in project["assets"]:
        path = _shared_data(asset["shared"])
        assert hashlib.md5(path.read_bytes()).hexdigest() == asset["checksum"], asset["dest"]


def test_copy_assets_copies_checks_and_skips(tmp_path, monkeypatch):
    copy_assets = _script("copy_assets")
    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    (shared / "data" / "a.txt").write_text("hello\n")
    good = hashlib.md5(b"hello\n").hexdigest()
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    asset = {"dest": "assets/a.txt", "shared": "data/a.txt", "checksum": good}
    assert copy_assets.fetch(asset, project_dir, shared) == "copied"
    assert (project_dir / "assets" / "a.txt").read_text() == "hello\n"
    assert copy_assets.fetch(asset, project_dir, shared) == "present"
    bad = dict(asset, dest="assets/b.txt", checksum="0" * 32)
    with pytest.raises(SystemExit, match="Checksum mismatch"):
        copy_assets.fetch(bad, project_dir, shared)
    missing = {"dest": "assets/c.txt", "shared": "data/nope.txt", "checksum": good}
    with pytest.raises(SystemExit, match="SPACY_ELMO_SHARED"):
        copy_assets.fetch(missing, project_dir, shared)
    monkeypatch.setenv("SPACY_ELMO_SHARED", str(shared))
    assert copy_assets.shared_dir() == shared.resolve()


# ------------------------------------------------------------------------------ converters
WNUT_SAMPLE = "I\tO\nlove\tO\nNew\tB-location\nYork\tI-location\n\t\nVisit\tO\nEmpire\tB-location\n" \
              "State\tI-location\n\nby\tO\n@someone\tO\nFoo\tI-person\n"


def test_wnut17_converter_on_sample(tmp_path):
    wnut = _script("wnut17_to_spacy")
    src = tmp_path / "sample.conll"
    src.write_text(WNUT_SAMPLE, encoding="utf-8")
    out = tmp_path / "out.spacy"
    assert wnut.convert(src, out) == 3  # separated by a tab-only line and by an empty line
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert [d.text for d in docs] == ["I love New York", "Visit Empire State", "by @someone Foo"]
    assert [[(e.text, e.label_) for e in d.ents] for d in docs] == [
        [("New York", "location")], [("Empire State", "location")], [("Foo", "person")]]


def test_wnut17_converter_rejects_bad_lines(tmp_path):
    wnut = _script("wnut17_to_spacy")
    src = tmp_path / "bad.conll"
    src.write_text("word\tX-foo\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad tag"):
        wnut.convert(src, tmp_path / "out.spacy")


def test_wnut17_converter_on_real_lines(tmp_path):
    wnut = _script("wnut17_to_spacy")
    lines = _shared_data("data/ner/wnut17/train.conll").read_text(encoding="utf-8").splitlines(True)[:400]
    src = tmp_path / "head.conll"
    src.write_text("".join(lines), encoding="utf-8")
    docs = list(DocBin().from_disk(tmp_path / "o.spacy").get_docs(spacy.blank("en").vocab)) \
        if wnut.convert(src, tmp_path / "o.spacy") else []
    rows = [line.rstrip("\n").split("\t") for line in lines if line.strip()]
    assert sum(len(d) for d in docs) == len(rows)
    assert len(docs) == sum(1 for line in lines if not line.strip()) + (1 if lines[-1].strip() else 0)
    n_begin = sum(1 for _, tag in rows if tag.startswith("B-"))
    assert sum(len(d.ents) for d in docs) >= n_begin > 0
    ents = [(e.text, e.label_) for d in docs for e in d.ents]
    assert ("Empire State Building", "location") in ents


def _iob1_entities(text):
    """Independent reading of IOB1: I-X continues an X entity, B-X starts one after another X."""
    ents, sent = [], []

    def flush():
        start, prev = None, "O"
        for i, (_, tag) in enumerate(sent + [("", "O")]):
            begins = tag.startswith("B-") or (tag.startswith("I-") and prev[2:] != tag[2:])
            if start is not None and (tag == "O" or begins):
                ents.append((" ".join(w for w, _ in sent[start:i]), prev[2:]))
                start = None
            if begins:
                start = i
            prev = tag
    for line in text.splitlines():
        if line.startswith("-DOCSTART-"):
            continue
        if not line.strip():
            flush()
            sent = []
        else:
            parts = line.split()
            sent.append((parts[0], parts[-1]))
    flush()
    return ents


# Written for this test (not Reuters text), in the CoNLL-2003 layout: IOB1, a -DOCSTART- line,
# an I-PER at the start of a sentence and two adjacent entities of the same type (B-ORG).
CONLL_SAMPLE = """-DOCSTART- -X- O O

Maria NNP I-NP I-PER
Lopez NNP I-NP I-PER
visited VBD I-VP O
Lisbon NNP I-NP I-LOC
. . O O

Acme NNP I-NP I-ORG
Widgets NNP I-NP I-ORG
Globex NNP I-NP B-ORG
merged VBD I-VP O
. . O O

-DOCSTART- -X- O O

Paris NNP I-NP I-LOC
rain NN I-NP O
"""


def test_conll2003_spacy_convert_reads_iob1(tmp_path):
    docs = _script("conll2003_to_spacy").text_to_docs(CONLL_SAMPLE)  # spaCy's `ner` converter
    assert len(docs) == 2  # -DOCSTART- splits documents
    ents = [(e.text, e.label_) for d in docs for e in d.ents]
    assert ents == [("Maria Lopez", "PER"), ("Lisbon", "LOC"), ("Acme Widgets", "ORG"),
                    ("Globex", "ORG"), ("Paris", "LOC")]
    assert ents == _iob1_entities(CONLL_SAMPLE)
    # one doc per sentence afterwards (scripts/prepare_corpus.py --sentences), entities kept
    prepare = _script("prepare_corpus")
    db = DocBin(docs=docs)
    db.to_disk(tmp_path / "docs.spacy")
    assert prepare.prepare(tmp_path / "docs.spacy", tmp_path / "sents.spacy", sentences=True) == (3, 12)
    sents = list(DocBin().from_disk(tmp_path / "sents.spacy").get_docs(spacy.blank("en").vocab))
    assert [(e.text, e.label_) for d in sents for e in d.ents] == ents
    assert sents[0].ents[0].start == 0  # the I-PER that opens a sentence


def test_conll2003_spacy_convert_on_real_lines():
    from spacy.training.converters import conll_ner_to_docs

    convert = _script("conll2003_to_spacy")
    text = _shared_data("data/ner/conll2003/eng.train").read_text(encoding="utf-8")
    head = "\n".join(text.split("\n")[:2000]).rsplit("\n\n", 1)[0] + "\n"  # whole sentences only
    docs = convert.text_to_docs(head)
    ents = [(e.text, e.label_) for d in docs for e in d.ents]
    assert ents == _iob1_entities(head) and len(ents) > 100
    # the same Docs as `spacy convert -c ner` on this copy, and on a copy with the other marker
    spacy_docs = conll_ner_to_docs(head, n_sents=1, no_print=True)
    assert [_conll_doc(d) for d in docs] == [_conll_doc(d) for d in spacy_docs]
    other = convert.text_to_docs(head.replace("-DOCSTART- -X- O O", "-DOCSTART- -X- -X- O"))
    assert [_conll_doc(d) for d in other] == [_conll_doc(d) for d in docs]


def _conll_doc(doc):
    return ([t.text for t in doc], [t.tag_ for t in doc], [t.is_sent_start for t in doc],
            [(e.start, e.end, e.label_) for e in doc.ents])


# Written for this test: both -DOCSTART- forms, one of them not followed by an empty line.
CONLL_MARKERS_SAMPLE = """-DOCSTART- -X- -X- O

Anna NNP I-NP I-PER
sings VBZ I-VP O

-DOCSTART- -X- O O
Oslo NNP I-NP I-LOC
wins VBZ I-VP O

Rain NN I-NP O
-DOCSTART-\t-X-\t-X-\tO
Bo NNP I-NP I-PER
"""


def test_conll2003_converter_takes_both_docstart_forms(tmp_path):
    convert = _script("conll2003_to_spacy")
    docs = convert.text_to_docs(CONLL_MARKERS_SAMPLE)
    assert [[t.text for t in d] for d in docs] == [["Anna", "sings"], ["Oslo", "wins", "Rain"], ["Bo"]]
    assert [len(list(d.sents)) for d in docs] == [1, 2, 1]
    ents = [(e.text, e.label_) for d in docs for e in d.ents]
    assert ents == [("Anna", "PER"), ("Oslo", "LOC"), ("Bo", "PER")]
    src = tmp_path / "sample.iob"
    src.write_text(CONLL_MARKERS_SAMPLE.replace("\n", "\r\n"), encoding="utf-8")
    assert convert.convert(src, tmp_path / "docs.spacy") == (3, 4, 6)
    prepare = _script("prepare_corpus")  # then one Doc per sentence, as in the project's convert step
    assert prepare.prepare(tmp_path / "docs.spacy", tmp_path / "sents.spacy", sentences=True) == (4, 6)
    sents = list(DocBin().from_disk(tmp_path / "sents.spacy").get_docs(spacy.blank("en").vocab))
    assert len(sents) == 4 and all(t.text != "-DOCSTART-" for d in sents for t in d)


def test_prepare_corpus_upos_as_tag_and_subset(tmp_path):
    prepare = _script("prepare_corpus")
    vocab = spacy.blank("en").vocab
    docs = [Doc(vocab, words=["Dogs", "bark", str(i)], pos=["NOUN", "VERB", "NUM"], tags=["NNS", "VBP", "CD"])
            for i in range(10)]
    DocBin(docs=docs).to_disk(tmp_path / "in.spacy")
    assert prepare.prepare(tmp_path / "in.spacy", tmp_path / "out.spacy", upos_as_tag=True) == (10, 30)
    out = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(vocab))
    assert [t.tag_ for t in out[0]] == ["NOUN", "VERB", "NUM"] and [t.pos_ for t in out[0]] == ["NOUN", "VERB", "NUM"]
    assert prepare.prepare(tmp_path / "in.spacy", tmp_path / "a.spacy", limit=4, seed=1) == (4, 12)
    prepare.prepare(tmp_path / "in.spacy", tmp_path / "b.spacy", limit=4, seed=1)
    a = [d.text for d in DocBin().from_disk(tmp_path / "a.spacy").get_docs(vocab)]
    b = [d.text for d in DocBin().from_disk(tmp_path / "b.spacy").get_docs(vocab)]
    assert a == b and a == sorted(a, key=lambda t: int(t.split()[-1]))  # seeded, original order
    no_pos = [Doc(vocab, words=["x"])]
    DocBin(docs=no_pos).to_disk(tmp_path / "nopos.spacy")
    with pytest.raises(ValueError, match="UPOS"):
        prepare.prepare(tmp_path / "nopos.spacy", tmp_path / "x.spacy", upos_as_tag=True)


def test_prepare_corpus_on_real_conllu(tmp_path):
    from spacy.training.converters import conllu_to_docs

    prepare = _script("prepare_corpus")
    text = _shared_data("data/ud_en_ewt/en_ewt-ud-dev.conllu").read_text(encoding="utf-8")
    head = "\n\n".join(text.split("\n\n")[:20]) + "\n\n"
    docs = list(conllu_to_docs(head, n_sents=1, no_print=True))
    assert len(docs) == 20
    DocBin(docs=docs).to_disk(tmp_path / "ewt.spacy")
    prepare.prepare(tmp_path / "ewt.spacy", tmp_path / "upos.spacy", upos_as_tag=True)
    out = list(DocBin().from_disk(tmp_path / "upos.spacy").get_docs(spacy.blank("en").vocab))
    upos = [line.split("\t")[3] for line in head.splitlines() if line and line[0].isdigit() and "\t" in line
            and line.split("\t")[0].isdigit()]
    assert [t.tag_ for d in out for t in d] == upos


# ------------------------------------------------------------------------------ report
def _fake_metrics(directory: Path, with_mixes=True):
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for name, *_ in _script("report").RUNS:
        if name.startswith("tagger"):
            scores = {"token_acc": 1.0, "tag_acc": 0.93 + rng.random() / 100, "speed": 10000.0}
        else:
            p, r = 0.8 + rng.random() / 10, 0.8 + rng.random() / 10
            scores = {"token_acc": 1.0, "ents_p": p, "ents_r": r, "ents_f": 2 * p * r / (p + r), "speed": 9000.0}
        srsly.write_json(directory / f"{name}.json", scores)
        if name.endswith("elmo") and with_mixes:
            s = [0.2, 0.5, 0.3] if name.startswith("tagger") else [0.1, 0.3, 0.6]
            srsly.write_json(directory / f"{name}.mixes.json",
                             {name.split("-")[0]: {"weights": s, "gamma": 1.3, "raw": [0, 0, 0]}})


def test_report_on_fake_metrics(tmp_path):
    pytest.importorskip("matplotlib")  # in the `project` extra
    report = _script("report")
    _fake_metrics(tmp_path / "metrics")
    text = report.report(tmp_path / "metrics", tmp_path / "metrics" / "report.md", tmp_path / "plots", "T")
    assert (tmp_path / "metrics" / "report.md").read_text() == text
    assert text.startswith("# T")
    for row in ("| tagger | UD EWT | baseline |", "| tagger | UD EWT | ELMo |", "| ner | CoNLL-2003 | baseline |",
                "| ner | CoNLL-2003 | ELMo |", "| ner | WNUT-17 | baseline |"):
        assert text.count(row) == 1, row
    assert "| ner | WNUT-17 | ELMo |" in text and "Target" not in text and "One run each" in text
    assert "| tagger | UD EWT | 0.200 | 0.500 | 0.300 | 1.300 |" in text
    for png in ("dev_scores.png", "layer_weights.png"):
        data = (tmp_path / "plots" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
        assert f"](../plots/{png})" in text


def test_report_writes_its_table_as_a_result_record(tmp_path):
    """scripts/report.py --record: the dev scores x 100 of each task with both runs, the gain, the
    ELMo biLM by name, lineage tokens and weights sha256, the CPU: a record as tests/test_results.py
    wants them (docs/results/full_data.json is one)."""
    from test_results import shipped_identity, test_every_record_names_its_model_and_cpu_and_no_date as check

    report = _script("report")
    _fake_metrics(tmp_path / "metrics")
    (tmp_path / "metrics" / "ner-wnut-elmo.json").unlink()  # a task without both runs has no row
    got = report.record(report.load_runs(tmp_path / "metrics"), "en_elmo_small", "python scripts/report.py x")
    scores = {p.stem: srsly.read_json(p) for p in (tmp_path / "metrics").glob("*.json") if ".mixes" not in p.name}
    assert [r["data"] for r in got["rows"]] == ["UD English-EWT, UPOS accuracy", "CoNLL-2003, F1"]
    tagger = got["rows"][0]
    assert tagger["baseline"] == round(100 * scores["tagger-ewt-base"]["tag_acc"], 2)
    assert tagger["gain"] == round(tagger["elmo"] - tagger["baseline"], 2)
    assert {k: got["model"][k] for k in ("lineage_tokens", "weights_sha256")} == shipped_identity()
    srsly.write_json(tmp_path / "full_data.json", got)
    check(tmp_path / "full_data.json")


def test_report_with_some_runs_missing(tmp_path):
    pytest.importorskip("matplotlib")
    report = _script("report")
    _fake_metrics(tmp_path / "m", with_mixes=False)
    for f in (tmp_path / "m").glob("ner-*"):
        f.unlink()
    text = report.report(tmp_path / "m", tmp_path / "r.md", tmp_path / "p")
    assert "ner-conll-base" in text.split("Runs without metrics")[1]
    assert (tmp_path / "p" / "dev_scores.png").is_file() and not (tmp_path / "p" / "layer_weights.png").exists()
    empty = report.report(tmp_path / "nothing", tmp_path / "e.md", tmp_path / "p2")
    assert "Runs without metrics" in empty
    # The demo makes four runs: the WNUT ones are not "missing" there.
    demo = report.report(tmp_path / "m", tmp_path / "d.md", tmp_path / "p3",
                         expected=["tagger-ewt-base", "tagger-ewt-elmo", "ner-conll-base", "ner-conll-elmo"])
    assert "ner-conll-base, ner-conll-elmo." in demo and "wnut" not in demo.split("Runs without metrics")[1]
    with pytest.raises(ValueError, match="unknown runs"):
        report.report(tmp_path / "m", tmp_path / "x.md", tmp_path / "p4", expected=["tagger-ewt-bas"])



def test_report_states_the_settings_each_run_was_trained_with(tmp_path, monkeypatch):
    """The Runs table comes from each run's own model-best/config.cfg and training corpus."""
    report = _script("report")
    monkeypatch.chdir(tmp_path)  # paths.train in a trained config is relative to the project
    _fake_metrics(tmp_path / "metrics", with_mixes=False)
    nlp = spacy.blank("en")
    DocBin(docs=[nlp("One ."), nlp("Two ."), nlp("Three .")]).to_disk(tmp_path / "train.spacy")
    config = spacy.util.load_config(REPO / "configs" / "tagger_base.cfg", interpolate=False)
    config["paths"]["train"] = "train.spacy"
    config["training"]["max_steps"] = 1234
    config["training"]["patience"] = 567
    model_best = tmp_path / "training" / "tagger-ewt-base" / "model-best"
    model_best.mkdir(parents=True)
    config.to_disk(model_best / "config.cfg")
    text = report.report(tmp_path / "metrics", tmp_path / "r.md", tmp_path / "p", "T",
                         training_dir=tmp_path / "training")
    assert "| tagger | UD EWT | baseline | 3 | 1,234 | 567 | 200 |" in text
    assert text.count("| UD EWT | ELMo | ") == 1  # no config for that run: no settings row
    assert "## Runs" not in report.report(tmp_path / "metrics", tmp_path / "r2.md", tmp_path / "p2", "T")

# ------------------------------------------------------------------------------ configs
@pytest.mark.parametrize("name", ["tagger_base", "ner_base"])
def test_baseline_configs_build(name):
    config = spacy.util.load_config(REPO / "configs" / f"{name}.cfg")
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["tok2vec", name.split("_")[0]]
    assert config["corpora"]["train"]["gold_preproc"] is True


@pytest.mark.parametrize("name,component", [("tagger_elmo", "tagger"), ("ner_elmo", "ner")])
def test_elmo_configs_train_a_step(name, component, tiny_model):
    """The ELMo configs build, initialize and update (with the tiny random biLM standing in for
    en_elmo_small), and the component has its own scalar mix."""
    pytest.importorskip("spacy_elmo.pipeline")
    from spacy_elmo.bilm import BiLM
    from spacy_elmo.pipeline import learned_mixes

    config = spacy.util.load_config(REPO / "configs" / f"{name}.cfg", overrides={
        f"components.elmo.model.{key}": path for key, path in tiny_model.config.items()})
    assert config["components"]["elmo"]["model"]["name"] == "en_elmo_small"
    from spacy_elmo.hub.resolve import DEFAULT_MODEL, available

    assert DEFAULT_MODEL == "en_elmo_small" and (not available() or DEFAULT_MODEL in available())
    assert "elmo" not in config["training"]["frozen_components"]
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["elmo", component]
    words = ["Maria", "lives", "in", "Lisbon", "."]
    ref = Doc(nlp.vocab, words=words, pos=["PROPN", "VERB", "ADP", "PROPN", "PUNCT"],
              tags=["PROPN", "VERB", "ADP", "PROPN", "PUNCT"], ents=["B-PER", "O", "O", "B-LOC", "O"])
    examples = [Example(Doc(nlp.vocab, words=words), ref)]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        losses = nlp.update(examples, sgd=optimizer)
    assert losses[component] > 0
    mixes = learned_mixes(nlp)
    assert list(mixes) == [component] and len(mixes[component].weights) == 3
    # the biLM stays frozen: a sentence not seen in training gets the untrained biLM's layers
    doc = nlp("Lisbon lives in Maria , said nobody .")
    (ref,) = BiLM.from_files(tiny_model.options_path, tiny_model.weights_path).embed_sentences([[t.text for t in doc]])
    assert doc._.elmo.layers.shape == ref.shape == (3, 8, 32)
    numpy.testing.assert_allclose(doc._.elmo.layers, ref, atol=1e-6)


def test_report_describes_the_bilm(tmp_path):
    report = _script("report")
    model = tmp_path / "bilm"
    model.mkdir()
    srsly.write_json(model / "meta.json", {"training": {"tokens_seen": 15_300_000, "steps": 7000},
                                           "heldout": {"perplexity": 87.25}, "parameters": {"biLM": 5_380_320}})
    line = report.bilm_summary(str(model))
    assert "15.3M training tokens seen" in line and "7,000 steps" in line and "perplexity 87.2" in line
    srsly.write_json(model / "meta.json", {"training": {"tokens_seen": 15_300_000, "steps": 7000,
                                                        "lineage_tokens": 52_900_000}})
    line = report.bilm_summary(str(model))  # warm-started: the last stage and the whole lineage
    assert "7,000 steps and 15.3M tokens in its last stage" in line and "52.9M training tokens seen through all" in line
    assert "no meta.json" in report.bilm_summary(str(tmp_path / "missing"))
    assert report.bilm_summary(None) is None


def test_readme_config_block_builds():
    """The partial config shown in README.md fills (as `spacy init fill-config` does) and builds a
    pipeline whose tagger listens to elmo."""
    import re

    from spacy.util import load_config_from_str, load_model_from_config

    blocks = re.findall(r"```ini\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    nlp = load_model_from_config(load_config_from_str(blocks[0]), auto_fill=True, validate=True)
    assert nlp.pipe_names == ["elmo", "tagger"]
    assert nlp.get_pipe("elmo").listening_components == ["tagger"]
