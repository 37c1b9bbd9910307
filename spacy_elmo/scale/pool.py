"""The Ray side of a run: the actor pool over a dataset (``map_batches``), its size, the
errors it raises, and the filter that skips lines already in complete shards."""
import json
import os
import re
from typing import Dict, List

from ..errors import ElmoDataError
from .actor import KILL_ENV, ShardEmbedder


def ray_modules():
    """``(ray, ray.data)``. Raises ImportError with the install command when Ray is missing."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ImportError("Ray is not installed: pip install 'spacy-elmo[scale]' (ray[data])") from None
    return ray, ray.data


def pool_size(actors, num_cpus, num_gpus, n_blocks: int) -> int:
    """``actors`` if given, else as many as the cluster's GPUs (``num_gpus`` > 0) or CPUs fit;
    never more than ``n_blocks``, at least 1."""
    if actors:
        return min(actors, n_blocks)
    ray, _ = ray_modules()
    res = ray.cluster_resources()
    fit = res.get("GPU", 0) / num_gpus if num_gpus else res.get("CPU", 1) / num_cpus
    return max(1, min(int(fit), n_blocks))


def actor_kwargs(p, output, batch_size, num_cpus, num_gpus, mode, tokenizer) -> Dict:
    """ShardEmbedder's constructor arguments for the embed Plan ``p`` (the test hook from
    $SPACY_ELMO_SCALE_TEST_KILL)."""
    return {"model": p.model, "layer_spec": p.spec.name, "dtype": p.args["dtype"],
            "output_dir": os.path.abspath(output), "args": p.args, "batch_size": batch_size, "num_cpus": num_cpus,
            "num_gpus": num_gpus, "mode": mode, "tokenizer": tokenizer, "kill_marker": os.environ.get(KILL_ENV)}


def execute(ds, kwargs, batch_size, actors, num_cpus, num_gpus, progress) -> List[Dict]:
    """Run a pool of ``actors`` :class:`ShardEmbedder` actors over ``ds`` in batches of
    ``batch_size`` rows; returns the new shards' manifest entries. Raises ElmoDataError naming the
    first error raised in an actor."""
    _, ray_data = ray_modules()
    size = actors or pool_size(None, num_cpus, num_gpus, 1 << 30)
    out = ds.map_batches(ShardEmbedder, batch_size=batch_size, batch_format="pyarrow",
                         compute=ray_data.ActorPoolStrategy(size=size), num_cpus=num_cpus,
                         num_gpus=num_gpus or None, fn_constructor_kwargs=kwargs)
    ctx = out.context  # the dataset's own copy of the DataContext
    bars, ctx.enable_progress_bars = ctx.enable_progress_bars, progress
    try:
        rows = out.take_all()
    except Exception as err:  # noqa: BLE001 - Ray wraps the actor's error: one line naming the cause
        raise ElmoDataError(f"a block failed: {_root_cause(err)}") from None
    finally:
        ctx.enable_progress_bars = bars
    return [dict(r, ranges=json.loads(r["ranges"])) for r in rows]


_RAISED = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$", re.M)
_RAY_ERRORS = ("UserCodeException", "RayTaskError", "RayActorError", "RaySystemError")


def _root_cause(err: BaseException) -> str:
    """"Type: message" of the first error that is not Ray's own in the chain of ``err`` (Ray
    keeps an actor's exception only as traceback text), else of ``err``."""
    texts, seen, e = [], set(), err
    while isinstance(e, BaseException) and id(e) not in seen:
        seen.add(id(e))
        texts.append(str(e))
        e = getattr(e, "cause", None) or e.__cause__
    for name, message in _RAISED.findall("\n".join(texts)):
        if not name.startswith("ray.") and not name.startswith(_RAY_ERRORS):
            return f"{name.rsplit('.', 1)[-1]}: {message.strip()}"
    lines = texts[0].strip().splitlines()
    return f"{type(err).__name__}: {lines[-1] if lines else ''}"


class Skip:
    """Batch filter (pyarrow Table -> Table): keeps the rows whose line index no complete shard
    holds. ``runs``: sorted inclusive [a, b] index runs of the shards to keep."""

    def __init__(self, runs: List[List[int]], column: str):
        import numpy

        self.starts = numpy.array([r[0] for r in runs], dtype=numpy.int64)
        self.ends = numpy.array([r[1] for r in runs], dtype=numpy.int64)
        self.column = column

    def __call__(self, batch):
        import numpy
        import pyarrow

        index = batch[self.column].to_numpy(zero_copy_only=False).astype(numpy.int64)
        k = numpy.searchsorted(self.starts, index, side="right") - 1
        held = (k >= 0) & (index <= self.ends[numpy.maximum(k, 0)])
        return batch.filter(pyarrow.array(~held))
