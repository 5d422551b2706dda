"""Training a network with weighted contrastive losses: a sampler and step function over the core loop.

Letters (the book's notation): ``n`` training samples, ``b`` batch size, ``d`` feature dimension, ``tau`` the
temperature (keyword ``temperature``). The network follows the model protocol (``model.features(x) -> (n, d)``);
its classifier is unused. Each step draws ``b`` samples uniformly without replacement (or takes all of them), builds
the batch prior weights with ``weight_fn(targets)`` and minimises
:func:`ncbook.losses.w_info_nce` on the batch features.

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive
Learning", arXiv:2605.13943 (2026): real-network experiments.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .._validation import check_callable, check_in, check_int, check_positive
from ..losses import w_info_nce
from ..profiles import default_device
from ._contrastive import CHECK_EVERY
from ._core import check_feature_model, check_finite, check_sgd, keeps_mode, run_steps

__all__ = ["ContrastiveRun", "embed", "fit_weighted_contrastive"]


@dataclass(frozen=True)
class ContrastiveRun:
    """Result of :func:`fit_weighted_contrastive`.

    Attributes
    ----------
    model : nn.Module
        The trained network (on the training device, in the train/eval mode it was given in).
    losses : list of float
        Batch loss every ``log_every`` steps.
    steps : int
    seconds : float
    """

    model: nn.Module
    losses: list
    steps: int
    seconds: float


def _check_steps(steps, batch_size):
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1; got {steps!r}.")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 2):
        raise ValueError(f"batch_size must be an integer >= 2 or None (full batch); got {batch_size!r}.")


@keeps_mode
def fit_weighted_contrastive(
    model: nn.Module,
    x: torch.Tensor,
    targets: torch.Tensor,
    weight_fn: Callable[[torch.Tensor], torch.Tensor],
    *,
    similarity: str = "cosine",
    temperature: float,
    steps: int,
    batch_size: int | None = None,
    lr: float = 0.05,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    augment: Callable | None = None,
    seed: int = 0,
    device=None,
    log_every: int = 50,
) -> ContrastiveRun:
    """Train ``model`` with w-InfoNCE: SGD with momentum and a cosine learning-rate schedule.

    Parameters
    ----------
    model : nn.Module
        With ``model.features(x) -> (n, d)``. Use L2-normalised features for the cosine
        latent if you like (the loss normalises anyway) and unnormalised ones for the
        Euclidean latent.
    x : Tensor of shape (n, ...)
        Inputs.
    targets : Tensor of shape (n,) or (n, m)
        Class labels or continuous labels, passed batch by batch to ``weight_fn``.
    weight_fn : callable
        ``weight_fn(batch_targets) -> (b, b)`` prior weights ``Omega`` of a batch of size ``b``. They reach
        the loss in the dtype ``weight_fn`` returns (moved to ``device`` only): the loss forms its targets in
        float64, so a kernel at a small bandwidth neither underflows to all-zero rows nor overflows to
        infinity as it would through float32.
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.
    steps : int
        Optimiser steps.
    batch_size : int, optional
        ``None`` (default) or ``>= n``: full batch.
    lr, momentum, weight_decay : float
        SGD settings; the learning rate follows a cosine schedule to 0.
    augment : callable, optional
        ``augment(x_batch, generator) -> x_batch`` (e.g. CIFAR crops and flips).
    seed : int
        Seeds the initialisation-independent randomness (batches, augmentation).
    device : torch.device, optional
        Defaults to :func:`ncbook.profiles.default_device`.
    log_every : int

    Returns
    -------
    ContrastiveRun

    Raises
    ------
    ValueError
        On bad ``steps``, ``batch_size``, ``temperature``, ``lr`` or ``similarity``, or mismatched lengths,
        or when the loss becomes NaN or infinite (the message names the step).
    """
    check_feature_model(model)
    check_in("similarity", similarity, ("cosine", "euclidean"))
    check_positive("temperature", temperature)
    check_callable("weight_fn", weight_fn)
    check_callable("augment", augment, allow_none=True)
    check_sgd(lr=lr, momentum=momentum, weight_decay=weight_decay)
    seed = check_int("seed", seed, 0)
    log_every = check_int("log_every", log_every, 1)
    _check_steps(steps, batch_size)
    if len(x) != len(targets):
        raise ValueError(f"x and targets must have the same length; got {len(x)} and {len(targets)}.")
    device = torch.device(device) if device is not None else default_device()
    start = time.perf_counter()
    model = model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))
    gen = torch.Generator().manual_seed(int(seed))
    n = len(x)
    full = batch_size is None or batch_size >= n

    def loss_at(step):  # the sampler (uniform batch and its prior weights) and step function
        idx = torch.arange(n) if full else torch.randperm(n, generator=gen)[:batch_size]
        xb = x[idx]
        if augment is not None:
            xb = augment(xb, gen)
        w = weight_fn(targets[idx]).to(device=device)
        return w_info_nce(model.features(xb.to(device)), w, similarity=similarity, temperature=temperature)

    all_losses = []
    for first in range(0, steps, CHECK_EVERY):  # stop within CHECK_EVERY steps of a non-finite loss
        all_losses.append(run_steps(opt, sched, range(first, min(first + CHECK_EVERY, steps)), loss_at).cpu())
        check_finite(all_losses[-1], first_step=first, lr=lr)
    all_losses = torch.cat(all_losses)
    losses = [float(all_losses[s]) for s in range(steps) if s % log_every == 0 or s == steps - 1]
    return ContrastiveRun(model, losses, steps, time.perf_counter() - start)


@torch.no_grad()
@keeps_mode
def embed(model: nn.Module, x: torch.Tensor, *, batch_size: int = 1024, device=None) -> torch.Tensor:
    """Features ``model.features(x)`` in eval mode, batch by batch, as a float64 CPU tensor ``(n, d)``.

    The model's train/eval mode is restored afterwards (the caller's next training steps still update BatchNorm).
    """
    check_feature_model(model)
    batch_size = check_int("batch_size", batch_size, 1)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.eval()
    out = [model.features(x[i : i + batch_size].to(device)).double().cpu() for i in range(0, len(x), batch_size)]
    return torch.cat(out)
