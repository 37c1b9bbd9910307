"""``python -m spacy_elmo download | models``: the commands' bodies (the typer app is assembled in
:mod:`spacy_elmo.__main__`)."""
import json
from typing import List, Optional

import typer


def download_cli(
    source: List[str] = typer.Argument(..., help="A registered model name (see `models`; efml-<lang> too), "
                                                 "or URL_OF_OPTIONS URL_OF_WEIGHTS with --name, or a zip "
                                                 "URL with --format elmoformanylangs --name"),
    name: Optional[str] = typer.Option(None, "--name", help="Cache name for a model given by its two URLs"),
    sha256: Optional[List[str]] = typer.Option(None, "--sha256", help="Pin a digest: HEX (weights.hdf5), "
                                               "weights=HEX or options=HEX; repeatable"),
    force: bool = typer.Option(False, "--force", help="Download again even if already complete"),
    retries: int = typer.Option(3, "--retries", min=0, max=100,
                                help="Retries of a lost connection per file (each resumes)"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
    fmt: Optional[str] = typer.Option(None, "--format", help="elmoformanylangs: SOURCE is a zip to convert"),
):
    """Download an ELMo model into the per-user cache, then use it by name (cache: $SPACY_ELMO_CACHE)."""
    from ..convert import cli as convert_cli
    from . import download_model, parse_pins
    from .fetch import ElmoDownloadArgumentError

    try:
        efml = convert_cli.handles_download(source, fmt)  # an ELMoForManyLangs zip, converted
        if efml:
            model, directory = convert_cli.download(source, name, fmt, sha256, force, not quiet, retries)
        elif len(source) == 1 and name is None:
            model, urls = source[0], None
        elif len(source) == 2 and name:
            model, urls = name, {"options.json": source[0], "weights.hdf5": source[1]}
        else:
            raise ElmoDownloadArgumentError("give one registered NAME, or URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME")
        if not efml:
            directory = download_model(model, urls, sha256=parse_pins(sha256), force=force, progress=not quiet,
                                       retries=retries)
    except KeyboardInterrupt:
        typer.echo("interrupted: run the same command again to resume", err=True)
        raise typer.Exit(130)
    typer.echo(f"{model}: ready in {directory} (sha256 recorded, checked on every load). Use it as "
               f"name = \"{model}\" in an elmo component's [components.elmo.model], --model {model}, or "
               f"BiLM.from_pretrained(\"{model}\").")


def models_cli(
    verify: bool = typer.Option(False, "--verify", help="Re-hash every present file against its sha256.json"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list"),
):
    """List packaged, registered and downloaded models with shape, size and status."""
    from .catalog import format_rows, rows

    table = rows(verify=verify)
    typer.echo(json.dumps(table, indent=2) if as_json else format_rows(table))
