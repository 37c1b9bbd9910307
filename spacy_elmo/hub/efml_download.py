"""Download a published ELMoForManyLangs zip, unpack it safely, convert it, and keep the result in
the model cache under a name: ``download_efml("efml-de")`` (a catalog name, see :mod:`.catalog`)
or ``download_efml("my-de", url=URL)``.

Steps, in the cache folder of the name (:mod:`.cache`):

1. the zip into ``source.zip.part`` (resumable, :func:`.fetch.fetch`); its sha256 is checked
   against ``sha256=`` when given, and recorded; complete, it is renamed ``source.zip``;
2. unpacked into ``unpacked.tmp/`` by :func:`.unzip.safe_extract` (unsafe members, bombs and
   corrupt archives are refused);
3. the folder holding ``config.json`` (the archive's root, or its single subfolder) converted
   (:func:`spacy_elmo.convert.convert`) into ``converted.tmp/``, then ``options.json`` and
   ``weights.hdf5`` renamed into place, ``source.json`` written (URL, format, the zip's sha256
   and size), and ``sha256.json`` last: the folder is complete only then, and loads by name
   everywhere.

The zip and the unpacked files are deleted once the model is installed. A failed transfer keeps
``source.zip.part`` for the next run; a disk that cannot take the unpacked or converted files
(full, over quota, read-only) keeps ``source.zip``, which the next run unpacks without fetching it
again (after checking its recorded sha256); a zip that is corrupt, unsafe or not a convertible
model is deleted. Errors: :class:`~.fetch.ElmoDownloadError`, ElmoConfigError (a
ValueError) for a bad name, URL or pin.
"""
import datetime
import os
import shutil
from typing import Optional

from ..errors import ElmoConfigError, ElmoDownloadError
from . import cache, catalog, hints
from .fetch import check_url, disk_reason, fetch
from .resolve import available
from .unzip import MAX_BYTES, safe_extract

ZIP = cache.ZIP
ZIP_PART = ZIP + ".part"
UNPACKED, CONVERTED = "unpacked.tmp", "converted.tmp"


def model_folder(dest: str) -> str:
    """The unpacked folder holding ``config.json``: ``dest`` itself or its only subfolder that has one."""
    if os.path.isfile(os.path.join(dest, "config.json")):
        return dest
    found = [os.path.join(dest, d) for d in sorted(os.listdir(dest))
             if os.path.isfile(os.path.join(dest, d, "config.json"))]
    if len(found) != 1:
        raise ElmoDownloadError(f"the archive holds {'no' if not found else len(found)} ELMoForManyLangs model "
                                "folders (with config.json) at its top level; expected one")
    return found[0]


def _resolve(name: str, url: Optional[str]) -> str:
    cache.check_name(name)
    entry = catalog.get(name)
    if url is None:
        if entry is None:
            raise ElmoConfigError(f"{catalog.unknown_name(name)}; a zip of your own downloads in the form "
                                  "`download ZIP_URL --format elmoformanylangs --name NAME`")
        if entry.format != catalog.EFML:
            raise ElmoConfigError(f"{name!r} is a {entry.format} model of the catalog, not an "
                                  f"ELMoForManyLangs zip: run: {hints.command('download', name)}")
        return entry.urls()[ZIP]
    check_url(url)
    if entry is not None or name in available():
        raise ElmoConfigError(hints.name_taken(name, [url, "--format", catalog.EFML], available()))
    return url


def _check_pin(sha256: Optional[str]) -> Optional[str]:
    if sha256 is not None and (len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256.lower())):
        raise ElmoConfigError(f"--sha256 {sha256!r}: expected 64 hex digits (the zip's)")
    return None if sha256 is None else sha256.lower()


def download_efml(name: str, url: Optional[str] = None, sha256: Optional[str] = None, force: bool = False,
                  progress: bool = True, retries: int = 3, backoff: float = 1.0, timeout: float = 60.0,
                  max_bytes: int = MAX_BYTES) -> str:
    """Download, unpack, convert and install an ELMoForManyLangs model as ``name``; returns its
    cache folder. ``url``: the zip (default: the catalog's for ``name``); ``sha256``: the zip's
    expected digest (hex). A complete model already there is kept unless ``force``.
    Raises ElmoConfigError (a ValueError: bad name, URL, mirror or pin), ElmoDownloadError
    (transfer, digest, unsafe or corrupt zip, not a convertible model, a disk that cannot take it).
    The cache entry is locked for the whole download, as by :func:`.download.download_model`."""
    url = _resolve(name, url)
    pin = _check_pin(sha256)
    with cache.lock_entry(name):  # a second download of the name waits here, then finds the model ready
        return _download(name, url, pin, force, max_bytes,
                         dict(progress=progress, retries=retries, backoff=backoff, timeout=timeout))


def _download(name: str, url: str, pin: Optional[str], force: bool, max_bytes: int, options: dict) -> str:
    """The body of :func:`download_efml`, under the lock of the cache entry."""
    directory = cache.model_dir(name)
    if cache.state(name) == "downloaded" and not force:
        return _existing(name, directory, url)
    _prepare(name, directory, url, force)
    try:
        zip_path, digest = _fetch_zip(name, directory, url, pin, options)
        _unpack_and_convert(name, directory, zip_path, url, max_bytes)
        _install(name, directory, url, digest, os.path.getsize(zip_path), pin is not None)
        os.remove(zip_path)
    finally:
        for tmp in (UNPACKED, CONVERTED):
            shutil.rmtree(os.path.join(directory, tmp), ignore_errors=True)
        if os.path.isdir(directory) and set(os.listdir(directory)) <= {cache.SOURCE}:
            shutil.rmtree(directory)
    return directory


def _existing(name: str, directory: str, url: str) -> str:
    """A complete download, checked against its digests. A name downloaded from another zip URL
    is refused (a catalog name is kept whatever mirror it came from)."""
    from ..bilm import integrity
    from ..errors import ElmoModelFileError
    source = cache.read_source(name) or {}
    if catalog.get(name) is None and source.get("url") != url:
        origin = source.get("url") or source.get("urls")
        raise ElmoConfigError(hints.other_source(name, origin, [url, "--format", catalog.EFML], available()))
    try:
        for file in cache.FILES:
            integrity.verify(os.path.join(directory, file))
    except ElmoModelFileError as err:
        raise ElmoDownloadError(f"{err}; to download it again, {hints.finish(name, force=True)}") from None
    return directory


def _prepare(name: str, directory: str, url: str, force: bool) -> None:
    """Start or resume: bytes fetched from another URL are dropped; a complete zip of this URL
    is kept with its recorded digest; no model file or digest of an earlier state is left."""
    if force and os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory, exist_ok=True)
    old = cache.read_source(name) or {}
    same = old.get("url") == url
    for stale in (ZIP_PART, ZIP) if not same else ():
        if os.path.isfile(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))  # bytes of another file: start again
    for stale in (cache.DIGESTS, *cache.FILES):
        if os.path.isfile(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))
    kept = {"zip_sha256": old["zip_sha256"]} if same and old.get("zip_sha256") else {}
    cache.write_json(os.path.join(directory, cache.SOURCE), {"url": url, "format": catalog.EFML, "complete": False,
                                                             **kept})


def _fetch_zip(name: str, directory: str, url: str, pin: Optional[str], options: dict):
    """(path of source.zip, its sha256): the zip kept by an earlier run when its recorded digest
    (and the pin) still match, else fetched (resuming source.zip.part) and checked."""
    from ..bilm.integrity import sha256

    zip_path, part = os.path.join(directory, ZIP), os.path.join(directory, ZIP_PART)
    if os.path.isfile(zip_path):
        digest = sha256(zip_path)
        if digest == (cache.read_source(name) or {}).get("zip_sha256") and pin in (None, digest):
            return zip_path, digest
        os.remove(zip_path)
    fetch(url, part, label=f"{name} zip", **options)
    digest = sha256(part)
    if pin and digest != pin:
        os.remove(part)
        raise ElmoDownloadError(f"{url}: sha256 {digest[:16]}... differs from the expected {pin[:16]}...: the "
                                "download is corrupt or the file was changed; nothing was kept", url=url)
    os.replace(part, zip_path)
    cache.write_json(os.path.join(directory, cache.SOURCE), {"url": url, "format": catalog.EFML, "complete": False,
                                                             "zip_sha256": digest})
    return zip_path, digest


def _unpack_and_convert(name: str, directory: str, zip_path: str, url: str, max_bytes: int) -> None:
    from ..convert import convert
    from ..errors import ElmoModelFileError

    unpacked, converted = os.path.join(directory, UNPACKED), os.path.join(directory, CONVERTED)
    try:
        safe_extract(zip_path, unpacked, max_bytes=max_bytes)
        convert(model_folder(unpacked), converted, force=True)
    except (ElmoDownloadError, ElmoModelFileError) as err:
        if isinstance(err, ElmoDownloadError) and err.resumable:  # the disk could not take the unpacked files
            raise _kept_zip(name, zip_path, str(err)) from None
        os.remove(zip_path)
        raise ElmoDownloadError(f"{url}: {err}; nothing was kept", url=url) from None
    except OSError as err:  # writing the converted model: the zip is fine
        raise _kept_zip(name, zip_path, f"{converted}: cannot write the converted model ({disk_reason(err)})") from None
    for file in cache.FILES:
        os.replace(os.path.join(converted, file), os.path.join(directory, file))


def _kept_zip(name: str, zip_path: str, what: str) -> ElmoDownloadError:
    return ElmoDownloadError(f"{what}: the downloaded zip is kept in {zip_path}; once the disk has space, "
                             f"{hints.finish(name)} (it unpacks the kept zip, nothing is fetched again)",
                             path=zip_path, resumable=True)


def _install(name: str, directory: str, url: str, digest: str, size: int, pinned: bool) -> None:
    from ..bilm import integrity

    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    cache.write_json(os.path.join(directory, cache.SOURCE),
                     {"name": name, "url": url, "format": catalog.EFML, "zip_sha256": digest, "zip_bytes": size,
                      "pinned": pinned, "sizes": cache.sizes(directory), "downloaded": when, "complete": True})
    integrity.record(directory, cache.FILES)  # the completeness marker, written last
