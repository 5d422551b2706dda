"""Run the independent runs of a comparison (methods x seeds) at once, in worker processes.

Every run of a comparison table is independent, so they can run side by side. On a CPU each
worker process uses one thread and the runs spread over the cores; a run in a worker gives
bit-for-bit the numbers of the same run alone in a one-thread process (same operations in the
same order; only the process differs). On one GPU the workers share the device: each holds
its own CUDA context and their small kernels overlap (a ResNet-32 step at batch 128 is bound
by kernel launches, not by arithmetic), so ``workers`` of 4-8 fill the device.

The pool is joblib's ``loky`` executor: the workers are fresh interpreters (safe with CUDA
and with the threads of a Jupyter kernel), they stay alive between calls (a chapter pays
their start-up once), and functions or lambdas defined in a notebook travel to them by value
(cloudpickle). The run function itself, :func:`fit_run`, lives in this package.

A fresh interpreter starts with torch's defaults, not the caller's: every call therefore carries
the caller's global torch settings (:class:`_TorchSettings`: default dtype, deterministic
algorithms, float32 matmul precision, TF32 and reduced-precision switches, cuDNN flags, and the
``NCBOOK_*`` and ``CUBLAS_WORKSPACE_CONFIG`` environment variables) and sets them in the worker
before the run, so that a run in a worker is the run of the caller's process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import nn

from .._validation import check_bool, check_callable, check_int
from ..profiles import show_progress, usable_cores
from ._loop import History, _check_model, evaluate, fit

__all__ = ["fit_run", "run_parallel"]


GPU_WORKERS = 8  # processes sharing one GPU by default (each holds a CUDA context, ~0.5 GB)


def _default_workers() -> int:
    """``$NCBOOK_WORKERS`` if set, else the usable cores (at most ``GPU_WORKERS`` with CUDA)."""
    value = os.environ.get("NCBOOK_WORKERS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"NCBOOK_WORKERS must be a positive integer (processes per comparison); got {value!r}.")
        return int(value)
    cores = usable_cores()
    return min(cores, GPU_WORKERS) if torch.cuda.is_available() else cores


_ENV_PREFIXES = ("NCBOOK_",)
_ENV_NAMES = ("CUBLAS_WORKSPACE_CONFIG",)


# where torch has the per-backend fp32 precision API (2.9 on), it holds the TF32/bf16 choices; reading
# or writing the older flags (allow_tf32, set_float32_matmul_precision) after it raises, so only one is used
_PRECISION_BACKENDS = ("", "cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn", "mkldnn", "mkldnn.matmul",
                       "mkldnn.conv", "mkldnn.rnn")


def _backend(path: str):
    obj = torch.backends
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part, None)
    return obj


def _new_precision_api() -> bool:
    return hasattr(torch.backends.cuda.matmul, "fp32_precision")


@dataclass(frozen=True)
class _TorchSettings:
    """The global torch state a run depends on, captured in the caller and applied in a worker."""

    default_dtype: torch.dtype
    deterministic: bool
    deterministic_warn_only: bool
    precision: tuple  # (backend, fp32_precision) pairs, or (("legacy", matmul precision, tf32 flags),)
    cuda_matmul_fp16_reduced: bool
    cuda_matmul_bf16_reduced: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    env: tuple

    @classmethod
    def capture(cls) -> "_TorchSettings":
        matmul = torch.backends.cuda.matmul
        if _new_precision_api():
            precision = tuple((path, _backend(path).fp32_precision) for path in _PRECISION_BACKENDS
                              if hasattr(_backend(path), "fp32_precision"))
        else:
            precision = (("legacy", torch.get_float32_matmul_precision(), matmul.allow_tf32, torch.backends.cudnn.allow_tf32),)
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES))
        return cls(
            default_dtype=torch.get_default_dtype(), deterministic=torch.are_deterministic_algorithms_enabled(),
            deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(), precision=precision,
            cuda_matmul_fp16_reduced=matmul.allow_fp16_reduced_precision_reduction,
            cuda_matmul_bf16_reduced=matmul.allow_bf16_reduced_precision_reduction,
            cudnn_deterministic=torch.backends.cudnn.deterministic, cudnn_benchmark=torch.backends.cudnn.benchmark,
            env=env)

    def apply(self) -> None:
        for key in [k for k in os.environ if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES]:
            del os.environ[key]
        os.environ.update(dict(self.env))
        torch.set_default_dtype(self.default_dtype)
        torch.use_deterministic_algorithms(self.deterministic, warn_only=self.deterministic_warn_only)
        matmul = torch.backends.cuda.matmul
        if self.precision and self.precision[0][0] == "legacy":
            _, matmul_precision, matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.precision[0]
            torch.set_float32_matmul_precision(matmul_precision)
        else:
            for path, value in self.precision:
                _backend(path).fp32_precision = value
        matmul.allow_fp16_reduced_precision_reduction = self.cuda_matmul_fp16_reduced
        matmul.allow_bf16_reduced_precision_reduction = self.cuda_matmul_bf16_reduced
        torch.backends.cudnn.deterministic = self.cudnn_deterministic
        torch.backends.cudnn.benchmark = self.cudnn_benchmark


def _call(fn: Callable, threads: int, settings: _TorchSettings, index: int, config: dict):
    torch.set_num_threads(threads)
    settings.apply()
    return index, fn(**config)


def run_parallel(fn: Callable, configs: Sequence[dict], *, workers: int | None = None,
                 threads_per_worker: int = 1, progress: bool | None = None) -> list:
    """Call ``fn(**config)`` for every config, ``workers`` at a time; results in input order.

    Parameters
    ----------
    fn : callable
        The run, e.g. :func:`fit_run` or :func:`ncbook.train.fit_weighted_contrastive`.
        Arguments and results are pickled (cloudpickle: lambdas and notebook functions are
        fine as arguments); return plain data, tensors or picklable modules.
    configs : sequence of dict
        Keyword arguments of each run (e.g. a loss factory and a seed).
    workers : int, optional
        Processes at once; defaults to ``min(len(configs), $NCBOOK_WORKERS)`` or, without that
        variable, ``min(len(configs), usable cores)``, at most ``GPU_WORKERS`` (8) when CUDA is
        available. ``1`` runs in this process, one after another, with this process's thread
        setting: the reference. (The book build sets ``NCBOOK_WORKERS=1`` for chapters it executes
        side by side, since the chapters already fill the cores.)
    threads_per_worker : int
        ``torch.set_num_threads`` in each worker (one thread per core avoids oversubscribing;
        it also makes a worker's float results equal those of a one-thread run alone). Every
        other global torch setting of this process (default dtype, deterministic algorithms,
        matmul precision, TF32, cuDNN flags, ``NCBOOK_*`` variables) is set in the worker too.
    progress : bool, optional
        One ``tqdm.auto`` bar over finished runs; defaults to :func:`ncbook.profiles.show_progress`
        (off with ``NCBOOK_PROGRESS=0``).

    Returns
    -------
    list, one result per config, in the order of ``configs``.

    Raises
    ------
    ValueError
        If ``workers``, ``threads_per_worker`` or ``$NCBOOK_WORKERS`` is below 1.
    TypeError
        If ``fn`` is not callable, a config is not a dict, or an option has the wrong type. An exception
        raised by a run is raised here (with the worker's traceback).

    Examples
    --------
    >>> run_parallel(round, [{"number": 2.567, "ndigits": 1}, {"number": 3.14159, "ndigits": 3}], workers=2,
    ...              progress=False)
    [2.6, 3.142]
    """
    check_callable("fn", fn)
    if isinstance(configs, (str, bytes, dict)) or not hasattr(configs, "__iter__"):
        raise TypeError(f"configs must be a sequence of dicts (keyword arguments of each run); got {type(configs).__name__}.")
    configs = list(configs)
    for i, c in enumerate(configs):
        if not isinstance(c, dict):
            raise TypeError(f"configs must hold dicts (keyword arguments of each run); configs[{i}] is {type(c).__name__}.")
    if workers is None:
        workers = min(len(configs), _default_workers())
    elif not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be >= 1 (an integer; 1 runs here, one after another); got {workers!r}.")
    if isinstance(threads_per_worker, bool) or not isinstance(threads_per_worker, int) or threads_per_worker < 1:
        raise ValueError(f"threads_per_worker must be an integer >= 1; got {threads_per_worker!r}.")
    progress = show_progress() if check_bool("progress", progress, allow_none=True) is None else progress
    bar = None
    if progress and configs:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(configs), desc="runs", leave=False)
    try:
        if workers == 1 or len(configs) <= 1:
            return [_tick(bar, fn(**c)) for c in configs]
        from joblib import Parallel, delayed

        settings = _TorchSettings.capture()
        parallel = Parallel(n_jobs=workers, backend="loky", batch_size=1, inner_max_num_threads=threads_per_worker,
                            return_as="generator_unordered")
        results = {}
        for i, out in parallel(delayed(_call)(fn, threads_per_worker, settings, i, c) for i, c in enumerate(configs)):
            results[i] = _tick(bar, out)
        return [results[i] for i in range(len(configs))]
    finally:
        if bar is not None:
            bar.close()


def _tick(bar, result):
    if bar is not None:
        bar.update(1)
    return result


def fit_run(model: Callable[[], nn.Module] | nn.Module, loss: Callable, train: tuple, *, seed: int,
            evaluate_on: dict | None = None, return_loss: bool = False, **fit_kwargs) -> dict:
    """One training run of a comparison, ready to travel to a worker: build, :func:`fit`, evaluate.

    Parameters
    ----------
    model : callable or nn.Module
        A zero-argument factory, called after ``torch.manual_seed(seed)`` (so the
        initialisation depends on ``seed`` alone), or a module already built by the caller.
    loss : callable
        A zero-argument factory of the loss (called in the worker after the model is built,
        so every run starts from fresh loss state: EMAs, batch counts, switches).
    train : (x, y)
        Training tensors, as for :func:`fit`.
    seed : int
        Seeds the initialisation and :func:`fit`.
    evaluate_on : dict of name -> (x, y), optional
        Sets to evaluate with :func:`evaluate` after training (logits, features, accuracies).
    return_loss : bool
        Also return the trained loss object (e.g. to read MR2's final margins).
    **fit_kwargs
        Passed to :func:`fit` (``epochs``, ``lr``, ``eval_every``...). ``progress``
        defaults to False.

    Returns
    -------
    dict with ``history`` (:class:`History`), ``state`` (the model's ``state_dict`` on the
    CPU: load it into a model built the same way), ``evaluations`` (name -> the dict of
    :func:`evaluate`) and, with ``return_loss``, ``loss``.

    Examples
    --------
    >>> import torch.nn.functional as F
    >>> from ncbook import models
    >>> x, y = torch.randn(32, 8), torch.arange(32) % 4
    >>> out = fit_run(lambda: models.MLP(8, (16,), 4, 4), lambda: F.cross_entropy, (x, y), seed=0,
    ...               epochs=2, batch_size=16, nc_every=0, eval_every=0, evaluate_on={"train": (x, y)})
    >>> len(out["history"]), out["evaluations"]["train"]["logits"].shape
    (2, torch.Size([32, 4]))
    """
    if not isinstance(model, nn.Module):
        check_callable("model", model)
    check_callable("loss", loss)
    seed = check_int("seed", seed, 0)
    if evaluate_on is not None and not isinstance(evaluate_on, dict):
        raise TypeError(f"evaluate_on must be a dict of name -> (x, y); got {type(evaluate_on).__name__}.")
    return_loss = check_bool("return_loss", return_loss)
    torch.manual_seed(seed)
    net = _check_model(model if isinstance(model, nn.Module) else model())
    loss_fn = loss()
    fit_kwargs.setdefault("progress", False)
    history: History = fit(net, loss_fn, train, seed=seed, **fit_kwargs)
    out = {"history": history, "state": {k: v.detach().cpu() for k, v in net.state_dict().items()},
           "evaluations": {name: evaluate(net, *xy) for name, xy in (evaluate_on or {}).items()}}
    if return_loss:
        out["loss"] = loss_fn.cpu() if isinstance(loss_fn, nn.Module) else loss_fn
    return out
