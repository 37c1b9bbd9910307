"""Command line: ``python -m spacy_elmo {pretrain,init-config,perplexity,probe,download,models,embed} ...``."""
import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .cli_errors import one_line_errors
from .convert.cli import register as register_convert

app = typer.Typer(name="spacy_elmo", help="spacy-elmo: ELMo biLMs for spaCy", no_args_is_help=True,
                  add_completion=False)
register_convert(app)


@app.command("init-config")
@one_line_errors
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
@one_line_errors
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
    from .pretrain.config import parse_overrides
    from .pretrain.train import pretrain

    try:
        overrides = parse_overrides(ctx.args)
    except ValueError as err:
        typer.echo(f"error: {err} Config overrides are --section.key VALUE (e.g. --training.max_steps 1000).", err=True)
        raise typer.Exit(2)
    try:
        pretrain(str(output_dir), str(config_path) if config_path else None, overrides, resume=resume,
                 progress=not quiet, command=["python", "-m", "spacy_elmo"] + sys.argv[1:], from_stable=from_stable)
    except KeyboardInterrupt:
        raise typer.Exit(130)


@app.command("perplexity")
@one_line_errors
def perplexity_cli(
    model: str = typer.Argument(..., help="Model directory (from pretrain) or packaged model name"),
    text_file: Path = typer.Argument(..., help="Text file, one sentence per line (plain or .gz)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object"),
):
    """Forward, backward and mean perplexity of MODEL on TEXT_FILE."""
    from .pretrain.perplexity import perplexity

    result = perplexity(model, str(text_file))
    if as_json:
        typer.echo(json.dumps(result))
    else:
        typer.echo(
            f"perplexity {result['perplexity']:.2f} (forward {result['forward']:.2f}, "
            f"backward {result['backward']:.2f}) on {result['tokens']:,} tokens"
        )


@app.command("probe", context_settings={"allow_extra_args": True})
@one_line_errors
def probe_cli(
    ctx: typer.Context,
    model: Optional[str] = typer.Argument(None, help="Packaged model name or model directory "
                                                     "(default: the embedded en_elmo_small)"),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for probe.md, probe.json and probe.png"),
    pipelines: Optional[List[Path]] = typer.Option(None, "--pipelines", help="Trained pipeline directories whose "
                                                   "learned mixes to read: --pipelines A B C (or repeat the option)"),
    options_path: Optional[Path] = typer.Option(None, "--options", help="options.json of an official ELMo model "
                                                "(with --weights; overrides MODEL)"),
    weights_path: Optional[Path] = typer.Option(None, "--weights",
                                                help="weights.hdf5 of an official ELMo model (with --options)"),
    train_sentences: int = typer.Option(3000, "--train-sentences",
                                        help="Seeded subset of EWT train for the UPOS probe (0 = all 12,544)"),
    context_sentences: int = typer.Option(1000, "--context-sentences",
                                          help="Seeded sample of EWT dev for the contextuality measures"),
    center_sentences: int = typer.Option(1000, "--center-sentences",
                                         help="Lines of pretraining text for the per-layer mean vectors (0 = skip)"),
    seed: int = typer.Option(0, "--seed"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars"),
):
    """Per-layer probes (UPOS, WiC, contextuality) and learned mixes: probe.md, probe.json, probe.png."""
    from .probe.cli import probe_command

    if ctx.args and not pipelines:
        typer.echo(f"error: unexpected arguments {ctx.args}: give one MODEL; pipelines go after --pipelines", err=True)
        raise typer.Exit(2)
    pipelines = list(pipelines or []) + [Path(a) for a in ctx.args]
    paths = probe_command(model, str(options_path) if options_path else None,
                          str(weights_path) if weights_path else None,
                          [str(p) for p in pipelines], str(output), train_sentences=train_sentences,
                          context_sentences=context_sentences, center_sentences=center_sentences, seed=seed,
                          progress=not quiet)
    typer.echo(Path(paths["md"]).read_text(encoding="utf-8"))
    typer.echo(f"wrote {paths['md']}, {paths['json']}, {paths['png']}")


@app.command("download")
@one_line_errors
def download_cli(
    source: List[str] = typer.Argument(..., help="A registered model name (see `models`; efml-<lang> too), "
                                                 "or URL_OF_OPTIONS URL_OF_WEIGHTS with --name, or a zip "
                                                 "URL with --format elmoformanylangs --name"),
    name: Optional[str] = typer.Option(None, "--name", help="Cache name for a model given by its two URLs"),
    sha256: Optional[List[str]] = typer.Option(None, "--sha256", help="Pin a digest: HEX (weights.hdf5), "
                                               "weights=HEX or options=HEX; repeatable"),
    force: bool = typer.Option(False, "--force", help="Download again even if already complete"),
    retries: int = typer.Option(3, "--retries", help="Retries of a lost connection per file (each resumes)"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
    fmt: Optional[str] = typer.Option(None, "--format", help="elmoformanylangs: SOURCE is a zip to convert"),
):
    """Download an ELMo model into the per-user cache, then use it by name (cache: $SPACY_ELMO_CACHE)."""
    from .convert import cli as convert_cli
    from .hub import download_model, parse_pins

    try:
        efml = convert_cli.handles_download(source, fmt)  # an ELMoForManyLangs zip, converted
        if efml:
            model, directory = convert_cli.download(source, name, fmt, sha256, force, not quiet, retries)
        elif len(source) == 1 and name is None:
            model, urls = source[0], None
        elif len(source) == 2 and name:
            model, urls = name, {"options.json": source[0], "weights.hdf5": source[1]}
        else:
            raise ValueError("give one registered NAME, or URL_OF_OPTIONS URL_OF_WEIGHTS --name NAME")
        if not efml:
            directory = download_model(model, urls, sha256=parse_pins(sha256), force=force, progress=not quiet,
                                       retries=retries)
    except KeyboardInterrupt:
        typer.echo("interrupted: run the same command again to resume", err=True)
        raise typer.Exit(130)
    typer.echo(f"{model}: ready in {directory} (sha256 recorded, checked on every load). Use it as "
               f"name = \"{model}\" in an elmo component's [components.elmo.model], --model {model}, or "
               f"BiLM.from_pretrained(\"{model}\").")


@app.command("models")
@one_line_errors
def models_cli(
    verify: bool = typer.Option(False, "--verify", help="Re-hash every present file against its sha256.json"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list"),
):
    """List packaged, registered and downloaded models with shape, size and status."""
    from .hub.catalog import format_rows, rows

    table = rows(verify=verify)
    typer.echo(json.dumps(table, indent=2) if as_json else format_rows(table))


@app.command("embed")
@one_line_errors
def embed_cli(
    input_path: Path = typer.Argument(..., help="Text (one sentence per line, .gz too), .jsonl, or a .spacy DocBin"),
    output: Path = typer.Argument(..., help="HDF5 file to write (AllenNLP `elmo` layout)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model name (packaged or downloaded) or "
                                        "directory (default: the packaged default)"),
    layers: str = typer.Option("all", "--layers",
                               help="all | top | average | mix:w0,w1,...[,gamma=G] (pre-softmax weights)"),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or float16"),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="Split on whitespace instead of spaCy's tokenizer"),
    lang: str = typer.Option("en", "--lang", help="spaCy language code, or a pipeline name/path, for the tokenizer"),
    fmt: Optional[str] = typer.Option(None, "--format", help="text | jsonl | spacy (default: from the file name)"),
    text_field: str = typer.Option("text", "--text-field", help="JSONL field with the text (or a list of tokens)"),
    batch_size: int = typer.Option(64, "--batch-size", help="Sentences per biLM call"),
    group_mb: float = typer.Option(64.0, "--group-mb",
                                   help="MB of float32 output per group (journal part; one shard with --ray)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an OUTPUT written with other arguments"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="[ADDRESS]",
                                      help="Embed on Ray Data: OUTPUT is then a directory of HDF5 shards + "
                                      "manifest.json. ADDRESS: auto, HOST:PORT, ray://HOST:PORT; "
                                      "alone: a local cluster"),
    actors: Optional[int] = typer.Option(None, "--actors", help="With --ray: actors in the pool "
                                         "(default: cluster CPUs / --cpus-per-actor)"),
    cpus_per_actor: float = typer.Option(1.0, "--cpus-per-actor", help="With --ray: CPUs (= torch threads) per actor"),
    gpus_per_actor: float = typer.Option(0.0, "--gpus-per-actor",
                                         help="With --ray: GPUs per actor (> 0: the biLM runs on CUDA)"),
):
    """ELMo vectors of every line into HDF5: one dataset per line (by index) + sentence_to_index."""
    from .embed import embed_file
    from .scale import cli as scale_cli

    common = dict(model=model, layer_spec=layers, dtype=dtype, pretokenized=pretokenized, lang=lang, fmt=fmt,
                  text_field=text_field, batch_size=batch_size, group_mb=group_mb, overwrite=overwrite,
                  progress=not quiet)
    try:
        scale_cli.check_ray_options(ray, actors, cpus_per_actor, gpus_per_actor)
        if ray is not None:
            typer.echo(scale_cli.run(str(input_path), str(output), ray, actors=actors, num_cpus=cpus_per_actor,
                                     num_gpus=gpus_per_actor, **common))
            return
        s = embed_file(str(input_path), str(output), **common)
    except KeyboardInterrupt:
        kept = f"shards are kept in {output}" if ray is not None else f"groups are kept in {output}.parts"
        typer.echo(f"interrupted: finished {kept}; run the same command to resume", err=True)
        raise typer.Exit(130)
    if s["already_complete"]:
        typer.echo(f"{output} is already complete (same arguments): nothing to do")
        return
    rate = s["embedded_tokens"] / s["seconds"] if s["seconds"] else 0.0
    typer.echo(f"wrote {output}: {s['sentences']:,} sentences, {s['tokens']:,} tokens ({s['embedded']:,} "
               f"sentences embedded in this run, {rate:,.0f} tokens/s)")


def main():
    from .scale.cli import optional_value

    sys.argv = optional_value(sys.argv)  # `embed ... --ray` without ADDRESS
    app()


if __name__ == "__main__":
    main()
