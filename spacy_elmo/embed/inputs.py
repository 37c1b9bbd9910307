"""Read the sentences to embed: plain text (one per line, ``.gz`` too), JSONL with a text field,
or a spaCy ``.spacy`` DocBin. Each input line (or Doc) is one record, in order, empty ones
included, so record ``i`` becomes HDF5 dataset ``"i"``.

Tokens: plain text and JSONL go through a spaCy tokenizer (``spacy.blank(lang)``, or the tokenizer
of a pipeline given by name or path) with whitespace tokens dropped, or are split on whitespace
(``pretokenized``); a JSONL text field may also be a list of tokens. A DocBin keeps its Docs'
tokens (whitespace tokens dropped), one record per Doc. Text and JSONL are read as
``utf-8-sig``: a UTF-8 byte order mark at the start of the file is dropped, not made part of the
first token.

A record of more than ``max_tokens`` tokens (default :data:`MAX_TOKENS_PER_LINE`, ``embed
--max-tokens-per-line``) is refused with an ElmoDataError (a ValueError) naming the file and line: the biLM's
memory grows with the length of a sentence (a 10 MB line of 1.2M words would need tens of GB).
A line is counted in whitespace-separated words before it is tokenised, so a huge line is
refused without making a Python object per token.
"""
import itertools
import json
import os
import re
from typing import Callable, Iterator, List, NamedTuple, Optional

from ..errors import ElmoConfigError, ElmoDataError
from ..text_files import text_lines

FORMATS = ("text", "jsonl", "spacy")
MAX_TOKENS_PER_LINE = 100_000
_WORD = re.compile(r"\S+")


class Record(NamedTuple):
    """index: 0-based line (or Doc) number; text: the stripped line (the sentence_to_index key);
    tokens: what the biLM reads."""

    index: int
    text: str
    tokens: List[str]


def detect_format(path: str, fmt: Optional[str] = None) -> str:
    """``fmt`` if given (one of FORMATS), else from the name: ``.spacy`` -> spacy, ``.jsonl`` /
    ``.ndjson`` (optionally ``.gz``) -> jsonl, anything else -> text. Raises ElmoConfigError (a
    ValueError)."""
    if fmt:
        if fmt not in FORMATS:
            raise ElmoConfigError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        return fmt
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(".spacy"):
        return "spacy"
    return "jsonl" if name.endswith((".jsonl", ".ndjson")) else "text"


def _lines(path: str) -> Iterator[str]:
    """Lines (only ``\\n`` ends one) without their end of line. Raises FileNotFoundError, or
    ElmoDataError (a ValueError) naming the file and line for non-UTF-8 bytes
    (:func:`spacy_elmo.text_files.text_lines`)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"input file not found: {path!r}")
    for line in text_lines(path, newline="\n"):
        yield line.rstrip("\r\n")


def count(path: str, fmt: str) -> int:
    """Number of records (lines, or Docs of a DocBin)."""
    if fmt == "spacy":
        return len(_docbin(path))
    return sum(1 for _ in _lines(path))


def make_tokenizer(pretokenized: bool, lang: str = "en") -> Callable[[str], List[str]]:
    """text -> tokens: whitespace split if ``pretokenized``, else the spaCy tokenizer of
    ``lang`` (a language code, or an installed pipeline's name or directory), whitespace tokens
    dropped. Raises ElmoConfigError (a ValueError) for an unknown language."""
    if pretokenized:
        return str.split
    import spacy

    try:
        nlp = spacy.load(lang) if os.path.isdir(lang) or spacy.util.is_package(lang) else spacy.blank(lang)
    except (ImportError, OSError, KeyError) as err:
        raise ElmoConfigError(f"--lang {lang!r}: not a spaCy language code or pipeline ({err})") from None
    tokenizer = nlp.tokenizer
    return lambda text: [t.text for t in tokenizer(text) if not t.is_space]


def read(path: str, fmt: str, tokenize: Callable[[str], List[str]], text_field: str = "text",
         lang: str = "en", max_tokens: int = MAX_TOKENS_PER_LINE) -> Iterator[Record]:
    """Records of the input, in order. Raises ElmoDataError (a ValueError) naming the file and line for a JSONL
    line that is not an object with a str (or list of str) ``text_field``, or a record of more
    than ``max_tokens`` tokens."""
    if fmt == "spacy":
        for record in _read_docbin(path, lang):
            yield _checked(path, record.index, record.tokens, max_tokens, record)
        return
    for i, line in enumerate(_lines(path)):
        if fmt == "jsonl":
            yield _jsonl_record(path, i, line, text_field, tokenize, max_tokens)
        else:
            text = line.strip()
            yield _record(path, i, text, tokenize, max_tokens)


def _too_long(path: str, i: int, n: str, max_tokens: int) -> ElmoDataError:
    return ElmoDataError(f"{path} line {i + 1}: {n} tokens, above the limit of {max_tokens:,} per line (the biLM's "
                         "memory grows with a sentence's length): split the line, or raise --max-tokens-per-line")


def _record(path: str, i: int, text: str, tokenize, max_tokens: int) -> Record:
    """The record of one text: its whitespace-separated words are counted first (up to the
    limit) when the text is longer than ``max_tokens`` characters, then the tokens."""
    if len(text) > max_tokens:
        words = sum(1 for _ in itertools.islice(_WORD.finditer(text), max_tokens + 1))
        if words > max_tokens:
            raise _too_long(path, i, f"more than {max_tokens:,}", max_tokens)
    tokens = tokenize(text) if text else []
    return _checked(path, i, tokens, max_tokens, Record(i, text, tokens))


def _checked(path: str, i: int, tokens: List[str], max_tokens: int, record: Record) -> Record:
    if len(tokens) > max_tokens:
        raise _too_long(path, i, f"{len(tokens):,}", max_tokens)
    return record


def _jsonl_record(path: str, i: int, line: str, field: str, tokenize, max_tokens: int) -> Record:
    if not line.strip():
        return Record(i, "", [])
    try:
        obj = json.loads(line)
    except ValueError as err:
        raise ElmoDataError(f"{path} line {i + 1}: not JSON ({err})") from None
    value = obj.get(field) if isinstance(obj, dict) else None
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return _checked(path, i, value, max_tokens, Record(i, " ".join(value), list(value)))
    if not isinstance(value, str):
        raise ElmoDataError(f"{path} line {i + 1}: expected a JSON object with a string (or list of "
                            f"strings) field {field!r} (set --text-field)")
    return _record(path, i, value.strip(), tokenize, max_tokens)


def _docbin(path: str):
    from spacy.tokens import DocBin

    if not os.path.isfile(path):
        raise FileNotFoundError(f"input file not found: {path!r}")
    try:
        return DocBin().from_disk(path)
    except Exception as err:  # noqa: BLE001 - srsly/zlib/msgpack errors: one line naming the file
        raise ElmoDataError(f"{path}: not a spaCy DocBin ({type(err).__name__}: {err})") from None


def _read_docbin(path: str, lang: str) -> Iterator[Record]:
    import spacy

    vocab = spacy.blank(lang if not os.path.isdir(lang) else "xx").vocab
    for i, doc in enumerate(_docbin(path).get_docs(vocab)):
        yield Record(i, doc.text.strip(), [t.text for t in doc if not t.is_space])
