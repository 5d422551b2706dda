r"""Geometry-fit metrics of weighted contrastive learning: entropic gap, r2_s-sim, r2_Proc.

Letters (the book's notation; the paper writes ``N``, ``z_i``, ``W = (w_ij)``, ``p_i``, ``q_i``): ``n``
points, ``d`` embedding dimension. The embeddings ``h_i`` are the rows of ``z``, ``(n, d)``; the prior
weights ``Omega = (omega_ij)`` (keyword ``weights``) are ``(n, n)`` (diagonal ignored); ``pi_i`` and
``pihat_i`` are anchor ``i``'s target and model distributions (see :mod:`ncbook.losses`).

* ``entropic_gap``: :math:`\mathcal L - \mathcal L^\star = \frac1n \sum_i \mathrm{KL}(\pi_i \| \hat\pi_i)`,
  computed directly as a mean KL divergence (no cancellation between two large numbers, so
  exponentially small gaps stay visible).
* ``r2_similarity``: squared Pearson correlation, over pairs ``i < j`` with ``omega_ij > 0``,
  between the latent similarity ``s_ij`` and its optimal value ``log omega_ij`` (up to ``a_i``).
* ``r2_procrustes``: ``1 - `` the Procrustes disparity between the embedding and a
  reference configuration (centring, unit Frobenius scaling, rotation or reflection).

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive
Learning", arXiv:2605.13943 (2026): the three metrics.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import logsumexp

from .._validation import as_float64, check_in, check_positive, check_square
from ..geometry import procrustes_r2

__all__ = ["entropic_gap", "r2_procrustes", "r2_similarity"]


def _similarity_np(z: np.ndarray, similarity: str) -> np.ndarray:
    """Latent similarity at ``tau = 1`` (cosine, or minus the squared distance)."""
    if similarity == "cosine":
        u = z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), np.finfo(z.dtype).tiny)
        return u @ u.T
    z = z - z.mean(axis=0, keepdims=True)  # translation invariant; centring avoids cancellation
    sq = (z * z).sum(axis=1)
    return -np.clip(sq[:, None] + sq[None, :] - 2.0 * z @ z.T, 0.0, None)


def _inputs(z, weights):
    z = as_float64(z, "z")
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"z must be 2-D of shape (n, d) with n >= 2 points; got shape {z.shape}.")
    if not np.all(np.isfinite(z)):
        raise ValueError("z must be finite; it holds NaN or infinite values.")
    check_square("weights", weights)
    w = as_float64(weights, "weights")
    if w.shape[0] != z.shape[0]:
        raise ValueError(f"weights must be ({z.shape[0]}, {z.shape[0]}) to match z; got {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative.")
    return z, w


def entropic_gap(z, weights, *, similarity: str = "cosine", temperature: float) -> float:
    r"""Entropic gap :math:`\mathcal L - \mathcal L^\star` of w-InfoNCE at the embeddings ``h_i`` (rows of ``z``).

    Parameters
    ----------
    z : Tensor or ndarray of shape (n, d)
    weights : Tensor or ndarray of shape (n, n)
        Non-negative prior weights ``Omega`` (diagonal ignored).
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.

    Returns
    -------
    float, ``>= 0``: mean over anchors with a positive weight of ``KL(pi_i || pihat_i)``.

    Raises
    ------
    ValueError
        On mismatched shapes, negative weights, weights with no positive entry off the diagonal,
        ``temperature <= 0`` or an unknown ``similarity``.

    References
    ----------
    arXiv:2605.13943, the entropic gap.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.ones((3, 3))
    >>> entropic_gap(np.eye(3), w, temperature=1.0)  # equal similarities meet uniform targets
    0.0
    """
    check_in("similarity", similarity, ("cosine", "euclidean"))
    t = check_positive("temperature", temperature)
    z, w = _inputs(z, weights)
    n = z.shape[0]
    off = ~np.eye(n, dtype=bool)
    s = np.where(off, _similarity_np(z, similarity) / t, -np.inf)
    log_q = s - logsumexp(s, axis=1, keepdims=True)
    w = np.where(off, w, 0.0)
    total = w.sum(axis=1, keepdims=True)
    valid = total[:, 0] > 0
    p = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    pos = p > 0
    terms = np.where(pos, p * (np.log(np.where(pos, p, 1.0)) - np.where(pos, log_q, 0.0)), 0.0)
    kl = terms.sum(axis=1)
    if not valid.any():
        raise ValueError("weights must give some anchor a positive weight off the diagonal; every row is zero there, "
                         "so no anchor has a target and the gap is undefined (not 0, the value of a reached bound).")
    return max(0.0, float(kl[valid].mean()))  # clip round-off below 0


def r2_similarity(z, weights, *, similarity: str = "cosine") -> float:
    r"""Squared Pearson correlation of ``s_ij`` and ``log omega_ij`` over pairs ``i < j``.

    Pairs with ``omega_ij = 0`` (``log omega = -inf``) are left out. The temperature only rescales
    ``S`` and does not change the correlation.

    Parameters
    ----------
    z : Tensor or ndarray of shape (n, d)
        The embeddings ``h_i`` as rows.
    weights : Tensor or ndarray of shape (n, n)
        The prior weights ``Omega``.
    similarity : {"cosine", "euclidean"}

    Returns
    -------
    float in ``[0, 1]``; 1 when ``S`` is an increasing or decreasing affine function of
    ``log Omega`` (the optimum, ``s_ij = log omega_ij + a``, gives 1). ``nan`` when either side is constant
    (to the rounding of the input: every point in one place, or all positive weights equal), where a
    correlation would be one of rounding noise.

    References
    ----------
    arXiv:2605.13943, the similarity coefficient ``r^2_{s-sim}``.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[0.0], [1.0], [3.0]])
    >>> w = np.exp(-((y - y.T) ** 2))  # Gaussian kernel; the Euclidean latent at z = y is its optimum
    >>> round(r2_similarity(y, w, similarity="euclidean"), 12)
    1.0
    """
    check_in("similarity", similarity, ("cosine", "euclidean"))
    eps = _input_eps(z)
    z, w = _inputs(z, weights)
    iu = np.triu_indices(z.shape[0], k=1)
    s, wv = _similarity_np(z, similarity)[iu], w[iu]
    keep = wv > 0
    s, lw = s[keep], np.log(wv[keep])
    # constant to the input's rounding (e.g. every point in one place): a correlation of rounding noise is no result
    s_scale = 1.0 if similarity == "cosine" else max(float(np.abs(z).max(initial=0.0)) ** 2,
                                                      float(np.abs(s).max(initial=0.0)))
    if s.size < 2 or np.ptp(s) <= 16.0 * eps * s_scale or np.ptp(lw) <= 16.0 * np.finfo(np.float64).eps * max(
            1.0, float(np.abs(lw).max())):
        return float("nan")
    return float(np.corrcoef(s, lw)[0, 1] ** 2)


def _input_eps(x) -> float:
    """The machine epsilon of the precision ``x`` arrived in (float64 for integers and lists)."""
    dtype = getattr(x, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return float(torch.finfo(dtype).eps) if dtype.is_floating_point else float(np.finfo(np.float64).eps)
    if dtype is not None and np.dtype(dtype).kind == "f":
        return float(np.finfo(dtype).eps)
    return float(np.finfo(np.float64).eps)


def r2_procrustes(z, reference) -> float:
    """Procrustes agreement ``1 - disparity`` between embeddings and a reference configuration.

    Parameters
    ----------
    z : Tensor or ndarray of shape (n, d1)
        Learned embeddings.
    reference : Tensor or ndarray of shape (n, d2)
        The predicted optimum (e.g. an embedding from :mod:`ncbook.dgp`) or the labels.

    Returns
    -------
    float in ``[0, 1]``.

    References
    ----------
    arXiv:2605.13943, ``r^2_{Proc}``; :func:`scipy.spatial.procrustes` through
    :func:`ncbook.geometry.procrustes_r2`.

    Examples
    --------
    >>> import numpy as np
    >>> ref = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> round(r2_procrustes(5 * ref[:, ::-1] - 1, ref), 12)  # a similarity transform of ref
    1.0
    """
    return procrustes_r2(z, reference)
