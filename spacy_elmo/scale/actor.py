"""The callable class that ``ray.data`` ``map_batches`` runs in each actor of the pool.

Each actor loads the biLM once (:func:`spacy_elmo.hub.load_bilm`, so the model name or directory must
resolve on every node: packaged models always do), sets torch's threads to its ``num_cpus``
(CPU actors) or moves the biLM to CUDA (``num_gpus`` > 0; Ray sets CUDA_VISIBLE_DEVICES), and
then, per block, runs ``BiLM.embed_sentences`` (the same call as the ``embed`` command), picks
the layers (:func:`spacy_elmo.embed.layers.select`) and writes one shard (:mod:`.shards`).
It returns one manifest row per shard, never the vectors, so the driver stays light.

Two row schemas (``mode``):
  "groups": one row per block, {"first", "last", "texts": [str], "tokens": [[str]]}: the groups
      that the ``embed`` command cuts (``embed --ray``), so shards equal its parts;
  "rows": one row per line, the whole batch is one block: ``index`` (int >= 0, unique), and a
      ``tokens`` column (list of str) or a ``text`` column tokenized in the actor.

Test hook: ``kill_marker`` (a path; ``embed_*`` pass $SPACY_ELMO_SCALE_TEST_KILL): the first
actor to start a block once some shard exists creates that file, leaves a torn ``*.tmp-PID``
shard and kills its own process (``os._exit``), as a crash mid-write would.
"""
import json
import os
from typing import Dict, List, Optional, Sequence

from ..embed import inputs, layers
from ..errors import ElmoDataError, ElmoTypeError
from . import shards

KILL_ENV = "SPACY_ELMO_SCALE_TEST_KILL"
COLUMNS = ("file", "first", "last", "ranges", "sentences", "tokens", "bytes")


class ShardEmbedder:
    """One per actor. ``args``: what decided the output (stored in each shard); ``columns``:
    (index, text, tokens or None) column names for mode "rows"; ``tokenizer``: "whitespace" or a
    spaCy language / pipeline, for a text column."""

    def __init__(self, model: str, layer_spec: str, dtype: str, output_dir: str, args: dict, batch_size: int = 64,
                 num_cpus: float = 1.0, num_gpus: float = 0.0, mode: str = "groups",
                 columns: Sequence[Optional[str]] = ("index", "text", None), tokenizer: str = "en",
                 kill_marker: Optional[str] = None):
        import torch

        from ..hub import load_bilm

        torch.set_num_threads(max(1, int(num_cpus)))
        self.bilm = load_bilm(model)
        if num_gpus:
            self.bilm.to("cuda")
        self.spec, self.dtype, self.batch_size = layers.parse(layer_spec), dtype, batch_size
        self.output_dir, self.args, self.mode, self.columns = output_dir, args, mode, tuple(columns)
        self.kill_marker = kill_marker
        self.tokenize = None
        if mode == "rows" and columns[2] is None:
            self.tokenize = inputs.make_tokenizer(tokenizer == "whitespace", tokenizer)

    def __call__(self, batch):
        """batch: a pyarrow Table of rows in ``mode``'s schema -> a pyarrow Table of manifest
        rows (COLUMNS; ranges as JSON text). Raises ElmoTypeError (a TypeError) /
        ElmoDataError (a ValueError) for bad rows."""
        import pyarrow

        rows = batch.to_pylist()
        if self.mode == "groups":
            entries = [self._block(list(range(r["first"], r["last"] + 1)), r["texts"], r["tokens"]) for r in rows]
        else:
            entries = [self._block(*self._lines(rows))] if rows else []
        return pyarrow.table({c: [json.dumps(e[c]) if c == "ranges" else e[c] for e in entries] for c in COLUMNS})

    def _lines(self, rows: List[Dict]):
        index_col, text_col, tokens_col = self.columns
        indices, texts, tokens = [], [], []
        for row in rows:
            index = row.get(index_col)
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise ElmoDataError(f"column {index_col!r}: expected an int >= 0 (the line index), got {index!r}")
            text = row.get(text_col) if text_col else None
            if tokens_col:
                toks = row.get(tokens_col)
                if not isinstance(toks, list) or not all(isinstance(t, str) for t in toks):
                    raise ElmoTypeError(f"line {index}: column {tokens_col!r} must be a list of str, got "
                                        f"{toks!r:.60}")
                text = " ".join(toks) if text is None else text
            elif not isinstance(text, str):
                raise ElmoTypeError(f"line {index}: column {text_col!r} must be a str, got {type(text).__name__}")
            text = text.strip()
            indices.append(index)
            texts.append(text)
            tokens.append(toks if tokens_col else (self.tokenize(text) if text else []))
        return indices, texts, tokens

    def _block(self, indices: List[int], texts: List[str], tokens: List[List[str]]) -> Dict:
        arrays = self.bilm.embed_sentences(tokens, batch_size=self.batch_size)
        items = [(i, t, layers.select(self.spec, a, self.dtype)) for i, t, a in zip(indices, texts, arrays)]
        del arrays
        self._maybe_die()
        return shards.write_shard(self.output_dir, items, self.args)

    def _maybe_die(self) -> None:
        if not self.kill_marker or not shards.shard_files(self.output_dir):
            return
        try:
            fd = os.open(self.kill_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        with open(os.path.join(self.output_dir, f"shard-torn.hdf5.tmp-{os.getpid()}"), "wb") as f:
            f.write(b"\x89HDF torn")
        os._exit(1)
