"""MR2: class-dependent margins from per-class feature variability.

Zhu, Zhao, Cui, Sun, Zhou, Yang and Zhang, "Reducing Class-Wise Performance
Disparity via Margin Regularization" (MR2), ICLR 2026, arXiv:2602.00205.

Letters (the book's notation; the paper writes ``K`` classes, ``phi(x)`` features, ``||s_y||^2`` for the
spread and ``c_bar`` for the mean margin): ``n`` samples in a batch, ``C`` classes, ``d`` the feature
dimension, ``c`` a class. Shapes follow PyTorch: penultimate features ``h_i`` are the rows of an
``(n, d)`` tensor, a classifier weight is ``(C, d)``, logits are ``(n, C)``.

The pieces, one equation each:

* :func:`class_feature_statistics` -- per-class ``||mu_c||_p^2`` and the spread
  ``sigma_c^2 = mean_{i: y_i = c} ||h_i - mu_c||_p^2`` (in the ``p``-norm);
* :func:`mr2_margins` -- ``gamma_c = gamma_bar C t_c / sum_c' t_c'`` with the cube root
  ``t_c = (||mu_c||^2 + sigma_c^2)^(1/3)`` of the class-sensitive bound (``gamma_bar``: keyword ``c_bar``);
* :func:`ldam_margins` -- LDAM's fixed additive margins ``gamma^add_c ∝ n_c^{-1/4}`` (a baseline; Cao et
  al.'s ``Delta_c``).

These are margin rules only. The losses that use them (``margin_cross_entropy``,
``representation_margin_loss``, ``MR2Loss``, ``ldam_loss``, ``FixedMarginLoss``) live in
:mod:`ncbook.losses`; the cosine head in :mod:`ncbook.models`; the easy/medium/hard
grouping in :mod:`ncbook.metrics`.

Non-finite inputs: :func:`class_feature_statistics` runs on every batch of MR2 training and does not
check for NaN or infinity: such a feature gives NaN statistics (and a NaN loss the trainers stop on).
"""

from __future__ import annotations

import numpy as np
import torch

from ._validation import (
    check_counts,
    check_features,
    check_finite,
    check_int,
    check_labels,
    check_positive,
)

__all__ = [
    "class_feature_statistics",
    "ldam_margins",
    "mr2_margins",
]


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
        raise ValueError(f"p must be >= 1 (the order of a p-norm); got {p!r}. Use p = 2 for the paper, 5 for the code.")
    return p


# --------------------------------------------------------------------------- statistics and margins
def class_feature_statistics(
    features: torch.Tensor, labels, num_classes: int, *, p: float = 2.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Per-class squared mean norm and spread (mean squared deviation) of features.

    .. math::
        \|\mu_c\|_p^2,\qquad \sigma_c^2 = \frac{1}{n_c}\sum_{i: y_i = c}\|h_i - \mu_c\|_p^2,
        \qquad \mu_c = \frac{1}{n_c}\sum_{i: y_i = c} h_i

    (the paper writes :math:`\|\hat s_y\|^2` for the spread and :math:`\phi` for the features).

    Parameters
    ----------
    features : torch.Tensor of shape (n, d)
        Penultimate features ``h_i`` as rows (gradients are not needed; the result is detached).
    labels : array-like of int of shape (n,)
    num_classes : int
        ``C``; classes absent from the batch get zeros and count 0.
    p : float, default 2
        Norm order. The paper uses ``p = 2``; the official code ``p = 5``; for
        L2-normalised features the paper suggests ``p != 2`` (e.g. 3).

    Returns
    -------
    mean_sq_norms, mean_sq_devs : torch.Tensor of shape (C,)
        ``||mu_c||_p^2`` and ``sigma_c^2``.
    counts : torch.Tensor of shape (C,), int64
        ``n_c`` in the batch.

    Raises
    ------
    ValueError
        If ``features`` is not 2-D, lengths differ, labels are out of range, or ``p < 1``.

    References
    ----------
    MR2, arXiv:2602.00205, Sec. 3 (class-sensitive bound) and Sec. 4 (EMA estimates).

    Examples
    --------
    >>> norms, devs, counts = class_feature_statistics(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]]), [0, 0, 1], 2)
    >>> norms.tolist(), devs.tolist(), counts.tolist()  # means (2, 0) and (0, 2); class 0 deviates by 1
    ([4.0, 4.0], [1.0, 0.0], [2, 1])
    """
    features = check_features(features)
    num_classes = check_int("num_classes", num_classes, 1)
    labels = check_labels(labels, num_classes, n=features.shape[0]).to(features.device)
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
        t_c = \left(\|\mu_c\|^2 + \sigma_c^2\right)^{1/3},\qquad
        \gamma_c = \bar\gamma\, C\, \frac{t_c}{\sum_{c'} t_{c'}},

    so the margins average to ``gamma_bar`` and grow like the cube root of the class's
    squared mean norm plus its spread (hard, spread-out classes get larger margins). Equal
    statistics give ``gamma_c = gamma_bar`` for every class, and so does the degenerate case where
    every statistic is zero.

    Parameters
    ----------
    mean_sq_norms : array-like or torch.Tensor of shape (C,)
        ``||mu_c||^2`` (>= 0).
    mean_sq_devs : array-like or torch.Tensor of shape (C,)
        The spreads ``sigma_c^2`` (>= 0).
    c_bar : float, default 1.0
        The mean margin ``gamma_bar > 0`` (the paper's ``c_bar``).

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


# --------------------------------------------------------------------------- LDAM's margin rule
def ldam_margins(counts, max_margin: float = 0.5) -> torch.Tensor:
    r"""LDAM's fixed additive margins ``gamma^add_c = max_margin * (n_min / n_c)^(1/4)``, i.e. ``∝ n_c^{-1/4}``.

    Cao et al. write ``Delta_c``; the book writes ``gamma^add_c``.

    The largest margin (the rarest class's) is ``max_margin``; on a balanced training set
    every class gets ``max_margin``. Feed them to :func:`ncbook.losses.ldam_loss`.

    Parameters
    ----------
    counts : array-like of int of shape (C,)
        Training samples per class (> 0).
    max_margin : float, default 0.5

    Returns
    -------
    torch.Tensor of shape (C,), float64

    Raises
    ------
    ValueError
        If a count is not a positive integer or ``max_margin <= 0``.

    References
    ----------
    Cao, Wei, Gaidon, Arechiga and Ma, "Learning Imbalanced Datasets with
    Label-Distribution-Aware Margin Loss", NeurIPS 2019, arXiv:1906.07413, eq. (13).

    Examples
    --------
    >>> ldam_margins([16, 1]).tolist()
    [0.25, 0.5]
    """
    n = torch.as_tensor(check_counts(counts), dtype=torch.float64)
    max_margin = check_positive("max_margin", max_margin)
    m = n.pow(-0.25)
    return max_margin * m / m.max()
