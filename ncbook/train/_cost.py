"""The cost before the run: measure a few steps of a cell's model and batch, estimate the cell and the chapter.

A chapter's long cells (networks that train for minutes at the gpu and full profiles) are each
preceded by a cost cell. It measures, on the device the chapter runs on, what one optimiser step of
that cell's trainer costs and what evaluating an image costs, prints the estimated time of the next
cell and of the chapter's long cells, and goes on (nothing waits for an answer, so Run-all runs).

The measurement calls the cell's own trainer (:func:`~ncbook.train.fit`,
:func:`~ncbook.train.fit_contrastive` or :func:`~ncbook.train.fit_weighted_contrastive`) on a fresh
copy of the model, with few steps, twice: the difference of the two times is the cost of the extra
steps alone, so set-up and the final evaluation cancel. Every global random state (Python, numpy,
torch, CUDA) is restored afterwards, so a chapter computes the same numbers with or without its cost
cells. An estimate is ``fixed + steps * step + evaluated images * per-image evaluation``, times the
runs of the cell (divided among worker processes on a CPU by :func:`in_parallel`, as
:func:`ncbook.train.run_parallel` divides them; on a GPU the workers share one device, and the estimate
assumes they do not overlap).

:class:`ChapterCost` prints the estimates and, in a Jupyter kernel, times the cell that follows each
announcement and writes estimate and measurement to ``<results>/costs/<profile>/<chapter>.json``.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import random
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from .._validation import (
    check_bool,
    check_callable,
    check_device,
    check_in,
    check_instance,
    check_int,
    check_labels,
    check_nonnegative,
    check_path,
    check_positive,
    check_text,
)
from ..profiles import DEVICE_SPEEDS, default_device, native_bf16, profile, scale
from ._loop import _check_xy, fit

__all__ = ["ChapterCost", "Throughput", "fit_seconds", "format_seconds", "in_parallel", "measure_contrastive", "measure_fit",
           "measure_steps", "steps_seconds"]


@dataclass(frozen=True)
class Throughput:
    """What one training setup costs on one device (measured by :func:`measure_fit` or :func:`measure_steps`).

    Times are wall-clock seconds on ``device``. Built by hand, it estimates a device one does not have
    (from its images per second).

    Parameters
    ----------
    step_seconds : float, > 0
        One optimiser step (forward, backward, update; augmentation and sampling included).
    fixed_seconds : float, >= 0
        Per call of the trainer: set-up and the evaluation it does at the end of a probe-sized run.
    eval_seconds : float, > 0
        Evaluating one image (forward only, in eval mode).
    images_per_step : float, > 0
        Images forwarded per step (the batch; for contrastive sampling the distinct rows drawn).
    device : str
        The device's name (``"Tesla T4"``, ``"cpu (2 threads)"``).
    precision : str
        ``"bf16 autocast"`` or ``"float32"`` (what ``amp=True`` gives on this device).
    measured_steps : int, >= 1
        Steps timed (beyond the warm-up).
    device_type : str
        ``"cpu"`` or ``"cuda"``: on a CPU the runs of a comparison divide among worker processes.
    workers : int, >= 1
        Worker processes the probe also ran in side by side (1: only in this process).
    parallel_slowdown : float, > 0
        How much longer a step took in those workers, all busy at once, than in this process alone.

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type or outside its range (NaN, infinite or negative times, a zero step).

    Examples
    --------
    >>> tp = Throughput(step_seconds=0.032, fixed_seconds=0.5, eval_seconds=1e-4, images_per_step=128,
    ...                 device="Tesla T4", precision="float32", measured_steps=4, device_type="cuda")
    >>> round(tp.train_images_per_s), round(tp.eval_images_per_s)
    (4000, 10000)
    """

    step_seconds: float
    fixed_seconds: float
    eval_seconds: float
    images_per_step: float
    device: str
    precision: str
    measured_steps: int
    device_type: str = "cpu"
    workers: int = 1
    parallel_slowdown: float = 1.0

    def __post_init__(self):
        for name in ("step_seconds", "eval_seconds", "images_per_step", "parallel_slowdown"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name)))
        object.__setattr__(self, "fixed_seconds", check_nonnegative("fixed_seconds", self.fixed_seconds))
        for name in ("device", "precision", "device_type"):
            check_text(name, getattr(self, name))
        for name in ("measured_steps", "workers"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), 1))

    @property
    def train_images_per_s(self) -> float:
        """Training images per second: ``images_per_step / step_seconds``."""
        return self.images_per_step / self.step_seconds

    @property
    def eval_images_per_s(self) -> float:
        """Evaluated images per second: ``1 / eval_seconds``."""
        return 1.0 / self.eval_seconds


def format_seconds(seconds: float) -> str:
    """``"4.2 s"``, ``"38 s"``, ``"3.5 min"``, ``"2.1 h"``: two significant figures up to a minute.

    Parameters
    ----------
    seconds : float, >= 0
        A duration (finite).

    Returns
    -------
    str
        Seconds below 90 s, minutes below 90 min, hours above.

    Raises
    ------
    TypeError, ValueError
        If ``seconds`` is not a finite number ``>= 0``.

    Examples
    --------
    >>> format_seconds(2.86), format_seconds(38.2), format_seconds(210), format_seconds(7600)
    ('2.9 s', '38 s', '3.5 min', '2.1 h')
    """
    seconds = check_nonnegative("seconds", seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _device_label(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{device.type} ({torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''})"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _KeepRandomState:
    """Restore Python's, numpy's and torch's (CPU and CUDA) global random states on exit."""

    def __enter__(self):
        self._py, self._np = random.getstate(), np.random.get_state()
        self._fork = torch.random.fork_rng(devices=range(torch.cuda.device_count()) if torch.cuda.is_available() else [])
        self._fork.__enter__()
        return self

    def __exit__(self, *exc):
        self._fork.__exit__(*exc)
        random.setstate(self._py)
        np.random.set_state(self._np)
        return False


def _fresh(model) -> nn.Module:
    """A copy of ``model`` (a module) or a new one from a zero-argument factory."""
    return copy.deepcopy(model) if isinstance(model, nn.Module) else model()


@torch.no_grad()
def _eval_seconds(net: nn.Module, x: torch.Tensor, device: torch.device, batch_size: int = 1024) -> float:
    """Seconds per image of a forward pass in eval mode, warmed, on up to two batches of ``x``."""
    net = net.to(device).eval()
    xs = x[: 2 * batch_size]
    net.features(xs[:batch_size].to(device))  # warm-up
    _sync(device)
    t0 = time.perf_counter()
    for i in range(0, len(xs), batch_size):
        net.features(xs[i:i + batch_size].to(device))
    _sync(device)
    return (time.perf_counter() - t0) / len(xs)


def _timed(call: Callable[[], object], device: torch.device) -> float:
    _sync(device)
    t0 = time.perf_counter()
    call()
    _sync(device)
    return time.perf_counter() - t0


def _check_probe_steps(steps) -> tuple[int, int]:
    """``steps`` as two ints ``1 <= a < b``, else an error naming ``steps``."""
    if not isinstance(steps, (tuple, list)) or len(steps) != 2:
        raise TypeError(f"steps must be two integers 1 <= a < b (the two probe lengths); got {type(steps).__name__} "
                        f"{steps!r}.")
    a, b = (check_int("steps", s, 1, what="each of the two probe lengths") for s in steps)
    if a >= b:
        raise ValueError(f"steps must be two integers 1 <= a < b (the two probe lengths); got {steps!r}.")
    return a, b


#: ``fit`` options the probe sets itself: it trains its own number of epochs, evaluates at the end only,
#: shows no progress, and never reads or writes a checkpoint nor calls the caller's callback.
_PROBE_OWNS = ("epochs", "checkpoint_dir", "resume", "callback", "test", "progress", "nc_every", "eval_every")


def _fit_runner(model, loss, sub, options):
    """``run(epochs)``: ``fit`` the same fresh copy of ``model`` for ``epochs`` epochs of ``sub``, with a copy of
    ``loss`` when it is a module (its buffers, EMAs and epoch switches stay the caller's)."""
    net = _fresh(model)
    loss = copy.deepcopy(loss) if isinstance(loss, nn.Module) else loss
    return lambda epochs: fit(net, loss, sub, epochs=epochs, **options)


def _steps_runner(trainer, model, args, kwargs):
    """``run(steps)``: ``trainer`` on a fresh copy of ``model`` for ``steps`` steps."""
    return lambda steps: trainer(_fresh(model), *args, steps=steps, **kwargs)


def _probe_times(make_runner, a: int, b: int, device) -> tuple[float, float]:
    """Warm up with ``a`` units, then time ``a`` and ``b`` units; every global random state is restored."""
    device = torch.device(device)
    with _KeepRandomState():
        run = make_runner()
        run(a)
        return _timed(lambda: run(a), device), _timed(lambda: run(b), device)


def _probe(make_runner, a: int, b: int, device: torch.device, parallel_runs: int) -> tuple[float, float, int, float]:
    """``(t_a, t_b, workers, slowdown)``, timed here; for runs that :func:`ncbook.train.run_parallel` spreads over
    worker processes on a CPU the probe also runs in those workers side by side (which starts and warms them, so
    that their start-up falls in the cost cell), and ``slowdown`` is how much longer a step takes there, with the
    other workers busy, than here alone."""
    from ._parallel import run_parallel

    t_a, t_b = _probe_times(make_runner, a, b, device)
    workers = _workers(parallel_runs) if device.type == "cpu" else 1
    if workers == 1:
        return t_a, t_b, 1, 1.0
    times = run_parallel(_probe_times, [dict(make_runner=make_runner, a=a, b=b, device=str(device))] * workers,
                         progress=False)   # the probe is part of the cost line, not a run of the cell
    w_a, w_b = float(np.mean([t[0] for t in times])), float(np.mean([t[1] for t in times]))
    return t_a, t_b, workers, max((w_b - w_a) / max(t_b - t_a, 1e-9), 0.5)


def measure_fit(model, loss, train: tuple, *, batch_size: int, amp: bool = False, augment: Callable | None = None,
                device=None, steps: tuple = (2, 6), parallel_runs: int = 1, **fit_kwargs) -> Throughput:
    """Time a few steps of :func:`ncbook.train.fit` for ``model``, ``loss`` and ``batch_size`` on ``device``.

    ``fit`` runs on a fresh copy of the model (and of the loss, when it is a module) with the same
    options as the cell's, except those the probe sets itself: its own epochs, evaluation at the end
    only, no progress bar, and no checkpoint, resume, callback or test set. The caller's checkpoint
    folder is never read or written, and the caller's model and loss are left as they were.

    Parameters
    ----------
    model : nn.Module or callable
        The cell's model (copied) or a zero-argument factory of it (called under a saved random state).
    loss : callable
        The loss, as passed to ``fit`` (copied when it is an ``nn.Module``).
    train : (x, y)
        The cell's training tensors: ``x`` of shape ``(n, ...)``, floating point and finite, ``y`` of
        shape ``(n,)``, integer labels. The probe trains on their first batches.
    batch_size : int, >= 1
    amp : bool
        As for ``fit``: bf16 autocast where :func:`ncbook.native_bf16`.
    augment : callable, optional
        As for ``fit``.
    device : str or torch.device, optional
        Defaults to :func:`ncbook.default_device`.
    steps : (a, b)
        Two probe lengths in steps, integers ``1 <= a < b``: ``fit`` runs ``a`` and ``b`` steps (whole
        epochs of the first batches) after a warm-up of ``a`` steps; the step cost is the difference
        over ``b - a``.
    parallel_runs : int, >= 1
        The cell trains this many runs through :func:`ncbook.train.run_parallel`: on a CPU the probe
        then runs in its worker processes, side by side.
    **fit_kwargs
        The cell's other ``fit`` options (``lr``, ``weight_decay``, ``optimizer``, ``schedule``...).
        ``epochs``, ``checkpoint_dir``, ``resume``, ``callback``, ``test``, ``progress``, ``nc_every``
        and ``eval_every`` may be passed as the cell passes them to ``fit``; the probe ignores them.

    Returns
    -------
    Throughput
        ``precision`` says what ``amp`` resolved to; ``images_per_step`` is ``min(batch_size, n)``.

    Raises
    ------
    TypeError, ValueError
        On a bad argument (named), as ``fit`` would raise it.

    Notes
    -----
    A cell whose ``fit`` checkpoints also hashes its data once (the run's fingerprint) and saves a
    checkpoint every epoch (about 2 MB for a ResNet-32); the probe does neither, so the estimate
    leaves those seconds out. ``tests/test_gpu_smoke.py`` checks that it still lies within a factor
    of two of a checkpointed ``fit``.

    Examples
    --------
    >>> from ncbook import models
    >>> import torch.nn.functional as F
    >>> x, y = torch.randn(64, 8), torch.arange(64) % 4
    >>> tp = measure_fit(lambda: models.MLP(8, (16,), 4, 4), F.cross_entropy, (x, y), batch_size=16)
    >>> tp.images_per_step, tp.step_seconds > 0, tp.precision
    (16.0, True, 'float32')
    """
    check_callable("model", model)
    check_callable("loss", loss)
    x, y = _check_xy("train", train)
    batch_size = check_int("batch_size", batch_size, 1)
    amp = check_bool("amp", amp)
    check_callable("augment", augment, allow_none=True)
    device = default_device() if device is None else check_device("device", device)
    a, b = _check_probe_steps(steps)
    parallel_runs = check_int("parallel_runs", parallel_runs, 1)
    n = len(y)
    per_epoch = max(1, min(a, n // batch_size))      # steps of each probe epoch
    sub = (x[: per_epoch * batch_size], y[: per_epoch * batch_size])
    epochs = (max(1, a // per_epoch), max(2, b // per_epoch))
    if epochs[0] >= epochs[1]:
        epochs = (epochs[0], epochs[0] + 1)
    options = {k: v for k, v in fit_kwargs.items() if k not in _PROBE_OWNS}
    options.update(batch_size=batch_size, amp=amp, augment=augment, device=device, progress=False, nc_every=0,
                   eval_every=0, checkpoint_dir=None, resume="never", callback=None, test=None)
    t_a, t_b, workers, slowdown = _probe(functools.partial(_fit_runner, model, loss, sub, options), *epochs, device,
                                         parallel_runs)
    with _KeepRandomState():
        eval_s = _eval_seconds(_fresh(model), x, device)
    extra = (epochs[1] - epochs[0]) * per_epoch
    step = max((t_b - t_a) / extra, 1e-9)
    return Throughput(step_seconds=step, fixed_seconds=max(t_a - epochs[0] * per_epoch * step, 0.0), eval_seconds=eval_s,
                      images_per_step=min(batch_size, n), device=_device_label(device),
                      precision="bf16 autocast" if amp and native_bf16(device) else "float32", measured_steps=extra,
                      device_type=device.type, workers=workers,
                      parallel_slowdown=slowdown)


def measure_steps(trainer: Callable, model, *args, images_per_step: float, steps: tuple = (2, 6), device=None,
                  eval_inputs: torch.Tensor | None = None, parallel_runs: int = 1, **kwargs) -> Throughput:
    """Time a few steps of a step-based trainer (``trainer(model, *args, steps=..., **kwargs)``).

    For :func:`ncbook.train.fit_contrastive` (see :func:`measure_contrastive`) and
    :func:`ncbook.train.fit_weighted_contrastive`: the trainer runs ``a`` and ``b`` steps after a warm-up
    of ``a`` steps, each on a fresh copy of ``model``. Neither trainer writes a file.

    Parameters
    ----------
    trainer : callable
    model : nn.Module or callable
        Copied, or a zero-argument factory.
    *args, **kwargs
        The trainer's arguments, as the cell passes them (``steps`` is the probe's).
    images_per_step : float, > 0
        Images forwarded per step (reported as images/s).
    steps : (a, b)
        Two probe lengths, integers ``1 <= a < b``.
    device : str or torch.device, optional
        Defaults to ``kwargs["device"]``, else :func:`ncbook.default_device`.
    eval_inputs : Tensor of shape (m, ...), optional
        Inputs to time evaluation on (default: the first positional argument).
    parallel_runs : int, >= 1
        As for :func:`measure_fit`.

    Returns
    -------
    Throughput

    Raises
    ------
    TypeError, ValueError
        On a bad argument (named); ``eval_inputs`` is needed when ``args`` is empty.

    Examples
    --------
    >>> from ncbook import losses, models, train
    >>> x, y = torch.randn(40, 8), torch.arange(40) % 2
    >>> tp = measure_steps(train.fit_weighted_contrastive, lambda: models.MLP(8, (16,), 4, 2), x, y,
    ...                    losses.supcon_weights, temperature=0.5, batch_size=16, images_per_step=16)
    >>> round(tp.train_images_per_s * tp.step_seconds)
    16
    """
    check_callable("trainer", trainer)
    check_callable("model", model)
    images_per_step = check_positive("images_per_step", images_per_step)
    a, b = _check_probe_steps(steps)
    device = check_device("device", device if device is not None else kwargs.get("device") or default_device())
    if eval_inputs is None and not args:
        raise ValueError("eval_inputs must be given when the trainer takes no positional inputs (args is empty).")
    eval_inputs = args[0] if eval_inputs is None else eval_inputs
    if not isinstance(eval_inputs, torch.Tensor) or eval_inputs.ndim < 2 or len(eval_inputs) == 0:
        what = f"shape {tuple(eval_inputs.shape)}" if isinstance(eval_inputs, torch.Tensor) else type(eval_inputs).__name__
        raise TypeError(f"eval_inputs (default: the first positional argument) must be a tensor of inputs of shape "
                        f"(m, ...) with m >= 1; got {what}.")
    parallel_runs = check_int("parallel_runs", parallel_runs, 1)
    kwargs.setdefault("device", device)
    t_a, t_b, workers, slowdown = _probe(functools.partial(_steps_runner, trainer, model, args, kwargs), a, b, device,
                                         parallel_runs)
    with _KeepRandomState():
        eval_s = _eval_seconds(_fresh(model), eval_inputs, device)
    step = max((t_b - t_a) / (b - a), 1e-9)
    return Throughput(step_seconds=step, fixed_seconds=max(t_a - a * step, 0.0), eval_seconds=eval_s,
                      images_per_step=float(images_per_step), device=_device_label(device), precision="float32",
                      measured_steps=b - a, device_type=device.type, workers=workers,
                      parallel_slowdown=slowdown)


def measure_contrastive(trainer: Callable, model, x: torch.Tensor, y, *, batch_size: int, k: int,
                        setting: str, **kwargs) -> Throughput:
    """:func:`measure_steps` for :func:`ncbook.train.fit_contrastive`.

    ``images_per_step`` is the number of distinct rows one step's anchors, positives and negatives draw
    (each is forwarded once), counted on one draw of the sampler
    (:func:`ncbook.losses.contrastive_batch_indices`) with its own generator.

    Parameters
    ----------
    trainer : callable
        :func:`ncbook.train.fit_contrastive` (or a trainer with its signature).
    model : nn.Module or callable
        Copied, or a zero-argument factory.
    x : Tensor of shape (n, ...)
        The cell's inputs.
    y : int array-like of shape (n,)
        Their labels.
    batch_size : int, >= 1
        Anchors per step.
    k : int, >= 1
        Negatives per anchor.
    setting : {"ucl", "scl"}
        How negatives are drawn.
    **kwargs
        The trainer's other options and those of :func:`measure_steps` (``steps``, ``device``,
        ``parallel_runs``).

    Returns
    -------
    Throughput

    Raises
    ------
    TypeError, ValueError
        On a bad argument (named).

    Examples
    --------
    >>> from ncbook import models, train
    >>> x, y = torch.randn(40, 8), torch.arange(40) % 2
    >>> tp = measure_contrastive(train.fit_contrastive, lambda: models.MLP(8, (16,), 4, 2), x, y, batch_size=4,
    ...                          k=2, setting="ucl")
    >>> 4 <= tp.images_per_step <= 4 * (2 + 2)     # anchors, positives, k negatives each: distinct rows
    True
    """
    check_callable("trainer", trainer)
    check_callable("model", model)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of inputs of shape (n, ...); got {type(x).__name__}.")
    y = check_labels(y, name="y", n=len(x), rows_of="x")
    batch_size, k = check_int("batch_size", batch_size, 1), check_int("k", k, 1, what="negatives per anchor")
    check_in("setting", setting, ("ucl", "scl"))
    from ..losses import contrastive_batch_indices

    anc, pos, neg = contrastive_batch_indices(y, batch_size, k, setting=setting, generator=torch.Generator().manual_seed(0))
    unique = torch.unique(torch.cat([anc, pos, neg.ravel()])).numel()
    return measure_steps(trainer, model, x, y, batch_size=batch_size, k=k, setting=setting, images_per_step=unique, **kwargs)


def _workers(runs: int) -> int:
    """How many worker processes :func:`ncbook.train.run_parallel` uses for ``runs`` runs."""
    from ._parallel import _default_workers

    return 1 if runs <= 1 else max(1, min(runs, _default_workers()))


def fit_seconds(tp: Throughput, *, n: int, epochs: int, batch_size: int, n_eval: int = 0, evals: int | None = None,
                runs: int = 1) -> float:
    """Estimated seconds of ``runs`` calls of :func:`ncbook.train.fit`, one after another, at the throughput ``tp``.

    ``runs * (fixed + epochs * steps_per_epoch * step + evals * n_eval * eval)``, with the times of ``tp``.

    Parameters
    ----------
    tp : Throughput
        As :func:`measure_fit` returns it.
    n : int, >= 1
        Training samples (``fit`` takes ``n // batch_size`` steps an epoch, 1 when ``n < batch_size``).
    epochs, batch_size : int, >= 1
    n_eval : int, >= 0
        Images evaluated at each evaluation (training set, test set and any callback's set).
    evals : int, optional
        Evaluations per run, ``>= 0`` (default ``epochs``: ``fit`` evaluates every epoch unless
        ``eval_every`` says otherwise).
    runs : int, >= 1

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    TypeError, ValueError
        If ``tp`` is not a :class:`Throughput` or a count is not an integer in its range.

    Examples
    --------
    >>> tp = Throughput(0.1, 1.0, 1e-3, 128, "cpu", "float32", 4)
    >>> fit_seconds(tp, n=1280, epochs=2, batch_size=128, n_eval=1000)   # 1 + 2 * 10 * 0.1 + 2 * 1
    5.0
    """
    check_instance("tp", tp, Throughput, what="as measure_fit returns")
    n, epochs, batch_size = check_int("n", n, 1), check_int("epochs", epochs, 1), check_int("batch_size", batch_size, 1)
    n_eval, runs = check_int("n_eval", n_eval, 0), check_int("runs", runs, 1)
    evals = epochs if check_int("evals", evals, 0, allow_none=True) is None else int(evals)
    steps = epochs * (n // batch_size if n >= batch_size else 1)
    per_run = tp.fixed_seconds + steps * tp.step_seconds + evals * n_eval * tp.eval_seconds
    return runs * per_run


def steps_seconds(tp: Throughput, *, steps: int, eval_images: int = 0, runs: int = 1) -> float:
    """Estimated seconds of ``runs`` step-based trainer calls of ``steps`` steps each, evaluating ``eval_images``
    images after each, one after another: ``runs * (fixed + steps * step + eval_images * eval)``.

    Parameters
    ----------
    tp : Throughput
        As :func:`measure_steps` or :func:`measure_contrastive` returns it.
    steps : int, >= 1
    eval_images : int, >= 0
    runs : int, >= 1

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    TypeError, ValueError
        If ``tp`` is not a :class:`Throughput` or a count is not an integer in its range.

    Examples
    --------
    >>> tp = Throughput(0.1, 1.0, 1e-3, 128, "cpu", "float32", 4)
    >>> steps_seconds(tp, steps=100, eval_images=1000, runs=2)   # 2 * (1 + 100 * 0.1 + 1000 * 0.001)
    24.0
    """
    check_instance("tp", tp, Throughput, what="as measure_steps returns")
    steps, runs = check_int("steps", steps, 1), check_int("runs", runs, 1)
    eval_images = check_int("eval_images", eval_images, 0)
    return runs * (tp.fixed_seconds + steps * tp.step_seconds + eval_images * tp.eval_seconds)


def in_parallel(seconds: float, runs: int, tp: Throughput) -> float:
    """``seconds`` of ``runs`` equal runs done one after another, as :func:`ncbook.train.run_parallel` does them.

    On a CPU its worker processes (one thread each) share the runs, each step slower by
    ``tp.parallel_slowdown`` (measure the throughput with ``parallel_runs=runs``):
    ``seconds * ceil(runs / workers) / runs * parallel_slowdown``. On a GPU the workers share one
    device, and this estimate assumes they do not overlap (``seconds`` unchanged).

    Parameters
    ----------
    seconds : float, >= 0
        The runs' time one after another (:func:`fit_seconds` with ``runs``).
    runs : int, >= 1
    tp : Throughput

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    TypeError, ValueError
        On a bad argument (named).

    Examples
    --------
    >>> tp = Throughput(0.1, 1.0, 1e-3, 128, "cuda", "float32", 4, "cuda")
    >>> in_parallel(30.0, 3, tp)
    30.0
    """
    seconds, runs = check_nonnegative("seconds", seconds), check_int("runs", runs, 1)
    check_instance("tp", tp, Throughput, what="as measure_fit returns")
    if tp.device_type == "cuda" or runs <= 1:
        return float(seconds)
    return seconds * math.ceil(runs / _workers(runs)) / runs * tp.parallel_slowdown


class _CellTimer:
    """Times the cell after an announcement in an IPython kernel (its ``pre_run_cell``/``post_run_cell`` events)."""

    active = None  # the ChapterCost waiting for its next cell

    def __init__(self):
        self.t0 = None

    def pre(self, *args):
        if _CellTimer.active is not None and _CellTimer.active._armed is not None:
            self.t0 = time.perf_counter()

    def post(self, *args):
        cost = _CellTimer.active
        if cost is None or cost._armed is None or self.t0 is None:
            return
        name, seconds = cost._armed, time.perf_counter() - self.t0
        cost._armed, self.t0 = None, None  # disarmed first: a failed record must not fail every later cell
        cost._measured(name, seconds)


_TIMER = None


def _install_timer() -> bool:
    global _TIMER
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with Jupyter
        return False
    ip = get_ipython()
    if ip is None:
        return False
    if _TIMER is None:
        _TIMER = _CellTimer()
        ip.events.register("pre_run_cell", _TIMER.pre)
        ip.events.register("post_run_cell", _TIMER.post)
    return True


class ChapterCost:
    """A chapter's long cells, their estimates, and what each then took.

    Parameters
    ----------
    chapter : str
        The chapter's file stem.
    results : path, optional
        Where ``costs/<profile>/<chapter>.json`` goes (the chapter's ``RESULTS``); nothing is written without it.
    checkpoints : path, optional
        The chapter's checkpoint folder, named once in the first announcement (never read or written here).

    Raises
    ------
    TypeError, ValueError
        For a ``chapter`` that is not a non-empty string or a folder that is not a path; :meth:`add`
        refuses a negative or non-finite estimate, :meth:`announce` a cell that was not added.

    Examples
    --------
    >>> cost = ChapterCost("seli")
    >>> tp = Throughput(0.05, 0.5, 1e-4, 128, "cpu (1 thread)", "float32", 4)
    >>> cost.add("network", fit_seconds(tp, n=2750, epochs=2, batch_size=128, n_eval=7750), tp)
    >>> print(cost.announce("network"))  # doctest: +ELLIPSIS
    Cost at the ... profile on cpu (1 thread) (float32): this model trains 2,560 images/s and evaluates 10,000 images/s...
    Next cell, network: about 4.2 s. The chapter's long cells: about 4.2 s (network 4.2 s), 4.2 s of it from here on.
    """

    def __init__(self, chapter: str, *, results: str | Path | None = None, checkpoints: str | Path | None = None):
        self.chapter = check_text("chapter", chapter)
        self.profile, self.scale = profile(), scale()
        self.results = None if check_path("results", results, allow_none=True) is None else Path(results)
        self.checkpoints = None if check_path("checkpoints", checkpoints, allow_none=True) is None else str(checkpoints)
        self.cells: dict[str, dict] = {}
        self._armed = None
        self._announced = False

    def add(self, name: str, seconds: float, throughput: Throughput) -> None:
        """Register a long cell's estimate (in the order the cells run): its name, its estimated seconds
        (finite, ``>= 0``) and the :class:`Throughput` it was estimated from."""
        check_text("name", name)
        seconds = check_nonnegative("seconds", seconds)
        check_instance("throughput", throughput, Throughput, what="as measure_fit returns")
        self.cells[name] = {"estimate_s": float(seconds), "measured_s": None, **asdict(throughput),
                            "train_images_per_s": throughput.train_images_per_s,
                            "eval_images_per_s": throughput.eval_images_per_s}

    def total(self) -> float:
        """Estimated seconds of all long cells added."""
        return sum(c["estimate_s"] for c in self.cells.values())

    def _plan_note(self, tp: dict) -> str:
        for entry in DEVICE_SPEEDS:
            if entry.device in tp["device"]:
                return f" (the plan assumes {entry.train_images_per_s:,.0f} on a {entry.device})"
        return ""

    def announce(self, name: str, *, time_next_cell: bool = True) -> str:
        """Print (and return) the estimate of the next cell ``name`` and of all long cells.

        With ``time_next_cell`` (the default) the notebook's next cell is timed and recorded as ``name``; an
        experiment that times its own work passes False and calls :meth:`record` itself.
        """
        if name not in self.cells:
            raise ValueError(f"name must be a cell added with add(); got {name!r} (added: {list(self.cells)}).")
        c = self.cells[name]
        names = list(self.cells)
        rest = {k: self.cells[k]["estimate_s"] for k in names[names.index(name):]}
        parts = ", ".join(f"{k} {format_seconds(v['estimate_s'])}" for k, v in self.cells.items())
        where = f"the {self.profile} profile{' (stand-in scale)' if self.scale == 'smoke' else ''}"
        lines = [f"Cost at {where} on {c['device']} ({c['precision']}): this model trains "
                 f"{c['train_images_per_s']:,.0f} images/s{self._plan_note(c)} and evaluates "
                 f"{c['eval_images_per_s']:,.0f} images/s (measured on {c['measured_steps']} steps).",
                 f"Next cell, {name}: about {format_seconds(c['estimate_s'])}. The chapter's long cells: about "
                 f"{format_seconds(self.total())} ({parts}), {format_seconds(sum(rest.values()))} of it from here on."]
        if self.checkpoints and not self._announced:
            lines.append(f"Checkpoints go to {self.checkpoints}; set NCBOOK_CHECKPOINTS to a folder that outlives the "
                         f"runtime (in Colab a mounted Google Drive folder) and rerun a cut-off cell to resume it.")
        self._announced = True
        text = "\n".join(lines)
        print(text)
        if time_next_cell and _install_timer():
            self._armed = name
            _CellTimer.active = self
        return text

    def record(self, name: str, seconds: float) -> None:
        """Record what the long piece of work ``name`` (added with :meth:`add`) took, in seconds (>= 0), beside its
        estimate in ``<results>/costs/<profile>/<chapter>.json``.

        Raises
        ------
        ValueError
            For a name not added, or a negative or non-finite ``seconds``.
        """
        if name not in self.cells:
            raise ValueError(f"name must be a cell added with add(); got {name!r} (added: {list(self.cells)}).")
        self._measured(name, check_nonnegative("seconds", seconds))

    def _measured(self, name: str, seconds: float) -> None:
        self.cells[name]["measured_s"] = float(seconds)
        if self.results is None:
            return
        path = self.results / "costs" / self.profile / f"{self.chapter}.json"
        record = {"chapter": self.chapter, "profile": self.profile, "scale": self.scale, "torch": torch.__version__,
                  "cells": self.cells}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        except OSError as exc:  # a read-only folder (a grading sandbox): the estimate was printed, the record is lost
            warnings.warn(f"the measured cost of {name!r} was not recorded in {path} ({exc}); set NCBOOK_RESULTS to a "
                          "writable folder to keep it.", RuntimeWarning, stacklevel=2)
