"""``embed_file``: a corpus -> HDF5 of ELMo vectors (``python -m spacy_elmo embed``).

Records are read lazily and cut into groups of about ``group_mb`` MB of float32 output (at least
one sentence); each group goes through ``BiLM.embed_sentences`` (distinct tokens through the char
CNN once, length-sorted batches of ``batch_size``) and is written at once as one part
(:mod:`.writer`), so memory stays bounded by about twice the group whatever the corpus size. A re-run with
the same arguments skips the parts already written; a finished OUTPUT with the same arguments
is left as it is.
"""
import os
import time
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from ..errors import ElmoConfigError
from . import inputs, layers
from .paths import check_output, lock_output
from .writer import Output, written_args


def embed_file(input_path: str, output: str, model: Optional[str] = None, layer_spec: str = "all",
               dtype: str = "float32", pretokenized: bool = False, lang: str = "en", fmt: Optional[str] = None,
               text_field: str = "text", batch_size: int = 64, group_mb: float = 64.0, overwrite: bool = False,
               progress: bool = True, max_tokens_per_line: int = inputs.MAX_TOKENS_PER_LINE,
               precision: str = "float32") -> dict:
    """Embed every record of ``input_path`` into ``output`` (HDF5, AllenNLP ``elmo`` layout; see
    :mod:`.writer`). ``model``: a name or directory as everywhere (default: the packaged
    DEFAULT_MODEL); ``layer_spec``: see :mod:`.layers`; ``dtype``: float32 or float16 (of the
    stored vectors); ``precision``: the biLM's products, "float32" (exact), "bfloat16" or "int8"
    (``BiLM(precision=...)``, see :mod:`spacy_elmo.bilm.precision`; a non-default value is one of
    the arguments that decide the output).
    Returns {"sentences", "tokens" (all records), "embedded", "embedded_tokens" (computed in this
    run, not skipped), "seconds" (reading, tokenizing, embedding and writing; not the model load),
    "embed_seconds" (the biLM's calls alone: what tokens/s is of), "output", "already_complete"
    (OUTPUT was already there, same arguments: nothing done)}. Raises ElmoConfigError (a ValueError)
    for a bad option or an OUTPUT that exists with other arguments (unless ``overwrite``),
    FileNotFoundError for a missing input or model (with the download command for a catalog name), ElmoDataError for
    unreadable input lines or a line of more than ``max_tokens_per_line`` tokens (raised when the
    run reaches it; the groups before it are kept for a re-run), ElmoModelFileError for a bad model
    file. OUTPUT is checked first
    (:func:`.paths.check_output`): ElmoConfigError if it is the input file itself (a hard link or
    symlink too; even with ``overwrite``), a directory, or in a folder that does not exist. Then
    OUTPUT is locked for the whole run (:func:`.paths.lock_output`): ElmoLockError (a
    RuntimeError) at once, naming the pid, while another run writes it."""
    from ..bilm.precision import check_precision
    from ..hub import load_bilm

    check_output(input_path, output)
    p = plan(input_path, model, layer_spec, dtype, pretokenized, lang, fmt, text_field, batch_size, group_mb)
    spec, fmt, model, args = p.spec, p.fmt, p.model, p.args
    # float32 (not recorded) matches the outputs written before --precision existed
    if check_precision(precision, "--precision") != "float32":
        args["precision"] = precision
    summary = {"sentences": 0, "tokens": 0, "embedded": 0, "embedded_tokens": 0, "seconds": 0.0,
               "embed_seconds": 0.0, "output": output, "already_complete": False}
    with lock_output(output):  # for the whole run: a second embed into OUTPUT is refused at once
        if os.path.exists(output):
            if written_args(output) == args:
                summary["already_complete"] = True
                return summary
            if not overwrite:
                raise ElmoConfigError(f"{output} exists (written with other arguments, or not by this command): pass "
                                 "--overwrite or choose another file")
        _check_limit(max_tokens_per_line)
        bilm = load_bilm(p.model_dir, precision=precision)
        groups = read_groups(input_path, p, pretokenized, lang, text_field, max_tokens_per_line)
        total = inputs.count(input_path, fmt)
        with Output(output, args) as out:
            _run(bilm, out, groups, spec, dtype, batch_size, total, progress, summary)
            out.finish()  # with --overwrite, the old OUTPUT is replaced only now, by a complete one
    return summary


class Plan(NamedTuple):
    """What decides an embed output, checked before any work: ``spec`` (the parsed --layers),
    ``fmt`` (input format; None when the input is not a file), ``model`` (as given, or
    DEFAULT_MODEL), ``model_dir``, ``lstm`` (the options' lstm section: n_layers, projection_dim;
    a dataset is (n_layers + 1, n, 2 * projection_dim) or (n, 2 * projection_dim)) and ``args``
    (JSON-plain values; an output written with equal args is reused by a re-run)."""

    spec: layers.LayerSpec
    fmt: Optional[str]
    model: str
    model_dir: str
    lstm: dict
    args: dict


def plan(input_path: str, model: Optional[str] = None, layer_spec: str = "all", dtype: str = "float32",
         pretokenized: bool = False, lang: str = "en", fmt: Optional[str] = None, text_field: str = "text",
         batch_size: int = 64, group_mb: float = 64.0) -> Plan:
    """Check :func:`embed_file`'s options and resolve the model (no weights loaded). Raises
    FileNotFoundError for a missing input or model, ElmoConfigError for a bad option."""
    if not os.path.isfile(input_path):
        raise FileNotFoundError(f"input file not found: {input_path!r}")
    try:
        fmt = inputs.detect_format(input_path, fmt)
    except ValueError as err:
        raise ElmoConfigError(str(err)) from None
    p = plan_model(model, layer_spec, dtype, batch_size, group_mb, "whitespace" if pretokenized else lang)
    p.args.update(_input_args(input_path, fmt, text_field))
    return p._replace(fmt=fmt)


def plan_model(model: Optional[str], layer_spec: str = "all", dtype: str = "float32", batch_size: int = 64,
               group_mb: float = 64.0, tokenizer: str = "en") -> Plan:
    """The model and layer part of :func:`plan` (fmt None, no input keys in args), for inputs that
    are not a file (``spacy_elmo.scale.embed_dataset``). ``args["group_tokens"]``: tokens per
    group of about ``group_mb`` MB of float32 output. Raises FileNotFoundError, ElmoConfigError."""
    from ..bilm.options import read_options
    from ..hub.resolve import resolve
    from ..package_data import DEFAULT_MODEL

    spec = _check_options(layer_spec, dtype, batch_size, group_mb)
    model = model or DEFAULT_MODEL
    model_dir = resolve(model)
    lstm = read_options(os.path.join(model_dir, "options.json"))["lstm"]
    try:
        layers.check(spec, lstm["n_layers"])
    except ValueError as err:
        raise ElmoConfigError(str(err)) from None
    args = _model_args(model_dir, model, spec, dtype)
    args["tokenizer"] = tokenizer
    args["group_tokens"] = max(1, int(group_mb * 1e6 // ((lstm["n_layers"] + 1) * 2 * lstm["projection_dim"] * 4)))
    return Plan(spec, None, model, model_dir, lstm, args)


def read_groups(input_path: str, p: Plan, pretokenized: bool = False, lang: str = "en",
                text_field: str = "text",
                max_tokens_per_line: int = inputs.MAX_TOKENS_PER_LINE) -> Iterator[List[inputs.Record]]:
    """The input's records (read lazily) in the groups that embed_file embeds and journals one
    at a time: ~``p.args["group_tokens"]`` tokens each. The tokenizer is made now, so a bad
    ``lang`` raises ElmoConfigError (a ValueError) here, not on the first ``next``; a record of more than
    ``max_tokens_per_line`` tokens raises ElmoDataError when it is reached."""
    _check_limit(max_tokens_per_line)
    tokenize = inputs.make_tokenizer(pretokenized or p.fmt == "spacy", lang)
    records = inputs.read(input_path, p.fmt, tokenize, text_field, lang, max_tokens_per_line)
    return _groups(records, p.args["group_tokens"])


def _check_limit(max_tokens_per_line: int) -> None:
    if isinstance(max_tokens_per_line, bool) or not isinstance(max_tokens_per_line, int) or max_tokens_per_line < 1:
        raise ElmoConfigError(f"--max-tokens-per-line must be an integer >= 1, got {max_tokens_per_line!r}")


def _check_options(layer_spec, dtype, batch_size, group_mb) -> layers.LayerSpec:
    try:
        spec = layers.parse(layer_spec)
    except ValueError as err:
        raise ElmoConfigError(str(err)) from None
    if dtype not in layers.DTYPES:
        raise ElmoConfigError(f"--dtype {dtype!r}: expected one of {', '.join(layers.DTYPES)}")
    if batch_size < 1 or not group_mb > 0:
        raise ElmoConfigError(f"--batch-size must be >= 1 and the group size > 0, got {batch_size} / {group_mb}")
    return spec


def _model_args(model_dir, model, spec, dtype) -> dict:
    """The model and layer keys of what decides the output: JSON-plain values only."""
    weights = os.path.join(model_dir, "weights.hdf5")
    wst = os.stat(weights) if os.path.isfile(weights) else None
    return {"model": model, "model_dir": os.path.abspath(model_dir), "weights_size": wst.st_size if wst else None,
            "weights_mtime_ns": wst.st_mtime_ns if wst else None, "layers": spec.name, "dtype": dtype}


def _input_args(input_path, fmt, text_field) -> dict:
    """The input keys of what decides the output (a re-run with an equal dict reuses it)."""
    st = os.stat(input_path)
    return {"input": os.path.abspath(input_path), "input_size": st.st_size, "input_mtime_ns": st.st_mtime_ns,
            "format": fmt, "text_field": text_field if fmt == "jsonl" else None}


def _groups(records: Iterator[inputs.Record], group_tokens: int) -> Iterator[List[inputs.Record]]:
    """Consecutive records, cut when a group reaches group_tokens tokens (deterministic, so a
    re-run cuts the same groups)."""
    group, tokens = [], 0
    for record in records:
        group.append(record)
        tokens += len(record.tokens)
        if tokens >= group_tokens:
            yield group
            group, tokens = [], 0
    if group:
        yield group


def count_group(group: List[inputs.Record], summary: Dict) -> Tuple[int, int, int]:
    """(first record index, last record index, tokens) of a group, whose sentences and tokens it
    adds to ``summary["sentences"]`` / ``summary["tokens"]`` (a group is counted whether it is
    embedded now or was already written)."""
    n_tokens = sum(len(r.tokens) for r in group)
    summary["sentences"] += len(group)
    summary["tokens"] += n_tokens
    return group[0].index, group[-1].index, n_tokens


def _run(bilm, out: Output, groups, spec, dtype, batch_size, total, progress, summary) -> None:
    from tqdm import tqdm

    from ..bilm.cpu_budget import ThreadBudget

    done = out.done
    budget = ThreadBudget("auto")  # fewer threads while other processes keep cores busy (SPACY_ELMO_THREADS overrides)
    start = time.perf_counter()
    with tqdm(total=total, unit="sent", desc="embed", disable=not progress, smoothing=0.1) as bar:
        for group in groups:
            first, last, n_tokens = count_group(group, summary)
            if (first, last) not in done:
                began = time.perf_counter()
                with budget:
                    arrays = bilm.embed_sentences([r.tokens for r in group], batch_size=batch_size)
                summary["embed_seconds"] += time.perf_counter() - began
                out.add(first, last, [(r.index, r.text, layers.select(spec, a, dtype))
                                      for r, a in zip(group, arrays)])
                del arrays
                summary["embedded"] += len(group)
                summary["embedded_tokens"] += n_tokens
            bar.update(len(group))
            rate = summary["embedded_tokens"] / max(summary["embed_seconds"], 1e-9)
            bar.set_postfix_str(f"{rate:,.0f} tok/s", refresh=False)
    summary["seconds"] = time.perf_counter() - start
