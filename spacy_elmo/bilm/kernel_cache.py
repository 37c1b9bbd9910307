"""A private cache of compiled native code: a shared library is loaded from it only after its
folder, its file and its recorded digest have been checked.

A library in the cache runs code as soon as it is loaded (its constructors run inside
``dlopen``, before any self-check of the kernels). So an entry ``<folder>/<name>`` is loaded only
when all of these hold, checked on open file descriptors (no path is looked up twice, no symlink is
followed):

- the folder, the library and its digest file ``<name>.sha256`` are owned by the current user (or
  by root, for a cache an administrator built and made read-only) and are not writable by group or
  others; the library and the digest are regular files;
- the sha256 of the library's bytes equals the recorded digest (a truncated or altered file is
  never mapped: a truncated library mapped by ``dlopen`` ends the process with SIGBUS).

The library is then loaded through ``/proc/self/fd/N`` (the fd stays open for the process's life,
one per library): the bytes that were hashed are the bytes that run, whatever happens to the path
meanwhile. Folders this module creates are mode 0700.

Anything else is refused with one warning, and the code is built again: in the same folder where
that folder itself passes the checks (a missing, truncated or unrecorded library), else in a fresh
private temporary folder that is removed after loading (a folder that others can write, or that
another user owns, is never written to or read from).
"""
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Optional

DIGEST_SUFFIX = ".sha256"
_DIGEST_MAX_BYTES = 256


class _UnsafeEntry(Exception):
    """A cache entry that must not be loaded; ``repairable``: its folder passed the checks, so the
    entry can be rebuilt in place."""

    def __init__(self, reason: str, repairable: bool):
        super().__init__(reason)
        self.repairable = repairable


def _trusted_owner(uid: int) -> bool:
    return uid in (os.getuid(), 0)


def _problem(st: os.stat_result, what: str) -> Optional[str]:
    """Why an fstat result is not trusted, or None."""
    if not _trusted_owner(st.st_uid):
        return f"{what} is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def ensure_private_dir(path: Path) -> bool:
    """Create ``path`` and its missing parents with mode 0700; True where ``path`` (created now or
    before) passes the folder checks, False where it cannot be created or is not private."""
    missing = []
    for p in [path, *path.parents]:
        if p.exists() or p.is_symlink():
            break
        missing.append(p)
    try:
        for p in reversed(missing):
            p.mkdir(mode=0o700)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return _problem(os.fstat(fd), "folder") is None
    finally:
        os.close(fd)


def _open_checked(name: str, dir_fd: int, what: str) -> int:
    """An fd of the regular file ``name`` in the folder ``dir_fd``, checked; _UnsafeEntry otherwise
    (FileNotFoundError where it does not exist)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as err:  # ELOOP: a symlink
        raise _UnsafeEntry(f"{what} cannot be opened safely ({err.strerror})", repairable=True) from None
    st = os.fstat(fd)
    reason = "is not a regular file" if not stat.S_ISREG(st.st_mode) else _problem(st, what)
    if reason:
        os.close(fd)
        raise _UnsafeEntry(reason if reason.startswith(what) else f"{what} {reason}", repairable=True)
    return fd


def _fd_sha256(fd: int) -> str:
    digest, offset = hashlib.sha256(), 0
    while chunk := os.pread(fd, 1 << 20, offset):
        digest.update(chunk)
        offset += len(chunk)
    return digest.hexdigest()


def _recorded_digest(name: str, dir_fd: int) -> str:
    try:
        fd = _open_checked(name + DIGEST_SUFFIX, dir_fd, "the digest file")
    except FileNotFoundError:
        raise _UnsafeEntry("no recorded sha256 beside it", repairable=True) from None
    try:
        return (os.pread(fd, _DIGEST_MAX_BYTES, 0).decode("ascii", "replace").split() or [""])[0]
    finally:
        os.close(fd)


def verified_fd(folder: Path, name: str) -> Optional[int]:
    """An open fd of ``folder/name`` after every check of the module docstring passed; None where the
    folder or the library does not exist; :class:`_UnsafeEntry` where a check fails. The caller
    closes the fd."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise _UnsafeEntry(f"the folder cannot be opened safely ({err.strerror})", repairable=False) from None
    try:
        reason = _problem(os.fstat(dir_fd), "the folder")
        if reason:
            raise _UnsafeEntry(reason, repairable=False)
        try:
            fd = _open_checked(name, dir_fd, "the library")
        except FileNotFoundError:
            return None
        try:
            if _fd_sha256(fd) != _recorded_digest(name, dir_fd):
                raise _UnsafeEntry("its sha256 differs from the recorded one (truncated or altered)", repairable=True)
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        os.close(dir_fd)


def install(built: Path, folder: Path, name: str) -> None:
    """Move the freshly built library ``built`` to ``folder/name`` (atomically) with its digest
    file beside it, both mode 0600 or less. The digest is written last: a library without its
    digest (an interrupted install) is refused and rebuilt."""
    digest = hashlib.sha256(built.read_bytes()).hexdigest()
    os.chmod(built, 0o500)
    note = built.with_name(built.name + DIGEST_SUFFIX)
    note.write_text(digest + "\n", encoding="ascii")
    os.chmod(note, 0o400)
    for p in (folder / (name + DIGEST_SUFFIX), folder / name):  # an old pair is never half-valid
        p.unlink(missing_ok=True)
    os.replace(built, folder / name)
    os.replace(note, folder / (name + DIGEST_SUFFIX))


def _fd_path(fd: int, folder: Path, name: str) -> str:
    proc = f"/proc/self/fd/{fd}"
    return proc if os.path.exists(proc) else str(folder / name)


def _load_fd(fd: int, folder: Path, name: str, loader: Callable[[str], None]) -> None:
    """Load through ``/proc/self/fd/N``. The fd stays open after a successful load: the dynamic
    loader knows a library by the name it was opened with, so a reused fd number would hand back
    the library loaded before under that name."""
    try:
        loader(_fd_path(fd, folder, name))
    except BaseException:
        os.close(fd)
        raise


def _build_and_load(folder: Path, name: str, build: Callable[[Path], Path], loader: Callable[[str], None]) -> Path:
    with open(os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per entry at a time; released on exit or kill
        try:
            fd = verified_fd(folder, name)  # another process may have built it meanwhile
        except _UnsafeEntry:
            fd = None
        if fd is None:
            scratch = Path(tempfile.mkdtemp(prefix="build-", dir=folder))
            try:
                install(build(scratch), folder, name)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            fd = verified_fd(folder, name)
        if fd is None:
            raise OSError(f"{folder / name} vanished after it was built")
        _load_fd(fd, folder, name, loader)
    return folder


def load(folder: Path, name: str, build: Callable[[Path], Path], loader: Callable[[str], None]) -> Path:
    """Load the library ``folder/name`` with ``loader(path)`` (e.g. ``ctypes.CDLL``), building it
    first with ``build(scratch) -> built file`` (``scratch``: an empty private folder) where the
    cache has no entry that passes the checks. Returns the folder the library was loaded from: ``folder``, or a
    private temporary folder (already removed) where ``folder`` is not private. One warning for an
    entry that is refused; errors of ``build`` and ``loader`` propagate."""
    try:
        fd = verified_fd(folder, name)
    except _UnsafeEntry as err:
        warnings.warn(f"not loading the cached native library {folder / name}: {err}; building it again "
                      "(a cache folder must be yours and not writable by group or others)")
        fd, private = None, err.repairable
    else:
        private = True
    if fd is not None:
        _load_fd(fd, folder, name, loader)
        return folder
    if private and ensure_private_dir(folder):
        return _build_and_load(folder, name, build, loader)
    scratch = Path(tempfile.mkdtemp(prefix="spacy-elmo-kernels-"))  # mode 0700
    try:
        return _build_and_load(scratch, name, build, loader)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
