"""UD English-EWT (CoNLL-U) for the probes: words and UPOS tags per sentence, seeded subsets."""
import os
from typing import List, Optional, Tuple

import numpy

from ..errors import ElmoDataError
from ..text_files import text_lines

Sentence = Tuple[List[str], List[str]]  # (words, UPOS tags)


def read_conllu(path) -> List[Sentence]:
    """[(words, upos)] of a CoNLL-U file: syntactic words only (multiword-token lines "3-4" and
    empty nodes "8.1" are skipped), in file order. Raises FileNotFoundError naming the file,
    ElmoDataError (a ValueError) ``path:line: ...`` for a word line with fewer than 4 columns."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"CoNLL-U file not found: {path}")
    sentences: List[Sentence] = []
    words: List[str] = []
    tags: List[str] = []
    for n, line in enumerate(text_lines(path), 1):
        line = line.rstrip("\n")
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 4:
            raise ElmoDataError(f"{path}:{n}: expected a CoNLL-U word line (10 tab-separated columns)")
        if cols[0].isdigit():
            words.append(cols[1])
            tags.append(cols[3])
    if words:
        sentences.append((words, tags))
    return sentences


def read_words(path, limit: Optional[int] = None) -> List[List[str]]:
    """The first ``limit`` sentences (all when None or 0) of a CoNLL-U file, each the list of its
    syntactic words; see :func:`read_conllu`."""
    sentences = read_conllu(path)
    return [words for words, _ in (sentences[:limit] if limit else sentences)]


def subset(items: list, limit: Optional[int], seed: int) -> list:
    """A seeded random subset of ``limit`` items in their original order (all of them when
    ``limit`` is None, 0 or at least ``len(items)``)."""
    if not limit or limit >= len(items):
        return list(items)
    keep = numpy.random.default_rng(seed).choice(len(items), size=limit, replace=False)
    return [items[i] for i in sorted(keep)]
