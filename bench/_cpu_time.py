"""CPU-time measurement shared by the cost benches (not a bench itself): pinned threads, interleaved runs, medians.

Call :func:`pin_threads` before numpy/torch are imported (and only when run as a script: it changes the
process): it sets the BLAS/OpenMP thread counts through the environment, which those libraries read at import.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "LMMS_EVAL_UNIFY_DECODE_WORKERS")
"""One thread each: BLAS/OpenMP pools and our image-decode pool (CPU time then counts one thread's work)."""


def pin_threads() -> None:
    """One compute thread: the environment (read by numpy's BLAS and torch at import) and torch itself."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or inter-op work already ran: nothing of ours runs on that pool
        pass


def cpu_seconds(work: Callable[[], object]) -> tuple[float, object]:
    """CPU time of this process (all threads) spent in ``work()``, and what it returned."""
    start = time.process_time()
    value = work()
    return time.process_time() - start, value


def interleaved_cpu_times(
    sides: Mapping[str, Callable[[], object]], repeats: int, warmup: int = 1
) -> tuple[dict[str, list[float]], dict[str, object]]:
    """``warmup`` untimed rounds (first-use costs: lazy imports, tables, thread pools), then ``repeats`` rounds
    that run every side once, in turn, so that all see the same machine load: the CPU seconds of each timed
    run per side, and each side's last value."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    values: dict[str, object] = {}
    for round_ in range(warmup + repeats):
        for name, work in sides.items():
            seconds, values[name] = cpu_seconds(work)
            if round_ >= warmup:
                times[name].append(seconds)
    return times, values


def median(values: list[float]) -> float:
    return statistics.median(values)
