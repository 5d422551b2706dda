"""An unconstrained-features model for the contrastive risk: free unit features per sample.

Letters (the book's notation): ``n`` samples, ``C`` classes, ``d`` feature dimension, ``k`` negatives,
``tau`` the temperature (keyword ``temperature``), ``pi_c = n_c / n`` the class probabilities.
Features ``H`` are ``(n, d)`` rows ``h_i`` on the unit sphere (the paper writes them as columns).

The risk is the exact expectation over anchors ``i`` (uniform), positives ``i+`` drawn
independently and uniformly from the anchor's class (``i+ = i`` allowed), and ``k`` i.i.d.
negatives (UCL: uniform over all samples; SCL: uniform over the other classes' samples); the
sum over negative tuples is reduced to multisets of samples, as in :mod:`ncbook.contrastive`.
Its minimum is the convex program's: within-class collapse and the optimal Gram ``A*``.

Non-finite inputs: :func:`contrastive_ufm_risk` is a training objective and does not check its
features for NaN or infinity (that would wait for the device on every step): they give a NaN risk.

References
----------
Nguyen et al., arXiv:2605.11291 (2026); Mixon, Parshall, Pi, "Neural collapse with
unconstrained features", Sampling Theory, Signal Processing, and Data Analysis (2022).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .._status import SolverError, settle_status
from .._validation import (check_bool, check_counts, check_features, check_in, check_int, check_labels, check_positive,
                           unit_rows)
from ..contrastive import negative_multisets

__all__ = ["ContrastiveUFMResult", "contrastive_ufm_risk", "fit_contrastive_ufm"]


def _sample_weights(labels: torch.Tensor, k: int, setting: str, dtype):
    """Multisets of ``k`` sample indices ``(T, n)`` and per-anchor weights ``(T, n)``."""
    n = labels.numel()
    counts, _ = negative_multisets(np.full(n, 1.0 / n), k)
    lab = labels.numpy()
    weights = np.empty((counts.shape[0], n))
    for i in range(n):
        q = np.ones(n) if setting == "ucl" else (lab != lab[i]).astype(np.float64)
        _, w = negative_multisets(q / q.sum(), k)
        weights[:, i] = w
    return torch.as_tensor(counts, dtype=dtype), torch.as_tensor(weights, dtype=dtype)


def contrastive_ufm_risk(features, labels, k: int, *, setting: str = "ucl", temperature: float = 1.0, psi: str = "infonce",
                         normalize: bool = True, _tables=None) -> torch.Tensor:
    r"""Exact expected generalized contrastive loss of free per-sample features.

    Parameters
    ----------
    features : Tensor of shape (n, d)
        Rows are L2-normalised first when ``normalize``.
    labels : LongTensor of shape (n,)
        Every class in ``0..C-1`` present.
    k : int
        Negatives per anchor (the multiset enumeration has ``binom(n + k - 1, k)`` rows: keep
        ``n`` small).
    setting : {"ucl", "scl"}
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"}

    Returns
    -------
    Tensor (scalar), differentiable in ``features``.

    Examples
    --------
    >>> round(float(contrastive_ufm_risk(torch.eye(2, dtype=torch.float64), torch.tensor([0, 1]), 1)), 4)
    0.5032
    """
    features = check_features(features)
    labels = check_labels(labels, n=features.shape[0]).to(features.device)
    if labels.numel() == 0:
        raise ValueError("features must hold at least one sample; got none.")
    k = check_int("k (negatives per anchor)", k, 1)
    check_in("setting", setting, ("ucl", "scl"))
    check_in("psi", psi, ("infonce", "exp"))
    t = check_positive("temperature", temperature)
    return _risk(features, labels, k, setting, t, psi, check_bool("normalize", normalize), _tables)


def _risk(features, labels, k, setting, t, psi, normalize, tables):
    h = unit_rows(features, dim=1) if normalize else features  # a zero row stays 0, in float16 too
    n = h.shape[0]
    same = (labels[:, None] == labels[None, :]).to(h.dtype)
    pos_w = same / same.sum(1, keepdim=True)  # (n, n): positive p for anchor i
    s = h @ h.T / t
    if psi == "exp":
        neg_w = torch.ones_like(same) if setting == "ucl" else 1.0 - same
        neg_w = neg_w / neg_w.sum(1, keepdim=True)
        per = k * (neg_w * s.exp()).sum(1, keepdim=True) * torch.exp(-s)  # (i, p)
        return (pos_w * per).sum() / n
    counts, weights = tables if tables is not None else _sample_weights(labels, k, setting, h.dtype)
    q = counts @ s.exp().T  # (M, n): sum_j n_j exp(s_ij)
    d = 1.0 + q[:, :, None] * torch.exp(-s)[None, :, :]  # (M, i, p)
    per = (weights[:, :, None] * torch.log(d)).sum(0)  # (i, p)
    return (pos_w * per).sum() / n


@dataclass(frozen=True)
class ContrastiveUFMResult:
    """Result of :func:`fit_contrastive_ufm`.

    Attributes
    ----------
    solution : ndarray (n, d)
        Unit features.
    labels : ndarray (n,)
    class_gram : ndarray (C, C)
        Gram matrix of the (raw) class means; its diagonal is 1 exactly when each class collapsed.
    objective : float
    status : {"optimal", "inaccurate"}
        ``"optimal"`` when the largest gradient entry fell below ``tol``; ``"inaccurate"``
        (with an :class:`ncbook.InaccurateSolutionWarning`) when ``steps`` ran out first.
    iterations : int
    seconds : float
    """

    solution: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    class_gram: np.ndarray = field(repr=False)
    objective: float
    status: str
    iterations: int
    seconds: float


def fit_contrastive_ufm(counts, k: int, *, setting: str = "ucl", temperature: float = 1.0, psi: str = "infonce",
                        dim: int | None = None, steps: int = 3000, lr: float = 0.5, tol: float = 1e-11,
                        seed: int = 0) -> ContrastiveUFMResult:
    r"""Gradient descent on free unit features ``H = V / |V|`` for :func:`contrastive_ufm_risk`.

    Plain gradient descent on ``V`` (the radial part of the gradient vanishes), from a random
    start, with the rows renormalised after each step.

    Parameters
    ----------
    counts : array-like of int, shape (C,)
        Samples per class (class probabilities ``pi = counts / n``).
    k : int
    setting, temperature, psi
        As in :func:`contrastive_ufm_risk`.
    dim : int, optional
        Feature dimension (default ``C``).
    steps : int
        Maximum number of gradient steps.
    lr : float
        Step size.
    tol : float
        Stop when the largest gradient entry is below ``tol``.
    seed : int

    Returns
    -------
    ContrastiveUFMResult

    Raises
    ------
    ValueError
        For bad counts, ``setting``, ``lr`` or ``steps``.
    ncbook.SolverError
        If a gradient turns non-finite.

    Warns
    -----
    ncbook.InaccurateSolutionWarning
        If ``steps`` run out before the gradient falls below ``tol``.

    Examples
    --------
    >>> res = fit_contrastive_ufm([2, 1, 1], 1, steps=3000, lr=1.0, tol=1e-8)
    >>> res.status, res.class_gram.round(3)[0].tolist()  # collapsed classes, the majority pushed away
    ('optimal', [1.0, -0.658, -0.658])
    """
    counts = check_counts(counts, min_classes=2)
    check_in("setting", setting, ("ucl", "scl"))
    lr = check_positive("lr", lr)
    steps = check_int("steps", steps, 1)
    k = check_int("k (negatives per anchor)", k, 1)
    check_in("psi", psi, ("infonce", "exp"))
    temperature = check_positive("temperature", temperature)
    tol = check_positive("tol", tol)
    seed = check_int("seed", seed, 0)
    dim = check_int("dim", dim, 1, allow_none=True)
    c = counts.size
    d = c if dim is None else int(dim)
    labels = torch.repeat_interleave(torch.arange(c), torch.as_tensor(counts))
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(labels.numel(), d, generator=gen, dtype=torch.float64)
    v = torch.nn.functional.normalize(v, dim=1).requires_grad_(True)
    tables = None if psi == "exp" else _sample_weights(labels, k, setting, torch.float64)
    start, certified, it, gmax = time.perf_counter(), False, 0, float("nan")
    for it in range(1, steps + 1):
        loss = _risk(v, labels, k, setting, temperature, psi, True, tables)
        (g,) = torch.autograd.grad(loss, v)
        gmax = g.abs().max().item()
        if not math.isfinite(gmax):
            raise SolverError(f"fit_contrastive_ufm: non-finite gradient at step {it}; lower lr.")
        if gmax < tol:
            certified = True
            break
        with torch.no_grad():
            v -= lr * g
            v.copy_(torch.nn.functional.normalize(v, dim=1))
    status = settle_status(certified, solver="fit_contrastive_ufm",
                           detail=f"largest gradient entry {gmax:.3g} >= tol {tol:.3g} after {it} steps; raise steps")
    h = torch.nn.functional.normalize(v.detach(), dim=1)
    means = torch.stack([h[labels == y].mean(0) for y in range(c)])
    return ContrastiveUFMResult(h.numpy(), labels.numpy(), (means @ means.T).numpy(), float(loss.detach()),
                                status, it, time.perf_counter() - start)
