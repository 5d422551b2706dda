r"""Weighted contrastive objectives as distance geometry problems (DGP).

Letters (the book's notation; the paper writes ``N``, ``W = (w_ij)``, ``z_i``, ``c``): ``n`` points, ``d``
(``dim``) embedding dimension, ``tau`` the temperature (keyword ``temperature``). ``Omega = (omega_ij)``
(keyword ``weights``) is the ``(n, n)`` symmetric, non-negative prior weight matrix; its diagonal is ignored.
``h_i`` are the embeddings, ``eig_min`` a smallest eigenvalue, ``1-perp`` the vectors orthogonal to ``1``.

The w-InfoNCE loss reaches its entropic bound iff ``s_ij = log omega_ij + a``. The latent
similarity turns this into a geometry question:

* Euclidean latent, ``s_ij = -||h_i - h_j||^2 / tau``: the squared distances must be
  ``Delta_ij(delta) = -tau log omega_ij + delta`` (``delta = -tau a`` free). With
  ``P_n = I_n - 11^T / n``, ``G_Delta(delta) = -P_n Delta(delta) P_n / 2 = G_Delta(0) + (delta / 2) P_n`` must
  be positive semidefinite (Schoenberg), so the objective is realisable iff
  ``delta >= -2 eig_min(G_Delta(0) on 1-perp)``; the minimal rank is
  ``(n - 1) - mult(eig_min)``, reached only at the smallest shift.
* Cosine latent, ``s_ij = cos(h_i, h_j) / tau``: the Gram matrix of the unit embeddings
  must be ``K(delta) = tau log Omega + delta (11^T - I) + I`` (off-diagonal ``tau log omega_ij + delta``,
  unit diagonal) for some ``delta``: a spherical EDM problem. ``eig_min(K(delta))`` is
  concave in ``delta``, so the realisable shifts form an interval.

Each solver returns a :class:`DGPResult` with ``status``:

``"feasible"``
    the bound is reached and the optimum is unique up to rigid motion;
``"degenerate"``
    the bound is only an infimum (zero weights under the Euclidean latent: some points must
    drift infinitely far apart), or a whole family of optima reaches it (several shifts
    realisable in ``dim``, e.g. Euclidean with ``dim`` None or ``dim >= n - 1``);
``"inconsistent"``
    no embedding in ``dim`` dimensions reaches (or approaches) the bound: the target is not
    PSD at any shift, its minimal rank exceeds ``dim``, or (cosine latent) a zero weight asks
    for a similarity of ``-inf``.

These ``status`` values are the verdict of an exact spectral analysis (eigenvalues of a
symmetric matrix), not an iterative solver's certificate, so the solver vocabulary of
:mod:`ncbook._status` ("optimal" / "inaccurate" / :class:`ncbook.SolverError`) does not
apply; in cvxpy's words "feasible" is *optimal*, "inconsistent" *infeasible*, and
"degenerate" *unbounded* (the bound is an infimum, or not unique).

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive
Learning", arXiv:2605.13943 (2026): feasibility, degeneracy and inconsistency.
Schoenberg, Annals of Mathematics 36 (1935): EDMs and positive semidefinite Gram matrices.
Dokmanic et al., "Euclidean Distance Matrices", IEEE Signal Processing Magazine 2015.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.sparse.csgraph import connected_components

from ._validation import as_float64, check_int, check_positive, check_square, check_symmetric

__all__ = ["DGPResult", "STATUSES", "euclidean_dgp", "spherical_dgp"]

STATUSES = ("feasible", "degenerate", "inconsistent")


@dataclass(frozen=True)
class DGPResult:
    """Outcome of a distance-geometry feasibility analysis.

    Attributes
    ----------
    status : {"feasible", "degenerate", "inconsistent"}
    rank : int or None
        Minimal rank of a realising configuration (its affine dimension for the Euclidean
        latent, the rank of the unit Gram matrix for the cosine latent); ``None`` when no
        shift makes the target PSD.
    embedding : ndarray of shape (n, dim) or None
        A realising configuration (the minimal-rank one) when the bound is reached
        (``"feasible"``, or ``"degenerate"`` with a family of optima); ``None`` otherwise.
        Unit rows for the cosine latent, centred rows for the Euclidean latent.
    shift : float or None
        The shift ``delta`` of the minimal-rank optimum (of ``Delta(delta)`` or ``K(delta)``).
    shift_interval : tuple of float or None
        All shifts that make the target PSD (``(delta_min, inf)`` for the Euclidean latent).
    gram : ndarray of shape (n, n) or None
        The target Gram matrix at ``shift`` (``G_Delta(delta)`` or ``K(delta)``).
    lambda_min : float
        ``eig_min`` (the field keeps the paper's name): Euclidean, the smallest eigenvalue of
        ``G_Delta(0)`` on the complement of ``1``; cosine, the largest ``eig_min(K(delta))`` over
        ``delta`` (negative means never PSD).
    reason : str
        One sentence explaining the status.
    seconds : float
        Wall time of the analysis.
    """

    status: str
    rank: int | None
    embedding: np.ndarray | None
    shift: float | None
    shift_interval: tuple | None
    gram: np.ndarray | None
    lambda_min: float
    reason: str
    seconds: float


def _check_inputs(weights, temperature, dim, atol):
    check_square("weights", weights)
    check_positive("atol", atol)
    w = as_float64(weights, "weights")
    if w.shape[0] < 2:
        raise ValueError(f"weights must be at least 2 x 2; got {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite; it holds NaN or infinite values.")
    if np.any(w < 0):
        raise ValueError(f"weights must be non-negative; got minimum {w.min():.4g}.")
    check_symmetric("weights", w, atol=1e-10 * max(1.0, float(np.abs(w).max())))
    t = check_positive("temperature", temperature)
    check_int("dim", dim, 1, allow_none=True, what="the embedding dimension d")
    return w, t


def _off_diagonal_log(w: np.ndarray) -> np.ndarray:
    off = ~np.eye(w.shape[0], dtype=bool)
    out = np.zeros_like(w)
    out[off] = np.log(w[off])
    return out


def _embed(gram: np.ndarray, rank: int, width: int) -> np.ndarray:
    vals, vecs = np.linalg.eigh(gram)
    order = np.argsort(vals)[::-1][:rank]
    x = vecs[:, order] * np.sqrt(np.clip(vals[order], 0.0, None))
    out = np.zeros((gram.shape[0], max(width, rank)))
    out[:, :rank] = x
    return out


def _rank(vals: np.ndarray, tol: float) -> int:
    return int(np.sum(vals > tol))


def _complement_basis(n: int) -> np.ndarray:
    """Orthonormal basis (n, n - 1) of the complement of the all-ones vector."""
    q, _ = np.linalg.qr(np.concatenate([np.ones((n, 1)), np.eye(n)[:, : n - 1]], axis=1))
    return q[:, 1:]


def _euclidean_block(w: np.ndarray, tau: float, tol: float):
    """eig_min of G_Delta(0) on 1-perp, its multiplicity and G_Delta(0) for fully positive weights."""
    n = w.shape[0]
    if n == 1:
        return 0.0, 0, np.zeros((1, 1))
    d0 = -tau * _off_diagonal_log(w)
    j = np.eye(n) - np.ones((n, n)) / n
    b0 = -0.5 * j @ d0 @ j
    v = _complement_basis(n)
    vals = np.linalg.eigvalsh(v.T @ b0 @ v)
    lam = float(vals[0])
    mult = int(np.sum(vals <= lam + tol))
    return lam, mult, b0


def euclidean_dgp(weights, temperature: float, dim: int | None = None, *, atol: float = 1e-9) -> DGPResult:
    r"""Is the entropic bound of w-InfoNCE with the Euclidean latent reachable in ``dim`` dimensions?

    The target squared distances are ``Delta(delta) = -tau log Omega + delta`` off the diagonal;
    ``G_Delta(delta) = G_Delta(0) + (delta/2) P_n`` must be PSD with rank ``<= dim``.

    Parameters
    ----------
    weights : Tensor or ndarray of shape (n, n)
        Symmetric, non-negative prior weights (diagonal ignored). Zero weights are allowed
        when they separate groups (the positive-weight pairs form complete blocks): the
        groups then drift apart and the bound is only an infimum.
    temperature : float
        The temperature ``tau > 0``.
    dim : int, optional
        Embedding dimension ``d >= 1``; ``None`` means unlimited.
    atol : float
        Eigenvalue tolerance (scaled by the size of ``G_Delta(0)``) for ranks and multiplicities.

    Returns
    -------
    DGPResult

    Raises
    ------
    ValueError
        If ``weights`` is not square, symmetric, finite and non-negative, ``temperature <= 0``,
        ``dim < 1``, or zero weights do not form a block pattern.

    References
    ----------
    arXiv:2605.13943, Euclidean feasibility; Schoenberg 1935; Dokmanic et al. 2015.

    Examples
    --------
    >>> y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.2]])
    >>> w = np.exp(-((y[:, None] - y[None]) ** 2).sum(-1) / 2)
    >>> res = euclidean_dgp(w, temperature=0.5, dim=3)
    >>> res.status, res.rank
    ('feasible', 2)
    """
    start = time.perf_counter()
    w, t = _check_inputs(weights, temperature, dim, atol)
    n = w.shape[0]
    off = ~np.eye(n, dtype=bool)
    if np.any(w[off] == 0):
        return _euclidean_with_zeros(w, t, dim, atol, start)
    scale = max(1.0, float(np.abs(t * _off_diagonal_log(w)).max()))
    tol = atol * scale * n
    lam, mult, b0 = _euclidean_block(w, t, tol)
    delta_min = -2.0 * lam
    rank = (n - 1) - mult
    gram = b0 + (delta_min / 2.0) * (np.eye(n) - np.ones((n, n)) / n)
    interval = (delta_min, float("inf"))
    if dim is None or dim >= n - 1:
        status = "degenerate"
        reason = (
            f"every shift delta >= {delta_min:.4g} is realisable in {n - 1} dimensions, so a whole family of "
            "optima reaches the bound; uniqueness needs dim < N - 1."
        )
    elif rank <= dim:
        status = "feasible"
        reason = f"only the smallest shift delta = {delta_min:.4g} fits in dim = {dim} (minimal rank {rank})."
    else:
        status = "inconsistent"
        reason = f"the minimal rank {rank} exceeds dim = {dim}: no {dim}-dimensional embedding reaches the bound."
    width = rank if dim is None else dim
    emb = _embed(gram, rank, width) if status != "inconsistent" else None
    return DGPResult(status, rank, emb, delta_min, interval, gram, lam, reason, time.perf_counter() - start)


def _euclidean_with_zeros(w, t, dim, atol, start) -> DGPResult:
    n = w.shape[0]
    off = ~np.eye(n, dtype=bool)
    positive = (w > 0) & off
    ncomp, comp = connected_components(positive, directed=False)
    same = comp[:, None] == comp[None, :]
    if np.any(same & off & ~positive):
        raise ValueError(
            "weights has zero entries inside a connected group of positive weights; euclidean_dgp handles "
            "zero weights only when they separate groups (a block pattern, as in SupCon)."
        )
    ranks, lams = [], []
    for c in range(ncomp):
        idx = np.flatnonzero(comp == c)
        if idx.size == 1:
            ranks.append(0)
            lams.append(0.0)
            continue
        sub = w[np.ix_(idx, idx)]
        tol = atol * max(1.0, float(np.abs(t * _off_diagonal_log(sub)).max())) * idx.size
        lam, mult, _ = _euclidean_block(sub, t, tol)
        ranks.append((idx.size - 1) - mult)
        lams.append(lam)
    rank = max(ranks)
    if dim is not None and rank > dim:
        return DGPResult(
            "inconsistent", rank, None, None, None, None, min(lams),
            f"a group of positive weights needs rank {rank} > dim = {dim}.", time.perf_counter() - start,
        )
    reason = (
        f"zero weights split the points into {ncomp} groups that must drift infinitely far apart: the bound "
        "is only an infimum (each group is realisable on its own)."
    )
    return DGPResult("degenerate", rank, None, None, None, None, min(lams), reason, time.perf_counter() - start)


def _spherical_target(logw: np.ndarray, tau: float, beta: float) -> np.ndarray:
    n = logw.shape[0]
    return tau * logw + beta * (np.ones((n, n)) - np.eye(n)) + np.eye(n)


def spherical_dgp(weights, temperature: float, dim: int, *, atol: float = 1e-8) -> DGPResult:
    r"""Is the entropic bound of w-InfoNCE with the cosine latent reachable on the sphere in ``R^dim``?

    The unit Gram matrix must equal ``K(delta) = tau log Omega + delta (11^T - I) + I`` for some
    ``delta``. ``f(delta) = eig_min(K(delta))`` is concave; the realisable shifts are the
    interval where ``f >= 0``. Inside it ``K`` has full rank ``n``; only its end points
    can have a lower rank. The optimum is unique when exactly one realisable shift fits in
    ``dim`` dimensions.

    Parameters
    ----------
    weights : Tensor or ndarray of shape (n, n)
        Symmetric, non-negative prior weights (diagonal ignored). A zero weight makes the
        objective inconsistent: the cosine is bounded, so ``s_ij = -inf`` is out of reach
        and the gap stays bounded away from zero (SupCon is the example).
    temperature : float
        The temperature ``tau > 0``.
    dim : int
        Embedding dimension ``d >= 1``.
    atol : float
        Eigenvalue tolerance (scaled by ``n``) for PSD tests and ranks.

    Returns
    -------
    DGPResult

    Raises
    ------
    ValueError
        If ``weights`` is not square, symmetric, finite and non-negative, ``temperature <= 0`` or ``dim < 1``.

    References
    ----------
    arXiv:2605.13943, spherical feasibility (Soft SupCon, y-Aware, X-CLR).

    Examples
    --------
    >>> labels = np.repeat(np.arange(3), 2)
    >>> temperature = 0.5
    >>> eps = np.exp(-3 / (2 * temperature))  # the regular-simplex epsilon^star for C = 3
    >>> w = np.where(labels[:, None] == labels[None, :], 1.0, eps)
    >>> res = spherical_dgp(w, temperature=temperature, dim=4)
    >>> res.status, res.rank, round(float(res.gram[0, 2]), 6)
    ('feasible', 2, -0.5)
    """
    start = time.perf_counter()
    w, t = _check_inputs(weights, temperature, dim, atol)
    if dim is None:
        raise ValueError("dim must be an integer >= 1 (the embedding dimension d); got None.")
    n = w.shape[0]
    off = ~np.eye(n, dtype=bool)
    if np.any(w[off] == 0):
        return DGPResult(
            "inconsistent", None, None, None, None, None, float("-inf"),
            "a zero weight asks for a cosine similarity of -inf, but cosines are bounded: the gap never closes.",
            time.perf_counter() - start,
        )
    logw = _off_diagonal_log(w)
    tol = atol * n
    lo, hi = -1.0 - t * logw[off].min(), 1.0 - t * logw[off].max()  # |K_ij| <= 1 on the sphere

    def f(beta: float) -> float:
        return float(np.linalg.eigvalsh(_spherical_target(logw, t, beta))[0])

    if lo > hi:
        best_beta, best = 0.5 * (lo + hi), f(0.5 * (lo + hi))
    else:
        opt = minimize_scalar(lambda b: -f(b), bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
        best_beta, best = float(opt.x), -float(opt.fun)
        for b in (lo, hi):  # the bounded search never evaluates the end points themselves
            if f(b) > best:
                best_beta, best = b, f(b)
    if best < -tol:
        return DGPResult(
            "inconsistent", None, None, None, None, None, best,
            f"K(delta) is never PSD (max over delta of eig_min = {best:.3g}): no unit vectors have these cosines.",
            time.perf_counter() - start,
        )
    ends = _interval_ends(f, lo, hi, best_beta, tol)
    ranks = [_rank(np.linalg.eigvalsh(_spherical_target(logw, t, b)), tol) for b in ends]
    fits = [(r, b) for r, b in zip(ranks, ends) if r <= dim]
    interval = (ends[0], ends[-1])
    rank = min(ranks)
    interior = ends[-1] - ends[0] > 1e-9
    if not fits and not (interior and dim >= n):
        return DGPResult(
            "inconsistent", rank, None, None, interval, None, best,
            f"the target is PSD for delta in [{ends[0]:.4g}, {ends[-1]:.4g}] but its minimal rank {rank} exceeds dim = {dim}.",
            time.perf_counter() - start,
        )
    if (interior and dim >= n) or len(fits) > 1:
        status, reason = "degenerate", (
            f"several shifts delta in [{ends[0]:.4g}, {ends[-1]:.4g}] are realisable in dim = {dim}: a family of optima."
        )
    else:
        status, reason = "feasible", f"a single shift delta = {fits[0][1]:.4g} is realisable in dim = {dim} (rank {fits[0][0]})."
    r_best, b_best = min(fits) if fits else (n, 0.5 * (ends[0] + ends[-1]))
    gram = _spherical_target(logw, t, b_best)
    emb = _embed(gram, r_best, dim)
    emb = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    return DGPResult(status, rank, emb, b_best, interval, gram, best, reason, time.perf_counter() - start)


def _interval_ends(f, lo: float, hi: float, peak: float, tol: float) -> list[float]:
    """End points of ``{delta : f(delta) >= -tol}`` around ``peak`` (one point if it is a single shift)."""
    if f(peak) <= tol:
        return [peak]
    left = lo if f(lo) >= -tol else brentq(f, lo, peak, xtol=1e-14)
    right = hi if f(hi) >= -tol else brentq(f, peak, hi, xtol=1e-14)
    return [left, right]
