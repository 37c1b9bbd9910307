"""Every command that a model error or ``models`` prints works when pasted: each test makes the
state (an interrupted download, a name taken by another source, a changed file, an unknown name, a
disk that fills while a zip is unpacked), takes the command out of the message and runs it against
a local HTTP server on 127.0.0.1. Mirrors are http(s) only."""
import errno
import os
import re
import shlex
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoConfigError, ElmoDownloadError
from spacy_elmo.hub import cache, catalog, download_model, unzip
from spacy_elmo.hub.efml_download import download_efml
from spacy_elmo.hub.fetch import fetch
from spacy_elmo.hub.listing import rows

from helpers import REPO
from test_efml_download import MODEL, SENTENCES, expected, max_diff, model_zip
from test_hostile_download import _FailingDisk
from test_hub_download import FAST, serve_small, serve_urls, server, tiny  # noqa: F401  (fixtures)

PROGRAM = "python -m spacy_elmo "
ENDS = (", or ", "; ", " (", ")", " and download")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    for env in (catalog.MIRROR_ENV, catalog.EFML_MIRROR_ENV):
        monkeypatch.delenv(env, raising=False)


def commands(text: str) -> list:
    """Each ``python -m spacy_elmo ...`` command in a message, as the shell splits it."""
    found = []
    for start in [m.end() for m in re.finditer(re.escape(PROGRAM), text)]:
        rest = text[start:]
        end = min([rest.find(e) for e in ENDS if e in rest] or [len(rest)])
        found.append(shlex.split(rest[:end]))
    return found


def run(args: list):
    """Run ``python -m spacy_elmo ARGS`` (in this process); the result must succeed."""
    result = CliRunner().invoke(app, args + ["--quiet"] if args[0] == "download" else args)
    assert result.exit_code == 0, result.output
    return result


def serve_efml(server, monkeypatch, cut=False):  # noqa: F811
    """The fixture model as the catalog's efml-de under $SPACY_ELMO_EFML_MIRROR."""
    monkeypatch.setenv(catalog.EFML_MIRROR_ENV, server.url + "/repository/11")
    path = catalog.get("efml-de").urls()["source.zip"][len(server.url):]
    server.files[path] = model_zip()
    if cut:
        server.modes[path] = "cut"
    return path


def interrupted(name: str, call):
    """Run ``call`` (a download cut halfway, no retry): the model is left partial."""
    with pytest.raises(ElmoDownloadError, match="kept for resuming"):
        call()
    assert cache.state(name) == "partial"
    with pytest.raises(FileNotFoundError, match=f"{name!r} is only partly downloaded") as err:
        BiLM.from_pretrained(name)
    row = next(r for r in rows() if r["name"] == name)
    assert row["status"] == "partial" and commands(str(err.value)) == [shlex.split(row["command"])[3:]]
    return commands(str(err.value))[0]


def test_an_interrupted_catalog_efml_download_resumes_with_the_printed_command(server, monkeypatch):  # noqa: F811
    path = serve_efml(server, monkeypatch, cut=True)
    printed = interrupted("efml-de", lambda: download_efml("efml-de", retries=0, **FAST))
    assert printed == ["download", "efml-de"]
    run(printed)
    assert [r for p, r in server.log if p == path][-1] is not None  # resumed with a Range request
    assert max_diff(BiLM.from_pretrained("efml-de").embed_sentences(SENTENCES), expected(MODEL)) < 1e-5


def test_an_interrupted_efml_zip_of_a_url_resumes_with_the_printed_command(server):  # noqa: F811
    """The record of a zip downloaded from a URL has ``url`` and ``format``: the command names both."""
    server.files["/m/de.zip"], server.modes["/m/de.zip"] = model_zip(), "cut"
    url = server.url + "/m/de.zip"
    printed = interrupted("my-de", lambda: download_efml("my-de", url, retries=0, **FAST))
    assert printed == ["download", url, "--format", "elmoformanylangs", "--name", "my-de"]
    run(printed)
    assert max_diff(BiLM.from_pretrained("my-de").embed_sentences(SENTENCES), expected(MODEL)) < 1e-5


def test_an_interrupted_download_from_two_urls_resumes_in_a_shell(server, tiny, monkeypatch):  # noqa: F811
    """The printed command, pasted into ``sh``, finishes the model."""
    urls = serve_urls(server, tiny)
    server.modes["/m/weights.hdf5"] = "cut"
    printed = interrupted("my-elmo", lambda: download_model("my-elmo", urls, retries=0, **FAST))
    assert printed == ["download", urls["options.json"], urls["weights.hdf5"], "--name", "my-elmo"]
    line = PROGRAM + " ".join(shlex.quote(a) for a in printed) + " --quiet"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    done = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert BiLM.from_pretrained("my-elmo").options == tiny[0].options


def test_a_partial_folder_without_its_source_says_how_to_remove_it(server, tiny):  # noqa: F811
    urls = serve_urls(server, tiny)
    server.modes["/m/weights.hdf5"] = "cut"
    with pytest.raises(ElmoDownloadError):
        download_model("lost", urls, retries=0, **FAST)
    os.remove(os.path.join(cache.model_dir("lost"), cache.SOURCE))
    with pytest.raises(FileNotFoundError, match="source.json is missing") as err:
        BiLM.from_pretrained("lost")
    removal = re.search(r"remove it with: (rm -r \S+)", str(err.value)).group(1)
    assert next(r for r in rows() if r["name"] == "lost")["command"] == removal
    subprocess.run(shlex.split(removal), check=True)
    assert cache.state("lost") == "absent"


@pytest.mark.parametrize("kind", ["efml", "bilm-tf"])
def test_a_name_taken_by_another_source_prints_two_commands_that_work(server, tiny, kind):  # noqa: F811
    """``--name my`` of a model downloaded from other URLs: the error names a free name and --force."""
    if kind == "efml":
        server.files["/a.zip"], server.files["/b.zip"] = model_zip(), model_zip(folder="other")
        first, second = [server.url + "/a.zip"], [server.url + "/b.zip", "--format", "elmoformanylangs"]
        run(["download", *first, "--format", "elmoformanylangs", "--name", "my"])
    else:
        urls = serve_urls(server, tiny)
        server.files["/n/w.hdf5"] = tiny[2]
        first, second = [urls["options.json"], urls["weights.hdf5"]], [urls["options.json"], server.url + "/n/w.hdf5"]
        run(["download", *first, "--name", "my"])
    result = CliRunner().invoke(app, ["download", *second, "--name", "my", "--quiet"])
    assert result.exit_code == 2 and "was downloaded from another source" in result.output
    other_name, replace = commands(result.output)
    assert other_name == ["download", *second, "--name", "my-2"]
    assert replace == ["download", *second, "--name", "my", "--force"]
    run(other_name)
    assert cache.state("my-2") == "downloaded"
    run(replace)
    source = cache.read_source("my")
    assert (source.get("url") or source["urls"]["weights.hdf5"]) == second[0 if kind == "efml" else 1]


@pytest.mark.parametrize("name", ["efml-de", "elmo-small", "en_elmo_small"])
def test_a_catalog_or_packaged_name_for_urls_prints_a_free_name(server, tiny, name):  # noqa: F811
    server.files["/de.zip"] = model_zip()
    urls = serve_urls(server, tiny)
    source = [server.url + "/de.zip", "--format", "elmoformanylangs"] if name == "efml-de" else list(urls.values())
    result = CliRunner().invoke(app, ["download", *source, "--name", name, "--quiet"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    (printed,) = commands(result.output)
    assert printed == ["download", *source, "--name", f"{name}-2"]
    run(printed)
    assert BiLM.from_pretrained(f"{name}-2").num_layers >= 1


def test_a_bilm_tf_name_with_format_elmoformanylangs_prints_the_plain_download(server, tiny, monkeypatch):  # noqa: F811
    serve_small(server, tiny, monkeypatch)
    result = CliRunner().invoke(app, ["download", "elmo-small", "--format", "elmoformanylangs", "--quiet"])
    assert result.exit_code == 2 and "'elmo-small' is a bilm-tf model of the catalog" in result.output
    assert commands(result.output) == [["download", "elmo-small"]]
    run(commands(result.output)[0])
    assert cache.state("elmo-small") == "downloaded"


def test_a_catalog_efml_name_is_kept_whatever_mirror_it_came_from(server, monkeypatch):  # noqa: F811
    serve_efml(server, monkeypatch)
    run(["download", "efml-de"])
    monkeypatch.setenv(catalog.EFML_MIRROR_ENV, server.url + "/elsewhere")
    requests = len(server.log)
    result = run(["download", "efml-de"])
    assert "efml-de: ready" in result.output and len(server.log) == requests


def test_a_changed_file_prints_the_forced_download(server, tiny, monkeypatch):  # noqa: F811
    serve_small(server, tiny, monkeypatch)
    run(["download", "elmo-small"])
    weights = os.path.join(cache.model_dir("elmo-small"), "weights.hdf5")
    data = bytearray(open(weights, "rb").read())
    data[len(data) // 2] ^= 1
    open(weights, "wb").write(bytes(data))
    result = CliRunner().invoke(app, ["download", "elmo-small", "--quiet"])
    assert result.exit_code == 2 and "sha256" in result.output
    assert commands(result.output) == [["download", "elmo-small", "--force"]]
    assert next(r for r in rows(verify=True) if r["name"] == "elmo-small")["command"] == \
        "python -m spacy_elmo download elmo-small --force"
    run(commands(result.output)[0])
    BiLM.from_pretrained("elmo-small")


@pytest.mark.parametrize("argv, own", [
    (["download", "efml-xx"], "download URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME"),
    (["download", "efml-xx", "--format", "elmoformanylangs"], "download ZIP_URL --format elmoformanylangs --name NAME"),
])
def test_an_unknown_name_offers_the_closest_names_and_the_command_that_lists_all(argv, own):
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    assert result.output == ("error: 'efml-xx' is not a model of the catalog (did you mean efml-zh, efml-vi or "
                             "efml-ur?); the catalog's 48 names are listed by: python -m spacy_elmo models; a "
                             f"{'zip' if 'ZIP' in own else 'model'} of your own downloads in the form `{own}`\n")
    assert len(catalog.names()) == 48
    assert commands(result.output) == [["models"]]
    listed = run(["models"]).output
    assert all(f"\n{name} " in listed for name in catalog.names())
    with pytest.raises(FileNotFoundError, match=r"^No ELMo model named or found at 'efml-xx' \(did you mean efml-zh, "
                                                r"efml-vi or efml-ur\?\): not a directory .*; the catalog's 48 names "
                                                r"are listed by: python -m spacy_elmo models$"):
        BiLM.from_pretrained("efml-xx")


def test_models_lists_every_name_download_takes(monkeypatch):
    """``models --json`` holds the 48 names of the catalog; ``download`` takes each of them (it
    goes to the network: here a closed port on 127.0.0.1) and no other."""
    import json
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for env in (catalog.MIRROR_ENV, catalog.EFML_MIRROR_ENV):
        monkeypatch.setenv(env, f"http://127.0.0.1:{port}/m")
    listed = json.loads(run(["models", "--json"]).output)
    names = [r["name"] for r in listed if r["kind"] == "catalog"]
    assert names == catalog.names() and len(names) == 48
    assert len({tuple(sorted(r)) for r in listed}) == 1  # one set of keys for every row (packaged too)
    for row in listed:
        if row["kind"] == "catalog":
            assert row["format"] in catalog.FORMATS and row["language"] and row["licence"] and row["urls"]
            assert row["status"] == "not downloaded" and commands(row["command"]) == [["download", row["name"]]]
    for name in names:
        result = CliRunner().invoke(app, ["download", name, "--retries", "0", "--quiet"])
        assert result.exit_code == 2 and "cannot reach the server" in result.output, (name, result.output)
    table = run(["models"]).output.splitlines()
    assert table[0].split() == ["name", "format", "language", "size", "licence", "status", "command"]
    de = next(line for line in table if line.startswith("efml-de "))
    assert de.split()[:3] == ["efml-de", "elmoformanylangs", "de"] and de.endswith("download efml-de")
    assert cache.downloaded() == []


@pytest.mark.parametrize("env, name", [(catalog.MIRROR_ENV, "elmo-small"), (catalog.EFML_MIRROR_ENV, "efml-de")])
@pytest.mark.parametrize("value", ["file:///etc", "ftp://127.0.0.1/m", "/srv/mirror"])
def test_a_mirror_must_be_http(env, name, value, monkeypatch, tmp_path):
    monkeypatch.setenv(env, value)
    result = CliRunner().invoke(app, ["download", name, "--quiet"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert f"${env} = {value!r}: a mirror must be an http(s) URL" in result.output
    assert cache.downloaded() == []
    with pytest.raises(ElmoConfigError, match="not an http"):
        fetch("file:///etc/hostname", str(tmp_path / "x.part"), progress=False)
    assert not (tmp_path / "x.part").exists()


def _fill_disk_on_unpack(monkeypatch, room: int):
    real = open

    def fake_open(path, mode="r", *args, **kwargs):
        f = real(path, mode, *args, **kwargs)
        return _FailingDisk(f, room, errno.ENOSPC) if "w" in mode else f

    monkeypatch.setattr(unzip, "open", fake_open, raising=False)


def test_a_full_disk_while_unpacking_keeps_the_zip(server, monkeypatch):  # noqa: F811
    path = serve_efml(server, monkeypatch)
    _fill_disk_on_unpack(monkeypatch, 1000)
    result = CliRunner().invoke(app, ["download", "efml-de", "--quiet"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "cannot write the unpacked files (disk full)" in result.output and "not a readable zip" not in result.output
    kept = os.path.join(cache.model_dir("efml-de"), "source.zip")
    assert open(kept, "rb").read() == server.files[path]
    assert not os.path.exists(os.path.join(cache.model_dir("efml-de"), "unpacked.tmp"))
    assert next(r for r in rows() if r["name"] == "efml-de")["status"] == "partial"
    monkeypatch.setattr(unzip, "open", open, raising=False)  # the disk has room again
    requests = [p for p, _ in server.log].count(path)
    (printed,) = commands(result.output)
    run(printed)
    assert [p for p, _ in server.log].count(path) == requests  # the kept zip, not fetched again
    assert max_diff(BiLM.from_pretrained("efml-de").embed_sentences(SENTENCES), expected(MODEL)) < 1e-5
    assert sorted(os.listdir(cache.model_dir("efml-de"))) == ["options.json", "sha256.json", "source.json",
                                                              "weights.hdf5"]


def test_a_full_disk_while_converting_keeps_the_zip(server, monkeypatch):  # noqa: F811
    import spacy_elmo.convert

    serve_efml(server, monkeypatch)

    def no_room(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spacy_elmo.convert, "convert", no_room)
    with pytest.raises(ElmoDownloadError, match=r"cannot write the converted model \(disk full\): the downloaded "
                                                r"zip is kept in .*source\.zip") as err:
        download_efml("efml-de", **FAST)
    assert err.value.resumable and os.path.isfile(err.value.path)


def test_a_kept_zip_that_changed_is_fetched_again(server, monkeypatch):  # noqa: F811
    path = serve_efml(server, monkeypatch)
    _fill_disk_on_unpack(monkeypatch, 0)
    with pytest.raises(ElmoDownloadError, match="disk full"):
        download_efml("efml-de", **FAST)
    monkeypatch.setattr(unzip, "open", open, raising=False)
    kept = os.path.join(cache.model_dir("efml-de"), "source.zip")
    open(kept, "ab").write(b"changed")
    requests = [p for p, _ in server.log].count(path)
    download_efml("efml-de", **FAST)
    assert [p for p, _ in server.log].count(path) == requests + 1
    assert cache.state("efml-de") == "downloaded"
