"""Convert WNUT-17 (one `token<TAB>BIO-tag` per line) to a spaCy DocBin, one Doc per sentence.

    python scripts/wnut17_to_spacy.py assets/wnut17/train.conll corpus/wnut17/train.spacy

`spacy convert -c ner` does not fit this file: sentences are separated by lines that are empty
*or hold a single tab*, and tokens are split on tabs only (a token may contain other whitespace).
"""
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

from spacy.tokens import Doc, DocBin
from spacy.training import biluo_tags_to_spans, iob_to_biluo
from spacy.vocab import Vocab


def read_sentences(path: Path) -> Iterator[List[Tuple[str, str]]]:
    """Yield sentences as lists of (token, tag); checks the tags are O, B-X or I-X."""
    sentence: List[Tuple[str, str]] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                if sentence:
                    yield sentence
                sentence = []
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0]:
                raise ValueError(f"{path}:{n}: expected 'token<TAB>tag', got {line!r}")
            token, tag = parts[0], parts[1].strip()
            if tag != "O" and not (tag[:2] in ("B-", "I-") and len(tag) > 2):
                raise ValueError(f"{path}:{n}: bad tag {tag!r} (expected O, B-TYPE or I-TYPE)")
            sentence.append((token, tag))
    if sentence:
        yield sentence


def sentence_to_doc(vocab: Vocab, sentence: List[Tuple[str, str]]) -> Doc:
    words = [token for token, _ in sentence]
    spaces = [True] * (len(words) - 1) + [False]
    doc = Doc(vocab, words=words, spaces=spaces, sent_starts=[True] + [False] * (len(words) - 1))
    doc.ents = biluo_tags_to_spans(doc, iob_to_biluo([tag for _, tag in sentence]))
    return doc


def convert(input_path: Path, output_path: Path) -> int:
    vocab = Vocab()
    docbin = DocBin(store_user_data=False)
    for sentence in read_sentences(input_path):
        docbin.add(sentence_to_doc(vocab, sentence))
    output_path.parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(output_path)
    return len(docbin)


def main(input_path: str, output_path: str) -> None:
    n = convert(Path(input_path), Path(output_path))
    print(f"{n} sentences -> {output_path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
