"""Two writers, one output: a second ``pretrain`` into a run directory, a second ``embed`` into an
OUTPUT, a second ``static-vectors`` into an OUTPUT_DIR and a second ``convert`` into an OUT that
another process is writing are refused at once, in one line naming that process's pid; a second
``download`` of a name waits for the first and then finds the model ready (one fetch). The lock
goes with its holder, ``kill -9`` included: the lock file it leaves behind blocks nothing.
Holders are child processes started here (a run holding the lock), not trainings."""
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import h5py
import pytest
from typer.testing import CliRunner

from spacy_elmo import locks
from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.convert import convert
from spacy_elmo.embed import embed_file
from spacy_elmo.errors import ElmoConfigError, ElmoLockError, ElmoModelFileError
from spacy_elmo.hub import cache, download_model
from spacy_elmo.locks import hold
from spacy_elmo.static import distil_vectors

from helpers import tiny_corpus_overrides
from test_embed import LINES, model, write_lines  # noqa: F401  (fixture)
from test_hub_download import FAST, Handler, serve_urls, server, tiny  # noqa: F401  (fixtures)

HOLD = {  # what a child process runs to hold the lock of its argument, as that command does
    "lock": "from spacy_elmo.locks import hold; lock = hold(path, 'x', 'y', make_folder=True)",
    "pretrain": "from pathlib import Path; from spacy_elmo.pretrain.cli import run_lock; lock = run_lock(Path(path))",
    "embed": "from spacy_elmo.embed.paths import lock_output; lock = lock_output(path)",
}


@contextmanager
def holder(kind: str, path: str):
    """A child process holding the lock of ``path`` (as ``kind`` takes it) until it is killed."""
    code = f"import sys\npath = sys.argv[1]\n{HOLD[kind]}\nprint('held', flush=True)\nsys.stdin.read()\n"
    proc = subprocess.Popen([sys.executable, "-c", code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def kill_9(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def _cli(argv):
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.output.strip()


def test_a_second_holder_is_refused_naming_the_first_and_a_killed_one_blocks_nothing(tmp_path):
    path = str(tmp_path / "new" / "x.lock")
    with holder("lock", path) as proc:
        with pytest.raises(ElmoLockError, match=rf"^OUT is in use by pid {proc.pid} \(lock file .*x\.lock\): "
                                                "wait$") as err:
            hold(path, "OUT", "wait")
        assert err.value.pid == proc.pid and err.value.path == path
        kill_9(proc)
    assert open(path).read().split()[0] == str(proc.pid)  # left behind by the killed holder
    with hold(path, "OUT", "wait") as lock:
        assert lock.held and open(path).read().split()[0] == str(os.getpid())
        with pytest.raises(ElmoLockError, match=rf"in use by this process, pid {os.getpid()} "):
            hold(path, "OUT", "wait")  # a second hold in one process is refused as well
    assert not os.path.exists(path)  # a normal release removes the lock file


def test_hold_makes_missing_folders_and_removes_them_while_empty(tmp_path):
    with hold(tmp_path / "a" / "b" / ".lock", "OUT", "wait", make_folder=True):
        assert (tmp_path / "a" / "b").is_dir()
    assert os.listdir(tmp_path) == []
    with hold(tmp_path / "c" / ".lock", "OUT", "wait", make_folder=True):
        (tmp_path / "c" / "model").write_text("kept")
    assert os.listdir(tmp_path / "c") == ["model"]  # a folder with the run's files stays


def test_a_file_in_the_way_of_a_folder_is_named(tmp_path):
    (tmp_path / "afile").write_text("keep me")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "dir", tmp_path / "link")
    os.symlink(tmp_path / "gone", tmp_path / "broken")
    assert locks.not_a_folder(tmp_path / "afile" / "x" / "y") == str(tmp_path / "afile")
    assert locks.not_a_folder(f"{tmp_path}/afile/") == str(tmp_path / "afile")
    assert locks.not_a_folder(tmp_path / "broken" / "x") == str(tmp_path / "broken")
    assert [locks.not_a_folder(tmp_path / name) for name in ("dir", "link", "link/new", "new/x")] == [None] * 4
    assert locks.folder_in_the_way(tmp_path / "afile") == " is a file, not a folder"
    assert locks.folder_in_the_way(tmp_path / "afile" / "x") == f": {str(tmp_path / 'afile')!r} is a file, not a folder"
    assert locks.folder_in_the_way(tmp_path / "broken") == " exists and is not a folder"
    with pytest.raises(ElmoLockError) as err:
        hold(tmp_path / "afile" / "run" / ".lock", "OUT", "wait", make_folder=True)
    assert str(err.value) == (f"cannot create the folder {str(tmp_path / 'afile' / 'run')!r}: "
                              f"{str(tmp_path / 'afile')!r} is a file, not a folder")
    with pytest.raises(ElmoLockError) as err:
        hold(tmp_path / "afile" / ".lock", "OUT", "wait", make_folder=True)
    assert str(err.value) == f"{str(tmp_path / 'afile')!r} is a file, not a folder: cannot create a lock file in it"
    assert (tmp_path / "afile").read_text() == "keep me" and sorted(os.listdir(tmp_path)) == [
        "afile", "broken", "dir", "link"]


def test_a_planted_symlink_is_not_followed(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    os.symlink(target, tmp_path / "o.hdf5.lock")
    with pytest.raises(ElmoLockError, match=r"cannot open the lock file .*o\.hdf5\.lock: it is a symlink"):
        hold(str(tmp_path / "o.hdf5.lock"), "OUT", "wait")
    assert target.read_text() == "keep me"


def test_a_file_system_without_flock_runs_unlocked_with_one_warning(tmp_path, monkeypatch):
    class NoFlock:
        LOCK_EX, LOCK_NB = 2, 4

        @staticmethod
        def flock(fd, op):
            raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locks, "fcntl", NoFlock)
    with pytest.warns(UserWarning, match=r"cannot lock .*x\.lock \(No locks available: the file system has no "
                                         "working flock\\): running without the lock"):
        lock = hold(str(tmp_path / "x.lock"), "OUT", "wait")
    assert not lock.held and os.listdir(tmp_path) == []  # no lock file left either
    lock.release()


def _pretrain_args(overrides: dict) -> list:
    args = []
    for key, value in overrides.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    return args


def _listing(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


def test_two_pretrains_into_one_directory(tmp_path):
    """The second run is refused in one line naming the first's pid and leaves every file of the
    first as it was; once the first is killed (-9) a run in the directory goes through."""
    run = tmp_path / "run"
    args = ["pretrain", str(run), "--quiet", *_pretrain_args({**tiny_corpus_overrides(run), "training.max_steps": 2})]
    (run / "model").mkdir()
    (run / "model" / "weights.hdf5").write_bytes(b"the first run's model")
    with holder("pretrain", str(run)) as proc:
        before = _listing(run)
        code, out = _cli(args)
        assert code == 2 and len(out.splitlines()) == 1, out
        assert out == (f"error: OUTPUT_DIR {str(run)!r} is in use by pid {proc.pid} (lock file {run}/.lock): wait "
                       "for that run to finish (or stop it), or choose another output directory")
        assert _listing(run) == before
        kill_9(proc)
    assert (run / ".lock").is_file()  # left by the killed run
    code, out = _cli(args)
    assert code == 0 and "Model written" in out, out
    assert (run / "checkpoint.pt").is_file() and not (run / ".lock").exists()


def test_pretrain_under_torchrun_locks_on_rank_0_only(tmp_path, monkeypatch):
    from spacy_elmo.pretrain.cli import run_lock

    with run_lock(tmp_path / "run") as lock:
        monkeypatch.setenv("RANK", "1")
        with run_lock(tmp_path / "run"):  # the other ranks write nothing: they take no lock
            assert lock.held
        monkeypatch.setenv("RANK", "0")
        with pytest.raises(ElmoLockError, match="is in use by this process"):
            run_lock(tmp_path / "run")


def test_two_embeds_into_one_output(model, tmp_path):  # noqa: F811
    """The second is refused in one line naming the first's pid, before any work (no OUTPUT, no
    OUTPUT.tmp or OUTPUT.parts); after a kill -9 of the first, embed writes OUTPUT whole."""
    src = write_lines(tmp_path / "in.txt", LINES)
    out = str(tmp_path / "o.hdf5")
    argv = ["embed", src, out, "--model", model[0], "--quiet"]
    with holder("embed", out) as proc:
        code, output = _cli(argv)
        assert code == 2 and output == (f"error: OUTPUT {out!r} is in use by pid {proc.pid} (lock file {out}.lock): "
                                        "wait for that run to finish (or stop it), or choose another OUTPUT")
        assert sorted(os.listdir(tmp_path)) == ["in.txt", "o.hdf5.lock"]
        with pytest.raises(ElmoLockError, match=f"in use by pid {proc.pid}"):
            embed_file(src, out, model=model[0], progress=False, overwrite=True)
        kill_9(proc)
    code, output = _cli(argv)
    assert code == 0 and output.startswith(f"wrote {out}: {len(LINES)} sentences"), output
    with h5py.File(out, "r") as f:
        assert sorted(k for k in f if k != "sentence_to_index") == sorted(str(i) for i in range(len(LINES)))
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "o.hdf5"]


def test_embed_refuses_an_input_named_as_the_lock_file(model, tmp_path):  # noqa: F811
    src = write_lines(tmp_path / "o.hdf5.lock", LINES)
    with pytest.raises(ElmoConfigError, match="is the INPUT file"):
        embed_file(src, str(tmp_path / "o.hdf5"), model=model[0], progress=False)
    assert open(src, encoding="utf-8").read() == "\n".join(LINES) + "\n"


LINES_STATIC = ["the cat sat on the mat .", "a dog sat .", "the dog and the cat .", "a cat ran ."]
EFML = Path(__file__).resolve().parent / "data" / "efml" / "relu-words-1layer"


def test_two_static_vectors_into_one_output_dir(tiny_model, tmp_path):
    """The lock is OUTPUT_DIR.partial/.lock: a second run is refused in one line naming the
    holder's pid and leaves the existing OUTPUT_DIR and the holder's OUTPUT_DIR.partial/ byte for
    byte; after a kill -9 of the holder the run goes through and leaves OUTPUT_DIR alone."""
    corpus = write_lines(tmp_path / "corpus.txt", LINES_STATIC)
    out = tmp_path / "out"
    distil_vectors(tiny_model.directory, [corpus], str(out), min_count=2, view="layer_1", progress=False)
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]  # a finished run leaves no lock file
    argv = ["static-vectors", tiny_model.directory, corpus, str(out), "--min-count", "2", "--overwrite", "--quiet"]
    lock = tmp_path / "out.partial" / ".lock"
    with holder("lock", str(lock)) as proc:
        (tmp_path / "out.partial" / "manifest.json").write_text('{"the": "holder\'s arguments"}')
        (tmp_path / "out.partial" / "state.npz").write_bytes(b"the holder's sums")
        before = _listing(tmp_path)
        code, output = _cli(argv)
        assert code == 2 and output == (f"error: OUTPUT_DIR {str(out)!r} is in use by pid {proc.pid} (lock file "
                                        f"{lock}): wait for that run to finish (or stop it), or choose another "
                                        "OUTPUT_DIR"), output
        with pytest.raises(ElmoLockError, match=f"in use by pid {proc.pid}"):
            distil_vectors(tiny_model.directory, [corpus], str(out) + "/", min_count=2, progress=False,
                           overwrite=True)  # out/ is out
        assert _listing(tmp_path) == before
        kill_9(proc)
    assert lock.is_file()  # left by the killed holder, inside the folder a killed run leaves anyway
    code, output = _cli(argv)
    assert code == 0 and output.startswith(f"wrote {out}: 6 words x 32 (spacy_elmo_static|"), output
    assert json.loads((out / "card.json").read_text())["view"] == "top" and not json.loads(
        (out / "card.json").read_text())["resumed"]  # the holder's folder held other arguments
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]


def test_static_vectors_checks_output_dir_again_under_the_lock(tiny_model, tmp_path, monkeypatch):
    """A run that finished OUTPUT_DIR while this one waited for nothing but the lock: OUTPUT_DIR is
    checked again once the lock is held, so it is not replaced without --overwrite."""
    from spacy_elmo.static import run

    corpus = write_lines(tmp_path / "corpus.txt", LINES_STATIC)
    out = tmp_path / "out"
    taken = run.lock_output

    def finished_meanwhile(output):
        out.mkdir()
        (out / "card.json").write_text("the other run's card")
        return taken(output)

    monkeypatch.setattr(run, "lock_output", finished_meanwhile)
    with pytest.raises(ElmoConfigError, match=r"OUTPUT_DIR .*out' exists: pass --overwrite"):
        distil_vectors(tiny_model.directory, [corpus], str(out), min_count=2, progress=False)
    assert (out / "card.json").read_text() == "the other run's card"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "out"]  # no out.partial/, no lock file


def test_two_converts_into_one_directory(tmp_path):
    """The lock is OUT/.lock: a second convert is refused in one line naming the holder's pid and
    leaves OUT's files as they were; after a kill -9 of the holder it converts, and leaves no lock."""
    out = tmp_path / "m"
    convert(str(EFML), str(out))
    files = ["options.json", "sha256.json", "weights.hdf5"]
    assert sorted(os.listdir(out)) == files
    (out / "weights.hdf5").write_bytes(b"the holder's half-written weights")
    argv = ["convert", str(EFML), str(out), "--force"]
    lock = out / ".lock"
    with holder("lock", str(lock)) as proc:
        before = _listing(tmp_path)
        code, output = _cli(argv)
        assert code == 2 and output == (f"error: OUT {str(out)!r} is in use by pid {proc.pid} (lock file {lock}): "
                                        "wait for that conversion to finish (or stop it), or choose another OUT"), \
            output
        with pytest.raises(ElmoLockError, match=f"in use by pid {proc.pid}"):
            convert(str(EFML), str(out), force=True)
        assert _listing(tmp_path) == before
        kill_9(proc)
    assert lock.is_file()
    code, output = _cli(argv)
    assert code == 0 and output.startswith(f"wrote {out} (sha256 recorded)"), output
    assert sorted(os.listdir(out)) == files and BiLM.from_pretrained(str(out)).num_layers == 1
    with hold(lock, "OUT", "wait"):  # one holder in this process refuses another call of this process
        with pytest.raises(ElmoLockError, match=rf"in use by this process, pid {os.getpid()} "):
            convert(str(EFML), str(tmp_path / "m" / "."), force=True)
    new = tmp_path / "new" / "m"
    with pytest.raises(ElmoModelFileError):
        convert(str(tmp_path), str(new))  # not a model: the folders made for the lock go again
    assert sorted(os.listdir(tmp_path)) == ["m"]
    (tmp_path / "afile").write_text("keep me")
    code, output = _cli(["convert", str(EFML), str(tmp_path / "afile" / "m")])
    assert code == 2 and output == (f"error: OUT {str(tmp_path / 'afile' / 'm')!r}: {str(tmp_path / 'afile')!r} is a "
                                    "file, not a folder: give a directory to write the model into"), output
    assert (tmp_path / "afile").read_text() == "keep me"


class GatedHandler(Handler):
    """Holds back the weights until ``server.gate`` is set (a download in progress; ``server.asked``
    is set when they are asked for)."""

    def do_GET(self):
        if self.path.endswith("weights.hdf5"):
            self.server.asked.set()
            assert self.server.gate.wait(120)
        super().do_GET()


@pytest.fixture
def gated(server, monkeypatch):  # noqa: F811
    server.gate, server.asked = threading.Event(), threading.Event()
    monkeypatch.setattr(server, "RequestHandlerClass", GatedHandler)
    yield server
    server.gate.set()


def test_a_second_download_waits_and_finds_the_model_ready(gated, tiny, tmp_path, monkeypatch):  # noqa: F811
    """The first download (a thread here) is in the middle of fetching the weights; a second
    ``download`` of the name (another process) says it waits for the first's pid, waits, and
    reports the model ready: every file was fetched once, by the first."""
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    urls = serve_urls(gated, tiny)
    first = {}
    thread = threading.Thread(target=lambda: first.update(dir=download_model("m", urls, **FAST)))
    thread.start()
    assert gated.asked.wait(60)
    log = tmp_path / "second.log"
    with open(log, "w") as err:
        second = subprocess.Popen([sys.executable, "-m", "spacy_elmo", "download", urls["options.json"],
                                   urls["weights.hdf5"], "--name", "m", "--quiet"], stdout=subprocess.PIPE,
                                  stderr=err, text=True)
    try:
        for _ in range(1200):
            if "waiting" in log.read_text() or second.poll() is not None:
                break
            time.sleep(0.05)
        waiting = log.read_text().strip()
        assert waiting == (f"m: pid {os.getpid()} is downloading it into {cache.model_dir('m')}; waiting for it to "
                           "finish (at most 3600 s, $SPACY_ELMO_DOWNLOAD_WAIT)")
    finally:
        gated.gate.set()
        thread.join(60)
        out, _ = second.communicate(timeout=120)
    assert second.returncode == 0 and out.startswith(f"m: ready in {cache.model_dir('m')}"), log.read_text()
    assert first["dir"] == cache.model_dir("m") and cache.state("m") == "downloaded"
    assert [p for p, _ in gated.log] == ["/m/options.json", "/m/weights.hdf5"]  # one fetch of each
    assert open(os.path.join(first["dir"], "weights.hdf5"), "rb").read() == tiny[2]
    assert not os.path.exists(os.path.join(cache.cache_dir(), cache.LOCKS))


def test_a_download_gives_up_waiting_after_the_limit(server, tiny, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(cache.WAIT_ENV, "0.3")
    urls = serve_urls(server, tiny)
    with cache.lock_entry("m"):
        started = time.monotonic()
        with pytest.raises(ElmoLockError, match=rf"^m: gave up after 0\.3 s waiting for this process, pid "
                                                rf"{os.getpid()} \(lock file .*\.locks/m\): it is downloading the "
                                                "model into .*; run the download again once it has finished, or "
                                                "set SPACY_ELMO_DOWNLOAD_WAIT=SECONDS to wait longer"):
            download_model("m", urls, **FAST)
        assert 0.3 <= time.monotonic() - started < 10
    assert server.log == []
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(cache.WAIT_ENV, bad)
        with pytest.raises(ElmoConfigError, match=f"SPACY_ELMO_DOWNLOAD_WAIT='{bad}': expected a number"):
            download_model("m", urls, **FAST)
