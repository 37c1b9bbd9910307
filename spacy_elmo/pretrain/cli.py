"""``python -m spacy_elmo init-config | pretrain | perplexity``: the commands' bodies (the typer
app is assembled in :mod:`spacy_elmo.__main__`)."""
import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer

PRETRAIN_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}  # config overrides


def init_config_cli(output: Optional[Path] = typer.Argument(None, help="File to write (default: stdout)")):
    """Print (or write) the default pretraining config."""
    from .config import default_config_text

    text = default_config_text()
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as err:
        typer.echo(f"error: cannot write {output}: {err.strerror or err}", err=True)
        raise typer.Exit(2)


def pretrain_cli(
    ctx: typer.Context,
    output_dir: Path = typer.Argument(..., help="Output directory (config.cfg, corpus cache, checkpoint.pt, model/)"),
    config_path: Optional[Path] = typer.Option(None, "--config", "-c",
                                               help="Config file (default: the packaged default; see init-config)"),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUTPUT/checkpoint.pt"),
    from_stable: bool = typer.Option(False, "--from-stable", help="With --resume: continue the stable phase from "
                                     "OUTPUT/checkpoint-stable.pt (kept when the decay began) with a larger "
                                     "--training.max_steps"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
):
    """Pretrain a biLM on raw text. Extra options override the config, e.g. --training.max_steps 1000."""
    from .config import parse_command_line
    from .train import pretrain

    overrides = parse_command_line(str(output_dir), ctx.args)  # before anything is written
    try:
        with run_lock(output_dir):
            pretrain(str(output_dir), str(config_path) if config_path else None, overrides, resume=resume,
                     progress=not quiet, command=["python", "-m", "spacy_elmo"] + sys.argv[1:], from_stable=from_stable)
    except KeyboardInterrupt:
        raise typer.Exit(130)


def run_lock(output_dir: Path):
    """The exclusive lock of a run, ``OUTPUT_DIR/.lock`` (:mod:`spacy_elmo.locks`; OUTPUT_DIR is
    created for it, and removed again if the run leaves it empty). Under torchrun only rank 0
    takes it: the other ranks write nothing. Raises ElmoLockError while another run holds it,
    ElmoConfigError where OUTPUT_DIR is a file (:func:`.config.check_output_dir`)."""
    from contextlib import nullcontext

    from ..locks import hold
    from .config import check_output_dir

    check_output_dir(output_dir)
    if os.environ.get("RANK", "0") != "0":
        return nullcontext()
    return hold(output_dir / ".lock", f"OUTPUT_DIR {str(output_dir)!r}", "wait for that run to finish (or stop it), "
                "or choose another output directory", make_folder=True)


def perplexity_cli(
    model: str = typer.Argument(..., help="Model directory (from pretrain) or packaged model name"),
    text_file: Path = typer.Argument(..., help="Text file, one sentence per line (plain or .gz)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object"),
):
    """Forward, backward and mean perplexity of MODEL on TEXT_FILE."""
    from .perplexity import perplexity

    result = perplexity(model, str(text_file))
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(
            f"perplexity {result['perplexity']:.2f} (forward {result['forward']:.2f}, "
            f"backward {result['backward']:.2f}) on {result['tokens']:,} tokens"
        )
