"""Margin losses of MR2 and a fixed-margin baseline.

Zhu, Zhao, Cui, Sun, Zhou, Yang and Zhang, "Reducing Class-Wise Performance
Disparity via Margin Regularization" (MR2), ICLR 2026, arXiv:2602.00205.

Letters (the book's notation; the paper writes ``K``, ``phi(x)``, ``||s_y||^2``, ``sbar``, ``c_bar``):
``n`` samples in a batch, ``C`` classes, ``d`` the feature dimension, ``gamma_c`` the class margins,
``sigma_c^2`` the spread of class ``c`` and ``sigma_bar^2`` its mean over classes (keyword ``sbar``). Logits
are ``(n, C)``, penultimate features ``h`` ``(n, d)``. The margin rules (MR2's ``gamma_c``, LDAM's additive
``gamma^add_c``) live in :mod:`ncbook.margins`.

* :func:`margin_cross_entropy` -- the logit margin loss ``-log softmax(z / gamma_y)_y``;
* :func:`representation_margin_loss` -- ``ln[1 + sum_{x+} exp(||h - h+||^2 - 2 sigma_bar^2)]``;
* :class:`MR2Loss` -- their sum with per-class EMA statistics kept in ``state_dict()``;
* :class:`FixedMarginLoss` -- fixed additive margins (the module form of :func:`ldam_loss`).

Non-finite inputs: nothing here checks logits or features for NaN or infinity (the check would wait
for the device on every step); a NaN or infinite input gives a NaN or infinite loss, and the trainers
stop on it, naming the step. An empty batch is refused where its mean is asked for.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_bool,
    check_class_vector,
    check_features,
    check_in,
    check_int,
    check_labels,
    check_logits_labels,
    check_nonnegative,
    check_positive,
    check_reduction,
    reduce,
    unit_rows,
)
from ..margins import _check_p, class_feature_statistics, mr2_margins
from ._long_tail import ldam_loss

__all__ = ["FixedMarginLoss", "MR2Loss", "margin_cross_entropy", "representation_margin_loss"]

MODES = ("paper", "code")
REP_REDUCTIONS = ("none", "mean", "sum", "class")


# --------------------------------------------------------------------------- logit margin loss
def margin_cross_entropy(logits: torch.Tensor, labels, margins, reduction: str = "mean") -> torch.Tensor:
    r"""MR2's logit margin loss: cross-entropy of logits divided by the true class's margin.

    .. math:: \ell_\gamma(z, y) = -\log \frac{\exp(z_y/\gamma_y)}{\sum_c \exp(z_c/\gamma_y)} .

    Dividing by ``gamma_y`` acts as a per-sample temperature: a class with a larger
    margin needs a larger logit gap ``z_y - z_c`` for the same loss. (This is the
    official code's form; it is not LDAM's subtraction, see
    :func:`ldam_loss`.) All margins equal to 1 give plain CE.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, C)
    labels : array-like of int of shape (n,)
    margins : array-like or torch.Tensor of shape (C,)
        Positive margins ``gamma_c``; treated as constants (no gradient flows into them).
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
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    check_reduction(reduction)
    gamma = check_class_vector("margins", margins, logits.shape[1], positive=True)
    gamma = gamma.to(device=logits.device, dtype=logits.dtype)
    scaled = logits / gamma[labels].unsqueeze(1)
    return reduce(F.cross_entropy(scaled, labels, reduction="none"), reduction)


# --------------------------------------------------------------------------- representation margin loss
def _rep_terms(features: torch.Tensor, labels: torch.Tensor, sbar, temperature: float):
    """Per-anchor ``ln[1 + sum_pos exp((dist^2 - 2 sigma_bar^2) / tau)]`` and the has-positive mask."""
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
        \ell_{\mathrm{rep}}(x) = \tau \ln\Big[1 + \sum_{x^+ \in \mathcal B_y \setminus \{x\}}
        \exp\Big(\frac{\|h(x) - h(x^+)\|^2 - 2\bar\sigma^2}{\tau}\Big)\Big],
        \qquad \bar\sigma^2 = \frac1C\sum_c \sigma_c^2 ,

    with :math:`\mathcal B_y` the batch's samples of class :math:`y` (the paper writes :math:`\ell_{\bar s}`,
    :math:`\phi`, :math:`\bar s`). The positives are those of the batch, as in the official code; the
    paper's formula sums over :math:`D_y`, the other *training* samples of class :math:`y`, so with about
    ``b / C`` positives instead of ``n_c`` this batch value is not an estimate of the paper's (fewer terms,
    a smaller logarithm). The paper's form is ``tau = 1`` with the outer factor 1; it
    penalises same-class pairs farther apart than ``2 sigma_bar^2`` (the expected squared distance of two
    samples from a class of spread ``sigma_bar^2``), pulling classes together. Computed
    stably as a log-sum-exp. Anchors with no positive in the batch are skipped (their
    per-anchor value is 0, never NaN); a batch of singletons gives a zero loss that
    still carries a graph.

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
    labels : array-like of int of shape (n,)
    sbar : float or 0-d torch.Tensor
        The mean spread ``sigma_bar^2`` (>= 0; the paper's ``sbar``); treated as a constant.
    temperature : float, default 1.0
        ``tau`` divides the exponent. The official code uses ``tau = 10 d`` inside the
        exponent and multiplies the result by ``d / 10`` (not ``tau``); :class:`MR2Loss`
        applies that outer factor in ``mode="code"``. Here the value is
        ``ln[...]`` with no outer factor.
    reduction : {"none", "mean", "sum", "class"}, default "mean"
        ``"none"``: per-anchor values (n,) (0 for anchors without a positive);
        ``"mean"``: mean over anchors that have a positive (0 if none);
        ``"sum"``: their sum; ``"class"``: the code's aggregation -- the mean over the
        anchors of each class with >= 2 samples, summed over classes, divided by
        ``num_classes``.
    num_classes : int, optional
        ``C``; required for ``reduction="class"``.

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
    >>> h = torch.tensor([[0.0], [1.0], [3.0]])
    >>> round(representation_margin_loss(h, [0, 0, 1], 0.25).item(), 4)  # ln(1 + e^0.5)
    0.9741
    """
    features = check_features(features)
    num_classes = check_int("num_classes", num_classes, 1, allow_none=True)
    labels = check_labels(labels, num_classes, n=features.shape[0]).to(features.device)
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

    .. math:: \mathcal L = \ell_\gamma(z, y) + \lambda_{\mathrm{rep}}\, \ell_{\mathrm{rep}}(x) .

    Each call first updates per-class EMAs of the batch statistics of
    :func:`class_feature_statistics` (features detached), then computes the margins
    with :func:`mr2_margins` and the two losses. Call as ``loss(logits, labels, features)``
    (``needs_features = True`` tells the training loop to pass the features).

    Parameters
    ----------
    num_classes : int
        ``C``.
    c_bar : float, default 1.0
        The mean margin ``gamma_bar`` (the paper's ``c_bar``). (The CIFAR code refers to an undefined
        ``self.c``; we use 1.)
    lam : float, default 0.1
        The weight ``lambda_rep`` of the representation loss (the paper's ``lambda``; 0 = logit margins only).
    ema : float, default 0.9
        EMA decay in [0, 1) (0.9 CIFAR, 0.999 ImageNet in the official code).
    p : float, optional
        Norm order of both statistics: 2 in ``"paper"`` mode, 5 in ``"code"`` mode.
    mode : {"paper", "code"}, default "paper"
        ``"code"`` follows the official CIFAR code: ``p = 5``, ``sigma_bar^2 = 0``, exponent
        divided by ``10 d`` and the representation loss multiplied by ``d / 10`` with
        the class aggregation, EMAs reset at every epoch (through :meth:`set_epoch`),
        and classes with a single sample in a batch still update their EMA.
    logit_margins : bool, default True
        False replaces the margin loss by plain CE (``gamma = 1``): "representation only".
    normalize_features : bool, default False
        L2-normalise features before the statistics and the representation loss
        (use with :class:`ncbook.models.CosineClassifier`; then take ``p != 2``).
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
    Unseen classes (EMA still 0) would shrink the normaliser ``sum_c t_c``; we give
    them the mean statistics of the seen classes when computing margins (ours).

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 4 and Algorithm 1; official code ``MRFLoss``.

    Examples
    --------
    >>> loss = MR2Loss(2, lam=0.0)
    >>> z, y, h = torch.zeros(2, 2), torch.tensor([0, 1]), torch.eye(2)
    >>> round(loss(z, y, h).item(), 4)  # equal statistics: every margin is gamma_bar = c_bar = 1, plain CE
    0.6931
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
        num_classes = check_int("num_classes", num_classes, 2)
        self.mode = check_in("mode", mode, MODES)
        self.num_classes = num_classes
        self.c_bar = check_positive("c_bar", c_bar)
        self.lam = check_nonnegative("lam", lam)
        ema = check_nonnegative("ema", ema)
        if ema >= 1:
            raise ValueError(f"ema must lie in [0, 1) (an EMA decay); got {ema!r}.")
        self.ema = ema
        self.p = _check_p(p if p is not None else (5.0 if mode == "code" else 2.0))
        self.logit_margins = check_bool("logit_margins", logit_margins)
        self.normalize_features = check_bool("normalize_features", normalize_features)
        self.reset_each_epoch = (mode == "code") if reset_each_epoch is None else check_bool("reset_each_epoch", reset_each_epoch)
        self.min_count = check_int("min_count", min_count if min_count is not None else (1 if mode == "code" else 2), 1)
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
        """Current margins ``gamma_c`` (C,); ``gamma_bar`` (``c_bar``) everywhere before any update."""
        norms, devs = self.statistics()
        return mr2_margins(norms, devs, c_bar=self.c_bar)

    def sbar(self) -> torch.Tensor:
        """``sigma_bar^2 = mean_c sigma_c^2`` over the EMAs (forced to 0 in code mode)."""
        if self.mode == "code":
            return torch.zeros((), device=self.mean_sq_dev_ema.device)
        return self.statistics()[1].mean()

    def forward(self, logits: torch.Tensor, labels, features: torch.Tensor) -> torch.Tensor:
        logits, labels = check_logits_labels(logits, labels, self.num_classes, reduction="mean")
        features = check_features(features, n=logits.shape[0])
        phi = unit_rows(features, dim=1) if self.normalize_features else features
        self.update_statistics(phi, labels)
        if self.logit_margins:
            logit_loss = margin_cross_entropy(logits, labels, self.margins())
        else:
            logit_loss = F.cross_entropy(logits, labels)  # gamma = 1
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



# --------------------------------------------------------------------------- fixed-margin baseline
class FixedMarginLoss(nn.Module):
    """Module form of :func:`~ncbook.losses.ldam_loss` with fixed stored margins and no reweighting.

    Parameters
    ----------
    margins : array-like of shape (C,)
        Fixed additive margins ``gamma^add_c >= 0`` (Cao et al.'s ``Delta_c``; e.g.
        :func:`ncbook.margins.ldam_margins`; all equal on balanced data).
    scale : float, default 1.0
        Multiplies every logit (LDAM scales by 30 with a normalised head).
    reduction : {"none", "mean", "sum"}

    Examples
    --------
    >>> loss = FixedMarginLoss([0.5, 0.5])
    >>> round(loss(torch.tensor([[0.0, 0.0]]), torch.tensor([0])).item(), 4)  # ln(1 + e^0.5)
    0.9741
    """

    def __init__(self, margins, *, scale: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.scale = check_positive("scale", scale)
        self.reduction = check_reduction(reduction)
        self.register_buffer("margins", check_class_vector("margins", margins))

    def forward(self, logits: torch.Tensor, labels) -> torch.Tensor:
        return ldam_loss(logits, labels, self.margins, scale=self.scale, reduction=self.reduction)
