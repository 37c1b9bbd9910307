"""The lines of a UTF-8 text file, plain or gzip: the one reader of every command that reads text
(the corpora of ``pretrain``, ``perplexity`` and ``static-vectors``, ``embed``'s text and JSON-lines
input, the probe's pretraining text, WiC and CoNLL-U files), and its one error for a file that
is not UTF-8.

A file is decoded as ``utf-8-sig`` (a UTF-8 byte order mark at its start is dropped), strictly.
Where a byte is not UTF-8, :func:`text_lines` raises :class:`~spacy_elmo.errors.ElmoDataError`
(a ValueError), one line naming the file, the 1-based number of the first line that does not
decode, the byte and its 0-based offset in the file (in the uncompressed text of a ``.gz``), and
the command that converts the file (``iconv -f LATIN1 -t UTF-8``; ``-f UTF-16`` for a file that
starts with a UTF-16 byte order mark). The line is found by reading the file again up to it, so
reading a good file costs nothing extra.
"""
import gzip
import os
import re
import shlex
from typing import Iterator, Optional, TextIO, Tuple, Union

from .errors import ElmoDataError

PathLike = Union[str, os.PathLike]
_UNDECODED = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of a byte that is not UTF-8


def open_text(path: PathLike, newline: Optional[str] = None, errors: str = "strict",
              encoding: str = "utf-8-sig") -> TextIO:
    """``path`` opened for reading text, through gzip where its name ends in ``.gz``; ``newline``
    as for :func:`open` (None: ``\\n``, ``\\r\\n`` and ``\\r`` end a line and read as ``\\n``;
    ``"\\n"``: only ``\\n`` ends a line). Raises FileNotFoundError / OSError as :func:`open`."""
    path = os.fspath(path)
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding=encoding, errors=errors, newline=newline)
    return open(path, encoding=encoding, errors=errors, newline=newline)


def text_lines(path: PathLike, newline: Optional[str] = None) -> Iterator[str]:
    """The lines of the UTF-8 text file ``path`` (plain or ``.gz``), each with its line end, in
    order; a byte order mark at its start dropped. Raises ElmoDataError (a ValueError) naming
    the file and line for bytes that are not UTF-8 (:func:`not_utf8`), ElmoDataError naming the
    file for a file that cannot be read to its end (a corrupt ``.gz``), FileNotFoundError /
    OSError for one that cannot be opened."""
    with open_text(path, newline) as f:
        try:
            yield from f
        except UnicodeDecodeError as err:
            raise not_utf8(path, newline, err) from None
        except (OSError, EOFError) as err:
            raise ElmoDataError(f"{os.fspath(path)}: cannot read ({err})", path) from None


def first_undecodable(path: PathLike, newline: Optional[str] = None) -> Optional[Tuple[int, int, int]]:
    """(1-based line number, 0-based byte offset, byte value) of the first byte of ``path`` that
    is not UTF-8, lines split as :func:`text_lines` splits them with ``newline``; offsets count
    the bytes of the file (of the uncompressed text of a ``.gz``), a byte order mark included.
    None if every byte decodes (or the file cannot be read to that point)."""
    offset = 0
    try:
        with open_text(path, "" if newline is None else newline, "surrogateescape", "utf-8") as f:
            for number, line in enumerate(f, 1):
                bad = _UNDECODED.search(line)
                if bad:
                    before = len(line[:bad.start()].encode("utf-8", "surrogateescape"))
                    return number, offset + before, ord(bad.group()) - 0xDC00
                offset += len(line.encode("utf-8", "surrogateescape"))
    except (OSError, EOFError):
        pass
    return None


def _conversion(path: str) -> Tuple[str, str]:
    """(encoding, the shell command that writes ``path`` converted to UTF-8 next to it (``x.txt`` ->
    ``x.utf8.txt``, ``x.txt.gz`` -> ``x.utf8.txt.gz``), from UTF-16 where the file starts with
    its byte order mark, else from Latin-1)."""
    gz = path.endswith(".gz")
    stem, ext = os.path.splitext(path[:-3] if gz else path)
    target = shlex.quote(f"{stem}.utf8{ext}" + (".gz" if gz else ""))
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            start = f.read(2)
    except (OSError, EOFError):
        start = b""
    name, source = ("UTF-16", "UTF-16") if start in (b"\xff\xfe", b"\xfe\xff") else ("Latin-1", "LATIN1")
    if gz:
        return name, f"gunzip -c {shlex.quote(path)} | iconv -f {source} -t UTF-8 | gzip > {target}"
    return name, f"iconv -f {source} -t UTF-8 {shlex.quote(path)} > {target}"


def not_utf8(path: PathLike, newline: Optional[str] = None,
             err: Optional[UnicodeDecodeError] = None) -> ElmoDataError:
    """The error for the text file ``path`` that is not UTF-8 (``err``: the decoder's error, for
    a file whose bad byte cannot be found again), e.g. ``corpus.txt line 3: not UTF-8 text (byte
    0xE9 at offset 41 of the file); convert the file to UTF-8, e.g. from Latin-1: iconv -f LATIN1
    -t UTF-8 corpus.txt > corpus.utf8.txt``."""
    path = os.fspath(path)
    found = first_undecodable(path, newline)
    of = "the uncompressed text" if path.endswith(".gz") else "the file"
    if found is not None:
        number, offset, byte = found
        where = f"{path} line {number}: not UTF-8 text (byte 0x{byte:02X} at offset {offset} of {of})"
    else:
        where = f"{path}: not UTF-8 text" + (f" ({err.reason})" if err is not None else "")
    encoding, command = _conversion(path)
    return ElmoDataError(f"{where}; convert the file to UTF-8, e.g. from {encoding}: {command}", path)
