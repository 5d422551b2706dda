"""Minority collapse: the exact collapse point from the KKT conditions, and class means.

Letters (the book's notation): ``C`` classes, one majority (class 0, probability ``pi_1``; the paper
writes ``lambda_1``, the keyword is ``lambda_1``) and ``C - 1`` equal minorities of probability
``(1 - pi_1) / (C - 1)``; ``tau`` the temperature (keyword ``temperature``); ``L`` the contrastive risk.

The collapsed point ``A_0j = -1``, ``A_ij = 1`` (all minority means equal, opposite the majority)
is optimal iff ``(C - 1) dL/dA_ij <= dL/dA_0j`` there (derivatives over the symmetric pair entries):
on the orthogonal complement of ``1_pm = (1, -1, ..., -1)`` the dual matrix ``Phi`` has eigenvalues
``(dL/dA_0j - (C - 1) dL/dA_ij) / 2`` (multiplicity ``C - 2``) and ``C dL/dA_0j / 2``. The margins
below are written with ``e^{-2 / tau}``, the weight of a negative at cosine ``-1`` against one at ``+1``.

Derived here (not in the paper), checked against the convex program.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from .._validation import as_float64, check_array, check_in, check_int, check_positive, check_symmetric
from ._multisets import SETTINGS, _check_k
from ._objective import PSIS

__all__ = ["PAPER_THRESHOLDS", "collapse_margin", "collapse_threshold", "class_means_from_gram"]

PAPER_THRESHOLDS = {"ucl": 0.9292, "scl": 0.9438}
"""The paper's sufficient, ``C``- and ``k``-free collapse thresholds on ``pi_1`` (quoted, at ``tau = 1``;
the paper names such a threshold ``tau``, which is not the temperature here)."""


def _hprime(d, psi):
    return 1.0 / d if psi == "infonce" else np.ones_like(d)


def _binomial(k, p):
    """Counts ``0..k`` and their binomial probabilities: shape ``(k + 1,)``, or ``p.shape + (k + 1,)`` for an array ``p``
    (so that a margin evaluates a whole grid of ``pi_1`` at once)."""
    n = np.arange(k + 1, dtype=np.float64)
    return n, binom.pmf(n, k, np.asarray(p, dtype=np.float64)[..., None]) if np.ndim(p) else binom.pmf(n, k, p)


def _column(a):
    return np.asarray(a)[..., None]


def _same(a):
    return a


def _margin_ucl(lam1, k, eps, psi):
    rho = 1.0 - lam1
    if k == math.inf:  # law of large numbers: N / k -> rho; the common factor k cancels
        hp = (lambda d: 1.0 / d) if psi == "infonce" else (lambda d: 1.0)
        d0, di = lam1 + rho * eps, rho + lam1 * eps
        return eps * (lam1 * rho * hp(d0) + rho * lam1 * hp(di)) - 2 * rho * rho * hp(di)
    n, pmf = _binomial(k, rho)
    d0 = 1.0 + (k - n) + n * eps  # majority anchor: n minority negatives at cosine -1
    di = 1.0 + n + (k - n) * eps  # minority anchor: n minority negatives at cosine +1
    h0, hi = _hprime(d0, psi), _hprime(di, psi)
    c = _column if np.ndim(lam1) else _same
    lhs = 2 * c(rho) * pmf @ (n * hi)
    rhs = eps * (c(lam1) * pmf @ (n * h0) + c(rho) * pmf @ ((k - n) * hi))
    return rhs - lhs


def _margin_scl(lam1, k, eps, psi, m):
    lmin = (1.0 - lam1) / m
    p0 = lam1 / (1.0 - lmin)  # a minority anchor's negative is the majority with this probability
    if k == math.inf:
        hp = (lambda d: 1.0 / d) if psi == "infonce" else (lambda d: 1.0)
        di = p0 * eps + 1 - p0
        alpha = lam1 / m * eps * hp(eps) + lmin * p0 * eps * hp(di)
        beta = 2 * lmin * (1 - p0) / (m - 1) * hp(di)
        return alpha - m * beta
    n, pmf = _binomial(k, p0)
    di = 1.0 + n * eps + (k - n)
    hi = _hprime(di, psi)
    h0 = float(_hprime(np.array([1.0 + k * eps]), psi)[0])
    c = _column if np.ndim(lam1) else _same
    alpha = lam1 * (k / m) * eps * h0 + c(lmin) * pmf @ (n * eps * hi)
    beta = 2 * c(lmin) * pmf @ ((k - n) / (m - 1) * hi)
    return alpha - m * beta


def _check_args(k, setting, num_classes, t, psi):
    if not (isinstance(k, float) and math.isinf(k) and k > 0):
        k = _check_k(k)
    check_in("setting", setting, SETTINGS)
    t = check_positive("temperature", t)
    check_in("psi", psi, PSIS)
    num_classes = check_int("num_classes", num_classes, 2, allow_none=True)
    if setting == "scl":
        if num_classes is None or num_classes < 3:
            raise ValueError(
                f"setting='scl' needs num_classes >= 3 (its collapse point depends on C); got {num_classes!r}."
            )
    return k, t


def collapse_margin(lambda_1, k, *, setting: str = "ucl", num_classes: int | None = None,
                    temperature: float = 1.0, psi: str = "infonce") -> float:
    """KKT margin ``dL/dA_0j - (C - 1) dL/dA_ij`` (times ``tau``) at the collapsed point.

    Non-negative exactly when minority collapse is optimal at majority probability ``lambda_1``
    (the book's ``pi_1``), in ``(0, 1)``. Other arguments as in :func:`collapse_threshold`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For ``lambda_1`` outside ``(0, 1)`` or a bad argument of :func:`collapse_threshold`.

    Examples
    --------
    >>> collapse_margin(0.9, 1) > 0 > collapse_margin(0.7, 1)   # the collapse point is 0.807 (k = 1, UCL)
    True
    """
    k, t = _check_args(k, setting, num_classes, temperature, psi)
    lam1 = check_positive("lambda_1", lambda_1)
    if not 0.0 < lam1 < 1.0:
        raise ValueError(f"lambda_1 (the majority's probability pi_1) must lie in (0, 1); got {lambda_1!r}.")
    eps = math.exp(-2.0 / t)
    if setting == "ucl":
        return float(_margin_ucl(lam1, k, eps, psi))
    return float(_margin_scl(lam1, k, eps, psi, int(num_classes) - 1))


def collapse_threshold(k, *, setting: str = "ucl", num_classes: int | None = None,
                       temperature: float = 1.0, psi: str = "infonce") -> float:
    r"""The collapse point ``pi_1^MC``: the exact majority probability ``pi_1`` above which the minorities collapse.

    One majority class and ``C - 1`` equal minorities; the returned value is the root of the
    KKT margin (:func:`collapse_margin`). For UCL it does not depend on ``C``; for SCL it does.

    Parameters
    ----------
    k : int or math.inf
        Negatives per anchor (``math.inf``: the large-``k`` limit ``L_inf``).
    setting : {"ucl", "scl"}
    num_classes : int, optional
        ``C >= 3``; required for SCL, ignored for UCL.
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"}

    Returns
    -------
    float in (1/C, 1)

    Raises
    ------
    ValueError
        ``k < 1``, SCL without ``num_classes >= 3``, or a non-positive ``temperature``.

    References
    ----------
    Nguyen et al., arXiv:2605.11291 (2026): minority collapse with the sufficient thresholds
    :data:`PAPER_THRESHOLDS`; the exact condition is derived in this package.

    Examples
    --------
    >>> round(collapse_threshold(1, setting="ucl"), 6)  # = 1 / (1 + 2 sigmoid(-2 / tau)) at tau = 1
    0.80749
    """
    k, t = _check_args(k, setting, num_classes, temperature, psi)
    eps = math.exp(-2.0 / t)
    if setting == "ucl":
        f = lambda lam1: _margin_ucl(lam1, k, eps, psi)  # noqa: E731
        lo = 0.5
    else:
        m = int(num_classes) - 1
        f = lambda lam1: _margin_scl(lam1, k, eps, psi, m)  # noqa: E731
        lo = 1.0 / (m + 1)
    grid = np.linspace(lo, 1.0 - 1e-9, 801)
    vals = np.asarray(f(grid), dtype=np.float64)          # the margins vectorise over pi_1: one call for the grid
    neg = np.flatnonzero(vals < 0)
    if neg.size == 0:
        return float(lo)
    i = neg[-1]
    if i == grid.size - 1:
        return 1.0
    return float(brentq(f, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-14))


def class_means_from_gram(gram, dim: int | None = None, *, tol: float = 1e-8) -> np.ndarray:
    r"""Class means ``M`` (C, d) with ``M M^T = A``, from the eigendecomposition of ``A``.

    With ``A = V E V^T`` (eigenvalues ``E``, largest first) the means are the rows of
    ``M = V E^{1/2}`` (the paper stacks them as columns, ``E^{1/2} V^T``).

    Parameters
    ----------
    gram : array-like of shape (C, C)
        Symmetric positive semidefinite.
    dim : int, optional
        Output dimension ``d``; defaults to the numerical rank (eigenvalues above
        ``tol * max eigenvalue``); larger ``dim`` pads zero columns.
    tol : float
        Relative eigenvalue cut-off for the rank.

    Returns
    -------
    ndarray of shape (C, d), float64.

    Raises
    ------
    ValueError
        If ``gram`` is not symmetric, has a clearly negative eigenvalue, or ``dim`` is below its rank.

    Examples
    --------
    >>> from ncbook.geometry import etf_gram
    >>> m = class_means_from_gram(etf_gram(3))
    >>> m.shape, bool(np.allclose(m @ m.T, etf_gram(3)))
    ((3, 2), True)
    """
    a = check_array("gram", gram, ndim=2)
    check_symmetric("gram", a, atol=1e-8)
    tol = check_positive("tol", tol)
    dim = check_int("dim", dim, 0, allow_none=True)
    vals, vecs = np.linalg.eigh((a + a.T) / 2)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    top = max(vals[0], 0.0)
    if vals[-1] < -1e-6 * max(top, 1.0):
        raise ValueError(f"gram must be positive semidefinite; smallest eigenvalue {vals[-1]:.3g}.")
    rank = int(np.sum(vals > tol * top)) if top > 0 else 0
    d = rank if dim is None else dim
    if d < rank:
        raise ValueError(f"dim must be an integer >= rank(gram) = {rank}; got {dim!r}.")
    out = np.zeros((a.shape[0], int(d)))
    out[:, :rank] = vecs[:, :rank] * np.sqrt(vals[:rank])
    return out
