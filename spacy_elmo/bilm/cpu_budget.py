"""How many intra-op threads torch should use for the next biLM call, given who else is busy.

Why: torch's OpenMP threads meet at a barrier after every parallel operation, so a call runs at
the pace of its slowest thread. When another process keeps one of our cores busy, the thread
placed there gets a time slice now and then, and every operation waits for it: on 2 cores with
one core loaded, 2 threads ran the pipeline 3-20x slower than 1 thread
(``benchmarks/bench_shared_cores.py``). Fewer threads than free cores costs at most the parallel
speed-up (< 2x here); more threads than free cores costs far more. So the policy is conservative.

The policy (``threads = "auto"``): before a call, and at most once per ``interval`` seconds,

    free = usable - busy_others
    threads = max(1, min(cap, floor(free + 0.1)))

- ``usable``: the CPUs this process may run on (``os.sched_getaffinity``), capped by a cgroup CPU
  quota (``/sys/fs/cgroup/cpu.max``, or cgroup v1 ``cpu.cfs_quota_us``);
- ``busy_others``: CPU-seconds per second that other processes spent on those CPUs since the last
  sample: the busy time of those CPUs in ``/proc/stat`` minus this process's own time
  (``/proc/self/stat``);
- ``cap``: ``torch.get_num_threads()`` at the call (torch's default, what the user set, or 1 in
  a worker of ``nlp.pipe(n_process=k)``), so the policy only ever lowers it.

The first sample is taken when the budget is made, and the first decision at the first call at
least 0.05 s later (in a pipeline, loading the model lies between); until then, the cap.

Where ``/proc`` is unreadable (not Linux), ``busy_others`` is 0 and the policy is just the cap.
An integer ``threads`` fixes the count; ``SPACY_ELMO_THREADS`` (an integer or ``auto``)
overrides the setting for every budget in the process. The previous thread count is restored after
each call, so torch code around the biLM is unaffected.
"""
import math
import os
import time
from typing import Optional, Tuple, Union

import torch

from ..errors import ElmoConfigError

ENV = "SPACY_ELMO_THREADS"
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_threads(value: Union[int, str, None], where: str = "threads") -> Union[int, str]:
    """``"auto"`` or a positive int from a config value or the environment variable; raises
    ValueError naming ``where`` for anything else."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return "auto"
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ElmoConfigError(f"{where} = {value!r}: expected \"auto\" or a positive integer") from None
    if n < 1 or (isinstance(value, float) and value != n):
        raise ElmoConfigError(f"{where} = {value!r}: expected \"auto\" or a positive integer")
    return n


def _cgroup_quota() -> Optional[float]:
    """CPUs allowed by a cgroup quota (v2 ``cpu.max`` or v1 ``cfs_quota_us``), or None."""
    for path, split in (("/sys/fs/cgroup/cpu.max", None), ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "v1")):
        try:
            with open(path) as f:
                text = f.read().split()
            if split == "v1":
                with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
                    text = text + f.read().split()
        except (OSError, ValueError):
            continue
        if len(text) >= 2 and text[0] not in ("max", "-1"):
            return max(float(text[0]) / float(text[1]), 1.0)
    return None


def usable_cpus() -> Tuple[set, float]:
    """(the CPU ids this process may run on, how many of them it may use at once)."""
    cpus = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    quota = _cgroup_quota()
    return cpus, min(float(len(cpus)), quota) if quota else float(len(cpus))


# /proc/cpuinfo flags worth naming next to a speed number: torch's CPU kernels depend on them
_CPU_FLAGS = (("avx512f", "AVX-512"), ("avx512_vnni", "VNNI"), ("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX"))


def cpu_name(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU a number was measured on, for records: the first ``model name`` of ``cpuinfo``
    (without trademark signs) with the vector extensions torch's kernels use, e.g. ``"AMD EPYC 9R14 96-Core Processor
    (AVX-512, AVX512-BF16)"``; ``platform.processor()`` (or ``"unknown CPU"``) where the file
    cannot be read."""
    import platform

    try:
        with open(cpuinfo, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return platform.processor() or "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                 platform.processor() or "unknown CPU")
    model = " ".join(model.replace("(R)", "").replace("(TM)", "").split())
    flags = next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")), set())
    named = [name for flag, name in _CPU_FLAGS if flag in flags]
    return f"{model} ({', '.join(named)})" if named else model


def _cpu_ticks(cpus: set) -> Optional[Tuple[int, int]]:
    """(busy ticks of the given CPUs, this process's own ticks) from /proc, or None."""
    try:
        busy = 0
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu") and line[3].isdigit():
                    fields = line.split()
                    if int(fields[0][3:]) in cpus:
                        v = [int(x) for x in fields[1:]]
                        busy += sum(v[:8]) - v[3] - v[4]  # all but idle and iowait (guest is in user)
        with open("/proc/self/stat") as f:
            stat = f.read().rsplit(")", 1)[1].split()
        return busy, int(stat[11]) + int(stat[12])  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


class ThreadBudget:
    """A context manager that sets torch's intra-op threads for one biLM call and restores them.

    threads: ``"auto"`` (the policy in the module docstring) or a positive int; the environment
    variable ``SPACY_ELMO_THREADS`` overrides it. interval: seconds between load samples (at
    least 0.05: /proc counts in 10 ms ticks).
    Raises ValueError for a bad ``threads`` (or environment value).
    """

    def __init__(self, threads: Union[int, str] = "auto", interval: float = 1.0) -> None:
        env = os.environ.get(ENV)
        self.threads = parse_threads(env, ENV) if env else parse_threads(threads)
        self.interval = float(interval)
        self._cpus, self._usable = usable_cpus()
        self._last = (time.monotonic(), _cpu_ticks(self._cpus))
        self._wait = 0.05  # the first decision needs only a short sample
        self._free: Optional[float] = None
        self._saved: list = []

    def busy_others(self) -> Optional[float]:
        """CPUs kept busy by other processes since the last sample (resampled at most once per
        interval; None until an interval has passed or where /proc is unreadable)."""
        now = time.monotonic()
        t0, ticks0 = self._last
        if now - t0 < self._wait:
            return None
        ticks = _cpu_ticks(self._cpus)
        self._last, self._wait = (now, ticks), max(self.interval, 0.05)  # ticks are 10 ms
        if ticks is None or ticks0 is None:
            return None
        others = (ticks[0] - ticks0[0]) - (ticks[1] - ticks0[1])
        return max(0.0, others / _CLK_TCK / (now - t0))

    def choose(self) -> int:
        """The thread count for the next call."""
        if self.threads != "auto":
            return int(self.threads)
        cap = torch.get_num_threads()
        if cap == 1:
            return 1  # nothing to lower: the load is not sampled (no /proc reads on this call)
        others = self.busy_others()
        if others is not None:
            self._free = self._usable - others
        if self._free is None:
            return min(cap, max(1, int(self._usable)))
        return max(1, min(cap, int(math.floor(self._free + 0.1))))

    def __enter__(self) -> int:
        n = self.choose()
        self._saved.append(torch.get_num_threads())
        if n != self._saved[-1]:
            torch.set_num_threads(n)
        return n

    def __exit__(self, *exc) -> None:
        prev = self._saved.pop()
        if torch.get_num_threads() != prev:
            torch.set_num_threads(prev)
