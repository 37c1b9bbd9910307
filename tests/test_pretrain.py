"""Pretraining on a tiny corpus: learning, exact resume, export, perplexity, bad inputs."""
import gzip
import json
import subprocess
import sys

import numpy
import pytest
import torch

from spacy_elmo.errors import ElmoDataError
from spacy_elmo.pretrain.corpus import read_lines, resolve_paths
from spacy_elmo.pretrain.train import pretrain

SENTENCES = [
    "The cat sat on the mat .",
    "A dog sat on the rug .",
    "The bank raised its interest rates .",
    "We walked along the river bank .",
    "She reads a book every night .",
    "He wrote a long letter to his friend .",
    "The children played in the park after school .",
    "Prices rose sharply in the second quarter .",
]

TINY = {
    "model.lstm_dim": 32,
    "model.projection_dim": 8,
    "model.filters": [[1, 8], [2, 8], [3, 16]],
    "model.char_dim": 4,
    "model.dropout": 0.0,
    "vocab.size": 200,
    "vocab.min_count": 1,
    "softmax.cutoffs": [20, 60],
    "training.tokens_per_batch": 200,
    "training.learning_rate": 0.01,
    "training.warmup_steps": 0,
    "training.eval_every_steps": 10,
    "training.checkpoint_minutes": 1000,
    "training.threads": 1,
    "training.precision": "float32",  # exact and fast on any CPU; bfloat16 / compile: test_pretrain_lstm.py
    "training.compile": False,
    "corpus.block_lines": 10,
    "corpus.heldout_every": 5,
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "text.txt.gz"
    rng = numpy.random.default_rng(0)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(400):
            f.write(SENTENCES[rng.integers(len(SENTENCES))] + "\n")
    return str(path)


def _overrides(corpus, **extra):
    out = dict(TINY)
    out["corpus.paths"] = [corpus]
    out.update(extra)
    return out


@pytest.mark.slow
def test_loss_goes_down_and_export_loads(corpus, tmp_path):
    meta = pretrain(str(tmp_path / "run"), overrides=_overrides(corpus, **{"training.max_steps": 60}), progress=False)
    history = meta["history"]
    assert len(history) == 6
    assert history[-1]["perplexity"] < 0.75 * history[0]["perplexity"]
    assert history[-1]["perplexity"] < 30  # vocabulary: ~40 words
    assert meta["heldout"]["full_heldout"] is True
    assert meta["training"]["steps"] == 60
    model_dir = tmp_path / "run" / "model"
    for name in ("options.json", "weights.hdf5", "lm_head.hdf5", "vocab.txt", "meta.json"):
        assert (model_dir / name).is_file()
    options = json.loads((model_dir / "options.json").read_text())
    assert options["lstm"]["cell_clip"] is None and options["lstm"]["proj_clip"] is None
    # the exported files rebuild the same LM: same held-out perplexity
    from spacy_elmo.pretrain.perplexity import perplexity

    heldout_file = tmp_path / "heldout.txt"
    heldout_file.write_text("\n".join(SENTENCES) + "\n")
    result = perplexity(str(model_dir), str(heldout_file))
    assert result["tokens"] == sum(len(s.split()) + 1 for s in SENTENCES)
    assert 1.0 < result["perplexity"] < history[0]["perplexity"]
    assert result["perplexity"] == pytest.approx(
        numpy.sqrt(result["forward"] * result["backward"]), rel=1e-6
    )


def test_resume_equals_uninterrupted(corpus, tmp_path):
    steps = {"training.max_steps": 16, "training.eval_every_steps": 0}
    pretrain(str(tmp_path / "a"), overrides=_overrides(corpus, **steps), progress=False)
    pretrain(str(tmp_path / "b"), overrides=_overrides(corpus, **steps), progress=False, stop_after=7)
    ckpt = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=False)
    assert ckpt["state"]["step"] == 7
    pretrain(str(tmp_path / "b"), resume=True, progress=False)
    a = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)
    b = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=False)
    assert a["state"]["step"] == b["state"]["step"] == 16
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key


def test_resume_from_stable_extends_the_stable_phase(corpus, tmp_path):
    """A run decayed early, continued from its stable checkpoint with a later decay, ends exactly
    where a run with that later decay from the start ends (warmup-stable-decay branches)."""
    base = {"training.eval_every_steps": 0, "training.decay_steps": 8}
    pretrain(str(tmp_path / "long"), overrides=_overrides(corpus, **base, **{"training.max_steps": 20}), progress=False)
    pretrain(str(tmp_path / "short"), overrides=_overrides(corpus, **base, **{"training.max_steps": 14}),
             progress=False)
    stable = torch.load(tmp_path / "short" / "checkpoint-stable.pt", weights_only=False)
    assert stable["state"]["step"] == 6  # 14 - 8: the last step at the full rate
    assert stable["scheduler"]["_last_lr"][0] == pytest.approx(TINY["training.learning_rate"])
    config_before = (tmp_path / "short" / "config.cfg").read_text()
    with pytest.raises(ValueError, match="raise max_steps to at least 14"):
        pretrain(str(tmp_path / "short"), resume=True, from_stable=True, progress=False,
                 overrides={"training.max_steps": 12})
    assert (tmp_path / "short" / "config.cfg").read_text() == config_before  # the refused override is not kept
    with pytest.raises(FileNotFoundError, match="decay_steps > 0 reaches its decay"):
        pretrain(str(tmp_path / "long2"), resume=True, from_stable=True, progress=False)
    with pytest.raises(FileNotFoundError, match="with --resume"):
        pretrain(str(tmp_path / "short"), from_stable=True, progress=False)
    pretrain(str(tmp_path / "short"), resume=True, from_stable=True, progress=False,
             overrides={"training.max_steps": 20})
    a = torch.load(tmp_path / "long" / "checkpoint.pt", weights_only=False)
    b = torch.load(tmp_path / "short" / "checkpoint.pt", weights_only=False)
    assert a["state"]["step"] == b["state"]["step"] == 20
    assert a["state"]["tokens"] == b["state"]["tokens"]
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    assert torch.load(tmp_path / "short" / "checkpoint-stable.pt", weights_only=False)["state"]["step"] == 12


def test_refuses_to_overwrite_and_resume_without_checkpoint(corpus, tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        pretrain(str(tmp_path / "none"), resume=True, progress=False)
    pretrain(str(tmp_path / "x"), overrides=_overrides(corpus, **{"training.max_steps": 1}), progress=False)
    with pytest.raises(FileExistsError, match="--resume"):
        pretrain(str(tmp_path / "x"), overrides=_overrides(corpus), progress=False)


def test_bad_corpus_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ElmoDataError, match="contains no text"):
        list(read_lines(str(empty)))
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ElmoDataError, match="binary|not UTF-8"):
        list(read_lines(str(binary)))
    with pytest.raises(ElmoDataError, match="not found"):
        resolve_paths([str(tmp_path / "missing.txt")])
    with pytest.raises(ElmoDataError, match="No file matches"):
        resolve_paths([str(tmp_path / "*.nothing")])
    with pytest.raises(ElmoDataError, match="contains no text"):
        pretrain(str(tmp_path / "run"), overrides={"corpus.paths": [str(empty)]}, progress=False)


@pytest.mark.slow
def test_cli_errors_and_perplexity_json(tmp_path):
    missing = tmp_path / "missing.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "pretrain", str(tmp_path / "o"),
         "--corpus.paths", json.dumps([str(missing)])],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert "Corpus file not found" in proc.stderr and str(missing) in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "spacy_elmo", "init-config"], capture_output=True, text=True)
    assert proc.returncode == 0 and "[training]" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "perplexity", str(tmp_path), str(missing), "--json"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2 and "error:" in proc.stderr


def test_init_from_continues_a_trained_model(corpus, tmp_path):
    """Warm start from an exported model: same vocabulary, same starting perplexity, and a
    mismatched architecture is a clear error."""
    from spacy_elmo.pretrain.perplexity import perplexity

    pretrain(str(tmp_path / "first"), overrides=_overrides(corpus, **{"training.max_steps": 30}), progress=False)
    source = str(tmp_path / "first" / "model")
    text = tmp_path / "text.txt"
    text.write_text("\n".join(SENTENCES) + "\n")
    meta = pretrain(
        str(tmp_path / "second"),
        overrides=_overrides(corpus, **{"training.max_steps": 30, "training.init_from": source}),
        progress=False,
        stop_after=0,  # export before the first step
    )
    assert meta["training"]["steps"] == 0
    vocab = (tmp_path / "first" / "model" / "vocab.txt").read_text()
    assert (tmp_path / "second" / "model" / "vocab.txt").read_text() == vocab
    before = perplexity(source, str(text))
    after = perplexity(str(tmp_path / "second" / "model"), str(text))
    assert after["perplexity"] == pytest.approx(before["perplexity"], rel=1e-5)
    with pytest.raises(ValueError, match="init_from"):
        pretrain(
            str(tmp_path / "third"),
            overrides=_overrides(corpus, **{"training.max_steps": 1, "training.init_from": source,
                                            "model.lstm_dim": 16}),
            progress=False,
        )


def test_vocabulary_maps_types_to_words():
    """build_vocab ranks by training frequency; the same type -> word map serves warm starts and
    perplexity (map_types_to_words): specials first, rare words to <UNK>, and a literal "<S>"
    token in the text never becomes the sentence boundary."""
    from spacy_elmo.pretrain.corpus import Split, build_vocab, map_types_to_words

    types = ["<S>", "</S>", "the", "cat", "<S>", "rare"]
    # sentences of type ids: "the" x3, "cat" x2, literal "<S>" x2, "rare" x1
    tokens = numpy.array([2, 3, 2, 4, 2, 3, 4, 5], dtype=numpy.int32)
    train = Split(tokens=tokens, offsets=numpy.array([0, 3, 8], dtype=numpy.int64))
    words, type_to_word = build_vocab(types, train, size=6, min_count=2)
    assert words == ["<S>", "</S>", "<UNK>", "the", "cat", "<S>"]
    assert type_to_word.tolist() == [0, 1, 3, 4, 5, 2]
    assert map_types_to_words(types, words).tolist() == type_to_word.tolist()
    assert map_types_to_words(types, words[:5]).tolist() == [0, 1, 3, 4, 2, 2]  # "<S>" text: <UNK>
    with pytest.raises(ValueError, match="starts with"):
        map_types_to_words(types, ["the", "cat", "<S>"])


@pytest.mark.slow
def test_config_rejects_unknown_settings(tmp_path):
    """A misspelled or unknown key, in an override or in the config file, is an error naming it
    (it used to be ignored, starting the default 100,000-step run); nullable init_from still works."""
    from spacy_elmo.pretrain.config import load_config

    missing = str(tmp_path / "missing.txt")  # checked before the corpus: no ElmoDataError
    with pytest.raises(ValueError, match=r"\[training\] max_step: unknown setting .*did you mean max_steps\?"):
        pretrain(str(tmp_path / "o"), overrides={"corpus.paths": [missing], "training.max_step": 2}, progress=False)
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match=r"\[training\] nonsense: unknown setting"):
        load_config(overrides={"training.nonsense": 3})
    cfg_file = tmp_path / "my.cfg"
    cfg_file.write_text("[training]\nmax_step = 2\n")
    with pytest.raises(ValueError, match=r"max_step: unknown setting in .*my\.cfg; did you mean max_steps\?"):
        pretrain(str(tmp_path / "o"), config_path=str(cfg_file), progress=False)
    cfg_file.write_text("[trainig]\nmax_steps = 2\n")
    with pytest.raises(ValueError, match=r"\[trainig\]: unknown section in .*did you mean training\?"):
        load_config(cfg_file)
    assert load_config(overrides={"training.init_from": "some/dir"})["training"]["init_from"] == "some/dir"
    assert load_config(overrides={"training.init_from": None})["training"]["init_from"] is None
    proc = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "pretrain", str(tmp_path / "o"), "--training.max_step", "2"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2 and "did you mean max_steps?" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_config_checks_value_types_before_the_corpus(tmp_path):
    """Types are checked against the defaults when the config is loaded, naming the key."""
    from spacy_elmo.pretrain.config import load_config

    missing = str(tmp_path / "missing.txt")
    with pytest.raises(ValueError,
                       match=r"\[training\] max_steps = 'abc' \(--training.max_steps\): expected an integer"):
        pretrain(str(tmp_path / "o"), overrides={"corpus.paths": [missing], "training.max_steps": "abc"},
                 progress=False)
    bad = {
        "training.max_steps": 1.5,
        "training.learning_rate": "fast",
        "model.use_skip_connections": 1,
        "corpus.paths": "texts/a.txt",
        "softmax.cutoffs": 2000,
        "model.activation": 3,
        "training.init_from": 3,
        "vocab.size": None,
    }
    negative_or_not_finite = [("training.max_steps", -5), ("training.learning_rate", float("nan")),
                              ("training.grad_clip", float("inf")), ("training.final_lr_fraction", -0.1)]
    for key, value in negative_or_not_finite:
        section, name = key.split(".")
        with pytest.raises(ValueError, match=rf"\[{section}\] {name} = .*: expected a finite number >= 0"):
            load_config(overrides={key: value})
    for key, value in bad.items():
        section, name = key.split(".")
        with pytest.raises(ValueError, match=rf"\[{section}\] {name} = "):
            load_config(overrides={key: value})
    cfg_file = tmp_path / "my.cfg"
    cfg_file.write_text('[training]\nmax_steps = "many"\n')
    with pytest.raises(ValueError, match=r"\[training\] max_steps = 'many' in .*my\.cfg: expected an integer"):
        load_config(cfg_file)
    cfg = load_config(overrides={"softmax.div_value": 4, "training.grad_clip": 0})  # an int is a fine float
    assert cfg["softmax"]["div_value"] == 4


def _model_dir(path, vocab_size=100, **model):
    """A small untrained model directory as `pretrain` writes it (TINY architecture)."""
    from spacy_elmo.pretrain.config import load_config
    from spacy_elmo.pretrain.export import write_model
    from spacy_elmo.pretrain.lm import LanguageModel, model_options

    overrides = {k: v for k, v in TINY.items() if k.startswith(("model.", "softmax."))}
    overrides["softmax.div_value"] = 2.0  # with 4.0 the last of 3 clusters would project 8 dims to 0
    cfg = load_config(overrides=overrides)
    lm = LanguageModel.new(model_options(dict(cfg["model"], **model)), dict(cfg["softmax"]), vocab_size)
    words = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(vocab_size - 3)]
    write_model(lm, words, str(path), {})
    return path


def test_init_from_is_checked_before_the_corpus(tmp_path):
    """A missing, incomplete or mismatched init_from fails before tokenising, naming [training]
    init_from; load_model's message is about model directories, not perplexity."""
    from spacy_elmo.pretrain.export import load_model

    missing = str(tmp_path / "missing.txt")  # a ElmoDataError would mean the corpus came first

    def run(init_from, **extra):
        overrides = dict(TINY, **{"corpus.paths": [missing], "training.init_from": str(init_from)}, **extra)
        pretrain(str(tmp_path / "o"), overrides=overrides, progress=False)

    with pytest.raises(FileNotFoundError, match=r"\[training\] init_from = '.*nowhere': No ELMo model named"):
        run(tmp_path / "nowhere")
    source = _model_dir(tmp_path / "src")
    (source / "lm_head.hdf5").unlink()
    with pytest.raises(FileNotFoundError, match=r"\[training\] init_from = .*lm_head\.hdf5 not found") as err:
        run(source)
    assert "perplexity" not in str(err.value)
    with pytest.raises(FileNotFoundError, match="a pretrained model directory needs options.json") as err:
        load_model(str(source))
    assert "perplexity" not in str(err.value)
    source = _model_dir(tmp_path / "src2")
    with pytest.raises(ValueError, match=r"\[model\] lstm_dim = 16 contradicts \[training\] init_from = .*, whose "
                                         r"lstm_dim is 32"):
        run(source, **{"model.lstm_dim": 16, "softmax.div_value": 2.0})


@pytest.mark.slow
def test_corrupt_or_mismatched_model_files(tmp_path):
    """Garbage, foreign or truncated lm_head.hdf5 / vocab.txt: an ElmoModelFileError naming the file,
    in perplexity, in pretrain's init_from and on the command line (one line, exit code 2)."""
    from spacy_elmo.errors import ElmoModelFileError
    from spacy_elmo.pretrain.perplexity import perplexity

    text = tmp_path / "text.txt"
    text.write_text("\n".join(SENTENCES) + "\n")
    model = _model_dir(tmp_path / "m")
    assert perplexity(str(model), str(text))["tokens"] > 0
    good_head = (model / "lm_head.hdf5").read_bytes()

    (model / "lm_head.hdf5").write_bytes(b"not an hdf5 file " * 100)
    with pytest.raises(ElmoModelFileError, match=r"lm_head\.hdf5: not a readable HDF5 file"):
        perplexity(str(model), str(text))
    with pytest.raises(ElmoModelFileError, match=r"\[training\] init_from = .*lm_head\.hdf5: not a readable HDF5"):
        pretrain(str(tmp_path / "o"), overrides=dict(TINY, **{"training.init_from": str(model)}), progress=False)
    proc = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "perplexity", str(model), str(text)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "lm_head.hdf5" in proc.stderr

    other = _model_dir(tmp_path / "other", vocab_size=150)
    (model / "lm_head.hdf5").write_bytes((other / "lm_head.hdf5").read_bytes())
    with pytest.raises(ElmoModelFileError, match="vocab.txt has 100 words but lm_head.hdf5 was trained for 150"):
        perplexity(str(model), str(text))
    other = _model_dir(tmp_path / "other2", **{"projection_dim": 4})
    (model / "lm_head.hdf5").write_bytes((other / "lm_head.hdf5").read_bytes())
    with pytest.raises(ElmoModelFileError, match=r"lm_head\.hdf5: dataset .* has shape .*, but options\.json / "
                                               r"vocab\.txt implies"):
        perplexity(str(model), str(text))

    (model / "lm_head.hdf5").write_bytes(good_head)
    lines = (model / "vocab.txt").read_text().splitlines()
    (model / "vocab.txt").write_text("\n".join(lines[:50]) + "\n")
    with pytest.raises(ElmoModelFileError, match="vocab.txt has 50 words but lm_head.hdf5 was trained for 100"):
        perplexity(str(model), str(text))


def test_init_config_header_shows_the_real_usage():
    from spacy_elmo.pretrain.config import default_config_text

    text = default_config_text()
    assert "pretrain OUTPUT_DIR --config CONFIG" in text
    assert "pretrain CONFIG OUTPUT_DIR" not in text


def test_init_from_a_narrower_model_widens_it(corpus, tmp_path):
    """A wider [model] than init_from's starts from the same function (same perplexity before the
    first step), records the widening in meta.json, and trains."""
    from spacy_elmo.pretrain.perplexity import perplexity

    pretrain(str(tmp_path / "first"), overrides=_overrides(corpus, **{"training.max_steps": 20}), progress=False)
    source = str(tmp_path / "first" / "model")
    text = tmp_path / "text.txt"
    text.write_text("\n".join(SENTENCES) + "\n")
    wide = {"training.init_from": source, "model.projection_dim": 12, "model.lstm_dim": 48, "training.max_steps": 20}
    meta = pretrain(str(tmp_path / "wide"), overrides=_overrides(corpus, **wide), progress=False, stop_after=0)
    assert meta["options"]["lstm"]["projection_dim"] == 12
    assert meta["training"]["commands"][0]["path"]["widened"] == {"projection_dim": [8, 12], "lstm_dim": [32, 48]}
    before = perplexity(source, str(text))
    after = perplexity(str(tmp_path / "wide" / "model"), str(text))
    assert after["perplexity"] == pytest.approx(before["perplexity"], rel=1e-5)
    meta = pretrain(str(tmp_path / "wide"), resume=True, progress=False)
    assert meta["training"]["steps"] == 20
    assert perplexity(str(tmp_path / "wide" / "model"), str(text))["perplexity"] < before["perplexity"]


def test_bad_pretraining_inputs_are_elmo_errors(tmp_path):
    """A config key, a checkpoint file and a pre-tokenised corpus that cannot be used raise
    ElmoConfigError, ElmoModelFileError and ElmoDataError: each an ElmoError and, as before, a
    ValueError, with a message naming the key or file."""
    from spacy_elmo.errors import ElmoConfigError, ElmoError
    from spacy_elmo.pretrain import checkpoint
    from spacy_elmo.pretrain.config import load_config
    from spacy_elmo.pretrain.corpus_pack import read_pack

    with pytest.raises(ElmoConfigError, match=r"\[training\] nonsense: unknown setting") as err:
        load_config(overrides={"training.nonsense": 3})
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(checkpoint.ElmoModelFileError, match=r"cannot read checkpoint .*checkpoint\.pt") as err:
        checkpoint.read(bad)
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    pack = tmp_path / "corpus.pack"
    pack.write_bytes(b"\x00" * 64)
    with pytest.raises(ElmoDataError, match=r"corpus\.pack: not a pre-tokenised corpus written by corpus_pack") as err:
        read_pack(str(pack))
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)


def test_a_corpus_smaller_than_a_block_names_the_fix(tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("".join(f"Sentence number {i} is here .\n" for i in range(20)))
    with pytest.raises(ElmoDataError, match=r"no training sentences: .*blocks 0, 100, 200, \.\.\. of 1000 lines each\)"
                                            r".*pass --corpus.heldout_every 0"):
        pretrain(str(tmp_path / "run"), overrides={"corpus.paths": [str(small)]}, progress=False)
    pretrain(str(tmp_path / "run2"), overrides={"corpus.paths": [str(small)], "corpus.heldout_every": 0,
                                                "training.max_steps": 1}, progress=False)  # the printed fix
    assert (tmp_path / "run2" / "model" / "weights.hdf5").is_file()
