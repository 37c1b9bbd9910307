"""``python -m spacy_elmo embed``: the command's body (the typer app is assembled in
:mod:`spacy_elmo.__main__`). It lives here, in the layer above :mod:`spacy_elmo.embed`, because
``--ray`` runs it on :mod:`.run`; without ``--ray`` it is :func:`spacy_elmo.embed.cli.run_local`."""
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import ElmoConfigError

RAY_FLAG = "--ray"
LOCAL = "local"


def embed_cli(
    input_path: Path = typer.Argument(..., help="Text (one sentence per line, .gz too), .jsonl, or a .spacy DocBin"),
    output: Path = typer.Argument(..., help="HDF5 file to write (AllenNLP `elmo` layout)"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model name (packaged or downloaded) or "
                                        "directory (default: the packaged default)"),
    layers: str = typer.Option("all", "--layers",
                               help="all | top | average | layer_k | mix:w0,w1,...[,gamma=G] (pre-softmax weights)"),
    dtype: str = typer.Option("float32", "--dtype", help="float32 or float16"),
    precision: str = typer.Option("float32", "--precision",
                                  help="The biLM's products: float32 (exact), bfloat16 or int8 (CPU; see the "
                                  "component docs); not with --ray"),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="Split on whitespace instead of spaCy's tokenizer"),
    lang: str = typer.Option("en", "--lang", help="spaCy language code, or a pipeline name/path, for the tokenizer"),
    fmt: Optional[str] = typer.Option(None, "--format", help="text | jsonl | spacy (default: from the file name)"),
    text_field: str = typer.Option("text", "--text-field", help="JSONL field with the text (or a list of tokens)"),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Sentences per biLM call"),
    group_mb: float = typer.Option(64.0, "--group-mb", min=0, max=100_000,
                                   help="MB of float32 output per group (journal part; one shard with --ray)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an OUTPUT written with other arguments"),
    max_tokens: int = typer.Option(100_000, "--max-tokens-per-line", min=1,
                                   help="Refuse a line (record) of more tokens, in one error naming it: the biLM's "
                                   "memory grows with a sentence's length"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="[ADDRESS]",
                                      help="Embed on Ray Data: OUTPUT is then a directory of HDF5 shards + "
                                      "manifest.json. ADDRESS: auto, HOST:PORT, ray://HOST:PORT; "
                                      "alone: a local cluster"),
    actors: Optional[int] = typer.Option(None, "--actors", min=1, help="With --ray: actors in the pool "
                                         "(default: cluster CPUs / --cpus-per-actor)"),
    cpus_per_actor: float = typer.Option(1.0, "--cpus-per-actor", min=0, max=4096,
                                         help="With --ray: CPUs (= torch threads) per actor"),
    gpus_per_actor: float = typer.Option(0.0, "--gpus-per-actor", min=0, max=64,
                                         help="With --ray: GPUs per actor (> 0: the biLM runs on CUDA)"),
):
    """ELMo vectors of every line into HDF5: one dataset per line (by index) + sentence_to_index."""
    from ..embed.cli import run_local

    common = dict(model=model, layer_spec=layers, dtype=dtype, pretokenized=pretokenized, lang=lang, fmt=fmt,
                  text_field=text_field, batch_size=batch_size, group_mb=group_mb, overwrite=overwrite,
                  progress=not quiet, max_tokens_per_line=max_tokens)
    try:
        check_ray_options(ray, actors, cpus_per_actor, gpus_per_actor, precision)
        if ray is None:
            typer.echo(run_local(str(input_path), str(output), precision=precision, **common))
        else:
            typer.echo(run(str(input_path), str(output), ray, actors=actors, num_cpus=cpus_per_actor,
                           num_gpus=gpus_per_actor, **common))
    except KeyboardInterrupt:
        kept = f"shards are kept in {output}" if ray is not None else f"groups are kept in {output}.parts"
        typer.echo(f"interrupted: finished {kept}; run the same command to resume", err=True)
        raise typer.Exit(130)


def optional_value(argv: List[str], flag: str = RAY_FLAG, value: str = LOCAL) -> List[str]:
    """argv with ``value`` inserted after a bare ``flag`` (last, or followed by another
    option), so that ``--ray`` may be given with or without ADDRESS (typer options always take
    a value). ``--ray ADDRESS`` and ``--ray=ADDRESS`` are left as they are."""
    out = list(argv)
    for k in range(len(out) - 1, -1, -1):
        if out[k] == flag and (k + 1 == len(out) or out[k + 1].startswith("-")):
            out.insert(k + 1, value)
    return out


def check_ray_options(ray: Optional[str], actors: Optional[int], cpus: float, gpus: float,
                      precision: str = "float32") -> None:
    """Raise ElmoConfigError (a ValueError) if a pool option is given without --ray, or --precision
    other than float32 with it (the actors load float32 biLMs)."""
    if ray is None and (actors is not None or cpus != 1.0 or gpus != 0.0):
        raise ElmoConfigError("--actors, --cpus-per-actor and --gpus-per-actor need --ray [ADDRESS]")
    if ray is not None and precision != "float32":
        raise ElmoConfigError(f"--precision {precision}: runs without --ray only (the Ray actors compute in float32)")


def run(input_path: str, output: str, ray: str, **kwargs) -> str:
    """Run :func:`spacy_elmo.scale.embed_file_ray`; returns the line to print. Raises as it does."""
    from .run import embed_file_ray

    s = embed_file_ray(input_path, output, address=None if ray == LOCAL else ray, **kwargs)
    if s["already_complete"]:
        return f"{output} is already complete (same arguments): nothing to do"
    rate = s["embedded"] / s["seconds"] if s["seconds"] else 0.0
    return (f"wrote {s['manifest']}: {s['sentences']:,} sentences, {s['tokens']:,} tokens in {s['shards']:,} shards "
            f"({s['embedded']:,} sentences embedded in this run by {s['actors']} actors, {rate:,.1f} lines/s)")
