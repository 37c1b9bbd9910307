"""The commands that the errors of model loading and downloading, and ``models``, print: each
one works when pasted into a POSIX shell (arguments quoted with :func:`shlex.quote`), and the
tests run each one.

A model's download arguments come from the catalog (``download NAME``) or, for a model
downloaded from URLs, from its ``source.json`` (the two URLs and ``--name``; an
ELMoForManyLangs zip's URL, ``--format elmoformanylangs`` and ``--name``). No torch or spaCy
import.
"""
import shlex
from typing import Iterable, List, Optional

from . import cache, catalog

PROGRAM = "python -m spacy_elmo"


def command(*args: str) -> str:
    """``python -m spacy_elmo ARGS``, each argument quoted for the shell."""
    return " ".join([PROGRAM, *(shlex.quote(a) for a in args)])


def source_args(name: str) -> Optional[List[str]]:
    """The ``download`` arguments that fetch ``name`` again: ``[name]`` for a catalog name;
    ``[URL_OF_OPTIONS, URL_OF_WEIGHTS, "--name", name]`` or ``[ZIP_URL, "--format",
    "elmoformanylangs", "--name", name]`` as its source.json records; None when it records
    neither (source.json removed or unreadable)."""
    if catalog.get(name) is not None:
        return [name]
    source = cache.read_source(name) or {}
    urls = source.get("urls")
    if isinstance(urls, dict) and all(isinstance(urls.get(f), str) for f in cache.FILES):
        return [urls["options.json"], urls["weights.hdf5"], "--name", name]
    if isinstance(source.get("url"), str) and source.get("format") == catalog.EFML:
        return [source["url"], "--format", catalog.EFML, "--name", name]
    return None


def download(name: str, force: bool = False) -> Optional[str]:
    """The command that downloads (or resumes) ``name``; with ``force`` the one that downloads
    it again from nothing. None when its source is not recorded (see :func:`source_args`)."""
    args = source_args(name)
    if args is None:
        return None
    return command("download", *args, *(["--force"] if force else []))


def remove(name: str) -> str:
    """``rm -r FOLDER``: the command that removes the cache folder of ``name``."""
    return f"rm -r {shlex.quote(cache.model_dir(name))}"


def next_command(name: str, force: bool = False) -> str:
    """The one command to run for the cached ``name``: :func:`download` (``force``: the one
    that replaces it), or :func:`remove` when its source is not recorded."""
    return download(name, force) or remove(name)


def finish(name: str, force: bool = False) -> str:
    """:func:`next_command` in a sentence ("run: ...", or why the folder is to be removed)."""
    cmd = download(name, force)
    if cmd is not None:
        return f"run: {cmd}"
    return (f"its source is not recorded ({cache.SOURCE} is missing), so remove it with: {remove(name)} and "
            "download it again")


def free_name(name: str, packaged: Iterable[str]) -> str:
    """``name-2``, ``name-3``, ... : the first that no catalog entry, packaged model or cache
    folder uses (cut so that it stays a valid name)."""
    taken = set(packaged)
    for k in range(2, 10_000):
        candidate = f"{name[: 96]}-{k}"
        if catalog.get(candidate) is None and candidate not in taken and cache.state(candidate) == "absent":
            return candidate
    raise AssertionError("unreachable: fewer than 10,000 cache folders share a name")


def under_free_name(args: List[str], name: str, packaged: Iterable[str]) -> str:
    """``download ARGS --name FREE`` for the first free name after ``name`` (:func:`free_name`)."""
    return command("download", *args, "--name", free_name(name, packaged))


def name_taken(name: str, args: List[str], packaged: Iterable[str]) -> str:
    """The sentence for ``download ARGS --name NAME`` where NAME is a catalog or packaged model's."""
    kind = "a model of the catalog" if catalog.get(name) is not None else "a packaged model"
    return f"--name {name!r} is taken by {kind}: download under another name: {under_free_name(args, name, packaged)}"


def other_source(name: str, origin, args: List[str], packaged: Iterable[str]) -> str:
    """The sentence for ``download ARGS --name NAME`` where NAME was downloaded from ``origin``."""
    replace = command("download", *args, "--name", name, "--force")
    return (f"{name!r} was downloaded from another source ({origin}): download under another name: "
            f"{under_free_name(args, name, packaged)}, or replace it: {replace}")
