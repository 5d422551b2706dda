"""Public entry points of the convex program: :func:`solve_gram` and :func:`optimal_gram`.

Letters: ``C`` classes, ``k`` negatives per anchor, ``t`` temperature.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_in, check_positive
from ._objective import make_risk
from ._risk import _check_problem
from ._solvers import GramResult, run_solver

__all__ = ["METHODS", "SOLVERS", "solve_gram", "optimal_gram"]

METHODS = ("exact", "large_k", "bm")
SOLVERS = ("auto", "newton", "bm", "CLARABEL", "SCS")
_NEWTON_MAX_CLASSES = 60  # beyond this an m x m Newton solve (m = C(C-1)/2) costs seconds per step


def solve_gram(
    class_probs,
    k,
    *,
    setting: str = "ucl",
    t: float = 1.0,
    psi: str = "infonce",
    method: str = "exact",
    solver: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    rank: int | None = None,
    seed: int = 0,
    allow_inaccurate: bool = False,
) -> GramResult:
    r"""Solve ``min S(A)`` over ``A >= 0`` (PSD) with ``diag(A) = 1``; return a :class:`GramResult`.

    Parameters
    ----------
    class_probs : array-like of shape (C,)
        ``lambda``: strictly positive, sums to 1, ``C >= 2``.
    k : int or math.inf
        Negatives per anchor (``>= 1``). Ignored by ``method="large_k"`` (pass any ``k`` or ``math.inf``).
    setting : {"ucl", "scl"}
    t : float
        Temperature ``> 0``.
    psi : {"infonce", "exp"}
    method : {"exact", "large_k", "bm"}
        ``"exact"``: the exact multiset risk (``C binom(C + k - 1, k)`` terms for UCL).
        ``"large_k"``: its large-``k`` limit ``S_inf`` (for batch-size ``k``, any ``C``).
        ``"bm"``: the exact multiset risk through Burer-Monteiro (first-order, no ``m x m`` solves).
    solver : {"auto", "newton", "bm", "CLARABEL", "SCS"}
        ``"auto"``: ``"newton"`` (our structured barrier method) for ``C <= 60``, else ``"bm"``;
        ``method="bm"`` forces ``"bm"``. ``"CLARABEL"``/``"SCS"``: the plain cvxpy formulation with
        tolerances ``tol`` (a reference; about 160 s at C = 20, k = 4 on 2 cores).
    tol : float
        Target duality gap. The result's ``gap`` is a certified bound (:func:`gap_certificate`).
    max_iter : int, optional
        Iteration cap of the chosen solver.
    rank : int, optional
        Columns of the Burer-Monteiro factor (default ``C``).
    seed : int
        Seed of the Burer-Monteiro starting point.
    allow_inaccurate : bool
        If False (default), a solve that does not certify ``gap <= max(100 tol, 1e-9)`` or whose
        cvxpy status is not ``"optimal"`` raises; if True it warns and returns the result.

    Returns
    -------
    GramResult
        ``solution`` (C, C), ``objective``, ``status``, ``iterations``, ``seconds``, ``gap``.

    Raises
    ------
    ValueError
        Bad probabilities (not on the simplex, a zero class), ``k < 1``, unknown method/solver.
    RuntimeError
        The solver did not reach an optimal, certified solution (unless ``allow_inaccurate``).

    References
    ----------
    Nguyen et al., arXiv:2605.11291 (2026), the convex program over correlation matrices
    and its uniqueness; Burer and Monteiro (2003).

    Examples
    --------
    >>> res = solve_gram([0.6, 0.2, 0.2], 1, setting="ucl")
    >>> res.status, round(float(res.solution[0, 1]), 6), round(float(res.solution[1, 2]), 6)
    ('optimal', -0.75148, 0.129445)
    """
    check_in("method", method, METHODS)
    check_in("solver", solver, SOLVERS)
    tol = check_positive("tol", tol)
    large = method == "large_k"
    if large and not (isinstance(k, float) and math.isinf(k)):
        from ._multisets import _check_k

        _check_k(k)
        k = math.inf
    lam, k, t, objective = _check_problem(class_probs, k, setting, t, psi, large_k=large)
    risk = make_risk(lam, k, setting, t, psi, objective)
    if method == "bm":
        solver = "bm"
    elif solver == "auto":
        solver = "newton" if lam.size <= _NEWTON_MAX_CLASSES else "bm"
    return run_solver(risk, lam, k, setting, t, psi, objective, solver, tol=tol, max_iter=max_iter,
                      rank=rank, seed=seed, allow_inaccurate=allow_inaccurate)


def optimal_gram(class_probs, k, *, setting: str = "ucl", t: float = 1.0, psi: str = "infonce",
                 method: str = "exact", solver: str = "auto", **options) -> np.ndarray:
    """The optimal class-mean Gram matrix ``A*`` (C, C); see :func:`solve_gram` for every option.

    Examples
    --------
    >>> from ncbook.geometry import etf_gram
    >>> bool(np.allclose(optimal_gram([0.25] * 4, 2), etf_gram(4), atol=1e-7))
    True
    """
    return solve_gram(class_probs, k, setting=setting, t=t, psi=psi, method=method, solver=solver, **options).solution
