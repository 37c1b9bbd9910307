"""``python -m spacy_elmo convert SRC OUT --format elmoformanylangs``: the command's body (the
typer app is assembled in :mod:`spacy_elmo.__main__`), and the ``download`` side of
ELMoForManyLangs zips."""
from pathlib import Path
from typing import Optional, Tuple

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
    from . import FORMATS, convert
    from .efml import ElmoConvertError

    if fmt not in FORMATS:
        raise ElmoConvertError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    directory = convert(str(src), str(out), config=str(config) if config else None, force=force)
    typer.echo(f"wrote {directory} (sha256 recorded). Use it as name = \"{directory}\" in an elmo component's "
               f"[components.elmo.model], --model {directory}, or BiLM.from_pretrained(\"{directory}\").")


def handles_download(source, fmt: Optional[str]) -> bool:
    """Whether ``download SOURCE`` is an ELMoForManyLangs download: ``--format elmoformanylangs``,
    or one registered ``efml-<lang>`` name."""
    from . import efml_registry

    return fmt is not None or (len(source) == 1 and efml_registry.url(source[0]) is not None)


def download(source, name: Optional[str], fmt: Optional[str], sha256, force: bool, progress: bool,
             retries: int) -> Tuple[str, str]:
    """``download`` of an ELMoForManyLangs zip: ``download efml-de`` or ``download URL --format
    elmoformanylangs --name NAME`` (``--sha256 HEX`` pins the zip). Returns (name, cache folder).
    Raises ElmoDownloadArgumentError (a ValueError) for bad arguments, ElmoDownloadError as
    :func:`.download.download_efml`."""
    from ..hub.fetch import ElmoDownloadArgumentError
    from . import FORMATS
    from .download import download_efml

    if fmt is not None and fmt not in FORMATS:
        raise ElmoDownloadArgumentError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if len(source) != 1 or (name is None) == source[0].startswith(("http://", "https://")):
        raise ElmoDownloadArgumentError("give one registered efml-<lang> NAME, or ZIP_URL --format elmoformanylangs "
                                        "--name NAME")
    pins = list(sha256 or [])
    if len(pins) > 1:
        raise ElmoDownloadArgumentError("--sha256: give one digest (the zip's)")
    model = name or source[0]
    return model, download_efml(model, source[0] if name else None, sha256=pins[0] if pins else None,
                                force=force, progress=progress, retries=retries)
