"""Post-process a converted DocBin: one sentence per doc, UPOS as the tag, a seeded subset.

    python scripts/prepare_corpus.py IN.spacy OUT.spacy [--sentences] [--upos-as-tag] [--limit N] [--seed 0]

--sentences     split every doc into one doc per sentence (annotations kept): the biLM was
                trained on sentences, and the subsets below then count sentences.

--upos-as-tag   copy each token's UPOS (`token.pos_`, from `spacy convert -c conllu`) into
                `token.tag_`, so spaCy's `tagger` learns and scores (`tag_acc`) universal POS.
                (`spacy convert` puts the XPOS, the Penn tag, into `tag_`.)
--limit N       keep N documents drawn at random (seeded, original order kept): the demo's
                subsets of the real data. 0 keeps all.
"""
import argparse
import random
from pathlib import Path

from spacy.tokens import DocBin
from spacy.vocab import Vocab


def prepare(
    input_path: Path,
    output_path: Path,
    upos_as_tag: bool = False,
    limit: int = 0,
    seed: int = 0,
    sentences: bool = False,
):
    """Write the prepared DocBin; returns (number of docs, number of tokens)."""
    vocab = Vocab()
    docs = list(DocBin().from_disk(input_path).get_docs(vocab))
    if sentences:
        docs = [sent.as_doc() for doc in docs for sent in (doc.sents if len(doc) else [])]
    if limit and limit < len(docs):
        keep = sorted(random.Random(seed).sample(range(len(docs)), limit))
        docs = [docs[i] for i in keep]
    out = DocBin(store_user_data=False)
    n_tokens = 0
    for doc in docs:
        if upos_as_tag:
            if len(doc) and not doc.has_annotation("POS"):
                raise ValueError(f"{input_path}: a document has no UPOS annotation: {doc.text[:80]!r}")
            for token in doc:
                token.tag_ = token.pos_
        n_tokens += len(doc)
        out.add(doc)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    out.to_disk(output_path)
    return len(docs), n_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input_path", type=Path)
    parser.add_argument("output_path", type=Path)
    parser.add_argument("--sentences", action="store_true")
    parser.add_argument("--upos-as-tag", action="store_true")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n_docs, n_tokens = prepare(
        args.input_path, args.output_path, args.upos_as_tag, args.limit, args.seed, args.sentences
    )
    print(f"{n_docs} docs, {n_tokens} tokens -> {args.output_path}")


if __name__ == "__main__":
    main()
