"""The contrastive risk of class-mean Gram matrices (the paper's lower bound).

Letters (the book's notation): ``C`` classes, ``k`` negatives per anchor, ``tau`` the temperature (keyword
``temperature``), ``pi_y`` the class probabilities (keyword ``class_probs``; the paper writes ``lambda_y``),
``nu`` a multiset of negatives, ``L`` the risk (the paper writes ``S``).

With features collapsed onto unit-norm class means ``mu_c``, ``A = M M^T`` (C, C) and
positives drawn independently from the anchor's class (so ``s_+ = 1``), the risk is

.. math::

    \\mathcal L(A) = \\sum_y \\pi_y \\sum_{|\\nu| = k} \\frac{k!}{\\prod_c \\nu_c!} \\prod_c q(c|y)^{\\nu_c}
           \\log\\Big(1 + \\sum_c \\nu_c e^{(A_{yc} - 1)/\\tau}\\Big)

for InfoNCE, and its large-``k`` limit ``L_inf(A) = sum_y pi_y log sum_c q(c|y) e^{(A_yc - 1)/tau}``.

References
----------
Nguyen, Aeron, Brown, Ishwar, arXiv:2605.11291 (2026), the lower bound of Section 3 and the
convex program over correlation matrices; van den Oord, Li, Vinyals, arXiv:1807.03748 (InfoNCE).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_float64, check_in, check_positive, check_probabilities, check_psd, check_symmetric
from ._multisets import SETTINGS, _check_k, num_multiset_terms
from ._objective import PSIS, make_risk

__all__ = ["cl_risk", "cl_risk_gradient", "MAX_TERMS"]

MAX_TERMS = 5_000_000


def _check_k_or_inf(k):
    if isinstance(k, float) and math.isinf(k) and k > 0:
        return math.inf
    return _check_k(k)


def _check_problem(class_probs, k, setting, t, psi, *, large_k=False):
    lam = check_probabilities(class_probs)
    if lam.size < 2:
        raise ValueError(f"class_probs must hold at least 2 classes; got {lam.size}.")
    k = _check_k_or_inf(k)
    check_in("setting", setting, SETTINGS)
    t = check_positive("temperature", t)
    check_in("psi", psi, PSIS)
    if setting == "scl" and lam.size < 2:
        raise ValueError("setting='scl' needs at least 2 classes.")
    objective = "large_k" if (large_k or k == math.inf) else "multiset"
    if objective == "multiset" and psi == "infonce":
        terms = num_multiset_terms(lam.size, k, setting=setting)
        if terms > MAX_TERMS:
            raise ValueError(
                f"the multiset risk for C = {lam.size}, k = {k} has {terms} terms (> {MAX_TERMS}); "
                "use the large-k limit (k=math.inf, or method='large_k')."
            )
    if objective == "large_k" and psi == "exp":
        raise ValueError("psi='exp' has a closed form for every finite k; pass a finite k.")
    return lam, k, t, objective


def _check_gram(gram, num_classes):
    check_symmetric("gram", gram, atol=1e-8)
    a = as_float64(gram)
    if a.shape[0] != num_classes:
        raise ValueError(f"gram must be ({num_classes}, {num_classes}) to match class_probs; got {a.shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError("gram must be finite; it holds NaN or infinite values.")
    if not np.allclose(np.diag(a), 1.0, atol=1e-6):
        raise ValueError(
            f"gram must have a unit diagonal (class means on the unit sphere); got diagonal {np.diag(a)}."
        )
    check_psd("gram", a)  # cosines of unit vectors: a matrix no set of class means has is refused, not scored
    return (a + a.T) / 2


def cl_risk(gram, class_probs, k, *, setting: str = "ucl", temperature: float = 1.0,
            psi: str = "infonce") -> float:
    r"""Contrastive risk ``L(A)`` of a class-mean Gram matrix ``A`` (the paper's ``S(A)``).

    Parameters
    ----------
    gram : array-like of shape (C, C)
        Symmetric, unit diagonal (cosines of unit-norm class means).
    class_probs : array-like of shape (C,)
        ``pi``, strictly positive, summing to 1.
    k : int or math.inf
        Negatives per anchor; ``math.inf`` gives the large-``k`` limit ``L_inf`` (``log k`` dropped).
    setting : {"ucl", "scl"}
        Unsupervised (negatives from the data) or supervised (negatives from other classes).
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"}
        ``log(1 + sum_j exp(g_j / tau))`` or ``sum_j exp(g_j / tau)`` of the score gaps ``g_j = s_j - s_+``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Bad probabilities, ``k < 1``, a Gram matrix that is not symmetric positive semidefinite with
        unit diagonal (no class means have it), or a multiset sum too large to enumerate.

    References
    ----------
    Nguyen et al., arXiv:2605.11291 (2026), Section 3.

    Examples
    --------
    >>> from ncbook.geometry import etf_gram
    >>> round(cl_risk(etf_gram(3), [1/3, 1/3, 1/3], 1), 8)
    0.36532458
    """
    lam, k, t, objective = _check_problem(class_probs, k, setting, temperature, psi)
    a = _check_gram(gram, lam.size)
    return make_risk(lam, k, setting, t, psi, objective).value(a)


def cl_risk_gradient(gram, class_probs, k, *, setting: str = "ucl", temperature: float = 1.0,
                     psi: str = "infonce"):
    r"""Gradient of :func:`cl_risk` over the off-diagonal entries, as a symmetric matrix.

    Returns the matrix ``grad L(A)`` (C, C) with zero diagonal such that ``dL = <grad L(A), dA>`` for every
    symmetric ``dA`` with zero diagonal, i.e. entry ``(i, j)`` is ``(1/2) dL / dA_{ij}`` where ``A_ij = A_ji``
    move together.

    Parameters
    ----------
    gram, class_probs, k, setting, temperature, psi
        As in :func:`cl_risk`.

    Returns
    -------
    ndarray of shape (C, C), float64.

    Raises
    ------
    ValueError
        As :func:`cl_risk`.

    Examples
    --------
    >>> from ncbook.geometry import etf_gram
    >>> g = cl_risk_gradient(etf_gram(3), [1/3, 1/3, 1/3], 1)
    >>> bool(np.allclose(g, g[0, 1] * (1 - np.eye(3))))   # the same on every pair at a symmetric point
    True
    """
    lam, k, t, objective = _check_problem(class_probs, k, setting, temperature, psi)
    a = _check_gram(gram, lam.size)
    _, p = make_risk(lam, k, setting, t, psi, objective).grad(a)
    return (p + p.T) / 2
