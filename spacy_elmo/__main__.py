"""Command line: ``python -m spacy_elmo {pretrain,init-config,perplexity} ...``."""
import json
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(name="spacy_elmo", help="spacy-elmo: ELMo biLMs for spaCy", no_args_is_help=True, add_completion=False)


@app.command("init-config")
def init_config_cli(output: Optional[Path] = typer.Argument(None, help="File to write (default: stdout)")):
    """Print (or write) the default pretraining config."""
    from .pretrain.config import default_config_text

    text = default_config_text()
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        typer.echo(f"error: cannot write {output}: {err.strerror or err}", err=True)
        raise typer.Exit(2)


@app.command(
    "pretrain",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def pretrain_cli(
    ctx: typer.Context,
    output_dir: Path = typer.Argument(..., help="Output directory (config.cfg, corpus cache, checkpoint.pt, model/)"),
    config_path: Optional[Path] = typer.Option(None, "--config", "-c", help="Config file (default: the packaged default; see init-config)"),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUTPUT/checkpoint.pt"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
):
    """Pretrain a biLM on raw text. Extra options override the config, e.g. --training.max_steps 1000."""
    from spacy.cli._util import parse_config_overrides

    from .pretrain.corpus import CorpusError
    from .pretrain.train import pretrain

    try:
        overrides = parse_config_overrides(ctx.args)
    except Exception as err:  # noqa: BLE001 - click's NoSuchOption and the like: one line, exit 2
        typer.echo(f"error: {err} Config overrides are --section.key VALUE (e.g. --training.max_steps 1000).", err=True)
        raise typer.Exit(2)
    try:
        pretrain(str(output_dir), str(config_path) if config_path else None, overrides, resume=resume,
                 progress=not quiet, command=["python", "-m", "spacy_elmo"] + sys.argv[1:])
    except (CorpusError, FileNotFoundError, FileExistsError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    except KeyboardInterrupt:
        raise typer.Exit(130)


@app.command("perplexity")
def perplexity_cli(
    model: str = typer.Argument(..., help="Model directory (from pretrain) or packaged model name"),
    text_file: Path = typer.Argument(..., help="Text file, one sentence per line (plain or .gz)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object"),
):
    """Forward, backward and mean perplexity of MODEL on TEXT_FILE."""
    from .pretrain.corpus import CorpusError
    from .pretrain.perplexity import perplexity

    try:
        result = perplexity(model, str(text_file))
    except (CorpusError, FileNotFoundError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(
            f"perplexity {result['perplexity']:.2f} (forward {result['forward']:.2f}, "
            f"backward {result['backward']:.2f}) on {result['tokens']:,} tokens"
        )


def main():
    app()


if __name__ == "__main__":
    main()
