"""The corpus of ``static-vectors``, read as ``pretrain`` reads it and tokenised as ``embed``
tokenises: text files or globs, plain or ``.gz``, one sentence or paragraph a line
(:func:`spacy_elmo.pretrain.corpus.resolve_paths` and :func:`~spacy_elmo.pretrain.corpus.read_lines`:
a byte order mark dropped, empty lines skipped, ElmoDataError for a missing, binary or empty file),
tokens from spaCy's tokenizer with whitespace tokens dropped
(:func:`spacy_elmo.embed.inputs.make_tokenizer`).

A *record* is a non-empty line; records are numbered from 0 across the files in order (a
checkpoint's position). The first pass (:func:`count_words`) counts the tokens; the vocabulary
(:func:`build_vocab`) keeps the words of at least ``min_count`` occurrences, most frequent
first. A token holding a whitespace character (possible with non-breaking or other Unicode
spaces inside a token) never enters the vocabulary: the word2vec text format separates fields by
spaces.
"""
import hashlib
from collections import Counter
from typing import Callable, Iterator, List, NamedTuple, Sequence, Tuple

from ..embed.inputs import make_tokenizer
from ..errors import ElmoDataError
from ..pretrain.corpus import read_lines, resolve_paths

__all__ = ["Vocab", "build_vocab", "corpus_digest", "count_records", "count_words", "make_tokenizer",
           "records", "resolve_paths"]


def records(paths: Sequence[str], max_lines: int = 0, start: int = 0) -> Iterator[str]:
    """The records (stripped non-empty lines) of the files in order, from record ``start`` on;
    ``max_lines`` (> 0) reads only the first ``max_lines`` lines of each file (a slice)."""
    index = 0
    for path in paths:
        for _, line in read_lines(path, max_lines):
            if index >= start:
                yield line
            index += 1


def count_records(paths: Sequence[str], max_lines: int = 0) -> int:
    """Number of records (what the progress bars count)."""
    return sum(1 for _ in records(paths, max_lines))


def count_words(lines: Iterator[str], tokenize: Callable[[str], List[str]], progress=None) -> Tuple[Counter, int, int]:
    """The first pass: (token -> count, records, tokens). ``progress``: a tqdm bar to update per
    record (or None)."""
    counts: Counter = Counter()
    n_records = n_tokens = 0
    for line in lines:
        tokens = tokenize(line)
        counts.update(tokens)
        n_records += 1
        n_tokens += len(tokens)
        if progress is not None:
            progress.update(1)
    return counts, n_records, n_tokens


class Vocab(NamedTuple):
    """words: most frequent first (ties in order of first occurrence); counts: their corpus
    counts (ints, same order); types: distinct tokens in the corpus."""

    words: List[str]
    counts: List[int]
    types: int


def build_vocab(counts: Counter, min_count: int, max_words: int = 0) -> Vocab:
    """The words of at least ``min_count`` occurrences, at most ``max_words`` (0: all). Raises
    ElmoDataError (a ValueError) if there is none, naming the most frequent token."""
    if not counts:
        raise ElmoDataError("the corpus holds no tokens (every line is whitespace)")
    words, kept = [], []
    for word, n in counts.most_common():
        if n < min_count or (max_words and len(words) >= max_words):
            break
        if not any(c.isspace() for c in word):
            words.append(word)
            kept.append(n)
    if not words:
        top, n = counts.most_common(1)[0]
        raise ElmoDataError(f"no word reaches --min-count {min_count}: the most frequent token, {top!r}, "
                            f"occurs {n:,} times; lower --min-count or give a larger corpus")
    return Vocab(words, kept, len(counts))


def corpus_digest(paths: Sequence[str]) -> Tuple[str, List[dict]]:
    """(sha256 of the files' bytes one after the other, [{"path", "bytes", "sha256"} per file])."""
    whole, files = hashlib.sha256(), []
    for path in paths:
        h = hashlib.sha256()
        size = 0
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
                whole.update(block)
                size += len(block)
        files.append({"path": path, "bytes": size, "sha256": h.hexdigest()})
    return whole.hexdigest(), files
