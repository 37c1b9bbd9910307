"""Token indexers: how a model turns a token string into the id row its token encoder reads.

The indexer belongs to the model (``BiLM.indexer``, built from the options by :func:`make_indexer`);
everything that feeds a biLM (:mod:`.batching`, so ``embed_sentences``, the spaCy layer and its
cache, ``embed``) asks it for ids and never assumes a scheme. Two schemes:

- :class:`ByteIndexer` (bilm-tf / AllenNLP, options without ``vocab``): the token's UTF-8 bytes,
  exactly as :mod:`.chars` builds them (rows of 50 ids).
- :class:`VocabularyIndexer` (``vocab.indexer = "elmoformanylangs"``, the scheme of
  ELMoForManyLangs, Che et al. 2018, ``elmoformanylangs/frontend.py`` ``create_one_batch``): a
  learned character vocabulary over Unicode code points, and optionally a word vocabulary.

Every row is int64 and uses 0 for "no token" only (a padding row of a batch is all zeros), so the
char embedding has one zero row 0 and the vocabulary's ids are shifted by +1.
"""
from typing import Dict, Optional, Sequence, Union

import numpy

from ..errors import ElmoModelFileError, ElmoTypeError
from . import chars as byte_chars

SPECIALS = ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>")
CACHE_SIZE = 1 << 14  # rows kept per indexer (as chars.TOKEN_CACHE_SIZE)


def _check_str(token) -> None:
    if not isinstance(token, str):
        raise ElmoTypeError(f"ELMo tokens must be str, got {type(token).__name__}: {token!r}")


class ByteIndexer:
    """bilm-tf's byte ids (see :mod:`.chars`): rows of ``width`` = 50 ids, padding id 261."""

    kind = "bytes"
    width = byte_chars.MAX_CHARS
    max_chars = byte_chars.MAX_CHARS
    pad_id = byte_chars.PAD_ID

    def ids(self, tokens: Sequence[str]) -> numpy.ndarray:
        """(len(tokens), 50) int64; raises TypeError for a token that is not a str."""
        return byte_chars.tokens_to_char_array(tokens)

    def boundary_ids(self) -> numpy.ndarray:
        """(2, 50) int64: the rows of ``<S>`` and ``</S>``."""
        return numpy.stack([byte_chars.BOS_IDS, byte_chars.EOS_IDS])


class VocabularyIndexer:
    """ELMoForManyLangs' ids, shifted by +1.

    chars: character (or special string) -> id, as read from ``char.dic``; words: word -> id from
    ``word.dic``, or None for a model without a word embedding; max_chars: the model's
    ``max_characters_per_token`` M. Both vocabularies must hold every string of :data:`SPECIALS`
    (``words`` needs ``<oov>`` only; ``<bos>``/``<eos>`` missing there read as ``<oov>``).

    A token is cut to its first M - 2 code points. Its row: position 0 the id of ``<eow>``, then
    one id per code point (``<oov>``'s for characters outside the vocabulary), then the id of
    ``<bow>``, then ``<pad>`` up to M positions. (ELMoForManyLangs swaps the two word-boundary
    ids, in training and at inference alike; this is what its models saw.) A token that is
    exactly ``<bos>`` or ``<eos>`` (after the cut) reads as the sentence boundary: [``<eow>``,
    ``<bos>``, ``<bow>``, ``<pad>``, ...]. With words, one more column holds the word's id
    (``<oov>``'s when absent; looked up after the cut). ``width`` = M (+ 1 with words). The
    sentence boundaries are the tokens ``<bos>`` and ``<eos>``.
    """

    kind = "elmoformanylangs"

    def __init__(self, chars: Dict[str, int], words: Optional[Dict[str, int]], max_chars: int) -> None:
        missing = [s for s in SPECIALS if s not in chars]
        if missing:
            raise ElmoModelFileError(f"the character vocabulary lacks {', '.join(missing)}")
        if words is not None and "<oov>" not in words:
            raise ElmoModelFileError("the word vocabulary lacks <oov>")
        self.chars, self.words, self.max_chars = dict(chars), None if words is None else dict(words), int(max_chars)
        self.width = self.max_chars + (0 if words is None else 1)
        self.pad_id = chars["<pad>"] + 1
        self._begin, self._end, self._oov = chars["<eow>"] + 1, chars["<bow>"] + 1, chars["<oov>"] + 1
        self._word_oov = None if words is None else words["<oov>"] + 1
        self._cache: Dict[str, numpy.ndarray] = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    def _row(self, token: str) -> numpy.ndarray:
        _check_str(token)
        row = self._cache.get(token)
        if row is not None:
            return row
        cut = token[: self.max_chars - 2] if len(token) + 2 > self.max_chars else token
        row = self._spell(cut)
        if len(self._cache) >= CACHE_SIZE:
            self._cache.clear()
        self._cache[token] = row
        return row

    def _spell(self, cut: str) -> numpy.ndarray:
        """The row of a token already cut to M - 2 code points (``<bos>``/``<eos>``: the boundary)."""
        row = numpy.full(self.width, self.pad_id, dtype=numpy.int64)
        if cut in ("<bos>", "<eos>"):
            inner = [self.chars[cut] + 1]
        else:
            inner = [self.chars.get(c, self._oov - 1) + 1 for c in cut]
        row[0], row[len(inner) + 1] = self._begin, self._end
        row[1: len(inner) + 1] = inner
        if self.words is not None:
            row[-1] = self.words.get(cut, self._word_oov - 1) + 1
        return row

    def ids(self, tokens: Sequence[str]) -> numpy.ndarray:
        """(len(tokens), width) int64; raises TypeError for a token that is not a str."""
        out = numpy.zeros((len(tokens), self.width), dtype=numpy.int64)
        for i, token in enumerate(tokens):
            out[i] = self._row(token)
        return out

    def boundary_ids(self) -> numpy.ndarray:
        """(2, width) int64: the rows of the sentence boundaries ``<bos>`` and ``<eos>`` (never
        cut, even for M < 7, as the reference adds them after cutting the tokens)."""
        return numpy.stack([self._spell("<bos>"), self._spell("<eos>")])


def make_indexer(options: dict) -> Union[ByteIndexer, VocabularyIndexer]:
    """The indexer of checked options (see :mod:`.options`): :class:`ByteIndexer` without a
    ``vocab`` section, else a :class:`VocabularyIndexer` of ``vocab.chars`` / ``vocab.words``."""
    vocab = options.get("vocab")
    if not vocab:
        return ByteIndexer()
    return VocabularyIndexer(vocab["chars"], vocab.get("words"), options["char_cnn"]["max_characters_per_token"])
