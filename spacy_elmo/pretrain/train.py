"""The pretraining loop: corpus -> biLM, with checkpoints, exact resume, held-out perplexity and
(under ``torchrun``) data-parallel ranks. Reads top to bottom: :func:`pretrain` sets the run up,
:func:`_train_loop` takes optimizer steps until a stopping rule, a signal or the end of a stint.

Pieces live next door: the corpus cache (:mod:`.corpus_cache`), batches (:mod:`.batching`), the
model (:mod:`.lm`: :class:`spacy_elmo.bilm.BiLM` and a softmax head), held-out evaluation
(:mod:`.evaluation`), checkpoint and meta.json (:mod:`.checkpoint`), ranks (:mod:`.distributed`),
warm starts and continued pretraining (:mod:`.source`, :mod:`.widen`).
"""
import math
import signal
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from ..bilm import lstm_paths, lstm_train
from ..errors import ElmoConfigError, ElmoDataError
from . import checkpoint, distributed
from .batching import epoch_batches, make_batch
from .checkpoint import CHECKPOINT, STABLE_CHECKPOINT
from .config import check_output_dir, load_config, user_keys
from .corpus import build_vocab, map_types_to_words
from .corpus_cache import prepare_corpus
from .evaluation import evaluate, to_device
from .export import write_model
from .hardware import cpu_name, resolve_device, resolve_precision
from .lm import LanguageModel, model_options, native_ops, softmax_cutoffs
from .memory import keep_freed_memory
from .settings import TrainingSettings, training_settings
from .source import load_source, source_lm, trained_options, warm_start

__all__ = ["pretrain", "lr_factor", "make_lm", "evaluate", "prepare_corpus", "CHECKPOINT"]
RANK_SEED_STRIDE = 7919  # rank r seeds torch with seed + r * this (rank 0: the seed itself)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def lr_factor(step: int, warmup: int, max_steps: int, final: float, decay_steps: int = 0) -> float:
    """Learning-rate multiplier at `step`: linear warm-up to 1 over `warmup` steps, then linear decay
    to `final` at `max_steps`. With `decay_steps` > 0 the rate stays at 1 until
    `max_steps - decay_steps` and decays only over the last `decay_steps` ("warmup-stable-decay",
    Hagele et al. 2024, arXiv:2405.18392): a run in its stable phase can be extended by raising
    `max_steps` on --resume without any jump in the rate.
    """
    if warmup and step < warmup:
        return (step + 1) / warmup
    decay_start = decay_start_step(warmup, max_steps, decay_steps)
    if max_steps <= decay_start:
        return 1.0
    frac = min(1.0, max(0.0, (step - decay_start) / max(1, max_steps - decay_start)))
    return 1.0 - (1.0 - final) * frac


def decay_start_step(warmup: int, max_steps: int, decay_steps: int) -> int:
    """The last step at full learning rate: optimizer step ``decay_start_step`` still runs at
    factor 1, the next ones decay (see :func:`lr_factor`)."""
    return max(warmup, max_steps - decay_steps) if decay_steps else warmup


def make_lm(cfg, vocab_size: int, options: Optional[dict] = None,
            softmax_cfg: Optional[dict] = None) -> Tuple[LanguageModel, dict]:
    """The training LanguageModel of a config, randomly initialised, on its [training] device,
    and how it runs (for meta.json). options: the biLM's options.json (default: the [model]
    section's, :func:`.lm.model_options`); softmax_cfg: cutoffs and div_value (default:
    [softmax]). Raises ElmoConfigError (a ValueError) for an unknown or unavailable device or
    precision."""
    s = training_settings(cfg)
    impl = s.lstm_impl
    device = resolve_device(s.device)
    dtype, reason = resolve_precision(s.precision, str(device))
    if impl == "torch":
        dtype, reason = torch.float32, "float32 (lstm_impl = 'torch')"
    fast = s.compile and impl == "fused" and device.type == "cpu"
    ops = native_ops() if fast else None
    # the LSTMs' training path: the native recurrence, else torch.compile'd cells, else eager steps
    recurrence = "native" if fast else "eager"
    softmax_cfg = softmax_cfg or dict(cfg["softmax"])
    lm = LanguageModel.new(options or model_options(cfg["model"]), softmax_cfg, vocab_size,
                           dropout=float(cfg["model"]["dropout"]), lstm_impl=impl, gemm_dtype=dtype, ops=ops,
                           recurrence=recurrence).to(device)
    kept, dropped = softmax_cutoffs(softmax_cfg["cutoffs"], vocab_size)
    if dropped:
        _log(f"[softmax] cutoffs {dropped} are not below the softmax vocabulary of {vocab_size:,} words "
             f"(vocab.size = {int(cfg['vocab']['size']):,}): dropped, clusters at {kept}")
    probe = torch.zeros(2, 1, lm.projection_dim, device=device, requires_grad=True)
    lstm_path = type(lstm_paths.choose(lm.bilm.lstm, probe)).__name__
    cells = "autograd" if impl == "torch" else lstm_train.cells_kind(lstm_train.resolve(recurrence, dtype))
    path = {"device": str(device), "lstm_impl": impl, "precision": str(dtype).replace("torch.", ""),
            "precision_reason": reason, "native_ops": lm.native_ops is not None, "lstm_path": lstm_path,
            "compiled_cells": cells in ("native", "inductor"), "cells": cells,
            "cpu": cpu_name(), "threads": torch.get_num_threads()}
    if device.type == "cuda":
        path["gpu"] = torch.cuda.get_device_name(device)
    return lm, path


def _run_config(out: Path, config_path: Optional[str], overrides, resume: bool, from_stable: bool = False):
    """The run's config: OUT/config.cfg on --resume, else the given (or default) config file.
    First of all, OUT must be a folder or not exist (:func:`.config.check_output_dir`)."""
    check_output_dir(out)
    if from_stable and not resume:
        raise FileNotFoundError("--from-stable continues a run: pass it with --resume")
    ckpt_path = out / (STABLE_CHECKPOINT if from_stable else CHECKPOINT)
    if resume:
        if not ckpt_path.is_file():
            why = (" (it is written when a run with [training] decay_steps > 0 reaches its decay)"
                   if from_stable else "")
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}{why}")
        return load_config(out / "config.cfg", overrides)
    if ckpt_path.exists():
        raise FileExistsError(f"{ckpt_path} exists: pass --resume to continue, or choose a new output directory")
    return load_config(config_path, overrides)


def _model_and_corpus(cfg, out: Path, resume: bool, progress: bool, ranks: distributed.Ranks, user_set: set):
    """(lm, words, corpus, run path for meta.json). A warm start's source is loaded and checked
    against [model] before the corpus is tokenised (:mod:`.source`); rank 0 tokenises while the
    other ranks wait, then read its cache."""
    init_from = training_settings(cfg).init_from
    source = options = None
    if init_from:
        source = load_source(init_from)
        options = trained_options(cfg, source, user_set)
    if ranks.is_main:
        corpus = prepare_corpus(cfg, out, progress)
    distributed.barrier(ranks)
    if not ranks.is_main:
        corpus = prepare_corpus(cfg, out, False)
    if source is not None and source.words is not None:  # the source's head and vocabulary
        words = source.words
        corpus["type_to_word"] = map_types_to_words(corpus["types"], words)
    else:
        v = cfg["vocab"]
        words, corpus["type_to_word"] = build_vocab(corpus["types"], corpus["train"], int(v["size"]),
                                                    int(v["min_count"]))
    softmax_cfg = None
    if source is not None and source.head is not None:  # the head's shape comes from the source too
        softmax_cfg = source.head[1]
        cfg["softmax"].update(softmax_cfg)
    lm, run_path = make_lm(cfg, len(words), options, softmax_cfg)
    if source is not None and not resume:
        widened = warm_start(lm, source_lm(source, len(words), dict(cfg["softmax"])), init_from)
        if widened:
            run_path["widened"] = widened  # recorded in meta.json training.commands[].path
        if ranks.is_main:
            _log(f"Initialised from {init_from}" + (" (a new LM head)" if source.head is None else "")
                 + (f", widened {widened} (same function at step 0)" if widened else ""))
    corpus["char_table"] = lm.char_table(corpus["types"])
    return lm, words, corpus, run_path


def pretrain(
    output_dir: str,
    config_path: Optional[str] = None,
    overrides: Optional[Dict[str, object]] = None,
    resume: bool = False,
    progress: bool = True,
    command: Optional[List[str]] = None,
    stop_after: Optional[int] = None,
    from_stable: bool = False,
) -> dict:
    """Train a biLM; returns the final meta dict. Writes into output_dir:
    ``config.cfg``, ``corpus/`` (tokenised cache), ``checkpoint.pt`` (for --resume) and ``model/``
    (options.json + weights.hdf5 + lm_head.hdf5 + vocab.txt + meta.json), refreshed at every checkpoint.

    ``stop_after`` ends the run after that many steps as an interruption would (checkpoint, no final
    evaluation), without changing the learning-rate schedule; ``resume`` then continues exactly.
    With ``decay_steps`` set, the state at the last full-rate step is also kept as
    ``checkpoint-stable.pt``; ``resume`` with ``from_stable`` continues from there with a larger
    ``max_steps``: the stable phase goes on and a later decay replaces this one (one schedule,
    no second warm-up).
    Under ``torchrun`` the ranks share each step (:mod:`.distributed`); only rank 0 writes files.

    Raises ElmoConfigError (a ValueError) if output_dir (or its nearest existing parent) is a file;
    FileExistsError if output_dir has a checkpoint and resume is False; FileNotFoundError if
    resume is True and there is none (or ``from_stable`` without ``resume``); ValueError naming
    the key for an unknown or mistyped setting (see :func:`.config.load_config`), or for a
    ``from_stable`` schedule that would decay before the stable checkpoint's step. A ``[training]
    init_from`` (any model name or directory ``BiLM.from_pretrained`` loads: :mod:`.source`) that
    does not load raises (before the corpus is tokenised) FileNotFoundError or ElmoModelFileError
    (a ValueError) naming ``[training] init_from``; a ``[model]`` value given in the config file
    or an override that differs from the source's raises ElmoConfigError (a ValueError)
    naming both (except a wider projection or more cells: see :mod:`.widen`).
    """
    out = Path(output_dir)
    cfg = _run_config(out, config_path, overrides, resume, from_stable)
    # the settings the user gave (on --resume: all of the run's config.cfg, which records the shape)
    user_set = {f"{section}.{key}" for section in cfg for key in cfg[section]} if resume \
        else user_keys(config_path, overrides)
    device = training_settings(cfg).device
    resolve_device(device)  # an unavailable device fails before any work
    ranks = distributed.setup(device)
    try:
        with keep_freed_memory():  # no page faults for each step's large tensors (see .memory)
            meta = _pretrain(out, cfg, ranks, resume, progress and ranks.is_main, command, stop_after, from_stable,
                             user_set)
    except BaseException:
        if ranks.world > 1:
            torch.distributed.destroy_process_group()
        raise
    distributed.teardown(ranks)
    return meta


def _pretrain(out: Path, cfg, ranks, resume, progress, command, stop_after, from_stable=False,
              user_set: frozenset = frozenset()) -> dict:
    s = training_settings(cfg)
    if s.threads:
        torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed + RANK_SEED_STRIDE * ranks.rank)
    lm, words, corpus, run_path = _model_and_corpus(cfg, out, resume, progress, ranks, user_set)
    if ranks.is_main:
        _log_corpus(corpus, words)
    optimizer = torch.optim.Adam(lm.parameters(), lr=s.learning_rate)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, s.warmup_steps, s.max_steps, s.final_lr_fraction, s.decay_steps))
    state = _resume(out, s, lm, optimizer, sched, ranks, from_stable) if resume else checkpoint.new_state()
    if ranks.is_main:  # only once corpus, model and checkpoint are ready: a failed start changes no config
        out.mkdir(parents=True, exist_ok=True)
        cfg.to_disk(out / "config.cfg")
    run_path["ranks"] = ranks.world
    state["commands"].append({"command": command or [], "at_step": state["step"], "threads": torch.get_num_threads(),
                              "path": run_path})
    run = _Run(out, cfg, lm, distributed.wrap(lm, ranks), optimizer, sched, state, corpus, words, ranks)
    return _train_loop(run, progress, stop_after)


def _log_corpus(corpus: dict, words) -> None:
    train, heldout = corpus["train"], corpus["heldout"]
    _log(f"Corpus: {train.n_tokens:,} training tokens in {len(train):,} sentences; "
         f"{heldout.n_tokens:,} held-out tokens; {len(corpus['types']):,} types; softmax vocabulary {len(words):,}")


def _resume(out: Path, s: TrainingSettings, lm, optimizer, sched, ranks, from_stable: bool) -> dict:
    """The checkpoint's state (model, optimizer and schedule restored in place)."""
    path = out / (STABLE_CHECKPOINT if from_stable else CHECKPOINT)
    state = checkpoint.load(path, lm, optimizer, sched, restore_rng=ranks.is_main)
    if from_stable:
        _check_extends_stable_phase(s, state["step"])
    if ranks.is_main:
        _log(f"Resumed from {path} at step {state['step']:,} ({state['tokens']:,} tokens)")
        if s.max_steps and state["step"] >= s.max_steps:
            _log(f"[training] max_steps = {s.max_steps:,} is not above step {state['step']:,}: no training "
                 f"steps, only the final evaluation and export")
    return state


def _check_extends_stable_phase(s: TrainingSettings, step: int) -> None:
    """A stable checkpoint continues only into a schedule whose decay starts at or after it."""
    start = decay_start_step(s.warmup_steps, s.max_steps, s.decay_steps)
    if not s.decay_steps or start < step:
        raise ElmoConfigError(f"--from-stable: the stable checkpoint is at step {step:,}, but [training] "
                                  "max_steps = "
                                  f"{s.max_steps:,} with decay_steps = {s.decay_steps:,} starts "
                                  f"the decay at step {start:,}: raise max_steps to at least "
                                  f"{step + s.decay_steps:,}")


class _Run:
    """Everything one pretraining run holds, and the three things it does: a step, an evaluation,
    a checkpoint (rank 0 only)."""

    def __init__(self, out, cfg, lm, model, optimizer, sched, state, corpus, words, ranks):
        self.out, self.cfg, self.lm, self.model = out, cfg, lm, model
        self.optimizer, self.sched, self.state = optimizer, sched, state
        self.corpus, self.words, self.ranks = corpus, words, ranks
        self.settings = training_settings(cfg)
        self.tpb = self.settings.tokens_per_batch
        self.grad_clip = self.settings.grad_clip

    def _batch(self, ids, split=None):
        c = self.corpus
        return to_device(make_batch(split or c["train"], ids, c["char_table"], c["type_to_word"]), self.lm)

    def step(self, batch_ids: List) -> Tuple[int, float, float]:
        """One optimizer step over this rank's batches (gradients averaged over them and over
        ranks). Returns (forward predictions, summed NLL of both directions, seconds), summed
        over ranks (seconds: averaged)."""
        t0 = time.time()
        self.optimizer.zero_grad(set_to_none=True)
        n_tok, nll = 0, 0.0
        for i, ids in enumerate(batch_ids):
            last = i == len(batch_ids) - 1
            with self.model.no_sync() if self.ranks.world > 1 and not last else nullcontext():
                result = self.model(**self._batch(ids))
                loss = result["loss"] if len(batch_ids) == 1 else result["loss"] / len(batch_ids)
                loss.backward()
            n_tok += int(result["fwd_count"])
            nll += float(result["fwd_nll"] + result["bwd_nll"])
        distributed.drop_unused_clusters(self.lm, self.ranks)
        if self.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.lm.parameters(), self.grad_clip)
        self.optimizer.step()
        self.sched.step()
        totals = distributed.sum_across(torch.tensor([n_tok, nll, time.time() - t0], dtype=torch.float64), self.ranks)
        return int(totals[0]), float(totals[1]), float(totals[2]) / self.ranks.world

    def evaluate(self, max_tokens: int) -> dict:
        c = self.corpus
        return evaluate(self.lm, c["heldout"], c["char_table"], c["type_to_word"], max_tokens, self.tpb)

    def keep_stable(self) -> None:
        """At the last full-rate step of a schedule with decay_steps: keep the state as
        checkpoint-stable.pt (--resume --from-stable continues the stable phase from it)."""
        s = self.settings
        start = decay_start_step(s.warmup_steps, s.max_steps, s.decay_steps)
        if self.ranks.is_main and s.decay_steps and self.state["step"] == start < s.max_steps:
            checkpoint.save(self.out / STABLE_CHECKPOINT, self.lm, self.optimizer, self.sched, self.state)
            _log(f"\nstep {start:,}: the decay begins; stable-phase state kept as {self.out / STABLE_CHECKPOINT}")

    def checkpoint(self, final_eval: Optional[dict] = None) -> None:
        if not self.ranks.is_main:
            return
        checkpoint.save(self.out / CHECKPOINT, self.lm, self.optimizer, self.sched, self.state)
        write_model(self.lm, self.words, str(self.out / "model"), self.meta(final_eval))

    def meta(self, final_eval: Optional[dict] = None) -> dict:
        return checkpoint.run_meta(self.out.name, self.lm, self.words, self.cfg, self.corpus, self.state, final_eval)


def _stop_flags(stop: dict, started: float, stint_seconds: float, ranks) -> Tuple[bool, bool]:
    """(a signal arrived, the stint is over), on any rank: every rank stops at the same step."""
    flags = torch.tensor([stop["signal"] is not None, bool(stint_seconds and time.time() - started >= stint_seconds)],
                         dtype=torch.float64)
    flags = distributed.sum_across(flags, ranks)
    return bool(flags[0]), bool(flags[1])


LIMIT, STINT = "limit", "stint"  # why the steps ended: a stopping rule, or the end of a stint


class _Loop:
    """The loop's own state: stop rules, signals, clocks, the progress bar and its window."""

    def __init__(self, run: "_Run", progress: bool, stop_after: Optional[int]):
        self.run, self.s, self.stop_after = run, run.settings, stop_after
        self.per_step = self.s.accumulate_batches * run.ranks.world  # batches of the epoch one step takes
        self.started = self.last_ckpt = time.time()
        self.stop = {"signal": None}
        self.bar = _progress_bar(self.s.max_steps, run.state["step"]) if progress else None
        self.window = _new_window()

    def on_signal(self, signum, frame) -> None:
        self.stop["signal"] = signum

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def reason_to_stop(self) -> Optional[str]:
        """LIMIT (max_steps / max_tokens / max_minutes reached), STINT (``stop_after`` steps or
        ``stop_after_minutes``) or None. Raises KeyboardInterrupt when a signal arrived (on any rank)."""
        state, s = self.run.state, self.s
        if (s.max_steps and state["step"] >= s.max_steps) or (s.max_tokens and state["tokens"] >= s.max_tokens):
            return LIMIT
        if s.max_minutes and state["seconds"] >= 60 * s.max_minutes:
            return LIMIT
        signalled, stint_over = _stop_flags(self.stop, self.started, s.stint_seconds, self.run.ranks)
        if signalled:
            raise KeyboardInterrupt
        if stint_over or (self.stop_after is not None and state["step"] >= self.stop_after):
            return STINT
        return None

    def step(self, batches: List) -> None:
        """One optimizer step on the next ``per_step`` batches of the epoch, then the progress
        bar, the periodic held-out evaluation and the periodic checkpoint."""
        run, state, ranks, per_rank = self.run, self.run.state, self.run.ranks, self.s.accumulate_batches
        run.keep_stable()
        group = batches[state["batch"]: state["batch"] + self.per_step]
        n_tok, nll, dt = run.step(group[ranks.rank * per_rank: (ranks.rank + 1) * per_rank])
        state["step"] += 1
        state["batch"] += self.per_step
        state["tokens"] += n_tok
        state["seconds"] += dt
        self._show(n_tok, nll, dt)
        if ranks.is_main and self.s.eval_every_steps and state["step"] % self.s.eval_every_steps == 0:
            _periodic_eval(run, self.s.eval_tokens)
        if ranks.is_main and time.time() - self.last_ckpt >= self.s.checkpoint_seconds:
            run.checkpoint()
            self.last_ckpt = time.time()

    def _show(self, n_tok: int, nll: float, dt: float) -> None:
        w = self.window
        self.window = {"tokens": w["tokens"] + n_tok, "time": w["time"] + dt, "nll": w["nll"] + nll,
                       "n": w["n"] + 2 * n_tok}
        if self.bar is not None:
            self.bar.update(1)
            if self.run.state["step"] % 10 == 0:
                _show(self.bar, self.window, self.run.state)
                self.window = _new_window()

    def epoch_batches(self) -> List:
        """The current epoch's batches. Raises ValueError if one step takes more than an epoch has."""
        run = self.run
        batches = epoch_batches(run.corpus["train"], run.tpb, self.s.seed, run.state["epoch"])
        if len(batches) < self.per_step:
            raise ElmoDataError(f"An epoch has {len(batches)} batches, fewer than one step takes "
                              f"({run.ranks.world} rank(s) x accumulate_batches {self.s.accumulate_batches}): use a "
                              "larger corpus or smaller [training] tokens_per_batch")
        return batches

    def steps(self) -> str:
        """Optimizer steps, epoch after epoch, until a reason to stop (LIMIT or STINT)."""
        state = self.run.state
        while True:
            batches = self.epoch_batches()
            while state["batch"] + self.per_step <= len(batches):
                reason = self.reason_to_stop()
                if reason:
                    return reason
                self.step(batches)
            state["epoch"] += 1
            state["batch"] = 0


def _new_window() -> dict:
    return {"tokens": 0, "time": 0.0, "nll": 0.0, "n": 0}


def _progress_bar(max_steps: int, initial: int):
    from tqdm import tqdm

    return tqdm(total=max_steps or None, initial=initial, unit="step", dynamic_ncols=True, file=sys.stderr)


def _periodic_eval(run: "_Run", eval_tokens: int) -> None:
    """Held-out perplexity on ``eval_tokens`` tokens, kept in the state's history (none without
    a held-out slice)."""
    state = run.state
    if not len(run.corpus["heldout"]):
        return
    ev = run.evaluate(eval_tokens)
    ev.update(step=state["step"], tokens_seen=state["tokens"])
    state["history"].append(ev)
    _log(f"\nstep {state['step']:,}: held-out perplexity {ev['perplexity']:.1f} "
         f"(fwd {ev['forward']:.1f}, bwd {ev['backward']:.1f}, {ev['tokens']:,} tokens)")


def _train_loop(run: _Run, progress: bool, stop_after: Optional[int]) -> dict:
    """Optimizer steps until max_steps / max_tokens / max_minutes (then a full held-out evaluation
    and the final export), a stint's end (``stop_after`` steps or ``stop_after_minutes``:
    checkpoint, no evaluation), or SIGINT / SIGTERM (checkpoint, then KeyboardInterrupt)."""
    loop = _Loop(run, progress, stop_after)
    old_handlers = {s: signal.signal(s, loop.on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    run.lm.train()
    try:
        if loop.steps() == STINT:
            loop.close_bar()
            run.checkpoint()
            return run.meta()
    except KeyboardInterrupt:
        loop.close_bar()
        run.checkpoint()
        if run.ranks.is_main:
            _log(f"Interrupted: checkpoint saved at step {run.state['step']:,}; continue with --resume")
        raise
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
    loop.close_bar()
    return _finish(run)


def _finish(run: _Run) -> dict:
    """The end of training: a full held-out evaluation (rank 0, with a held-out slice), the last
    checkpoint and the exported model; returns the meta."""
    state, final = run.state, None
    if run.ranks.is_main and len(run.corpus["heldout"]):
        final = run.evaluate(0)
        final.update(step=state["step"], tokens_seen=state["tokens"], full_heldout=True)
        _log(f"Held-out perplexity {final['perplexity']:.2f} (fwd {final['forward']:.2f}, "
             f"bwd {final['backward']:.2f}) on {final['tokens']:,} tokens")
    run.checkpoint(final)
    if run.ranks.is_main:
        _log(f"Model written to {run.out / 'model'}")
    return run.meta(final)


def _show(bar, window: dict, state: dict) -> None:
    loss = window["nll"] / max(window["n"], 1)
    bar.set_postfix(tok_s=f"{window['tokens'] / max(window['time'], 1e-9):,.0f}", loss=f"{loss:.3f}",
                    ppl=f"{math.exp(min(loss, 50)):.1f}", tokens=f"{state['tokens'] / 1e6:.2f}M")
