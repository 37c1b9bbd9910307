"""Unpack a downloaded zip without trusting it: :func:`safe_extract`.

A member whose path is absolute, climbs out (``..``), is a symbolic link, or would push the total
past ``max_bytes`` (or the archive past ``max_members`` entries) stops everything with a one-line
error and nothing is kept; bytes are counted as they are written, whatever the zip's headers
claim. A disk that cannot take the bytes (full, over quota, read-only) is told apart from a bad
archive: an :class:`~spacy_elmo.errors.ElmoDownloadError` with ``resumable`` True, so that the caller
keeps the zip for the next run.
"""
import os
import shutil
import stat
import zipfile
import zlib
from pathlib import PurePosixPath

from ..errors import ElmoDownloadError
from .fetch import disk_reason

MAX_BYTES = 8 << 30  # unpacked bytes of one archive (the published ELMoForManyLangs models are ~0.2-0.4 GB)
MAX_MEMBERS = 10_000
BLOCK = 1 << 20


def _member_path(dest: str, info: zipfile.ZipInfo) -> str:
    """Where a member goes under ``dest``; raises ElmoDownloadError for an unsafe member."""
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    why = None
    if not parts or "\x00" in name:
        why = "an empty or invalid name"
    elif name.startswith("/") or ":" in parts[0]:
        why = "an absolute path"
    elif ".." in parts:
        why = "a path that climbs out of the folder"
    elif stat.S_ISLNK(info.external_attr >> 16):
        why = "a symbolic link"
    if why:
        raise ElmoDownloadError(f"refusing to unpack member {info.filename!r}: {why}")
    target = os.path.join(dest, *parts)
    root = os.path.realpath(dest)
    if os.path.commonpath([root, os.path.realpath(target)]) != root:
        raise ElmoDownloadError(f"refusing to unpack member {info.filename!r}: it leads out of the folder")
    return target


def safe_extract(zip_path: str, dest: str, max_bytes: int = MAX_BYTES, max_members: int = MAX_MEMBERS) -> int:
    """Unpack ``zip_path`` into ``dest`` (created) as the module docstring says; returns the bytes
    written. Nothing is left in ``dest`` after an error. Raises ElmoDownloadError: with
    ``resumable`` True when ``dest`` cannot be written, else for an unsafe member, too many
    members or bytes, an encrypted or corrupt archive."""
    try:
        os.makedirs(dest, exist_ok=True)
        return _extract(zip_path, dest, max_bytes, max_members)
    except _WriteFailed as failed:
        shutil.rmtree(dest, ignore_errors=True)
        raise ElmoDownloadError(f"{dest}: cannot write the unpacked files ({disk_reason(failed.err)})", path=dest,
                                resumable=True) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError,
            OSError) as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise ElmoDownloadError(f"{zip_path}: not a readable zip archive ({err})", path=zip_path) from None
    except ElmoDownloadError as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise ElmoDownloadError(f"{zip_path}: {err}", path=zip_path) from None


class _WriteFailed(Exception):
    """An OSError of writing under ``dest`` (not of reading the archive)."""

    def __init__(self, err: OSError):
        super().__init__(str(err))
        self.err = err


def _extract(zip_path: str, dest: str, max_bytes: int, max_members: int) -> int:
    total = 0
    with zipfile.ZipFile(zip_path) as zf:
        members = zf.infolist()
        if len(members) > max_members:
            raise ElmoDownloadError(f"{len(members):,} members, more than the limit of {max_members:,}")
        targets = [(_member_path(dest, m), m) for m in members]  # every name checked before any write
        for target, info in targets:
            if info.is_dir():
                _write(os.makedirs, target, exist_ok=True)
                continue
            _write(os.makedirs, os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, _write(open, target, "wb") as out:
                while True:
                    block = src.read(BLOCK)
                    if not block:
                        break
                    total += len(block)
                    if total > max_bytes:
                        raise ElmoDownloadError(f"unpacks to more than {max_bytes:,} bytes (the limit)")
                    _write(out.write, block)
                _write(out.flush)
    return total


def _write(call, *args, **kwargs):
    """``call(*args, **kwargs)``, an OSError of which is a :class:`_WriteFailed`."""
    try:
        return call(*args, **kwargs)
    except OSError as err:
        raise _WriteFailed(err) from None
