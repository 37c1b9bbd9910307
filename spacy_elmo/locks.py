"""Exclusive locks on what a command writes, held for the whole job: a pretraining run directory,
an ``embed`` OUTPUT, a cache entry of ``download``.

A lock is :func:`fcntl.flock` (``LOCK_EX``) on a small lock file that holds the holder's pid and
host name (``"PID HOST"``), so that a refused writer can name the process in its way (the
library ``filelock`` takes the same kernel lock but records no holder). Properties:

- the kernel drops the lock when its holder ends in any way, ``kill -9`` included: a lock file
  left behind by a killed process blocks nothing, the next writer takes the lock on it;
- the holder removes the lock file when it releases the lock (while still holding it), and any
  folder that :func:`hold` created for it that is still empty; a writer whose lock file was
  removed under it sees that the path names another file (or none) and tries again;
- locks of one path exclude each other also inside one process (each :func:`hold` opens the file
  anew: ``flock`` locks belong to an open file, not to a process); the file is opened
  close-on-exec, so programs a writer runs do not inherit its lock.

:func:`hold` takes the lock at once or raises :class:`ElmoLockError`, one line naming the holder
and what to do; :func:`wait` waits for it up to a timeout (one callback when the wait begins).
Where the file system has no working ``flock`` (``ENOLCK``, ``ENOSYS``, ``EOPNOTSUPP``: some
network file systems), one warning says so and the job runs without the lock.
"""
import errno
import os
import socket
import time
import warnings
from typing import Callable, List, NamedTuple, Optional, Union

from .errors import ElmoLockError

try:
    import fcntl
except ImportError:  # not POSIX: no locks (a warning says so)
    fcntl = None

PathLike = Union[str, os.PathLike]
_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
_UNSUPPORTED = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP)
_FLAGS = os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_RECORD_BYTES = 512
_ATTEMPTS = 50  # a lock file removed under a writer this many times in a row: give up (never in practice)


class Holder(NamedTuple):
    """The process that holds a lock, as its lock file records it (None: not recorded yet)."""
    pid: Optional[int]
    host: Optional[str]

    def __str__(self) -> str:
        if self.pid is None:
            return "another process"
        here = self.host in (None, socket.gethostname())
        if here and self.pid == os.getpid():
            return f"this process, pid {self.pid}"
        return f"pid {self.pid}" + ("" if here else f" on host {self.host}")


class Lock:
    """A held lock (:func:`hold`, :func:`wait`); a context manager. :meth:`release` (or leaving the
    ``with`` block) removes the lock file and the empty folders made for it, then unlocks."""

    def __init__(self, path: str, fd: Optional[int], made: List[str]) -> None:
        self.path, self._fd, self._made = path, fd, made

    @property
    def held(self) -> bool:
        """True until released; False as well for a lock the file system could not take."""
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _names(self.path, fd):
                os.unlink(self.path)
            for folder in reversed(self._made):
                os.rmdir(folder)  # only while empty: a run's files stay
        except OSError:
            pass
        finally:
            os.close(fd)  # closing the last fd of the open file unlocks it

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _names(path: str, fd: int) -> bool:
    """Whether ``path`` still names the open file ``fd``."""
    try:
        return os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(fd))
    except OSError:
        return False


def not_a_folder(path: PathLike) -> Optional[str]:
    """``path`` (normalised: ``a/`` is ``a``), or the nearest of its parents that exists, where
    that one is not a folder (a regular file, a FIFO, a broken symlink; a symlink to a folder is
    a folder): the path that keeps ``path`` from being, or being made, a folder. None where none
    does (``path`` or its nearest existing parent is a folder)."""
    path = os.path.normpath(os.fspath(path))
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent in ("", path):
            return None
        path = parent
    return None if os.path.isdir(path) else path


def folder_in_the_way(path: PathLike) -> Optional[str]:
    """Why ``path`` cannot be, or be made, a folder (:func:`not_a_folder`), as words to follow a
    name: ``" is a file, not a folder"`` (``path`` itself), ``": 'a' is a file, not a folder"``
    (a parent; ``"exists and is not a folder"`` for what is not a regular file). None where
    nothing is in the way."""
    blocker = not_a_folder(path)
    if blocker is None:
        return None
    what = "is a file, not a folder" if os.path.isfile(blocker) else "exists and is not a folder"
    return f" {what}" if blocker == os.path.normpath(os.fspath(path)) else f": {blocker!r} {what}"


def _make_folders(folder: str) -> List[str]:
    """Create ``folder`` and its missing parents; those this call created, outermost first."""
    why = folder_in_the_way(folder) if folder else None
    if why is not None:
        raise ElmoLockError(f"cannot create the folder {folder!r}{why}" if why.startswith(":")
                            else f"{folder!r}{why}: cannot create a lock file in it", folder)
    missing, made = [], []
    while folder and not os.path.isdir(folder) and folder not in missing:
        missing.append(folder)
        folder = os.path.dirname(folder)
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # made by another writer meanwhile
            continue
        except OSError as err:
            raise ElmoLockError(f"cannot create the folder {path} ({err.strerror or err})", path) from None
        made.append(path)
    return made


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_RDWR | _FLAGS, 0o644)
    except PermissionError:  # a lock file left by another user: flock needs no write access
        return os.open(path, os.O_RDONLY | _FLAGS)


def read_holder(fd: int) -> Holder:
    """The holder recorded in an open lock file; waits up to 0.2 s for a holder that has just
    taken the lock to record itself."""
    for _ in range(20):
        fields = os.pread(fd, _RECORD_BYTES, 0).decode("ascii", "replace").split()
        if fields and fields[0].isdigit():
            return Holder(int(fields[0]), fields[1] if len(fields) > 1 else None)
        time.sleep(0.01)
    return Holder(None, None)


def _record(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode("ascii", "replace"), 0)
    except OSError:  # opened read-only: the holder stays unnamed
        pass


def _attempt(path: str, make_folder: bool) -> Union[Lock, Holder]:
    """One non-blocking try: the Lock, or the Holder in the way. ElmoLockError where the lock
    file cannot be opened; a Lock that holds nothing where the file system has no flock."""
    for _ in range(_ATTEMPTS):
        made = _make_folders(os.path.dirname(path)) if make_folder else []
        try:
            fd = _open(path)
        except FileNotFoundError:
            if make_folder:
                continue  # the folder was removed meanwhile by the holder before us: make it again
            raise ElmoLockError(f"cannot create the lock file {path}: its folder does not exist", path) from None
        except OSError as err:
            raise ElmoLockError(f"cannot open the lock file {path}: {_why(path, err)}", path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = read_holder(fd) if err.errno in _BUSY else None
            if holder is None and os.fstat(fd).st_size == 0 and _names(path, fd):
                os.unlink(path)  # no lock to hold: leave no lock file either
            os.close(fd)
            if holder is not None:
                return holder
            if err.errno not in _UNSUPPORTED:
                raise ElmoLockError(f"cannot lock {path}: {err.strerror or err}", path) from None
            return _unlocked(path, err)
        if _names(path, fd):
            _record(fd)
            return Lock(path, fd, made)
        os.close(fd)  # its holder removed the file as we took the lock: take the new one
    raise ElmoLockError(f"cannot lock {path}: the lock file keeps being replaced", path)


def _why(path: str, err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "it is a symlink (a lock file is a regular file: remove the symlink)"
    if err.errno == errno.ENOTDIR:
        return f"{os.path.dirname(path)!r} is not a directory"
    return f"{err.strerror or err} (its folder must be writable)"


def _unlocked(path: str, err: Optional[OSError]) -> Lock:
    why = "no fcntl on this platform" if err is None else err.strerror or str(err)
    warnings.warn(f"cannot lock {path} ({why}: the file system has no working flock): running without the lock, "
                  "so make sure no other process writes the same output", stacklevel=3)
    return Lock(path, None, [])


def hold(path: PathLike, what: str, todo: str, make_folder: bool = False) -> Lock:
    """Take the lock of the lock file ``path`` at once. ``what`` names what it guards (e.g.
    ``"OUTPUT 'x.hdf5'"``), ``todo`` what a refused user can do; ``make_folder``: create the lock
    file's missing folders (removed again on release while empty).

    Returns a :class:`Lock` (use it in a ``with`` block). Raises :class:`ElmoLockError` where
    another process (or another :func:`hold` of this one) holds it: "``what`` is in use by pid
    PID (lock file ``path``): ``todo``", or where the lock file cannot be opened."""
    path = os.fspath(path)
    if fcntl is None:
        return _unlocked(path, None)
    got = _attempt(path, make_folder)
    if isinstance(got, Lock):
        return got
    raise ElmoLockError(f"{what} is in use by {got} (lock file {path}): {todo}", path, got.pid)


def wait(path: PathLike, timeout: float, on_wait: Callable[[Holder], None], what: str, todo: str,
         make_folder: bool = False, poll: float = 0.2) -> Lock:
    """Take the lock of ``path``, waiting for its holder up to ``timeout`` seconds: ``on_wait``
    is called once, with the :class:`Holder`, when the wait begins (to say why nothing happens).
    Returns a :class:`Lock`. Raises :class:`ElmoLockError` when the time runs out ("``what``: gave
    up after N s waiting for pid PID (lock file ``path``): ``todo``"), or where the lock file
    cannot be opened. ``make_folder`` as for :func:`hold`."""
    path = os.fspath(path)
    if fcntl is None:
        return _unlocked(path, None)
    deadline, waiting = time.monotonic() + timeout, False
    while True:
        got = _attempt(path, make_folder)
        if isinstance(got, Lock):
            return got
        if not waiting:
            waiting = True
            on_wait(got)
        if time.monotonic() >= deadline:
            raise ElmoLockError(f"{what}: gave up after {timeout:g} s waiting for {got} (lock file {path}): {todo}",
                                path, got.pid)
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
