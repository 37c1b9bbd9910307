"""``python -m spacy_elmo download | models``: the commands' bodies (the typer app is assembled in
:mod:`spacy_elmo.__main__`)."""
import json
from typing import List, Optional, Tuple

import typer


def download_cli(
    source: List[str] = typer.Argument(..., help="A model name of the catalog (see `models`: elmo-* and "
                                                 "efml-<lang>), or URL_OF_OPTIONS URL_OF_WEIGHTS with --name, or a "
                                                 "zip URL with --format elmoformanylangs --name"),
    name: Optional[str] = typer.Option(None, "--name", help="Cache name for a model given by its URLs"),
    sha256: Optional[List[str]] = typer.Option(None, "--sha256", help="Pin a digest: HEX (weights.hdf5, or the "
                                               "zip), weights=HEX or options=HEX; repeatable"),
    force: bool = typer.Option(False, "--force", help="Download again even if already complete"),
    retries: int = typer.Option(3, "--retries", min=0, max=100,
                                help="Retries of a lost connection per file (each resumes)"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
    fmt: Optional[str] = typer.Option(None, "--format", help="elmoformanylangs: SOURCE is a zip to convert"),
):
    """Download an ELMo model into the per-user cache, then use it by name (cache: $SPACY_ELMO_CACHE)."""
    try:
        model, directory = download_source(source, name, fmt, sha256, force, not quiet, retries)
    except KeyboardInterrupt:
        typer.echo("interrupted: run the same command again to resume", err=True)
        raise typer.Exit(130)
    typer.echo(f"{model}: ready in {directory} (sha256 recorded, checked on every load). Use it as "
               f"name = \"{model}\" in an elmo component's [components.elmo.model], --model {model}, or "
               f"BiLM.from_pretrained(\"{model}\").")


def download_source(source: List[str], name: Optional[str], fmt: Optional[str], sha256: Optional[List[str]],
                    force: bool, progress: bool, retries: int) -> Tuple[str, str]:
    """The ``download`` arguments -> (model name, cache folder): one catalog name; two URLs and
    ``--name``; or one zip URL, ``--format elmoformanylangs`` and ``--name``. Raises
    ElmoConfigError (a ValueError) for arguments that do not fit together,
    ElmoDownloadError as the download does."""
    from ..errors import ElmoConfigError
    from . import catalog
    from .download import download_model, parse_pins

    entry = catalog.get(source[0]) if len(source) == 1 and name is None else None
    if fmt is not None or (entry is not None and entry.format == catalog.EFML):
        return _efml(source, name, fmt, sha256, force, progress, retries)
    if len(source) == 1 and name is None:
        model, urls = source[0], None
    elif len(source) == 2 and name:
        model, urls = name, {"options.json": source[0], "weights.hdf5": source[1]}
    else:
        raise ElmoConfigError("give one NAME of the catalog (python -m spacy_elmo models), or "
                              "URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME")
    return model, download_model(model, urls, sha256=parse_pins(sha256), force=force, progress=progress,
                                 retries=retries)


def _efml(source, name: Optional[str], fmt: Optional[str], sha256, force: bool, progress: bool,
          retries: int) -> Tuple[str, str]:
    """``download efml-de`` or ``download URL --format elmoformanylangs --name NAME`` (``--sha256
    HEX`` pins the zip)."""
    from ..errors import ElmoConfigError
    from . import catalog
    from .efml_download import download_efml

    if fmt is not None and fmt != catalog.EFML:
        raise ElmoConfigError(f"--format {fmt!r}: expected {catalog.EFML} (the bilm-tf layout needs no "
                              "--format: give URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME)")
    if len(source) != 1 or (name is None) == source[0].startswith(("http://", "https://")):
        raise ElmoConfigError("give one efml-<lang> NAME of the catalog (python -m spacy_elmo models), or "
                              "ZIP_URL --format elmoformanylangs --name NAME")
    pins = list(sha256 or [])
    if len(pins) > 1:
        raise ElmoConfigError("--sha256: give one digest (the zip's)")
    model = name or source[0]
    return model, download_efml(model, source[0] if name else None, sha256=pins[0] if pins else None,
                                force=force, progress=progress, retries=retries)


def models_cli(
    verify: bool = typer.Option(False, "--verify", help="Re-hash every present file against its sha256.json"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list (URLs, sha256 and shapes too)"),
):
    """List every model: packaged, the catalog's (each name `download` takes) and other downloaded
    ones, with format, language, size, licence, status and the command to run."""
    from .listing import format_rows, rows

    table = rows(verify=verify)
    typer.echo(json.dumps(table, indent=2, ensure_ascii=False) if as_json else format_rows(table))
