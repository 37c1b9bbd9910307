"""Make ``nlp.pipe(texts, n_process=k)`` work: torch in forked worker processes.

spaCy's multiprocessing forks workers (on Linux). With torch's OpenMP backend, a forked child
hangs in its first parallel op when the parent has already run one (the OpenMP thread pool does
not survive ``fork``). So every child forked after the first biLM shim is created (a pipeline
with an ``elmo`` component: :class:`~.layers.bilm_shim.BiLMShim` calls :func:`register`) runs
torch with one intra-op thread (``torch.set_num_threads(1)``), which is also the right setting
when k processes share the cores. A child that wants more threads can call
``torch.set_num_threads`` itself before its first torch op. Importing this module does nothing.

CUDA does not survive ``fork`` either: a forked worker of a pipeline whose biLM is on a GPU
refuses to run it (:func:`check_device`) with one clear error, which spaCy re-raises in the parent.
"""
import os

import torch

_REGISTERED = False
_FORKED = False


def _single_thread_in_child() -> None:
    global _FORKED
    _FORKED = True
    torch.set_num_threads(1)


def check_device(device: torch.device) -> None:
    """Raise ElmoConfigError in a forked child (``nlp.pipe(n_process=k)``, k > 1) when the biLM is
    on a CUDA device, which a forked process cannot use; do nothing otherwise."""
    if _FORKED and torch.device(device).type == "cuda":
        from .loading import ElmoConfigError

        raise ElmoConfigError(f"the elmo component's biLM is on {device}: nlp.pipe(n_process=k) forks worker "
                              "processes, which cannot use CUDA; on a GPU use n_process=1 (the biLM batches on "
                              "the device), or several processes on CPU (spacy.require_cpu() first)",
                              key="n_process", path=None)


def register() -> None:
    """Install the at-fork hook (once per process; later calls do nothing)."""
    global _REGISTERED
    if not _REGISTERED and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_single_thread_in_child)
        _REGISTERED = True
