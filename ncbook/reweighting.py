r"""Class weights for imbalanced classification: from counts, and from losses (inverse problem).

Letters: ``n`` samples in a batch, ``C`` classes, ``n_c`` samples of class ``c``
(in the training set for count-based weights, in the current batch for the
loss-based ones), ``L_c`` the mean per-sample cross-entropy of class ``c`` in the
current batch, ``B_c`` the number of batches that contained class ``c``.

Count-based weights (fixed before training):

* :func:`inverse_frequency_weights`: ``w_c = C (1/n_c) / sum_k (1/n_k)`` (sum ``C``).
* :func:`effective_number_weights`: Cui et al. 2019, ``w_c ∝ (1 - beta) / (1 - beta^{n_c})``,
  normalised to sum ``C``.

Loss-based weights (recomputed at every batch), Wang, Tong, Xie, Gao 2026
(arXiv:2605.10047), "inverse reweighting":

* :func:`inverse_weights`: the closed form of the Tikhonov problem
  ``min_w (w_c L_c - Lbar)^2 + alpha (w_c - w0_c)^2``, i.e.
  ``w_c* = (Lbar L_c + alpha w0_c) / (L_c^2 + alpha)``.
* :func:`macro_factors`: ``beta_c = max(B_c, 1)^(-gamma)``, normalised to mean 1.
* :func:`inverse_reweighted_ce` and :class:`InverseReweightedCE`: the loss
  ``(1/n) sum_i clamp(w*_{y_i} beta_{y_i}, 0, w_max) CE_i``.

Conventions follow the official code of the paper (class ``IGRReweightCELoss``): the
weights are *not* detached by default, the mean divides by the batch size (not by
the sum of weights), ``w_max = 10``, absent classes keep the prior, and ``B_c``
counts batches from the epoch at which reweighting starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._validation import (
    check_class_vector,
    check_counts,
    check_in,
    check_int,
    check_labels,
    check_logits_labels,
    check_nonnegative,
    check_positive,
    check_reduction,
    reduce,
)

__all__ = [
    "batch_class_losses",
    "effective_number_weights",
    "inverse_frequency_weights",
    "inverse_reweighted_ce",
    "inverse_weights",
    "InverseReweightedCE",
    "macro_factors",
    "prior_weights",
]

PRIORS = ("uniform", "inv_freq", "inv_sqrt_freq")


# ----------------------------------------------------------------------------- count-based weights
def inverse_frequency_weights(counts: Any) -> torch.Tensor:
    r"""Inverse-frequency class weights, normalised to sum ``C``.

    .. math:: w_c = C \, \frac{1/n_c}{\sum_k 1/n_k}

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

    .. math:: w_c \propto \frac{1 - \beta}{1 - \beta^{n_c}}, \qquad \sum_c w_c = C

    ``beta = 0`` gives uniform weights; ``beta -> 1`` tends to inverse frequency.

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Training samples per class, all positive.
    beta : float, default 0.9999
        In ``[0, 1)``; 0.9999 is the value used for CIFAR by Cui et al. and by the
        deferred re-weighting (DRW) of Cao et al.

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
    """
    n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
    beta = check_nonnegative("beta", beta)
    if beta >= 1.0:
        raise ValueError(f"beta must lie in [0, 1); got {beta!r}. Use inverse_frequency_weights for beta -> 1.")
    w = (1.0 - beta) / (1.0 - torch.pow(torch.tensor(beta, dtype=torch.float64), n))
    return w / w.sum() * n.numel()


def prior_weights(num_classes: int, prior: Any = "uniform", counts: Any = None) -> torch.Tensor:
    r"""The prior weights ``w0`` of the inverse problem, normalised to mean 1.

    Parameters
    ----------
    num_classes : int
        ``C >= 1``.
    prior : {"uniform", "inv_freq", "inv_sqrt_freq"} or array-like of shape (C,)
        ``"inv_freq"`` is ``w0_c ∝ 1/n_c``, ``"inv_sqrt_freq"`` is ``w0_c ∝ n_c^{-1/2}``
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
        w = torch.as_tensor(np.asarray(prior.detach().cpu() if isinstance(prior, torch.Tensor) else prior, dtype=np.float64))
        if w.ndim != 1 or not torch.isfinite(w).all() or (w <= 0).any():
            raise ValueError(f"prior must be a 1-D array of positive finite weights; got {w.tolist()}.")
    if w.numel() != c:
        raise ValueError(f"prior must have num_classes = {c} entries; got {w.numel()}.")
    return w / w.mean()


# ----------------------------------------------------------------------------- loss-based weights
def batch_class_losses(losses: torch.Tensor, labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    r"""Mean per-sample loss of each class in a batch, ``NaN`` for classes absent from it.

    .. math:: L_c = \frac{1}{n_c} \sum_{i: y_i = c} \ell_i

    Parameters
    ----------
    losses : Tensor of shape (n,), float
        Per-sample losses (autograd is kept).
    labels : Tensor of shape (n,), int64
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

    .. math:: \min_{w_c} \; (w_c L_c - \bar L)^2 + \alpha (w_c - w^{(0)}_c)^2,
              \qquad \bar L = \frac{1}{|P|} \sum_{c \in P} L_c ,

    whose minimiser is

    .. math:: w_c^* = \frac{\bar L L_c + \alpha w^{(0)}_c}{L_c^2 + \alpha}.

    ``alpha = 0`` gives ``w_c L_c = Lbar`` for every present class (exactly equal
    weighted losses); ``alpha -> inf`` gives the prior. Absent classes (NaN) keep
    ``w^{(0)}_c``. Autograd flows through ``class_losses`` unless the caller detaches.

    Parameters
    ----------
    class_losses : Tensor or array-like of shape (C,)
        Mean loss of each class in the batch, ``>= 0``; NaN marks an absent class.
    prior : array-like of shape (C,), optional
        ``w^{(0)}``; uniform (all ones) by default.
    alpha : float, default 0.0
        Tikhonov strength, ``>= 0`` (the official default is 0).
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

    .. math:: \beta_c = \frac{\max(B_c, m)^{-\gamma}}{\frac{1}{C} \sum_k \max(B_k, m)^{-\gamma}}

    Classes seen in fewer batches get larger factors; the mean over all ``C``
    classes is 1. ``gamma = 0`` gives all ones.

    Parameters
    ----------
    batch_counts : array-like of shape (C,)
        ``B_c >= 0``, batches containing class ``c`` so far.
    gamma : float, default 1.0
        Exponent ``>= 0``. The paper's README uses 1.0; the official function default is 0.5.
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
    b = torch.as_tensor(np.asarray(batch_counts.detach().cpu() if isinstance(batch_counts, torch.Tensor) else batch_counts, dtype=np.float64))
    if b.ndim != 1 or b.numel() == 0:
        raise ValueError(f"batch_counts must be a non-empty 1-D array; got shape {tuple(b.shape)}.")
    if not torch.isfinite(b).all() or (b < 0).any():
        raise ValueError(f"batch_counts must be finite and >= 0; got {b.tolist()}.")
    gamma = check_nonnegative("gamma", gamma)
    min_count = check_positive("min_count", min_count)
    beta = b.clamp(min=min_count).pow(-gamma)
    return beta / beta.mean()


# ----------------------------------------------------------------------------- the loss
def inverse_reweighted_ce(
    logits: torch.Tensor,
    labels: torch.Tensor,
    *,
    prior: Any = None,
    alpha: float = 0.0,
    macro: Any = None,
    detach: bool = False,
    clamp: float | None = 10.0,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Cross-entropy reweighted per batch by the inverse-problem weights.

    .. math:: \mathcal L = \frac{1}{n} \sum_{i=1}^n \operatorname{clip}\big(w^*_{y_i} \beta_{y_i}, 0, w_{\max}\big)\, \mathrm{CE}_i

    with ``w*`` from :func:`inverse_weights` on the batch class losses ``L_c`` and
    ``beta`` the macro factors. The mean divides by the batch size ``n``.

    With ``detach=False`` (the official code) and ``alpha = 0`` and no clipping,
    ``w*_c L_c = Lbar`` so the loss equals ``Lbar * sum_c beta_c n_c / n``: its
    gradient is the gradient of the class-balanced batch mean ``Lbar`` times a
    constant. With ``detach=True`` the gradient coefficient of ``L_c`` is
    ``(n_c / n) beta_c Lbar / L_c`` instead.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    prior : array-like of shape (C,), optional
        ``w^{(0)}`` (uniform by default), normalised to mean 1.
    alpha : float, default 0.0
        Tikhonov strength.
    macro : array-like of shape (C,), optional
        Macro factors ``beta`` (all ones by default).
    detach : bool, default False
        Stop gradients through the weights.
    clamp : float or None, default 10.0
        Upper clip ``w_max`` of the final weights (lower clip 0); ``None`` for none.
    eps : float, default 1e-8
    reduction : {"none", "mean", "sum"}

    Returns
    -------
    Tensor: scalar, or (n,) for ``reduction="none"`` (the weighted per-sample losses).

    Raises
    ------
    ValueError
        For mismatched shapes, labels out of range, ``alpha < 0`` or ``clamp <= 0``.

    References
    ----------
    Wang et al. 2026, arXiv:2605.10047; official class ``IGRReweightCELoss``.
    """
    logits, labels = check_logits_labels(logits, labels)
    n, c = logits.shape
    check_reduction(reduction)
    alpha = check_nonnegative("alpha", alpha)
    if clamp is not None:
        clamp = check_positive("clamp", clamp, allow_inf=True)
    w0 = torch.ones(c, dtype=logits.dtype, device=logits.device) if prior is None else prior_weights(c, prior).to(logits)
    beta = None if macro is None else _as_factor(macro, c).to(logits)
    return _irce(logits, labels, w0, alpha, beta, detach, clamp, check_nonnegative("eps", eps), reduction)[0]


def _irce(logits, labels, w0, alpha, beta, detach, clamp, eps, reduction):
    """Trusted core: returns (loss, presence mask)."""
    c = logits.shape[1]
    ce = F.cross_entropy(logits, labels, reduction="none")  # (n,)
    sums, n_c = _class_sums(ce.detach() if detach else ce, labels, c)
    present = n_c > 0
    w = _inverse_weights(sums / n_c.clamp(min=1), present, w0, alpha, eps)
    if beta is not None:
        w = w * beta
    if clamp is not None:
        w = w.clamp(min=0.0, max=clamp)
    return reduce(w[labels] * ce, reduction), present


class InverseReweightedCE(nn.Module):
    r"""The inverse-reweighted cross-entropy with macro factors, a switch epoch and resumable state.

    Before ``switch_epoch`` the loss is plain cross-entropy (mean over the batch)
    and nothing is counted. From ``switch_epoch`` on, every call in training mode
    adds 1 to ``B_c`` for each class present in the batch and returns
    :func:`inverse_reweighted_ce`. At each epoch start, :meth:`set_epoch` recomputes
    the macro factors ``beta = macro_factors(B, gamma)`` from the counts so far
    (so in the switch epoch itself, with ``B = 0``, ``beta = 1``), as the official
    training loop does.

    Parameters
    ----------
    num_classes : int
    alpha : float, default 0.0
    gamma : float, default 1.0
        Macro exponent; ``0`` switches the macro factor off.
    prior : {"uniform", "inv_freq", "inv_sqrt_freq"} or array-like, default "uniform"
    counts : array-like of shape (C,), optional
        Training counts, needed by the frequency priors.
    detach : bool, default False
        As the official code: weights carry gradient.
    clamp : float or None, default 10.0
    switch_epoch : int, default 0
        First epoch of reweighting (160 of 200 in the paper's CIFAR recipe).
    eps : float, default 1e-8
    reduction : {"none", "mean", "sum"}

    Attributes
    ----------
    batch_counts : Tensor of shape (C,), float64 buffer, ``B_c``.
    macro_weight : Tensor of shape (C,), float64 buffer, the current ``beta``.
    epoch : Tensor, int64 0-d buffer, the last epoch passed to :meth:`set_epoch`.

    Shape
    -----
    logits ``(n, C)``, labels ``(n,)`` -> scalar (or ``(n,)`` for ``reduction="none"``).

    References
    ----------
    Wang et al. 2026, arXiv:2605.10047; official class ``IGRReweightCELoss`` and the
    ``ce_then_reweighting`` mode of its training script.
    """

    def __init__(
        self,
        num_classes: int,
        *,
        alpha: float = 0.0,
        gamma: float = 1.0,
        prior: Any = "uniform",
        counts: Any = None,
        detach: bool = False,
        clamp: float | None = 10.0,
        switch_epoch: int = 0,
        eps: float = 1e-8,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        c = check_int("num_classes", num_classes, 1)
        self.num_classes = c
        self.alpha = check_nonnegative("alpha", alpha)
        self.gamma = check_nonnegative("gamma", gamma)
        self.clamp = None if clamp is None else check_positive("clamp", clamp, allow_inf=True)
        self.detach = bool(detach)
        self.eps = check_nonnegative("eps", eps)
        self.reduction = check_reduction(reduction)
        self.switch_epoch = check_int("switch_epoch", switch_epoch, 0)
        self.register_buffer("prior", prior_weights(c, prior, counts))
        self.register_buffer("batch_counts", torch.zeros(c, dtype=torch.float64))
        self.register_buffer("macro_weight", torch.ones(c, dtype=torch.float64))
        self.register_buffer("epoch", torch.tensor(0, dtype=torch.int64))

    @property
    def active(self) -> bool:
        """Whether the current epoch is at or after ``switch_epoch``."""
        return int(self.epoch) >= self.switch_epoch

    def set_epoch(self, epoch: int) -> None:
        """Record the epoch and, when reweighting is active, recompute the macro factors from ``B_c``."""
        self.epoch.fill_(int(epoch))
        if self.active:
            self.macro_weight.copy_(macro_factors(self.batch_counts, self.gamma))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits, labels = check_logits_labels(logits, labels, self.num_classes)
        if not self.active:
            return F.cross_entropy(logits, labels, reduction=self.reduction)
        loss, present = _irce(
            logits, labels, self.prior.to(logits), self.alpha, self.macro_weight.to(logits),
            self.detach, self.clamp, self.eps, self.reduction,
        )
        if self.training:
            self.batch_counts += present.to(self.batch_counts)
        return loss

    def extra_repr(self) -> str:
        return (f"num_classes={self.num_classes}, alpha={self.alpha}, gamma={self.gamma}, detach={self.detach}, "
                f"clamp={self.clamp}, switch_epoch={self.switch_epoch}")


# ----------------------------------------------------------------------------- private helpers
def _class_sums(values, labels, num_classes):
    sums = torch.zeros(num_classes, dtype=values.dtype, device=values.device).index_add(0, labels, values)
    n_c = torch.bincount(labels, minlength=num_classes).to(values.dtype)
    return sums, n_c


def _as_loss_tensor(x, name="class_losses"):
    if isinstance(x, torch.Tensor):
        t = x if x.is_floating_point() else x.double()
    else:
        t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if t.ndim != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of shape ({'C' if name == 'class_losses' else 'n'},); "
                         f"got shape {tuple(t.shape)}.")
    return t


def _as_factor(x, c):
    return check_class_vector("macro", x, c)


