r"""The cross-entropy unconstrained-features model (UFM) and its optimisers.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples, ``n_c`` samples of
class ``c``. ``W`` is ``(C, d)`` and ``H`` is ``(n, d)``; logits are ``H W^T`` of
shape ``(n, C)`` (the paper writes ``H`` as ``d x n`` and ``Z = W H`` as ``C x n``).

The objective, with ``lambda`` multiplying the squared norms next to the **mean**
cross-entropy over samples (``lambda_sum = n * lambda_mean`` for a summed loss):

.. math::
    \mathcal L(W, H) = \frac1n \sum_i \mathrm{CE}(W h_i, y_i)
    + \frac{\lambda_W}{2}\|W\|_F^2 + \frac{\lambda_H}{2}\|H\|_F^2 .

At class level the features of a class are tied to one row ``mu_c`` of ``H`` (the collapsed class
mean) with multiplicity ``n_c`` (loss weights ``n_c / n``, ridge ``lambda_H/2 sum_c n_c ||mu_c||^2``),
which is the sample-level objective restricted to collapsed features. The optimiser
then moves :math:`\sqrt{n_c}\, \mu_c`, so that its steps are those of the
sample-level model with collapsed features. Moving ``mu_c`` itself would change the
implicit bias: at ``lambda = 0`` gradient descent would maximise the margin for
:math:`\|W\|^2 + \sum_c \|\mu_c\|^2`, which ignores the counts and gives the simplex
ETF instead of SELI.

The cross-entropy is computed in log space, stably: with
:math:`s_i = \mathrm{logsumexp}_{c \ne y_i}(z_{ic} - z_{iy_i})`, :math:`\mathrm{CE}_i =
\mathrm{softplus}(s_i)` and :math:`\log \mathrm{CE}_i` never underflows, so normalised
gradient descent on :math:`\log \mathcal L` keeps running after the plain loss has
underflowed to zero (where ``F.cross_entropy`` gives NaN directions).

References
----------
Thrampoulidis, Kini, Vakilian, Behnia, "Imbalance Trouble", NeurIPS 2022,
arXiv:2208.05512 (Theorem 1: the UFM-SVM solution is SELI).
Mixon, Parshall, Pi, "Neural collapse with unconstrained features", 2022, arXiv:2011.11619.
Soudry et al., "The implicit bias of gradient descent on separable data", JMLR 2018
(the logarithmic rate of plain GD); Nacson et al., "Convergence of gradient descent on
separable data", AISTATS 2019, arXiv:1803.01905 (normalised steps).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .._validation import (
    check_batch,
    check_class_vector,
    check_counts,
    check_features,
    check_in,
    check_int,
    check_logits_labels,
    check_nonnegative,
    check_positive,
)
from .._status import SolverError, settle_status
from ..geometry import etf_gram, seli_geometry

__all__ = ["CEUFMResult", "ce_margins", "log_mean_ce", "ufm_objective", "train_ufm"]

_OPTIMIZERS = ("ngd", "gd")
_LEVELS = ("sample", "class")
_HISTORY_KEYS = ("loss", "z_sel", "w_seli", "w_etf", "m_seli", "m_etf", "norm_w", "norm_h")


def ce_margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    r"""The log-space CE statistic :math:`s_i = \mathrm{logsumexp}_{c \ne y_i}(z_{ic} - z_{iy_i})`.

    ``CE_i = softplus(s_i)``; ``-s_i`` is a smoothed multiclass margin.

    Parameters
    ----------
    logits : Tensor of shape (n, C), float
    labels : LongTensor of shape (n,)

    Returns
    -------
    Tensor of shape (n,)

    Raises
    ------
    ValueError, TypeError
        If ``logits`` is not ``(n, C)`` or ``labels`` are not ``n`` integers in ``[0, C)``.

    Examples
    --------
    >>> round(float(ce_margins(torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([0]))[0]), 4)  # log(2 e^-2)
    -1.3069
    """
    logits, labels = check_logits_labels(logits, labels)
    return _ce_margins(logits, labels)


def _ce_margins(logits, labels):
    diff = logits - logits.gather(1, labels[:, None])
    mask = F.one_hot(labels, logits.shape[1]).bool()
    return torch.logsumexp(diff.masked_fill(mask, -math.inf), dim=1)


def _log_softplus(s: torch.Tensor) -> torch.Tensor:
    """``log(softplus(s))`` without underflow: ``s - e^s / 2`` below ``-20``."""
    lo, hi = s.clamp(max=-20.0), s.clamp(min=-20.0)
    return torch.where(s < -20.0, lo - 0.5 * torch.exp(lo), torch.log(F.softplus(hi)))


def log_mean_ce(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    r""":math:`\log(\sum_i \omega_i \mathrm{CE}_i)`, computed in log space.

    Parameters
    ----------
    logits : Tensor of shape (n, C)
    labels : LongTensor of shape (n,)
    weights : Tensor of shape (n,), optional
        Non-negative weights summing to 1; uniform (the mean) when omitted.

    Returns
    -------
    0-d Tensor. Finite even when every ``CE_i`` is below the smallest float.

    Examples
    --------
    >>> z = torch.tensor([[800.0, 0.0]], dtype=torch.float64)
    >>> float(log_mean_ce(z, torch.tensor([0])))  # CE = e^{-800} underflows, its log does not
    -800.0
    """
    logits, labels = check_logits_labels(logits, labels, reduction="mean")
    if weights is not None:
        weights = check_class_vector("weights", weights, labels.shape[0]).to(dtype=logits.dtype, device=logits.device)
    return _log_mean_ce(logits, labels, weights)


def _log_mean_ce(logits, labels, weights=None):
    lsp = _log_softplus(_ce_margins(logits, labels))
    if weights is None:
        return torch.logsumexp(lsp, 0) - math.log(lsp.numel())
    return torch.logsumexp(lsp + torch.log(weights), 0)


@dataclass(frozen=True)
class CEUFMResult:
    """Outcome of :func:`train_ufm`.

    Attributes
    ----------
    W : Tensor of shape (C, d), float64
    H : Tensor of shape (n, d), float64
        Sample features (at class level, each class row repeated ``n_c`` times).
    labels : LongTensor of shape (n,)
        Samples sorted by class: ``n_0`` zeros, then ``n_1`` ones, ...
    counts : ndarray of shape (C,)
    history : dict of ndarray
        One entry per recorded step (``steps`` in ``history["step"]``): ``loss`` (the
        objective), ``z_sel`` (scale-free distance of the sample logits to the SEL
        matrix), ``w_seli``, ``w_etf``, ``m_seli``, ``m_etf`` (Gram of ``W`` / of the
        uncentred class means to SELI / the ETF), ``norm_w``, ``norm_h``.
    objective : float
        Final value of the objective.
    status : {"optimal", "inaccurate"}
        ``"optimal"`` when the stationarity certificate holds at the last iterate: the
        gradient norm of the objective is at most ``tol`` (see :func:`train_ufm`).
        ``"inaccurate"`` otherwise, with an :class:`ncbook.InaccurateSolutionWarning`;
        in particular when a non-finite value appeared, the last finite iterate is
        returned as ``"inaccurate"`` (a run with no finite iterate raises
        :class:`ncbook.SolverError`).
    grad_norm : float
        Frobenius norm of the gradient of the objective at the returned iterate.
    iterations : int
    seconds : float
    config : dict
        The arguments of the run.
    """

    W: torch.Tensor
    H: torch.Tensor
    labels: torch.Tensor
    counts: np.ndarray
    history: dict = field(repr=False)
    objective: float
    status: str
    iterations: int
    seconds: float
    config: dict = field(repr=False)
    grad_norm: float = float("nan")

    @property
    def class_means(self) -> torch.Tensor:
        """Uncentred class means of ``H``, shape (C, d)."""
        onehot = F.one_hot(self.labels, self.W.shape[0]).to(self.H.dtype)
        return (onehot.T @ self.H) / onehot.sum(0)[:, None]

    @property
    def logits(self) -> torch.Tensor:
        """``H @ W.T``, shape (n, C)."""
        return self.H @ self.W.T


def ufm_objective(W, H, labels, *, lam_w: float = 0.0, lam_h: float = 0.0, multiplicity=None) -> torch.Tensor:
    r"""The regularised UFM objective (mean CE + ridge), see the module docstring.

    Parameters
    ----------
    W : Tensor of shape (C, d)
    H : Tensor of shape (m, d)
        Sample features (``m = n``) or class-level features with ``multiplicity``.
    labels : LongTensor of shape (m,)
    lam_w, lam_h : float
        Ridge coefficients next to the mean CE.
    multiplicity : Tensor of shape (m,), optional
        How many samples each row of ``H`` stands for (``n_c`` at class level).

    Returns
    -------
    0-d Tensor

    Examples
    --------
    >>> W, H = torch.eye(2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64)
    >>> round(float(ufm_objective(W, H, torch.tensor([0, 1]))), 4)  # zero features: CE = log 2
    0.6931
    """
    W, H = check_features(W, "W"), check_batch("H", check_features(H, "H"))  # the mean CE of no sample is 0/0
    if W.shape[1] != H.shape[1] or W.shape[0] < 1:
        raise ValueError(f"W must have shape (C, d) with d = {H.shape[1]} (the width of H); got {tuple(W.shape)}.")
    dtype = torch.promote_types(W.dtype, H.dtype)
    W, H = W.to(dtype), H.to(device=W.device, dtype=dtype)
    lam_w, lam_h = check_nonnegative("lam_w", lam_w), check_nonnegative("lam_h", lam_h)
    if multiplicity is not None:
        multiplicity = check_class_vector("multiplicity", multiplicity, H.shape[0])
    ce = F.softplus(ce_margins(H @ W.T, labels))  # validates labels
    mult = torch.ones_like(ce) if multiplicity is None else multiplicity.to(device=ce.device, dtype=ce.dtype)
    n = mult.sum()
    reg = 0.5 * lam_w * (W**2).sum() + 0.5 * lam_h * (mult[:, None] * H**2).sum()
    return (mult * ce).sum() / n + reg


class _Problem:
    """Targets and per-step measurements of one UFM run (private)."""

    def __init__(self, counts: np.ndarray, level: str, device, dtype):
        c = counts.size
        self.level = level
        self.counts = counts
        self.rows = torch.arange(c, device=device) if level == "class" else torch.as_tensor(
            np.repeat(np.arange(c), counts), device=device)
        self.mult = torch.as_tensor(counts, device=device, dtype=dtype) if level == "class" else torch.ones(
            self.rows.numel(), device=device, dtype=dtype)
        self.weights = self.mult / self.mult.sum()
        self.onehot = F.one_hot(self.rows, c).to(dtype)  # (m, C)
        self.sel = (self.onehot - 1.0 / c) * self.mult.sqrt()[:, None]  # SEL rows, sample-weighted
        geo = seli_geometry(counts)
        self.g_w = torch.as_tensor(geo.classifier_gram, device=device, dtype=dtype)
        self.g_m = torch.as_tensor(geo.mean_gram, device=device, dtype=dtype)
        self.etf = torch.as_tensor(etf_gram(c), device=device, dtype=dtype)

    def features(self, V):
        """Features ``H`` from the optimisation variable ``V = sqrt(multiplicity) H``."""
        return V / self.mult.sqrt()[:, None]

    def log_objective(self, W, V, lam_w, lam_h):
        log_ce = _log_mean_ce(self.features(V) @ W.T, self.rows, self.weights)
        ridge = 0.5 * lam_w * (W**2).sum() + 0.5 * lam_h * (V**2).sum()
        return torch.logaddexp(log_ce, torch.log(ridge)) if (lam_w > 0 or lam_h > 0) else log_ce

    @torch.no_grad()
    def measure(self, W, V, log_obj) -> dict:
        def dist(a, b):
            return float((a / a.norm() - b / b.norm()).norm())

        H = self.features(V)
        means = (self.onehot.T @ (self.mult[:, None] * H)) / (self.onehot.T @ self.mult)[:, None]
        gw, gm = W @ W.T, means @ means.T
        z = (H @ W.T) * self.mult.sqrt()[:, None]
        return {
            "loss": math.exp(float(log_obj)), "z_sel": dist(z, self.sel),
            "w_seli": dist(gw, self.g_w), "w_etf": dist(gw, self.etf),
            "m_seli": dist(gm, self.g_m), "m_etf": dist(gm, self.etf),
            "norm_w": float(W.norm()), "norm_h": float(V.norm()),
        }


def _step(W, H, grads, optimizer, lr, momentum, velocity):
    g_w, g_h = grads
    if optimizer == "ngd":  # unit-length steps along -grad log L
        norm = torch.sqrt((g_w**2).sum() + (g_h**2).sum()).clamp_min(1e-300)
        g_w, g_h = g_w / norm, g_h / norm
    if momentum > 0:
        velocity[0].mul_(momentum).add_(g_w)
        velocity[1].mul_(momentum).add_(g_h)
        g_w, g_h = velocity
    W.sub_(lr * g_w)
    H.sub_(lr * g_h)


def train_ufm(
    counts,
    dim: int,
    *,
    loss: str = "ce",
    optimizer: str = "ngd",
    lam_w: float = 0.0,
    lam_h: float = 0.0,
    steps: int = 4000,
    lr: float = 0.1,
    momentum: float = 0.0,
    level: str = "sample",
    init_scale: float = 0.1,
    record_every: int = 1,
    seed: int = 0,
    device=None,
    tol: float = 1e-6,
) -> CEUFMResult:
    r"""Train the cross-entropy UFM by full-batch gradient descent in float64.

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Samples per class (``C >= 2``, all ``>= 1``).
    dim : int
        Feature dimension ``d >= C - 1`` (SELI needs ``C - 1`` dimensions).
    loss : {"ce"}
        Only cross-entropy here; contrastive UFMs live next to it in :mod:`ncbook.ufm`.
    optimizer : {"ngd", "gd"}
        ``"gd"``: :math:`\theta \leftarrow \theta - \eta \nabla \mathcal L`.
        ``"ngd"``: normalised GD on the log objective,
        :math:`\theta \leftarrow \theta - \eta\, g/\|g\|` with :math:`g = \nabla \log \mathcal L`
        (steps of length ``lr``; the direction is that of :math:`\nabla\mathcal L`, computed
        without underflow). At ``lambda = 0`` it converges to SELI in direction within
        thousands of steps where GD needs millions; at ``lambda > 0`` its fixed step
        length keeps it hovering about ``lr`` from the optimum: use ``"gd"`` there.
    lam_w, lam_h : float
        Ridge coefficients ``>= 0`` next to the mean CE (see the module docstring);
        the optimum depends on them through ``sqrt(lam_w * lam_h)`` (nuclear-norm view).
    steps : int
        Number of updates.
    lr : float
        Step size (``"ngd"``: the step length).
    momentum : float
        Heavy-ball momentum in ``[0, 1)`` (the SGD-with-momentum recipe uses 0.9).
    level : {"sample", "class"}
        Free features per sample, or one per class weighted by ``n_c``.
    init_scale : float
        Entries of ``W`` and ``H`` start as ``N(0, init_scale^2)``.
    record_every : int
        Record the history every this many steps (and at the last step).
    seed : int
    device : str or torch.device, optional
        Defaults to CPU.
    tol : float
        Certificate threshold: the result is ``"optimal"`` when the gradient norm of the
        objective (in ``W`` and the features) at the returned iterate is ``<= tol``.
        At ``lambda = 0`` the objective has no minimiser and tends to 0 along SELI; its
        gradient tends to 0 too, so the certificate says the run got far enough.

    Returns
    -------
    CEUFMResult

    Raises
    ------
    ValueError
        For bad counts, ``dim < C - 1``, an unknown ``loss``, ``optimizer`` or
        ``level``, a negative ridge, or a non-positive ``lr`` or ``steps``.
    ncbook.SolverError
        If the objective is not finite at the start (nothing usable to return).

    Warns
    -----
    ncbook.InaccurateSolutionWarning
        If the certificate does not hold (too few steps, a step size that hovers, or a
        divergence: the last finite iterate is then returned).

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Theorem 1 and Section 4.

    Examples
    --------
    >>> res = train_ufm([20, 20, 2], 4, steps=300, record_every=100)
    >>> res.W.shape, res.H.shape, res.status
    (torch.Size([3, 4]), torch.Size([42, 4]), 'optimal')
    """
    counts = check_counts(counts, min_classes=2)
    c = counts.size
    dim = check_int("dim", dim, c - 1)
    if loss != "ce":
        raise ValueError(f"loss must be 'ce' for train_ufm; got {loss!r}. Contrastive UFMs have their own trainers.")
    check_in("optimizer", optimizer, _OPTIMIZERS)
    check_in("level", level, _LEVELS)
    lam_w, lam_h = check_nonnegative("lam_w", lam_w), check_nonnegative("lam_h", lam_h)
    lr = check_positive("lr", lr)
    init_scale = check_positive("init_scale", init_scale)
    momentum = check_nonnegative("momentum", momentum)
    if momentum >= 1:
        raise ValueError(f"momentum must lie in [0, 1); got {momentum!r}.")
    steps = check_int("steps", steps, 1)
    record_every = check_int("record_every", record_every, 1)
    tol = check_positive("tol", tol)
    device = torch.device("cpu" if device is None else device)
    dtype = torch.float64
    prob = _Problem(counts, level, device, dtype)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    W = (init_scale * torch.randn(c, dim, generator=gen, dtype=dtype)).to(device)
    H = (init_scale * torch.randn(prob.rows.numel(), dim, generator=gen, dtype=dtype)).to(device)
    H = H * prob.mult.sqrt()[:, None]  # the optimisation variable V = sqrt(n_c) mu_c (sample level: H)
    velocity = (torch.zeros_like(W), torch.zeros_like(H))
    history = {k: [] for k in ("step",) + _HISTORY_KEYS}
    diverged, start, last = None, time.perf_counter(), (W.clone(), H.clone())
    for t in range(steps + 1):
        W.requires_grad_(True)
        H.requires_grad_(True)
        log_obj = prob.log_objective(W, H, lam_w, lam_h)
        if not torch.isfinite(log_obj):
            if t == 0:
                raise SolverError(f"train_ufm: the objective is not finite at the start ({float(log_obj.detach())}); "
                                  "lower init_scale.")
            diverged = f"non-finite objective at step {t}; the last finite iterate (step {t - 1}) is returned"
            W, H = last
            t -= 1
            break
        if t % record_every == 0 or t == steps:
            history["step"].append(t)
            for key, value in prob.measure(W.detach(), H.detach(), log_obj.detach()).items():
                history[key].append(value)
        if t == steps:
            break
        target = log_obj if optimizer == "ngd" else torch.exp(log_obj)
        grads = torch.autograd.grad(target, (W, H))
        W, H = W.detach(), H.detach()
        last = (W.clone(), H.clone())
        with torch.no_grad():
            _step(W, H, grads, optimizer, lr, momentum, velocity)
    W, H = W.detach(), H.detach()
    objective, grad_norm = _certificate(prob, W, H, lam_w, lam_h)
    detail = diverged or f"gradient norm {grad_norm:.3g} > tol {tol:.3g} after {t} steps; raise steps or lower lr"
    status = settle_status(diverged is None and grad_norm <= tol, solver="train_ufm", detail=detail)
    H = prob.features(H)
    if level == "class":
        H = H[torch.as_tensor(np.repeat(np.arange(c), counts), device=device)]
    return CEUFMResult(
        W=W, H=H, labels=torch.as_tensor(np.repeat(np.arange(c), counts), device=device), counts=counts,
        history={k: np.asarray(v) for k, v in history.items()}, objective=objective, status=status,
        iterations=t, seconds=time.perf_counter() - start,
        config=dict(loss=loss, optimizer=optimizer, lam_w=lam_w, lam_h=lam_h, steps=steps, lr=lr,
                    momentum=momentum, level=level, init_scale=init_scale, seed=seed, dim=dim, tol=tol),
        grad_norm=grad_norm,
    )


def _certificate(prob, W, V, lam_w, lam_h):
    """Objective and the Frobenius norm of its gradient in ``(W, H)`` at an iterate (private)."""
    W, V = W.clone().requires_grad_(True), V.clone().requires_grad_(True)
    obj = torch.exp(prob.log_objective(W, V, lam_w, lam_h))
    g_w, g_v = torch.autograd.grad(obj, (W, V))
    # the variable is V = sqrt(m) H, so dL/dH = sqrt(m) dL/dV
    g_h = g_v * prob.mult.sqrt()[:, None]
    if not (torch.isfinite(obj) and torch.isfinite(g_w).all() and torch.isfinite(g_h).all()):
        raise SolverError("train_ufm: the returned iterate has a non-finite objective or gradient.")
    return float(obj.detach()), float(torch.sqrt((g_w**2).sum() + (g_h**2).sum()))
