"""``python -m spacy_elmo static-vectors MODEL CORPUS... OUTPUT_DIR``: the command's body (the
typer app is assembled in :mod:`spacy_elmo.__main__`)."""
import shlex
import sys
from pathlib import Path
from typing import List

import typer


def static_vectors_cli(
    model: str = typer.Argument(..., help="Model name (packaged or downloaded) or directory"),
    corpus: List[str] = typer.Argument(..., help="Text files or globs (plain or .gz, one sentence or paragraph a "
                                       "line)"),
    output: Path = typer.Argument(..., help="Folder to write: spacy/, vectors.txt.gz, card.json"),
    view: str = typer.Option("top", "--view", help="top | average | layer_k | mix:w0,w1,...[,gamma=G]"),
    min_count: int = typer.Option(5, "--min-count", min=1, help="Keep words of at least this many occurrences"),
    max_words: int = typer.Option(0, "--max-words", min=0, help="Keep at most this many words, most frequent "
                                  "first (0: all)"),
    max_contexts: int = typer.Option(100, "--max-contexts", min=0, help="Average at most this many contexts per "
                                     "word (0: every occurrence); sentences without a word short of them are "
                                     "skipped"),
    window_tokens: int = typer.Option(128, "--window-tokens", min=1, help="Cut longer lines into even pieces of "
                                      "at most this many tokens"),
    max_lines: int = typer.Option(0, "--max-lines", min=0, help="Read only the first lines of each file (0: all)"),
    lang: str = typer.Option("en", "--lang", help="spaCy language code (tokenizer, and the spacy/ pipeline)"),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sentences per biLM batch"),
    threads: str = typer.Option("auto", "--threads", help="torch threads: auto or a positive integer"),
    precision: str = typer.Option("float32", "--precision", help="The biLM's products: float32 (exact), bfloat16 "
                                  "or int8 (faster where the CPU supports them)"),
    centre: bool = typer.Option(False, "--centre", help="Subtract the table's mean vector"),
    remove_top_d: int = typer.Option(0, "--remove-top-d", min=0, help="Centre, then remove the top D principal "
                                     "directions (all-but-the-top, Mu & Viswanath 2018)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an OUTPUT_DIR this command wrote"),
    checkpoint_every: float = typer.Option(120.0, "--checkpoint-every", min=0, max=1e9,
                                           help="Seconds between saved states (resume after a kill)"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars"),
):
    """One static vector per word: the mean of the biLM's view over its contexts, as a spaCy
    vectors pipeline (OUTPUT_DIR/spacy), word2vec text (vectors.txt.gz) and card.json."""
    from .run import distil_vectors

    command = shlex.join(["python", "-m", "spacy_elmo", *sys.argv[1:]])
    try:
        card = distil_vectors(model, list(corpus), str(output), view=view, min_count=min_count,
                              max_words=max_words, max_contexts=max_contexts, window_tokens=window_tokens,
                              max_lines=max_lines, lang=lang, batch_size=batch_size, threads=threads,
                              precision=precision, centre=centre,
                              remove_top_d=remove_top_d, overwrite=overwrite, progress=not quiet,
                              checkpoint_every=checkpoint_every, command=command)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the state is kept in {output}.partial; run the same command to resume", err=True)
        raise typer.Exit(130)
    c = card["counts"]
    typer.echo(f"wrote {output}: {c['words']:,} words x {card['model']['dim']} ({card['vectors_name']}), "
               f"{c['contexts']:,} contexts; {c['sentences_used']:,} sentences through the biLM, "
               f"{c['sentences_skipped']:,} skipped, {c['records_not_read']:,} lines not read; "
               f"{card['tokens_per_second']:,.0f} corpus tokens/s")
