"""The per-user cache of downloaded models: where it is, what state each folder is in.

Location: ``$SPACY_ELMO_CACHE`` if set, else ``platformdirs.user_cache_dir("spacy-elmo")``
(``~/.cache/spacy-elmo`` on Linux). One folder per model::

    <cache>/<name>/options.json, weights.hdf5   the model (bilm-tf / AllenNLP layout)
                   source.json                  where it came from (URLs or the zip's URL and
                                                format), byte sizes, time of the download
                   sha256.json                  digests (spacy_elmo.bilm.integrity), written LAST
                   *.part                       an unfinished download (resumed by the next one)
                   source.zip                   an ELMoForManyLangs zip downloaded whole, kept
                                                until it is unpacked and converted
    <cache>/.locks/<name>                       the lock of a download in progress (pid and host
                                                of the process that holds it; see lock_entry)

A model is complete only when ``sha256.json`` holds the digests of both files: it is written
after they are renamed into place, so a folder without it never looks finished. Loading checks
the digests (``BiLM.from_files``). Names resolve to these folders in :mod:`.resolve`. No torch
or spaCy import here.
"""
import json
import logging
import math
import os
import re
from typing import Dict, List, Optional

from ..bilm.files import CONFIG_BYTES, read_json
from ..errors import ElmoConfigError
from ..locks import Lock, wait

CACHE_ENV = "SPACY_ELMO_CACHE"
WAIT_ENV = "SPACY_ELMO_DOWNLOAD_WAIT"  # seconds a download waits for another one of the same name
DEFAULT_WAIT = 3600.0
LOCKS = ".locks"  # <cache>/.locks/<name>: no model name starts with a dot
FILES = ("options.json", "weights.hdf5")
SOURCE = "source.json"
DIGESTS = "sha256.json"
ZIP = "source.zip"  # an ELMoForManyLangs download, kept until it is converted
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # whole names only: fullmatch


def cache_dir() -> str:
    """The cache folder (not created here)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    import platformdirs

    return platformdirs.user_cache_dir("spacy-elmo", appauthor=False)


def check_name(name: str) -> str:
    """Return ``name`` if it can name a cached model (letters, digits, ``.``, ``_``, ``-``; no
    path separators; at most 100 characters). Raises ElmoConfigError (a ValueError)
    otherwise."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise ElmoConfigError(f"invalid model name {name!r}: use letters, digits, '.', '_' and '-' "
                              "(at most 100 characters, starting with a letter or digit)")
    return name


def model_dir(name: str) -> str:
    """Folder of a cached model (may not exist). Raises ElmoConfigError (a ValueError)
    for an invalid name."""
    return os.path.join(cache_dir(), check_name(name))


def read_source(name: str) -> Optional[dict]:
    """The model's source.json as a dict, or None if absent or unreadable."""
    try:
        data = read_json(os.path.join(model_dir(name), SOURCE), CONFIG_BYTES, "source.json")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def state(name: str) -> str:
    """"downloaded" (both files and their digests), "partial" (the folder exists but is not
    complete: an interrupted download) or "absent"."""
    directory = model_dir(name)
    if not os.path.isdir(directory):
        return "absent"
    try:
        digests = read_json(os.path.join(directory, DIGESTS), CONFIG_BYTES, "digest file")
    except (OSError, ValueError):
        digests = {}
    complete = isinstance(digests, dict) and all(
        digests.get(f) and os.path.isfile(os.path.join(directory, f)) for f in FILES)
    return "downloaded" if complete else "partial"


def downloaded() -> List[str]:
    """Names of the cache folders (complete or partial), sorted."""
    root = cache_dir()
    if not os.path.isdir(root):
        return []
    return sorted(n for n in os.listdir(root) if _NAME.fullmatch(n) and os.path.isdir(os.path.join(root, n)))


def sizes(directory: str) -> Dict[str, int]:
    """Byte size of each model file present in ``directory``."""
    return {f: os.path.getsize(os.path.join(directory, f)) for f in FILES
            if os.path.isfile(os.path.join(directory, f))}


def kept_bytes(name: str) -> int:
    """Bytes of an unfinished download kept in the model's folder (``*.part`` files and a
    downloaded ``source.zip``)."""
    directory = model_dir(name)
    if not os.path.isdir(directory):
        return 0
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory)
               if (f.endswith(".part") or f == ZIP) and os.path.isfile(os.path.join(directory, f)))


def wait_seconds() -> float:
    """How long a download waits for another download of the same name: ``$SPACY_ELMO_DOWNLOAD_WAIT``
    seconds (a number >= 0), else :data:`DEFAULT_WAIT` (an hour). Raises
    ElmoConfigError (a ValueError) naming the variable for anything else."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_WAIT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ElmoConfigError(f"{WAIT_ENV}={text!r}: expected a number of seconds >= 0 (default "
                                        f"{DEFAULT_WAIT:g})")
    return value


def lock_entry(name: str) -> Lock:
    """The exclusive lock of the cache entry ``name`` for a whole download
    (``<cache>/.locks/<name>``, :mod:`spacy_elmo.locks`; released when the holder ends, even
    by ``kill -9``). While another process holds it, waits up to :func:`wait_seconds`, saying so
    once (a log warning naming the pid); the caller then finds the model that process installed.
    Returns the held Lock (use it in a ``with`` block). Raises ElmoLockError (a RuntimeError)
    when the wait runs out, ElmoConfigError for an invalid name or wait."""
    directory, timeout = model_dir(name), wait_seconds()

    def say(holder) -> None:
        logging.getLogger("spacy_elmo").warning(
            "%s: %s is downloading it into %s; waiting for it to finish (at most %g s, $%s)", name, holder,
            directory, timeout, WAIT_ENV)

    return wait(os.path.join(cache_dir(), LOCKS, name), timeout, say, name, f"it is downloading the model into "
                f"{directory}; run the download again once it has finished, or set {WAIT_ENV}=SECONDS to wait longer",
                make_folder=True)


def write_json(path: str, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file, then a rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, path)
