"""CUDA checks of spacy_elmo.allennlp (``pytest -m gpu``): ``Elmo(...).cuda()`` and
``ElmoEmbedder(cuda_device=0)`` give the CPU's outputs. Skipped where torch sees no CUDA device."""
import numpy
import pytest
import torch

from spacy_elmo.allennlp import Elmo, ElmoEmbedder, batch_to_ids

from allennlp_reference import inputs, model_files

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU test: torch sees no CUDA device")]


@pytest.fixture
def exact_products():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_elmo_on_cuda_is_elmo_on_the_cpu(exact_products):
    ids = batch_to_ids(inputs()["sentences"])
    words = torch.tensor(inputs()["word_ids"])
    for kw in (dict(do_layer_norm=True), dict(keep_sentence_boundaries=True),
               dict(vocab_to_cache=inputs()["vocab_to_cache"])):
        cpu = Elmo(*model_files("random"), 1, dropout=0.0, **kw)
        gpu = Elmo(*model_files("random"), 1, dropout=0.0, **kw).cuda()
        args = (words,) if "vocab_to_cache" in kw else ()
        want = cpu(ids, *args)
        got = gpu(ids.cuda(), *(a.cuda() for a in args))
        assert torch.equal(got["mask"].cpu(), want["mask"])
        diff = (got["elmo_representations"][0].cpu() - want["elmo_representations"][0]).abs().max()
        assert float(diff) <= 1e-5, kw


def test_embedder_on_cuda_device_0(exact_products):
    sentences = inputs()["embed_sentences"]
    cpu, gpu = ElmoEmbedder(*model_files("random")), ElmoEmbedder(*model_files("random"), cuda_device=0)
    assert gpu.elmo_bilm.bilm.device.type == "cuda"
    for a, b in zip(cpu.embed_batch(sentences), gpu.embed_batch(sentences)):
        assert a.shape == b.shape and float(numpy.abs(a - b).max()) <= 1e-5
