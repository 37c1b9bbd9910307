"""Native (C++) kernels for training: the recurrences of the biLM's LSTM under autograd
(:mod:`.lstm_train`), and, for the pretraining (``spacy_elmo.pretrain``), the softmax's
cross-entropy and the char CNN's max over positions; built on first use with the machine's C++
compiler.

Torch ops (``torch.ops.spacy_elmo_lstmp``); for the LSTM, one call each per layer and pass:

- ``elmo_forward(x, batch_sizes, wih_t, bias, whh_t, whr_t, cell_clip, proj_clip)``: the input
  projection of all packed rows (one product), then per step of the packing (active batch
  shrinking, see :mod:`.packing`) the recurrent product, the element-wise gates (bilm-tf's LSTM
  cell, gates i, f, o, j, cell clipping) and the projection with its clipping (``at::bmm_out`` on
  contiguous per-step blocks: a strided batch would be copied);
- ``elmo_backward(d_out, d_c_last, batch_sizes, acts, cs, hs_raw, whh, whr, cell_clip,
  proj_clip)``: the reverse recurrence (per step two products and the gate derivatives); the
  weight gradients stay one product each in :mod:`.lstm_train`;

and, for the pretraining's softmax, ``cross_entropy_rows(logits, target, scale, grad)``: -log
softmax per row in one pass over each row, overwriting the logits with their gradient.

The LSTM ops compute what the Python loop of :mod:`.lstm_train` with
:func:`.lstm_train.cell_forward` / :func:`.lstm_train.cell_backward` computes, in the same dtypes
(products in float32 or bfloat16, element-wise steps, cell states and gate activations in
float32), with two differences: ``exp`` is a polynomial (relative error < 2e-7; sigmoid and tanh are written with
it), and the large buffers are reused from call to call instead of freshly allocated (fresh
pages cost ~40 ms of system time per layer and step at the shipped shape). Why (measured on a
Zen 4, 1 thread, ``benchmarks/README.md``): the torch.compile'd cells ran at ~1.4 ns per gate
element (Sleef's exp and tanh), and each Python step cost tens of microseconds of dispatch.

The C++ lives in ``csrc/`` beside this module (package data: ``spacy_elmo_lstmp.cpp``, the one
translation unit, and the headers it includes); this module is its compiler driver and loader.
The library is compiled once per machine, torch version and source (``-O3 -march=native``,
~25 s) into ``<kernels>/<key>/`` (``<kernels>``: :func:`kernels_dir`, ``$SPACY_ELMO_KERNELS`` or
``~/.cache/spacy-elmo/_kernels``) and loaded through :mod:`.kernel_cache`, which creates that folder
private (mode 0700), records the library's sha256 beside it, and loads a cached library only after
checking its owner, its mode, its folder's and its digest (a library planted in a folder others can
write is never loaded; it is built again in a private folder). :func:`lstmp_ops`
returns None, with a warning, where that fails (no compiler, another platform, no ``csrc/``);
``SPACY_ELMO_NATIVE=0`` (or false / no / off) turns it off. Training then runs
torch.compile'd or eager cells (:func:`.lstm_train.recurrence`) and the unfused loss.
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Dict, Optional

import torch

from ..errors import ElmoBuildError, ElmoConfigError
from . import kernel_cache

FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd", "-std=c++17", "-shared",
         "-fPIC", "-w"]
BUILD_TIMEOUT_S = 600
_LOADED: dict = {}

CSRC = Path(__file__).resolve().parent / "csrc"  # the C++ sources (package data)
MAIN = "spacy_elmo_lstmp.cpp"  # the one translation unit; it includes the headers beside it
KERNELS_ENV = "SPACY_ELMO_KERNELS"


def sources() -> Dict[str, str]:
    """{file name: text} of the C++ sources in :data:`CSRC` (``*.cpp``, ``*.h``), sorted by name.
    Raises ElmoBuildError (a RuntimeError) if :data:`MAIN` is missing (an install without the package data)."""
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(CSRC.glob("*")) if p.suffix in (".cpp", ".h")}
    if MAIN not in files:
        raise ElmoBuildError(f"{CSRC / MAIN} not found (the package was installed without its C++ sources)")
    return files


def kernels_dir() -> Path:
    """Where built kernels are kept: ``$SPACY_ELMO_KERNELS`` if set, else ``_kernels`` in
    ``platformdirs.user_cache_dir("spacy-elmo")`` (``~/.cache/spacy-elmo/_kernels`` on Linux; the
    leading ``_`` keeps it out of the model listing). Independent of ``$SPACY_ELMO_CACHE`` (models)."""
    env = os.environ.get(KERNELS_ENV)
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    import platformdirs

    return Path(platformdirs.user_cache_dir("spacy-elmo", appauthor=False)) / "_kernels"


def _compiler() -> Optional[str]:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


def _cpu_identity() -> str:
    """The CPU's model name and flags: -march=native code is built per CPU."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            lines = [line for line in f if line.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        import platform

        return platform.processor() + platform.machine()


def _command(cxx: str, src: Path, out: Path) -> list:
    root = Path(torch.__file__).parent
    lib = root / "lib"
    includes = [root / "include", root / "include" / "torch" / "csrc" / "api" / "include"]
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return [cxx, *FLAGS, f"-D_GLIBCXX_USE_CXX11_ABI={abi}", *[f"-I{p}" for p in includes], str(src), "-o", str(out),
            f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}"]


LIBRARY = "spacy_elmo_lstmp.so"


def _key(cxx: str, files: Dict[str, str]) -> str:
    """The cache entry's name: a hash of the sources, flags, torch, compiler and CPU."""
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    texts = [f"{name}\n{text}" for name, text in files.items()]
    return hashlib.sha256("\0".join([*texts, " ".join(FLAGS), torch.__version__, cxx, version, sys.platform,
                                       _cpu_identity()]).encode()).hexdigest()[:16]


def _compile(cxx: str, files: Dict[str, str], scratch: Path) -> Path:
    """Compile ``files`` in the empty folder ``scratch``; returns the built library (which
    :func:`.kernel_cache.load` checks in and moves into place)."""
    for name, text in files.items():  # the sources hashed into the key, whatever happens to CSRC meanwhile
        (scratch / name).write_text(text, encoding="utf-8")
    out = scratch / LIBRARY
    done = subprocess.run(_command(cxx, scratch / MAIN, out), capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        raise ElmoBuildError(f"{cxx} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return out


def _load_library() -> Path:
    """Build (where the kernel cache has no trusted copy for these sources yet) and load the
    library through :func:`.kernel_cache.load`; returns the folder it was loaded from."""
    cxx = _compiler()
    if not cxx:
        raise ElmoBuildError("no C++ compiler found (set CXX)")
    files = sources()
    folder = kernels_dir() / _key(cxx, files)
    return kernel_cache.load(folder, LIBRARY, lambda scratch: _compile(cxx, files, scratch), _dlopen)


def _dlopen(path: str) -> None:
    """Load the library at ``path`` (``/proc/self/fd/N``; its constructors register the ops).
    Not ``torch.ops.load_library``: that resolves the fd's link back to the file's path."""
    ctypes.CDLL(path)


OFF = ("0", "false", "no", "off")


def enabled() -> bool:
    """False where ``SPACY_ELMO_NATIVE`` is 0 / false / no / off (any case); ElmoConfigError (a
    ValueError) for a value that is neither that nor 1 / true / yes / on / empty."""
    value = os.environ.get("SPACY_ELMO_NATIVE", "").strip().lower()
    if value not in OFF + ("", "1", "true", "yes", "on"):
        raise ElmoConfigError(f"SPACY_ELMO_NATIVE={value!r}: expected 0 / false / no / off or 1 / true / yes / on")
    return value not in OFF


def lstmp_ops():
    """``torch.ops.spacy_elmo_lstmp`` (built and loaded once per process), or None with a warning
    where it cannot be built or loaded here, or where ``SPACY_ELMO_NATIVE=0`` (see :func:`enabled`)."""
    if "ops" not in _LOADED:
        ops = None
        if enabled():
            try:
                _load_library()
                ops = torch.ops.spacy_elmo_lstmp
            except Exception as err:  # noqa: BLE001 - any build or load failure means: run without
                first = str(err).splitlines()[0][:300] if str(err) else ""
                warnings.warn(f"the native LSTM kernels are unavailable ({type(err).__name__}: {first}); "
                              "using torch.compile'd or eager cells")
        _LOADED["ops"] = ops
    return _LOADED["ops"]
