"""sha256 digests that prove a model's files are intact (HDF5 itself has no checksum).

A model directory may hold ``sha256.json``: ``{"options.json": "<hex>", "weights.hdf5": "<hex>"}``.
:func:`record` writes it (``BiLM.save``, the pretraining export and the packaged models do);
:func:`verify` checks a file against it on load. A file whose directory has no digest for it (for
example hand-downloaded official files) loads as before, with a debug log line. Cost: one extra
sequential read, about 1 GB/s (0.3 s for the 374 MB original-size weights; see
benchmarks/README.md).
"""
import hashlib
import json
import logging
import os
from typing import Iterable, Optional, Union

from ..errors import ElmoModelFileError
from .files import CONFIG_BYTES, read_json

DIGESTS = "sha256.json"
logger = logging.getLogger("spacy_elmo")


def sha256(path: str, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in 4 MB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def record(directory: str, names: Iterable[str] = ("options.json", "weights.hdf5")) -> dict:
    """Write directory/sha256.json with the digests of the named files (kept: digests of other
    files already recorded there). Returns the digests."""
    path = os.path.join(directory, DIGESTS)
    digests = _read(path) or {}
    digests.update({name: sha256(os.path.join(directory, name)) for name in names})
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(digests, f, indent=2, sort_keys=True)
    os.replace(tmp, path)
    return digests


def _read(path: str) -> Optional[dict]:
    """The digests of ``path`` (a sha256.json), None if there is none; ElmoModelFileError if it is
    not a regular file of at most :data:`.files.CONFIG_BYTES` holding a JSON object."""
    if not os.path.exists(path):
        return None
    try:
        data = read_json(path, CONFIG_BYTES, "digest file")
    except (OSError, ValueError) as err:
        raise ElmoModelFileError(f"{path}: unreadable digest file ({err})", path=path) from None
    if not isinstance(data, dict):
        raise ElmoModelFileError(f"{path}: expected a JSON object of file name -> sha256", path=path)
    return data


def verify(path: Union[str, os.PathLike], shown: Optional[str] = None) -> bool:
    """Check a file against the sha256.json beside it. Returns True if a digest was recorded and
    matches, False if none is recorded. Raises ElmoModelFileError naming the file (``shown``, e.g.
    the configured value, else the path) when the digest differs: the file is never used then."""
    path = os.fspath(path)
    digests = _read(os.path.join(os.path.dirname(path) or ".", DIGESTS))
    want = (digests or {}).get(os.path.basename(path))
    if not want:
        logger.debug("no recorded sha256 for %s; loading it unchecked", path)
        return False
    got = sha256(path)
    if got != want:
        raise ElmoModelFileError(
            f"{shown or path}: sha256 {got[:16]}... differs from the one recorded in {DIGESTS} ({want[:16]}...): "
            "the file is corrupt or was changed; restore or re-export it", path=path)
    return True



def parameters_digest(module) -> str:
    """The first 16 hex digits of a sha256 over a torch module's state (each entry's name, dtype,
    shape and bytes, in ``state_dict`` order): equal for two loads of the same weights, whatever
    files or bytes they came from, and different once a weight changes. Used to tell whether two
    vectors come from the same biLM. Cost: one pass over the parameters (about 1 GB/s)."""
    import torch

    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        t = tensor.detach().cpu().contiguous().reshape(-1)
        h.update(f"{name}|{t.dtype}|{tuple(tensor.shape)}|".encode())
        if t.numel():
            h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]
