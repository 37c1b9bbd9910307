"""Character ids for ELMo, exactly as bilm-tf's ``UnicodeCharsVocabulary`` and AllenNLP's
``ELMoCharacterMapper`` build them.

A token is its UTF-8 bytes (``errors="ignore"``), cut to ``MAX_CHARS - 2`` = 48 bytes, wrapped in
begin-of-word (258) and end-of-word (259) and padded with 260 to ``MAX_CHARS`` = 50 positions.
The sentence boundary tokens ``<S>`` / ``</S>`` are [258, 256, 259, 260, ...] / [258, 257, 259, 260, ...].
Every id is then shifted by +1, so that 0 means "no token" (a padding row of a batch); the char
embedding matrix therefore has 262 rows, row 0 being all zeros.

Any Unicode text is accepted (emoji and CJK are just several bytes); a token longer than 48 bytes is
cut, never an error; an empty string gives [259, 260, 261, 261, ...] (BOW, EOW, padding).
"""
from functools import lru_cache
from typing import Sequence

import numpy
import torch

from ..errors import ElmoTypeError

MAX_CHARS = 50
BOS_CHAR = 256  # <begin sentence>
EOS_CHAR = 257  # <end sentence>
BOW_CHAR = 258  # <begin word>
EOW_CHAR = 259  # <end word>
PAD_CHAR = 260  # <padding>
N_CHARACTERS = 262  # 256 bytes + 4 specials + 1 padding shift + the "no token" id 0

# Ids after the +1 shift, as they reach the char embedding.
PAD_ID = PAD_CHAR + 1


def _make_boundary(char: int) -> numpy.ndarray:
    ids = numpy.full(MAX_CHARS, PAD_CHAR, dtype=numpy.int64)
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return ids + 1


BOS_IDS = _make_boundary(BOS_CHAR)
EOS_IDS = _make_boundary(EOS_CHAR)

# Char ids of recently seen tokens. Kept small: each entry costs ~270 bytes, and real text keeps
# bringing new tokens (121k distinct ones in 100k Wikinews docs), so a 2**18 cache grew by ~30 MB
# over such a stream. 16,384 entries (~4 MB, full within the first docs) keep the frequent words:
# building the ids of a 64-doc batch takes 2.1 ms instead of 1.6 ms (3.1 ms without cache).
TOKEN_CACHE_SIZE = 2 ** 14


@lru_cache(maxsize=TOKEN_CACHE_SIZE)
def _token_ids(token: str) -> bytes:
    ids = numpy.full(MAX_CHARS, PAD_CHAR + 1, dtype=numpy.int16)
    data = token.encode("utf-8", "ignore")[: MAX_CHARS - 2]
    ids[0] = BOW_CHAR + 1
    ids[1 : len(data) + 1] = numpy.frombuffer(data, dtype=numpy.uint8).astype(numpy.int16) + 1
    ids[len(data) + 1] = EOW_CHAR + 1
    return ids.tobytes()


def token_to_char_ids(token: str) -> numpy.ndarray:
    """The 50 shifted char ids of one token: int64 array of shape (50,)."""
    if not isinstance(token, str):
        raise ElmoTypeError(f"ELMo tokens must be str, got {type(token).__name__}: {token!r}")
    return numpy.frombuffer(_token_ids(token), dtype=numpy.int16).astype(numpy.int64)


def tokens_to_char_array(tokens: Sequence[str]) -> numpy.ndarray:
    """Char ids of a list of tokens: int64 array (len(tokens), 50)."""
    out = numpy.zeros((len(tokens), MAX_CHARS), dtype=numpy.int64)
    for i, token in enumerate(tokens):
        out[i] = token_to_char_ids(token)
    return out


def batch_to_ids(batch: Sequence[Sequence[str]]) -> torch.Tensor:
    """Char ids of a batch of tokenised sentences, without sentence boundary tokens.

    batch: a list of sentences, each a list of str tokens (an empty sentence is allowed).
    Returns a LongTensor of shape (len(batch), max_len, 50); rows past a sentence's length are 0
    ("no token"). max_len is 0 when every sentence is empty.
    Raises TypeError if a sentence is a bare string or a token is not a str.
    """
    if isinstance(batch, str):
        raise ElmoTypeError("batch_to_ids expects a list of tokenised sentences (lists of str), got a str")
    for sentence in batch:
        if isinstance(sentence, str):
            raise ElmoTypeError(
                "batch_to_ids expects each sentence as a list of str tokens, got a str: "
                f"{sentence[:40]!r}"
            )
    max_len = max((len(s) for s in batch), default=0)
    out = numpy.zeros((len(batch), max_len, MAX_CHARS), dtype=numpy.int64)
    for i, sentence in enumerate(batch):
        for j, token in enumerate(sentence):
            out[i, j] = token_to_char_ids(token)
    return torch.from_numpy(out)


def char_lengths(char_ids: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """Number of non-padding positions (BOW .. EOW) of each token: (...,) int64. ``pad_id``: the
    padding id of the model's indexer (bilm-tf's 261 by default).

    A "no token" row (all zeros) has length 0.
    """
    real = (char_ids != 0) & (char_ids != pad_id)
    return real.sum(-1)
