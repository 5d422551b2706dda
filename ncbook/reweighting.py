r"""Class weights for imbalanced classification: from counts, and from losses (inverse problem).

Letters (the book's notation; the papers write ``w_c`` for a class weight, ``gamma`` for the macro exponent
and Cui et al. ``beta`` for the class-balanced parameter): ``C`` classes, ``n_c`` training samples of class
``c``, a batch ``B`` of ``b`` samples with ``b_c`` in class ``c``, ``L_c`` the mean per-sample cross-entropy of
class ``c`` in the current batch and ``Lbar`` their plain mean over the classes present ``C_B``, ``B_c`` the
number of batches that contained class ``c``, ``u_c`` the weight of class ``c``.

Count-based weights (fixed before training):

* :func:`inverse_frequency_weights`: ``u_c = C (1/n_c) / sum_c' (1/n_c')`` (sum ``C``).
* :func:`effective_number_weights`: Cui et al. 2019, ``u_c ∝ (1 - zeta) / (1 - zeta^{n_c})``,
  normalised to sum ``C`` (keyword ``beta`` for ``zeta``).

Loss-based weights (recomputed at every batch), Wang, Tong, Xie, Gao 2026
(arXiv:2605.10047), "inverse reweighting":

* :func:`inverse_weights`: the closed form of the Tikhonov problem
  ``min_u (u_c L_c - Lbar)^2 + alpha (u_c - u0_c)^2``, i.e.
  ``u*_c = (Lbar L_c + alpha u0_c) / (L_c^2 + alpha)``.
* :func:`macro_factors`: ``beta_c = max(B_c, 1)^(-kappa)``, normalised to mean 1 (keyword ``gamma`` for
  ``kappa``).
* :func:`batch_class_losses`: the per-class mean losses ``L_c`` of a batch.

The loss that uses these rules, ``(1/b) sum_i clamp(u*_{y_i} beta_{y_i}, 0, u_max) CE_i``,
is :func:`ncbook.losses.inverse_reweighted_ce` (Module :class:`ncbook.losses.InverseReweightedCE`).

Conventions follow the official code of the paper (class ``IGRReweightCELoss``): the
weights are *not* detached by default, the mean divides by the batch size (not by
the sum of weights), ``u_max = 10``, absent classes keep the prior, and ``B_c``
counts batches from the epoch at which reweighting starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._validation import (
    as_float64,
    check_counts,
    check_in,
    check_int,
    check_labels,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "batch_class_losses",
    "effective_number_weights",
    "inverse_frequency_weights",
    "inverse_weights",
    "macro_factors",
    "prior_weights",
]

PRIORS = ("uniform", "inv_freq", "inv_sqrt_freq")


# ----------------------------------------------------------------------------- count-based weights
def inverse_frequency_weights(counts: Any) -> torch.Tensor:
    r"""Inverse-frequency class weights, normalised to sum ``C``.

    .. math:: u_c = C \, \frac{1/n_c}{\sum_{c'} 1/n_{c'}}

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Training samples per class, all positive.

    Returns
    -------
    Tensor of shape (C,), float64, summing to ``C``.

    Raises
    ------
    ValueError
        If a count is ``<= 0`` or not an integer.

    References
    ----------
    The ``IBReweight`` rule of Park et al., "Influence-Balanced Loss for Imbalanced
    Visual Classification", ICCV 2021 (official code).

    Examples
    --------
    >>> inverse_frequency_weights([3, 1]).tolist()
    [0.5, 1.5]
    """
    n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
    inv = 1.0 / n
    return inv / inv.sum() * n.numel()


def effective_number_weights(counts: Any, beta: float = 0.9999) -> torch.Tensor:
    r"""Class-balanced weights from the effective number of samples, normalised to sum ``C``.

    .. math:: u_c \propto \frac{1 - \zeta}{1 - \zeta^{n_c}}, \qquad \sum_c u_c = C

    ``zeta = 0`` gives uniform weights; ``zeta -> 1`` tends to inverse frequency.

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Training samples per class, all positive.
    beta : float, default 0.9999
        The book's ``zeta`` (Cui et al.'s ``beta``), in ``[0, 1)``; 0.9999 is the value used for CIFAR by
        Cui et al. and by the deferred re-weighting (DRW) of Cao et al.

    Returns
    -------
    Tensor of shape (C,), float64, summing to ``C``.

    Raises
    ------
    ValueError
        If a count is ``<= 0`` or ``beta`` is outside ``[0, 1)``.

    References
    ----------
    Cui, Jia, Lin, Song, Belongie, "Class-Balanced Loss Based on Effective Number of
    Samples", CVPR 2019, eq. (3)-(4), arXiv:1901.05555.

    Examples
    --------
    >>> [round(v, 4) for v in effective_number_weights([10, 1], 0.9).tolist()]  # the rare class weighs more
    [0.2662, 1.7338]
    """
    n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
    beta = check_nonnegative("beta", beta)
    if beta >= 1.0:
        raise ValueError(f"beta must lie in [0, 1); got {beta!r}. Use inverse_frequency_weights for beta -> 1.")
    w = (1.0 - beta) / (1.0 - torch.pow(torch.tensor(beta, dtype=torch.float64), n))
    return w / w.sum() * n.numel()


def prior_weights(num_classes: int, prior: Any = "uniform", counts: Any = None) -> torch.Tensor:
    r"""The prior weights ``u^(0)`` of the inverse problem, normalised to mean 1.

    Parameters
    ----------
    num_classes : int
        ``C >= 1``.
    prior : {"uniform", "inv_freq", "inv_sqrt_freq"} or array-like of shape (C,)
        ``"inv_freq"`` is ``u0_c ∝ 1/n_c``, ``"inv_sqrt_freq"`` is ``u0_c ∝ n_c^{-1/2}``
        (both need ``counts``); an array is used as given after normalisation.
    counts : array-like of shape (C,), optional
        Training samples per class.

    Returns
    -------
    Tensor of shape (C,), float64, mean 1.

    Raises
    ------
    ValueError
        For an unknown name, a frequency prior without ``counts``, a wrong length, or
        a non-positive entry.

    Examples
    --------
    >>> prior_weights(2, "inv_freq", [3, 1]).tolist()  # 1 / n_c, normalised to mean 1
    [0.5, 1.5]
    """
    c = check_int("num_classes", num_classes, 1)
    if isinstance(prior, str):
        check_in("prior", prior, PRIORS)
        if prior == "uniform":
            return torch.ones(c, dtype=torch.float64)
        if counts is None:
            raise ValueError(f"prior={prior!r} needs the training counts; pass counts=(n_1, ..., n_C).")
        n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
        w = 1.0 / n if prior == "inv_freq" else n.rsqrt()
    else:
        w = torch.as_tensor(as_float64(prior, "prior"))
        if w.ndim != 1 or not torch.isfinite(w).all() or (w <= 0).any():
            raise ValueError(f"prior must be a 1-D array of positive finite weights; got {w.tolist()}.")
    if w.numel() != c:
        raise ValueError(f"prior must have num_classes = {c} entries; got {w.numel()}.")
    return w / w.mean()


# ----------------------------------------------------------------------------- loss-based weights
def batch_class_losses(losses: torch.Tensor, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    r"""Mean per-sample loss of each class in a batch, ``NaN`` for classes absent from it.

    .. math:: L_c = \frac{1}{b_c} \sum_{i \in \mathcal B: y_i = c} \ell_i

    Parameters
    ----------
    losses : Tensor of shape (b,), float
        Per-sample losses of the batch (autograd is kept).
    labels : Tensor of shape (b,), any integer dtype
    num_classes : int

    Returns
    -------
    Tensor of shape (C,), same dtype as ``losses``.

    Raises
    ------
    ValueError
        If ``losses`` is not 1-D, ``labels`` has another length or a label is outside
        ``[0, num_classes)``.
    TypeError
        If ``labels`` are not integers.

    Examples
    --------
    >>> batch_class_losses(torch.tensor([1.0, 3.0, 2.0]), torch.tensor([0, 0, 2]), 3).tolist()
    [2.0, nan, 2.0]
    """
    num_classes = check_int("num_classes", num_classes, 1)
    losses = _as_loss_tensor(losses, "losses")
    labels = check_labels(labels, num_classes, n=losses.shape[0])
    sums, n_c = _class_sums(losses, labels, num_classes)
    return torch.where(n_c > 0, sums / n_c.clamp(min=1), torch.full_like(sums, float("nan")))


def inverse_weights(class_losses: Any, *, prior: Any = None, alpha: float = 0.0, eps: float = 1e-8) -> torch.Tensor:
    r"""Closed-form solution of the Tikhonov inverse problem for class weights.

    For each class present (``L_c`` not NaN) solve

    .. math:: \min_{u_c} \; (u_c L_c - \bar L)^2 + \alpha (u_c - u^{(0)}_c)^2,
              \qquad \bar L = \frac{1}{|\mathcal C_{\mathcal B}|} \sum_{c \in \mathcal C_{\mathcal B}} L_c ,

    with :math:`\mathcal C_{\mathcal B}` the classes present in the batch, whose minimiser is

    .. math:: u_c^\star = \frac{\bar L L_c + \alpha u^{(0)}_c}{L_c^2 + \alpha}.

    ``alpha = 0`` gives ``u_c L_c = Lbar`` for every present class (exactly equal
    weighted losses); ``alpha -> inf`` gives the prior. Absent classes (NaN) keep
    ``u^(0)_c``. Autograd flows through ``class_losses`` unless the caller detaches.

    Parameters
    ----------
    class_losses : Tensor or array-like of shape (C,)
        Mean loss of each class in the batch, ``>= 0``; NaN marks an absent class.
    prior : array-like of shape (C,), optional
        The prior weights ``u^(0)`` (the paper's ``w^(0)``); uniform (all ones) by default.
    alpha : float, default 0.0
        The Tikhonov strength ``alpha >= 0`` (the official default is 0).
    eps : float, default 1e-8
        Added to the denominator, as in the official code, so that a class with zero
        loss at ``alpha = 0`` gets weight 0 instead of NaN.

    Returns
    -------
    Tensor of shape (C,): float64 for array input, the input dtype for a float tensor.

    Raises
    ------
    ValueError
        If a loss is negative or infinite, ``alpha < 0``, or the prior has the wrong length.

    References
    ----------
    Wang, Tong, Xie, Gao, "Rethinking Loss Reweighting for Imbalance Learning as an
    Inverse Problem: A Neural Collapse Point of View", ICML 2026, arXiv:2605.10047
    (the Tikhonov problem and its closed form; official class ``IGRReweightCELoss``).

    Examples
    --------
    >>> inverse_weights([0.5, 1.0, 2.0, 4.0], eps=0.0).tolist()
    [3.75, 1.875, 0.9375, 0.46875]
    """
    losses = _as_loss_tensor(class_losses)
    alpha = check_nonnegative("alpha", alpha)
    eps = check_nonnegative("eps", eps)
    present = ~torch.isnan(losses)
    if bool(((losses < 0) & present).any()) or bool(torch.isinf(losses).any()):
        raise ValueError(f"class_losses must be >= 0 and finite (NaN marks an absent class); got {losses.tolist()}.")
    w0 = torch.ones_like(losses) if prior is None else prior_weights(losses.numel(), prior).to(losses)
    return _inverse_weights(torch.where(present, losses, torch.zeros_like(losses)), present, w0, alpha, eps)


def _inverse_weights(losses, present, w0, alpha, eps):
    """Closed form on trusted inputs; ``losses`` holds finite values everywhere (0 where absent)."""
    if not bool(present.any()):
        return w0.clone()
    lbar = losses[present].mean()
    # absent classes get a dummy denominator of 1 so that no 0/0 reaches autograd
    den = torch.where(present, losses * losses + alpha + eps, torch.ones_like(losses))
    return torch.where(present, (lbar * losses + alpha * w0) / den, w0)


def macro_factors(batch_counts: Any, gamma: float = 1.0, *, min_count: float = 1.0) -> torch.Tensor:
    r"""Macro factors from the number of batches that contained each class.

    .. math:: \beta_c = \frac{\max(B_c, m)^{-\kappa}}{\frac{1}{C} \sum_{c'} \max(B_{c'}, m)^{-\kappa}}

    with ``m`` the ``min_count``. Classes seen in fewer batches get larger factors; the mean over all ``C``
    classes is 1. ``kappa = 0`` gives all ones.

    Parameters
    ----------
    batch_counts : array-like of shape (C,)
        ``B_c >= 0``, batches containing class ``c`` so far.
    gamma : float, default 1.0
        The exponent ``kappa >= 0`` (the paper's ``gamma``). The paper's README uses 1.0; the official
        function default is 0.5.
    min_count : float, default 1.0
        ``m > 0``: counts below it are raised to it (so unseen classes are finite).

    Returns
    -------
    Tensor of shape (C,), float64, mean 1.

    Raises
    ------
    ValueError
        If a count is negative or not finite, ``gamma < 0`` or ``min_count <= 0``.

    References
    ----------
    Wang et al. 2026, arXiv:2605.10047 (macro batch-count reweighting; official
    method ``compute_macro_weight_from_batch_count``).

    Examples
    --------
    >>> macro_factors([1, 4], gamma=1.0).tolist()
    [1.6, 0.4]
    """
    b = torch.as_tensor(as_float64(batch_counts, "batch_counts"))
    if b.ndim != 1 or b.numel() == 0:
        raise ValueError(f"batch_counts must be a non-empty 1-D array; got shape {tuple(b.shape)}.")
    if not torch.isfinite(b).all() or (b < 0).any():
        raise ValueError(f"batch_counts must be finite and >= 0; got {b.tolist()}.")
    gamma = check_nonnegative("gamma", gamma)
    min_count = check_positive("min_count", min_count)
    beta = b.clamp(min=min_count).pow(-gamma)
    return beta / beta.mean()


# ----------------------------------------------------------------------------- private helpers
def _class_sums(values, labels, num_classes):
    sums = torch.zeros(num_classes, dtype=values.dtype, device=values.device).index_add(0, labels, values)
    n_c = torch.bincount(labels, minlength=num_classes).to(values.dtype)
    return sums, n_c


def _as_loss_tensor(x, name="class_losses"):
    if isinstance(x, torch.Tensor):
        t = x if x.is_floating_point() else x.double()
    else:
        t = torch.as_tensor(as_float64(x, name))
    if t.ndim != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of shape ({'C' if name == 'class_losses' else 'n'},); "
                         f"got shape {tuple(t.shape)}.")
    return t
