"""One file over HTTP(S) into a ``.part`` file, resumable with HTTP Range, with a byte progress bar.

No torch or spaCy here. Errors: :class:`ElmoDownloadError` (one line naming the URL, or the
``.part`` file for a disk error: full, read-only or not writable, reported once, not retried).
"""
import errno
import http.client
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from typing import Optional
from urllib.parse import urlparse

from tqdm import tqdm

from ..errors import ElmoConfigError, ElmoDownloadError

BLOCK = 1 << 20  # bytes read per call
USER_AGENT = "spacy-elmo (python urllib)"


class _Retry(Exception):
    """A transient failure (connection refused/lost, timeout, HTTP 5xx/429): try again."""


def check_url(url: str) -> str:
    """Return ``url`` if it is an http(s) URL with a host; raise ElmoConfigError (a
    ValueError) otherwise."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ElmoConfigError(f"not an http(s) URL: {url!r}")
    return url


def fetch(url: str, part: str, *, progress: bool = True, label: Optional[str] = None, retries: int = 3,
          backoff: float = 1.0, timeout: float = 60.0) -> int:
    """Download ``url`` into ``part``, continuing from the bytes already there (``Range:
    bytes=N-``; a server that ignores Range restarts from zero). Retries a lost or refused
    connection, a timeout or HTTP 5xx/429 ``retries`` times, waiting ``backoff`` x 1, 2, 4 ...
    seconds, each time resuming where it stopped. Returns the file size in bytes. ``part`` is
    only created once the server answers. Raises ElmoDownloadError (at once for HTTP 4xx and an
    unresolvable host name, after the retries otherwise);
    what was received stays in ``part`` for the next call. Raises ElmoConfigError (a
    ValueError) for a URL that is not http(s) (urllib would also open ``file:`` and ``ftp:``)."""
    check_url(url)
    for attempt in range(retries + 1):
        try:
            return _fetch_once(url, part, progress, label or os.path.basename(part), timeout)
        except _Retry as err:
            if attempt == retries:
                kept = os.path.getsize(part) if os.path.isfile(part) else 0
                raise ElmoDownloadError(f"{url}: {err} (gave up after {retries + 1} tries; "
                                        f"{_kept(kept)})", url=url, path=part, resumable=True) from None
            time.sleep(backoff * 2 ** attempt)
    raise AssertionError("unreachable")


def _kept(n: int) -> str:
    return f"{n:,} bytes kept for resuming: run the same command again" if n else "nothing was written"


def _open(url: str, offset: int, timeout: float):
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code in (429,) or err.code >= 500:
            raise _Retry(f"HTTP {err.code} {err.reason}") from None
        if err.code == 416 and offset:
            return None  # the .part is not a prefix of this file: start again
        raise ElmoDownloadError(f"{url}: HTTP {err.code} {err.reason} (nothing was kept)", url=url) from None
    except urllib.error.URLError as err:
        if isinstance(err.reason, socket.gaierror):  # no DNS: no network, or a wrong host; retrying won't help
            raise ElmoDownloadError(f"{url}: cannot resolve the host ({_reason(err.reason)}): no network, or a "
                                    "wrong URL? (nothing was written)", url=url) from None
        raise _Retry(f"cannot reach the server ({_reason(err.reason)})") from None
    except (http.client.HTTPException, OSError) as err:
        raise _Retry(f"connection failed ({_reason(err)})") from None


def _reason(err) -> str:
    if isinstance(err, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(err, socket.timeout):
        return "timed out"
    return str(getattr(err, "strerror", None) or err) or type(err).__name__


def _start(resp, offset: int) -> Optional[int]:
    """Offset the response body starts at (0 for a full 200 answer), or None if a 206 answer
    does not continue at ``offset``."""
    if resp.status == 206:
        first = (resp.headers.get("Content-Range") or "").replace("bytes ", "").split("-")[0]
        return offset if first.strip() == str(offset) else None
    return 0


def _fetch_once(url: str, part: str, progress: bool, label: str, timeout: float) -> int:
    offset = os.path.getsize(part) if os.path.isfile(part) else 0
    resp = _open(url, offset, timeout)
    if resp is None or (offset and _start(resp, offset) is None):
        if resp is not None:
            resp.close()
        os.remove(part)
        raise _Retry("the server did not continue the partial download; starting again")
    with resp:
        offset = _start(resp, offset)
        length = resp.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else None
        got = _stream(resp, part, offset, total, progress, label)
    if total is not None and offset + got != total:
        raise _Retry(f"connection closed after {offset + got:,} of {total:,} bytes")
    return offset + got


def _stream(resp, part: str, offset: int, total: Optional[int], progress: bool, label: str) -> int:
    """Append the body to ``part`` (truncated first when offset is 0); returns bytes received.
    A failed read is a lost connection (retried); a failed write, flush or open of ``part``
    (disk full, read-only, no permission) is an ElmoDownloadError naming ``part``, at once,
    with what was written kept for resuming."""
    got = 0
    try:  # every OSError here but a read's (turned into _Retry) is about part: open, write, flush, close
        with open(part, "ab" if offset else "wb") as f, \
                tqdm(total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024, desc=label,
                     disable=not progress, file=sys.stderr, leave=True) as bar:
            while True:
                try:
                    block = resp.read(BLOCK)
                except (http.client.HTTPException, OSError) as err:
                    raise _Retry(f"connection lost after {offset + got:,} bytes ({_reason(err)})") from None
                if not block:
                    break
                f.write(block)
                got += len(block)
                bar.update(len(block))
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        raise _disk_error(part, err) from None
    return got


DISK_ERRORS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
               errno.EACCES: "permission denied", errno.EPERM: "operation not permitted"}


def disk_reason(err: OSError) -> str:
    """A few words for an OSError of writing: "disk full", "read-only file system", ..."""
    return DISK_ERRORS.get(err.errno) or err.strerror or str(err)


def _disk_error(part: str, err: OSError) -> ElmoDownloadError:
    """The one-line error of a ``part`` that cannot be written (not retried: another try fails
    the same way), with the bytes it keeps."""
    try:
        kept = os.path.getsize(part)
    except OSError:
        kept = 0
    return ElmoDownloadError(f"{part}: cannot write the download ({disk_reason(err)}): a disk error, "
                             f"not the connection; {_kept(kept)} once the folder has space and can be written "
                             "(or set $SPACY_ELMO_CACHE to another folder)", path=part, resumable=True)
