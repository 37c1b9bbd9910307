"""Optional post-processing of a distilled table (off by default; measured in
``benchmarks/bench_static_vectors.py``, not assumed to help):

- centring: subtract the mean vector of the table (the unweighted mean over the words);
- all-but-the-top (Mu & Viswanath 2018, "All-but-the-top: simple and effective postprocessing
  for word representations", Algorithm 1): centre, then remove the projections on the top
  ``d`` principal directions of the centred table. ``d`` = 0 is centring alone.

Both act on float (V, dim) tables and return float32 (V, dim) with a summary (the share of the
centred table's variance each removed direction held).
"""
from typing import Tuple

import numpy

from ..errors import ElmoConfigError


def check(remove_top_d: int, dim: int) -> None:
    """Raise ElmoConfigError unless 0 <= remove_top_d < dim."""
    if isinstance(remove_top_d, bool) or not isinstance(remove_top_d, int) or not 0 <= remove_top_d < dim:
        raise ElmoConfigError(f"--remove-top-d {remove_top_d!r}: expected an integer from 0 to {dim - 1} "
                              f"(the vectors have {dim} dimensions)")


def apply(table: numpy.ndarray, centre: bool = False, remove_top_d: int = 0) -> Tuple[numpy.ndarray, dict]:
    """(table', {"centre", "remove_top_d", "mean_norm", "removed_variance"}) where table' is
    float32 (V, dim): the table itself without post-processing, centred with ``centre`` or
    ``remove_top_d`` > 0, minus its top ``remove_top_d`` principal components. ``mean_norm``:
    the L2 norm of the removed mean (None when not centred); ``removed_variance``: the share of
    the centred variance along each removed direction, largest first."""
    x = numpy.asarray(table, dtype=numpy.float64)
    summary = {"centre": bool(centre or remove_top_d), "remove_top_d": int(remove_top_d), "mean_norm": None,
               "removed_variance": []}
    if not summary["centre"]:
        return x.astype(numpy.float32), summary
    mean = x.mean(axis=0)
    x = x - mean
    summary["mean_norm"] = float(numpy.linalg.norm(mean))
    if remove_top_d:
        values, vectors = numpy.linalg.eigh(x.T @ x)  # ascending
        top = vectors[:, ::-1][:, :remove_top_d]
        x = x - (x @ top) @ top.T
        total = float(values.sum())
        summary["removed_variance"] = [float(v / total) if total else 0.0 for v in values[::-1][:remove_top_d]]
    return x.astype(numpy.float32), summary
