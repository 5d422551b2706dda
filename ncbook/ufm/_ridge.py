r"""The exact regularised optimum of the cross-entropy UFM (the nuclear-norm view).

Letters (the book's notation): ``C`` classes, ``n`` samples, ``n_c`` samples of class ``c``,
``D = diag(n_c)`` and its square root ``D^{1/2} = diag(sqrt(n_c))``, ``P`` the centring matrix. For ``d >= C - 1`` the ridge-regularised UFM of
:func:`ncbook.ufm.train_ufm` (mean CE, ``lambda_W = lambda_H = lambda``) equals the
convex problem

.. math:: \min_Z\ \frac1n\sum_i \mathrm{CE}(z_i, y_i) + \lambda \|Z\|_* ,

because :math:`\min_{WH^\top = Z} \tfrac{1}{2}(\|W\|_F^2 + \|H\|_F^2) = \|Z\|_*`
(general ridges: :math:`\lambda = \sqrt{\lambda_W\lambda_H}`), and ``C - 1`` dimensions suffice: subtracting
each row's mean (:math:`Z \mapsto ZP`) keeps every CE and does not raise :math:`\|Z\|_*`, so an optimum of rank
at most ``C - 1`` exists. Its optimum has equal
logits within a class (averaging a class's columns lowers neither term), so with the
class-level logits ``Z_C`` (row ``z_c`` the logit vector of class ``c``, shape ``(C, C)``) it
is :math:`\min_{Z_C} \sum_c \frac{n_c}{n}\mathrm{CE}(z_c, c) + \lambda\|D^{1/2} Z_C\|_*`. We solve
it in ``X = D^{1/2} Z_C`` by accelerated proximal gradient (FISTA with adaptive restart,
singular-value soft-thresholding as the prox), or with cvxpy for a cross-check.
At the optimum :math:`W W^\top = (X^\top X)^{1/2}` and the sample features have
:math:`H H^\top = (X_s X_s^\top)^{1/2}`.

References
----------
Thrampoulidis et al., "Imbalance Trouble", NeurIPS 2022, arXiv:2208.05512 (Section 4, the
regularised UFM and its convex reformulation).
Beck, Teboulle, "A fast iterative shrinkage-thresholding algorithm", SIAM J. Imaging
Sciences 2009; O'Donoghue, Candes, "Adaptive restart for accelerated gradient schemes", 2015.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp, softmax

from .._status import SolverError, settle_status
from .._validation import check_array, check_counts, check_in, check_int, check_positive
from ..geometry import frobenius_distance

__all__ = ["RidgeOptimum", "ridge_optimum", "sel_distance"]


@dataclass(frozen=True)
class RidgeOptimum:
    """The exact regularised UFM optimum :math:`Z_\\lambda` (class level).

    Attributes
    ----------
    logits : ndarray of shape (C, C)
        Row ``c``: the logits of every sample of class ``c`` (PyTorch orientation; the
        paper's ``Z`` is the sample-level transpose).
    classifiers : ndarray of shape (C, C)
        ``W`` of the balanced factorisation (``lambda_W = lambda_H``).
    means : ndarray of shape (C, C)
        The collapsed class features ``mu_c`` (the class means); ``means @ classifiers.T == logits``.
    counts : ndarray of shape (C,)
    lam : float
    objective : float
    status : {"optimal", "inaccurate"}
        ``"optimal"`` when the solver's certificate holds (FISTA: the relative
        proximal-gradient residual is below ``tol``; cvxpy: Clarabel reports optimal);
        ``"inaccurate"`` otherwise, with an :class:`ncbook.InaccurateSolutionWarning`.
    iterations : int
    seconds : float
    """

    logits: np.ndarray
    classifiers: np.ndarray
    means: np.ndarray
    counts: np.ndarray
    lam: float
    objective: float
    status: str
    iterations: int
    seconds: float

    @property
    def sel_distance(self) -> float:
        """Scale-free distance of the sample logits to the SEL matrix (SELI).

        Examples
        --------
        >>> sel_distance(np.eye(2) - 0.5, [3, 1])  # logits proportional to the SEL matrix
        0.0
        """
        return sel_distance(self.logits, self.counts)


def sel_distance(logits, counts) -> float:
    r"""Scale-free Frobenius distance of class-level logits to the SEL matrix.

    Computed as if each class row were repeated ``n_c`` times (the sample-level
    distance for collapsed features): :math:`\| D^{1/2} Z_C/\|D^{1/2} Z_C\|_F - D^{1/2} P/\|D^{1/2} P\|_F \|_F`,
    with ``Z_C`` the class-level ``logits``.

    Parameters
    ----------
    logits : array-like of shape (C, C)
        Row ``c``: logits of class ``c``'s samples.
    counts : array-like of shape (C,)

    Returns
    -------
    float
        NaN when every logit is zero (the optimum at a large ridge).
    """
    counts = check_counts(counts, min_classes=2)
    c = counts.size
    z = check_array("logits", logits, shape=(c, c))
    s = np.sqrt(counts.astype(np.float64))[:, None]
    if not np.any(z):
        return float("nan")  # a large ridge zeroes every logit: no direction to compare
    return frobenius_distance(s * z, s * (np.eye(c) - 1.0 / c))


def _loss_grad(x, sq, w):
    """Weighted CE of ``Z_C = X / sq`` and its gradient in ``X``."""
    ell = x / sq
    c = x.shape[0]
    ce = logsumexp(ell, axis=1) - ell[np.arange(c), np.arange(c)]
    grad = (softmax(ell, axis=1) - np.eye(c)) * (w / sq)
    return float(w[:, 0] @ ce), grad


def _prox_nuclear(x, tau):
    """Singular-value soft-thresholding; also returns the nuclear norm of the result."""
    u, s, vt = np.linalg.svd(x)
    s = np.maximum(s - tau, 0.0)
    return (u * s) @ vt, s.sum()


def _fista(counts, lam, tol, max_iter):
    n = counts.sum()
    sq = np.sqrt(counts.astype(np.float64))[:, None]
    w = (counts / n)[:, None]
    step = 2.0 * n  # 1 / Lipschitz constant: the CE Hessian is at most 1/2, times n_c/n / n_c
    x = y = (np.eye(counts.size) - 1.0 / counts.size) * sq
    t = 1.0
    for it in range(1, max_iter + 1):
        _, g = _loss_grad(y, sq, w)
        x_new, _ = _prox_nuclear(y - step * g, step * lam)
        # stop on the gradient mapping (the prox-gradient residual), relative to |X|
        if np.linalg.norm(x_new - y) < tol * max(np.linalg.norm(x_new), 1.0):
            x = x_new
            break
        if np.sum((y - x_new) * (x_new - x)) > 0:  # gradient-based adaptive restart
            t = 1.0
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        y = x_new + (t - 1) / t_new * (x_new - x)
        x, t = x_new, t_new
    else:
        it = max_iter
    f, _ = _loss_grad(x, sq, w)
    obj = f + lam * np.linalg.svd(x, compute_uv=False).sum()
    if not (np.all(np.isfinite(x)) and np.isfinite(obj)):
        raise SolverError("ridge_optimum: FISTA produced a non-finite iterate.")
    return x, obj, it < max_iter, it


def _cvxpy(counts, lam):
    import cvxpy as cp

    c, n = counts.size, counts.sum()
    sq = np.sqrt(counts.astype(np.float64))
    x = cp.Variable((c, c))
    terms = [counts[k] / n * (cp.log_sum_exp(x[k, :] / sq[k]) - x[k, k] / sq[k]) for k in range(c)]
    problem = cp.Problem(cp.Minimize(sum(terms) + lam * cp.normNuc(x)))
    problem.solve(solver=cp.CLARABEL)
    if x.value is None or not np.all(np.isfinite(x.value)):
        raise SolverError(f"ridge_optimum: cvxpy returned no solution (status {problem.status!r}).")
    return x.value, float(problem.value), problem.status == cp.OPTIMAL, int(problem.solver_stats.num_iters or 0)


def ridge_optimum(counts, lam: float, *, method: str = "fista", tol: float = 1e-10, max_iter: int = 100_000) -> RidgeOptimum:
    r"""Exact optimum :math:`Z_\lambda` of the ridge-regularised CE UFM (``d >= C - 1``).

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Samples per class.
    lam : float
        ``lambda > 0`` next to the **mean** CE, with ``lambda_W = lambda_H = lambda``
        (for unequal ridges pass ``sqrt(lambda_W * lambda_H)``).
    method : {"fista", "cvxpy"}
        Accelerated proximal gradient (default), or cvxpy with Clarabel (small ``C``).
    tol : float
        FISTA stops when the proximal-gradient residual, relative to ``max(|X|_F, 1)``,
        falls below ``tol``.
    max_iter : int

    Returns
    -------
    RidgeOptimum

    Raises
    ------
    ValueError
        For bad counts, ``lam <= 0`` or an unknown ``method``.

    ncbook.SolverError
        If the solver returned no finite solution.

    Warns
    -----
    ncbook.InaccurateSolutionWarning
        If the solver stopped before its certificate held (status ``"inaccurate"``).

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Section 4.

    Examples
    --------
    >>> opt = ridge_optimum([50, 50, 5, 5], 1e-2)
    >>> opt.status, round(opt.sel_distance, 3)
    ('optimal', 0.224)
    """
    counts = check_counts(counts, min_classes=2)
    lam = check_positive("lam", lam)
    check_in("method", method, ("fista", "cvxpy"))
    tol = check_positive("tol", tol)
    start = time.perf_counter()
    max_iter = check_int("max_iter", max_iter, 1)
    x, obj, certified, iters = _fista(counts, lam, tol, max_iter) if method == "fista" else _cvxpy(counts, lam)
    status = settle_status(certified, solver="ridge_optimum",
                           detail=f"{method} stopped before its certificate held after {iters} iterations; "
                                  "raise max_iter or loosen tol")
    sq = np.sqrt(counts.astype(np.float64))[:, None]
    u, s, vt = np.linalg.svd(x)
    classifiers = vt.T * np.sqrt(s)  # (C, C): W W^T = (X^T X)^{1/2}
    means = (u * np.sqrt(s)) / sq  # (C, C): class means mu_c
    return RidgeOptimum(
        logits=x / sq, classifiers=classifiers, means=means, counts=counts, lam=lam, objective=obj,
        status=status, iterations=iters, seconds=time.perf_counter() - start,
    )
