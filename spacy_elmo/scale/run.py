"""Embedding on Ray Data: :func:`embed_dataset` (a ``ray.data.Dataset`` of lines) and
:func:`embed_file_ray` (``python -m spacy_elmo embed INPUT OUTPUT_DIR --ray [ADDRESS]``).

Both run ``map_batches`` over an actor pool of :class:`.actor.ShardEmbedder` (each actor loads
the biLM once; CPU actors use ``num_cpus`` torch threads, GPU actors ``num_gpus``), write one
HDF5 shard per block into OUTPUT_DIR and then ``manifest.json`` (:mod:`.manifest`). Ray
restarts a dead actor and retries its tasks (Ray Data's defaults for actor pools); a re-run
with the same arguments keeps the complete shards and embeds only the rest; a finished
OUTPUT_DIR with the same arguments is left as it is.
"""
import os
import time
from typing import Dict, List, Optional

from ..embed.inputs import MAX_TOKENS_PER_LINE
from ..embed.paths import check_not_input, lock_output
from ..embed.run import count_group, plan, plan_model, read_groups
from ..errors import ElmoConfigError, ElmoDataError
from . import manifest as _manifest, shards
from .pool import Skip, actor_kwargs, execute, pool_size, ray_modules


def connect(address: Optional[str] = None) -> bool:
    """Use the running Ray if ``ray.init`` was already called, else ``ray.init(address)``:
    None or "local" starts a local cluster (or joins $RAY_ADDRESS), "auto" joins the cluster of
    the local machine, "HOST:PORT" or "ray://HOST:PORT" a remote one. Returns True if it called
    ray.init (the caller shuts it down). Raises ImportError, ConnectionError."""
    ray, _ = ray_modules()
    if ray.is_initialized():
        return False
    if address in (None, "local") and not os.environ.get("RAY_ADDRESS"):
        ray.init(include_dashboard=False)
    else:
        ray.init(address=None if address == "local" else address)
    return True


def embed_dataset(ds, output: str, *, model: Optional[str] = None, layers: str = "all", dtype: str = "float32",
                  index_column: str = "index", text_column: str = "text", tokens_column: Optional[str] = None,
                  pretokenized: bool = False, lang: str = "en", batch_size: int = 64, rows_per_shard: int = 1024,
                  actors: Optional[int] = None, num_cpus: float = 1.0, num_gpus: float = 0.0,
                  overwrite: bool = False, progress: bool = True) -> Dict:
    """Embed the lines of ``ds`` (a ``ray.data.Dataset``, one row per line) into ``output``, a
    directory of shards plus manifest.json; returns the manifest (dict, see :mod:`.manifest`).

    Rows: ``index_column`` (int >= 0, unique: the line index, the dataset name in the shards) and
    ``tokens_column`` (list of str) or ``text_column`` (str, tokenized in the actors with
    ``spacy.blank(lang)`` or, if ``pretokenized``, on whitespace). Every ``rows_per_shard`` rows
    form one block and one shard. ``layers`` / ``dtype`` as for ``embed``; ``actors``: pool size
    (default: the cluster's CPUs / ``num_cpus``, or GPUs / ``num_gpus``). Needs a running Ray
    (``ray.init``). Raises ElmoConfigError (a ValueError) for a bad option or an output with
    other arguments (unless ``overwrite``), ElmoDataError (a ValueError) for a missing column or a
    failed block; FileNotFoundError for a missing model; ElmoLockError (a RuntimeError) while
    another run writes ``output``."""
    ray, _ = ray_modules()
    if not ray.is_initialized():
        raise ElmoConfigError("embed_dataset needs a running Ray: call ray.init() first")
    _check_pool(rows_per_shard, actors, num_cpus, num_gpus)
    tokenizer = "tokens column" if tokens_column else ("whitespace" if pretokenized else lang)
    p = plan_model(model, layers, dtype, batch_size, tokenizer=tokenizer)
    p.args.pop("group_tokens")
    p.args.update(source="ray.data.Dataset", index_column=index_column, text_column=text_column,
                  tokens_column=tokens_column)
    _check_columns(ds, index_column, text_column, tokens_column)
    with lock_output(output, make_folder=True):  # for the whole run: a second run into OUTPUT is refused
        done = _prepare(output, p.args, overwrite)
        if done is None:
            return _manifest.load(output)
        if done:
            ds = ds.map_batches(Skip(shards.covered(done), index_column), batch_format="pyarrow")
        kwargs = actor_kwargs(p, output, batch_size, num_cpus, num_gpus, "rows", tokenizer)
        kwargs["columns"] = (index_column, text_column, tokens_column)
        new = execute(ds, kwargs, rows_per_shard, actors, num_cpus, num_gpus, progress)
        return _finish(output, done + new, p, "ray.data.Dataset", None)


def embed_file_ray(input_path: str, output: str, *, address: Optional[str] = None, model: Optional[str] = None,
                   layer_spec: str = "all", dtype: str = "float32", pretokenized: bool = False, lang: str = "en",
                   fmt: Optional[str] = None, text_field: str = "text", batch_size: int = 64, group_mb: float = 64.0,
                   actors: Optional[int] = None, num_cpus: float = 1.0, num_gpus: float = 0.0,
                   overwrite: bool = False, progress: bool = True,
                   max_tokens_per_line: int = MAX_TOKENS_PER_LINE) -> Dict:
    """``embed`` on Ray: the records of ``input_path`` (read and tokenized here, as ``embed_file``
    does, then cut into the same groups) become one block each; actors embed them into shards
    of ``output`` (a directory). Per line, the arrays equal ``embed_file``'s. Returns
    {"sentences", "tokens", "embedded", "embedded_tokens" (this run), "shards", "seconds",
    "output", "manifest" (path), "actors", "already_complete"}. Connects with
    :func:`connect` (``address``) unless Ray is running, and shuts down a cluster it started.
    Raises ElmoConfigError (a ValueError) for bad options or an output with other arguments
    (unless ``overwrite``), ElmoDataError (a ValueError) for a failed block; FileNotFoundError,
    ImportError; ElmoLockError (a RuntimeError) while another run writes ``output`` (its lock file
    ``output.lock``, :func:`spacy_elmo.embed.paths.lock_output`)."""
    check_not_input(input_path, output)
    ray, ray_data = ray_modules()
    _check_pool(1, actors, num_cpus, num_gpus)
    p = plan(input_path, model, layer_spec, dtype, pretokenized, lang, fmt, text_field, batch_size, group_mb)
    summary = {"sentences": 0, "tokens": 0, "embedded": 0, "embedded_tokens": 0, "shards": 0, "seconds": 0.0,
               "output": output, "manifest": os.path.join(output, _manifest.NAME), "actors": 0,
               "already_complete": False}
    with lock_output(output, make_folder=True):  # for the whole run: a second run into OUTPUT is refused
        done = _prepare(output, p.args, overwrite)
        if done is None:
            return dict(summary, already_complete=True, **_counts(_manifest.load(output)))
        start = time.perf_counter()
        rows = _group_rows(read_groups(input_path, p, pretokenized, lang, text_field, max_tokens_per_line), done,
                           summary)
        new = []
        if rows:
            started = connect(address)
            try:
                summary["actors"] = pool_size(actors, num_cpus, num_gpus, len(rows))
                ds = ray_data.from_items(rows, override_num_blocks=len(rows))
                kwargs = actor_kwargs(p, output, batch_size, num_cpus, num_gpus, "groups", p.args["tokenizer"])
                new = execute(ds, kwargs, 1, summary["actors"], num_cpus, num_gpus, progress)
            finally:
                if started:
                    ray.shutdown()
        m = _finish(output, done + new, p, os.path.abspath(input_path), summary["sentences"])
        summary.update(embedded_tokens=sum(e["tokens"] for e in new), shards=len(m["shards"]),
                       seconds=time.perf_counter() - start)
    return summary


def _check_pool(rows_per_shard, actors, num_cpus, num_gpus) -> None:
    if rows_per_shard < 1:
        raise ElmoConfigError(f"rows_per_shard must be >= 1, got {rows_per_shard}")
    if actors is not None and actors < 1:
        raise ElmoConfigError(f"--actors must be >= 1, got {actors}")
    if not num_cpus > 0 or num_gpus < 0:
        raise ElmoConfigError(f"--cpus-per-actor must be > 0 and --gpus-per-actor >= 0, got {num_cpus} / {num_gpus}")


def _check_columns(ds, index_column, text_column, tokens_column) -> None:
    names = list(ds.schema().names)
    need = [index_column, tokens_column or text_column]
    missing = [c for c in need if c not in names]
    if missing:
        raise ElmoDataError(f"the dataset has no column {missing[0]!r} (columns: {', '.join(names)}): rows need "
                            f"{index_column!r} (line index) and {tokens_column or text_column!r}")


def _prepare(output: str, args: dict, overwrite: bool):
    """Make ``output`` ready. Returns None if it is complete with the same ``args``, else the
    entries of the shards to keep. Raises ElmoConfigError for a file, or other arguments."""
    if os.path.isfile(output):
        raise ElmoConfigError(f"{output} is a file: with Ray the output is a directory (shards + manifest.json)")
    path = os.path.join(output, _manifest.NAME)
    if os.path.isfile(path) and _complete(output, args):
        return None
    done, other, damaged = shards.complete_shards(output, args)
    if (other or os.path.isfile(path)) and not overwrite:
        raise ElmoConfigError(f"{output} holds a run with other arguments: pass --overwrite or choose another "
                              "directory")
    os.makedirs(output, exist_ok=True)
    for name in other + damaged + ([_manifest.NAME] if os.path.isfile(path) else []):
        os.remove(os.path.join(output, name))
    shards.remove_temporaries(output)
    return done


def _complete(output: str, args: dict) -> bool:
    """Whether output's manifest was written with ``args`` and all its shards are there."""
    try:
        m = _manifest.load(output)
    except ValueError:
        return False
    return m["args"] == args and all(os.path.isfile(os.path.join(output, e["file"])) for e in m["shards"])


def _group_rows(groups, done: List[Dict], summary: Dict) -> List[Dict]:
    """Rows of mode "groups" for the groups without a complete shard; counts every group."""
    have = {(e["first"], e["last"]) for e in done}
    rows = []
    for group in groups:
        first, last, _ = count_group(group, summary)
        if (first, last) not in have:
            rows.append({"first": first, "last": last, "texts": [r.text for r in group],
                         "tokens": [r.tokens for r in group]})
            summary["embedded"] += len(group)
    return rows


def _finish(output: str, entries: List[Dict], p, source: str, expected: Optional[int]) -> Dict:
    try:
        m = _manifest.build(entries, p.args, p.model, p.spec.name, p.args["dtype"], p.lstm["n_layers"],
                            2 * p.lstm["projection_dim"], source, expected)
    except ValueError as err:
        raise ElmoDataError(str(err)) from None
    _manifest.write(output, m)
    shards.remove_temporaries(output)
    return m


def _counts(m: Dict) -> Dict:
    return {"sentences": m["sentences"], "tokens": m["tokens"], "shards": len(m["shards"])}

