"""``static-vectors``: a word's vector is the mean of a view of its contextual vectors (computed
here directly with the biLM), the vocabulary options, skipping, window pieces, the three
outputs as spaCy and gensim read them, post-processing, resuming after ``kill -9``, and one-line
errors that leave nothing half-written."""
import gzip
import json
import os
import subprocess
import sys
import textwrap

import numpy
import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoConfigError, ElmoDataError
from spacy_elmo.static import distil_vectors, run
from spacy_elmo.static.corpus import build_vocab

LINES = ["the cat sat on the mat .", "a dog sat .", "", "the dog and the cat .", "a cat ran .",
         "the mat was red ."]


@pytest.fixture(scope="module")
def bilm(tiny_model):
    return BiLM.from_pretrained(tiny_model.directory)


def write(path, lines, gz=False):
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return str(path)


def contexts(bilm, lines, word, view=lambda h: h[1], limit=None):
    """The view of every use of ``word`` (in order), straight from the biLM: (n, dim)."""
    sentences = [line.split() for line in lines if line.strip()]
    out = []
    for tokens, layers in zip(sentences, bilm.embed_sentences(sentences)):
        out.extend(view(layers)[i] for i, t in enumerate(tokens) if t == word)
    return numpy.stack(out[:limit])


def distil(tiny_model, tmp_path, lines=LINES, name="out", **options):
    options = {"min_count": 2, "view": "layer_1", "progress": False, **options}
    corpus = write(tmp_path / "corpus.txt", lines)
    card = distil_vectors(tiny_model.directory, [corpus], str(tmp_path / name), **options)
    return card, spacy.load(tmp_path / name / "spacy")


def table(nlp):
    v = nlp.vocab.vectors
    return {nlp.vocab.strings[key]: v.data[row] for key, row in v.key2row.items()}


def test_a_vector_is_the_mean_of_its_contexts(tiny_model, bilm, tmp_path):
    card, nlp = distil(tiny_model, tmp_path, max_contexts=0)
    got = table(nlp)
    assert list(got) == ["the", ".", "cat", "sat", "mat", "a", "dog"]  # count >= 2; ties by first use
    for word in got:
        numpy.testing.assert_allclose(got[word], contexts(bilm, LINES, word).mean(0), rtol=1e-5, atol=1e-6)
    c = card["counts"]
    assert (c["records"], c["tokens"], c["words"], c["types"]) == (5, 26, 7, 12)
    assert c["contexts"] == 5 + 5 + 3 + 2 + 2 + 2 + 2 and c["sentences_skipped"] == 0
    assert card["view"] == "layer_1" and card["model"]["digest"] == card["vectors_name"].split("|")[1]
    assert nlp.vocab.vectors.name == f"spacy_elmo_static|{card['model']['digest']}|layer_1"
    assert nlp.meta["spacy_elmo_static"]["view"] == "layer_1"


@pytest.mark.parametrize("view, fn", [
    ("layer_0", lambda h: h[0]),
    ("top", lambda h: h[2]),
    ("average", lambda h: h.mean(0)),
    ("mix:0,1,2,gamma=2", lambda h: 2 * numpy.tensordot(numpy.exp([0, 1, 2]) / numpy.exp([0, 1, 2]).sum(), h, 1)),
])
def test_views(tiny_model, bilm, tmp_path, view, fn):
    _, nlp = distil(tiny_model, tmp_path, view=view, max_contexts=0)
    numpy.testing.assert_allclose(table(nlp)["cat"], contexts(bilm, LINES, "cat", fn).mean(0), rtol=1e-5, atol=1e-6)


def test_max_contexts_takes_the_first_uses_and_skips_full_sentences(tiny_model, bilm, tmp_path):
    lines = ["the cat", "the cat sat", "cat the", "sat", "cat sat"]
    card, nlp = distil(tiny_model, tmp_path, lines, max_contexts=2)
    got = table(nlp)
    for word in ("the", "cat", "sat"):
        numpy.testing.assert_allclose(got[word], contexts(bilm, lines, word, limit=2).mean(0), rtol=1e-5, atol=1e-6)
    c = card["counts"]
    # "cat the" holds no word short of 2 contexts; "sat" fills the last word, so "cat sat" is not read
    assert (c["sentences_used"], c["sentences_skipped"], c["records_not_read"]) == (3, 1, 1)
    assert (c["contexts"], c["words_full"], c["tokens_embedded"], c["tokens_read"]) == (6, 3, 6, 8)


def test_max_words_and_min_count(tiny_model, tmp_path):
    card, nlp = distil(tiny_model, tmp_path, max_words=3, min_count=3)
    assert list(table(nlp)) == ["the", ".", "cat"] and card["counts"]["words"] == 3


def test_long_lines_are_cut_into_even_pieces(tiny_model, bilm, tmp_path):
    line = " ".join(f"w{i % 3}" for i in range(10))
    _, nlp = distil(tiny_model, tmp_path, [line], window_tokens=4, max_contexts=0, min_count=1)
    pieces = [" ".join(f"w{i % 3}" for i in range(a, b)) for a, b in ((0, 4), (4, 8), (8, 10))]
    numpy.testing.assert_allclose(table(nlp)["w0"], contexts(bilm, pieces, "w0").mean(0), rtol=1e-5, atol=1e-6)


def test_outputs_load_in_spacy_and_gensim_alike(tiny_model, tmp_path):
    from spacy.training.initialize import convert_vectors, load_vectors_into_model

    card, nlp = distil(tiny_model, tmp_path)
    want = table(nlp)
    text = tmp_path / "out" / "vectors.txt.gz"
    with gzip.open(text, "rt", encoding="utf-8") as f:
        assert f.readline() == f"{len(want)} 32\n" and f.readline().startswith("the ")
    blank = spacy.blank("en")
    convert_vectors(blank, text, truncate=0, prune=-1)  # what `spacy init vectors` does
    for word, vector in want.items():
        numpy.testing.assert_allclose(blank.vocab[word].vector, vector, rtol=1e-6, atol=1e-7)
    fresh = spacy.blank("en")
    load_vectors_into_model(fresh, str(tmp_path / "out" / "spacy"))  # [initialize] vectors = "out/spacy"
    numpy.testing.assert_array_equal(fresh.vocab["cat"].vector, want["cat"])
    assert fresh.vocab.vectors.name == card["vectors_name"]
    saved = json.loads((tmp_path / "out" / "card.json").read_text(encoding="utf-8"))
    assert saved["corpus"]["sha256"] == card["corpus"]["sha256"] and len(saved["corpus"]["sha256"]) == 64
    assert saved["model"]["weights_sha256"] == json.load(open(os.path.join(tiny_model.directory, "sha256.json")))[
        "weights.hdf5"]
    gensim = pytest.importorskip("gensim")
    kv = gensim.models.KeyedVectors.load_word2vec_format(str(text))
    assert kv.index_to_key == list(want)
    numpy.testing.assert_allclose(kv["cat"], want["cat"], rtol=1e-6, atol=1e-7)


def test_gzip_and_globs_as_pretrain_reads_them(tiny_model, tmp_path):
    (tmp_path / "c").mkdir()
    write(tmp_path / "c" / "a.txt", LINES[:3], gz=True)
    write(tmp_path / "c" / "b.txt", LINES[3:])
    card = distil_vectors(tiny_model.directory, [str(tmp_path / "c" / "*")], str(tmp_path / "out"), min_count=2,
                          progress=False)
    assert card["counts"]["records"] == 5 and len(card["corpus"]["files"]) == 2
    assert card["view"] == "top"  # the default view


def test_max_lines_reads_a_slice_of_each_file(tiny_model, tmp_path):
    card, _ = distil(tiny_model, tmp_path, max_lines=2, min_count=1)
    assert card["counts"]["records"] == 2 and card["counts"]["tokens"] == 11


def test_centring_and_all_but_the_top(tiny_model, tmp_path):
    _, plain = distil(tiny_model, tmp_path, name="plain")
    card, centred = distil(tiny_model, tmp_path, name="centred", centre=True)
    x, c = numpy.stack(list(table(plain).values())), numpy.stack(list(table(centred).values()))
    numpy.testing.assert_allclose(c, x - x.mean(0), rtol=1e-5, atol=1e-6)
    assert card["vectors_name"].endswith("|layer_1+centred")
    card, abtt = distil(tiny_model, tmp_path, name="abtt", remove_top_d=2)
    a = numpy.stack(list(table(abtt).values()))
    top = numpy.linalg.svd(x - x.mean(0), full_matrices=False)[2][:2]
    numpy.testing.assert_allclose(a @ top.T, 0, atol=1e-5)  # nothing left along the top 2 directions
    numpy.testing.assert_allclose(a, (x - x.mean(0)) - (x - x.mean(0)) @ top.T @ top, atol=1e-5)
    post = card["postprocess"]
    assert post["remove_top_d"] == 2 and len(post["removed_variance"]) == 2
    assert post["removed_variance"][0] >= post["removed_variance"][1] > 0
    assert card["vectors_name"].endswith("|layer_1+abtt2")


def test_a_word_with_a_space_inside_is_left_out():
    from collections import Counter

    vocab = build_vocab(Counter({"a\u00a0b": 9, "cat": 5, "dog": 1}), min_count=2)
    assert vocab.words == ["cat"] and vocab.counts == [5] and vocab.types == 3


# -- bad input --------------------------------------------------------------------------------
def cli(*args):
    result = CliRunner().invoke(app, ["static-vectors", *map(str, args), "--quiet"])
    lines = result.output.strip().splitlines()
    return result.exit_code, lines[-1] if lines else ""


def test_empty_corpus_is_one_line(tiny_model, tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    code, line = cli(tiny_model.directory, tmp_path / "empty.txt", tmp_path / "out")
    assert code == 2 and line.startswith("error: ") and "contains no text" in line
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]  # no out/, no out.partial/
    with pytest.raises(ElmoDataError):
        distil_vectors(tiny_model.directory, [str(tmp_path / "empty.txt")], str(tmp_path / "out"), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"]


def test_no_word_reaching_min_count(tiny_model, tmp_path):
    corpus = write(tmp_path / "c.txt", ["a b c", "a d"])
    code, line = cli(tiny_model.directory, corpus, tmp_path / "out", "--min-count", "3")
    assert code == 2 and line == ("error: no word reaches --min-count 3: the most frequent token, 'a', occurs 2 "
                                  "times; lower --min-count or give a larger corpus")
    assert sorted(os.listdir(tmp_path)) == ["c.txt"]  # no out/, no out.partial/


def test_only_a_partial_folder_without_saved_work_is_removed(tmp_path):
    """After an ElmoDataError, OUTPUT_DIR.partial/ goes only when it holds no saved work: a saved
    vocabulary or state (a killed run's) stays for the re-run."""
    for saved in (None, "vocab", "state"):
        partial = run.Partial(str(tmp_path / f"out-{saved}"), {"the": "arguments"})
        if saved == "vocab":
            partial.save_vocab({"words": ["a"], "counts": [3], "records": 2, "tokens": 5, "types": 4})
        elif saved == "state":
            partial.save_state(numpy.ones((1, 1, 1)), numpy.ones(1, dtype=numpy.int64), {"position": 1})
        partial.remove_if_unused()
        assert os.path.isdir(partial.dir) == (saved is not None), saved


@pytest.mark.parametrize("view, match", [
    ("layer_3", "--view 'layer_3': the biLM has layers 0..2"),
    ("mix:1,2", "--view 'mix:1,2': 2 weights, but the model has 3 layers"),
    ("all", "--view 'all': a table holds one vector per word"),
    ("mean", "--view 'mean'"),
])
def test_a_view_the_model_lacks(tiny_model, tmp_path, view, match):
    corpus = write(tmp_path / "c.txt", LINES)
    code, line = cli(tiny_model.directory, corpus, tmp_path / "out", "--view", view)
    assert code == 2 and line.startswith("error: ") and match in line
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_remove_top_d_beyond_the_dimensions(tiny_model, tmp_path):
    corpus = write(tmp_path / "c.txt", LINES)
    code, line = cli(tiny_model.directory, corpus, tmp_path / "out", "--remove-top-d", "32")
    assert code == 2 and "expected an integer from 0 to 31" in line


def test_an_existing_output_is_refused_then_replaced_with_overwrite(tiny_model, tmp_path):
    card, _ = distil(tiny_model, tmp_path, view="layer_1")
    corpus = str(tmp_path / "corpus.txt")
    code, line = cli(tiny_model.directory, corpus, tmp_path / "out", "--min-count", "2")
    out = str(tmp_path / "out")
    assert code == 2
    assert line == f"error: OUTPUT_DIR {out!r} exists: pass --overwrite to replace it, or choose another folder"
    assert json.loads((tmp_path / "out" / "card.json").read_text())["view"] == "layer_1"
    code, line = cli(tiny_model.directory, corpus, tmp_path / "out", "--min-count", "2", "--overwrite",
                     "--view", "top")
    assert code == 0, line
    assert json.loads((tmp_path / "out" / "card.json").read_text())["view"] == "top"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]  # no .tmp-*, .old-*, .partial left


def test_overwrite_never_replaces_a_folder_it_did_not_write_nor_an_input(tiny_model, tmp_path):
    corpus = write(tmp_path / "c.txt", LINES)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me", encoding="utf-8")
    code, line = cli(tiny_model.directory, corpus, mine, "--overwrite")
    assert code == 2 and "was not written by static-vectors (no card.json)" in line
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "keep me"
    code, line = cli(tiny_model.directory, corpus, corpus, "--overwrite")
    assert code == 2 and "is or holds the input" in line and open(corpus).read().startswith("the cat")
    code, line = cli(tiny_model.directory, corpus, tmp_path, "--overwrite")  # a folder holding the corpus
    assert code == 2 and "is or holds the input" in line and os.path.isfile(corpus)


def test_a_failed_write_leaves_no_output_that_looks_complete(tiny_model, tmp_path, monkeypatch):
    from spacy_elmo.static import writer

    def broken(path, words, table):
        open(path, "wb").write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(writer, "write_word2vec", broken)
    corpus = write(tmp_path / "c.txt", LINES)
    with pytest.raises(OSError, match="disk full"):
        distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "out"), min_count=2, progress=False)
    assert sorted(os.listdir(tmp_path)) == ["c.txt", "out.partial"]  # the sums are kept for a re-run
    monkeypatch.undo()
    card = distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "out"), min_count=2, progress=False)
    assert card["resumed"] and card["counts"]["contexts"] == 21 and sorted(os.listdir(tmp_path)) == ["c.txt", "out"]


# -- kill -9 and resume -------------------------------------------------------------------------
KILLER = textwrap.dedent("""
    import os, signal, sys
    import numpy
    from spacy_elmo.static import checkpoint, run
    run.GROUP_TOKENS = 40
    saves = [0]
    save = checkpoint.Partial.save_state
    def save_then_die(self, sums, counts, counters):
        saves[0] += 1
        if saves[0] == int(sys.argv[4]):  # die while writing this state: a torn state.npz.tmp
            open(os.path.join(self.dir, "state.npz.tmp"), "wb").write(b"torn")
            os.kill(os.getpid(), signal.SIGKILL)
        save(self, sums, counts, counters)
    checkpoint.Partial.save_state = save_then_die
    run.distil_vectors(sys.argv[1], [sys.argv[2]], sys.argv[3], min_count=1, max_contexts=0, progress=False,
                       checkpoint_every=0)
""")


def test_resume_after_kill_9_gives_the_uninterrupted_table(tiny_model, tmp_path, monkeypatch):
    lines = [f"the w{i % 17} cat w{i % 5} sat on w{i % 11} ." for i in range(60)]
    corpus = write(tmp_path / "c.txt", lines)
    monkeypatch.setattr(run, "GROUP_TOKENS", 40)
    distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "whole"), min_count=1, max_contexts=0,
                   progress=False)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", KILLER, tiny_model.directory, corpus, str(tmp_path / "out"), "4"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    assert not (tmp_path / "out").exists() and (tmp_path / "out.partial" / "state.npz").is_file()
    done = run.Partial(str(tmp_path / "out"), run.plan(tiny_model.directory, [corpus], min_count=1,
                                                        max_contexts=0).args).state()
    assert 0 < done["position"] < 60  # three groups were saved before the kill
    card = distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "out"), min_count=1, max_contexts=0,
                          progress=False)
    assert card["resumed"] and card["counts"]["tokens_read"] == 480 and card["counts"]["sentences_used"] == 60
    whole, resumed = spacy.load(tmp_path / "whole" / "spacy"), spacy.load(tmp_path / "out" / "spacy")
    numpy.testing.assert_array_equal(resumed.vocab.vectors.data, whole.vocab.vectors.data)
    assert not (tmp_path / "out.partial").exists()


WRITE_KILLER = textwrap.dedent("""
    import os, signal, sys
    from spacy_elmo.static import run, writer
    def die_while_writing(path, words, table):
        open(path, "wb").write(b"half")  # a torn vectors.txt.gz, after spacy/ was written
        os.kill(os.getpid(), signal.SIGKILL)
    writer.write_word2vec = die_while_writing
    run.distil_vectors(sys.argv[1], [sys.argv[2]], sys.argv[3], min_count=2, view="top", overwrite=True,
                       progress=False)
""")


def test_kill_9_while_writing_leaves_only_the_partial_folder(tiny_model, tmp_path):
    distil(tiny_model, tmp_path, view="layer_1")
    corpus, out = str(tmp_path / "corpus.txt"), tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", WRITE_KILLER, tiny_model.directory, corpus, str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    # the complete earlier output is untouched; the torn copy lies inside out.partial, nowhere else
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out", "out.partial"]
    assert json.loads((out / "card.json").read_text())["view"] == "layer_1"
    assert (tmp_path / "out.partial" / "output.writing" / "vectors.txt.gz").read_bytes() == b"half"
    card = distil_vectors(tiny_model.directory, [corpus], str(out), min_count=2, view="top", overwrite=True,
                          progress=False)
    assert card["resumed"] and json.loads((out / "card.json").read_text())["view"] == "top"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]
    with gzip.open(out / "vectors.txt.gz", "rt") as f:
        assert f.readline() == "7 32\n"


def test_other_arguments_start_afresh(tiny_model, tmp_path):
    corpus = write(tmp_path / "c.txt", LINES)
    partial = run.Partial(str(tmp_path / "out"), {"other": "arguments"})
    partial.save_state(numpy.ones((1, 1, 1)), numpy.ones(1, dtype=numpy.int64), {"position": 99})
    card = distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "out"), min_count=2, progress=False)
    assert not card["resumed"] and card["counts"]["records"] == 5 and card["counts"]["contexts"] == 21


def test_option_errors_name_the_option(tiny_model, tmp_path):
    corpus = write(tmp_path / "c.txt", LINES)
    with pytest.raises(ElmoConfigError, match=r"--lang 'zz'"):
        distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "o"), lang="zz", progress=False)
    with pytest.raises(ValueError, match=r"--threads = 'many'"):
        distil_vectors(tiny_model.directory, [corpus], str(tmp_path / "o"), threads="many", progress=False)
    code, line = cli(tiny_model.directory, corpus, tmp_path / "o", "--max-contexts", "-1")
    assert code == 2 and "--max-contexts" in line


def test_precision_is_recorded_and_close_to_float32(tiny_model, bilm, tmp_path):
    exact, nlp32 = distil(tiny_model, tmp_path, max_contexts=0, name="f32")
    card, nlp16 = distil(tiny_model, tmp_path, max_contexts=0, name="bf16", precision="bfloat16")
    ran = BiLM.from_pretrained(tiny_model.directory, precision="bfloat16").effective_precision
    assert exact["precision"] == "float32" and card["precision"] == ran
    a, b = table(nlp32), table(nlp16)
    assert list(a) == list(b)
    for word in a:
        cosine = a[word] @ b[word] / numpy.linalg.norm(a[word]) / numpy.linalg.norm(b[word])
        assert cosine > 0.999, (word, cosine)
    with pytest.raises(ElmoConfigError, match=r"^--precision 'fp8': expected one of float32, bfloat16, int8$"):
        distil_vectors(tiny_model.directory, [write(tmp_path / "c.txt", LINES)], str(tmp_path / "o"),
                       precision="fp8", progress=False)
