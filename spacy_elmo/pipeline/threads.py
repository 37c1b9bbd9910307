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

An error in the parent (the input iterator raises, a worker's error is re-raised) makes spaCy
close its ends of the result pipes and wait for the workers, expecting a worker that is still
sending to get ``BrokenPipeError`` and exit. But each worker is forked while the parent holds
the read ends of *every* worker's result pipe, and keeps copies of them: the pipe never breaks,
and a worker whose pending result does not fit the pipe buffer (64 KiB on Linux) blocks in
``send`` for ever, and the parent with it in ``join``. spaCy's own Docs are small, but the layers
on ``doc._.elmo`` are large (3 x 1024 float32 per token for ``en_elmo_small``: six tokens fill the
buffer). So the same hook closes, in the worker, those inherited read ends (:func:`_close_result_readers`),
which the worker never reads: then the parent's error reaches the caller as without elmo.
"""
import os
import sys
from multiprocessing.connection import Connection

import torch

_REGISTERED = False
_FORKED = False


# spaCy's Language._multiprocessing_pipe, and its local with the read ends of the workers' result pipes
_SPACY_PIPE = ("spacy.language", "_multiprocessing_pipe", "bytedocs_recv_ch")


def _close_result_readers() -> None:
    """In a worker forked by spaCy's ``nlp.pipe(n_process=k)`` (the forking frame is on this
    process's stack), close the worker's copies of the read ends of the result pipes; elsewhere
    do nothing."""
    module, function, local = _SPACY_PIPE
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == function and frame.f_globals.get("__name__") == module:
            for conn in frame.f_locals.get(local) or ():
                if isinstance(conn, Connection) and conn.readable and not conn.writable and not conn.closed:
                    conn.close()
            return
        frame = frame.f_back


def _single_thread_in_child() -> None:
    global _FORKED
    _FORKED = True
    torch.set_num_threads(1)
    _close_result_readers()


def check_device(device: torch.device) -> None:
    """Raise ElmoConfigError in a forked child (``nlp.pipe(n_process=k)``, k > 1) when the biLM is
    on a CUDA device, which a forked process cannot use; do nothing otherwise."""
    if _FORKED and torch.device(device).type == "cuda":
        from ..errors import ElmoConfigError

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
