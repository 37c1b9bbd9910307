"""Download a model into the cache: ``download_model("elmo-small")``, ``download_model("efml-de")``
(an ELMoForManyLangs zip, see :mod:`.efml_download`) or
``download_model("my-elmo", urls={"options.json": URL, "weights.hdf5": URL})``.

Steps: each file into ``<name>/<file>.part`` (resumable, :mod:`.fetch`) -> sha256 of each, checked
against the catalog's or the ``sha256`` pins -> validation by loading the two files with
``BiLM.from_files`` (every dataset's shape against the options) and embedding one sentence ->
rename into place -> ``source.json`` -> ``sha256.json`` (``spacy_elmo.bilm.integrity.record``;
checked on every later load). A failure leaves no file that looks finished: bad bytes are
deleted, an interrupted transfer stays as ``.part`` for the next run, an empty folder is removed.
"""
import datetime
import logging
import os
import re
import shutil
from typing import Dict, Optional

from ..errors import ElmoConfigError, ElmoDownloadError
from . import cache, catalog, hints
from .fetch import check_url, fetch
from .resolve import available

logger = logging.getLogger("spacy_elmo")
_HEX = re.compile(r"[0-9a-f]{64}")  # fullmatch


def parse_pins(values) -> Dict[str, str]:
    """``--sha256`` values -> {file: hex}. ``HEX`` pins weights.hdf5; ``options=HEX`` /
    ``weights=HEX`` name the file. Raises ElmoConfigError (a ValueError) for anything else."""
    pins = {}
    for value in values or ():
        key, _, digest = value.rpartition("=")
        file = {"": "weights.hdf5", "weights": "weights.hdf5", "options": "options.json"}.get(key.lower())
        if file is None or not _HEX.fullmatch(digest.lower()):
            raise ElmoConfigError(f"--sha256 {value!r}: expected 64 hex digits, optionally after "
                                  "'options=' or 'weights='")
        pins[file] = digest.lower()
    return pins


def download_model(name: str, urls: Optional[Dict[str, str]] = None, sha256: Optional[Dict[str, str]] = None,
                   force: bool = False, progress: bool = True, retries: int = 3, backoff: float = 1.0,
                   timeout: float = 60.0) -> str:
    """Download a model of the catalog (``urls`` None) or any bilm-tf/AllenNLP model given its two
    URLs under a new ``name``; returns its cache folder. An already complete download is checked
    (sha256) and kept unless ``force``. ``sha256``: pins {file: hex}, see :func:`parse_pins`
    (an ELMoForManyLangs entry takes {"source.zip": hex}). Raises ElmoConfigError (a
    ValueError) for a bad name/URL/mirror/pin, ElmoDownloadError for a failed or bad download.

    The cache entry is locked for the whole download (:func:`.cache.lock_entry`): a second
    download of the same name (another process) waits for the first, up to
    ``$SPACY_ELMO_DOWNLOAD_WAIT`` seconds (default an hour; ElmoLockError, a RuntimeError, when
    that runs out), then finds the model ready and fetches nothing."""
    entry = catalog.get(name)
    if urls is None and entry is not None and entry.format == catalog.EFML:
        from .efml_download import download_efml

        return download_efml(name, sha256=(sha256 or {}).get(cache.ZIP), force=force, progress=progress,
                             retries=retries, backoff=backoff, timeout=timeout)
    urls = _urls(name, urls)
    expected = _expected(name, sha256 or {})
    with cache.lock_entry(name):  # a second download of the name waits here, then finds the model ready
        return _download(name, urls, expected, force, bool(sha256),
                         dict(progress=progress, retries=retries, backoff=backoff, timeout=timeout))


def _download(name: str, urls: Dict[str, str], expected: Dict[str, Optional[str]], force: bool, pinned: bool,
              options: dict) -> str:
    """The body of :func:`download_model`, under the lock of the cache entry."""
    directory = cache.model_dir(name)
    if cache.state(name) == "downloaded" and not force:
        return _existing(name, directory, urls, expected)
    _prepare(name, directory, urls, force)
    try:
        for file in cache.FILES:
            fetch(urls[file], _part(directory, file), label=f"{name} {file}", **options)
        digests = _check_digests(directory, urls, expected)
        _validate(name, directory, urls)
        _install(name, directory, urls, digests, pinned)
    except ElmoDownloadError as err:
        if not err.resumable:  # an HTTP 4xx: the other file's bytes are of no use either
            _drop_parts(directory)
        raise
    finally:
        _remove_if_empty(directory)
    return directory


def _urls(name: str, urls: Optional[Dict[str, str]]) -> Dict[str, str]:
    cache.check_name(name)
    entry = catalog.get(name)
    if urls is None:
        if entry is None:
            raise ElmoConfigError(f"{catalog.unknown_name(name)}; a model of your own downloads in the form "
                                  "`download URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME`")
        return entry.urls()
    urls = {file: check_url(urls[file]) for file in cache.FILES}
    if entry is not None or name in available():
        raise ElmoConfigError(hints.name_taken(name, [urls["options.json"], urls["weights.hdf5"]],
                                                         available()))
    return urls


def _expected(name: str, pins: Dict[str, str]) -> Dict[str, Optional[str]]:
    entry = catalog.get(name)
    known = dict(entry.sha256) if entry is not None else {}
    return {file: pins.get(file) or known.get(file) for file in cache.FILES}


def _part(directory: str, file: str) -> str:
    return os.path.join(directory, file + ".part")


def _existing(name: str, directory: str, urls: Dict[str, str], expected: Dict[str, Optional[str]]) -> str:
    """Check a complete download against its recorded digests (and the pins); return it."""
    from ..bilm import integrity
    from ..errors import ElmoModelFileError
    source = cache.read_source(name) or {}
    if catalog.get(name) is None and source.get("urls") not in (None, urls):
        args = [urls["options.json"], urls["weights.hdf5"]]
        raise ElmoConfigError(hints.other_source(name, source["urls"].get("weights.hdf5"), args, available()))
    for file in cache.FILES:
        path = os.path.join(directory, file)
        try:
            integrity.verify(path)
        except ElmoModelFileError as err:
            raise ElmoDownloadError(f"{err}; to download it again, {hints.finish(name, force=True)}",
                                    path=path) from None
        if expected[file] and integrity.sha256(path) != expected[file]:
            raise ElmoDownloadError(f"{path}: sha256 differs from the pinned {expected[file][:16]}...; to download "
                                    f"it again, {hints.finish(name, force=True)}", path=path)
    logger.info("%s is already downloaded in %s", name, directory)
    return directory


def _prepare(name: str, directory: str, urls: Dict[str, str], force: bool) -> None:
    """Start or resume: a forced download starts from nothing; .part files fetched from other
    URLs are dropped; the completeness marker goes first, so the folder is never 'finished'."""
    if force and os.path.isdir(directory):
        shutil.rmtree(directory)
    old = cache.read_source(name) or {}
    if old.get("urls") not in (None, urls):
        for file in cache.FILES:
            if os.path.isfile(_part(directory, file)):
                os.remove(_part(directory, file))
    if os.path.isfile(os.path.join(directory, cache.DIGESTS)):
        os.remove(os.path.join(directory, cache.DIGESTS))
    os.makedirs(directory, exist_ok=True)
    cache.write_json(os.path.join(directory, cache.SOURCE), {"urls": urls, "complete": False})


def _check_digests(directory: str, urls: Dict[str, str], expected: Dict[str, Optional[str]]) -> Dict[str, str]:
    """sha256 of each .part; a mismatch with the expected digest deletes both and raises."""
    from ..bilm.integrity import sha256

    digests = {file: sha256(_part(directory, file)) for file in cache.FILES}
    for file, want in expected.items():
        if want and digests[file] != want:
            _drop_parts(directory)
            raise ElmoDownloadError(
                f"{urls[file]}: sha256 {digests[file][:16]}... differs from the expected {want[:16]}...: the "
                "download is corrupt or the file was changed; nothing was kept", url=urls[file])
    return digests


def _validate(name: str, directory: str, urls: Dict[str, str]) -> None:
    """Load the .part files as a BiLM (shapes against options) and embed one sentence; on
    failure delete them and raise ElmoDownloadError."""
    import numpy

    from ..bilm import BiLM

    try:
        bilm = BiLM.from_files(_part(directory, "options.json"), _part(directory, "weights.hdf5"))
        out = bilm.embed_sentences([["Hello", "world", "."]])[0]
    except (ValueError, OSError, RuntimeError, KeyError) as err:
        _drop_parts(directory)
        raise ElmoDownloadError(f"{urls['weights.hdf5']}: the downloaded files are not a usable ELMo model "
                                f"({err}); nothing was kept", url=urls["weights.hdf5"]) from None
    if not numpy.isfinite(out).all():
        _drop_parts(directory)
        raise ElmoDownloadError(f"{urls['weights.hdf5']}: the downloaded model gives non-finite vectors; "
                                "nothing was kept", url=urls["weights.hdf5"])
    _warn_shape(name, bilm)


def _warn_shape(name: str, bilm) -> None:
    entry = catalog.get(name)
    got = (bilm.options["lstm"]["dim"], bilm.projection_dim)
    if entry is not None and got != (entry.lstm_dim, entry.projection_dim):
        logger.warning("%s: the downloaded options have lstm dim %d / projection %d, the catalog says %d / %d "
                       "(a mirror with other files?)", name, got[0], got[1], entry.lstm_dim, entry.projection_dim)


def _install(name: str, directory: str, urls: Dict[str, str], digests: Dict[str, str], pinned: bool) -> None:
    from ..bilm import integrity

    for file in cache.FILES:
        os.replace(_part(directory, file), os.path.join(directory, file))
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    cache.write_json(os.path.join(directory, cache.SOURCE),
                {"name": name, "urls": urls, "sizes": cache.sizes(directory), "sha256": digests, "pinned": pinned,
                 "downloaded": when, "complete": True})
    recorded = integrity.record(directory, cache.FILES)  # the completeness marker, written last
    if any(recorded[f] != digests[f] for f in cache.FILES):
        os.remove(os.path.join(directory, cache.DIGESTS))
        raise ElmoDownloadError(f"{directory}: the files changed while being installed; run the download again",
                                path=directory)


def _drop_parts(directory: str) -> None:
    for file in cache.FILES:
        if os.path.isfile(_part(directory, file)):
            os.remove(_part(directory, file))


def _remove_if_empty(directory: str) -> None:
    """Remove empty .part files, then the folder if nothing but source.json is left."""
    if not os.path.isdir(directory):
        return
    for file in cache.FILES:
        part = _part(directory, file)
        if os.path.isfile(part) and os.path.getsize(part) == 0:
            os.remove(part)
    if set(os.listdir(directory)) <= {cache.SOURCE}:
        shutil.rmtree(directory)
