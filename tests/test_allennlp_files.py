"""Where spacy_elmo.allennlp's options_file / weight_file point: files, model names and
directories, and the four official AllenNLP URLs, which name models of the download cache (and
never download)."""
import pytest
import torch

from spacy_elmo.allennlp import OFFICIAL_MODELS, Elmo, ElmoEmbedder, batch_to_ids
from spacy_elmo.allennlp.files import official_name
from spacy_elmo.errors import ElmoConfigError, ElmoTypeError

from allennlp_reference import DATA, model_files
from helpers import write_tiny_model

HOSTS = ["https://allennlp.s3.amazonaws.com/models/elmo", "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"]


def urls(shape, host=HOSTS[0]):
    stem = f"{host}/{shape}/elmo_{shape}"
    return f"{stem}_options.json", f"{stem}_weights.hdf5"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("shape", sorted(OFFICIAL_MODELS))
def test_each_official_url_names_a_registered_model_and_downloads_nothing(shape, host, cache):
    name = OFFICIAL_MODELS[shape]
    assert official_name(urls(shape, host)[0]) == (name, "options.json")
    assert official_name(urls(shape, host)[1]) == (name, "weights.hdf5")
    with pytest.raises(FileNotFoundError, match=f"not downloaded .*python -m spacy_elmo download {name}$"):
        Elmo(*urls(shape, host), 1)
    assert list(cache.iterdir()) == []


def test_an_official_url_loads_the_cached_model(cache):
    write_tiny_model(cache / "elmo-small")
    x = batch_to_ids([["The", "cat"]])
    by_url = Elmo(*urls("2x1024_128_2048cnn_1xhighway"), 1, dropout=0.0)(x)
    by_name = Elmo("elmo-small", None, 1, dropout=0.0)(x)
    by_files = Elmo(str(cache / "elmo-small" / "options.json"), str(cache / "elmo-small" / "weights.hdf5"), 1,
                    dropout=0.0)(x)
    by_options_url = Elmo(urls("2x1024_128_2048cnn_1xhighway")[0], None, 1, dropout=0.0)(x)
    for out in (by_name, by_files, by_options_url):
        assert torch.equal(out["elmo_representations"][0], by_url["elmo_representations"][0])
    assert ElmoEmbedder(*urls("2x1024_128_2048cnn_1xhighway")).embed_sentence(["a"]).shape == (3, 1, 32)


def test_a_directory_or_files():
    x = batch_to_ids([["A", "dog"]])
    by_dir = Elmo(str(DATA / "random"), None, 1, dropout=0.0)(x)
    by_files = Elmo(*model_files("random"), 1, dropout=0.0)(x)
    assert torch.equal(by_dir["elmo_representations"][0], by_files["elmo_representations"][0])


def test_what_cannot_be_used_is_named(cache):
    options, weights = urls("2x4096_512_2048cnn_2xhighway")
    with pytest.raises(ElmoConfigError, match="is the weights.hdf5 of 'elmo-original'; expected its options.json"):
        Elmo(weights, options, 1)
    with pytest.raises(ElmoConfigError, match="not one of the official .* download URL_OF_OPTIONS URL_OF_WEIGHTS"):
        Elmo("https://example.org/elmo_options.json", "https://example.org/elmo_weights.hdf5", 1)
    with pytest.raises(ElmoConfigError, match="not one of the official"):
        Elmo("https://allennlp.s3.amazonaws.com/models/elmo/2x9_9/elmo_2x9_9_options.json", None, 1)
    with pytest.raises(ElmoConfigError, match="weight_file is None beside the options file"):
        Elmo(model_files("random")[0], None, 1)
    with pytest.raises(ElmoConfigError, match="options_file is None"):
        Elmo(None, None, 1)
    with pytest.raises(FileNotFoundError, match="No ELMo model named or found at 'no/such/options.json'"):
        Elmo("no/such/options.json", "no/such/weights.hdf5", 1)
    with pytest.raises(ElmoTypeError, match="expected a path, model name or URL for options.json, got int"):
        Elmo(3, None, 1)
