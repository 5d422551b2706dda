"""Inverse-reweighted cross-entropy: CE weighted per batch by the inverse-problem class weights.

Letters (the book's notation; the paper writes ``w_c`` for the class weights and ``gamma`` for the macro
exponent): a batch ``B`` of ``b`` samples, ``b_c`` of them in class ``c``, ``C`` classes; ``L_c`` the batch's
mean cross-entropy of class ``c`` and ``Lbar`` their plain mean over the classes present; ``u_c`` the class
weights, ``beta_c`` the macro factors, ``kappa`` their exponent (keyword ``gamma``). Logits are ``(b, C)``,
labels ``(b,)``.
The weight rules (:func:`~ncbook.reweighting.inverse_weights`,
:func:`~ncbook.reweighting.macro_factors`, :func:`~ncbook.reweighting.prior_weights`) live in
:mod:`ncbook.reweighting`; this module holds the loss and its Module.

Non-finite inputs: nothing here checks logits or features for NaN or infinity (the check would wait
for the device on every step); a NaN or infinite input gives a NaN or infinite loss, and the trainers
stop on it, naming the step. An empty batch is refused where its mean is asked for.

References
----------
Wang et al. 2026, arXiv:2605.10047; official class ``IGRReweightCELoss``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    check_bool,
    check_class_vector,
    check_int,
    check_logits_labels,
    check_nonnegative,
    check_positive,
    check_reduction,
    reduce,
)
from ..reweighting import _class_sums, _inverse_weights, macro_factors, prior_weights  # the rule's trusted cores

__all__ = ["InverseReweightedCE", "inverse_reweighted_ce"]


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

    .. math:: \mathcal L = \frac{1}{b} \sum_{i \in \mathcal B} \operatorname{clip}\big(u^\star_{y_i} \beta_{y_i},
              0, u_{\max}\big)\, \mathrm{CE}_i

    with ``u*`` from :func:`ncbook.reweighting.inverse_weights` on the batch class losses ``L_c`` and
    ``beta_c`` the macro factors. The mean divides by the batch size ``b``.

    With ``detach=False`` (the official code) and ``alpha = 0`` and no clipping,
    ``u*_c L_c = Lbar`` so the loss equals ``Lbar * sum_c beta_c b_c / b``: within one batch its
    gradient is the gradient of the class-balanced batch mean ``Lbar`` times a
    factor of that batch. With ``detach=True`` the gradient coefficient of ``L_c`` is
    ``(b_c / b) beta_c Lbar / L_c`` instead.

    Parameters
    ----------
    logits : Tensor of shape (b, C)
    labels : Tensor of shape (b,), any integer dtype
    prior : array-like of shape (C,), optional
        The prior weights ``u^(0)`` (uniform by default), normalised to mean 1.
    alpha : float, default 0.0
        The Tikhonov strength ``alpha >= 0``.
    macro : array-like of shape (C,), optional
        Macro factors ``beta_c`` (all ones by default).
    detach : bool, default False
        Stop gradients through the weights.
    clamp : float or None, default 10.0
        Upper clip ``u_max`` of the final weights (lower clip 0); ``None`` for none.
    eps : float, default 1e-8
    reduction : {"none", "mean", "sum"}

    Returns
    -------
    Tensor: scalar, or (b,) for ``reduction="none"`` (the weighted per-sample losses).

    Raises
    ------
    ValueError
        For mismatched shapes, labels out of range, ``alpha < 0`` or ``clamp <= 0``.

    References
    ----------
    Wang et al. 2026, arXiv:2605.10047; official class ``IGRReweightCELoss``.

    Examples
    --------
    >>> z, y = torch.zeros(2, 2), torch.tensor([0, 1])
    >>> round(inverse_reweighted_ce(z, y).item(), 4)  # equal class losses: every weight is 1, plain CE
    0.6931
    """
    logits, labels = check_logits_labels(logits, labels, reduction=reduction)
    n, c = logits.shape
    check_reduction(reduction)
    alpha = check_nonnegative("alpha", alpha)
    if clamp is not None:
        clamp = check_positive("clamp", clamp, allow_inf=True)
    w0 = torch.ones(c, dtype=logits.dtype, device=logits.device) if prior is None else prior_weights(c, prior).to(logits)
    beta = None if macro is None else check_class_vector("macro", macro, c).to(logits)
    detach = check_bool("detach", detach)
    return _irce(logits, labels, w0, alpha, beta, detach, clamp, check_nonnegative("eps", eps), reduction)[0]


def _irce(logits, labels, w0, alpha, beta, detach, clamp, eps, reduction):
    """Trusted core: returns (loss, presence mask)."""
    c = logits.shape[1]
    ce = F.cross_entropy(logits, labels, reduction="none")  # (n,)
    sums, n_c = _class_sums(ce.detach() if detach else ce, labels, c)
    present = n_c > 0
    # the weights hold squared class losses: in float16/bfloat16 a loss of 300 squared overflows, so they are
    # formed in float32 at least (float32 and float64 inputs: unchanged) and only the result is cast back
    wide = torch.promote_types(logits.dtype, torch.float32)
    w = _inverse_weights((sums / n_c.clamp(min=1)).to(wide), present, w0.to(wide), alpha, eps)
    if beta is not None:
        w = w * beta.to(wide)
    if clamp is not None:
        w = w.clamp(min=0.0, max=clamp)
    return reduce(w.to(logits.dtype)[labels] * ce, reduction), present


class InverseReweightedCE(nn.Module):
    r"""The inverse-reweighted cross-entropy with macro factors, a switch epoch and resumable state.

    Before ``switch_epoch`` the loss is plain cross-entropy (mean over the batch)
    and nothing is counted. From ``switch_epoch`` on, every call in training mode
    adds 1 to ``B_c`` for each class present in the batch and returns
    :func:`inverse_reweighted_ce`. At each epoch start, :meth:`set_epoch` recomputes
    the macro factors ``beta_c = ncbook.reweighting.macro_factors(B, gamma)`` (exponent ``kappa`` =
    ``gamma``) from the counts so far (so in the switch epoch itself, with ``B_c = 0``, ``beta_c = 1``),
    as the official
    training loop does.

    Parameters
    ----------
    num_classes : int
    alpha : float, default 0.0
        The Tikhonov strength ``alpha >= 0``.
    gamma : float, default 1.0
        The macro exponent ``kappa`` (the paper's ``gamma``); ``0`` switches the macro factor off.
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
    macro_weight : Tensor of shape (C,), float64 buffer, the current ``beta_c``.
    epoch : Tensor, int64 0-d buffer, the last epoch passed to :meth:`set_epoch`.

    Shape
    -----
    logits ``(b, C)``, labels ``(b,)`` -> scalar (or ``(b,)`` for ``reduction="none"``).

    References
    ----------
    Wang et al. 2026, arXiv:2605.10047; official class ``IGRReweightCELoss`` and the
    ``ce_then_reweighting`` mode of its training script.

    Examples
    --------
    >>> loss = InverseReweightedCE(2)
    >>> round(loss(torch.zeros(2, 2), torch.tensor([0, 1])).item(), 4)
    0.6931
    >>> loss.batch_counts.tolist()  # each class was in one batch
    [1.0, 1.0]
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
        self.detach = check_bool("detach", detach)
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
        logits, labels = check_logits_labels(logits, labels, self.num_classes, reduction=self.reduction)
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
