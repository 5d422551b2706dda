"""MR2: class-dependent margins from per-class feature variability.

Zhu, Zhao, Cui, Sun, Zhou, Yang and Zhang, "Reducing Class-Wise Performance
Disparity via Margin Regularization" (MR2), ICLR 2026, arXiv:2602.00205.

Letters: ``n`` samples in a batch, ``C`` (the paper's ``K``) classes, ``d`` the
feature dimension. Shapes follow PyTorch: penultimate features ``phi`` are
``(n, d)``, a classifier weight is ``(C, d)``, logits are ``(n, C)``.

The pieces, one equation each:

* :func:`class_feature_statistics` -- per-class ``||mu_k||_p^2`` and the mean
  squared deviation ``||s_k||_p^2 = mean_i ||phi_i - mu_k||_p^2``;
* :func:`mr2_margins` -- ``gamma_k = c_bar K t_k / sum_j t_j`` with the cube root
  ``t_k = (||mu_k||^2 + ||s_k||^2)^(1/3)`` of the class-sensitive bound;
* :func:`margin_cross_entropy` -- the logit margin loss
  ``-log softmax(z / gamma_y)_y`` (a per-sample temperature, as in the official code);
* :func:`representation_margin_loss` -- ``ln[1 + sum_{x+} exp(||phi - phi+||^2 - 2 sbar)]``;
* :class:`MR2Loss` -- their sum with per-class EMA statistics kept in ``state_dict()``;
* :class:`CosineClassifier` -- a cosine head, for which MR2 needs ``p != 2``
  (with unit-norm features ``||mu||_2^2 + ||s||_2^2 = 1`` for every class);
* :func:`ldam_margins`, :func:`additive_margin_cross_entropy`,
  :class:`FixedMarginLoss` -- LDAM-style fixed additive margins as a baseline;
* :func:`difficulty_groups`, :func:`group_accuracy` -- our easy/medium/hard split.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._validation import (
    check_finite,
    check_in,
    check_labels,
    check_matrix,
    check_nonnegative,
    check_positive,
    check_same_length,
    reduce,
)

__all__ = [
    "CosineClassifier",
    "FixedMarginLoss",
    "MR2Loss",
    "additive_margin_cross_entropy",
    "class_feature_statistics",
    "cosine_logits",
    "difficulty_groups",
    "group_accuracy",
    "ldam_margins",
    "margin_cross_entropy",
    "mr2_margins",
    "representation_margin_loss",
]

MODES = ("paper", "code")
REP_REDUCTIONS = ("none", "mean", "sum", "class")


# --------------------------------------------------------------------------- validation
def _as_tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real array or tensor; got dtype {arr.dtype}.")
    return torch.as_tensor(arr, dtype=torch.float64)


def _check_stat(x, name: str) -> torch.Tensor:
    t = _as_tensor(x, name)
    if t.ndim != 1 or t.numel() < 1:
        raise ValueError(f"{name} must be a non-empty 1-D array of per-class values; got shape {tuple(t.shape)}.")
    if not t.is_floating_point():
        t = t.double()
    check_finite(name, t)
    bad = torch.nonzero(t < 0).flatten()
    if bad.numel():
        k = int(bad[0])
        raise ValueError(
            f"{name} must be >= 0 (squared norms); got {float(t[k]):.6g} for class {k}. "
            "Pass squared norms, not signed quantities."
        )
    return t


def _check_p(p: float) -> float:
    p = check_positive("p", p, allow_inf=True)
    if p < 1:
        raise ValueError(f"p must be >= 1 (an L_p norm); got {p!r}. Use p = 2 for the paper, 5 for the code.")
    return p


def _check_logits_labels(logits: torch.Tensor, labels) -> tuple[torch.Tensor, torch.Tensor]:
    check_matrix("logits", logits)
    labels = check_labels(labels, logits.shape[1]).to(logits.device)
    check_same_length(logits=logits, labels=labels)
    return logits, labels


# --------------------------------------------------------------------------- statistics and margins
def class_feature_statistics(
    features: torch.Tensor, labels, num_classes: int, *, p: float = 2.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Per-class squared mean norm and mean squared deviation of features.

    .. math::
        \|\mu_k\|_p^2,\qquad \|s_k\|_p^2 = \frac{1}{n_k}\sum_{i: y_i = k}\|\phi_i - \mu_k\|_p^2,
        \qquad \mu_k = \frac{1}{n_k}\sum_{i: y_i = k}\phi_i .

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
        Penultimate features ``phi`` (gradients are not needed; the result is detached).
    labels : array-like of int of shape (n,)
    num_classes : int
        ``C``; classes absent from the batch get zeros and count 0.
    p : float, default 2
        Norm order. The paper uses ``p = 2``; the official code ``p = 5``; for
        L2-normalised features the paper suggests ``p != 2`` (e.g. 3).

    Returns
    -------
    mean_sq_norms, mean_sq_devs : torch.Tensor of shape (C,)
    counts : torch.Tensor of shape (C,), int64

    Raises
    ------
    ValueError
        If ``features`` is not 2-D, lengths differ, labels are out of range, or ``p < 1``.

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 3 (class-sensitive bound) and Sec. 4 (EMA estimates).
    """
    check_matrix("features", features)
    labels = check_labels(labels, num_classes).to(features.device)
    check_same_length(features=features, labels=labels)
    p = _check_p(p)
    f = features.detach()
    counts = torch.bincount(labels, minlength=num_classes)
    sums = torch.zeros(num_classes, f.shape[1], dtype=f.dtype, device=f.device).index_add_(0, labels, f)
    means = sums / counts.clamp_min(1).unsqueeze(1).to(f.dtype)  # (C, d)
    mean_sq_norms = torch.linalg.vector_norm(means, ord=p, dim=1) ** 2
    dev = torch.linalg.vector_norm(f - means[labels], ord=p, dim=1) ** 2  # (n,)
    dev_sums = torch.zeros(num_classes, dtype=f.dtype, device=f.device).index_add_(0, labels, dev)
    mean_sq_devs = dev_sums / counts.clamp_min(1).to(f.dtype)
    return mean_sq_norms, mean_sq_devs, counts


def mr2_margins(mean_sq_norms, mean_sq_devs, *, c_bar: float = 1.0) -> torch.Tensor:
    r"""MR2's adaptive logit margins from per-class feature statistics.

    .. math::
        t_k = \left(\|\mu_k\|^2 + \|s_k\|^2\right)^{1/3},\qquad
        \gamma_k = \bar c\, K\, \frac{t_k}{\sum_{j=1}^K t_j},

    so the margins average to ``c_bar`` and grow like the cube root of the class's
    squared mean norm plus its mean squared deviation (hard, spread-out classes get
    larger margins). Equal statistics give ``gamma_k = c_bar`` for every class, and so
    does the degenerate case where every statistic is zero.

    Parameters
    ----------
    mean_sq_norms : array-like or torch.Tensor of shape (C,)
        ``||mu_k||^2`` (>= 0).
    mean_sq_devs : array-like or torch.Tensor of shape (C,)
        ``||s_k||^2`` (>= 0).
    c_bar : float, default 1.0
        Mean margin (> 0).

    Returns
    -------
    torch.Tensor of shape (C,)
        float64 for numpy input, else the input's dtype.

    Raises
    ------
    ValueError
        If ``c_bar <= 0``, a statistic is negative or not finite, or shapes differ.

    References
    ----------
    MR2, arXiv:2602.00205, the optimal margin of the class-sensitive bound (Sec. 3)
    and the margin rule of Sec. 4.

    Examples
    --------
    >>> mr2_margins([4.0, 4.0, 4.0], [1.0, 4.0, 23.0]).numpy().round(4)
    array([0.7645, 0.8942, 1.3413])
    """
    c_bar = check_positive("c_bar", c_bar)
    norms = _check_stat(mean_sq_norms, "mean_sq_norms")
    devs = _check_stat(mean_sq_devs, "mean_sq_devs").to(norms.device)
    if norms.shape != devs.shape:
        raise ValueError(
            f"mean_sq_norms and mean_sq_devs must have the same shape (C,); got {tuple(norms.shape)} "
            f"and {tuple(devs.shape)}."
        )
    t = (norms + devs).pow(1.0 / 3.0)
    total = t.sum()
    if total <= 0:
        return torch.full_like(t, c_bar)
    return c_bar * t.numel() * t / total


# --------------------------------------------------------------------------- logit margin loss
def margin_cross_entropy(logits: torch.Tensor, labels, margins, reduction: str = "mean") -> torch.Tensor:
    r"""MR2's logit margin loss: cross-entropy of logits divided by the true class's margin.

    .. math:: \ell_\gamma(z, y) = -\log \frac{\exp(z_y/\gamma_y)}{\sum_c \exp(z_c/\gamma_y)} .

    Dividing by ``gamma_y`` acts as a per-sample temperature: a class with a larger
    margin needs a larger logit gap ``z_y - z_c`` for the same loss. (This is the
    official code's form; it is not LDAM's subtraction, see
    :func:`additive_margin_cross_entropy`.) All margins equal to 1 give plain CE.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, C)
    labels : array-like of int of shape (n,)
    margins : array-like or torch.Tensor of shape (C,)
        Positive ``gamma_k``; treated as constants (no gradient flows into them).
    reduction : {"none", "mean", "sum"}, default "mean"

    Returns
    -------
    torch.Tensor of shape (n,) for ``"none"``, else a scalar.

    Raises
    ------
    ValueError
        If shapes disagree, labels are out of range or a margin is not positive.

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 4 (logit margin loss); official code, CIFAR ``MRFLoss``.

    Examples
    --------
    >>> z = torch.tensor([[3.0, 1.0, 0.0]])
    >>> round(margin_cross_entropy(z, [0], [0.8, 1.0, 1.2]).item(), 4)
    0.1004
    """
    logits, labels = _check_logits_labels(logits, labels)
    gamma = _as_tensor(margins, "margins")
    check_matrix("margins", gamma, ndim=1, shape=(logits.shape[1],))
    check_finite("margins", gamma)
    if (gamma <= 0).any():
        k = int(torch.nonzero(gamma <= 0).flatten()[0])
        raise ValueError(f"margins must be positive; got {float(gamma[k]):.6g} for class {k}.")
    gamma = gamma.detach().to(device=logits.device, dtype=logits.dtype)
    scaled = logits / gamma[labels].unsqueeze(1)
    return reduce(F.cross_entropy(scaled, labels, reduction="none"), reduction)


# --------------------------------------------------------------------------- representation margin loss
def _rep_terms(features: torch.Tensor, labels: torch.Tensor, sbar, temperature: float):
    """Per-anchor ``ln[1 + sum_pos exp((D - 2 sbar)/T)]`` and the has-positive mask."""
    n = features.shape[0]
    diff = features.unsqueeze(1) - features.unsqueeze(0)  # (n, n, d)
    sq_dist = (diff * diff).sum(-1)  # (n, n); exact zeros on the diagonal, smooth gradients
    positive = (labels.unsqueeze(1) == labels.unsqueeze(0)) & ~torch.eye(n, dtype=torch.bool, device=features.device)
    expo = ((sq_dist - 2.0 * sbar) / temperature).masked_fill(~positive, float("-inf"))
    expo = torch.cat([torch.zeros(n, 1, dtype=expo.dtype, device=expo.device), expo], dim=1)
    return torch.logsumexp(expo, dim=1), positive.any(dim=1)  # ln(1 + sum exp) stably


def representation_margin_loss(
    features: torch.Tensor,
    labels,
    sbar,
    *,
    temperature: float = 1.0,
    reduction: str = "mean",
    num_classes: int | None = None,
) -> torch.Tensor:
    r"""MR2's representation margin loss with in-batch positives.

    .. math::
        \ell_{\bar s}(x) = T \ln\Big[1 + \sum_{x^+ \in D_y \setminus \{x\}}
        \exp\Big(\frac{\|\phi(x) - \phi(x^+)\|^2 - 2\bar s}{T}\Big)\Big],
        \qquad \bar s = \frac1K\sum_k \|s_k\|^2 .

    The paper's form is ``T = 1`` with the outer factor 1; it penalises same-class
    pairs farther apart than ``2 sbar`` (the expected squared distance of two
    samples from a class of spread ``sbar``), pulling classes together. Computed
    stably as a log-sum-exp. Anchors with no positive in the batch are skipped (their
    per-anchor value is 0, never NaN); a batch of singletons gives a zero loss that
    still carries a graph.

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
    labels : array-like of int of shape (n,)
    sbar : float or 0-d torch.Tensor
        The mean squared deviation ``sbar`` (>= 0); treated as a constant.
    temperature : float, default 1.0
        ``T`` divides the exponent. The official code uses ``T = 10 d`` inside the
        exponent and multiplies the result by ``d / 10`` (not ``T``); :class:`MR2Loss`
        applies that outer factor in ``mode="code"``. Here the value is
        ``ln[...]`` with no outer factor.
    reduction : {"none", "mean", "sum", "class"}, default "mean"
        ``"none"``: per-anchor values (n,) (0 for anchors without a positive);
        ``"mean"``: mean over anchors that have a positive (0 if none);
        ``"sum"``: their sum; ``"class"``: the code's aggregation -- the mean over the
        anchors of each class with >= 2 samples, summed over classes, divided by
        ``num_classes``.
    num_classes : int, optional
        ``K``; required for ``reduction="class"``.

    Returns
    -------
    torch.Tensor of shape (n,) for ``"none"``, else a scalar.

    Raises
    ------
    ValueError
        If shapes disagree, ``sbar < 0``, ``temperature <= 0``, or ``"class"`` is asked
        without ``num_classes``.

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 4 (representation margin loss); official code
    ``MRFLoss`` (CIFAR and ImageNet) for the scaling and class aggregation.

    Examples
    --------
    >>> phi = torch.tensor([[0.0], [1.0], [3.0]])
    >>> round(representation_margin_loss(phi, [0, 0, 1], 0.25).item(), 4)  # ln(1 + e^0.5)
    0.9741
    """
    check_matrix("features", features)
    labels = check_labels(labels, num_classes).to(features.device)
    check_same_length(features=features, labels=labels)
    check_in("reduction", reduction, REP_REDUCTIONS)
    temperature = check_positive("temperature", temperature)
    if isinstance(sbar, torch.Tensor):
        if sbar.numel() != 1:
            raise ValueError(f"sbar must be a scalar; got shape {tuple(sbar.shape)}.")
        check_nonnegative("sbar", float(sbar))
        sbar = sbar.detach().to(device=features.device, dtype=features.dtype).reshape(())
    else:
        sbar = check_nonnegative("sbar", sbar)
    if reduction == "class" and num_classes is None:
        raise ValueError("reduction='class' divides by the number of classes: pass num_classes.")
    values, has_pos = _rep_terms(features, labels, sbar, temperature)
    if reduction == "none":
        return values
    if reduction == "sum":
        return values.sum()
    if reduction == "mean":
        return values.sum() / has_pos.sum().clamp_min(1)
    counts = torch.bincount(labels, minlength=num_classes).to(values.dtype)
    return (values / counts[labels]).sum() / num_classes  # anchors without positives add 0


# --------------------------------------------------------------------------- the MR2 module
class MR2Loss(nn.Module):
    r"""MR2: logit margin loss with EMA-adaptive margins plus the representation margin loss.

    .. math:: L = \ell_\gamma(z, y) + \lambda\, \ell_{\bar s}(x) .

    Each call first updates per-class EMAs of the batch statistics of
    :func:`class_feature_statistics` (features detached), then computes the margins
    with :func:`mr2_margins` and the two losses. Call as ``loss(logits, labels, features)``
    (``needs_features = True`` tells the training loop to pass the features).

    Parameters
    ----------
    num_classes : int
        ``K``.
    c_bar : float, default 1.0
        Mean margin. (The CIFAR code refers to an undefined ``self.c``; we use 1.)
    lam : float, default 0.1
        Weight ``lambda`` of the representation loss (0 = logit margins only).
    ema : float, default 0.9
        EMA decay in [0, 1) (0.9 CIFAR, 0.999 ImageNet in the official code).
    p : float, optional
        Norm order of both statistics: 2 in ``"paper"`` mode, 5 in ``"code"`` mode.
    mode : {"paper", "code"}, default "paper"
        ``"code"`` follows the official CIFAR code: ``p = 5``, ``sbar = 0``, exponent
        divided by ``10 d`` and the representation loss multiplied by ``d / 10`` with
        the class aggregation, EMAs reset at every epoch (through :meth:`set_epoch`),
        and classes with a single sample in a batch still update their EMA.
    logit_margins : bool, default True
        False replaces the margin loss by plain CE (``gamma = 1``): "representation only".
    normalize_features : bool, default False
        L2-normalise features before the statistics and the representation loss
        (use with :class:`CosineClassifier`; then take ``p != 2``).
    reset_each_epoch : bool, optional
        Reset the EMAs at each :meth:`set_epoch` call (default: True in code mode only).
    min_count : int, optional
        Classes with fewer samples in a batch skip the EMA update (2 in paper mode,
        ours: a singleton has zero deviation; 1 in code mode).

    Attributes (buffers, in ``state_dict()``)
    -----------------------------------------
    mean_sq_norm_ema, mean_sq_dev_ema : (C,) float32
    seen : (C,) bool -- classes whose EMA has been initialised (from their first batch).

    Notes
    -----
    Unseen classes (EMA still 0) would shrink the normaliser ``sum_k t_k``; we give
    them the mean statistics of the seen classes when computing margins (ours).

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 4 and Algorithm 1; official code ``MRFLoss``.
    """

    needs_features = True

    def __init__(
        self,
        num_classes: int,
        *,
        c_bar: float = 1.0,
        lam: float = 0.1,
        ema: float = 0.9,
        p: float | None = None,
        mode: str = "paper",
        logit_margins: bool = True,
        normalize_features: bool = False,
        reset_each_epoch: bool | None = None,
        min_count: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2; got {num_classes!r}.")
        self.mode = check_in("mode", mode, MODES)
        self.num_classes = num_classes
        self.c_bar = check_positive("c_bar", c_bar)
        self.lam = check_nonnegative("lam", lam)
        ema = check_nonnegative("ema", ema)
        if ema >= 1:
            raise ValueError(f"ema must lie in [0, 1) (an EMA decay); got {ema!r}.")
        self.ema = ema
        self.p = _check_p(p if p is not None else (5.0 if mode == "code" else 2.0))
        self.logit_margins = bool(logit_margins)
        self.normalize_features = bool(normalize_features)
        self.reset_each_epoch = (mode == "code") if reset_each_epoch is None else bool(reset_each_epoch)
        self.min_count = int(min_count if min_count is not None else (1 if mode == "code" else 2))
        if self.min_count < 1:
            raise ValueError(f"min_count must be >= 1; got {min_count!r}.")
        self.register_buffer("mean_sq_norm_ema", torch.zeros(num_classes))
        self.register_buffer("mean_sq_dev_ema", torch.zeros(num_classes))
        self.register_buffer("seen", torch.zeros(num_classes, dtype=torch.bool))
        self.last: dict[str, float] = {}

    def extra_repr(self) -> str:
        return (
            f"num_classes={self.num_classes}, mode={self.mode!r}, c_bar={self.c_bar}, lam={self.lam}, "
            f"ema={self.ema}, p={self.p}, logit_margins={self.logit_margins}"
        )

    def reset_statistics(self) -> None:
        """Forget the EMAs (every class becomes unseen)."""
        self.mean_sq_norm_ema.zero_()
        self.mean_sq_dev_ema.zero_()
        self.seen.zero_()

    def set_epoch(self, epoch: int) -> None:
        """Epoch hook of the training loop: resets the EMAs when ``reset_each_epoch``."""
        if self.reset_each_epoch:
            self.reset_statistics()

    @torch.no_grad()
    def update_statistics(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        """Fold one batch into the per-class EMAs (first batch of a class initialises it)."""
        norms, devs, counts = class_feature_statistics(features, labels, self.num_classes, p=self.p)
        upd = counts.to(self.seen.device) >= self.min_count
        norms, devs = norms.to(self.mean_sq_norm_ema), devs.to(self.mean_sq_dev_ema)
        decay = torch.where(self.seen, torch.full_like(norms, self.ema), torch.zeros_like(norms))
        new_norm = decay * self.mean_sq_norm_ema + (1 - decay) * norms
        new_dev = decay * self.mean_sq_dev_ema + (1 - decay) * devs
        self.mean_sq_norm_ema.copy_(torch.where(upd, new_norm, self.mean_sq_norm_ema))
        self.mean_sq_dev_ema.copy_(torch.where(upd, new_dev, self.mean_sq_dev_ema))
        self.seen |= upd

    def statistics(self) -> tuple[torch.Tensor, torch.Tensor]:
        """EMA statistics with unseen classes set to the mean of the seen ones."""
        norms, devs = self.mean_sq_norm_ema.clone(), self.mean_sq_dev_ema.clone()
        if self.seen.any() and not self.seen.all():
            norms[~self.seen] = norms[self.seen].mean()
            devs[~self.seen] = devs[self.seen].mean()
        return norms, devs

    def margins(self) -> torch.Tensor:
        """Current margins ``gamma`` (C,); ``c_bar`` everywhere before any update."""
        norms, devs = self.statistics()
        return mr2_margins(norms, devs, c_bar=self.c_bar)

    def sbar(self) -> torch.Tensor:
        """``sbar = mean_k ||s_k||^2`` over the EMAs (forced to 0 in code mode)."""
        if self.mode == "code":
            return torch.zeros((), device=self.mean_sq_dev_ema.device)
        return self.statistics()[1].mean()

    def forward(self, logits: torch.Tensor, labels, features: torch.Tensor) -> torch.Tensor:
        logits, labels = _check_logits_labels(logits, labels)
        check_matrix("features", features)
        check_same_length(logits=logits, features=features)
        phi = F.normalize(features, dim=1) if self.normalize_features else features
        self.update_statistics(phi, labels)
        if self.logit_margins:
            logit_loss = margin_cross_entropy(logits, labels, self.margins())
        else:
            logit_loss = F.cross_entropy(logits, labels)
        if self.lam == 0:
            self.last = {"logit_loss": float(logit_loss.detach()), "rep_loss": 0.0}
            return logit_loss
        if self.mode == "code":
            d = phi.shape[1]
            rep = representation_margin_loss(
                phi, labels, 0.0, temperature=10.0 * d, reduction="class", num_classes=self.num_classes
            ) * (d / 10.0)
        else:
            rep = representation_margin_loss(phi, labels, self.sbar(), reduction="mean")
        self.last = {"logit_loss": float(logit_loss.detach()), "rep_loss": float(rep.detach())}
        return logit_loss + self.lam * rep


# --------------------------------------------------------------------------- cosine classifier
def cosine_logits(features: torch.Tensor, weight: torch.Tensor, *, scale: float = 16.0) -> torch.Tensor:
    r"""Cosine-classifier logits ``z_c = s cos(phi, w_c)``.

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
    weight : torch.Tensor of shape (C, d)
    scale : float, default 16
        ``s`` > 0 (the logits lie in ``[-s, s]``).

    Returns
    -------
    torch.Tensor of shape (n, C)
    """
    check_matrix("features", features)
    check_matrix("weight", weight, shape=(None, features.shape[1]))
    scale = check_positive("scale", scale)
    return scale * F.normalize(features, dim=1) @ F.normalize(weight, dim=1).T


class CosineClassifier(nn.Module):
    r"""A cosine head with a ``(C, d)`` weight: ``z = s * normalize(phi) normalize(W)^T``.

    With L2-normalised features, ``||mu_k||_2^2 + ||s_k||_2^2 = mean ||phi_i||_2^2 = 1``
    for every class, so MR2 with ``p = 2`` gives every class ``c_bar``; use
    :class:`MR2Loss` with ``normalize_features=True`` and ``p != 2`` (e.g. 3).

    Parameters
    ----------
    in_features : int
        ``d``.
    num_classes : int
        ``C``.
    scale : float, default 16

    References
    ----------
    MR2, arXiv:2602.00205 (cosine classifiers with the L_p statistics).
    """

    def __init__(self, in_features: int, num_classes: int, *, scale: float = 16.0) -> None:
        super().__init__()
        self.scale = check_positive("scale", scale)
        self.weight = nn.Parameter(torch.empty(num_classes, in_features))
        nn.init.normal_(self.weight, std=1.0 / math.sqrt(in_features))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return cosine_logits(features, self.weight, scale=self.scale)


# --------------------------------------------------------------------------- fixed-margin baseline
def ldam_margins(counts, *, max_margin: float = 0.5) -> torch.Tensor:
    r"""LDAM's fixed margins ``Delta_k = max_margin * (n_min / n_k)^(1/4)``.

    On a balanced training set every class gets ``max_margin``.

    Parameters
    ----------
    counts : array-like of int of shape (C,)
        Training samples per class (> 0).
    max_margin : float, default 0.5

    Returns
    -------
    torch.Tensor of shape (C,), float64

    References
    ----------
    Cao, Wei, Gaidon, Arechiga and Ma, "Learning Imbalanced Datasets with
    Label-Distribution-Aware Margin Loss", NeurIPS 2019, arXiv:1906.07413, eq. (12).
    """
    from ._validation import check_counts

    n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
    max_margin = check_positive("max_margin", max_margin)
    m = n.pow(-0.25)
    return max_margin * m / m.max()


def additive_margin_cross_entropy(
    logits: torch.Tensor, labels, margins, *, scale: float = 1.0, reduction: str = "mean"
) -> torch.Tensor:
    r"""LDAM-style loss: CE of ``s (z - Delta_y e_y)`` (the true logit lowered by a fixed margin).

    Parameters
    ----------
    logits : torch.Tensor of shape (n, C)
    labels : array-like of int of shape (n,)
    margins : array-like or torch.Tensor of shape (C,)
        ``Delta_k >= 0``.
    scale : float, default 1.0
        ``s`` (LDAM uses 30 with a normalised head).
    reduction : {"none", "mean", "sum"}, default "mean"

    Returns
    -------
    torch.Tensor of shape (n,) for ``"none"``, else a scalar.

    References
    ----------
    Cao et al., NeurIPS 2019, arXiv:1906.07413, eq. (13).
    """
    logits, labels = _check_logits_labels(logits, labels)
    delta = _check_stat(margins, "margins")
    check_matrix("margins", delta, ndim=1, shape=(logits.shape[1],))
    scale = check_positive("scale", scale)
    delta = delta.to(device=logits.device, dtype=logits.dtype)
    shifted = logits - F.one_hot(labels, logits.shape[1]).to(logits.dtype) * delta[labels].unsqueeze(1)
    return reduce(F.cross_entropy(scale * shifted, labels, reduction="none"), reduction)


class FixedMarginLoss(nn.Module):
    """Thin module around :func:`additive_margin_cross_entropy` with stored margins.

    Parameters
    ----------
    margins : array-like of shape (C,)
        Fixed ``Delta_k`` (e.g. :func:`ldam_margins`; all equal on balanced data).
    scale : float, default 1.0
    """

    def __init__(self, margins, *, scale: float = 1.0) -> None:
        super().__init__()
        delta = _check_stat(margins, "margins")
        self.scale = check_positive("scale", scale)
        self.register_buffer("margins", delta.float())

    def forward(self, logits: torch.Tensor, labels) -> torch.Tensor:
        return additive_margin_cross_entropy(logits, labels, self.margins, scale=self.scale)


# --------------------------------------------------------------------------- easy / medium / hard
def difficulty_groups(class_accuracy, *, groups: Sequence[str] = ("easy", "medium", "hard")) -> dict[str, np.ndarray]:
    """Split classes into equal-size groups by a reference model's per-class accuracy.

    Classes are sorted by decreasing accuracy (ties by class index) and cut into
    ``len(groups)`` nearly equal parts with ``numpy.array_split`` (the first groups
    take the extra classes). This is our split, fixed once from the CE model and
    reused for every method, as the MR2 paper reports easy/medium/hard thirds.

    Parameters
    ----------
    class_accuracy : array-like of shape (C,)
    groups : sequence of str, default ("easy", "medium", "hard")

    Returns
    -------
    dict mapping group name to an int array of class indices.
    """
    acc = np.asarray(class_accuracy.detach().cpu() if isinstance(class_accuracy, torch.Tensor) else class_accuracy,
                     dtype=np.float64)
    if acc.ndim != 1 or acc.size < len(groups):
        raise ValueError(
            f"class_accuracy must be 1-D with at least {len(groups)} classes; got shape {acc.shape}."
        )
    order = np.lexsort((np.arange(acc.size), -acc))
    return {name: np.sort(part) for name, part in zip(groups, np.array_split(order, len(groups)))}


def group_accuracy(class_accuracy, groups: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean per-class accuracy within each group (classes weighted equally)."""
    acc = np.asarray(class_accuracy.detach().cpu() if isinstance(class_accuracy, torch.Tensor) else class_accuracy,
                     dtype=np.float64)
    return {name: float(acc[idx].mean()) for name, idx in groups.items()}
