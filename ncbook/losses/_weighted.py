r"""Weighted InfoNCE (w-InfoNCE), its entropic lower bound and the prior weight builders.

Letters (the book's notation; the paper writes ``N``, ``z_i``, ``W = (w_ij)``, ``p_ij``, ``q_ij``): ``n`` points
(samples, or anchors of a batch), ``d`` embedding dimension, ``C`` classes, ``m`` label dimension,
``tau`` the temperature (keyword ``temperature``). The embeddings ``h_i`` are the rows of ``z``, ``(n, d)``;
the prior weights ``Omega = (omega_ij)`` (keyword ``weights``) are ``(n, n)``, non-negative; their diagonal is
ignored everywhere (a point is never its own positive or negative).

For an anchor ``i`` the prior weights give a target distribution over the other points,
``pi_ij = omega_ij / sum_{j' != i} omega_ij'``, and the latent similarities ``S = (s_ij)`` give the model's
distribution ``pihat_ij = softmax_{j != i}(s_ij)``. The w-InfoNCE loss is the mean cross-entropy

.. math::

    \mathcal L = \frac1n \sum_i \mathrm{CE}(\pi_i, \hat\pi_i)
               = \frac1n \sum_i \big[\mathbb H(\pi_i) + \mathrm{KL}(\pi_i \,\|\, \hat\pi_i)\big]
               \ge \mathcal L^\star = \frac1n \sum_i \mathbb H(\pi_i),

with the entropy :math:`\mathbb H(\pi_i) = -\sum_j \pi_{ij} \log \pi_{ij}`, and equality iff
``s_ij = log omega_ij + a_i``. Two latent similarities are provided:
``"cosine"``, ``s_ij = <h_i, h_j> / (||h_i|| ||h_j|| tau)``, and ``"euclidean"``,
``s_ij = -||h_i - h_j||^2 / tau`` (squared distance, unnormalised ``h``).

Anchors whose weights to every other point are zero have no target; they are skipped
(their per-anchor loss is 0 under ``reduction="none"`` and they are left out of the mean).

Non-finite inputs: nothing here checks logits or features for NaN or infinity (the check would wait
for the device on every step); a NaN or infinite input gives a NaN or infinite loss, and the trainers
stop on it, naming the step. An empty batch is refused where its mean is asked for.

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive
Learning", arXiv:2605.13943 (2026): w-InfoNCE, entropic bound, SupCon / Soft SupCon,
y-Aware, Euclid-Euclid and X-CLR as weight matrices.
Khosla et al., "Supervised Contrastive Learning", NeurIPS 2020 (SupCon, L_out).
Dufumier et al., "Contrastive Learning with Continuous Proxy Meta-Data for 3D MRI
Classification", MICCAI 2021, arXiv:2106.08808 (y-Aware: Gaussian kernel on labels).
Sobal et al., "X-Sample Contrastive Loss", arXiv:2407.18134 (X-CLR).
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import (
    as_float64,
    check_callable,
    check_counts,
    check_features,
    check_finite,
    check_in,
    check_labels,
    check_matrix,
    check_positive,
    check_reduction,
    check_square,
    safe_eps,
    unit_rows,
)

__all__ = [
    "SIMILARITIES",
    "WInfoNCELoss",
    "column_normalized_w_info_nce",
    "entropic_lower_bound",
    "gaussian_kernel_weights",
    "latent_similarity",
    "prototype_entropic_lower_bound",
    "prototype_w_info_nce",
    "soft_supcon_weights",
    "supcon_weights",
    "w_info_nce",
    "xclr_weights",
]

SIMILARITIES = ("cosine", "euclidean")


# ---------------------------------------------------------------- weight builders
def supcon_weights(labels) -> torch.Tensor:
    """SupCon prior weights ``omega_ij = 1[y_i = y_j]``.

    Parameters
    ----------
    labels : array-like of int, shape (n,)

    Returns
    -------
    Tensor of shape (n, n), float64, with ones on the diagonal (ignored by every consumer).

    References
    ----------
    Khosla et al. 2020, the ``L_out`` loss; arXiv:2605.13943, Sec. on supervised weights.

    Examples
    --------
    >>> supcon_weights([0, 0, 1]).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    y = check_labels(labels)
    return (y[:, None] == y[None, :]).to(torch.float64)


def soft_supcon_weights(labels, epsilon: float) -> torch.Tensor:
    r"""Soft SupCon prior weights: 1 within a class, ``epsilon`` across classes.

    Under a cosine latent the optimum puts every pair of class prototypes at cosine
    :math:`\cos_\epsilon = 1 - \tau \log(1/\epsilon)`, whatever the class sizes; the regular
    simplex (``cos_eps = -1/(C-1)``) is reached at :math:`\epsilon^\star = \exp(-C / ((C-1)\tau))`.

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    epsilon : float
        Weight of a pair from different classes, ``0 < epsilon <= 1``.

    Returns
    -------
    Tensor of shape (n, n), float64.

    Raises
    ------
    ValueError
        If ``epsilon`` is not in ``(0, 1]``.

    References
    ----------
    arXiv:2605.13943, Soft SupCon and its closed form.

    Examples
    --------
    >>> soft_supcon_weights([0, 1], 0.1).tolist()
    [[1.0, 0.1], [0.1, 1.0]]
    """
    eps = check_positive("epsilon", epsilon)
    if eps > 1:
        raise ValueError(f"epsilon must be in (0, 1] (a cross-class pair weighs at most a same-class one); got {eps!r}.")
    same = supcon_weights(labels)
    return same + eps * (1.0 - same)


def _as_label_matrix(y, name: str) -> torch.Tensor:
    t = torch.as_tensor(as_float64(y, name))
    if t.ndim == 1:
        t = t[:, None]
    check_matrix(name, t)
    check_finite(name, t)
    return t


def gaussian_kernel_weights(y, sigma: float) -> torch.Tensor:
    r"""Gaussian-kernel weights on continuous labels, ``omega_ij = exp(-||y_i - y_j||^2 / (2 sigma^2))``.

    The y-Aware loss pairs these weights with a cosine latent; Euclid-Euclid pairs them
    with the Euclidean latent ``-||h_i - h_j||^2 / tau``.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, m)
        Continuous labels (1-D labels are treated as ``m = 1``).
    sigma : float
        Kernel bandwidth, ``> 0`` (y-Aware's default is 1).

    Returns
    -------
    Tensor of shape (n, n), float64, symmetric, with ones on the diagonal. The exact kernel
    whenever float64 can hold it; when a whole row would underflow to 0 (a tiny ``sigma``),
    the kernel is computed in log space and scaled by one global factor so that the largest
    off-diagonal weight is 1. A global factor changes neither :func:`w_info_nce`, its
    bound, nor the distance-geometry verdict of :mod:`ncbook.dgp` (only its shift).

    Examples
    --------
    >>> round(gaussian_kernel_weights([0.0, 1.0, 3.0], 0.5)[0, 1].item(), 6)  # e^{-2}
    0.135335
    >>> gaussian_kernel_weights([0.0, 1.0, 2.0], 0.02)[0, 1].item()  # e^{-1250} is 0 in float64: rescaled
    1.0

    References
    ----------
    Dufumier et al. 2021 (arXiv:2106.08808), the RBF kernel with ``gamma = 1/(2 sigma^2)``.
    """
    s = check_positive("sigma", sigma)
    t = _as_label_matrix(y, "y")
    t = t - t.mean(dim=0)  # translation invariant: large offsets cannot cancel
    sq = torch.cdist(t, t).pow(2)
    return _exp_shifted(-sq / (2.0 * s * s))


def xclr_weights(label_embeddings, label_temperature: float) -> torch.Tensor:
    r"""X-CLR weights ``omega_ij = exp(<e_i, e_j> / tau_s)`` from unit label embeddings ``e_i``.

    Rows of ``label_embeddings`` are normalised to unit length first. After row
    normalisation these are X-CLR's targets ``softmax_j((G_e)_ij / tau_s)``, with ``G_e`` the Gram of the
    unit label embeddings (the paper's ``G``).

    Parameters
    ----------
    label_embeddings : array-like of shape (n, m)
    label_temperature : float
        The label temperature ``tau_s > 0`` (of the label similarities).

    Returns
    -------
    Tensor of shape (n, n), float64, symmetric. The exact weights whenever float64 can hold
    them; at a ``tau_s`` so small that ``exp`` would overflow, they are computed in log
    space and scaled by one global factor (largest off-diagonal weight 1, unit diagonal),
    which leaves the targets ``softmax_j`` unchanged.

    Raises
    ------
    ValueError
        If a label embedding is the zero vector.

    Examples
    --------
    >>> w = xclr_weights(torch.eye(2, dtype=torch.float64), 0.001)  # e^{1000} would overflow
    >>> bool(torch.isfinite(w).all())
    True

    References
    ----------
    Sobal et al. 2024 (arXiv:2407.18134); arXiv:2605.13943, cosine-cosine case.
    """
    ts = check_positive("label_temperature", label_temperature)
    e = _as_label_matrix(label_embeddings, "label_embeddings")
    norms = e.norm(dim=1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("label_embeddings must have non-zero rows (they are normalised to unit length).")
    e = e / norms
    return _exp_shifted(e @ e.T / ts)


_LOG_SAFE = 700.0  # |log w| beyond which exp overflows or a whole row underflows in float64


def _exp_shifted(log_w: torch.Tensor) -> torch.Tensor:
    """``exp(log_w)``, exact whenever float64 can hold it; otherwise ``exp(log_w - top)`` with
    ``top`` the largest off-diagonal log-weight (one global factor) and a unit diagonal."""
    n = log_w.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    if n < 2:
        return torch.exp(log_w)
    row_top = log_w.masked_fill(~off, float("-inf")).amax(dim=1)
    if log_w.max() <= _LOG_SAFE and row_top.min() >= -_LOG_SAFE:
        return torch.exp(log_w)
    return torch.exp(log_w - row_top.max()).masked_fill(~off, 1.0)


# ---------------------------------------------------------------- similarities and loss
def _check_weights(weights, n: int, *, like: torch.Tensor) -> torch.Tensor:
    """Weights as a float64 tensor on ``like``'s device: targets are formed in float64 and
    only then cast to the features' dtype, so float16/float32 features never see an
    overflowing or underflowing raw weight."""
    check_square("weights", weights)
    if weights.shape[0] != n:
        raise ValueError(f"weights must be ({n}, {n}) to match the {n} embeddings; got {tuple(weights.shape)}.")
    w = torch.as_tensor(weights).to(dtype=torch.float64, device=like.device)
    check_finite("weights", w)
    if (w < 0).any():
        raise ValueError(f"weights must be non-negative; got minimum {w.min().item():.4g}.")
    return w


def _check_points(z) -> torch.Tensor:
    """Embeddings ``(n, d)`` with ``n >= 2``: an anchor needs another point."""
    z = check_features(z, "z")
    if z.shape[0] < 2:
        raise ValueError(f"z must hold at least 2 points (an anchor needs another point); got {z.shape[0]}.")
    return z


def _check_tau(temperature) -> float:
    return check_positive("temperature", temperature)


def latent_similarity(z: torch.Tensor, *, similarity: str = "cosine", temperature: float) -> torch.Tensor:
    """Latent similarity matrix ``S = (s_ij)`` of the embeddings ``h_i``, the rows of ``z``.

    Parameters
    ----------
    z : Tensor of shape (n, d)
        The embeddings ``h_i`` as rows (the book's ``H``).
    similarity : {"cosine", "euclidean"}
        ``"cosine"``: ``cos(h_i, h_j) / tau``; ``"euclidean"``: ``-||h_i - h_j||^2 / tau``.
    temperature : float
        The temperature ``tau > 0``.

    Returns
    -------
    Tensor of shape (n, n) (the diagonal is kept; callers mask it).

    Examples
    --------
    >>> z = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    >>> latent_similarity(z, temperature=0.5).tolist()  # a zero row has cosine 0
    [[0.0, 0.0], [0.0, 2.0]]
    >>> latent_similarity(z, similarity="euclidean", temperature=5.0).tolist()  # -25 / 5
    [[-0.0, -5.0], [-5.0, -0.0]]
    """
    check_in("similarity", similarity, SIMILARITIES)
    t = _check_tau(temperature)
    z = check_features(z, "z")
    return _similarity(z, similarity, t)


def _similarity(z: torch.Tensor, similarity: str, tau: float) -> torch.Tensor:
    if similarity == "cosine":
        # floor from the dtype: a fixed 1e-12 is 0 in float16 and a zero row became 0/0
        u = unit_rows(z, dim=1)
        return u @ u.T / tau
    z = z - z.mean(dim=0, keepdim=True)  # distances are translation invariant; centring avoids cancellation
    sq = (z * z).sum(dim=1)
    d2 = (sq[:, None] + sq[None, :] - 2.0 * (z @ z.T)).clamp_min(0.0)
    return -d2 / tau


def _row_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row ``-sum_j t_ij log softmax_{j in mask}(logits_ij)``; ``targets`` vanish off ``mask``."""
    masked = logits.masked_fill(~mask, float("-inf"))
    log_q = masked - torch.logsumexp(masked, dim=1, keepdim=True)
    log_q = torch.where(mask, log_q, torch.zeros_like(log_q))  # never 0 * -inf
    return -(targets * log_q).sum(dim=1)


def _anchor_targets(w: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    w = w * mask
    w = w / w.amax(dim=1, keepdim=True).clamp_min(torch.finfo(w.dtype).tiny)  # row scale: no overflow in the sum
    total = w.sum(dim=1, keepdim=True)
    valid = total[:, 0] > 0
    p = torch.where(total > 0, w / total.clamp_min(torch.finfo(w.dtype).tiny), torch.zeros_like(w))
    return p, valid


def _check_some_target(name: str, valid: torch.Tensor) -> None:
    """Refuse weights that give no anchor a target: a bound or a fit of them would read 0 (reached)."""
    if not bool(valid.any()):
        raise ValueError(f"{name} must give some anchor a positive weight off the diagonal; every row is zero there, "
                         "so no anchor has a target and the bound is undefined (not 0).")


def _reduce_valid(values: torch.Tensor, valid: torch.Tensor, reduction: str) -> torch.Tensor:
    values = torch.where(valid, values, torch.zeros_like(values))
    if reduction == "none":
        return values
    if reduction == "sum":
        return values.sum()
    return values.sum() / valid.sum().clamp_min(1)


def w_info_nce(
    z: torch.Tensor,
    weights,
    *,
    similarity: str = "cosine",
    temperature: float,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Weighted InfoNCE loss of the embeddings ``h_i`` (rows of ``z``) under prior weights ``Omega``.

    .. math::

        \ell_i = -\sum_{j \ne i} \pi_{ij} \log \frac{e^{s_{ij}}}{\sum_{j' \ne i} e^{s_{ij'}}},
        \qquad \pi_{ij} = \frac{\omega_{ij}}{\sum_{j' \ne i} \omega_{ij'}}.

    Computed in log space with the diagonal masked to ``-inf`` before the log-sum-exp, so
    unnormalised float32 features cannot underflow.

    Parameters
    ----------
    z : Tensor of shape (n, d)
        Embeddings ``h_i`` (one row a point). Cosine similarity normalises them inside.
    weights : Tensor or ndarray of shape (n, n)
        Non-negative prior weights ``Omega``; the diagonal is ignored. Need not be symmetric.
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.
    reduction : {"none", "mean", "sum"}
        ``"none"`` gives the ``(n,)`` per-anchor losses (0 for an anchor without any
        positive weight); ``"mean"`` averages over anchors that have one (0 if none has).

    Returns
    -------
    Tensor: scalar, or ``(n,)`` with ``reduction="none"``.

    Raises
    ------
    ValueError
        If ``weights`` is not ``(n, n)``, is negative or non-finite, ``temperature <= 0``,
        ``similarity`` or ``reduction`` is unknown, or ``n < 2``.

    References
    ----------
    arXiv:2605.13943, the w-InfoNCE loss; Khosla et al. 2020 for the SupCon special case.

    Examples
    --------
    >>> z = torch.eye(3, dtype=torch.float64)
    >>> w = torch.ones(3, 3, dtype=torch.float64)
    >>> round(float(w_info_nce(z, w, temperature=1.0)), 6)  # equal similarities: log 2
    0.693147
    """
    z = _check_points(z)
    n = z.shape[0]
    check_in("similarity", similarity, SIMILARITIES)
    check_reduction(reduction)
    t = _check_tau(temperature)
    w = _check_weights(weights, n, like=z)
    mask = ~torch.eye(n, dtype=torch.bool, device=z.device)
    p, valid = _anchor_targets(w, mask)
    values = _row_cross_entropy(_similarity(z, similarity, t), p.to(z.dtype), mask)
    return _reduce_valid(values, valid, reduction)


def entropic_lower_bound(weights) -> float:
    r"""The entropic lower bound :math:`\mathcal L^\star = \frac1n\sum_i \mathbb H(\pi_i)` of w-InfoNCE.

    Anchors without any positive weight are left out, as in :func:`w_info_nce`.

    Parameters
    ----------
    weights : Tensor or ndarray of shape (n, n)
        Non-negative prior weights ``Omega``; the diagonal is ignored.

    Returns
    -------
    float (nats).

    Raises
    ------
    ValueError
        If ``weights`` is not square, has fewer than 2 rows, is negative / non-finite, or gives no anchor a
        positive weight off the diagonal (no target: the bound is undefined, not 0).

    References
    ----------
    arXiv:2605.13943, the entropic lower bound (reached iff ``s_ij = log omega_ij + a_i``).

    Examples
    --------
    >>> round(entropic_lower_bound(supcon_weights([0, 0, 0, 1, 1, 1])), 6)  # two positives each: log 2
    0.693147
    """
    check_square("weights", weights)
    w = torch.as_tensor(as_float64(weights))
    n = w.shape[0]
    if n < 2:
        raise ValueError(f"weights must be at least 2 x 2; got {tuple(w.shape)}.")
    w = _check_weights(w, n, like=w)
    mask = ~torch.eye(n, dtype=torch.bool)
    p, valid = _anchor_targets(w, mask)
    _check_some_target("weights", valid)
    ent = -torch.where(p > 0, p * torch.log(p.clamp_min(1e-300)), torch.zeros_like(p)).sum(dim=1)
    return float(_reduce_valid(ent, valid, "mean"))


def column_normalized_w_info_nce(
    z: torch.Tensor, weights, *, similarity: str = "cosine", temperature: float, reduction: str = "mean"
) -> torch.Tensor:
    r"""w-InfoNCE with the y-Aware reference code's normalisation (for comparison only).

    The reference implementation zeroes the diagonal and then runs
    ``weights /= weights.sum(axis=1)``; NumPy broadcasts the row sums along the *last*
    axis, so entry ``(i, j)`` is divided by the sum of row ``j``:

    .. math:: \tilde\pi_{ij} = \frac{\omega_{ij}}{\sum_{j' \ne j} \omega_{jj'}}, \qquad
              \ell_i = -\sum_{j \ne i} \tilde\pi_{ij} \log \hat\pi_{ij}.

    Rows no longer sum to one: anchors in dense label regions weigh less, positives in
    sparse regions weigh more. Use :func:`w_info_nce` for the intended loss.

    Parameters
    ----------
    z, weights, similarity, temperature, reduction
        As in :func:`w_info_nce` (every anchor counts in the mean).

    Returns
    -------
    Tensor: scalar, or ``(n,)`` with ``reduction="none"``.

    References
    ----------
    Dufumier et al. 2021, reference implementation of the generalised supervised
    NT-Xent loss; arXiv:2605.13943 discusses the y-Aware objective.

    Examples
    --------
    >>> z, w = torch.eye(3, dtype=torch.float64), torch.ones(3, 3, dtype=torch.float64)
    >>> round(float(column_normalized_w_info_nce(z, w, temperature=1.0)), 6)  # uniform weights: as w_info_nce
    0.693147
    """
    z = _check_points(z)
    n = z.shape[0]
    check_in("similarity", similarity, SIMILARITIES)
    check_reduction(reduction)
    t = _check_tau(temperature)
    w = _check_weights(weights, n, like=z)
    mask = ~torch.eye(n, dtype=torch.bool, device=z.device)
    w = w * mask
    p = w / w.sum(dim=1)[None, :].clamp_min(torch.finfo(w.dtype).tiny)  # the broadcast of the reference code
    values = _row_cross_entropy(_similarity(z, similarity, t), p.to(z.dtype), mask)
    return _reduce_valid(values, torch.ones(n, dtype=torch.bool, device=z.device), reduction)


# ---------------------------------------------------------------- class-level form
def _check_prototype_inputs(prototypes, counts, class_weights):
    prototypes = check_features(prototypes, "prototypes")
    cnt = check_counts(counts)
    c = prototypes.shape[0]
    if cnt.size != c:
        raise ValueError(f"counts must have one entry per prototype ({c}); got {cnt.size}.")
    check_square("class_weights", class_weights)
    if class_weights.shape[0] != c:
        raise ValueError(f"class_weights must be ({c}, {c}); got {tuple(class_weights.shape)}.")
    om = torch.as_tensor(as_float64(class_weights, "class_weights")).to(device=prototypes.device)  # float64: targets first
    check_finite("class_weights", om)
    if (om < 0).any():
        raise ValueError(f"class_weights must be non-negative; got minimum {om.min().item():.4g}.")
    m = torch.as_tensor(cnt, dtype=prototypes.dtype, device=prototypes.device)
    mult = m[None, :].repeat(c, 1) - torch.eye(c, dtype=prototypes.dtype, device=prototypes.device)  # n_cc'
    return prototypes, m, mult, om


def prototype_w_info_nce(
    prototypes: torch.Tensor,
    counts,
    class_weights,
    *,
    similarity: str = "cosine",
    temperature: float,
) -> torch.Tensor:
    r"""Class-level w-InfoNCE: every sample of class ``c`` sits at its prototype ``mu_c``.

    With multiplicities :math:`n_{cc'} = n_{c'} - \mathbb 1[c = c']` (the other points an anchor
    of class ``c`` sees in class ``c'``) and class-level prior weights :math:`\bar\Omega = (\bar\omega_{cc'})`,

    .. math::

        \mathrm{CE}_c = -\sum_{c'} \pi_{cc'} S_{cc'} + \log \sum_{c'} n_{cc'} e^{S_{cc'}},
        \quad \pi_{cc'} \propto n_{cc'} \bar\omega_{cc'}, \quad
        \mathcal L = \frac{1}{n}\sum_c n_c \mathrm{CE}_c.

    This equals :func:`w_info_nce` on the collapsed samples exactly, at ``C x C`` cost.

    Parameters
    ----------
    prototypes : Tensor of shape (C, d)
    counts : array-like of int, shape (C,)
        Samples per class, all ``>= 1``.
    class_weights : Tensor or ndarray of shape (C, C)
        ``bar omega_cc'``, the weight of a pair (class ``c``, class ``c'``); non-negative.
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.

    Returns
    -------
    Scalar tensor. Classes whose anchors have no positive weight (e.g. a singleton class
    under SupCon) are left out of the mean, as in :func:`w_info_nce` (0 if no class has one).

    References
    ----------
    arXiv:2605.13943, class-collapsed form of the supervised objectives.

    Examples
    --------
    >>> protos = torch.eye(2, dtype=torch.float64)
    >>> full = w_info_nce(protos[[0, 0, 1]], supcon_weights([0, 0, 1]), temperature=1.0)
    >>> bool(torch.isclose(prototype_w_info_nce(protos, [2, 1], torch.eye(2), temperature=1.0), full))
    True
    """
    check_in("similarity", similarity, SIMILARITIES)
    t = _check_tau(temperature)
    prototypes, m, mult, om = _check_prototype_inputs(prototypes, counts, class_weights)
    present = mult > 0
    p, valid = _anchor_targets(mult.double() * om, present)
    p = p.to(prototypes.dtype)
    s = _similarity(prototypes, similarity, t)
    logits = s + torch.log(mult.clamp_min(safe_eps(mult.dtype)))  # sum_c' m_cc' e^{S_cc'} in log space
    masked = logits.masked_fill(~present, float("-inf"))
    lse = torch.logsumexp(masked, dim=1)
    ce = -(p * torch.where(present, s, torch.zeros_like(s))).sum(dim=1) + lse
    ce = torch.where(valid, ce, torch.zeros_like(ce))
    return (m * ce).sum() / (m * valid).sum().clamp_min(1)


def prototype_entropic_lower_bound(counts, class_weights) -> float:
    """Entropic bound of :func:`prototype_w_info_nce` (equals :func:`entropic_lower_bound`
    of the sample-level weights).

    Parameters
    ----------
    counts : array-like of int, shape (C,)
    class_weights : Tensor or ndarray of shape (C, C)

    Returns
    -------
    float (nats).

    Raises
    ------
    ValueError
        As :func:`prototype_w_info_nce` for its inputs, and when ``class_weights`` give no anchor a target.

    Examples
    --------
    >>> round(prototype_entropic_lower_bound([3, 3], torch.eye(2)), 6)  # as the sample-level SupCon bound
    0.693147
    """
    cnt = check_counts(counts)
    dummy = torch.zeros(cnt.size, 1, dtype=torch.float64)
    _, m, mult, om = _check_prototype_inputs(dummy, cnt, class_weights)
    present = mult > 0
    p, valid = _anchor_targets(mult * om, present)  # float64 throughout
    _check_some_target("class_weights", valid)
    # each of the m_cc' points of class c' carries p_cc' / m_cc'
    per_point = torch.where(present, p / mult.clamp_min(1), torch.zeros_like(p))
    ent = -torch.where(p > 0, p * torch.log(per_point.clamp_min(1e-300)), torch.zeros_like(p)).sum(dim=1)
    return float((m * torch.where(valid, ent, torch.zeros_like(ent))).sum() / (m * valid).sum().clamp_min(1))


class WInfoNCELoss(nn.Module):
    """Module form of :func:`w_info_nce` that builds the weights from batch targets.

    Parameters
    ----------
    weight_fn : callable
        ``weight_fn(targets) -> (b, b)`` weights for a batch of size ``b`` (e.g.
        ``functools.partial(soft_supcon_weights, epsilon=1e-3)``).
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.
    reduction : {"none", "mean", "sum"}

    Notes
    -----
    ``needs_features = True``: with the training-loop protocol it is called as
    ``loss(logits, targets, features)`` and ignores the logits.

    Shape
    -----
    features ``(b, d)``, targets ``(b,)`` or ``(b, m)``; output scalar or ``(b,)``.

    Examples
    --------
    >>> loss = WInfoNCELoss(supcon_weights, temperature=1.0)
    >>> z = torch.eye(3, dtype=torch.float64)
    >>> round(float(loss(None, torch.tensor([0, 0, 0]), z)), 6)
    0.693147
    """

    needs_features = True

    def __init__(self, weight_fn, *, similarity: str = "cosine", temperature: float, reduction: str = "mean"):
        super().__init__()
        check_in("similarity", similarity, SIMILARITIES)
        check_reduction(reduction)
        self.weight_fn = check_callable("weight_fn", weight_fn)
        self.similarity = similarity
        self.temperature = _check_tau(temperature)
        self.reduction = reduction

    def forward(self, logits, targets, features=None):  # noqa: D401 - protocol signature
        z = logits if features is None else features
        return w_info_nce(z, self.weight_fn(targets), similarity=self.similarity, temperature=self.temperature, reduction=self.reduction)
