"""Generalized contrastive losses with ``k`` negatives per anchor, and UCL/SCL sampling.

Letters (the book's notation): ``n`` anchors, ``k`` negatives per anchor, ``d`` feature dimension,
``tau`` the temperature (keyword ``temperature``; the paper writes ``t``).

With similarities ``s_+ = <f(x), f(x+)>`` and ``s_j = <f(x), f(x_j^-)>`` and the score gaps
``g_j = s_j - s_+``, the loss is ``psi(g_1, ..., g_k)`` for a strictly convex, argument-wise increasing
``psi``: InfoNCE ``psi(g) = log(1 + sum_j exp(g_j / tau))`` or the sum of exponentials
``psi(g) = sum_j exp(g_j / tau)``.

Non-finite inputs: nothing here checks logits or features for NaN or infinity (the check would wait
for the device on every step); a NaN or infinite input gives a NaN or infinite loss, and the trainers
stop on it, naming the step. An empty batch is refused where its mean is asked for.

References
----------
van den Oord, Li, Vinyals, "Representation learning with contrastive predictive coding",
arXiv:1807.03748 (2018) (InfoNCE); Nguyen, Aeron, Brown, Ishwar, arXiv:2605.11291 (2026),
Section 2 (the generalized loss, UCL and SCL sampling).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import (
    _as_float_tensor,
    check_batch,
    check_bool,
    check_in,
    check_int,
    check_labels,
    check_matrix,
    check_positive,
    check_reduction,
    reduce,
    unit_rows,
)

__all__ = [
    "info_nce",
    "generalized_contrastive_loss",
    "GeneralizedContrastiveLoss",
    "contrastive_batch_indices",
]

_PSIS = ("infonce", "exp")


def _similarities(anchor, positive, negatives, normalize):
    check_matrix("anchor", anchor)
    n, d = anchor.shape
    check_matrix("positive", positive, shape=(n, d))
    check_matrix("negatives", negatives, ndim=3, shape=(n, None, d))
    anchor, positive, negatives = (_as_float_tensor(name, v) for name, v in
                                   (("anchor", anchor), ("positive", positive), ("negatives", negatives)))
    dtype = torch.promote_types(torch.promote_types(anchor.dtype, positive.dtype), negatives.dtype)
    anchor, positive, negatives = anchor.to(dtype), positive.to(dtype), negatives.to(dtype)  # one precision: the widest
    if normalize:  # the floor follows the dtype: a zero row gives similarities 0, never 0/0
        anchor, positive, negatives = (unit_rows(v) for v in (anchor, positive, negatives))
    s_pos = (anchor * positive).sum(-1)  # (n,)
    s_neg = torch.einsum("nd,nkd->nk", anchor, negatives)  # (n, k)
    return s_neg - s_pos[:, None]  # (n, k): g_j = s_j - s_+


def generalized_contrastive_loss(
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negatives: torch.Tensor,
    *,
    temperature: float = 1.0,
    psi: str | Callable[[torch.Tensor], torch.Tensor] = "infonce",
    normalize: bool = True,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""``psi(s_1 - s_+, ..., s_k - s_+)`` per anchor.

    Parameters
    ----------
    anchor, positive : Tensor of shape (n, d)
    negatives : Tensor of shape (n, k, d)
        Row ``i`` holds the ``k`` negatives of anchor ``i``.
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"} or callable
        ``"infonce"``: ``log(1 + sum_j exp(g_j / tau))``; ``"exp"``: ``sum_j exp(g_j / tau)``;
        a callable receives the scaled gaps ``g / tau`` of shape (n, k) and returns (n,).
    normalize : bool
        L2-normalise the features first (the theory puts them on the unit sphere).
    reduction : {"none", "mean", "sum"}

    Returns
    -------
    Tensor of shape (n,) for ``reduction="none"``, else a scalar.

    Shape
    -----
    anchor (n, d), positive (n, d), negatives (n, k, d) -> (n,) or ().

    Examples
    --------
    >>> a = torch.tensor([[1.0, 0.0]]); p = a.clone(); neg = torch.tensor([[[0.0, 1.0]]])
    >>> round(generalized_contrastive_loss(a, p, neg, psi="exp").item(), 4)  # e^{(0 - 1) / 1}
    0.3679
    """
    t = check_positive("temperature", temperature)
    if not callable(psi):
        check_in("psi", psi, _PSIS)
    check_reduction(reduction)
    z = check_batch("anchor", _similarities(anchor, positive, negatives, check_bool("normalize", normalize)), reduction) / t
    if psi == "infonce":
        losses = torch.logsumexp(F.pad(z, (1, 0)), dim=-1)  # log(1 + sum exp) stably
    elif psi == "exp":
        losses = z.exp().sum(-1)
    else:
        losses = psi(z)
    return reduce(losses, reduction)


def info_nce(anchor, positive, negatives, temperature: float = 1.0, *, normalize: bool = True, reduction: str = "mean"):
    r"""InfoNCE with ``k`` explicit negatives: ``log(1 + sum_j exp((s_j - s_+) / tau))``.

    Equal to the cross-entropy of the logits ``[s_+, s_1, ..., s_k] / tau`` at label 0. Arguments as in
    :func:`generalized_contrastive_loss`.

    Examples
    --------
    >>> a = torch.tensor([[1.0, 0.0]]); p = torch.tensor([[1.0, 0.0]]); neg = torch.tensor([[[-1.0, 0.0]]])
    >>> round(float(info_nce(a, p, neg)), 6)  # log(1 + e^{-2})
    0.126928
    """
    return generalized_contrastive_loss(anchor, positive, negatives, temperature=temperature, psi="infonce", normalize=normalize,
                                        reduction=reduction)


class GeneralizedContrastiveLoss(nn.Module):
    """Module form of :func:`generalized_contrastive_loss` (holds ``temperature``, ``psi``, ``reduction``).

    Examples
    --------
    >>> a = torch.tensor([[1.0, 0.0]])
    >>> round(GeneralizedContrastiveLoss(temperature=0.5)(a, a, torch.tensor([[[0.0, 1.0]]])).item(), 4)  # log(1 + e^-2)
    0.1269
    """

    def __init__(self, temperature: float = 1.0, psi="infonce", *, normalize: bool = True, reduction: str = "mean"):
        super().__init__()
        self.temperature = check_positive("temperature", temperature)
        self.psi = psi if callable(psi) else check_in("psi", psi, _PSIS)
        self.normalize, self.reduction = check_bool("normalize", normalize), check_reduction(reduction)

    def forward(self, anchor, positive, negatives):
        return generalized_contrastive_loss(anchor, positive, negatives, temperature=self.temperature, psi=self.psi,
                                            normalize=self.normalize, reduction=self.reduction)


def contrastive_batch_indices(labels, num_anchors: int, k: int, *, setting: str = "ucl",
                              generator: torch.Generator | None = None):
    r"""Draw anchors, positives and ``k`` negatives per anchor, as indices into ``labels``.

    Anchors are uniform over samples (so class ``y`` comes with probability ``pi_y = n_y / n``); each
    positive is drawn uniformly and independently from the anchor's class (it may be the anchor
    itself); UCL negatives are uniform over all samples (``q(c|y) = pi_c``), SCL negatives
    uniform over the samples of the other classes (``q(c|y) = pi_c / (1 - pi_y)``).

    Parameters
    ----------
    labels : Tensor of shape (n,), any integer dtype
    num_anchors : int
    k : int
        Negatives per anchor, ``>= 1``.
    setting : {"ucl", "scl"}
    generator : torch.Generator, optional

    Returns
    -------
    anchor_idx : LongTensor (num_anchors,)
    positive_idx : LongTensor (num_anchors,)
    negative_idx : LongTensor (num_anchors, k)

    Raises
    ------
    ValueError
        ``k < 1``, unknown setting, or SCL with a single class.

    Examples
    --------
    >>> a, p, n = contrastive_batch_indices(torch.tensor([0, 0, 1]), 4, 2, setting="scl",
    ...                                     generator=torch.Generator().manual_seed(0))
    >>> a.shape, n.shape
    (torch.Size([4]), torch.Size([4, 2]))
    >>> bool((torch.tensor([0, 0, 1])[n] != torch.tensor([0, 0, 1])[a][:, None]).all())  # SCL: other classes only
    True
    """
    labels = check_labels(labels)
    if labels.numel() == 0:
        raise ValueError("labels must not be empty (anchors are drawn from them).")
    check_in("setting", setting, ("ucl", "scl"))
    num_anchors = check_int("num_anchors", num_anchors, 1)
    k = check_int("k (negatives per anchor)", k, 1)
    order = torch.argsort(labels, stable=True)
    counts = torch.bincount(labels)
    starts = torch.cumsum(counts, 0) - counts
    n = labels.numel()
    anchor = torch.randint(n, (num_anchors,), generator=generator)
    y = labels[anchor]
    u = torch.rand(num_anchors, generator=generator)
    positive = order[starts[y] + (u * counts[y]).long().clamp_max(counts[y] - 1)]
    if setting == "ucl":
        return anchor, positive, torch.randint(n, (num_anchors, k), generator=generator)
    others = (n - counts[y])[:, None]  # (B, 1)
    if int(others.min()) == 0:
        raise ValueError("setting='scl' needs at least two classes with samples.")
    r = (torch.rand(num_anchors, k, generator=generator) * others).long().clamp_max(others - 1)
    r = torch.where(r >= starts[y][:, None], r + counts[y][:, None], r)  # skip the anchor's class block
    return anchor, positive, order[r]
