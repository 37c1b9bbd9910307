"""What ``python -m spacy_elmo models`` lists: the packaged models, every name of the catalog
(:mod:`.catalog`: each name ``download`` takes) and any other downloaded model, with format,
language, size, licence, whether it is here, and the command to run when one is needed. No torch
or spaCy import (options are read as JSON)."""
import os
from typing import Dict, List, Optional

from ..bilm.files import CONFIG_BYTES, read_json
from . import cache, catalog, hints

COLUMNS = ("name", "format", "language", "size", "licence", "status", "command")


def shape_of(options_path: str) -> str:
    """AllenNLP-style shape name from an options.json, e.g. ``2x1024_128_2048cnn_1xhighway``;
    "?" if unreadable."""
    try:
        o = read_json(options_path, CONFIG_BYTES, "options file")
        cnn = sum(n for _, n in o["char_cnn"]["filters"])
        return (f"{o['lstm'].get('n_layers', 2)}x{o['lstm']['dim']}_{o['lstm']['projection_dim']}_{cnn}cnn_"
                f"{o['char_cnn'].get('n_highway', 0)}xhighway")
    except (OSError, ValueError, KeyError, TypeError):
        return "?"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _verified(directory: str) -> Optional[str]:
    """None if every recorded digest matches, else the error."""
    from ..bilm import integrity
    from ..errors import ElmoModelFileError

    try:
        for file in cache.FILES:
            integrity.verify(os.path.join(directory, file))
    except ElmoModelFileError as err:
        return str(err)
    return None


def _base(name: str, kind: str) -> dict:
    """The row's fixed fields: from the catalog entry, else from source.json (a downloaded model)."""
    entry = catalog.get(name)
    if entry is not None:
        return {"kind": "catalog", **entry.as_dict(), "size": f"~{entry.size_mb} MB" if entry.size_mb else "?"}
    source = (cache.read_source(name) or {}) if kind == "downloaded" else {}
    urls = source.get("urls") if isinstance(source.get("urls"), dict) else (
        {cache.ZIP: source["url"]} if isinstance(source.get("url"), str) else {})
    packaged, fmt = kind == "packaged", catalog.EFML if source.get("format") == catalog.EFML else catalog.BILM_TF
    return {"kind": kind, "name": name, "format": fmt,
            "language": "en" if packaged else "?", "language_name": "English" if packaged else "?", "size_mb": None,
            "licence": "see its ATTRIBUTION.md" if packaged else "?", "trained_on": "see its README.md" if packaged
            else "?", "urls": urls, "sha256": {}, "shape": None, "size": "-"}


def _row(name: str, kind: str, directory: Optional[str], verify: bool) -> Dict[str, object]:
    row = _base(name, kind)
    status = cache.state(name) if kind != "packaged" else "downloaded"
    row.update(path=directory or "", status=status, command="")
    if status == "absent":
        row.update(status="not downloaded", command=hints.next_command(name))
        return row
    if status == "partial":
        row.update(size=_mb(cache.kept_bytes(name)), status="partial",
                   command=hints.next_command(name))
        return row
    row.update(shape=shape_of(os.path.join(directory, "options.json")), size=_mb(sum(cache.sizes(directory).values())),
               status="ready (packaged)" if kind == "packaged" else "ready")
    recorded = (cache.read_source(name) or {}).get("sizes") if kind != "packaged" else None
    if recorded and recorded != cache.sizes(directory):
        row.update(status="CHANGED: sizes differ from the download", command=hints.next_command(name, force=True))
    if verify:
        problem = _verified(directory)
        row["status"] = f"CORRUPT: {problem}" if problem else row["status"] + " (sha256 ok)"
        if problem and kind != "packaged":  # a packaged model comes back with the package
            row["command"] = hints.next_command(name, force=True)
    return row


def rows(verify: bool = False) -> List[Dict[str, object]]:
    """One dict per model: name, kind (packaged / catalog / downloaded), format, language,
    language_name (catalog), size, licence, trained_on (catalog), urls, sha256, shape, status
    (ready / ready (packaged) / partial / not downloaded / CHANGED / CORRUPT), command (what to run, "" when
    nothing is needed), path. ``verify`` re-hashes every present file against its sha256.json
    (slow for big ones). Raises ElmoConfigError (a ValueError) for a mirror variable
    that is not an http(s) URL."""
    from ..package_data import MODELS_DIR
    from .resolve import available

    out = [_row(n, "packaged", str(MODELS_DIR / n), verify) for n in available()]
    for name in catalog.names():
        out.append(_row(name, "catalog", cache.model_dir(name) if cache.state(name) != "absent" else None, verify))
    for name in cache.downloaded():
        if catalog.get(name) is None:
            out.append(_row(name, "downloaded", cache.model_dir(name), verify))
    return out


def format_rows(table: List[Dict[str, object]]) -> str:
    """The :func:`rows` as a text table (:data:`COLUMNS`; wasabi), then the cache folder."""
    from wasabi import table as wasabi_table

    data = [tuple(str(r[c]) for c in COLUMNS) for r in table]
    lines = wasabi_table(data, header=COLUMNS, divider=True).strip("\n").splitlines()
    text = "\n".join(line.rstrip() for line in lines)
    here = sum(r["status"] != "not downloaded" for r in table)
    return (f"{text}\n{len(table)} models, {here} here; --json adds URLs, sha256 and shapes.\n"
            f"cache: {cache.cache_dir()} (set ${cache.CACHE_ENV} to move it)")
