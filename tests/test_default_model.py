"""The embedded default English biLM: loads by name, is documented, and is contextual."""
import json
import os
import shlex

import numpy
import pytest

from spacy_elmo import DEFAULT_MODEL
from spacy_elmo.bilm import BiLM
from spacy_elmo.hub.resolve import available, resolve
from spacy_elmo.probe.senses import sense_scores, word_vectors

# Two senses per word, two sentences per sense (Peters et al. 2018's "bank" example and others).
SENSES = {
    "bank": (["We walked along the bank of the river .", "The boat drifted toward the muddy river bank ."],
             ["She deposited her salary at the bank .", "The bank raised interest rates on loans ."]),
    "plant": (["The chemical plant employs two hundred workers .",
               "The power plant was shut down after the accident ."],
              ["Water the plant every morning .", "This plant grows in sunny gardens ."]),
    "court": (["The court ruled against the government .", "He appeared before the supreme court on Monday ."],
              ["They played tennis on a clay court .", "The players ran onto the basketball court ."]),
    "spring": (["The flowers bloom in spring .", "We travel to Paris every spring ."],
               ["The mattress has a broken spring .", "A steel spring holds the door shut ."]),
}


@pytest.fixture(scope="module")
def bilm():
    return BiLM.from_pretrained(DEFAULT_MODEL)


def test_default_model_is_packaged_and_documented():
    assert DEFAULT_MODEL in available()
    directory = resolve(DEFAULT_MODEL)
    size = sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory))
    assert size <= 30 * 2 ** 20
    meta = json.load(open(os.path.join(directory, "meta.json"), encoding="utf-8"))
    assert meta["training"]["tokens_seen"] > 1_000_000
    assert meta["heldout"]["perplexity"] > 1
    assert "CC BY-SA" in meta["corpus"]["license"]
    assert os.path.isfile(os.path.join(directory, "ATTRIBUTION.md"))
    assert os.path.isfile(os.path.join(directory, "config.cfg"))


def test_shipped_meta_is_the_short_card():
    """The package's meta.json holds what the model card needs, not the training history: no run
    paths of the machine it was trained on, no evaluation history; the tokens of its stages add up."""
    text = open(os.path.join(resolve(DEFAULT_MODEL), "meta.json"), encoding="utf-8").read()
    meta = json.loads(text)
    assert len(text.splitlines()) < 400 and '"/' not in text
    assert not {"history", "init_from"} & set(meta)
    assert sum(s["tokens_seen"] for s in meta["lineage"]) == meta["training"]["lineage_tokens"]
    assert all(c["command"].startswith("python -m spacy_elmo pretrain training/")
               for s in meta["lineage"] for c in s["commands"])


# [training] settings of how one invocation runs, not of what it trains.
INVOCATION = {("training", "threads"), ("training", "device"), ("training", "stop_after_minutes"),
              ("training", "checkpoint_minutes")}


def _command_line_settings(meta: dict) -> set:
    """(section, name) of every ``--section.name`` the last stage's recorded commands set."""
    keys = set()
    for entry in meta["lineage"][-1]["commands"]:
        for arg in shlex.split(entry["command"]):
            if arg.startswith("--") and "." in arg:
                section, _, name = arg[2:].split("=", 1)[0].partition(".")
                keys.add((section, name))
    return keys


def test_shipped_config_is_one_of_configs():
    """configs/ holds the config the shipped model was trained from, without drift: the model's own
    config.cfg (written by its run, the source of truth) and one configs/pretrain_*.cfg agree in
    every setting, but for those its recorded commands set on the command line."""
    from spacy_elmo.pretrain.config import load_config

    from helpers import REPO

    directory = resolve(DEFAULT_MODEL)
    meta = json.load(open(os.path.join(directory, "meta.json"), encoding="utf-8"))
    skip = INVOCATION | _command_line_settings(meta)

    def settings(path):
        cfg = load_config(path)  # the defaults filled in, as the command reads it
        # the shipped config names its corpus files; configs/ gives their paths in the project
        cfg["corpus"]["paths"] = [os.path.basename(p) for p in cfg["corpus"]["paths"]]
        return {(s, k): v for s in cfg for k, v in cfg[s].items() if (s, k) not in skip}

    shipped = settings(os.path.join(directory, "config.cfg"))
    drift = {}
    for path in sorted((REPO / "configs").glob("pretrain_*.cfg")):
        other = settings(path)
        drift[path.name] = {f"[{s}] {k}": (other.get((s, k)), v) for (s, k), v in shipped.items()
                            if other.get((s, k)) != v}
        if not drift[path.name]:
            return
    pytest.fail(f"no configs/pretrain_*.cfg agrees with {DEFAULT_MODEL}'s config.cfg; (file, shipped) "
                f"per file: {drift}")


def test_models_dir_can_be_passed(tmp_path):
    """The package-data folder is a default, not a fixed path: another folder of models works."""
    from helpers import write_tiny_model

    write_tiny_model(tmp_path / "mine")
    assert available(tmp_path) == ["mine"]
    assert resolve("mine", models_dir=tmp_path) == str(tmp_path / "mine")
    assert "mine" not in available()


def test_default_model_shapes(bilm):
    out = bilm.embed_sentences([["The", "river", "bank", "."], [], ["😀", "日本語", "x" * 60]])
    meta = json.load(open(os.path.join(resolve(DEFAULT_MODEL), "meta.json"), encoding="utf-8"))
    dim = 2 * meta["options"]["lstm"]["projection_dim"]  # [forward; backward]
    assert bilm.output_dim == dim
    assert [o.shape for o in out] == [(3, 4, dim), (3, 0, dim), (3, 3, dim)]
    assert all(numpy.isfinite(o).all() for o in out)


# Two sets of sentences. SENSES above was written before the model was trained. It is hard for
# "bank": "muddy river bank ." and "at the bank ." give the backward LM the same right context
# ("bank ."), so the backward half of their vectors is identical, and each same-sense pair has its
# disambiguating words on opposite sides of "bank". Words the shipped model does not separate go
# in NOT_YET (a strict xfail, which fails as soon as a better model separates them).
# tests/data/senses_blind.json (6 words x 2 senses x 4 sentences) was then written, by someone who
# had not seen any model output, to a fixed rule stated in the file (cue words within three words
# on both sides of the target; committed before any model was run on it): the check must hold for
# every word of it.
NOT_YET: set = set()
BLIND = json.load(open(os.path.join(os.path.dirname(__file__), "data", "senses_blind.json"), encoding="utf-8"))["words"]


def _same_vs_cross(bilm, groups, word):
    """Mean top-layer cosine of same-sense pairs and of cross-sense pairs of ``word``'s uses;
    checks that layer 0 (char CNN) gives every use the same vector."""
    import spacy

    sentences = [s for group in groups for s in group]
    labels = [k for k, group in enumerate(groups) for _ in group]
    vecs = word_vectors(bilm, spacy.blank("en").tokenizer, sentences, word)  # (n, L + 1, dim)
    for v in vecs[1:]:
        numpy.testing.assert_array_equal(v[0], vecs[0][0])  # layer 0 is context-independent
    same, cross, _ = sense_scores(vecs[:, -1], labels)
    return same, cross


@pytest.mark.parametrize(
    "word",
    [pytest.param(w, marks=pytest.mark.xfail(
        strict=True, reason="en_elmo_small does not separate these senses in these sentences"))
     if w in NOT_YET else w for w in sorted(SENSES)],
)
def test_default_model_is_contextual(bilm, word):
    """Top layer: same-sense uses of a word are closer (mean cosine) than cross-sense pairs,
    while the char-CNN layer 0 cannot tell them apart (identical vectors)."""
    same, cross = _same_vs_cross(bilm, SENSES[word], word)
    assert same > cross, (word, same, cross)


@pytest.mark.parametrize("word", sorted(BLIND))
def test_default_model_is_contextual_blind_set(bilm, word):
    """The same check on the 48 sentences of tests/data/senses_blind.json (4 per sense)."""
    groups = BLIND[word]["sentences"]
    assert len(groups) == 2 and all(len(g) == 4 for g in groups)
    same, cross = _same_vs_cross(bilm, groups, word)
    assert same > cross, (word, same, cross)
