"""Make ``nlp.pipe(texts, n_process=k)`` work: torch in forked worker processes.

spaCy's multiprocessing forks workers (on Linux). With torch's OpenMP backend, a forked child
hangs in its first parallel op when the parent has already run one (the OpenMP thread pool does
not survive ``fork``). So every child forked after the first biLM shim is created (a pipeline
with an ``elmo`` component: :class:`~.layers.bilm_shim.BiLMShim` calls :func:`register`) runs
torch with one intra-op thread (``torch.set_num_threads(1)``), which is also the right setting
when k processes share the cores. A child that wants more threads can call
``torch.set_num_threads`` itself before its first torch op. Importing this module does nothing.
"""
import os

import torch

_REGISTERED = False


def _single_thread_in_child() -> None:
    torch.set_num_threads(1)


def register() -> None:
    """Install the at-fork hook (once per process; later calls do nothing)."""
    global _REGISTERED
    if not _REGISTERED and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_single_thread_in_child)
        _REGISTERED = True
