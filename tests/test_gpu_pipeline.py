"""CUDA checks of the spaCy component (``pytest -m gpu``): the component on the GPU, DocBin and
``nlp.to_disk`` from GPU to CPU, ``n_process`` refused with one clear error, bfloat16 in the
component. Skipped, with the reason, without spaCy's GPU support (cupy) or a CUDA device."""
import numpy
import pytest
import torch

spacy = pytest.importorskip("spacy", reason="GPU pipeline test: needs spaCy")

from spacy.tokens import DocBin  # noqa: E402
from spacy.training import Example  # noqa: E402
from thinc.api import require_cpu  # noqa: E402

from helpers import elmo_config  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU test: torch sees no CUDA device")]

TAGGER = {"model": {"@architectures": "spacy.Tagger.v2",
                    "tok2vec": {"@architectures": "spacy_elmo.ElmoListener.v1", "width": 16}}}
TRAIN = [("I like green eggs", ["N", "V", "J", "N"]), ("Eat blue ham", ["V", "J", "N"])]


@pytest.fixture
def on_gpu():
    """Thinc (and so spaCy) on the GPU for one test; skips without cupy."""
    pytest.importorskip("cupy", reason="GPU test: spaCy's GPU support needs cupy")
    if not spacy.prefer_gpu():
        pytest.skip("GPU test: spaCy found no GPU (cupy without a device?)")
    yield
    require_cpu()


def make_nlp(tiny_model, tagger=False, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(tiny_model, **config))
    if tagger:
        nlp.add_pipe("tagger", config=TAGGER)
    return nlp


def test_component_runs_on_cuda(tiny_model, on_gpu):
    nlp = make_nlp(tiny_model)
    doc = nlp("Runs on the GPU.")
    assert type(doc._.elmo.layers).__module__.startswith("cupy")
    assert nlp.get_pipe("elmo").bilm.device.type == "cuda"
    require_cpu()
    cpu_doc = make_nlp(tiny_model)("Runs on the GPU.")
    numpy.testing.assert_allclose(doc._.elmo.layers.get(), cpu_doc._.elmo.layers, atol=1e-5)


def test_bfloat16_component_on_cuda(tiny_model, on_gpu):
    nlp = make_nlp(tiny_model, precision="bfloat16")
    layers = nlp("The river bank overflowed.")._.elmo.layers
    assert layers.dtype == numpy.float32 and layers.shape[1] == 5
    assert nlp.get_pipe("elmo").bilm.effective_precision in ("bfloat16", "float16")


def test_docbin_from_gpu_reads_on_cpu(tiny_model, on_gpu):
    nlp = make_nlp(tiny_model)
    doc = nlp("Green eggs and ham.")
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    require_cpu()
    back = list(DocBin(store_user_data=True).from_bytes(data).get_docs(spacy.blank("en").vocab))[0]
    assert isinstance(back._.elmo.layers, numpy.ndarray)
    numpy.testing.assert_array_equal(back._.elmo.layers, doc._.elmo.layers.get())


def test_pipeline_saved_on_gpu_loads_on_cpu(tiny_model, on_gpu, tmp_path):
    nlp = make_nlp(tiny_model, tagger=True)
    examples = [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    gpu_layers = nlp("Green eggs and ham.")._.elmo.layers.get()
    nlp.to_disk(tmp_path / "gpu")
    require_cpu()
    cpu_nlp = spacy.load(tmp_path / "gpu")
    assert cpu_nlp.get_pipe("elmo").bilm.device.type == "cpu"
    numpy.testing.assert_allclose(cpu_nlp("Green eggs and ham.")._.elmo.layers, gpu_layers, atol=1e-4)


def test_n_process_with_cuda_is_refused(tiny_model, on_gpu):
    nlp = make_nlp(tiny_model)
    nlp("Warm up on the GPU.")
    with pytest.raises(ValueError, match="forks worker processes, which cannot use CUDA"):
        list(nlp.pipe(["One text.", "Two texts.", "Three."], n_process=2, batch_size=1))
