"""``python -m spacy_elmo embed INPUT OUTPUT_DIR --ray [ADDRESS]``: the CLI side of :mod:`.run`."""
from typing import List, Optional

from .errors import ScaleError

RAY_FLAG = "--ray"
LOCAL = "local"


def optional_value(argv: List[str], flag: str = RAY_FLAG, value: str = LOCAL) -> List[str]:
    """argv with ``value`` inserted after a bare ``flag`` (last, or followed by another
    option), so that ``--ray`` may be given with or without ADDRESS (typer options always take
    a value). ``--ray ADDRESS`` and ``--ray=ADDRESS`` are left as they are."""
    out = list(argv)
    for k in range(len(out) - 1, -1, -1):
        if out[k] == flag and (k + 1 == len(out) or out[k + 1].startswith("-")):
            out.insert(k + 1, value)
    return out


def check_ray_options(ray: Optional[str], actors: Optional[int], cpus: float, gpus: float) -> None:
    """Raise ScaleError (a ValueError) if a pool option is given without --ray."""
    if ray is None and (actors is not None or cpus != 1.0 or gpus != 0.0):
        raise ScaleError("--actors, --cpus-per-actor and --gpus-per-actor need --ray [ADDRESS]")


def run(input_path: str, output: str, ray: str, **kwargs) -> str:
    """Run :func:`spacy_elmo.scale.embed_file_ray`; returns the line to print. Raises as it does."""
    from .run import embed_file_ray

    s = embed_file_ray(input_path, output, address=None if ray == LOCAL else ray, **kwargs)
    if s["already_complete"]:
        return f"{output} is already complete (same arguments): nothing to do"
    rate = s["embedded"] / s["seconds"] if s["seconds"] else 0.0
    return (f"wrote {s['manifest']}: {s['sentences']:,} sentences, {s['tokens']:,} tokens in {s['shards']:,} shards "
            f"({s['embedded']:,} sentences embedded in this run by {s['actors']} actors, {rate:,.1f} lines/s)")
