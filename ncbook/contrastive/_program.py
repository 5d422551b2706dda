"""Public entry points of the convex program: :func:`solve_gram` and :func:`optimal_gram`.

Letters (the book's notation): ``C`` classes, ``k`` negatives per anchor, ``tau`` the temperature (keyword
``temperature``), ``pi`` the class probabilities (keyword ``class_probs``), ``L(A)`` the contrastive risk.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_in, check_int, check_positive
from ._objective import make_risk
from ._risk import _check_problem
from ._solvers import GramResult, run_solver

__all__ = ["METHODS", "SOLVERS", "solve_gram", "optimal_gram"]

METHODS = ("exact", "large_k", "bm")
SOLVERS = ("auto", "newton", "bm", "CLARABEL", "SCS")
_NEWTON_MAX_CLASSES = 60  # beyond this a Newton system of size C(C-1)/2 costs seconds per step


def solve_gram(
    class_probs,
    k,
    *,
    setting: str = "ucl",
    temperature: float = 1.0,
    psi: str = "infonce",
    method: str = "exact",
    solver: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    rank: int | None = None,
    seed: int = 0,
) -> GramResult:
    r"""Solve ``min L(A)`` over ``A >= 0`` (PSD) with ``diag(A) = 1``; return a :class:`GramResult`.

    Parameters
    ----------
    class_probs : array-like of shape (C,)
        ``pi``: strictly positive, sums to 1, ``C >= 2``.
    k : int or math.inf
        Negatives per anchor (``>= 1``). Ignored by ``method="large_k"`` (pass any ``k`` or ``math.inf``).
    setting : {"ucl", "scl"}
    temperature : float
        The temperature ``tau > 0``.
    psi : {"infonce", "exp"}
    method : {"exact", "large_k", "bm"}
        ``"exact"``: the exact multiset risk (``C binom(C + k - 1, k)`` terms for UCL).
        ``"large_k"``: its large-``k`` limit ``L_inf`` (for batch-size ``k``, any ``C``).
        ``"bm"``: the exact multiset risk through Burer-Monteiro (first-order, no Newton systems of
        size ``C(C-1)/2``).
    solver : {"auto", "newton", "bm", "CLARABEL", "SCS"}
        ``"auto"``: ``"newton"`` (our structured barrier method) for ``C <= 60``, else ``"bm"``;
        ``method="bm"`` forces ``"bm"``. ``"CLARABEL"``/``"SCS"``: the plain cvxpy formulation with
        tolerances ``tol`` (a reference; about 160 s at C = 20, k = 4 on 2 cores).
    tol : float
        Target duality gap. The result is ``"optimal"`` only when its certified gap
        (:func:`gap_certificate`) is at most ``max(tol, 1e-9)`` on every route, the cvxpy ones
        included.
    max_iter : int, optional
        Iteration cap of the chosen solver (Newton steps, L-BFGS plus polishing steps, or the
        iterations of CLARABEL/SCS). Default: 400, 20000, 500 (CLARABEL), 100000 (SCS).
    rank : int, optional
        Columns of the Burer-Monteiro factor (default ``C``).
    seed : int
        Seed of the small random tilt of the Burer-Monteiro starting point (the simplex ETF).

    Returns
    -------
    GramResult
        ``solution`` (C, C): symmetric, unit diagonal, PSD (an indefinite solver answer is projected
        onto the correlation matrices and re-certified); ``objective``; ``status`` ``"optimal"`` or
        ``"inaccurate"``; ``iterations``; ``seconds``; ``gap``; ``method`` (as asked) and
        ``solver`` (the one that ran).

    Warns
    -----
    InaccurateSolutionWarning
        When the certified gap is above ``max(tol, 1e-9)`` (e.g. ``max_iter`` too small, or a
        cvxpy solver at a loose tolerance); the result is returned with status ``"inaccurate"``.

    Raises
    ------
    ValueError
        Bad probabilities (not on the simplex, a zero class), ``k < 1``, unknown method/solver.
    SolverError
        No usable solution came back (a cvxpy failure, infeasible status, or a non-finite matrix).

    References
    ----------
    Nguyen et al., arXiv:2605.11291 (2026), the convex program over correlation matrices
    and its uniqueness; Burer and Monteiro (2003).

    Examples
    --------
    >>> res = solve_gram([0.6, 0.2, 0.2], 1, setting="ucl")
    >>> res.status, round(float(res.solution[0, 1]), 6), round(float(res.solution[1, 2]), 6)
    ('optimal', -0.75148, 0.129445)
    >>> res.method, res.solver
    ('exact', 'newton')
    """
    check_in("method", method, METHODS)
    check_in("solver", solver, SOLVERS)
    tol = check_positive("tol", tol)
    large = method == "large_k"
    if large and not (isinstance(k, float) and math.isinf(k)):
        from ._multisets import _check_k

        _check_k(k)
        k = math.inf
    lam, k, t, objective = _check_problem(class_probs, k, setting, temperature, psi, large_k=large)
    risk = make_risk(lam, k, setting, t, psi, objective)
    if method == "bm":
        solver = "bm"
    elif solver == "auto":
        solver = "newton" if lam.size <= _NEWTON_MAX_CLASSES else "bm"
    if max_iter is not None:
        max_iter = check_int("max_iter", max_iter, 1)
    rank = check_int("rank", rank, 1, allow_none=True)
    seed = check_int("seed", seed, 0)
    return run_solver(risk, lam, k, setting, t, psi, method, solver, tol=tol, max_iter=max_iter,
                      rank=rank, seed=seed)


def optimal_gram(class_probs, k, *, setting: str = "ucl", temperature: float = 1.0, psi: str = "infonce",
                 method: str = "exact", solver: str = "auto", **options) -> np.ndarray:
    """The optimal class-mean Gram matrix ``A*`` (C, C); see :func:`solve_gram` for every option.

    Examples
    --------
    >>> from ncbook.geometry import etf_gram
    >>> bool(np.allclose(optimal_gram([0.25] * 4, 2), etf_gram(4), atol=1e-7))
    True
    """
    return solve_gram(class_probs, k, setting=setting, temperature=temperature, psi=psi, method=method,
                      solver=solver, **options).solution
