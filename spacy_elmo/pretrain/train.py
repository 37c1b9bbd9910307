"""The pretraining loop: corpus -> biLM, with checkpoints, exact resume and held-out perplexity."""
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy
import torch

from ..bilm.errors import ElmoWeightsError
from .batching import epoch_batches, make_batch
from .config import load_config
from .corpus import Split, build_vocab, map_types_to_words, resolve_paths, tokenize_corpus, type_char_ids
from .export import load_model, write_model
from .lm import LanguageModel
from .hardware import cpu_name, resolve_device, resolve_precision
from .recurrent import cell_forward

CHECKPOINT = "checkpoint.pt"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def prepare_corpus(cfg, out_dir: Path, progress: bool = True) -> dict:
    """Tokenise the corpus once and cache it in out_dir/corpus/ (reused by --resume)."""
    cache = out_dir / "corpus"
    key = json.dumps({k: cfg["corpus"][k] for k in sorted(cfg["corpus"]) if k != "license"}, sort_keys=True)
    if (cache / "key.json").is_file() and (cache / "key.json").read_text() == key:
        data = numpy.load(cache / "corpus.npz")
        with open(cache / "types.json", encoding="utf-8") as f:
            types = json.load(f)
        with open(cache / "files.json", encoding="utf-8") as f:
            files = json.load(f)
        train = Split(data["train_tokens"], data["train_offsets"])
        heldout = Split(data["heldout_tokens"], data["heldout_offsets"])
        return {"types": types, "train": train, "heldout": heldout, "files": files}
    c = cfg["corpus"]
    paths = resolve_paths(c["paths"])
    _log(f"Tokenising {len(paths)} file(s) with spaCy's English tokenizer")
    types, train, heldout, files = tokenize_corpus(
        paths,
        block_lines=int(c["block_lines"]),
        heldout_every=int(c["heldout_every"]),
        max_sentence_tokens=int(c["max_sentence_tokens"]),
        max_lines_per_file=int(c.get("max_lines_per_file", 0)),
        progress=progress,
    )
    if len(train) == 0:
        raise ValueError("The corpus has no training sentences (all text went to the held-out slice?)")
    cache.mkdir(parents=True, exist_ok=True)
    numpy.savez(
        cache / "corpus.npz",
        train_tokens=train.tokens,
        train_offsets=train.offsets,
        heldout_tokens=heldout.tokens,
        heldout_offsets=heldout.offsets,
    )
    with open(cache / "types.json", "w", encoding="utf-8") as f:
        json.dump(types, f, ensure_ascii=False)
    with open(cache / "files.json", "w", encoding="utf-8") as f:
        json.dump(files, f, indent=2)
    (cache / "key.json").write_text(key)
    return {"types": types, "train": train, "heldout": heldout, "files": files}


def lr_factor(step: int, warmup: int, max_steps: int, final: float, decay_steps: int = 0) -> float:
    """Learning-rate multiplier at `step`: linear warm-up to 1 over `warmup` steps, then linear decay
    to `final` at `max_steps`. With `decay_steps` > 0 the rate stays at 1 until
    `max_steps - decay_steps` and decays only over the last `decay_steps` ("warmup-stable-decay",
    Hagele et al. 2024, arXiv:2405.18392): a run in its stable phase can be extended by raising
    `max_steps` on --resume without any jump in the rate.
    """
    if warmup and step < warmup:
        return (step + 1) / warmup
    decay_start = max(warmup, max_steps - decay_steps) if decay_steps else warmup
    if max_steps <= decay_start:
        return 1.0
    frac = min(1.0, max(0.0, (step - decay_start) / max(1, max_steps - decay_start)))
    return 1.0 - (1.0 - final) * frac


@torch.no_grad()
def evaluate(lm: LanguageModel, split: Split, char_table, type_to_word, max_tokens: int, tokens_per_batch: int) -> dict:
    """Forward, backward and mean perplexity on the first sentences of split (up to max_tokens)."""
    was_training = lm.training
    lm.eval()
    n = len(split)
    if max_tokens:
        lengths = numpy.diff(split.offsets) + 1
        n = int(numpy.searchsorted(numpy.cumsum(lengths), max_tokens)) + 1
        n = min(n, len(split))
    ids = numpy.arange(n)
    order = ids[numpy.argsort(numpy.diff(split.offsets)[:n], kind="stable")]
    sums = {"fwd": 0.0, "bwd": 0.0, "n": 0}
    start = 0
    while start < len(order):
        longest = 0
        end = start
        while end < len(order):
            length = int(split.offsets[order[end] + 1] - split.offsets[order[end]]) + 2
            if end > start and max(longest, length) * (end - start + 1) > tokens_per_batch:
                break
            longest = max(longest, length)
            end += 1
        batch = _to(make_batch(split, order[start:end], char_table, type_to_word), lm)
        out = lm(**batch)
        sums["fwd"] += float(out["fwd_nll"])
        sums["bwd"] += float(out["bwd_nll"])
        sums["n"] += int(out["fwd_count"])
        start = end
    lm.train(was_training)
    if sums["n"] == 0:
        return {"perplexity": float("nan"), "forward": float("nan"), "backward": float("nan"), "tokens": 0}
    fwd = math.exp(sums["fwd"] / sums["n"])
    bwd = math.exp(sums["bwd"] / sums["n"])
    mean = math.exp((sums["fwd"] + sums["bwd"]) / (2 * sums["n"]))
    return {"perplexity": mean, "forward": fwd, "backward": bwd, "tokens": sums["n"]}


def _to(batch: Dict[str, torch.Tensor], lm: LanguageModel) -> Dict[str, torch.Tensor]:
    """The batch's tensors on the LM's device."""
    device = lm.device
    return batch if device.type == "cpu" else {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _load_init_from(init_from: str):
    """load_model(init_from), with errors that name [training] init_from."""
    where = f"[training] init_from = {init_from!r}"
    if not os.path.isdir(init_from):
        raise FileNotFoundError(f"{where}: no such directory; give a model directory written by "
                                "`python -m spacy_elmo pretrain` (OUTPUT_DIR/model), or null to train from scratch")
    try:
        return load_model(init_from)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{where}: {err}") from None
    except ElmoWeightsError as err:
        raise ElmoWeightsError(f"{where}: {err}", path=err.path, dataset=err.dataset) from None
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def make_lm(cfg, vocab_size: int) -> Tuple[LanguageModel, dict]:
    """The training LanguageModel of a config, on its [training] device, and how it runs (for
    meta.json). Raises ValueError for an unknown or unavailable device or precision."""
    t_cfg = cfg["training"]
    impl = str(t_cfg.get("lstm_impl", "fused"))
    device = resolve_device(str(t_cfg.get("device", "cpu")))
    dtype, reason = resolve_precision(str(t_cfg.get("precision", "auto")), str(device))
    if impl == "torch":
        dtype, reason = torch.float32, "float32 (lstm_impl = 'torch')"
    compile_cells = bool(t_cfg.get("compile", False)) and impl == "fused" and device.type == "cpu"
    lm = LanguageModel(dict(cfg["model"]), dict(cfg["softmax"]), vocab_size, lstm_impl=impl, gemm_dtype=dtype,
                       compile=compile_cells).to(device)
    compiled = compile_cells and lm.forward_lstms[0].cells[0] is not cell_forward
    path = {"device": str(device), "lstm_impl": impl, "precision": str(dtype).replace("torch.", ""),
            "precision_reason": reason, "compiled_cells": bool(compiled), "cpu": cpu_name(),
            "threads": torch.get_num_threads()}
    if device.type == "cuda":
        path["gpu"] = torch.cuda.get_device_name(device)
    return lm, path


def pretrain(
    output_dir: str,
    config_path: Optional[str] = None,
    overrides: Optional[Dict[str, object]] = None,
    resume: bool = False,
    progress: bool = True,
    command: Optional[List[str]] = None,
    stop_after: Optional[int] = None,
) -> dict:
    """Train a biLM; returns the final meta dict. Writes into output_dir:
    ``config.cfg``, ``corpus/`` (tokenised cache), ``checkpoint.pt`` (for --resume) and ``model/``
    (options.json + weights.hdf5 + lm_head.hdf5 + vocab.txt + meta.json), refreshed at every checkpoint.

    ``stop_after`` ends the run after that many steps as an interruption would (checkpoint, no final
    evaluation), without changing the learning-rate schedule; ``resume`` then continues exactly.

    Raises FileExistsError if output_dir has a checkpoint and resume is False; FileNotFoundError if
    resume is True and there is none; ValueError naming the key for an unknown or mistyped setting
    (see :func:`.config.load_config`). A ``[training] init_from`` that is not a usable model
    directory raises (before the corpus is tokenised) FileNotFoundError or ElmoWeightsError (a
    ValueError) naming ``[training] init_from``, or ValueError if its architecture differs from
    the config.
    """
    out = Path(output_dir)
    ckpt_path = out / CHECKPOINT
    if resume:
        if not ckpt_path.is_file():
            raise FileNotFoundError(f"--resume: no checkpoint at {ckpt_path}")
        cfg = load_config(out / "config.cfg", overrides)
    else:
        if ckpt_path.exists():
            raise FileExistsError(f"{ckpt_path} exists: pass --resume to continue, or choose a new output directory")
        cfg = load_config(config_path, overrides)
    t_cfg = cfg["training"]
    if int(t_cfg.get("threads", 0)):
        torch.set_num_threads(int(t_cfg["threads"]))
    seed = int(t_cfg["seed"])
    torch.manual_seed(seed)

    resolve_device(str(t_cfg.get("device", "cpu")))  # an unavailable device fails before any work
    init_from = t_cfg.get("init_from") or None
    if init_from:  # warm start: the source model's weights, LM head and vocabulary, checked before tokenising
        source_lm, words = _load_init_from(init_from)
        lm, run_path = make_lm(cfg, len(words))
        if not resume:
            try:
                lm.load_state_dict(source_lm.state_dict())
            except RuntimeError as err:
                raise ValueError(f"[training] init_from = {init_from!r}: its architecture differs from [model] / "
                                 f"[softmax] of this config ({str(err).splitlines()[0]})") from None
            _log(f"Initialised from {init_from}")
        del source_lm

    corpus = prepare_corpus(cfg, out, progress)
    types, train, heldout = corpus["types"], corpus["train"], corpus["heldout"]
    char_table = type_char_ids(types)
    if init_from:
        type_to_word = map_types_to_words(types, words)
    else:
        words, type_to_word = build_vocab(types, train, int(cfg["vocab"]["size"]), int(cfg["vocab"]["min_count"]))
        lm, run_path = make_lm(cfg, len(words))
    out.mkdir(parents=True, exist_ok=True)
    cfg.to_disk(out / "config.cfg")  # only once corpus and model are ready: a failed start leaves no config
    _log(f"Corpus: {train.n_tokens:,} training tokens in {len(train):,} sentences; "
         f"{heldout.n_tokens:,} held-out tokens; {len(types):,} types; softmax vocabulary {len(words):,}")
    n_params = sum(p.numel() for p in lm.parameters())
    n_bilm = n_params - sum(p.numel() for p in lm.softmax.parameters())
    optimizer = torch.optim.Adam(lm.parameters(), lr=float(t_cfg["learning_rate"]))
    max_steps = int(t_cfg["max_steps"])
    sched = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: lr_factor(s, int(t_cfg.get("warmup_steps", 0)), max_steps, float(t_cfg.get("final_lr_fraction", 1.0)),
                            int(t_cfg.get("decay_steps", 0))),
    )
    state = {"step": 0, "epoch": 0, "batch": 0, "tokens": 0, "seconds": 0.0, "history": []}
    if resume:
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        lm.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        state = ckpt["state"]
        torch.set_rng_state(ckpt["torch_rng"])
        _log(f"Resumed from {ckpt_path} at step {state['step']:,} ({state['tokens']:,} tokens)")
    state.setdefault("commands", []).append(
        {"command": command or [], "at_step": state["step"], "threads": torch.get_num_threads(), "path": run_path}
    )

    tpb = int(t_cfg["tokens_per_batch"])
    max_tokens = int(t_cfg.get("max_tokens", 0))
    max_minutes = float(t_cfg.get("max_minutes", 0))
    stint_seconds = 60.0 * float(t_cfg.get("stop_after_minutes", 0))
    started = time.time()
    ckpt_seconds = 60.0 * float(t_cfg.get("checkpoint_minutes", 5))
    eval_every = int(t_cfg.get("eval_every_steps", 0))
    eval_tokens = int(t_cfg.get("eval_tokens", 0))
    grad_clip = float(t_cfg.get("grad_clip", 0))

    def meta(final_eval: Optional[dict] = None) -> dict:
        return {
            "name": out.name,
            "description": "ELMo biLM pretrained with `python -m spacy_elmo pretrain`",
            "options": lm.options(),
            "parameters": {"biLM": n_bilm, "lm_head": n_params - n_bilm},
            "softmax": {"type": "torch.nn.AdaptiveLogSoftmaxWithLoss", "vocab_size": len(words), **dict(cfg["softmax"])},
            "corpus": {
                "files": {os.path.basename(k): v for k, v in corpus["files"].items()},
                "train_tokens": train.n_tokens,
                "heldout_tokens": heldout.n_tokens,
                "heldout_rule": f"lines with (line_number // {cfg['corpus']['block_lines']}) % {cfg['corpus']['heldout_every']} == 0",
                "tokenizer": "spacy.blank('en').tokenizer, whitespace tokens dropped",
                "license": cfg["corpus"].get("license", "unknown"),
            },
            "training": {
                "steps": state["step"],
                "epochs_completed": state["epoch"],
                "tokens_seen": state["tokens"],
                "wall_seconds": round(state["seconds"], 1),
                "tokens_per_second": round(state["tokens"] / max(state["seconds"], 1e-9), 1),
                "commands": state["commands"],
                "torch": torch.__version__,
            },
            "heldout": final_eval or (state["history"][-1] if state["history"] else None),
            "history": state["history"],
        }

    def checkpoint(final_eval: Optional[dict] = None) -> None:
        _atomic_save(
            {
                "model": lm.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": sched.state_dict(),
                "state": state,
                "torch_rng": torch.get_rng_state(),
            },
            ckpt_path,
        )
        write_model(lm, words, str(out / "model"), meta(final_eval))

    stop = {"signal": None}

    def on_signal(signum, frame):
        stop["signal"] = signum

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    lm.train()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=max_steps or None, initial=state["step"], unit="step", dynamic_ncols=True, file=sys.stderr)
    last_ckpt = time.time()
    window = {"tokens": 0, "time": 0.0, "nll": 0.0, "n": 0}
    try:
        while True:
            batches = epoch_batches(train, tpb, seed, state["epoch"])
            while state["batch"] < len(batches):
                if (max_steps and state["step"] >= max_steps) or (max_tokens and state["tokens"] >= max_tokens):
                    raise StopIteration
                if max_minutes and state["seconds"] >= 60 * max_minutes:
                    raise StopIteration
                if stop["signal"] is not None:
                    raise KeyboardInterrupt
                if (stop_after is not None and state["step"] >= stop_after) or (
                        stint_seconds and time.time() - started >= stint_seconds):
                    if bar is not None:
                        bar.close()
                    checkpoint()
                    return meta()
                t0 = time.time()
                batch = _to(make_batch(train, batches[state["batch"]], char_table, type_to_word), lm)
                result = lm(**batch)
                optimizer.zero_grad(set_to_none=True)
                result["loss"].backward()
                if grad_clip:
                    torch.nn.utils.clip_grad_norm_(lm.parameters(), grad_clip)
                optimizer.step()
                sched.step()
                dt = time.time() - t0
                n_tok = int(result["fwd_count"])
                state["step"] += 1
                state["batch"] += 1
                state["tokens"] += n_tok
                state["seconds"] += dt
                window["tokens"] += n_tok
                window["time"] += dt
                window["nll"] += float(result["fwd_nll"] + result["bwd_nll"])
                window["n"] += 2 * n_tok
                if bar is not None:
                    bar.update(1)
                    if state["step"] % 10 == 0:
                        loss = window["nll"] / max(window["n"], 1)
                        bar.set_postfix(
                            tok_s=f"{window['tokens'] / max(window['time'], 1e-9):,.0f}",
                            loss=f"{loss:.3f}",
                            ppl=f"{math.exp(min(loss, 50)):.1f}",
                            tokens=f"{state['tokens'] / 1e6:.2f}M",
                        )
                        window = {"tokens": 0, "time": 0.0, "nll": 0.0, "n": 0}
                if eval_every and state["step"] % eval_every == 0 and len(heldout):
                    ev = evaluate(lm, heldout, char_table, type_to_word, eval_tokens, tpb)
                    ev.update(step=state["step"], tokens_seen=state["tokens"])
                    state["history"].append(ev)
                    _log(f"\nstep {state['step']:,}: held-out perplexity {ev['perplexity']:.1f} "
                         f"(fwd {ev['forward']:.1f}, bwd {ev['backward']:.1f}, {ev['tokens']:,} tokens)")
                if time.time() - last_ckpt >= ckpt_seconds:
                    checkpoint()
                    last_ckpt = time.time()
            state["epoch"] += 1
            state["batch"] = 0
    except StopIteration:
        pass
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        checkpoint()
        _log(f"Interrupted: checkpoint saved at step {state['step']:,}; continue with --resume")
        raise
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
    if bar is not None:
        bar.close()
    final = None
    if len(heldout):
        final = evaluate(lm, heldout, char_table, type_to_word, 0, tpb)
        final.update(step=state["step"], tokens_seen=state["tokens"], full_heldout=True)
        _log(f"Held-out perplexity {final['perplexity']:.2f} (fwd {final['forward']:.2f}, "
             f"bwd {final['backward']:.2f}) on {final['tokens']:,} tokens")
    checkpoint(final)
    _log(f"Model written to {out / 'model'}")
    return meta(final)
