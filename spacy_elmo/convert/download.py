"""Download a published ELMoForManyLangs zip, unpack it safely, convert it, and keep the result in
the model cache under a name: ``download_efml("efml-de")`` (a registered language, see
:mod:`.efml_registry`) or ``download_efml("my-de", url=URL)``.

Steps, in the cache folder of the name (:mod:`spacy_elmo.hub.cache`):

1. the zip into ``source.zip.part`` (resumable, :func:`spacy_elmo.hub.fetch.fetch`); its sha256
   is checked against ``sha256=`` when given, and recorded;
2. unpacked into ``unpacked.tmp/`` by :func:`safe_extract`: a member whose path is absolute,
   climbs out (``..``), is a symbolic link, or would push the total past ``max_bytes`` (or the
   archive past ``max_members`` entries) stops everything with a one-line error and nothing is
   kept; bytes are counted as they are written, whatever the zip's headers claim;
3. the folder holding ``config.json`` (the archive's root, or its single subfolder) converted
   (:func:`.efml.convert`) into ``converted.tmp/``, then ``options.json`` and ``weights.hdf5``
   renamed into place, ``source.json`` written (URL, format, the zip's sha256 and size), and
   ``sha256.json`` last: the folder is complete only then, and loads by name everywhere.

The zip and the unpacked files are deleted once the model is installed; a failed transfer keeps
``source.zip.part`` for the next run; a zip that is corrupt, unsafe or not a convertible model is
deleted. Errors: :class:`~spacy_elmo.hub.fetch.ElmoDownloadError`, ElmoDownloadArgumentError (a
ValueError) for a bad name, URL or pin.
"""
import datetime
import json
import os
import shutil
import stat
import zipfile
from pathlib import PurePosixPath
from typing import Optional

from ..bilm.files import CONFIG_BYTES, read_json
from ..hub import cache
from ..hub.fetch import ElmoDownloadArgumentError, ElmoDownloadError, check_url, fetch
from . import efml_registry

ZIP_PART = "source.zip.part"
UNPACKED, CONVERTED = "unpacked.tmp", "converted.tmp"
MAX_BYTES = 8 << 30  # unpacked bytes of one archive (the published models are ~0.2-0.4 GB)
MAX_MEMBERS = 10_000
FORMAT = "elmoformanylangs"


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
    written. Raises ElmoDownloadError (nothing is left in ``dest`` then) for an unsafe member,
    too many members or bytes, an encrypted or corrupt archive."""
    os.makedirs(dest, exist_ok=True)
    try:
        return _extract(zip_path, dest, max_bytes, max_members)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, NotImplementedError, EOFError, OSError) as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise ElmoDownloadError(f"{zip_path}: not a readable zip archive ({err})", path=zip_path) from None
    except ElmoDownloadError as err:
        shutil.rmtree(dest, ignore_errors=True)
        raise ElmoDownloadError(f"{zip_path}: {err}", path=zip_path) from None


def _extract(zip_path: str, dest: str, max_bytes: int, max_members: int) -> int:
    total = 0
    with zipfile.ZipFile(zip_path) as zf:
        members = zf.infolist()
        if len(members) > max_members:
            raise ElmoDownloadError(f"{len(members):,} members, more than the limit of {max_members:,}")
        targets = [(_member_path(dest, m), m) for m in members]  # every name checked before any write
        for target, info in targets:
            if info.is_dir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                while True:
                    block = src.read(1 << 20)
                    if not block:
                        break
                    total += len(block)
                    if total > max_bytes:
                        raise ElmoDownloadError(f"unpacks to more than {max_bytes:,} bytes (the limit)")
                    out.write(block)
    return total


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
    from ..hub import registry
    from ..hub.resolve import available

    cache.check_name(name)
    known = efml_registry.url(name)
    if url is None:
        if known is None:
            raise ElmoDownloadArgumentError(f"{name!r} is not a registered ELMoForManyLangs model "
                                            f"({efml_registry.names()[0]} ... {efml_registry.names()[-1]}); for "
                                            "another zip give its URL: download URL --format elmoformanylangs "
                                            "--name NAME")
        return known
    if known is not None or registry.get(name) is not None or name in available():
        raise ElmoDownloadArgumentError(f"--name {name!r} is a registered or packaged model's name: choose another "
                                        "name for this URL")
    return check_url(url)


def download_efml(name: str, url: Optional[str] = None, sha256: Optional[str] = None, force: bool = False,
                  progress: bool = True, retries: int = 3, backoff: float = 1.0, timeout: float = 60.0,
                  max_bytes: int = MAX_BYTES) -> str:
    """Download, unpack, convert and install an ELMoForManyLangs model as ``name``; returns its
    cache folder. ``url``: the zip (default: the registered one of ``name``); ``sha256``: the
    zip's expected digest (hex). A complete model already there is kept unless ``force``.
    Raises ElmoDownloadArgumentError (a ValueError: bad name, URL or pin), ElmoDownloadError
    (transfer, digest, unsafe or corrupt zip, not a convertible model)."""
    url = _resolve(name, url)
    if sha256 is not None and (len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256.lower())):
        raise ElmoDownloadArgumentError(f"--sha256 {sha256!r}: expected 64 hex digits (the zip's)")
    directory = cache.model_dir(name)
    if cache.state(name) == "downloaded" and not force:
        return _existing(name, directory, url)
    _prepare(directory, url, force)
    try:
        part = os.path.join(directory, ZIP_PART)
        fetch(url, part, progress=progress, label=f"{name} zip", retries=retries, backoff=backoff, timeout=timeout)
        digest = _check_digest(part, url, sha256)
        _unpack_and_convert(directory, part, url, max_bytes)
        _install(name, directory, url, digest, os.path.getsize(part), sha256 is not None)
        os.remove(part)
    finally:
        for tmp in (UNPACKED, CONVERTED):
            shutil.rmtree(os.path.join(directory, tmp), ignore_errors=True)
        if os.path.isdir(directory) and set(os.listdir(directory)) <= {cache.SOURCE}:
            shutil.rmtree(directory)
    return directory


def _existing(name: str, directory: str, url: str) -> str:
    from ..bilm import ElmoWeightsError, integrity

    source = cache.read_source(name) or {}
    if source.get("url") != url:
        origin = source.get("url") or source.get("urls")
        raise ElmoDownloadArgumentError(f"{name!r} was downloaded from another source ({origin}): "
                                        "choose another --name, or pass --force to replace it")
    try:
        for file in cache.FILES:
            integrity.verify(os.path.join(directory, file))
    except ElmoWeightsError as err:
        raise ElmoDownloadError(f"{err}; download it again with --force") from None
    return directory


def _prepare(directory: str, url: str, force: bool) -> None:
    if force and os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory, exist_ok=True)
    old = _read_json(os.path.join(directory, cache.SOURCE))
    if old.get("url") != url and os.path.isfile(os.path.join(directory, ZIP_PART)):
        os.remove(os.path.join(directory, ZIP_PART))  # bytes of another file: start again
    for stale in (cache.DIGESTS, *cache.FILES):
        if os.path.isfile(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))
    _write_json(os.path.join(directory, cache.SOURCE), {"url": url, "format": FORMAT, "complete": False})


def _check_digest(part: str, url: str, want: Optional[str]) -> str:
    from ..bilm.integrity import sha256

    digest = sha256(part)
    if want and digest != want.lower():
        os.remove(part)
        raise ElmoDownloadError(f"{url}: sha256 {digest[:16]}... differs from the expected {want[:16]}...: the "
                                "download is corrupt or the file was changed; nothing was kept", url=url)
    return digest


def _unpack_and_convert(directory: str, part: str, url: str, max_bytes: int) -> None:
    from .efml import ElmoConvertError, convert

    unpacked, converted = os.path.join(directory, UNPACKED), os.path.join(directory, CONVERTED)
    try:
        safe_extract(part, unpacked, max_bytes=max_bytes)
        convert(model_folder(unpacked), converted, force=True)
    except (ElmoDownloadError, ElmoConvertError) as err:
        os.remove(part)
        raise ElmoDownloadError(f"{url}: {err}; nothing was kept", url=url) from None
    for file in cache.FILES:
        os.replace(os.path.join(converted, file), os.path.join(directory, file))


def _install(name: str, directory: str, url: str, digest: str, size: int, pinned: bool) -> None:
    from ..bilm import integrity

    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    _write_json(os.path.join(directory, cache.SOURCE),
                {"name": name, "url": url, "format": FORMAT, "zip_sha256": digest, "zip_bytes": size,
                 "pinned": pinned, "sizes": cache.sizes(directory), "downloaded": when, "complete": True})
    integrity.record(directory, cache.FILES)  # the completeness marker, written last


def _read_json(path: str) -> dict:
    try:
        data = read_json(path, CONFIG_BYTES, "JSON file")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, path)
