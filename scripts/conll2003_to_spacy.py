"""Convert CoNLL-2003 (`token POS chunk NER` per line, IOB1) to a spaCy DocBin, one Doc per document.

    python scripts/conll2003_to_spacy.py assets/conll2003/train.iob corpus/converted/conll2003/train.spacy

This is `spacy convert -c ner` (spaCy's `conll_ner_to_docs`, same options, same output) with one
fix: spaCy takes only the exact line `-DOCSTART- -X- O O` as a document marker, and some published
copies write `-DOCSTART- -X- -X- O`; spaCy would read that line as a one-token sentence
"-DOCSTART-". Here every line whose first column is `-DOCSTART-` is rewritten to spaCy's form, set
off by empty lines, before conversion, so it always separates documents and is never a token.
Whitespace-only lines become empty lines (sentence breaks), and `\\r\\n` line ends are read too.
"""
import sys
from pathlib import Path
from typing import List, Tuple

from spacy.tokens import Doc, DocBin
from spacy.training.converters import conll_ner_to_docs

DOCSTART = "-DOCSTART-"
DOC_DELIMITER = "-DOCSTART- -X- O O"  # the only form spaCy's ner converter recognises


def normalize(text: str) -> str:
    """``text`` with each ``-DOCSTART-`` line (any other columns) as spaCy's marker between empty
    lines, whitespace-only lines emptied and a leading byte-order mark dropped."""
    lines: List[str] = []
    for line in text.lstrip("\ufeff").splitlines():
        parts = line.split()
        if not parts:
            lines.append("")
        elif parts[0] == DOCSTART:
            lines.extend(["", DOC_DELIMITER, ""])
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def text_to_docs(text: str, n_sents: int = 1) -> List[Doc]:
    """The Docs `spacy convert -c ner -n N` makes of ``text`` (N = ``n_sents``, its default 1;
    ignored when the text has document markers), after :func:`normalize`."""
    return list(conll_ner_to_docs(normalize(text), n_sents=n_sents, no_print=True))


def convert(input_path: Path, output_path: Path) -> Tuple[int, int, int]:
    """Write the DocBin (as `spacy convert` does: ``store_user_data=True``); returns
    (documents, sentences, tokens)."""
    docs = text_to_docs(Path(input_path).read_text(encoding="utf-8"))
    for doc in docs:  # cannot happen after normalize(); a marker must never become training text
        if any(token.text == DOCSTART for token in doc):
            raise ValueError(f"{input_path}: a {DOCSTART} token was left inside a sentence")
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(output_path)
    return len(docs), sum(len(list(doc.sents)) for doc in docs), sum(len(doc) for doc in docs)


def main(input_path: str, output_path: str) -> None:
    n_docs, n_sents, n_tokens = convert(Path(input_path), Path(output_path))
    print(f"{n_docs} docs, {n_sents} sentences, {n_tokens} tokens -> {output_path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
