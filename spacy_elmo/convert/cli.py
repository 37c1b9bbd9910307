"""``python -m spacy_elmo convert SRC OUT --format elmoformanylangs``: the command's body (the
typer app is assembled in :mod:`spacy_elmo.__main__`)."""
from pathlib import Path
from typing import Optional

import typer


def convert_cli(
    src: Path = typer.Argument(..., help="Source model directory (ELMoForManyLangs: config.json, char.dic, "
                                         "word.dic, token_embedder.pkl, encoder.pkl)"),
    out: Path = typer.Argument(..., help="Model directory to write (options.json, weights.hdf5, sha256.json)"),
    fmt: str = typer.Option("elmoformanylangs", "--format", help="Source format: elmoformanylangs"),
    config: Optional[Path] = typer.Option(None, "--config", help="Model config file (default: the one SRC's "
                                          "config.json names, found in SRC or among the standard configs)"),
    force: bool = typer.Option(False, "--force", help="Replace a model already in OUT"),
):
    """Convert a model of another ELMo format into a spacy-elmo model directory (then use OUT by path)."""
    from ..errors import ElmoModelFileError
    from . import FORMATS, convert

    if fmt not in FORMATS:
        raise ElmoModelFileError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    directory = convert(str(src), str(out), config=str(config) if config else None, force=force)
    typer.echo(f"wrote {directory} (sha256 recorded). Use it as name = \"{directory}\" in an elmo component's "
               f"[components.elmo.model], --model {directory}, or BiLM.from_pretrained(\"{directory}\").")
