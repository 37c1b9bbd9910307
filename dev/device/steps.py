"""The steps of dev/device/gpu_check.sh that are Python: each writes one JSON result.

    python dev/device/steps.py env RESULT
    python dev/device/steps.py infer RESULT --device cuda --seconds 60
    python dev/device/steps.py stint RESULT --pack P --run DIR --config CFG --device cuda --seconds 300

They need torch, numpy and h5py (``stint`` also confection), never spaCy. ``infer`` measures
the biLM's tokens/s on the device (float32 and bfloat16) for en_elmo_small and a randomly
initialised biLM of the original ELMo's shape, and its outputs against the same model on CPU
(per layer: max abs difference, largest |value|, min and mean cosine). ``stint`` trains from
a pre-tokenised corpus for the given seconds and checks that the exported model computes, in
``BiLM``, the layers of the training modules.
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy  # noqa: E402
import torch  # noqa: E402

SMALL = REPO / "spacy_elmo" / "models" / "en_elmo_small"
# The original ELMo (Peters et al. 2018; AllenNLP's elmo_2x4096_512_2048cnn_2xhighway options)
ORIGINAL = {"lstm": {"dim": 4096, "projection_dim": 512, "n_layers": 2, "use_skip_connections": True,
                     "cell_clip": 3, "proj_clip": 3},
            "char_cnn": {"embedding": {"dim": 16}, "n_highway": 2, "activation": "relu", "n_characters": 262,
                         "max_characters_per_token": 50,
                         "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]}}


def _write(path: str, result: dict) -> None:
    Path(path).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


def env() -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
            "cpus": os.cpu_count(), "cuda": torch.cuda.is_available(), "machine": platform.machine()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2 ** 30, 1),
                    capability=f"{props.major}.{props.minor}", cuda_version=torch.version.cuda,
                    cudnn=torch.backends.cudnn.version(), bf16=torch.cuda.is_bf16_supported())
    for name in ("h5py", "confection", "spacy", "thinc", "cupy"):
        try:
            info[name] = __import__(name).__version__
        except Exception as err:  # noqa: BLE001 - any import failure is the finding
            info[name] = f"missing ({type(err).__name__})"
    return info


# -- inference: speed and parity ------------------------------------------------------------------

def sentences(n: int, seed: int = 0):
    """n sentences of 8-40 words drawn by Zipf rank from en_elmo_small's vocabulary (deterministic)."""
    words = (SMALL / "vocab.txt").read_text(encoding="utf-8").split("\n")[3:-1]
    rng = numpy.random.default_rng(seed)
    ranks = numpy.minimum(rng.zipf(1.1, size=n * 40), len(words)) - 1
    lengths = rng.integers(8, 41, size=n)
    out, pos = [], 0
    for length in lengths:
        out.append([words[r] for r in ranks[pos: pos + length]])
        pos += length
    return out


def tokens_per_second(bilm, sents, seconds: float, batch_size: int) -> float:
    bilm.embed_sentences(sents[:batch_size], batch_size=batch_size)  # warm-up (kernels, caches)
    n_tok, started, passes = sum(map(len, sents)), time.perf_counter(), 0
    while passes == 0 or time.perf_counter() - started < seconds:
        bilm.embed_sentences(sents, batch_size=batch_size)  # returns numpy: the device has finished
        passes += 1
    return round(n_tok * passes / (time.perf_counter() - started), 1)


def parity(ref, out) -> list:
    """Per layer: max abs difference, largest |ref|, min and mean per-token cosine."""
    rows = []
    for k in range(ref[0].shape[0]):
        a = numpy.concatenate([r[k] for r in ref])
        b = numpy.concatenate([o[k] for o in out])
        cos = (a * b).sum(-1) / numpy.maximum(numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1), 1e-12)
        rows.append({"layer": k, "max_abs_diff": float(numpy.abs(a - b).max()), "max_abs": float(numpy.abs(a).max()),
                     "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean())})
    return rows


def infer_model(name: str, options: dict, state: dict, device: str, seconds: float, sizes: dict) -> dict:
    from spacy_elmo.bilm import BiLM

    sents = sentences(sizes["speed_sentences"])
    check = sents[: sizes["parity_sentences"]]
    cpu = BiLM.from_state_dict(options, state)
    ref = cpu.embed_sentences(check, batch_size=sizes["cpu_batch"])
    result = {"model": name, "parameters": sum(p.numel() for p in cpu.parameters()),
              "cpu_tokens_per_s": tokens_per_second(cpu, check, seconds / 4, sizes["cpu_batch"]),
              "cpu_threads": torch.get_num_threads(), "parity_tokens": sum(map(len, check))}
    for precision in ("float32", "bfloat16"):
        bilm = BiLM.from_state_dict(options, state, precision=precision).to(device)
        out = bilm.embed_sentences(check, batch_size=sizes["device_batch"])
        result[precision] = {"effective": bilm.effective_precision, "parity_vs_cpu": parity(ref, out),
                             "tokens_per_s": tokens_per_second(bilm, sents, seconds / 4, sizes["device_batch"]),
                             "batch_size": sizes["device_batch"], "speed_tokens": sum(map(len, sents))}
        del bilm
    return result


def infer(device: str, seconds: float, small_run: bool) -> dict:
    from spacy_elmo.bilm import BiLM

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # float32 is float32
    sizes = ({"speed_sentences": 32, "parity_sentences": 4, "cpu_batch": 16, "device_batch": 16} if small_run else
             {"speed_sentences": 4096, "parity_sentences": 64, "cpu_batch": 64, "device_batch": 512})
    small = BiLM.from_files(SMALL / "options.json", SMALL / "weights.hdf5")
    models = [("en_elmo_small", small.options, small.state_dict())]
    torch.manual_seed(0)
    original = BiLM(ORIGINAL)
    models.append(("random original-size (2x4096_512_2048cnn_2xhighway)", original.options, original.state_dict()))
    results = []
    for name, options, state in models:
        try:
            results.append(infer_model(name, options, state, device, seconds / len(models), sizes))
        except Exception as err:  # noqa: BLE001 - one model's failure is reported, the other still runs
            results.append({"model": name, "error": f"{type(err).__name__}: {err}"})
    return {"device": device, "tf32": False, "models": results}


# -- pretraining stint ---------------------------------------------------------------------------

def stint(pack: str, run: str, config: str, device: str, seconds: float, threads: int, probe_steps: int,
          final_eval: bool, tokens_per_batch: int = 0) -> dict:
    """Train for about ``seconds``: a probe of ``probe_steps`` steps measures the step time, then
    the run resumes with max_steps set to fill the time, its last 30% decaying (the schedule ends
    inside the stint) and stop_after_minutes as the hard bound. Without ``final_eval`` the run
    only stops on time (no final held-out evaluation: the dry run on CPU)."""
    from spacy_elmo.pretrain.corpus_pack import install_pack
    from spacy_elmo.pretrain.train import pretrain

    deadline = time.time() + seconds
    overrides = install_pack(pack, run)
    overrides.update({"training.device": device, "training.threads": threads, "training.max_steps": 10 ** 7})
    if tokens_per_batch:
        overrides["training.tokens_per_batch"] = tokens_per_batch
    meta = pretrain(run, config, overrides, progress=False, stop_after=probe_steps)
    per_step = meta["training"]["wall_seconds"] / max(1, meta["training"]["steps"])
    left = deadline - time.time() - (25 if final_eval else 5)
    steps = probe_steps + max(1, int(0.9 * left / max(per_step, 1e-6)))
    resume = {"training.max_steps": steps if final_eval else 10 ** 7, "training.decay_steps": int(0.3 * steps),
              "training.stop_after_minutes": max(left, 1) / 60, "training.device": device}
    meta = pretrain(run, None, resume, resume=True, progress=False)
    t = meta["training"]
    return {"probe": {"steps": probe_steps, "seconds_per_step": round(per_step, 4)},
            "planned_steps": steps, "steps": t["steps"], "tokens_seen": t["tokens_seen"],
            "train_seconds": t["wall_seconds"], "tokens_per_second": t["tokens_per_second"],
            "corpus": meta["corpus"], "heldout": meta["heldout"], "path": t["commands"][-1]["path"],
            "options_lstm": meta["options"]["lstm"], "export_check": export_check(run, device)}


def export_check(run: str, device: str) -> dict:
    """The exported model in BiLM (inference paths) against the trained LM's biLM on the path
    training runs (autograd), float32, no TF32, on held-out sentences of the run's corpus: max
    abs difference per layer."""
    from spacy_elmo.bilm import BiLM
    from spacy_elmo.pretrain.export import lm_layers, load_model

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    model = Path(run) / "model"
    lm = load_model(str(model))[0].to(device).eval()
    opts = lm.options()
    bilm = BiLM.from_files(model / "options.json", model / "weights.hdf5").to(device)
    sents = [s for s in sentences(16, seed=1) if s]
    worst = numpy.zeros(lm.bilm.num_layers + 1)
    for sent, got in zip(sents, bilm.embed_sentences(sents)):
        diff = numpy.abs(got - lm_layers(lm, sent).cpu().numpy()).reshape(got.shape[0], -1).max(1)
        worst = numpy.maximum(worst, diff)
    return {"max_abs_diff_per_layer": worst.tolist(), "sentences": len(sents),
            "cell_clip": opts["lstm"]["cell_clip"], "proj_clip": opts["lstm"]["proj_clip"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("env").add_argument("result")
    i = sub.add_parser("infer")
    i.add_argument("result")
    i.add_argument("--device", default="cuda")
    i.add_argument("--seconds", type=float, default=60)
    i.add_argument("--small", action="store_true", help="a few sentences (the dry run on CPU)")
    s = sub.add_parser("stint")
    s.add_argument("result")
    for name in ("--pack", "--run", "--config"):
        s.add_argument(name, required=True)
    s.add_argument("--device", default="cuda")
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--threads", type=int, default=os.cpu_count())
    s.add_argument("--probe-steps", type=int, default=30)
    s.add_argument("--no-final-eval", action="store_true")
    s.add_argument("--tokens-per-batch", type=int, default=0, help="override the config's (0: keep it)")
    args = parser.parse_args(argv)
    if args.cmd == "env":
        _write(args.result, env())
    elif args.cmd == "infer":
        torch.set_num_threads(os.cpu_count() if args.device != "cpu" else torch.get_num_threads())
        _write(args.result, infer(args.device, max(args.seconds, 4.0), args.small))
    else:
        _write(args.result, stint(args.pack, args.run, args.config, args.device, args.seconds, args.threads,
                                  args.probe_steps, not args.no_final_eval, args.tokens_per_batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
