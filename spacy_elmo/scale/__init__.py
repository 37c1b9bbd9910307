"""Corpus-scale embedding on Ray Data (optional extra: ``pip install 'spacy-elmo[scale]'``).

    import ray, spacy_elmo.scale as scale
    ray.init()
    ds = ray.data.from_items([{"index": i, "text": t} for i, t in enumerate(lines)])
    manifest = scale.embed_dataset(ds, "vectors/", model="en_elmo_small", layers="top")
    scale.read_line("vectors/", 3)          # line 3: (n, D) numpy

or ``python -m spacy_elmo embed INPUT OUTPUT_DIR --ray [ADDRESS]``. Modules: :mod:`.run`
(:func:`embed_dataset`, :func:`embed_file_ray`), :mod:`.actor` (the map_batches actor),
:mod:`.shards` (one HDF5 shard per block, the ``embed`` layout), :mod:`.manifest` and
:mod:`.reader` (:class:`ShardedVectors`, :func:`read_line`; no Ray needed). Ray itself is
imported only when a run starts.
"""
__all__ = ["ShardedVectors", "embed_dataset", "embed_file_ray", "read_line"]
_WHERE = {"ShardedVectors": "reader", "read_line": "reader", "embed_dataset": "run", "embed_file_ray": "run"}


def __getattr__(name):
    """Import the public names on first use (``python -m spacy_elmo`` imports :mod:`.cli` only)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
