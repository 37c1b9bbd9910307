"""Round trips: Doc bytes, DocBin, nlp.to_disk/spacy.load, to_bytes/from_bytes, pickle, n_process."""
import os
import pickle
import shutil
import sys

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_elmo.pipeline import learned_mixes
from spacy_elmo.pipeline.data_classes import as_elmo_data

from helpers import REPO, elmo_config, run_group

TAGGER = {"model": {"@architectures": "spacy.Tagger.v2",
                    "tok2vec": {"@architectures": "spacy_elmo.ElmoListener.v1", "width": 16}}}
TRAIN = [("I like green eggs", ["N", "V", "J", "N"]), ("Eat blue ham", ["V", "J", "N"])]
TEXTS = ["The river bank overflowed.", "", "Green eggs and ham!", "寿司 🍕 " + "y" * 60]


@pytest.fixture(scope="module")
def trained(tiny_model, tmp_path_factory):
    """A trained elmo + tagger pipeline whose biLM files are deleted after loading."""
    copy = tmp_path_factory.mktemp("model")
    for name in ("options.json", "weights.hdf5", "sha256.json"):
        shutil.copy(os.path.join(tiny_model.directory, name), copy / name)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config((copy / "options.json", copy / "weights.hdf5")))
    nlp.add_pipe("tagger", config=TAGGER)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    shutil.rmtree(copy)  # from here on the weights exist only inside the pipeline
    return nlp


def _same(nlp_a, nlp_b, exact=True):
    for a, b in zip(nlp_a.pipe(TEXTS), nlp_b.pipe(TEXTS)):
        if exact:
            numpy.testing.assert_array_equal(a._.elmo.layers, b._.elmo.layers)
        else:
            numpy.testing.assert_allclose(a._.elmo.layers, b._.elmo.layers, atol=1e-5)
        assert [t.tag_ for t in a] == [t.tag_ for t in b]
    assert learned_mixes(nlp_a) == learned_mixes(nlp_b)


def test_doc_bytes_and_docbin(trained):
    doc = trained("Green eggs and ham.")
    back = Doc(trained.vocab).from_bytes(doc.to_bytes())
    numpy.testing.assert_array_equal(back._.elmo.layers, doc._.elmo.layers)
    numpy.testing.assert_array_equal(back[1]._.elmo, doc[1]._.elmo)
    docs = list(trained.pipe(TEXTS))
    loaded = list(DocBin(docs=docs, store_user_data=True).get_docs(trained.vocab))
    for a, b in zip(docs, loaded):
        assert isinstance(b._.elmo.layers, numpy.ndarray) and b._.elmo.store == "all"
        numpy.testing.assert_array_equal(a._.elmo.layers, b._.elmo.layers)


def test_value_read_without_the_decoder_is_wrapped():
    layers = numpy.ones((3, 2, 4), dtype="float16")
    data = as_elmo_data({"__spacy_elmo_data__": {"layers": layers, "store": "all"}})
    assert data.layers is layers and data.store == "all"
    with pytest.raises(TypeError):
        as_elmo_data(42)


def test_to_disk_and_spacy_load(trained, tmp_path):
    trained.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("elmo").listening_components == ["tagger"]
    _same(trained, loaded)
    mixes = learned_mixes(loaded)["tagger"]
    assert mixes.weights != pytest.approx([1 / 3] * 3, abs=1e-4)


def test_to_bytes_from_bytes(trained):
    fresh = spacy.util.load_model_from_config(trained.config, auto_fill=True)
    fresh.from_bytes(trained.to_bytes())
    _same(trained, fresh)


def test_pickle(trained):
    _same(trained, pickle.loads(pickle.dumps(trained)))


def test_multiprocessing_equals_serial(trained):
    serial = list(trained.pipe(TEXTS * 3))
    parallel = list(trained.pipe(TEXTS * 3, n_process=2, batch_size=1))
    for a, b in zip(serial, parallel):
        numpy.testing.assert_allclose(a._.elmo.layers, b._.elmo.layers, atol=1e-5)
        assert [t.tag_ for t in a] == [t.tag_ for t in b]




# spaCy's nlp.pipe(n_process=2) over an iterator that raises after 8 texts, without and with elmo:
# what was raised and how many Docs came before. 150-token texts: a Doc's bytes are 18 KB without
# elmo; its layers (150 x 3 x 64 float32, 115 KB) do not fit the 64 KiB result pipe.
RAISING_INPUT = """
import sys, spacy
sys.path.insert(0, "tests")
from helpers import elmo_config

def texts():
    for i in range(8):
        yield " ".join(["the river bank"] * 50)
    raise RuntimeError("the input broke")

def outcome(nlp):
    n = 0
    try:
        for _ in nlp.pipe(texts(), n_process=2, batch_size=1):
            n += 1
    except RuntimeError as err:
        return f"{err} after {n} docs"
    return f"no error after {n} docs"

nlp = spacy.blank("en")
print("blank:", outcome(nlp), flush=True)
nlp.add_pipe("elmo", config=elmo_config(sys.argv[1:3]))
nlp("Warm up in the parent.")
print("elmo:", outcome(nlp), flush=True)
"""


def test_n_process_raises_when_the_input_raises(tiny_model):
    """The parent's error reaches the caller as it does without elmo: workers forked by spaCy do
    not keep the result pipes open (they did, and a worker blocked for ever sending large layers)."""
    code, out = run_group([sys.executable, "-c", RAISING_INPUT, tiny_model.options_path, tiny_model.weights_path],
                          timeout=180, cwd=REPO)
    assert code == 0, f"hung or failed (returncode {code}):\n{out[-3000:]}"
    lines = [line for line in out.splitlines() if line.startswith(("blank:", "elmo:"))]
    assert lines[0] == "blank: the input broke after 6 docs"
    assert lines[1] == "elmo: the input broke after 6 docs"
