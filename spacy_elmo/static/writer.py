"""OUTPUT_DIR of ``static-vectors``, written whole or not at all.

- ``spacy/``: a pipeline directory as ``spacy init vectors`` writes it (``spacy.blank(lang)``
  whose ``vocab.vectors`` holds the table, ``nlp.to_disk``): ``spacy.load`` reads it, and a
  training config takes it as ``[initialize] vectors``. The table's name
  (``vocab.vectors.name``) is :func:`table_name`: it names the biLM's parameter digest and the
  view, which the contextual vectors' similarity guard reads (:mod:`spacy_elmo.pipeline.vector_hooks`).
  ``meta.json`` holds the card under ``"spacy_elmo_static"``.
- ``vectors.txt.gz``: the word2vec text format (a ``V dim`` header line, then ``word v1 ...
  vdim`` per line, 8 significant digits), which gensim's ``KeyedVectors.load_word2vec_format``
  and ``spacy init vectors`` read. Words in table order (most frequent first).
- ``card.json``: where the table comes from (model, view, corpus sha256, counts, command).

Everything is written into ``output.writing/`` inside the run's resumable folder
(``OUTPUT_DIR.partial/``, :mod:`.checkpoint`) and renamed to OUTPUT_DIR at the end, so an
OUTPUT_DIR that exists is complete, and a run killed while writing (``kill -9``) leaves nothing
but that one folder: the next run with the same arguments clears the torn copy and writes again
from the saved sums; a run with other arguments discards the whole folder. A replaced
OUTPUT_DIR is moved to ``output.replaced/`` there before the new one takes its name. Replacing
one (``--overwrite``) is allowed only for a folder this command wrote (it holds ``card.json``)
or an empty one, never for a folder holding an input.
"""
import gzip
import json
import os
import shutil
from typing import List, Sequence

import numpy

from ..errors import ElmoConfigError
from ..locks import folder_in_the_way
from ..pipeline.static_tables import TABLE_PREFIX, parse_table_name, table_name  # noqa: F401

CARD = "card.json"
def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(output: str, inputs: Sequence[str], overwrite: bool) -> None:
    """Before any work: raise ElmoConfigError if OUTPUT_DIR is or holds an input (a corpus
    file, the model folder), is not a folder or has a parent that is a file, exists without
    ``overwrite``, exists but was not written by this command (no card.json) and is not empty,
    or its parent folder is missing."""
    for path in inputs:
        if _inside(path, output):
            raise ElmoConfigError(f"OUTPUT_DIR {output!r} is or holds the input {path!r}: choose another folder")
    why = folder_in_the_way(output)
    if why is not None:
        raise ElmoConfigError(f"OUTPUT_DIR {output!r}{why}: give a folder to write (a new one, or one this command "
                              "wrote, with --overwrite)")
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        raise ElmoConfigError(f"OUTPUT_DIR {output!r}: folder {parent!r} does not exist")
    if not os.path.lexists(output):
        return
    if not overwrite:
        raise ElmoConfigError(f"OUTPUT_DIR {output!r} exists: pass --overwrite to replace it, or choose "
                              "another folder")
    if os.listdir(output) and not os.path.isfile(os.path.join(output, CARD)):
        raise ElmoConfigError(f"OUTPUT_DIR {output!r} exists and was not written by static-vectors (no {CARD}): "
                              "not replacing it; remove it yourself or choose another folder")


def write_output(output: str, words: List[str], table: numpy.ndarray, card: dict, lang: str, work_dir: str) -> None:
    """Write OUTPUT_DIR (see the module docstring) from ``words`` and their float32 (V, dim)
    ``table``, by way of ``work_dir`` (the run's ``OUTPUT_DIR.partial/``, on the same file
    system as OUTPUT_DIR); an existing OUTPUT_DIR (checked by :func:`check_output`) is replaced
    only once the new one is complete."""
    tmp = os.path.join(work_dir, "output.writing")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        write_spacy(os.path.join(tmp, "spacy"), words, table, card, lang)
        write_word2vec(os.path.join(tmp, "vectors.txt.gz"), words, table)
        with open(os.path.join(tmp, CARD), "w", encoding="utf-8") as f:
            json.dump(card, f, indent=2, sort_keys=True)
            f.write("\n")
        _replace(tmp, output, os.path.join(work_dir, "output.replaced"))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace(tmp: str, output: str, old: str) -> None:
    shutil.rmtree(old, ignore_errors=True)
    if os.path.isdir(output):
        os.replace(output, old)
    os.replace(tmp, output)
    shutil.rmtree(old, ignore_errors=True)


def write_spacy(path: str, words: List[str], table: numpy.ndarray, card: dict, lang: str) -> None:
    """The pipeline directory (``spacy.blank(lang)`` + the vectors), as ``spacy init vectors``."""
    import spacy
    from spacy.vectors import Vectors

    nlp = spacy.blank(lang)
    for word in words:
        nlp.vocab[word]  # a lexeme per word, as spacy init vectors makes
    nlp.vocab.vectors = Vectors(strings=nlp.vocab.strings, data=numpy.ascontiguousarray(table, dtype="float32"),
                                keys=words, name=card["vectors_name"])
    nlp.meta["name"] = "elmo_static_vectors"
    nlp.meta["vectors"]["name"] = card["vectors_name"]
    nlp.meta["spacy_elmo_static"] = card
    nlp.to_disk(path)


def write_word2vec(path: str, words: List[str], table: numpy.ndarray) -> None:
    """The word2vec text format, gzip-compressed (8 significant digits per value)."""
    rows, dim = table.shape
    line = " ".join(["%.8g"] * dim) + "\n"
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=4, newline="\n") as f:
        f.write(f"{rows} {dim}\n")
        for word, vector in zip(words, table.astype(numpy.float64)):
            f.write(word + " " + line % tuple(vector))
