"""Reading the small files that models, configs and caches are made of, in one place.

``options.json``, ``sha256.json``, ``source.json``, a pretraining ``config.cfg``, an
ELMoForManyLangs ``config.json`` / ``char.dic`` / ``word.dic``, a ``vocab.txt``: each is read
whole with :func:`read_text` / :func:`read_json`, which

- read only a regular file (a symlink is followed to what it names): a FIFO, a device such as
  ``/dev/zero``, a directory or a socket is refused at once, without waiting for a writer (the
  file is opened with ``O_NONBLOCK``) and without reading a byte;
- refuse a file larger than the cap for its kind (:data:`CONFIG_BYTES` for configs, options,
  digests and character dictionaries; :data:`VOCAB_BYTES` for word vocabularies), from its size
  before reading and again while reading (a file that grows).

Binary files read by other libraries (HDF5 through h5py, ``.pkl`` through torch) are checked
with :func:`check_regular` before they are opened. Every refusal is an
:class:`~spacy_elmo.errors.ElmoFileError` (an OSError) in one line naming the file.
"""
import json
import os
import stat
from typing import Any, Union

from ..errors import ElmoDataError, ElmoFileError

CONFIG_BYTES = 16 << 20  # 16 MiB: configs, options, digests, character dictionaries (all a few KB)
VOCAB_BYTES = 256 << 20  # 256 MiB: word vocabularies (about 20 million words)

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))

PathLike = Union[str, os.PathLike]


def _refuse_special(mode: int, path: str, what: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ElmoFileError(f"{path}: the {what} is {kind}, not a regular file; refusing to read it", path)


def _refuse_size(size: int, path: str, what: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise ElmoFileError(f"{path}: the {what} is larger than {max_bytes:,} bytes, the most a {what} may have; "
                            "refusing to read it", path)


def check_regular(path: PathLike, what: str = "file") -> int:
    """The size in bytes of ``path`` if it is a regular file (after symlinks). Raises
    ElmoFileError for anything else, FileNotFoundError if there is nothing there."""
    path = os.fspath(path)
    st = os.stat(path)
    _refuse_special(st.st_mode, path, what)
    return st.st_size


def read_bytes(path: PathLike, max_bytes: int = CONFIG_BYTES, what: str = "file") -> bytes:
    """The contents of the regular file ``path``, at most ``max_bytes`` of them. Raises
    ElmoFileError (a FIFO, a device, a directory...; or larger than ``max_bytes``),
    FileNotFoundError / OSError if it cannot be opened."""
    path = os.fspath(path)
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        _refuse_special(st.st_mode, path, what)
        _refuse_size(st.st_size, path, what, max_bytes)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    _refuse_size(len(data), path, what, max_bytes)
    return data


def read_text(path: PathLike, max_bytes: int = CONFIG_BYTES, what: str = "file", encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded. Raises ElmoDataError (a ValueError) where it is not
    ``encoding``: one line naming the file, the 1-based line of the first byte that does not
    decode, the byte and its 0-based offset in the file."""
    data = read_bytes(path, max_bytes, what)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ElmoDataError(f"{os.fspath(path)} line {line}: not {err.encoding.upper()} text (byte "
                            f"0x{data[err.start]:02X} at offset {err.start} of the file); the {what} must be "
                            f"{err.encoding.upper()}", path) from None


def read_json(path: PathLike, max_bytes: int = CONFIG_BYTES, what: str = "JSON file") -> Any:
    """:func:`read_text` parsed as JSON (ValueError, e.g. json.JSONDecodeError, if it is not).
    Python's JSON reader accepts ``NaN`` and ``Infinity``: callers check numbers where
    finiteness matters (:mod:`.finite`)."""
    return json.loads(read_text(path, max_bytes, what))
