"""What the training machine can do: ``[training] device`` and ``[training] precision``.

Device: "cpu" (default), "cuda" or "cuda:N". A CUDA device that torch cannot see is a ElmoConfigError (a
ValueError) naming the setting; checkpoints are saved from and loaded to CPU memory, so a run started on one
device resumes on another.

Precision: which number format the pretraining's matrix products use.

- ``"float32"``: everything in float32.
- ``"bfloat16"``: the products of the LSTMs' training path (``ElmoLstm.train_gemm_dtype``,
  :mod:`spacy_elmo.bilm.lstm_train`), the char CNN and the softmax read bfloat16 operands and
  accumulate in float32; parameters, optimizer state, cell states and the exported weights stay
  float32. On CPU this pays only where the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX):
  measured on a Zen 4 (AVX512-BF16), a bfloat16 GEMM ran 2-3x a float32 one on ELMo's shapes.
- ``"auto"`` (default): bfloat16 where it pays (a CUDA device, or a CPU with AVX512-BF16 / AMX),
  float32 otherwise.

An explicit "bfloat16" on a CPU without native support falls back to float32 with a warning
(emulated bfloat16 is slower than float32). The choice and its reason go into meta.json.
"""
import warnings
from typing import Tuple

import torch

# shared with inference (BiLM(precision=...)); bilm/ must not import from pretrain/
from ..bilm.precision import cpu_bf16_capability, cpu_name  # noqa: F401 (re-exported)
from ..errors import ElmoConfigError

PRECISIONS = ("auto", "float32", "bfloat16")


def resolve_device(name: str) -> torch.device:
    """torch.device for [training] device; ElmoConfigError (a ValueError) naming the setting if it is not a device
    name or not available here."""
    where = f"[training] device = {name!r}"
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise ElmoConfigError(f"{where}: not a device name; expected 'cpu', 'cuda' or 'cuda:N'") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ElmoConfigError(f"{where}: no CUDA device is available here (torch {torch.__version__}); use "
                                  "'cpu'")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ElmoConfigError(f"{where}: only {torch.cuda.device_count()} CUDA device(s) here")
    elif device.type != "cpu":
        raise ElmoConfigError(f"{where}: only 'cpu' and 'cuda' devices are supported")
    return device


def resolve_precision(requested: str, device: str = "cpu") -> Tuple[torch.dtype, str]:
    """(dtype of the products, a one-line reason) for [training] precision on device.

    Raises ElmoConfigError (a ValueError) for a value not in PRECISIONS.
    """
    if requested not in PRECISIONS:
        raise ElmoConfigError(f"[training] precision = {requested!r}: expected one of {', '.join(PRECISIONS)}")
    if requested == "float32":
        return torch.float32, "float32 (as configured)"
    if device.startswith("cuda"):
        return torch.bfloat16, f"bfloat16 on {device} ({requested})"
    cap = cpu_bf16_capability()
    if cap:
        return torch.bfloat16, f"bfloat16 products on CPU ({cap}; {requested})"
    if requested == "bfloat16":
        warnings.warn("[training] precision = 'bfloat16': this CPU has no AVX512-BF16 or AMX, where "
                      "bfloat16 is slower than float32; using float32")
    return torch.float32, "float32 (CPU without AVX512-BF16 / AMX)"
