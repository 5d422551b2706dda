"""Run many independent training runs at once (methods x seeds) in worker processes.

On one GPU, several small runs (a ResNet-32 step is launch-bound, not FLOP-bound) overlap
well when each has its own process and CUDA context; on a CPU the workers share the cores.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

__all__ = ["run_parallel"]


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def run_parallel(fn: Callable[..., dict], configs: Sequence[dict], *, workers: int | None = None,
                 threads_per_worker: int = 1) -> list[dict]:
    """Call ``fn(**config)`` for every config in ``workers`` processes; results in input order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled into the workers) returning a small dict.
    configs : sequence of dict
        Keyword arguments of each run (e.g. method and seed).
    workers : int, optional
        Processes at once; defaults to ``min(len(configs), os.cpu_count())``. ``1`` runs
        in this process, one after another (no pickling), which is the reference order.
    threads_per_worker : int
        ``torch.set_num_threads`` in each worker (avoid oversubscribing the cores).

    Returns
    -------
    list of dict, one per config.

    Raises
    ------
    ValueError
        If ``workers < 1``. Any exception of a run is re-raised here.
    """
    configs = list(configs)
    workers = min(len(configs), os.cpu_count() or 1) if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}.")
    if workers == 1 or len(configs) <= 1:
        return [fn(**c) for c in configs]
    ctx = mp.get_context("spawn")  # CUDA cannot be forked
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(threads_per_worker,)) as pool:
        futures = [pool.submit(fn, **c) for c in configs]
        return [f.result() for f in futures]
