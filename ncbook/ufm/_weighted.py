"""Free-embedding fits of w-InfoNCE: every point (or class prototype) is a free vector.

Letters (the book's notation): ``n`` points, ``C`` classes, ``d`` embedding dimension, ``tau`` the temperature
(keyword ``temperature``), ``Omega`` the prior weights (keyword ``weights``). Embeddings ``h_i`` are the rows
of an ``(n, d)`` array (prototypes ``(C, d)``). Fits run in float64 with Adam (to leave the random start) and
then L-BFGS (to converge to machine precision), on one thread: these problems are tiny and
extra threads only add overhead.

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive
Learning", arXiv:2605.13943 (2026): free-embedding experiments.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from .._status import SolverError, settle_status
from .._validation import as_float64, check_counts, check_in, check_int, check_positive
from ..losses import entropic_lower_bound, prototype_entropic_lower_bound, prototype_w_info_nce, w_info_nce

__all__ = ["EmbeddingFit", "fit_free_embeddings", "fit_prototypes"]


@dataclass(frozen=True)
class EmbeddingFit:
    """Result of a free-embedding fit.

    Attributes
    ----------
    solution : ndarray of shape (n, d) or (C, d)
        The fitted embeddings (unit rows for the cosine latent).
    objective : float
        Final loss.
    bound : float
        Entropic lower bound of the weights.
    gap : float
        ``objective - bound`` (can be slightly negative at round-off level).
    status : {"optimal", "inaccurate"}
        ``"optimal"`` when the stationarity certificate holds: the largest entry of the
        loss gradient at the solution is at most ``gtol`` (default ``1e-6``);
        ``"inaccurate"`` otherwise, with an :class:`ncbook.InaccurateSolutionWarning`.
        A fit whose loss is not finite raises :class:`ncbook.SolverError`.
    iterations : int
        Adam steps plus L-BFGS iterations.
    seconds : float
    """

    solution: np.ndarray
    objective: float
    bound: float
    gap: float
    status: str
    iterations: int
    seconds: float


@contextmanager
def _threads(n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _check_fit_args(dim, adam_steps, lbfgs_steps, lr, gtol, seed, threads):
    check_int("dim", dim, 1, what="the embedding dimension d")
    check_int("seed", seed, 0)
    check_int("threads", threads, 1)
    check_int("adam_steps", adam_steps, 0)
    check_int("lbfgs_steps", lbfgs_steps, 0)
    check_positive("lr", lr)
    check_positive("gtol", gtol)


def _optimise(loss_fn, z: torch.Tensor, adam_steps: int, lbfgs_steps: int, lr: float, gtol: float, solver: str):
    z = z.clone().requires_grad_(True)
    opt = torch.optim.Adam([z], lr=lr)
    for _ in range(adam_steps):
        opt.zero_grad()
        loss = loss_fn(z)
        loss.backward()
        opt.step()
    its = adam_steps
    if lbfgs_steps:
        lb = torch.optim.LBFGS(
            [z], lr=1.0, max_iter=lbfgs_steps, tolerance_grad=1e-13, tolerance_change=1e-16,
            history_size=50, line_search_fn="strong_wolfe",
        )

        def closure():
            lb.zero_grad()
            value = loss_fn(z)
            value.backward()
            return value

        lb.step(closure)
        state = lb.state[lb._params[0]]
        n_iter = int(state.get("n_iter", 0))
        its += n_iter
    z.grad = None
    value = loss_fn(z)
    (grad,) = torch.autograd.grad(value, z)
    final, gmax = float(value.detach()), float(grad.abs().max())
    if not (np.isfinite(final) and np.isfinite(gmax)):
        raise SolverError(f"{solver}: the loss or its gradient is not finite at the end ({final}); "
                          "lower lr or check the weights.")
    status = settle_status(gmax <= gtol, solver=solver, stacklevel=4,
                           detail=f"largest gradient entry {gmax:.3g} > gtol {gtol:.3g} after {its} iterations; "
                                  "raise lbfgs_steps or loosen gtol")
    return z.detach(), final, status, its


def _init(n: int, dim: int, seed: int, init) -> torch.Tensor:
    if init is not None:
        z = torch.as_tensor(as_float64(init, "init"))
        if tuple(z.shape) != (n, dim):
            raise ValueError(f"init must have shape ({n}, {dim}); got {tuple(z.shape)}.")
        return z
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(n, dim, generator=g, dtype=torch.float64)


def _finish(z: torch.Tensor, similarity: str) -> np.ndarray:
    x = z.numpy().copy()
    if similarity == "cosine":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    else:
        x -= x.mean(axis=0, keepdims=True)
    return x


def fit_free_embeddings(
    weights,
    *,
    similarity: str = "cosine",
    temperature: float,
    dim: int,
    seed: int = 0,
    init=None,
    adam_steps: int = 300,
    lbfgs_steps: int = 500,
    lr: float = 0.05,
    threads: int = 1,
    gtol: float = 1e-6,
) -> EmbeddingFit:
    """Minimise :func:`ncbook.losses.w_info_nce` over free embeddings ``h_i``, rows of an ``(n, dim)`` array.

    Parameters
    ----------
    weights : Tensor or ndarray of shape (n, n)
        Non-negative prior weights ``Omega``.
    similarity : {"cosine", "euclidean"}
    temperature : float
        The temperature ``tau > 0``.
    dim : int
        Embedding dimension ``d >= 1``.
    seed : int
        Seed of the standard normal start (ignored when ``init`` is given).
    init : array-like of shape (n, dim), optional
        Starting point.
    adam_steps, lbfgs_steps : int
        Adam steps (learning rate ``lr``), then at most ``lbfgs_steps`` L-BFGS iterations.
    lr : float
    threads : int
        Torch threads during the fit (restored afterwards).
    gtol : float
        Certificate: ``status`` is ``"optimal"`` when the largest gradient entry at the
        solution is ``<= gtol``.

    Returns
    -------
    EmbeddingFit

    Raises
    ------
    ValueError
        On bad ``dim``, step counts, ``lr``, ``temperature``, ``similarity`` or weights.
    ncbook.SolverError
        If the loss is not finite at the end of the fit.

    Warns
    -----
    ncbook.InaccurateSolutionWarning
        If the gradient certificate does not hold (status ``"inaccurate"``).

    Examples
    --------
    >>> from ncbook.losses import supcon_weights
    >>> fit = fit_free_embeddings(supcon_weights([0, 0, 1, 1]), similarity="euclidean", temperature=0.5, dim=3)
    >>> fit.status, fit.gap < 1e-10  # Euclidean SupCon can reach its bound (classes drift apart)
    ('optimal', True)
    """
    check_in("similarity", similarity, ("cosine", "euclidean"))
    check_positive("temperature", temperature)
    _check_fit_args(dim, adam_steps, lbfgs_steps, lr, gtol, seed, threads)
    start = time.perf_counter()
    w = torch.as_tensor(as_float64(weights, "weights"))
    with _threads(threads):
        bound = entropic_lower_bound(w)
        z0 = _init(w.shape[0], int(dim), seed, init)

        def loss_fn(z):
            return w_info_nce(z, w, similarity=similarity, temperature=temperature)

        z, final, status, its = _optimise(loss_fn, z0, adam_steps, lbfgs_steps, lr, gtol, "fit_free_embeddings")
    return EmbeddingFit(_finish(z, similarity), final, bound, final - bound, status, its, time.perf_counter() - start)


def fit_prototypes(
    counts,
    class_weights,
    *,
    similarity: str = "cosine",
    temperature: float,
    dim: int,
    seed: int = 0,
    init=None,
    adam_steps: int = 300,
    lbfgs_steps: int = 500,
    lr: float = 0.05,
    threads: int = 1,
    gtol: float = 1e-6,
) -> EmbeddingFit:
    """Minimise the class-level :func:`ncbook.losses.prototype_w_info_nce` over prototypes (C, dim).

    Exact for objectives whose optimum collapses each class to one point (SupCon, Soft
    SupCon), at ``C x C`` cost whatever the class sizes.

    Parameters
    ----------
    counts : array-like of int, shape (C,)
        Samples per class.
    class_weights : Tensor or ndarray of shape (C, C)
        The class-level prior weights ``bar omega_cc'``: the weight of a pair (class ``c``, class ``c'``).
    similarity, temperature, dim, seed, init, adam_steps, lbfgs_steps, lr, threads, gtol
        As in :func:`fit_free_embeddings`.

    Returns
    -------
    EmbeddingFit (``solution`` holds the prototypes).

    Examples
    --------
    >>> fit = fit_prototypes([3, 3], np.eye(2), temperature=0.5, dim=2)
    >>> fit.status, round(float(fit.solution[0] @ fit.solution[1]), 6)  # two classes: antipodal prototypes
    ('optimal', -1.0)
    """
    check_in("similarity", similarity, ("cosine", "euclidean"))
    check_positive("temperature", temperature)
    _check_fit_args(dim, adam_steps, lbfgs_steps, lr, gtol, seed, threads)
    cnt = check_counts(counts)
    start = time.perf_counter()
    om = torch.as_tensor(as_float64(class_weights, "class_weights"))
    with _threads(threads):
        bound = prototype_entropic_lower_bound(cnt, om)
        z0 = _init(cnt.size, int(dim), seed, init)

        def loss_fn(z):
            return prototype_w_info_nce(z, cnt, om, similarity=similarity, temperature=temperature)

        z, final, status, its = _optimise(loss_fn, z0, adam_steps, lbfgs_steps, lr, gtol, "fit_prototypes")
    return EmbeddingFit(_finish(z, similarity), final, bound, final - bound, status, its, time.perf_counter() - start)
