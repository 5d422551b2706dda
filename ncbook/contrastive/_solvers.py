"""Solvers for the convex program ``min L(A)`` over correlation matrices (the elliptope).

Letters (the book's notation): ``C`` classes, ``L(A)`` the contrastive risk (the paper's ``S(A)``), ``x`` the
``C (C - 1) / 2`` free entries of ``A`` (its upper triangle).

Three routes, all certified by the same duality bound (:func:`gap_certificate`):

* ``"newton"`` -- a log-barrier path-following method written for this problem: the risk's
  Hessian is cheap (row blocks), so each Newton step is one solve of size ``C (C - 1) / 2``. The C = 20, k = 4
  program (177,100 multiset terms) takes seconds instead of minutes.
* ``"bm"`` -- Burer-Monteiro: ``A = M M^T`` with unit rows ``M`` (C, r) (the class means), L-BFGS on
  ``M`` started at the simplex ETF (first-order, for sizes where those solves are too slow; C = 1000 in under
  a minute of one core).
* ``"CLARABEL"`` / ``"SCS"`` -- the plain cvxpy formulation (a reference; slow beyond ~1e5 terms).

Every route ends in :func:`run_solver`: the answer is made a correlation matrix (an indefinite
cvxpy answer is projected), its gap is certified, and the status follows ``ncbook._status``:
``"optimal"`` only when the certified gap is at most ``max(tol, 1e-9)``, else ``"inaccurate"``
with a warning; no usable matrix raises ``SolverError``.

References
----------
Nguyen et al., arXiv:2605.11291 (2026) (the program); Boyd and Vandenberghe, *Convex
Optimization* (2004), Sec. 11.3 (barrier method); Burer and Monteiro, Math. Program. 95 (2003).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.optimize import minimize

from .._status import SolverError, Status, settle_status
from .._validation import check_array, check_psd, check_symmetric

__all__ = ["GramResult", "gap_certificate", "certified_threshold"]


@dataclass(frozen=True)
class GramResult:
    """Result of a Gram-matrix solve.

    Attributes
    ----------
    solution : ndarray of shape (C, C)
        The optimal correlation matrix ``A*``.
    objective : float
        ``L(A*)`` (for ``method="large_k"``: ``L_inf(A*)``).
    status : {"optimal", "inaccurate"}
        ``"optimal"`` when the certified ``gap`` is at most ``max(tol, 1e-9)`` (and the matrix is
        PSD with a unit diagonal, which every route guarantees); ``"inaccurate"`` otherwise, returned
        with an :class:`~ncbook._status.InaccurateSolutionWarning`.
    iterations : int
        Newton steps, L-BFGS iterations, or interior-point iterations of the cvxpy solver.
    seconds : float
        Wall time of the solve.
    gap : float
        Certified bound on ``L(A) - L*`` (see :func:`gap_certificate`).
    method : {"exact", "large_k", "bm"}
        The objective and route asked for: the exact multiset risk, its large-``k`` limit, or the
        exact risk through Burer-Monteiro.
    solver : {"newton", "bm", "CLARABEL", "SCS"}
        The solver that actually ran (``solver="auto"`` resolved).
    """

    solution: np.ndarray = field(repr=False)
    objective: float
    status: Status
    iterations: int
    seconds: float
    gap: float
    method: str
    solver: str


def gap_certificate(grad_sym: np.ndarray, gram: np.ndarray) -> float:
    r"""Certified bound on ``L(A) - min L`` at a feasible ``A`` from the gradient ``grad L(A)`` (``grad_sym``).

    With the multipliers ``varphi_c = -(grad L(A) A)_{cc}`` and the dual matrix
    ``Phi = grad L(A) + Diag(varphi)``, convexity gives for every feasible ``B``
    ``L(B) >= L(A) + <Phi, B> - <Phi, A>``; ``<Phi, A> = 0`` and ``<Phi, B> >= C eig_min(Phi)``, so
    ``L(A) - L* <= C max(0, -eig_min(Phi))``. It is 0 exactly at the optimum (``Phi`` is then the
    dual certificate of the KKT conditions ``Phi >= 0, Phi A = 0``).

    Parameters
    ----------
    grad_sym : ndarray of shape (C, C)
        Symmetric gradient over off-diagonal entries (any diagonal).
    gram : ndarray of shape (C, C)
        A feasible correlation matrix.

    Returns
    -------
    float >= 0

    Raises
    ------
    ValueError
        If either matrix is not square and finite, they differ in size, ``grad_sym`` is not
        symmetric, or ``gram`` is not symmetric positive semidefinite.

    Examples
    --------
    >>> from ncbook.contrastive import cl_risk_gradient
    >>> from ncbook.geometry import etf_gram
    >>> a = etf_gram(3)                                   # the optimum of balanced classes
    >>> gap_certificate(cl_risk_gradient(a, [1/3, 1/3, 1/3], 1), a) < 1e-12
    True
    """
    g = check_array("grad_sym", grad_sym, ndim=2)
    a = check_array("gram", gram, ndim=2)
    check_symmetric("grad_sym", g, atol=1e-8 * max(1.0, float(np.abs(g).max(initial=0.0))))
    check_symmetric("gram", a, atol=1e-8)
    if g.shape != a.shape:
        raise ValueError(f"grad_sym and gram must have the same shape; got {g.shape} and {a.shape}.")
    check_psd("gram", a)  # a feasible point
    return _gap_certificate(g, a)


def _gap_certificate(grad_sym: np.ndarray, gram: np.ndarray) -> float:
    g = grad_sym - np.diag(np.diag(grad_sym))
    z = g - np.diag(np.einsum("ij,ji->i", g, gram))  # Phi = grad L + Diag(varphi), varphi_c = -(grad L A)_cc
    lmin = float(np.linalg.eigvalsh((z + z.T) / 2)[0])
    return gram.shape[0] * max(0.0, -lmin)


def _pairs(c):
    i, j = np.triu_indices(c, 1)
    pidx = np.full((c, c), -1)
    pidx[i, j] = np.arange(i.size)
    pidx[j, i] = np.arange(i.size)
    return i, j, pidx


def _to_gram(x, i, j, c):
    a = np.eye(c)
    a[i, j] = x
    a[j, i] = x
    return a


def _pair_hessian(h_rows, pidx):
    c = pidx.shape[0]
    m = c * (c - 1) // 2
    hx = np.zeros((m, m))
    for y in range(c):
        others = np.flatnonzero(np.arange(c) != y)
        idx = pidx[y, others]
        hx[np.ix_(idx, idx)] += h_rows[y][np.ix_(others, others)]
    return hx


def _phi(risk, a, mu):
    try:
        chol = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return np.inf, None
    return risk.value(a) - 2.0 * mu * np.log(np.diag(chol)).sum(), chol


def _solve_newton(risk, c, *, tol, max_iter, shrink=0.1):
    """Log-barrier path following on ``L(A) - mu log det A``, Newton steps in ``x``."""
    i, j, pidx = _pairs(c)
    x = np.zeros(i.size)
    a = np.eye(c)
    mu, iters, status = 1.0, 0, "max_iter"
    while iters < max_iter:
        final = c * mu <= tol
        for _ in range(60):
            iters += 1
            phi0, chol = _phi(risk, a, mu)
            _, p = risk.grad(a)
            b = sla.cho_solve((chol, True), np.eye(c))
            g = p[i, j] + p[j, i] - 2.0 * mu * b[i, j]
            hb = 2.0 * mu * (b[np.ix_(i, j)] * b[np.ix_(j, i)] + b[np.ix_(i, i)] * b[np.ix_(j, j)])
            hx = _pair_hessian(risk.hess(a), pidx) + hb
            try:
                dx = sla.solve(hx, -g, assume_a="pos")
            except (np.linalg.LinAlgError, ValueError):
                dx = np.linalg.lstsq(hx, -g, rcond=None)[0]
            dec = float(-g @ dx)
            noise = 1e-13 * (1.0 + abs(phi0))  # below this, value differences are round-off
            step = 1.0
            while step > 1e-14:
                a_new = _to_gram(x + step * dx, i, j, c)
                phi1, _ = _phi(risk, a_new, mu)
                if phi1 <= phi0 - 0.25 * step * dec or (step * dec < noise and phi1 <= phi0 + noise):
                    break
                step *= 0.5
            x = x + step * dx
            a = _to_gram(x, i, j, c)
            if dec <= (1e-10 if final else 1e-2) * mu or iters >= max_iter:
                break
        if final:
            status = "optimal"
            break
        mu *= shrink
    return a, iters, status


def _start_factor(c, r, seed):
    """Rows of the simplex ETF (the balanced optimum) plus a small random tilt: ``(C, r)``.

    Starting BM next to the balanced optimum instead of at random cuts the iterations several
    times for long-tailed ``pi`` (whose optimum stays close to it)."""
    rng = np.random.default_rng(seed)
    v0 = 1e-3 * rng.standard_normal((c, r))
    etf = np.eye(c) - 1.0 / c  # centred basis vectors: cosines -1/(C-1) after normalisation
    q, _ = np.linalg.qr(etf[:, : c - 1] if c > 1 else etf)
    basis = etf @ q  # (C, C-1): the ETF in C-1 coordinates
    w = min(r, c - 1)
    v0[:, :w] += basis[:, :w]
    return v0


def _solve_bm(risk, c, *, rank, tol, max_iter, seed):
    """Burer-Monteiro: unit rows ``U = V / |V|``, ``A = U U^T``, L-BFGS on ``V`` from the ETF."""
    r = c if rank is None else int(rank)
    v0 = _start_factor(c, r, seed)

    def fun(vflat):
        v = vflat.reshape(c, r)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        u = v / norms
        a = u @ u.T
        np.fill_diagonal(a, 1.0)
        val, p = risk.grad(a)
        gu = (p + p.T) @ u  # d S / d U for symmetric A = U U^T (zero-diagonal G = (P + P^T) / 2)
        gv = (gu - u * np.sum(u * gu, axis=1, keepdims=True)) / norms
        return val, gv.ravel()

    # a short L-BFGS memory: its bookkeeping costs O(memory * C r) a step, as much as the risk at large C
    res = minimize(fun, v0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "maxcor": 10, "ftol": 0.0, "gtol": 1e-13, "maxfun": 4 * max_iter})
    u = res.x.reshape(c, r)
    u = u / np.linalg.norm(u, axis=1, keepdims=True)
    u, extra = _polish_bb(fun, u, max_iter=max(max_iter - int(res.nit), 0))
    a = u @ u.T
    np.fill_diagonal(a, 1.0)
    return a, int(res.nit) + extra, "optimal"


def _polish_bb(fun, u, *, max_iter, gtol=1e-13):
    """Barzilai-Borwein Riemannian gradient steps on the product of spheres.

    L-BFGS stops once objective differences drop below round-off; BB steps use gradients
    only, so they keep converging to the accuracy of the gradient."""
    c, r = u.shape
    _, g = fun(u.ravel())
    g = g.reshape(c, r)
    step, it = 1e-2, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        if np.abs(g).max() < gtol:
            break
        v = u - step * g
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        _, g_new = fun(v.ravel())
        g_new = g_new.reshape(c, r)
        s, yv = (v - u).ravel(), (g_new - g).ravel()
        sy = float(s @ yv)
        step = float(s @ s) / sy if (it % 2 and sy > 0) else (sy / float(yv @ yv) if sy > 0 else step)
        u, g = v, g_new
    return u, it


def _solve_cvxpy(lam, k, setting, t, psi, objective, solver, tol, max_iter):
    import cvxpy as cp

    from ._multisets import _negative_distribution, anchor_tables

    c = lam.size
    a = cp.Variable((c, c), PSD=True)
    terms = []
    if psi == "exp" or objective == "large_k":
        q = _negative_distribution(lam, setting)
        for y in range(c):
            sup = np.flatnonzero(q[y] > 0)
            u = (a[y, sup] - 1.0) / t
            if psi == "exp":
                terms.append(lam[y] * k * (q[y, sup] @ cp.exp(u)))
            else:
                terms.append(lam[y] * cp.log_sum_exp(np.log(q[y, sup]) + u))
    else:
        counts, weights = anchor_tables(lam, k, setting)
        support = counts > 0
        sizes = support.sum(axis=1)
        for y in range(c):
            u = (a[y, :] - 1.0) / t
            for s in np.unique(sizes):
                rows = np.flatnonzero((sizes == s) & (weights[:, y] > 0))
                if rows.size == 0:
                    continue
                idx = np.nonzero(support[rows])[1].reshape(rows.size, s)  # (M_s, s) classes present
                logn = np.log(np.take_along_axis(counts[rows], idx, axis=1))
                z = cp.reshape(u[idx.ravel()], (rows.size, s), order="C") + logn
                z = cp.hstack([np.zeros((rows.size, 1)), z])
                terms.append(lam[y] * (weights[rows, y] @ cp.log_sum_exp(z, axis=1)))
    prob = cp.Problem(cp.Minimize(cp.sum(cp.hstack(terms))), [cp.diag(a) == 1])
    if solver == "CLARABEL":
        opts = {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol, "max_iter": max_iter or 500}
    else:  # SCS
        opts = {"eps_abs": tol, "eps_rel": tol, "max_iters": max_iter or 100000}
    try:
        with warnings.catch_warnings():  # cvxpy's own "may be inaccurate": our certificate decides and warns
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            prob.solve(solver=solver, **opts)
    except cp.error.SolverError as err:
        raise SolverError(f"the {solver} solve failed ({err}); try solver='newton' or a looser tol.") from err
    if prob.status not in ("optimal", "optimal_inaccurate", "user_limit") or a.value is None:
        raise SolverError(f"the {solver} solve returned status {prob.status!r} and no usable solution; "
                          "try solver='newton' or a looser tol.")
    iters = prob.solver_stats.num_iters if prob.solver_stats and prob.solver_stats.num_iters else 0
    return (a.value + a.value.T) / 2, int(iters), prob.status


def _one_blas_thread():
    """Small dense linear algebra runs fastest single-threaded (threaded BLAS spins on busy machines)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def certified_threshold(tol: float) -> float:
    """The gap a result must certify to be ``"optimal"``: ``max(tol, 1e-9)`` (the gap asked for;
    never finer than 1e-9, about the round-off of ``S`` summed over millions of terms)."""
    return max(tol, 1e-9)


_ADVICE = {"CLARABEL": "tighten tol or use solver='newton'", "SCS": "tighten tol, raise max_iter or use solver='newton'"}
PSD_TOL = 1e-12  # an eigenvalue below -PSD_TOL (relative to the largest) is projected away


def _nearest_correlation(a: np.ndarray) -> np.ndarray:
    """Clip negative eigenvalues to 0 and rescale to a unit diagonal (a feasible point)."""
    vals, vecs = np.linalg.eigh((a + a.T) / 2)
    b = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
    s = 1.0 / np.sqrt(np.clip(np.diag(b), 1e-300, None))
    b = b * s[:, None] * s[None, :]
    b = (b + b.T) / 2
    np.fill_diagonal(b, 1.0)
    return b


def _feasible(sol: np.ndarray, *, psd_by_construction: bool = False) -> tuple[np.ndarray, bool]:
    """Symmetrise, set the unit diagonal, and project onto the PSD cone when an eigenvalue is negative.

    ``psd_by_construction``: the matrix is ``U U^T`` (BM), so the eigenvalue check (a C^3 step at
    C = 1000) is skipped."""
    a = (sol + sol.T) / 2
    np.fill_diagonal(a, 1.0)
    if psd_by_construction:
        return a, False
    lmin, lmax = np.linalg.eigvalsh(a)[[0, -1]]
    if lmin >= -PSD_TOL * max(lmax, 1.0):
        return a, False
    return _nearest_correlation(a), True


def run_solver(risk, lam, k, setting, t, psi, method, solver, *, tol, max_iter, rank, seed):
    """Dispatch, make feasible, certify, and build the :class:`GramResult` (private).

    Every route ends the same way: the returned matrix is symmetric with a unit diagonal and PSD
    (a solver's slightly indefinite answer is projected onto the elliptope first), its duality
    gap is certified by :func:`gap_certificate`, and the status is ``"optimal"`` only when that
    gap is at most :func:`certified_threshold` ``(tol)``; otherwise ``"inaccurate"`` with an
    :class:`~ncbook._status.InaccurateSolutionWarning`. No usable matrix raises :class:`~ncbook._status.SolverError`.
    """
    c = lam.size
    start = time.perf_counter()
    if solver == "newton":
        with _one_blas_thread():
            sol, iters, _ = _solve_newton(risk, c, tol=tol, max_iter=max_iter or 400)
    elif solver == "bm":
        with _one_blas_thread():
            sol, iters, _ = _solve_bm(risk, c, rank=rank, tol=tol, max_iter=max_iter or 20000, seed=seed)
    else:
        sol, iters, _ = _solve_cvxpy(lam, k, setting, t, psi, "large_k" if method == "large_k" else "multiset",
                                     solver, tol, max_iter)
    if sol is None or not np.all(np.isfinite(sol)):
        raise SolverError(f"the {solver} solve returned no usable solution (a missing or non-finite matrix); "
                          "try solver='newton' (C <= 60) or solver='bm', or a looser tol.")
    sol, projected = _feasible(sol, psd_by_construction=solver == "bm")
    value, p = risk.grad(sol)
    gap = _gap_certificate((p + p.T) / 2, sol)
    seconds = time.perf_counter() - start
    if not np.isfinite(value) or not np.isfinite(gap):
        raise SolverError(f"the {solver} solve ended at a point where the risk or its gap is not finite.")
    limit = certified_threshold(tol)
    detail = f"certified duality gap {gap:.2e} > {limit:.0e}" + (
        " after projecting an indefinite answer onto the PSD cone" if projected else "")
    status = settle_status(gap <= limit, solver=f"solve_gram ({solver})",
                           detail=detail + "; " + _ADVICE.get(solver, "raise max_iter"), stacklevel=4)
    return GramResult(sol, value, status, iters, seconds, gap, method, solver)
