"""The native-kernel cache loads only what this user built (bilm/kernel_cache.py): a library
planted in a folder others can write, owned by another user, writable by others, without its
recorded sha256, truncated, or behind a symlink is never loaded (its constructor never runs), one
warning is given and the library is built again. The libraries here are tiny C files whose
constructor appends a mark to a file, so the test sees which library's code ran."""
import ctypes
import hashlib
import os
import shutil
import stat
import subprocess
import warnings

import pytest

from spacy_elmo.bilm import kernel_cache, native

NAME = native.LIBRARY
SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void mark(void) {
  const char *p = getenv("SPACY_ELMO_TEST_MARK");
  if (p) { FILE *f = fopen(p, "a"); if (f) { fputs(MARK "\n", f); fclose(f); } }
}
"""
CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


def compile_lib(out, mark: str):
    src = out.parent / f"{out.name}.c"
    src.write_text(SOURCE)
    subprocess.run([CC, "-shared", "-fPIC", f'-DMARK="{mark}"', str(src), "-o", str(out)], check=True)
    src.unlink()
    return out


@pytest.fixture
def marks(tmp_path, monkeypatch):
    path = tmp_path / "marks.txt"
    monkeypatch.setenv("SPACY_ELMO_TEST_MARK", str(path))
    return lambda: path.read_text().split() if path.exists() else []


class Builder:
    """``build`` for kernel_cache.load: compiles a library that marks "built"; counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, scratch):
        self.calls += 1
        return compile_lib(scratch / NAME, "built")


def plant(folder, digest: bool = True, mode: int = 0o755):
    """A library that marks "planted" at folder/NAME, with its correct digest beside it (anyone who can
    write the folder can also compute that)."""
    folder.mkdir(parents=True, exist_ok=True)
    lib = compile_lib(folder / NAME, "planted")
    if digest:
        (folder / (NAME + ".sha256")).write_text(hashlib.sha256(lib.read_bytes()).hexdigest() + "\n")
    os.chmod(lib, mode)
    return lib


def load(folder, build):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        where = kernel_cache.load(folder, NAME, build, ctypes.CDLL)
    return where, [str(w.message) for w in caught]


def test_a_library_built_here_is_recorded_private_and_loaded_once(tmp_path, marks):
    folder, build = tmp_path / "kernels" / "key", Builder()
    where, caught = load(folder, build)
    assert where == folder and build.calls == 1 and marks() == ["built"] and caught == []
    for p in (folder, folder.parent):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700
    lib = folder / NAME
    assert (folder / (NAME + ".sha256")).read_text().strip() == hashlib.sha256(lib.read_bytes()).hexdigest()
    assert not stat.S_IMODE(lib.stat().st_mode) & 0o022 and not list(folder.glob("build-*"))
    where, caught = load(folder, build)  # a trusted entry is loaded without building
    assert where == folder and build.calls == 1 and caught == []


def test_a_planted_library_in_a_folder_others_can_write_never_runs(tmp_path, marks):
    shared = tmp_path / "shared"
    plant(shared / "key")
    os.chmod(shared / "key", 0o777)
    build = Builder()
    where, caught = load(shared / "key", build)
    assert marks() == ["built"] and build.calls == 1
    assert where != shared / "key" and not where.exists()  # built in a private folder, then removed
    assert len(caught) == 1 and "writable by group or others" in caught[0] and "not loading" in caught[0]
    assert (shared / "key" / NAME).read_bytes()  # the foreign folder is left as it was


@pytest.mark.parametrize("case", ["other-owner", "writable-by-others", "no-digest", "wrong-digest", "symlink"])
def test_a_refused_library_in_a_private_folder_is_rebuilt_in_place(tmp_path, marks, case):
    folder = tmp_path / "key"
    folder.mkdir(mode=0o700)
    lib = plant(folder, digest=case != "no-digest", mode=0o777 if case == "writable-by-others" else 0o755)
    if case == "other-owner":
        os.chown(lib, 12345, 12345)
    if case == "wrong-digest":
        (folder / (NAME + ".sha256")).write_text("0" * 64 + "\n")
    if case == "symlink":
        elsewhere = tmp_path / "elsewhere.so"
        lib.rename(elsewhere)
        lib.symlink_to(elsewhere)
    build = Builder()
    where, caught = load(folder, build)
    assert where == folder and build.calls == 1 and marks() == ["built"]
    assert len(caught) == 1, caught
    assert not (folder / NAME).is_symlink() and (folder / NAME).stat().st_uid == os.getuid()


def test_a_truncated_library_is_rebuilt_not_mapped(tmp_path, marks):
    """A truncated library mapped by dlopen ends the process with SIGBUS; its digest no longer
    matches, so it is never mapped."""
    folder = tmp_path / "key"
    folder.mkdir(mode=0o700)
    lib = plant(folder)
    lib.write_bytes(lib.read_bytes()[:4096])
    where, caught = load(folder, Builder())
    assert marks() == ["built"] and len(caught) == 1 and "sha256 differs" in caught[0]


def test_a_folder_owned_by_another_user_is_not_written(tmp_path, marks):
    folder = tmp_path / "key"
    folder.mkdir(mode=0o700)
    os.chown(folder, 12345, 12345)
    where, caught = load(folder, Builder())
    assert marks() == ["built"] and where != folder and "owned by uid 12345" in caught[0]
    assert list(folder.iterdir()) == []


def test_the_kernels_cache_is_made_private_under_a_shared_root(tmp_path, marks, monkeypatch):
    """native's loader puts the key folder (mode 0700) under $SPACY_ELMO_KERNELS even where that
    root is world-writable (a shared /tmp-like folder), and loads through the checks."""
    root = tmp_path / "shared-root"
    root.mkdir(mode=0o777)
    os.chmod(root, 0o1777)
    monkeypatch.setenv(native.KERNELS_ENV, str(root))
    monkeypatch.setattr(native, "_compile", lambda cxx, files, scratch: compile_lib(scratch / NAME, "built"))
    where = native._load_library()
    assert where.parent == root and stat.S_IMODE(where.stat().st_mode) == 0o700 and marks() == ["built"]


def test_pretrains_loader_never_runs_a_library_planted_at_its_key(tmp_path, marks, monkeypatch):
    """The key folder's name is computable from public facts (sources, flags, torch, compiler,
    CPU); a library planted there, in a kernels folder others can write, does not run."""
    root = tmp_path / "shared-root"
    root.mkdir()
    os.chmod(root, 0o777)
    monkeypatch.setenv(native.KERNELS_ENV, str(root))
    key = root / native._key(native._compiler(), native.sources())
    plant(key)
    os.chmod(key, 0o777)
    monkeypatch.setattr(native, "_compile", lambda cxx, files, scratch: compile_lib(scratch / NAME, "built"))
    with pytest.warns(UserWarning, match="not loading the cached native library"):
        native._load_library()
    assert marks() == ["built"]
