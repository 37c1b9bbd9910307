"""``download``: registry names and URLs into the cache, against a local HTTP server on 127.0.0.1
(complete, resumed after a cut, corrupt byte, 404, closed connection, no server); model names
resolve to the cache; nothing downloads implicitly; ``models`` lists what is there."""
import hashlib
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.errors import ElmoDownloadError, ElmoModelFileError
from spacy_elmo.hub import cache, catalog, download_model
from spacy_elmo.hub.listing import rows

from helpers import elmo_config

TINY = {"lstm": {"dim": 8, "projection_dim": 4, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"embedding": {"dim": 3}, "filters": [[1, 2], [2, 3]], "n_highway": 1}}
SMALL = catalog.get("elmo-small")
FAST = {"progress": False, "backoff": 0.0, "timeout": 5.0}


class Handler(BaseHTTPRequestHandler):
    """Serves server.files {path: bytes} with Range support. server.modes {path: mode}:
    "cut" (send half the body, then close; server.cuts times), "close" (close without answering),
    "no_range" (ignore Range). Every request is logged in server.log as (path, Range header)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        srv.log.append((self.path, self.headers.get("Range")))
        mode = srv.modes.get(self.path)
        if mode == "close":
            self.close_connection = True
            return
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and mode != "no_range":
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if mode == "cut" and srv.cuts > 0:
            srv.cuts -= 1
            self.wfile.write(body[start: start + (len(body) - start) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body[start:])


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.files, srv.modes, srv.log, srv.cuts = {}, {}, [], 1
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny model written by BiLM.save: (BiLM, options bytes, weights bytes)."""
    d = tmp_path_factory.mktemp("tiny")
    bilm = BiLM(TINY)
    bilm.save(d)
    return bilm, (d / "options.json").read_bytes(), (d / "weights.hdf5").read_bytes()


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_ELMO_MIRROR", raising=False)


def serve_small(server, tiny, monkeypatch, weights=None):
    """Put the tiny model where the registry's elmo-small lives under $SPACY_ELMO_MIRROR."""
    monkeypatch.setenv("SPACY_ELMO_MIRROR", server.url + "/elmo")
    urls = SMALL.urls()
    paths = {f: u[len(server.url):] for f, u in urls.items()}
    server.files[paths["options.json"]] = tiny[1]
    server.files[paths["weights.hdf5"]] = tiny[2] if weights is None else weights
    return paths


def serve_urls(server, tiny):
    server.files["/m/options.json"], server.files["/m/weights.hdf5"] = tiny[1], tiny[2]
    return {"options.json": server.url + "/m/options.json", "weights.hdf5": server.url + "/m/weights.hdf5"}


def cache_listing():
    root = cache.cache_dir()
    return sorted(os.listdir(root)) if os.path.isdir(root) else []


@pytest.mark.slow
def test_download_registered_name_then_use_it_everywhere(server, tiny, monkeypatch):
    serve_small(server, tiny, monkeypatch)
    result = CliRunner().invoke(app, ["download", "elmo-small", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "elmo-small: ready in" in result.output
    d = cache.model_dir("elmo-small")
    assert sorted(os.listdir(d)) == ["options.json", "sha256.json", "source.json", "weights.hdf5"]
    assert open(os.path.join(d, "weights.hdf5"), "rb").read() == tiny[2]
    assert cache.read_source("elmo-small")["sha256"]["weights.hdf5"] == hashlib.sha256(tiny[2]).hexdigest()
    # by name: the biLM, and a pipeline config
    sents = [["The", "river", "bank"], []]
    for a, b in zip(BiLM.from_pretrained("elmo-small").embed_sentences(sents), tiny[0].embed_sentences(sents)):
        numpy.testing.assert_array_equal(a, b)
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config=elmo_config(name="elmo-small"))
    layers = nlp("The river bank")._.elmo.layers
    assert layers.shape == (TINY["lstm"]["n_layers"] + 1, 3, 2 * TINY["lstm"]["projection_dim"])
    # a second download checks and keeps it: no request
    n = len(server.log)
    assert CliRunner().invoke(app, ["download", "elmo-small", "--quiet"]).exit_code == 0
    assert len(server.log) == n
    row = next(r for r in rows() if r["name"] == "elmo-small")
    assert row["status"] == "ready" and row["shape"] == "2x8_4_5cnn_1xhighway"


def test_resume_after_a_cut_mid_file(server, tiny, monkeypatch):
    paths = serve_small(server, tiny, monkeypatch)
    server.modes[paths["weights.hdf5"]] = "cut"
    download_model("elmo-small", **FAST)
    ranges = [r for p, r in server.log if p == paths["weights.hdf5"]]
    assert ranges[0] is None and ranges[1] == f"bytes={len(tiny[2]) // 2}-"
    assert open(os.path.join(cache.model_dir("elmo-small"), "weights.hdf5"), "rb").read() == tiny[2]


def test_resume_in_a_later_run(server, tiny, monkeypatch):
    paths = serve_small(server, tiny, monkeypatch)
    server.modes[paths["weights.hdf5"]] = "cut"
    with pytest.raises(ElmoDownloadError, match=r"connection closed after .* bytes.*kept for resuming"):
        download_model("elmo-small", retries=0, **FAST)
    d = cache.model_dir("elmo-small")
    assert os.path.getsize(os.path.join(d, "weights.hdf5.part")) == len(tiny[2]) // 2
    assert not os.path.exists(os.path.join(d, "weights.hdf5")) and cache.state("elmo-small") == "partial"
    with pytest.raises(FileNotFoundError, match="partly downloaded.*python -m spacy_elmo download elmo-small"):
        BiLM.from_pretrained("elmo-small")
    assert "partial" in next(r for r in rows() if r["name"] == "elmo-small")["status"]
    download_model("elmo-small", **FAST)
    assert server.log[-1] == (paths["weights.hdf5"], f"bytes={len(tiny[2]) // 2}-")
    assert cache.state("elmo-small") == "downloaded"
    BiLM.from_pretrained("elmo-small")


def test_a_server_that_ignores_range_restarts_from_zero(server, tiny, monkeypatch):
    paths = serve_small(server, tiny, monkeypatch)
    server.modes[paths["weights.hdf5"]] = "cut"
    with pytest.raises(ElmoDownloadError):
        download_model("elmo-small", retries=0, **FAST)
    server.modes[paths["weights.hdf5"]] = "no_range"
    download_model("elmo-small", **FAST)
    assert open(os.path.join(cache.model_dir("elmo-small"), "weights.hdf5"), "rb").read() == tiny[2]


def test_a_corrupted_byte_is_a_digest_mismatch(server, tiny, monkeypatch):
    bad = bytearray(tiny[2])
    bad[len(bad) // 2] ^= 0x01
    serve_small(server, tiny, monkeypatch, weights=bytes(bad))
    pin = hashlib.sha256(tiny[2]).hexdigest()
    result = CliRunner().invoke(app, ["download", "elmo-small", "--sha256", pin, "--quiet"])
    assert result.exit_code == 2
    assert "weights.hdf5: sha256" in result.output and "differs from the expected" in result.output
    assert "nothing was kept" in result.output and cache_listing() == []


def test_a_byte_changed_in_the_cache_is_refused_on_load(server, tiny, monkeypatch):
    serve_small(server, tiny, monkeypatch)
    download_model("elmo-small", **FAST)
    path = os.path.join(cache.model_dir("elmo-small"), "weights.hdf5")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x01
    open(path, "wb").write(bytes(data))
    with pytest.raises(ElmoModelFileError, match=r"weights\.hdf5: sha256 .* differs"):
        BiLM.from_pretrained("elmo-small")
    assert next(r for r in rows(verify=True) if r["name"] == "elmo-small")["status"].startswith("CORRUPT")
    with pytest.raises(ElmoDownloadError, match="--force"):
        download_model("elmo-small", **FAST)
    download_model("elmo-small", force=True, **FAST)
    BiLM.from_pretrained("elmo-small")


def test_files_that_do_not_load_are_not_kept(server, tiny, monkeypatch):
    serve_small(server, tiny, monkeypatch, weights=tiny[2][: len(tiny[2]) // 3])  # complete answer, bad HDF5
    with pytest.raises(ElmoDownloadError, match="not a usable ELMo model.*nothing was kept"):
        download_model("elmo-small", **FAST)
    assert cache_listing() == []


def test_urls_with_a_name(server, tiny):
    urls = serve_urls(server, tiny)
    result = CliRunner().invoke(app, ["download", urls["options.json"], urls["weights.hdf5"], "--name", "my-elmo",
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert BiLM.from_pretrained("my-elmo").options == tiny[0].options
    row = next(r for r in rows() if r["name"] == "my-elmo")
    assert row["kind"] == "downloaded" and row["status"] == "ready"
    with pytest.raises(ValueError, match="downloaded from another source"):
        download_model("my-elmo", {"options.json": urls["options.json"], "weights.hdf5": urls["options.json"]}, **FAST)


def test_404_is_an_error_at_once(server, tiny):
    urls = serve_urls(server, tiny)
    urls["weights.hdf5"] = server.url + "/missing/weights.hdf5"
    with pytest.raises(ElmoDownloadError, match=r"/missing/weights\.hdf5: HTTP 404"):
        download_model("m404", urls, **FAST)
    assert [p for p, _ in server.log].count("/missing/weights.hdf5") == 1
    assert cache_listing() == []


def test_a_server_that_closes_the_connection(server, tiny):
    urls = serve_urls(server, tiny)
    server.modes["/m/options.json"] = "close"
    result = CliRunner().invoke(app, ["download", urls["options.json"], urls["weights.hdf5"], "--name", "m",
                                      "--retries", "1", "--quiet"])
    assert result.exit_code == 2
    assert "closed the connection" in result.output and "nothing was written" in result.output
    assert [p for p, _ in server.log].count("/m/options.json") == 2
    assert cache_listing() == []


def test_no_network_is_a_clear_error_and_leaves_nothing(tiny):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    urls = {f: f"http://127.0.0.1:{port}/{f}" for f in cache.FILES}
    with pytest.raises(ElmoDownloadError, match="cannot reach the server.*gave up after 2 tries; nothing was written"):
        download_model("offline", urls, retries=1, **FAST)
    assert cache_listing() == []


def test_registered_but_not_downloaded_says_the_command(monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_MIRROR", "http://127.0.0.1:9/never-contacted")
    with pytest.raises(FileNotFoundError, match="'elmo-original' is not downloaded.*python -m spacy_elmo download "
                                                "elmo-original"):
        BiLM.from_pretrained("elmo-original")
    import spacy

    from spacy_elmo.errors import ElmoConfigError

    nlp = spacy.blank("en")
    expected = r"\[components.elmo.model\] name = 'elmo-medium'.*python -m spacy_elmo download elmo-medium"
    with pytest.raises(ElmoConfigError, match=expected):
        nlp.add_pipe("elmo", config=elmo_config(name="elmo-medium"))
        nlp.initialize()
    with pytest.raises(FileNotFoundError, match=r"^No ELMo model named or found at 'no-such-model': .* or a model "
                                                r"of the catalog; the catalog's 48 names are listed by: "
                                                r"python -m spacy_elmo models$"):
        BiLM.from_pretrained("no-such-model")
    assert cache_listing() == []


@pytest.mark.parametrize("argv, message", [
    (["download", "elmo-huge"], "'elmo-huge' is not a model of the catalog"),
    (["download", "http://x/o.json", "http://x/w.hdf5"], "--name NAME"),
    (["download", "http://x/o.json", "http://x/w.hdf5", "--name", "elmo-small"], "is taken by a model of the catalog"),
    (["download", "http://x/o.json", "http://x/w.hdf5", "--name", "../up"], "invalid model name"),
    (["download", "ftp://x/o.json", "http://x/w.hdf5", "--name", "m"], "not an http(s) URL"),
    (["download", "elmo-small", "--sha256", "abc"], "64 hex digits"),
])
def test_bad_arguments_are_one_line_errors(argv, message):
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert cache_listing() == []


def test_models_lists_packaged_registered_and_downloaded():
    from spacy_elmo import DEFAULT_MODEL

    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert any(line.startswith(DEFAULT_MODEL) and "ready (packaged)" in line for line in lines)
    for name in catalog.names():
        assert any(line.startswith(name) and f"download {name}" in line for line in lines)
    assert "cache:" in lines[-1]


def test_no_dns_fails_at_once(monkeypatch):
    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)  # no packet leaves the machine
    monkeypatch.setenv("SPACY_ELMO_MIRROR", "https://models.example.invalid/elmo")
    result = CliRunner().invoke(app, ["download", "elmo-small", "--quiet"])
    assert result.exit_code == 2
    assert "cannot resolve the host" in result.output and "nothing was written" in result.output
    assert cache_listing() == []


def test_bad_download_arguments_are_elmo_errors(tmp_path):
    """The download command's argument errors are ElmoDownloadArgumentErrors (ElmoError and
    ValueError): three sources without --name, a --sha256 pin that is not 64 hex digits, a URL
    that is not http(s); the command line prints each as one line (exit 2)."""
    from spacy_elmo.errors import ElmoConfigError, ElmoError
    from spacy_elmo.hub import parse_pins
    from spacy_elmo.hub.cli import download_cli

    with pytest.raises(ElmoConfigError, match="give one NAME of the catalog .*, or URL_OF_OPTIONS") as err:
        download_cli(["a", "b", "c"], name=None, sha256=None, force=False, retries=0, quiet=True, fmt=None)
    assert isinstance(err.value, ElmoError) and isinstance(err.value, ValueError)
    with pytest.raises(ValueError, match=r"--sha256 'weights=12': expected 64 hex digits") as err:
        parse_pins(["weights=12"])
    assert isinstance(err.value, ElmoConfigError)
    with pytest.raises(ElmoError, match=r"not an http\(s\) URL: 'ftp://127.0.0.1/o.json'") as err:
        download_model("m", {"options.json": "ftp://127.0.0.1/o.json", "weights.hdf5": "http://127.0.0.1/w"})
    assert isinstance(err.value, ValueError) and not os.path.exists(cache.model_dir("m"))
    result = CliRunner().invoke(app, ["download", "a", "b", "c"])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        "error: give one NAME of the catalog (python -m spacy_elmo models), or URL_OF_OPTIONS URL_OF_WEIGHTS "
        "--name NAME"]
