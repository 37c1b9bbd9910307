"""Reduced-precision inference for the biLM: what ``BiLM(..., precision=...)`` runs on each device.

``precision`` is ``"float32"`` (default: exact, the parity-tested path), ``"bfloat16"`` or
``"int8"`` (opt-in, inference only; int8 is CPU-only and described in :mod:`.int8`). With
``"bfloat16"``:

- CPU with native bfloat16 products (AVX512-BF16 or AMX, and a oneDNN build that uses them): the
  matrix products (char-CNN convolutions as im2col GEMMs, highway and projection layers, the
  LSTMs' input, recurrent and projection products) read bfloat16 copies of their operands (the
  weights packed once for oneDNN) and accumulate in float32. Their results are rounded to
  bfloat16 once, then everything element-wise (biases, gates, cell states, clipping, residuals)
  runs in float32, and the outputs are float32.
- CPU without native support: float32, with one warning (emulated bfloat16 is slower than
  float32 there).
- CUDA: ``torch.autocast`` with bfloat16 (float16 where the GPU has no bfloat16) for the char CNN,
  and the LSTMs' products on bfloat16 / float16 copies of their operands, float32 elsewhere
  (the LSTM's products write into buffers, which autocast does not cover).
- Other devices: float32, with a warning.

Where oneDNN is unavailable or turned off (:func:`.onednn.set_enabled`) on a bfloat16-capable CPU,
the CUDA path runs on the CPU (autocast for the char CNN, ``bmm`` on bfloat16 copies): slower than
the oneDNN one, but the same numerics class; the tests use it to exercise the GPU code on CPU.

With autograd (fine-tuning) the biLM always runs float32.

The capability checks (:func:`cpu_bf16_capability`, :func:`cpu_name`) are shared with the
pretraining code (``spacy_elmo.pretrain.hardware``).
"""
import warnings
from typing import NamedTuple, Optional

import torch

from ..errors import ElmoConfigError
from . import int8

PRECISIONS = ("float32", "bfloat16", "int8")


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), for meta.json and benchmarks."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _cpuinfo_flags() -> set:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_bf16_capability() -> str:
    """'amx_bf16', 'avx512_bf16' or '' (none) for this CPU: as torch reports it
    (``torch.cpu.get_capabilities()``), else from the /proc/cpuinfo flags."""
    caps = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else None
    if caps is None:
        caps = {name: True for name in _cpuinfo_flags()}
    for name in ("amx_bf16", "avx512_bf16"):
        if caps.get(name):
            return name
    return ""


def cpu_int8_capability() -> str:
    """'amx_int8', 'avx512_vnni', 'avx_vnni' or '' (none): this CPU's int8 dot-product
    instructions, as torch reports them, else from the /proc/cpuinfo flags."""
    caps = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else None
    if caps is None:
        caps = {name: True for name in _cpuinfo_flags()}
    for name in ("amx_int8", "avx512_vnni", "avx_vnni"):
        if caps.get(name):
            return name
    return ""


def onednn_bf16_supported() -> bool:
    """True when torch's oneDNN build runs bfloat16 products on this CPU."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def check_precision(value: object, where: str = "precision") -> str:
    """``value`` if it is one of PRECISIONS, else ElmoConfigError (a ValueError), one line naming
    ``where``: a setting reads ``BiLM precision = 'half': expected one of float32, bfloat16,
    int8``, a command-line option (``where`` starts with ``--``) ``--precision 'half': expected
    one of float32, bfloat16, int8``."""
    if value not in PRECISIONS:
        given = f"{where} {value!r}" if where.startswith("--") else f"{where} = {value!r}"
        raise ElmoConfigError(f"{given}: expected one of {', '.join(PRECISIONS)}")
    return value


class Resolved(NamedTuple):
    """What a precision setting runs as on one device. ``gemm_dtype``: the dtype of the matrix
    products' operands (torch.float32 = the exact path; torch.int8 = :mod:`.int8`); ``name``:
    "float32", "bfloat16", "float16" or "int8"; ``reason``: one line, for logs and benchmarks."""

    gemm_dtype: torch.dtype
    name: str
    reason: str


def resolve(precision: str, device: Optional[torch.device] = None) -> Resolved:
    """Resolve a checked ``precision`` for ``device`` (default CPU). Warns (once per call) when
    "bfloat16" or "int8" falls back to float32. Raises ValueError for a value not in PRECISIONS."""
    check_precision(precision)
    device = torch.device(device if device is not None else "cpu")
    if precision == "float32":
        return Resolved(torch.float32, "float32", "float32 (as configured)")
    if precision == "int8":
        return _resolve_int8(device)
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return Resolved(torch.bfloat16, "bfloat16", f"bfloat16 autocast on {device}")
        return Resolved(torch.float16, "float16", f"float16 autocast on {device} (no bfloat16 on this GPU)")
    if device.type == "cpu":
        cap = cpu_bf16_capability()
        if cap and onednn_bf16_supported():
            return Resolved(torch.bfloat16, "bfloat16", f"bfloat16 products on CPU ({cap})")
        why = ("this CPU has no AVX512-BF16 or AMX, where bfloat16 products are slower than float32"
               if not cap else f"torch's oneDNN does not run bfloat16 on this CPU ({cap})")
    else:
        why = f"no reduced-precision path for device {device.type!r}"
    warnings.warn(f"spacy_elmo: precision = 'bfloat16' falls back to float32: {why} ({cpu_name()})",
                  RuntimeWarning, stacklevel=3)
    return Resolved(torch.float32, "float32", f"float32 (bfloat16 requested; {why})")


def _resolve_int8(device: torch.device) -> Resolved:
    """"int8" (:mod:`.int8`) on a CPU with int8 dot-product instructions and torch's oneDNN int8
    ops; else float32 with one warning."""
    cap = cpu_int8_capability() if device.type == "cpu" else ""
    if cap and int8.ops_available():
        return Resolved(torch.int8, "int8", f"int8 products on CPU ({cap})")
    if device.type != "cpu":
        why = f"the int8 path is CPU-only (device {device.type!r})"
    elif not cap:
        why = "this CPU has no int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX-INT8)"
    else:
        why = f"torch {torch.__version__} lacks oneDNN's int8 linear ops, or oneDNN is off ({cap})"
    warnings.warn(f"spacy_elmo: precision = 'int8' falls back to float32: {why} ({cpu_name()})",
                  RuntimeWarning, stacklevel=4)
    return Resolved(torch.float32, "float32", f"float32 (int8 requested; {why})")
