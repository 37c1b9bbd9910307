"""Make ``nlp.pipe(texts, n_process=k)`` work: torch in forked worker processes.

spaCy's multiprocessing forks workers (on Linux). With torch's OpenMP backend, a forked child
hangs in its first parallel op when the parent has already run one (the OpenMP thread pool does
not survive ``fork``). So every child forked after ``spacy_elmo.pipeline`` is imported runs torch
with one intra-op thread (``torch.set_num_threads(1)``), which is also the right setting when k
processes share the cores. A child that wants more threads can call ``torch.set_num_threads``
itself before its first torch op.
"""
import os

import torch

_REGISTERED = False


def _single_thread_in_child() -> None:
    torch.set_num_threads(1)


def register() -> None:
    global _REGISTERED
    if not _REGISTERED and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_single_thread_in_child)
        _REGISTERED = True
