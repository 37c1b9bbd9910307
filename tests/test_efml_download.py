"""``download ... --format elmoformanylangs``: a zipped ELMoForManyLangs fixture served from
127.0.0.1, unpacked safely, converted, and used by name; zips that try to escape their folder,
links, size limits, a resumed transfer, a wrong digest."""
import hashlib
import io
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoDownloadError
from spacy_elmo.hub import cache, catalog
from spacy_elmo.hub.efml_download import download_efml
from spacy_elmo.hub.unzip import safe_extract

from test_efml import DATA, SENTENCES, expected, max_diff
from test_hub_download import server  # noqa: F401 - the local HTTP server fixture

MODEL = "relu-words-1layer"
FAST = {"progress": False, "backoff": 0.0, "timeout": 5.0}


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(catalog.EFML_MIRROR_ENV, raising=False)


def model_zip(folder="de.model", extra=()) -> bytes:
    """The fixture model zipped as the published ones are (one folder), plus extra (name, bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted((DATA / MODEL).iterdir()):
            if f.name != "expected.npz":
                zf.write(f, f"{folder}/{f.name}" if folder else f.name)
        for name, data in extra:
            zf.writestr(name, data)
    return buf.getvalue()


def link_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("de.model/config.json")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def two_models_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for folder in ("a", "b"):
            zf.writestr(f"{folder}/config.json", "{}")
    return buf.getvalue()


def test_download_convert_and_use_by_name(server, tmp_path):  # noqa: F811
    body = model_zip()
    server.files["/m/de.zip"] = body
    result = CliRunner().invoke(app, ["download", server.url + "/m/de.zip", "--format", "elmoformanylangs",
                                      "--name", "my-de", "--quiet"])
    assert result.exit_code == 0, result.output
    d = Path(cache.model_dir("my-de"))
    assert sorted(os.listdir(d)) == ["options.json", "sha256.json", "source.json", "weights.hdf5"]
    source = json.loads((d / "source.json").read_text())
    assert source["zip_sha256"] == hashlib.sha256(body).hexdigest() and source["format"] == "elmoformanylangs"
    assert max_diff(BiLM.from_pretrained("my-de").embed_sentences(SENTENCES), expected(MODEL)) < 1e-5
    requests = len(server.log)
    assert download_efml("my-de", server.url + "/m/de.zip", **FAST) == str(d)  # complete: kept, not fetched
    assert len(server.log) == requests
    with pytest.raises(ValueError, match="downloaded from another source"):
        download_efml("my-de", server.url + "/m/other.zip", **FAST)


def test_registered_language_code_through_the_mirror(server, monkeypatch):  # noqa: F811
    assert len(catalog.names(catalog.EFML)) == 44
    assert catalog.get("efml-de").urls()["source.zip"].endswith("/11/142.zip")
    monkeypatch.setenv(catalog.EFML_MIRROR_ENV, server.url + "/repository/11")
    server.files["/repository/11/142.zip"] = model_zip(folder=None)  # files at the archive's root
    result = CliRunner().invoke(app, ["download", "efml-de", "--quiet"])
    assert result.exit_code == 0, result.output
    assert max_diff(BiLM.from_pretrained("efml-de").embed_sentences(SENTENCES[:3]), expected(MODEL)[:3]) < 1e-5


@pytest.mark.parametrize("bad, why", [
    (model_zip(extra=[("../escaped.txt", b"x")]), "climbs out of the folder"),
    (model_zip(extra=[("de.model/../../escaped.txt", b"x")]), "climbs out of the folder"),
    (model_zip(extra=[("/tmp/escaped.txt", b"x")]), "an absolute path"),
    (link_zip(), "a symbolic link"),
    (b"PK\x03\x04 not really a zip", "not a readable zip archive"),
    (two_models_zip(), "holds 2 ELMoForManyLangs model folders"),
])
def test_unsafe_or_bad_zips_are_refused(server, tmp_path, bad, why):  # noqa: F811
    server.files["/bad.zip"] = bad
    result = CliRunner().invoke(app, ["download", server.url + "/bad.zip", "--format", "elmoformanylangs",
                                      "--name", "bad", "--quiet"])
    assert result.exit_code == 2 and why in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped.txt").exists()
    assert cache.state("bad") == "absent"  # nothing kept


def test_size_limit_counts_the_bytes_written(tmp_path):
    path = tmp_path / "big.zip"
    path.write_bytes(model_zip(extra=[("de.model/big.bin", b"\0" * 200_000)]))
    with pytest.raises(ElmoDownloadError, match="unpacks to more than 100,000 bytes"):
        safe_extract(str(path), str(tmp_path / "out"), max_bytes=100_000)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ElmoDownloadError, match="more than the limit of 3"):
        safe_extract(str(path), str(tmp_path / "out"), max_members=3)


def test_resumed_transfer_and_pinned_digest(server):  # noqa: F811
    body = model_zip()
    server.files["/de.zip"] = body
    server.modes["/de.zip"] = "cut"  # the first answer stops halfway
    d = download_efml("cut-de", server.url + "/de.zip", sha256=hashlib.sha256(body).hexdigest(), **FAST)
    assert [r for _, r in server.log if r] == [f"bytes={len(body) // 2}-"]  # resumed where it stopped
    assert BiLM.from_pretrained("cut-de").num_layers == 1 and os.path.isdir(d)
    with pytest.raises(ElmoDownloadError, match="sha256 .* differs from the expected"):
        download_efml("pinned", server.url + "/de.zip", sha256="0" * 64, **FAST)
    assert cache.state("pinned") == "absent"


def test_download_arguments_are_checked():
    runner = CliRunner()
    bad = runner.invoke(app, ["download", "http://127.0.0.1:9/x.zip", "--format", "elmoformanylangs"])
    assert bad.exit_code == 2 and "ZIP_URL --format elmoformanylangs --name NAME" in bad.output
    bad = runner.invoke(app, ["download", "efml-xx", "--format", "elmoformanylangs"])
    assert bad.exit_code == 2 and "'efml-xx' is not a model of the catalog" in bad.output
    bad = runner.invoke(app, ["download", "http://127.0.0.1:9/x.zip", "--format", "elmoformanylangs",
                              "--name", "efml-de"])
    assert bad.exit_code == 2 and "is taken by a model of the catalog" in bad.output


def test_bad_download_arguments_are_elmo_errors_and_value_errors():
    """A bad --sha256 pin or --format of an ELMoForManyLangs download is an
    ElmoConfigError: an ElmoError and, as before, a ValueError; nothing is fetched."""
    from spacy_elmo.errors import ElmoConfigError, ElmoError
    from spacy_elmo.hub.cli import download_source

    with pytest.raises(ElmoConfigError, match=r"--sha256 'abc': expected 64 hex digits \(the zip's\)") as err:
        download_efml("efml-de", sha256="abc", progress=False)
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    with pytest.raises(ValueError, match=r"--format 'zip': expected elmoformanylangs") as err:
        download_source(["efml-de"], None, "zip", None, False, False, 0)
    assert isinstance(err.value, ElmoError)
    assert not os.path.exists(cache.model_dir("efml-de"))
