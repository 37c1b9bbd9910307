"""The one catalog of model names (``spacy_elmo.hub.catalog``), the page that shows it
(docs/models.md), and the one loader of a biLM by name (``spacy_elmo.hub.load_bilm``)."""
import os
import re
import subprocess
import sys

import pytest

from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.sizes import BYTES_PER_VALUE, MAX_PARAMS, n_params
from spacy_elmo.errors import ElmoConfigError
from spacy_elmo.hub import cache, catalog, load_bilm

from helpers import REPO

PAGE = REPO / "docs" / "models.md"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    for env in (catalog.MIRROR_ENV, catalog.EFML_MIRROR_ENV):
        monkeypatch.delenv(env, raising=False)


def _table(text: str, header: str) -> list:
    """The rows (lists of cells) of the markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        out.append([cell.strip() for cell in line.strip("|").split("|")])
    return out


def test_the_page_lists_the_catalog():
    """docs/models.md's catalog table is the catalog: every name, in order, with its format,
    language, size, training text and licence."""
    rows = _table(PAGE.read_text(encoding="utf-8"), "| name | format | language |")
    expected = [[f"`{e.name}`", e.format, f"{e.language} ({e.language_name})",
                 f"~{e.size_mb} MB" if e.size_mb else "not published", e.trained_on, e.licence]
                for e in catalog.CATALOG.values()]
    assert rows == expected
    shapes = _table(PAGE.read_text(encoding="utf-8"), "| name | shape (AllenNLP) |")
    assert [[r[0], r[1], r[2]] for r in shapes] == [[f"`{e.name}`", e.shape, str(2 * e.projection_dim)]
                                                    for e in catalog.CATALOG.values() if e.format == catalog.BILM_TF]


def official_options(entry) -> dict:
    """The options.json of an official bilm-tf model, from its catalog entry: AllenNLP's shape name
    gives the highway count (``_1xhighway``); every official model has 2 biLSTM layers, 16-dim
    character embeddings over 262 ids and the 2048 filters of widths 1-7 (Peters et al. 2018)."""
    highways = int(re.search(r"_(\d)xhighway", entry.shape).group(1))
    return {"lstm": {"dim": entry.lstm_dim, "projection_dim": entry.projection_dim, "n_layers": 2},
            "char_cnn": {"embedding": {"dim": 16}, "n_highway": highways, "n_characters": 262,
                         "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]}}


def test_the_sizes_on_the_page_are_those_the_shapes_give():
    """The parameter counts and weights.hdf5 sizes of docs/models.md (both tables) and the
    catalog's size_mb are computed from each model's shape (``bilm.sizes.n_params``; the size is
    parameters x 4 bytes), and the load limit the page quotes is 4x the original model's count."""
    text = PAGE.read_text(encoding="utf-8")
    rows = {r[0]: r for r in _table(text, "| name | shape (AllenNLP) |")}
    catalog_rows = {r[0]: r for r in _table(text, "| name | format | language |")}
    counts = {}
    for e in catalog.CATALOG.values():
        if e.format != catalog.BILM_TF:
            continue
        n = counts[e.name] = n_params(official_options(e))
        size = f"~{round(BYTES_PER_VALUE * n / 1e6)} MB"
        assert rows[f"`{e.name}`"][3:] == [f"{n / 1e6:.1f} M", size], e.name
        assert catalog_rows[f"`{e.name}`"][3] == size and e.size_mb == round(BYTES_PER_VALUE * n / 1e6), e.name
    assert counts == {"elmo-small": 13_593_296, "elmo-medium": 28_027_728, "elmo-original": 93_600_848,
                      "elmo-original-5.5b": 93_600_848}
    assert MAX_PARAMS == 4 * counts["elmo-original"]
    assert f"above {MAX_PARAMS:,} (4x the original ELMo's {counts['elmo-original']:,})" in " ".join(text.split())


def test_every_entry_is_complete_and_downloadable():
    names = catalog.names()
    assert len(names) == 48 and len(catalog.names(catalog.BILM_TF)) == 4 and len(catalog.names(catalog.EFML)) == 44
    urls = [u for e in catalog.CATALOG.values() for u in e.urls().values()]
    assert len(set(urls)) == len(urls) == 4 * 2 + 44
    for e in catalog.CATALOG.values():
        assert cache.check_name(e.name) == e.name and e.format in catalog.FORMATS and e.licence
        assert re.fullmatch(r"[a-z]{2,3}", e.language) and e.language_name and e.trained_on
        assert set(e.urls()) == set(e.sha256) == ({cache.ZIP} if e.format == catalog.EFML else set(cache.FILES))
    assert catalog.get("efml-de").urls() == {"source.zip": "http://vectors.nlpl.eu/repository/11/142.zip"}
    assert catalog.get("elmo-small").urls()["weights.hdf5"].endswith(
        "/2x1024_128_2048cnn_1xhighway/elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5")


def test_the_mirrors_replace_the_base_urls(monkeypatch):
    monkeypatch.setenv(catalog.MIRROR_ENV, "http://127.0.0.1:9/elmo/")
    monkeypatch.setenv(catalog.EFML_MIRROR_ENV, "https://127.0.0.1:9/nlpl")
    assert catalog.get("elmo-small").urls()["options.json"].startswith("http://127.0.0.1:9/elmo/2x1024_128")
    assert catalog.get("efml-zh").urls() == {"source.zip": "https://127.0.0.1:9/nlpl/179.zip"}


def test_unknown_names_get_the_closest_ones_and_the_count():
    assert catalog.unknown_name("elmo-smal") == ("'elmo-smal' is not a model of the catalog (did you mean elmo-small, "
                                                 "elmo-original or efml-sl?); the catalog's 48 names are listed "
                                                 "by: python -m spacy_elmo models")
    assert catalog.unknown_name("zzzzzzzz") == ("'zzzzzzzz' is not a model of the catalog; the catalog's 48 names are "
                                                "listed by: python -m spacy_elmo models")
    assert len(catalog.names()) == 48
    assert catalog.did_you_mean("elmo-small2") == " (did you mean elmo-small?)"


def test_a_misspelt_packaged_name_is_offered_first():
    assert catalog.closest("en_elmo_smal", ["en_elmo_small"]) == ["en_elmo_small", "elmo-small"]
    with pytest.raises(FileNotFoundError) as err:
        load_bilm("en_elmo_smal")
    assert str(err.value) == (
        "No ELMo model named or found at 'en_elmo_smal' (did you mean en_elmo_small or elmo-small?): not a directory "
        "with options.json + weights.hdf5, a packaged model (en_elmo_small), a downloaded one (none; in "
        f"{cache.cache_dir()}) or a model of the catalog; the catalog's 48 names are listed by: "
        "python -m spacy_elmo models")


def test_load_bilm_takes_a_name_a_directory_or_two_files(tiny_model, tmp_path):
    from spacy_elmo import DEFAULT_MODEL

    by_dir = load_bilm(tiny_model.directory)
    by_files = load_bilm(options_path=tiny_model.options_path, weights_path=tiny_model.weights_path)
    assert by_dir.options == by_files.options == BiLM.from_pretrained(tiny_model.directory).options
    assert load_bilm().options == load_bilm(DEFAULT_MODEL).options
    assert load_bilm(tiny_model.directory, precision="bfloat16").precision == "bfloat16"
    with pytest.raises(ElmoConfigError, match="options_path is given without weights_path"):
        load_bilm(options_path=tiny_model.options_path)
    with pytest.raises(FileNotFoundError, match="'efml-de' is not downloaded.*python -m spacy_elmo download efml-de"):
        load_bilm("efml-de")


def test_load_bilm_needs_no_spacy(tiny_model):
    code = ("import sys; from spacy_elmo.hub import load_bilm; load_bilm(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('spacy', 'thinc') "
            "or m.startswith('spacy_elmo.pipeline')))")
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code, tiny_model.directory], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_probe_loads_its_bilm_through_load_bilm(monkeypatch):
    """The probe does not build a spaCy pipeline to reach a biLM: it calls hub.load_bilm."""
    import spacy_elmo.hub
    from spacy_elmo.probe import ProbeSettings
    from spacy_elmo.probe.run import run_probe

    calls = []

    def loader(*args, **kwargs):
        calls.append(args)
        raise FileNotFoundError("stop here")

    monkeypatch.setattr(spacy_elmo.hub, "load_bilm", loader)
    with pytest.raises(FileNotFoundError, match="stop here"):
        run_probe("some-model", None, None, ProbeSettings(ewt_train="t", ewt_dev="d", wic="w", lm_text="*.txt"))
    assert calls == [("some-model", None, None)]


def test_embed_with_an_unknown_model_is_one_line_with_the_count_and_the_command(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.__main__ import app

    (tmp_path / "in.txt").write_text("the cat sat\n")
    result = CliRunner().invoke(app, ["embed", str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), "--model",
                                      "nonsense", "--quiet"])
    assert result.exit_code == 2
    assert result.output == (
        "error: No ELMo model named or found at 'nonsense': not a directory with options.json + weights.hdf5, a "
        f"packaged model (en_elmo_small), a downloaded one (none; in {cache.cache_dir()}) or a model of the "
        "catalog; the catalog's 48 names are listed by: python -m spacy_elmo models\n")
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]
