"""``python -m spacy_elmo probe``: the command's body (the typer app is assembled in
:mod:`spacy_elmo.__main__`)."""
from pathlib import Path
from typing import List, Optional

import typer

PROBE_CONTEXT = {"allow_extra_args": True}  # pipelines may follow MODEL without --pipelines


def probe_command(model: Optional[str], options_path: Optional[str], weights_path: Optional[str],
                  pipelines: List[str], output: str, **settings) -> dict:
    """Run :func:`.run.run_probe` and write probe.json / probe.md / probe.png into ``output``.
    ``settings``: fields of :class:`.run.ProbeSettings`. Returns the output paths (str)."""
    from .report import write_outputs
    from .run import ProbeSettings, run_probe

    result = run_probe(model, options_path, weights_path, ProbeSettings(pipelines=list(pipelines), **settings))
    return {kind: str(path) for kind, path in write_outputs(result, output).items()}


def probe_cli(
    ctx: typer.Context,
    model: Optional[str] = typer.Argument(None, help="Model name (packaged or downloaded) or "
                                                     "directory (default: the embedded en_elmo_small)"),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for probe.md, probe.json and probe.png"),
    pipelines: Optional[List[Path]] = typer.Option(None, "--pipelines", help="Trained pipeline directories whose "
                                                   "learned mixes to read: --pipelines A B C (or repeat the option)"),
    options_path: Optional[Path] = typer.Option(None, "--options", help="options.json of an official ELMo model "
                                                "(with --weights; overrides MODEL)"),
    weights_path: Optional[Path] = typer.Option(None, "--weights",
                                                help="weights.hdf5 of an official ELMo model (with --options)"),
    train_sentences: int = typer.Option(3000, "--train-sentences", min=0,
                                        help="Seeded subset of EWT train for the UPOS probe (0 = all 12,544)"),
    context_sentences: int = typer.Option(1000, "--context-sentences", min=1,
                                          help="Seeded sample of EWT dev for the contextuality measures"),
    center_sentences: int = typer.Option(1000, "--center-sentences", min=0,
                                         help="Lines of pretraining text for the per-layer mean vectors (0 = skip)"),
    seed: int = typer.Option(0, "--seed", min=0),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars"),
    redraw: bool = typer.Option(False, "--redraw", help="Run nothing: write probe.md and probe.png again from "
                                "OUTPUT/probe.json (no MODEL, pipelines or data)"),
    ewt_train: Optional[Path] = typer.Option(None, "--ewt-train", help="UD English-EWT train CoNLL-U "
                                             "(en_ewt-ud-train.conllu), for the UPOS probe"),
    ewt_dev: Optional[Path] = typer.Option(None, "--ewt-dev", help="UD English-EWT dev CoNLL-U "
                                           "(en_ewt-ud-dev.conllu), for the UPOS probe and contextuality"),
    wic: Optional[Path] = typer.Option(None, "--wic", help="WiC folder (train/dev *.data.txt + *.gold.txt)"),
    lm_text: Optional[str] = typer.Option(None, "--lm-text", help="Glob of pretraining text (plain or .gz) for "
                                          "the per-layer mean vectors (not needed with --center-sentences 0)"),
):
    """Per-layer probes (UPOS, WiC, contextuality) and learned mixes: probe.md, probe.json, probe.png."""
    if redraw:
        return _redraw(output, [model, options_path, weights_path, ewt_train, ewt_dev, wic, lm_text,
                                *(pipelines or []), *ctx.args])
    if ctx.args and not pipelines:
        typer.echo(f"error: unexpected arguments {ctx.args}: give one MODEL; pipelines go after --pipelines", err=True)
        raise typer.Exit(2)
    pipelines = list(pipelines or []) + [Path(a) for a in ctx.args]
    data = {"ewt_train": ewt_train, "ewt_dev": ewt_dev, "wic": wic, "lm_text": lm_text}
    paths = probe_command(model, str(options_path) if options_path else None,
                          str(weights_path) if weights_path else None,
                          [str(p) for p in pipelines], str(output), train_sentences=train_sentences,
                          context_sentences=context_sentences, center_sentences=center_sentences, seed=seed,
                          progress=not quiet, **{k: None if v is None else str(v) for k, v in data.items()})
    typer.echo(Path(paths["md"]).read_text(encoding="utf-8"))
    typer.echo(f"wrote {paths['md']}, {paths['json']}, {paths['png']}")


def _redraw(output: Path, given: list) -> None:
    """``probe --redraw``: probe.md and probe.png again from OUTPUT/probe.json (:func:`.report.redraw`)."""
    from .report import redraw

    if any(arg is not None for arg in given):
        typer.echo("error: --redraw runs no probe: give only --output DIR (the folder holding probe.json)", err=True)
        raise typer.Exit(2)
    paths = redraw(output)
    typer.echo(paths["md"].read_text(encoding="utf-8"))
    typer.echo(f"wrote {paths['md']}, {paths['png']} (from {paths['json']})")
