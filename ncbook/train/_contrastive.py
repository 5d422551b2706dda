"""Training a network with a generalized contrastive loss under UCL or SCL sampling.

Letters: ``B`` anchors per step, ``k`` negatives per anchor, ``d`` feature dimension, ``C`` classes.

Each step draws ``B`` anchors, one positive per anchor from the anchor's class (independently
of the anchor, as the theory assumes) and ``k`` negatives per anchor from the UCL or SCL
distribution (:func:`ncbook.losses.contrastive_batch_indices`), and minimises
:func:`ncbook.losses.generalized_contrastive_loss` on L2-normalised features.

References
----------
Nguyen et al., arXiv:2605.11291 (2026), Section 5 (experiments with a ResNet on imbalanced
CIFAR-10 subsets).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .._validation import _short, check_callable, check_in, check_int, check_labels, check_positive
from ..losses import contrastive_batch_indices, generalized_contrastive_loss
from ._core import _eval_mode, check_feature_model, check_finite, check_sgd, keeps_mode, run_steps

__all__ = ["ContrastiveFit", "fit_contrastive", "class_mean_cosines"]

CHECK_EVERY = 100  # steps between checks that the loss is finite (each check waits for the device)


@dataclass(frozen=True)
class ContrastiveFit:
    """Result of :func:`fit_contrastive`.

    Attributes
    ----------
    class_gram : ndarray (C, C)
        Cosines of the class means of the unit features (compare with ``optimal_gram``).
    spread : ndarray (C,)
        ``1 - |mean of the unit features of class c|``: 0 exactly when class ``c`` collapsed.
    losses : ndarray (steps,)
        Training loss per step.
    seconds : float
    """

    class_gram: np.ndarray = field(repr=False)
    spread: np.ndarray = field(repr=False)
    losses: np.ndarray = field(repr=False)
    seconds: float


def _check_every_class(y: torch.Tensor, name: str = "y") -> None:
    """``y`` non-empty, with a sample of every class in ``[0, max(y)]``."""
    if y.numel() == 0:
        raise ValueError(f"{name} must hold at least one label; got an empty array.")
    counts = torch.bincount(y)
    if bool((counts == 0).any()):
        raise ValueError(f"{name} must hold every class in [0, {len(counts)}): classes "
                         f"{_short(torch.nonzero(counts == 0).flatten().numpy())} have none. Relabel the present classes "
                         "0..C'-1.")


@torch.no_grad()
@keeps_mode
def class_mean_cosines(model, x, y, *, batch_size: int = 1024):
    """Cosine matrix of class means of unit features, and the per-class spread ``1 - |mean|``.

    Parameters
    ----------
    model : module with ``features(x) -> (n, d)``
    x : Tensor (n, ...)
    y : LongTensor (n,)

    Returns
    -------
    (ndarray (C, C), ndarray (C,)), ``C = max(y) + 1``. The model's train/eval mode is restored.

    Raises
    ------
    ValueError
        If ``y`` is empty or a class in ``[0, C)`` has no sample (its mean, and every cosine with it,
        would be undefined), or the mean of a class's unit features is 0 (no direction).
    """
    check_feature_model(model)
    if not isinstance(x, torch.Tensor) or x.ndim < 1:
        raise TypeError(f"x must be a torch.Tensor of inputs (n, ...); got {type(x).__name__}.")
    y = check_labels(y, name="y", n=len(x), rows_of="x")
    _check_every_class(y)
    batch_size = check_int("batch_size", batch_size, 1)
    with _eval_mode(model):
        dev = next(model.parameters()).device
        feats = torch.cat([F.normalize(model.features(x[i:i + batch_size].to(dev)), dim=1).double().cpu()
                           for i in range(0, len(x), batch_size)])
    means = torch.stack([feats[y == c].mean(0) for c in range(int(y.max()) + 1)])
    norms = means.norm(dim=1)
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    flat = norms <= 16.0 * torch.finfo(dtype).eps  # the mean of unit vectors is at most 1 long: this is rounding
    if bool(flat.any()):
        raise ValueError(f"the unit features of classes {_short(torch.nonzero(flat).flatten().numpy())} average to 0 "
                         "(e.g. all-zero features): their mean has no direction, so its cosines are undefined.")
    unit = means / norms[:, None]
    return (unit @ unit.T).numpy(), (1.0 - norms).numpy()


@keeps_mode
def fit_contrastive(model, x, y, *, k: int = 4, setting: str = "ucl", temperature: float = 1.0,
                    psi: str = "infonce",
                    steps: int = 3000, batch_size: int = 256, lr: float = 0.05, momentum: float = 0.9,
                    weight_decay: float = 5e-4, augment=None, seed: int = 0, device=None) -> ContrastiveFit:
    """Train ``model.features`` with the generalized contrastive loss; SGD with a cosine schedule.

    Parameters
    ----------
    model : module with ``features(x) -> (n, d)``
    x : Tensor (n, ...)
        Training inputs (kept on ``device``; index batches from it).
    y : LongTensor (n,)
        Labels; the class proportions are the class probabilities ``pi_c`` of the theory (the paper's ``lambda``).
    k : int
        Negatives per anchor.
    setting : {"ucl", "scl"}
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"}
    steps, batch_size, lr, momentum, weight_decay
        Optimisation (``batch_size`` anchors per step).
    augment : callable, optional
        ``augment(batch, generator)`` applied to the inputs of each step (e.g. CIFAR crops). Every drawn anchor,
        positive and negative gets its own view (the batch holds ``batch_size * (k + 2)`` views): a sample drawn
        twice, e.g. an anchor drawn as its own positive, is two views, never one copy with similarity 1.
    seed : int
    device : torch.device, optional

    Returns
    -------
    ContrastiveFit (the model itself comes back trained, in the train/eval mode it was given in)

    Raises
    ------
    ValueError
        On bad ``setting`` or ``temperature``, or when the loss becomes NaN or infinite (the message names the step).
    """
    check_feature_model(model)
    if not isinstance(x, torch.Tensor) or x.ndim < 1:
        raise TypeError(f"x must be a torch.Tensor of inputs (n, ...); got {type(x).__name__}.")
    y = check_labels(y, name="y", n=len(x), rows_of="x")
    _check_every_class(y)
    check_in("setting", setting, ("ucl", "scl"))
    temperature = check_positive("temperature", temperature)
    k, batch_size = check_int("k (negatives per anchor)", k, 1), check_int("batch_size", batch_size, 1)
    check_in("psi", psi, ("infonce", "exp"))
    check_callable("augment", augment, allow_none=True)
    lr, momentum, weight_decay = check_sgd(lr=lr, momentum=momentum, weight_decay=weight_decay)
    steps, seed = check_int("steps", steps, 1), check_int("seed", seed, 0)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model.to(device).train()
    x_dev = x.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + np.cos(np.pi * s / steps)))
    start = time.perf_counter()

    def loss_at(step):  # the sampler (anchors, positives, UCL/SCL negatives) and step function
        anc, pos, neg = contrastive_batch_indices(y, batch_size, k, setting=setting, generator=gen)
        idx = torch.cat([anc, pos, neg.ravel()])
        if augment is None:
            rows, inverse = torch.unique(idx, return_inverse=True)  # forward each drawn sample once
            h = model.features(x_dev[rows.to(device)])[inverse.to(device)]
        else:  # every draw its own view: an anchor drawn as its own positive (or negative) is not its very copy
            h = model.features(augment(x_dev[idx.to(device)], None))
        a, p, n = h[:batch_size], h[batch_size:2 * batch_size], h[2 * batch_size:].view(batch_size, k, -1)
        return generalized_contrastive_loss(a, p, n, temperature=temperature, psi=psi)

    chunks = []
    for first in range(0, steps, CHECK_EVERY):  # stop within CHECK_EVERY steps of a non-finite loss
        chunks.append(run_steps(opt, sched, range(first, min(first + CHECK_EVERY, steps)), loss_at).double().cpu())
        check_finite(chunks[-1], first_step=first, lr=lr)
    losses = torch.cat(chunks).numpy()
    gram, spread = class_mean_cosines(model, x, y)
    return ContrastiveFit(gram, spread, losses, time.perf_counter() - start)
