"""What ``python -m spacy_elmo models`` lists: packaged, registered and downloaded models, with
shape, size and status. No torch or spaCy import (options are read as JSON)."""
import os
from typing import Dict, List, Optional

from ..bilm.files import CONFIG_BYTES, read_json
from . import cache, registry


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
    from ..bilm import ElmoWeightsError, integrity

    try:
        for file in cache.FILES:
            integrity.verify(os.path.join(directory, file))
    except ElmoWeightsError as err:
        return str(err)
    return None


def _row(name: str, kind: str, directory: Optional[str], verify: bool) -> Dict[str, str]:
    entry = registry.get(name)
    status = cache.state(name) if kind != "packaged" else "downloaded"
    row = {"name": name, "kind": kind, "shape": entry.shape if entry else "?", "path": directory or "",
           "size": f"~{entry.size_mb} MB" if entry else "-", "status": status}
    if status == "absent":
        row["status"] = f"not downloaded: {cache.download_command(name)}"
        return row
    parts = {f: os.path.join(directory, f + ".part") for f in cache.FILES}
    if status == "partial":
        have = sum(os.path.getsize(p) for p in parts.values() if os.path.isfile(p))
        row.update(size=_mb(have), status=f"partial: resume with {cache.download_command(name)}")
        return row
    row.update(shape=shape_of(os.path.join(directory, "options.json")),
               size=_mb(sum(cache.sizes(directory).values())), status="ready")
    recorded = (cache.read_source(name) or {}).get("sizes") if kind != "packaged" else None
    if recorded and recorded != cache.sizes(directory):
        row["status"] = "CHANGED: sizes differ from the download (use --force to download again)"
    if verify:
        problem = _verified(directory)
        row["status"] = f"CORRUPT: {problem}" if problem else row["status"] + " (sha256 ok)"
    return row


def rows(verify: bool = False) -> List[Dict[str, str]]:
    """One dict per model: name, kind (packaged / registered / downloaded), shape, size, status,
    path. ``verify`` re-hashes every present file against its sha256.json (slow for big ones)."""
    from ..package_data import MODELS_DIR
    from .resolve import available

    out = [_row(n, "packaged", str(MODELS_DIR / n), verify) for n in available()]
    for name in registry.names():
        out.append(_row(name, "registered", cache.model_dir(name) if cache.state(name) != "absent" else None, verify))
    for name in cache.downloaded():
        if registry.get(name) is None:
            out.append(_row(name, "downloaded", cache.model_dir(name), verify))
    return out


def format_rows(table: List[Dict[str, str]]) -> str:
    """Plain-text table of :func:`rows` (name, kind, shape, size, status), then the cache folder."""
    cols = ("name", "kind", "shape", "size", "status")
    widths = {c: max(len(c), *(len(r[c]) for r in table)) for c in cols[:-1]}
    lines = ["  ".join(c.ljust(widths.get(c, 0)) for c in cols).rstrip()]
    lines += ["  ".join(r[c].ljust(widths.get(c, 0)) for c in cols).rstrip() for r in table]
    return "\n".join(lines + [f"cache: {cache.cache_dir()} (set ${cache.CACHE_ENV} to move it)"])
