r"""Long-tailed baselines: weighted CE, focal, LDAM(-DRW), logit adjustment and influence-balanced loss.

Letters (the book's notation): ``n`` samples, ``C`` classes, ``d`` feature dimension, ``n_c`` training
samples of class ``c``, ``pi_c = n_c / sum_c' n_c'`` the training prior, ``u_c`` the weight of class ``c``
in a weighted loss (keyword ``weight``; the papers write ``w_c``, a classifier row in the book), ``z_i`` the
logits and ``h_i`` the features of sample ``i``. Logits are ``(n, C)``, features ``(n, d)``, labels ``(n,)``
of any integer dtype.

Normalisers of ``reduction="mean"`` (they differ between public implementations,
and they change the effective learning rate):

==========================  =====================================================
loss                        ``"mean"`` divides by
==========================  =====================================================
:func:`weighted_cross_entropy`  ``normalizer="weights"`` (default): the sum of
                            ``u_{y_i}`` over the batch, as ``torch.nn.CrossEntropyLoss(weight=...)``
                            (Inv-Freq, CB, and LDAM-DRW's deferred weights);
                            ``normalizer="batch"``: the batch size ``n``.
:func:`focal_loss`          ``n`` (as the LDAM-DRW and IB code).
:func:`ldam_loss`           sum of ``w_{y_i}`` (``F.cross_entropy(weight=...)``, as LDAM-DRW).
:func:`logit_adjusted_loss` ``n``.
:func:`ib_loss`             ``n`` (as the IB code); the inverse-reweighted CE of
                            :mod:`ncbook.reweighting` also divides by ``n``.
==========================  =====================================================

Non-finite inputs: nothing here checks logits or features for NaN or infinity (the check would wait
for the device on every step); a NaN or infinite input gives a NaN or infinite loss, and the trainers
stop on it, naming the step. An empty batch is refused where its mean is asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_class_vector,
    check_counts,
    check_features,
    check_in,
    check_int,
    check_logits,
    check_logits_labels,
    check_nonnegative,
    check_positive,
    check_reduction,
    reduce,
)
from ..margins import ldam_margins
from ..reweighting import effective_number_weights, inverse_frequency_weights

__all__ = [
    "FocalLoss",
    "IBLoss",
    "LDAMLoss",
    "LogitAdjustedLoss",
    "WeightedCrossEntropy",
    "focal_loss",
    "ib_loss",
    "ldam_loss",
    "logit_adjusted_loss",
    "logit_adjustment",
    "weighted_cross_entropy",
]


# ----------------------------------------------------------------------------- weighted CE
def weighted_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    weight: Any = None,
    *,
    normalizer: str = "weights",
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Class-weighted cross-entropy with an explicit normaliser.

    .. math:: \mathcal L = \frac{\sum_i u_{y_i} \mathrm{CE}_i}{N_u}, \quad
              N_u = \sum_i u_{y_i} \ (\text{"weights"}) \ \text{or} \ n \ (\text{"batch"})

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    weight : array-like of shape (C,), optional
        Class weights ``u_c >= 0``; all ones by default (plain CE).
    normalizer : {"weights", "batch"}, default "weights"
        Used by ``reduction="mean"`` only. ``"weights"`` reproduces
        ``torch.nn.CrossEntropyLoss(weight=u)``, NaN included: a batch whose samples all have weight 0
        (only zero-weight classes present) has ``N_u = 0`` and a NaN mean (not checked: it would wait for
        the device every step; the trainers stop on it).
    reduction : {"none", "mean", "sum"}

    Returns
    -------
    Tensor: scalar, or (n,) per-sample ``u_{y_i} CE_i`` for ``"none"``.

    References
    ----------
    Inverse-frequency weights: e.g. the ``IBReweight`` rule of Park et al. 2021;
    class-balanced weights: Cui et al., CVPR 2019, arXiv:1901.05555.

    Examples
    --------
    >>> z, y = torch.tensor([[0.0, 0.0], [0.0, 0.0]]), torch.tensor([0, 1])
    >>> round(weighted_cross_entropy(z, y, [1.0, 3.0]).item(), 4)  # every CE is log 2
    0.6931
    >>> round(weighted_cross_entropy(z, y, [1.0, 3.0], normalizer="batch").item(), 4)  # (1 + 3) log 2 / 2
    1.3863
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    c = logits.shape[1]
    check_in("normalizer", normalizer, ("weights", "batch"))
    check_reduction(reduction)
    ce = F.cross_entropy(logits, labels, reduction="none")
    if weight is None:
        return reduce(ce, reduction)
    w = _as_class_vector("weight", weight, c).to(logits)[labels]
    if reduction == "mean" and normalizer == "weights":
        return (w * ce).sum() / w.sum()
    return reduce(w * ce, reduction)


class WeightedCrossEntropy(nn.Module):
    """Module form of :func:`weighted_cross_entropy`; ``weight`` is a buffer (or ``None``).

    Examples
    --------
    >>> loss = WeightedCrossEntropy([1.0, 3.0])
    >>> round(loss(torch.zeros(2, 2), torch.tensor([0, 1])).item(), 4)
    0.6931
    """

    def __init__(self, weight: Any = None, *, normalizer: str = "weights", reduction: str = "mean") -> None:
        super().__init__()
        self.normalizer = check_in("normalizer", normalizer, ("weights", "batch"))
        self.reduction = check_reduction(reduction)
        self.register_buffer("weight", None if weight is None else _as_class_vector("weight", weight, None))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return weighted_cross_entropy(logits, labels, self.weight, normalizer=self.normalizer, reduction=self.reduction)


# ----------------------------------------------------------------------------- focal
def focal_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    *,
    gamma: float = 1.0,
    weight: Any = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Focal loss, ``u_{y_i} (1 - softmax(z_i)_{y_i})^gamma CE_i``.

    ``gamma`` is the focusing exponent (Lin et al.'s letter, no symbol of the book); ``gamma = 0`` is
    (weighted) cross-entropy. Lin et al. use ``gamma = 2`` for detection; the LDAM-DRW and IB
    long-tail code use ``gamma = 1`` (the default here). Here the true-class probability
    ``softmax(z_i)_{y_i}`` (Lin et al.'s ``p_t``) comes from the unweighted softmax; the public
    long-tail code computes it as ``exp(-u_y CE)``, which differs only when ``weight`` is given.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    gamma : float, default 1.0
        Focusing exponent ``>= 0``.
    weight : array-like of shape (C,), optional
    reduction : {"none", "mean", "sum"}
        ``"mean"`` divides by ``n``.

    Returns
    -------
    Tensor: scalar, or (n,) for ``"none"``.

    Raises
    ------
    ValueError
        If ``gamma < 0``.

    References
    ----------
    Lin, Goyal, Girshick, He, Dollár, "Focal Loss for Dense Object Detection", ICCV 2017,
    eq. (5), arXiv:1708.02002.

    Examples
    --------
    >>> z, y = torch.tensor([[0.0, 0.0]]), torch.tensor([0])
    >>> round(focal_loss(z, y, gamma=1.0).item(), 4)  # (1 - 1/2) log 2
    0.3466
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    c = logits.shape[1]
    gamma = check_nonnegative("gamma", gamma)
    check_reduction(reduction)
    ce = F.cross_entropy(logits, labels, reduction="none")
    values = (1.0 - torch.exp(-ce)).clamp(min=0.0).pow(gamma) * ce
    if weight is not None:
        values = values * _as_class_vector("weight", weight, c).to(logits)[labels]
    return reduce(values, reduction)


class FocalLoss(nn.Module):
    """Module form of :func:`focal_loss`.

    Examples
    --------
    >>> round(FocalLoss(gamma=0.0)(torch.zeros(1, 2), torch.tensor([0])).item(), 4)  # gamma = 0: CE
    0.6931
    """

    def __init__(self, *, gamma: float = 1.0, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        self.gamma = check_nonnegative("gamma", gamma)
        self.reduction = check_reduction(reduction)
        self.register_buffer("weight", None if weight is None else _as_class_vector("weight", weight, None))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return focal_loss(logits, labels, gamma=self.gamma, weight=self.weight, reduction=self.reduction)


# ----------------------------------------------------------------------------- LDAM
def ldam_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    margins: Any,
    *,
    scale: float = 30.0,
    weight: Any = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""LDAM loss: cross-entropy of ``scale * z`` after the additive margin ``gamma^add_y`` is subtracted
    from the true-class logit ``z_y``, optionally class-weighted.

    The margin is subtracted from the true-class logit only, then every logit is
    multiplied by ``scale``. Cao et al. feed it cosine logits (a normalised classifier
    and normalised features), for which logits scaled by 30 are meant (the paper's ``s = 30``).

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    margins : array-like of shape (C,)
        The additive margins ``gamma^add_c >= 0`` (Cao et al.'s ``Delta_c``), e.g. from
        :func:`ncbook.margins.ldam_margins`.
    scale : float, default 30.0
    weight : array-like of shape (C,), optional
        Class weights ``u_c`` (DRW passes class-balanced weights after its switch epoch).
    reduction : {"none", "mean", "sum"}
        ``"mean"`` divides by ``sum_i u_{y_i}`` (``n`` without weights), as
        ``F.cross_entropy(weight=...)`` in the official code.

    Returns
    -------
    Tensor: scalar, or (n,) for ``"none"``.

    References
    ----------
    Cao et al., NeurIPS 2019, eq. (10) and Algorithm 1 (DRW), arXiv:1906.07413.

    Examples
    --------
    >>> round(ldam_loss(torch.tensor([[0.0, 0.0]]), torch.tensor([0]), [0.5, 0.5], scale=1.0).item(), 4)
    0.9741
    >>> round(ldam_loss(torch.tensor([[0, 0]]), torch.tensor([0]), [0.5, 0.5], scale=1.0).item(), 4)  # integers promoted
    0.9741
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    c = logits.shape[1]
    m = _as_class_vector("margins", margins, c).to(logits)
    s = check_positive("scale", scale)
    shifted = logits - F.one_hot(labels, c).to(logits) * m[labels].unsqueeze(1)
    return weighted_cross_entropy(s * shifted, labels, weight, normalizer="weights", reduction=reduction)


class LDAMLoss(nn.Module):
    """LDAM with deferred re-weighting (LDAM-DRW): class-balanced weights from ``drw_epoch`` on.

    Parameters
    ----------
    counts : array-like of shape (C,), int
    max_margin : float, default 0.5
    scale : float, default 30.0
    drw_epoch : int or None, default 160
        First epoch with weights (Cao et al.: 160 of 200); ``None`` never reweights (plain LDAM).
    beta : float, default 0.9999
        Effective-number parameter of the deferred weights (the book's ``zeta``; Cui et al.'s ``beta``).
    reduction : {"none", "mean", "sum"}

    Notes
    -----
    :meth:`set_epoch` is called by the training loop at each epoch start.

    References
    ----------
    Cao et al., NeurIPS 2019, arXiv:1906.07413.

    Examples
    --------
    >>> loss = LDAMLoss([16, 1], scale=1.0, drw_epoch=None)
    >>> loss.margins.tolist()  # gamma^add_c = 0.5 (n_min / n_c)^(1/4)
    [0.25, 0.5]
    >>> round(loss(torch.zeros(1, 2), torch.tensor([1])).item(), 4)  # log(1 + e^{0.5})
    0.9741
    """

    def __init__(self, counts: Any, *, max_margin: float = 0.5, scale: float = 30.0, drw_epoch: int | None = 160,
                 beta: float = 0.9999, reduction: str = "mean") -> None:
        super().__init__()
        counts = check_counts(counts, min_classes=2)
        self.register_buffer("margins", ldam_margins(counts, max_margin))
        self.register_buffer("drw_weight", effective_number_weights(counts, beta))
        self.scale = check_positive("scale", scale)
        self.drw_epoch = _check_epoch("drw_epoch", drw_epoch)
        self.reduction = check_reduction(reduction)
        self.register_buffer("epoch", torch.tensor(0, dtype=torch.int64))

    def set_epoch(self, epoch: int) -> None:
        self.epoch.fill_(int(epoch))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        on = self.drw_epoch is not None and int(self.epoch) >= self.drw_epoch
        return ldam_loss(logits, labels, self.margins, scale=self.scale, weight=self.drw_weight if on else None,
                         reduction=self.reduction)


# ----------------------------------------------------------------------------- logit adjustment
def logit_adjustment(logits: torch.Tensor, counts: Any, *, tau: float = 1.0) -> torch.Tensor:
    r"""Post-hoc logit adjustment ``z - tau log pi``; predict with its argmax.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    counts : array-like of shape (C,), int
        Training counts; ``pi_c = n_c / sum_c' n_c'``.
    tau : float, default 1.0
        The adjustment's strength, ``>= 0`` (Menon et al.'s ``tau``; not a temperature, which the
        book writes ``tau``: no book symbol).

    Returns
    -------
    Tensor of shape (n, C).

    References
    ----------
    Menon, Jayasumana, Rawat, Jain, Veit, Kumar, "Long-tail learning via logit
    adjustment", ICLR 2021, eq. (9), arXiv:2007.07314.

    Examples
    --------
    >>> logit_adjustment(torch.tensor([[6, 0]]), [9, 1]).numpy().round(4)  # 6 - log 0.9, 0 - log 0.1
    array([[6.1054, 2.3026]], dtype=float32)
    """
    logits = check_logits(logits)
    log_pi = _log_prior(counts, logits)
    return logits - check_nonnegative("tau", tau) * log_pi


def logit_adjusted_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    counts: Any,
    *,
    tau: float = 1.0,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Logit-adjusted cross-entropy ``CE(z + tau log pi, y)``.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    counts : array-like of shape (C,), int
    tau : float, default 1.0
        The adjustment's strength, ``>= 0``, as in :func:`logit_adjustment`.
    reduction : {"none", "mean", "sum"}
        ``"mean"`` divides by ``n``.

    References
    ----------
    Menon et al., ICLR 2021, eq. (10), arXiv:2007.07314.

    Examples
    --------
    >>> z, y = torch.zeros(1, 2), torch.tensor([0])
    >>> round(logit_adjusted_loss(z, y, [1, 1]).item(), 4)  # a uniform prior changes nothing
    0.6931
    >>> round(logit_adjusted_loss(z, y, [3, 1]).item(), 4)  # -log(3/4)
    0.2877
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    check_reduction(reduction)
    adjusted = logits + check_nonnegative("tau", tau) * _log_prior(counts, logits)
    return reduce(F.cross_entropy(adjusted, labels, reduction="none"), reduction)


class LogitAdjustedLoss(nn.Module):
    """Module form of :func:`logit_adjusted_loss`; ``log pi`` is a buffer.

    Examples
    --------
    >>> round(LogitAdjustedLoss([3, 1])(torch.zeros(1, 2), torch.tensor([0])).item(), 4)
    0.2877
    """

    def __init__(self, counts: Any, *, tau: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.register_buffer("counts", torch.as_tensor(check_counts(counts, min_classes=2)))
        self.tau = check_nonnegative("tau", tau)
        self.reduction = check_reduction(reduction)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return logit_adjusted_loss(logits, labels, self.counts, tau=self.tau, reduction=self.reduction)


# ----------------------------------------------------------------------------- influence-balanced
def ib_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    features: torch.Tensor,
    *,
    weight: Any = None,
    alpha: float = 1000.0,
    eps: float = 1e-3,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Influence-balanced loss: CE divided by each sample's influence.

    .. math:: \ell_i = u_{y_i} \, \mathrm{CE}_i \,
              \frac{\alpha}{\lVert \mathrm{softmax}(z_i) - \mathrm{onehot}(y_i) \rVert_1 \, \lVert h_i \rVert_1
              + \mathrm{eps}}

    The influence factor is not detached, as in the official code.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : Tensor of shape (n,), int64
    features : Tensor of shape (n, d)
        Penultimate features ``h_i`` (the official code passes their L1 norm).
    weight : array-like of shape (C,), optional
        Class weights ``u_c`` (the official ``IBReweight`` rule: inverse frequency, sum ``C``).
    alpha : float, default 1000.0
        The influence scale ``> 0`` (Park et al.'s ``alpha``; the book's ``alpha`` is the Tikhonov strength).
    eps : float, default 1e-3
        Added to the influence, ``> 0``.
    reduction : {"none", "mean", "sum"}
        ``"mean"`` divides by ``n``.

    References
    ----------
    Park, Lim, Jeon, Choi, "Influence-Balanced Loss for Imbalanced Visual
    Classification", ICCV 2021, eq. (7)-(8), arXiv:2110.02444.

    Examples
    --------
    >>> z, y, h = torch.zeros(1, 2), torch.tensor([0]), torch.tensor([[1.0, 1.0]])
    >>> round(ib_loss(z, y, h, alpha=1.0, eps=1e-12).item(), 4)  # log 2 / (|(1/2, 1/2) - (1, 0)|_1 |h|_1)
    0.3466
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    c = logits.shape[1]
    features = check_features(features, n=logits.shape[0])
    alpha = check_positive("alpha", alpha)
    eps = check_positive("eps", eps)
    check_reduction(reduction)
    # alpha / eps is 1e6 at the defaults: in float16/bfloat16 the factor and its gradient are formed in float32
    # (float32 and float64 inputs: unchanged), and only the loss is cast back
    wide = torch.promote_types(logits.dtype, torch.float32)
    grad_norm = (F.softmax(logits, dim=1) - F.one_hot(labels, c).to(logits)).to(wide).abs().sum(dim=1)  # (n,)
    influence = grad_norm * features.to(wide).abs().sum(dim=1)
    values = (F.cross_entropy(logits, labels, reduction="none").to(wide) * (alpha / (influence + eps))).to(logits.dtype)
    values = torch.where(torch.isfinite(influence), values, torch.full_like(values, float("nan")))  # inf features: NaN, not 0
    if weight is not None:
        values = values * _as_class_vector("weight", weight, c).to(logits)[labels]
    return reduce(values, reduction)


class IBLoss(nn.Module):
    """Influence-balanced loss with its start epoch: plain CE before ``start_epoch``.

    ``needs_features = True`` tells the training loop to call ``loss_fn(logits, labels, features)``.

    Parameters
    ----------
    counts : array-like of shape (C,), int, optional
        If given, class weights are :func:`~ncbook.reweighting.inverse_frequency_weights` (the
        official ``IBReweight`` rule); otherwise unweighted.
    alpha : float, default 1000.0
    start_epoch : int, default 100
        First epoch of the IB loss (100 of 200 in the official CIFAR recipe).
    reduction : {"none", "mean", "sum"}

    References
    ----------
    Park et al., ICCV 2021, arXiv:2110.02444.

    Examples
    --------
    >>> loss = IBLoss(alpha=1.0, eps=1e-12, start_epoch=0)
    >>> round(loss(torch.zeros(1, 2), torch.tensor([0]), torch.tensor([[1.0, 1.0]])).item(), 4)
    0.3466
    """

    needs_features = True

    def __init__(self, counts: Any = None, *, alpha: float = 1000.0, start_epoch: int = 100, eps: float = 1e-3,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.register_buffer("weight", None if counts is None else inverse_frequency_weights(check_counts(counts, min_classes=2)))
        self.alpha = check_positive("alpha", alpha)
        self.eps = check_positive("eps", eps)
        self.start_epoch = check_int("start_epoch", start_epoch, 0)
        self.reduction = check_reduction(reduction)
        self.register_buffer("epoch", torch.tensor(0, dtype=torch.int64))

    def set_epoch(self, epoch: int) -> None:
        self.epoch.fill_(int(epoch))

    def forward(self, logits: torch.Tensor, labels: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        if int(self.epoch) < self.start_epoch:
            return weighted_cross_entropy(logits, labels, reduction=self.reduction)
        return ib_loss(logits, labels, features, weight=self.weight, alpha=self.alpha, eps=self.eps,
                       reduction=self.reduction)


# ----------------------------------------------------------------------------- private helpers
def _as_class_vector(name, x, c):
    return check_class_vector(name, x, c)


def _log_prior(counts, like):
    n = torch.as_tensor(check_counts(counts, "counts"), dtype=torch.float64)
    if n.numel() != like.shape[-1]:
        raise ValueError(f"counts must have one entry per class ({like.shape[-1]}); got {n.numel()}.")
    return torch.log(n / n.sum()).to(like)


def _check_epoch(name, epoch):
    return check_int(name, epoch, 0, allow_none=True)
