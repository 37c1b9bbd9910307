"""A disk that fails while ``download`` writes (full, read-only, no permission) is reported once
as a disk error naming the ``.part`` file, not retried as a lost connection; the bytes written
stay for the next run, which resumes from them."""
import builtins
import errno

import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.errors import ElmoDownloadError
from spacy_elmo.hub import cache, download_model, fetch as fetch_module

from test_hub_download import FAST, isolated, serve_urls, server, tiny  # noqa: F401  (fixtures)


class _FailingDisk:
    """A binary file whose writes store ``room`` bytes in all, then raise OSError(code)."""

    def __init__(self, f, room, code):
        self.f, self.room, self.code = f, room, code

    def write(self, data):
        n = min(len(data), self.room)
        self.f.write(data[:n])
        self.room -= n
        if n < len(data):
            self.f.flush()
            raise OSError(self.code, "simulated")
        return n

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def _fail_writes(monkeypatch, room, code):
    real = builtins.open

    def fake_open(path, mode="r", *args, **kwargs):
        f = real(path, mode, *args, **kwargs)
        return _FailingDisk(f, room, code) if str(path).endswith("weights.hdf5.part") else f

    monkeypatch.setattr(fetch_module, "open", fake_open, raising=False)


@pytest.mark.parametrize("code, why", [(errno.ENOSPC, "disk full"), (errno.EROFS, "read-only file system"),
                                       (errno.EACCES, "permission denied")])
def test_a_disk_error_is_reported_once_and_the_part_is_kept(server, tiny, monkeypatch, code, why):  # noqa: F811
    urls = serve_urls(server, tiny)
    _fail_writes(monkeypatch, 1000, code)
    with pytest.raises(ElmoDownloadError, match=f"weights.hdf5.part: cannot write the download \\({why}\\): a disk "
                                                "error, not the connection; 1,000 bytes kept for resuming") as err:
        download_model("m", urls, retries=3, **FAST)
    assert err.value.resumable and err.value.path.endswith("weights.hdf5.part")
    assert [p for p, _ in server.log].count("/m/weights.hdf5") == 1  # not retried
    part = cache.model_dir("m") + "/weights.hdf5.part"
    assert open(part, "rb").read() == tiny[2][:1000]
    monkeypatch.setattr(fetch_module, "open", builtins.open, raising=False)  # the disk has room again
    directory = download_model("m", urls, **FAST)  # the next run resumes from the 1,000 bytes
    assert ("/m/weights.hdf5", "bytes=1000-") in server.log
    assert open(directory + "/weights.hdf5", "rb").read() == tiny[2]


def test_cli_says_disk_error_in_one_line(server, tiny, monkeypatch):  # noqa: F811
    urls = serve_urls(server, tiny)
    _fail_writes(monkeypatch, 0, errno.ENOSPC)
    result = CliRunner().invoke(app, ["download", urls["options.json"], urls["weights.hdf5"], "--name", "m",
                                      "--quiet", "--retries", "2"])
    assert result.exit_code == 2
    out = result.output.strip()
    assert len(out.splitlines()) == 1 and "disk full" in out and "lost" not in out and "ready" not in out
    assert [p for p, _ in server.log].count("/m/weights.hdf5") == 1
