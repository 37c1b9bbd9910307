"""Raw text -> token ids for biLM pretraining.

Text is tokenised with spaCy's English tokenizer (``spacy.blank("en")``), the tokenizer the
pipeline uses at inference. Whitespace-only tokens are dropped. Each distinct token string is a
*type* (type 0 = ``<S>``, type 1 = ``</S>``); the corpus is kept as one int32 array of type ids plus
sentence offsets, so 26M words fit in ~100 MB.
"""
import glob
import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Sequence, Tuple

import numpy

from ..bilm.chars import BOS_IDS, EOS_IDS, tokens_to_char_array
from ..errors import ElmoConfigError, ElmoDataError, ElmoModelFileError
from ..text_files import text_lines

BOS, EOS, UNK = "<S>", "</S>", "<UNK>"


def resolve_paths(patterns: Sequence[str]) -> List[str]:
    """Expand globs; raises ElmoDataError naming the pattern if nothing matches or a file is missing."""
    if isinstance(patterns, str):
        patterns = [patterns]
    paths: List[str] = []
    for pattern in patterns:
        pattern = os.path.expanduser(str(pattern))
        found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not found:
            raise ElmoDataError(f"No file matches the corpus pattern {pattern!r}")
        for path in found:
            if os.path.isdir(path):
                raise ElmoDataError(f"{path} is a directory; give a text file (one sentence per line, plain or .gz) "
                                    f"or a glob such as {os.path.join(path, '*.txt')!r}")
            if not os.path.isfile(path):
                raise ElmoDataError(f"Corpus file not found: {path}")
            paths.append(path)
    return paths


def read_lines(path: str, max_lines: int = 0) -> Iterator[Tuple[int, str]]:
    """(line number, stripped line) of a UTF-8 text file (a byte order mark at its start dropped);
    empty lines skipped.

    Raises ElmoDataError for a binary file (NUL bytes), one that is not UTF-8 (naming the line and
    the fix: :func:`spacy_elmo.text_files.text_lines`), one that cannot be read to its end (a
    corrupt .gz) or one without any text.
    """
    n_text = 0
    for i, line in enumerate(text_lines(path)):
        if max_lines and i >= max_lines:
            break
        if "\x00" in line:
            raise ElmoDataError(f"{path} looks binary (NUL byte on line {i + 1}); expected UTF-8 text")
        line = line.strip()
        if line:
            n_text += 1
            yield i, line
    if n_text == 0:
        raise ElmoDataError(f"{path} contains no text")


@dataclass
class Split:
    """Sentences as int32 type ids: sentence i is ``tokens[offsets[i]:offsets[i + 1]]``."""

    tokens: numpy.ndarray
    offsets: numpy.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])


def split_even(items: Sequence, max_len: int) -> List[Sequence]:
    """``items`` cut into the fewest pieces of at most ``max_len`` (>= 1): pieces of
    ceil(n / pieces) items, the last one shorter if need be (120 items at max_len 50 -> 40, 40,
    40; 101 -> 34, 34, 33). Empty -> []."""
    n = len(items)
    if n == 0:
        return []
    pieces = -(-n // max_len)
    size = -(-n // pieces)
    return [items[start : start + size] for start in range(0, n, size)]


class _Builder:
    def __init__(self):
        self.tokens: List[numpy.ndarray] = []
        self.lengths: List[int] = []

    def add(self, ids: List[int], max_len: int) -> None:
        for chunk in split_even(ids, max_len):
            self.tokens.append(numpy.asarray(chunk, dtype=numpy.int32))
            self.lengths.append(len(chunk))

    def build(self) -> Split:
        tokens = numpy.concatenate(self.tokens) if self.tokens else numpy.zeros(0, numpy.int32)
        offsets = numpy.zeros(len(self.lengths) + 1, dtype=numpy.int64)
        numpy.cumsum(self.lengths, out=offsets[1:])
        return Split(tokens, offsets)


def tokenize_corpus(
    paths: Sequence[str],
    *,
    block_lines: int,
    heldout_every: int,
    max_sentence_tokens: int,
    max_lines_per_file: int = 0,
    progress: bool = False,
) -> Tuple[List[str], Split, Split, Dict[str, dict]]:
    """Tokenise files into (types, train, heldout, file_stats).

    A line goes to held-out when ``(line_number // block_lines) % heldout_every == 0`` and
    ``heldout_every > 0``. file_stats maps each path to bytes, lines, tokens.
    """
    import spacy

    tokenizer = spacy.blank("en").tokenizer
    type_ids: Dict[str, int] = {BOS: 0, EOS: 1}
    train, heldout = _Builder(), _Builder()
    stats: Dict[str, dict] = {}
    for path in paths:
        numbered = list(read_lines(path, max_lines_per_file))
        texts = (line for _, line in numbered)
        n_tokens = 0
        docs = tokenizer.pipe(texts, batch_size=1000)
        if progress:
            from tqdm import tqdm

            docs = tqdm(docs, total=len(numbered), desc=f"tokenize {os.path.basename(path)}", unit="line")
        for (lineno, _), doc in zip(numbered, docs):
            ids = []
            for token in doc:
                if token.is_space:
                    continue
                text = token.text
                tid = type_ids.get(text)
                if tid is None:
                    tid = type_ids[text] = len(type_ids)
                ids.append(tid)
            n_tokens += len(ids)
            held = heldout_every > 0 and (lineno // block_lines) % heldout_every == 0
            (heldout if held else train).add(ids, max_sentence_tokens)
        stats[path] = {"bytes": os.path.getsize(path), "lines": len(numbered), "tokens": n_tokens}
    types = list(type_ids)
    return types, train.build(), heldout.build(), stats


def type_char_ids(types: Sequence[str]) -> numpy.ndarray:
    """(n_types, 50) int16 char ids of every type; rows 0/1 are <S>/</S>."""
    table = numpy.zeros((len(types), BOS_IDS.shape[0]), dtype=numpy.int16)
    table[0], table[1] = BOS_IDS, EOS_IDS
    chunk = 100_000
    for start in range(2, len(types), chunk):
        part = types[start : start + chunk]
        table[start : start + len(part)] = tokens_to_char_array(part)
    return table


def build_vocab(types: Sequence[str], train: Split, size: int, min_count: int) -> Tuple[List[str], numpy.ndarray]:
    """Softmax vocabulary by training frequency: [<S>, </S>, <UNK>, most frequent tokens...].

    Returns (words, type_to_word): type_to_word maps each type id to its word id (2 = <UNK>).
    """
    if size < 4:
        raise ElmoConfigError(f"[vocab] size = {size}: must be at least 4")
    counts = numpy.bincount(train.tokens, minlength=len(types))
    counts[:2] = 0
    order = numpy.argsort(-counts, kind="stable")
    order = order[counts[order] >= max(1, min_count)][: size - 3]
    words = [BOS, EOS, UNK] + [types[i] for i in order]
    return words, map_types_to_words(types, words)


def map_types_to_words(types: Sequence[str], words: Sequence[str]) -> numpy.ndarray:
    """(n_types,) int64 word id of each type in a softmax vocabulary ``words`` ([<S>, </S>, <UNK>,
    ...], as :func:`build_vocab` makes and ``vocab.txt`` stores): types 0/1 (<S>/</S>) map to
    words 0/1, other types to their entry of ``words`` after the first three, or to 2 (<UNK>).
    Raises ElmoModelFileError (a ValueError) if ``words`` does not start with <S>, </S>, <UNK>."""
    if list(words[:3]) != [BOS, EOS, UNK]:
        raise ElmoModelFileError(f"a softmax vocabulary starts with {BOS}, {EOS}, {UNK}; got {list(words[:3])}")
    word_ids = {w: i for i, w in enumerate(words) if i >= 3}  # a literal "<S>" in the text is a word
    type_to_word = numpy.array([word_ids.get(t, 2) for t in types], dtype=numpy.int64)
    type_to_word[:2] = 0, 1
    return type_to_word
