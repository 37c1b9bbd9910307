"""Annotated corpora -> raw text for continued pretraining (one sentence per line).

    python dev/domain_corpus.py OUTPUT.txt INPUT [INPUT ...]

`pretrain` and `perplexity` read raw text and tokenise it with spaCy's English tokenizer, so
each INPUT becomes plain sentences:

- CoNLL-U (`.conllu`, e.g. UD English-EWT): the sentence's own `# text = ...` line, the original
  untokenised text (a sentence without one: its word forms joined by spaces, multiword-token
  ranges and empty nodes skipped);
- CoNLL (anything else, e.g. WNUT-17's `token TAB tag` lines, or CoNLL-2003's `token POS chunk
  NER`): the first column of each sentence joined by single spaces (the text is already
  tokenised; spaCy's tokenizer splits it again, which leaves such tokens as they are in nearly
  every case). Blank (or whitespace-only) lines end a sentence; `-DOCSTART-` lines are dropped.

Prints one JSON line per input and one for the output: sentences and whitespace-separated words.
Use TRAINING splits for the pretraining text and a dev split for held-out perplexity; never a test
split. The output is data, not code: write it outside the repository or under a git-ignored folder.
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Iterator, List


def conllu_sentences(path: Path) -> Iterator[str]:
    """Each sentence of a CoNLL-U file: its ``# text =`` comment, else its word forms joined by spaces."""
    text, forms = None, []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if text or forms:
                yield text if text else " ".join(forms)
            text, forms = None, []
        elif line.startswith("# text ="):
            text = line.split("=", 1)[1].strip()
        elif not line.startswith("#"):
            cols = line.split("\t")
            if len(cols) < 2 or not cols[0].isdigit():  # "1-2" multiword ranges, "3.1" empty nodes
                continue
            forms.append(cols[1])


def conll_sentences(path: Path) -> Iterator[str]:
    """Each sentence of a column file (token first, blank lines between sentences): tokens joined by spaces."""
    tokens: List[str] = []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                yield " ".join(tokens)
            tokens = []
        else:
            tokens.append(fields[0])


def sentences(path: Path) -> Iterator[str]:
    """The sentences of one file, read as CoNLL-U for a ``.conllu`` name, else as a CoNLL column file."""
    return conllu_sentences(path) if path.suffix == ".conllu" else conll_sentences(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="text file to write, one sentence per line")
    parser.add_argument("inputs", type=Path, nargs="+", help=".conllu or CoNLL column files")
    args = parser.parse_args(argv)
    for path in args.inputs:
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    args.output.parent.mkdir(parents=True, exist_ok=True)
    total = {"file": str(args.output), "sentences": 0, "words": 0}
    with args.output.open("w", encoding="utf-8") as out:
        for path in args.inputs:
            counts = {"file": str(path), "sentences": 0, "words": 0}
            for sentence in sentences(path):
                out.write(sentence + "\n")
                counts["sentences"] += 1
                counts["words"] += len(sentence.split())
            print(json.dumps(counts))
            total["sentences"] += counts["sentences"]
            total["words"] += counts["words"]
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
