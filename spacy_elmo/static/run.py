"""``distil_vectors``: a biLM + a corpus -> one static vector per word (``python -m spacy_elmo
static-vectors``), the reduction of Bommasani et al. (2020, "Interpreting Pretrained
Contextualized Representations via Reductions to Static Embeddings"): a word's vector is the
mean of a view of its contextual vectors over up to ``max_contexts`` of its occurrences.

Two passes over the corpus (:mod:`.corpus`): the first counts the tokens and fixes the
vocabulary; the second runs the biLM on the sentences that still hold a word short of contexts
and keeps running sums (:mod:`.accumulate`), so memory is bounded by vocabulary x dim, not by
the corpus. The state is checkpointed (:mod:`.checkpoint`): a killed run, re-run with the same
arguments, goes on from its last saved position. The output is written at the end, at once
(:mod:`.writer`).
"""
import os
import time
from typing import NamedTuple, Optional, Sequence, Union

import numpy

from ..errors import ElmoConfigError, ElmoDataError
from . import accumulate, corpus, postprocess, writer
from .checkpoint import Partial, lock_output

GROUP_TOKENS = 8192  # tokens per biLM call (one group); a state is saved between groups


class Plan(NamedTuple):
    """What decides the sums, checked before any work: ``spec`` (the parsed view), ``model`` (as
    given), ``model_dir``, ``paths`` (the corpus files), ``n_layers`` (num_layers + 1), ``dim``
    and ``args`` (JSON-plain; a partial state with equal args is resumed)."""

    spec: object
    model: str
    model_dir: str
    paths: list
    n_layers: int
    dim: int
    args: dict


def plan(model: Optional[str], corpus_paths: Union[str, Sequence[str]], view: str = "top", min_count: int = 5,
         max_words: int = 0, max_contexts: int = 100, window_tokens: int = 128, max_lines: int = 0,
         lang: str = "en", precision: str = "float32") -> Plan:
    """Check the options and resolve the model and corpus (no weights loaded). Raises
    FileNotFoundError (model), ElmoDataError (corpus files), ElmoConfigError (an option, a
    precision, a view the model lacks)."""
    from ..bilm.options import read_options
    from ..bilm.precision import check_precision
    from ..hub.resolve import resolve
    from ..layer_spec import parse
    from ..package_data import DEFAULT_MODEL

    for name, value, low in (("--min-count", min_count, 1), ("--max-words", max_words, 0),
                             ("--max-contexts", max_contexts, 0), ("--window-tokens", window_tokens, 1),
                             ("--max-lines", max_lines, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ElmoConfigError(f"{name} {value!r}: expected an integer >= {low}")
    _check_lang(lang)
    check_precision(precision, "--precision")
    spec = parse(view, "--view")
    model = model or DEFAULT_MODEL
    model_dir = resolve(model)
    lstm = read_options(os.path.join(model_dir, "options.json"))["lstm"]
    spec.validate(lstm["n_layers"] + 1, "--view")
    paths = corpus.resolve_paths(corpus_paths)
    weights = os.path.join(model_dir, "weights.hdf5")
    wst = os.stat(weights) if os.path.isfile(weights) else None
    files = [[os.path.abspath(p), os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in paths]
    args = {"model": model, "model_dir": os.path.abspath(model_dir), "weights_size": wst and wst.st_size,
            "weights_mtime_ns": wst and wst.st_mtime_ns, "view": spec.name, "corpus": files,
            "max_lines": max_lines, "min_count": min_count, "max_words": max_words, "max_contexts": max_contexts,
            "window_tokens": window_tokens, "lang": lang}
    if precision != "float32":  # float32 states saved before --precision existed still resume
        args["precision"] = precision
    return Plan(spec, model, model_dir, paths, lstm["n_layers"] + 1, 2 * lstm["projection_dim"], args)


def _check_lang(lang: str) -> None:
    import spacy

    try:
        spacy.util.get_lang_class(lang)
    except (ImportError, KeyError, ValueError) as err:
        raise ElmoConfigError(f"--lang {lang!r}: not a spaCy language code ({err})") from None


class Distilled(NamedTuple):
    """The result of :func:`distil_means`: ``words`` (most frequent first), ``counts`` (their
    corpus counts, int64 (V,)), ``contexts`` (the contexts averaged per word, int64 (V,)),
    ``means`` (float32 (V, K, dim); K = 1, or num_layers + 1 for the view "all"), ``digest``
    (:func:`spacy_elmo.bilm.integrity.parameters_digest` of the biLM) and ``stats`` (counters
    and seconds, see :func:`distil_vectors`)."""

    words: list
    counts: numpy.ndarray
    contexts: numpy.ndarray
    means: numpy.ndarray
    digest: str
    stats: dict


def distil_means(p: Plan, batch_size: int = 64, threads: Union[int, str] = "auto", progress: bool = True,
                 partial: Optional[Partial] = None, checkpoint_every: float = 120.0) -> Distilled:
    """Both passes for a :func:`plan` (any view, "all" included), resuming from and saving to
    ``partial`` when given. Raises ElmoDataError if no word reaches min_count."""
    from ..bilm import BiLM
    from ..bilm.cpu_budget import ThreadBudget, parse_threads
    from ..bilm.integrity import parameters_digest

    budget = ThreadBudget(parse_threads(threads, "--threads"))
    if batch_size < 1:
        raise ElmoConfigError(f"--batch-size {batch_size!r}: expected an integer >= 1")
    tokenize = corpus.make_tokenizer(False, p.args["lang"])
    vocab, stats = _first_pass(p, tokenize, progress, partial)
    bilm = BiLM.from_pretrained(p.model_dir, precision=p.args.get("precision", "float32"))
    state = (partial.state() if partial else None) or _empty_state(len(vocab["words"]), p)
    stats.update({k: v for k, v in state.items() if k not in ("sums", "counts")})
    stats["precision"] = bilm.effective_precision
    claims = accumulate.Claims(state["counts"], p.args["max_contexts"])
    row_of = {w: i for i, w in enumerate(vocab["words"])}
    lines = corpus.records(p.paths, p.args["max_lines"], start=stats["position"])
    groups = accumulate.groups(lines, tokenize, row_of, claims, p.args["window_tokens"], GROUP_TOKENS)
    before, start, saved = dict(stats), time.perf_counter(), time.monotonic()
    with _bar(progress, vocab["records"], stats["position"], "contexts") as bar:
        for group in groups:
            with budget:
                stats["tokens_embedded"] += accumulate.add_group(bilm, p.spec, group, state["sums"], batch_size)
            _count(stats, group)
            bar.update(group.records)
            bar.set_postfix_str(f"{stats['sentences_skipped']:,} skipped", refresh=False)
            if partial is not None and time.monotonic() - saved >= checkpoint_every:
                partial.save_state(state["sums"], claims.counts, _counters(stats))
                saved = time.monotonic()
    _rates(stats, before, time.perf_counter() - start)
    stats["records_not_read"] = vocab["records"] - stats["position"]
    contexts = claims.counts
    if partial is not None:
        partial.save_state(state["sums"], contexts, _counters(stats))
    return _result(vocab, contexts, state["sums"], parameters_digest(bilm), stats, p.args["max_contexts"])


COUNTERS = ("position", "tokens_read", "tokens_embedded", "sentences_used", "sentences_skipped")


def _empty_state(n_words: int, p: Plan) -> dict:
    k = p.n_layers if p.spec.stacked else 1
    return {"sums": numpy.zeros((n_words, k, p.dim), dtype=numpy.float64),
            "counts": numpy.zeros(n_words, dtype=numpy.int64), **{name: 0 for name in COUNTERS}}


def _counters(stats: dict) -> dict:
    return {name: int(stats[name]) for name in COUNTERS}


def _count(stats: dict, group: accumulate.Group) -> None:
    stats["position"] += group.records
    stats["tokens_read"] += group.tokens
    stats["sentences_used"] += len(group.sentences)
    stats["sentences_skipped"] += group.skipped


def _bar(progress: bool, total: int, initial: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="line", desc=desc, disable=not progress, smoothing=0.05)


def _first_pass(p: Plan, tokenize, progress: bool, partial: Optional[Partial]):
    """The vocabulary ({"words", "counts", "records", "tokens", "types"}; saved in ``partial``,
    or read from it when an earlier run saved it) and the stats so far."""
    vocab = partial.vocab() if partial is not None else None
    stats = {"seconds_count": 0.0, "resumed": vocab is not None}
    if vocab is None:
        start = time.perf_counter()
        total = corpus.count_records(p.paths, p.args["max_lines"])
        with _bar(progress, total, 0, "count") as bar:
            counts, n_records, n_tokens = corpus.count_words(corpus.records(p.paths, p.args["max_lines"]),
                                                             tokenize, bar)
        v = corpus.build_vocab(counts, p.args["min_count"], p.args["max_words"])
        vocab = {"words": v.words, "counts": v.counts, "records": n_records, "tokens": n_tokens, "types": v.types}
        stats["seconds_count"] = time.perf_counter() - start
        if partial is not None:
            partial.save_vocab(vocab)
    stats.update(records=vocab["records"], tokens=vocab["tokens"], types=vocab["types"], words=len(vocab["words"]))
    return vocab, stats


def _result(vocab: dict, contexts: numpy.ndarray, sums: numpy.ndarray, digest: str, stats: dict,
            max_contexts: int) -> Distilled:
    if not contexts.all():
        missing = vocab["words"][int(numpy.argmin(contexts))]
        raise ElmoDataError(f"the word {missing!r} was counted in the first pass but not found in the second: "
                            "the corpus changed while it was read; run again")
    means = (sums / contexts[:, None, None]).astype(numpy.float32)
    stats["contexts"] = int(contexts.sum())
    stats["words_full"] = int((contexts >= max_contexts).sum()) if max_contexts else 0
    return Distilled(vocab["words"], numpy.asarray(vocab["counts"], dtype=numpy.int64), contexts, means, digest,
                     stats)


def _rates(stats: dict, before: dict, seconds: float) -> None:
    """tokens/s of this run's second pass: corpus tokens covered (skipped sentences included)
    and tokens through the biLM."""
    stats["seconds_contexts"] = seconds
    for key, name in (("tokens_read", "tokens_per_second"), ("tokens_embedded", "bilm_tokens_per_second")):
        stats[name] = (stats[key] - before[key]) / seconds if seconds else 0.0


def distil_vectors(model: Optional[str], corpus_paths: Union[str, Sequence[str]], output: str, view: str = "top",
                   min_count: int = 5, max_words: int = 0, max_contexts: int = 100, window_tokens: int = 128,
                   max_lines: int = 0, lang: str = "en", batch_size: int = 64, threads: Union[int, str] = "auto",
                   precision: str = "float32", centre: bool = False, remove_top_d: int = 0, overwrite: bool = False,
                   progress: bool = True, checkpoint_every: float = 120.0, command: Optional[str] = None) -> dict:
    """Distil static vectors of ``model`` (a name or directory; default: the packaged
    DEFAULT_MODEL) from ``corpus_paths`` (files or globs) into ``output`` (see :mod:`.writer`).

    view: a layer spec other than "all" (:mod:`spacy_elmo.layer_spec`); min_count / max_words
    (0: all): the vocabulary; max_contexts: contexts averaged per word at most (0: every one);
    window_tokens: longer lines are cut into even pieces of at most this many tokens;
    max_lines: read only the first lines of each file (0: all); lang: the spaCy language of the
    tokenizer and of ``spacy/``; threads: torch threads ("auto", see
    :mod:`spacy_elmo.bilm.cpu_budget`); precision: the biLM's products, "float32" (exact),
    "bfloat16" or "int8" (``BiLM(precision=...)``, :mod:`spacy_elmo.bilm.precision`; the card
    records the one that ran); centre / remove_top_d: :mod:`.postprocess`;
    checkpoint_every: seconds between saved states; command: recorded in the card.

    Returns the card (dict; ``card["counts"]``, ``card["seconds"]``). Raises ElmoConfigError
    (a ValueError) for a bad option, a view the model lacks, or an OUTPUT_DIR that exists (without
    ``overwrite``), is not this command's or holds an input; ElmoDataError (a ValueError) for a
    missing, binary or empty corpus file or no word reaching min_count; FileNotFoundError for a missing
    model; ElmoLockError (a RuntimeError), before anything is written, while another run writes
    OUTPUT_DIR (:func:`.checkpoint.lock_output`). A killed run keeps ``OUTPUT_DIR.partial/``: the
    same call goes on from there."""
    p = plan(model, corpus_paths, view, min_count, max_words, max_contexts, window_tokens, max_lines, lang,
             precision)
    if p.spec.stacked:
        raise ElmoConfigError("--view 'all': a table holds one vector per word; give top, average, layer_k "
                              "or mix:w0,w1,...")
    postprocess.check(remove_top_d, p.dim)
    inputs = [*p.paths, p.model_dir]
    writer.check_output(output, inputs, overwrite)  # before the lock: a bad OUTPUT_DIR creates nothing
    with lock_output(output):  # the whole run, final rename included: a second run is refused at once
        writer.check_output(output, inputs, overwrite)  # again: a run that held the lock may have written it
        partial = Partial(output, p.args)
        try:
            d = distil_means(p, batch_size, threads, progress, partial, checkpoint_every)
        except ElmoDataError:
            partial.remove_if_unused()  # bad input found before any work was saved: no OUTPUT_DIR.partial/
            raise
        table, post = postprocess.apply(d.means[:, 0], centre, remove_top_d)
        start = time.perf_counter()
        card = make_card(p, d, post, command)
        writer.write_output(output, d.words, table, card, lang, partial.dir)
        partial.remove()
    card["seconds"]["write"] = time.perf_counter() - start
    return card


def make_card(p: Plan, d: Distilled, post: dict, command: Optional[str]) -> dict:
    """card.json: the model (name, folder, sha256 of weights.hdf5, parameter digest), the view
    (and post-processing), the corpus (sha256 of the files, each file's), the counts, the rates
    and the command."""
    from importlib.metadata import version

    from ..bilm.integrity import sha256

    weights = os.path.join(p.model_dir, "weights.hdf5")
    whole, files = corpus.corpus_digest(p.paths)
    label = p.spec.name + (f"+abtt{post['remove_top_d']}" if post["remove_top_d"] else
                           "+centred" if post["centre"] else "")
    s = d.stats
    counts = {k: s[k] for k in ("records", "tokens", "types", "words", "contexts", "words_full", "sentences_used",
                                "sentences_skipped", "records_not_read", "tokens_read", "tokens_embedded")}
    counts.update({k: p.args[k] for k in ("min_count", "max_words", "max_contexts", "window_tokens")})
    return {
        "model": {"name": p.model, "path": os.path.abspath(p.model_dir), "digest": d.digest,
                  "weights_sha256": sha256(weights) if os.path.isfile(weights) else None,
                  "layers": p.n_layers, "dim": p.dim},
        "view": p.spec.name, "precision": s["precision"], "postprocess": post,
        "vectors_name": writer.table_name(d.digest, label),
        "corpus": {"sha256": whole, "files": files, "max_lines": p.args["max_lines"], "lang": p.args["lang"]},
        "counts": counts, "resumed": s["resumed"],
        "seconds": {"count": s["seconds_count"], "contexts": s["seconds_contexts"]},
        "tokens_per_second": s["tokens_per_second"], "bilm_tokens_per_second": s["bilm_tokens_per_second"],
        "command": command, "spacy_elmo": version("spacy-elmo"),
    }
