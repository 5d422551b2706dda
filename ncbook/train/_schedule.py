r"""Learning-rate schedules of :func:`ncbook.train.fit`, and the Mittag-Leffler function they need.

Letters: ``s`` the optimisation step (0-based), ``T`` the total steps, ``z >= 0`` the argument of
:math:`E_\alpha(-z)`, ``alpha`` its order in ``(0, 1]``.

The Mittag-Leffler schedule multiplies the learning rate by :math:`E_\alpha(-z)`, where

.. math:: E_\alpha(x) = \sum_{k \ge 0} \frac{x^k}{\Gamma(\alpha k + 1)},
          \qquad E_1(-z) = e^{-z}, \quad E_{1/2}(-z) = e^{z^2}\operatorname{erfc}(z).

For ``0 < alpha <= 1``, :math:`E_\alpha(-z)` is completely monotone in ``z``: it falls from 1 to 0
and never rises. Its power series cancels catastrophically beyond ``z`` of a few units and its
asymptotic series :math:`\sum_{k \ge 1} (-1)^{k+1} z^{-k}/\Gamma(1 - \alpha k)` is only accurate
far out, so neither alone covers a schedule that sweeps ``z`` from 0 to about :math:`10^6`.
:func:`_mittag_leffler_neg` instead inverts its Laplace transform,

.. math:: E_\alpha(-z) = \frac{1}{2\pi i} \int_{\mathcal C} e^{s} \frac{s^{\alpha-1}}{s^\alpha + z}\, ds,

with the trapezoidal rule on a parabolic contour :math:`s(u) = \mu (1 + iu)^2` (Garrappa 2015;
Weideman and Trefethen 2007). For ``alpha < 1`` the transform has no pole on its principal sheet
(its poles :math:`z^{1/\alpha} e^{\pm i\pi/\alpha}` lie beyond the branch cut), so one contour
serves every ``z``. With ``2 N + 1 = 37`` nodes, step ``h = 3/N`` and ``mu = pi N / 12`` the error
measured against mpmath (the real integral representation at 30 digits) is below ``1e-14`` over
``alpha`` in ``[0.05, 1)`` and ``z`` in ``[1e-6, 2e6]`` (``tests/test_schedule.py``).

References
----------
R. Garrappa, "Numerical evaluation of two and three parameter Mittag-Leffler functions",
SIAM J. Numer. Anal. 53(3), 1350-1369 (2015), arXiv:1503.06569 (the Laplace-transform method).
J. A. C. Weideman and L. N. Trefethen, "Parabolic and hyperbolic contours for computing the
Bromwich integral", Math. Comp. 76(259), 1341-1356 (2007) (the parabolic contour).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._validation import check_in, check_int, check_positive

__all__ = ["SCHEDULES", "lr_lambda", "mittag_leffler_alpha"]

SCHEDULES = ("cosine", "step", "constant", "mittag_leffler")

_ML_N = 18  # nodes on each side of the contour's vertex: 2 N + 1 evaluations
_ML_H = 3.0 / _ML_N
_ML_MU = math.pi * _ML_N / 12.0
_ML_U = _ML_H * np.arange(-_ML_N, _ML_N + 1)
_ML_S = _ML_MU * (1.0 + 1j * _ML_U) ** 2  # the parabola, opening to the left around the branch cut
_ML_WEIGHTS = _ML_H / (2j * math.pi) * np.exp(_ML_S) * (2j * _ML_MU * (1.0 + 1j * _ML_U))  # h e^s s'(u) / (2 pi i)


def _mittag_leffler_neg(z: float, alpha: float) -> float:
    r""":math:`E_\alpha(-z)` for ``z >= 0`` and ``0 < alpha <= 1`` (trusted inputs; see the module docstring)."""
    if z == 0.0:
        return 1.0
    if alpha == 1.0:
        return math.exp(-z)
    s_alpha = _ML_S ** alpha
    value = np.sum(_ML_WEIGHTS * (s_alpha / _ML_S) / (s_alpha + z)).real
    return min(max(float(value), 0.0), 1.0)  # the exact value lies in (0, 1]; round-off of 1e-15 may not


def mittag_leffler_alpha(counts) -> float:
    r"""Order :math:`\alpha = 1/4 + 3/4\, H(n)/\log C` of the Mittag-Leffler schedule for class counts ``n``.

    ``H`` is the entropy of the class frequencies: balanced data give 1 (exponential decay),
    long tails a smaller order and a heavier tail of the learning rate.

    Parameters
    ----------
    counts : array-like of shape (C,), positive, ``C >= 2``

    Returns
    -------
    float in ``[0.25, 1]``.

    Raises
    ------
    ValueError
        If ``counts`` has fewer than 2 entries, or one is not positive or not finite.

    References
    ----------
    The training script of the public code of Wang et al., arXiv:2605.10047 (the scheduler there;
    not described in the paper).

    Examples
    --------
    >>> mittag_leffler_alpha([10, 10, 10, 10])
    1.0
    """
    if isinstance(counts, torch.Tensor):
        counts = counts.detach().cpu().numpy()
    arr = np.asarray(counts)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1 or arr.size < 2 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"counts must be at least 2 positive numbers; got {counts!r}.")
    p = arr.astype(np.float64) / arr.astype(np.float64).sum()
    return float(min(0.25 + 0.75 * (-(p * np.log(p)).sum() / math.log(arr.size)), 1.0))


def _multiplier(step, total_steps, warmup_steps, schedule, milestones, gamma, alpha) -> float:
    """The body of :func:`lr_lambda` for validated arguments (``fit`` calls it every step)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "mittag_leffler":
        eps = 1e-6
        t, span = step - warmup_steps, max(total_steps - warmup_steps, 1)
        switch = milestones[0] - warmup_steps if milestones else None
        if switch is None or switch <= 0 or switch >= span:
            frac = min(t / span, 1 - eps)
            return _mittag_leffler_neg(frac / (1 - frac), alpha)
        if t < switch:
            return _mittag_leffler_neg((1 - eps) * t / switch, alpha)
        frac = min((t - switch) / max(span - switch, 1), 1 - eps)
        return _mittag_leffler_neg(1 + frac / (1 - frac + eps), alpha)
    if schedule == "cosine":
        span = max(total_steps - warmup_steps, 1)
        return 0.5 * (1 + math.cos(math.pi * min(step - warmup_steps, span) / span))
    if schedule == "step":
        return gamma ** sum(step >= m for m in milestones)
    return 1.0


def _check_schedule_options(schedule, milestones, gamma, alpha, *, alpha_name: str = "alpha"):
    """Validate a schedule's options once (``fit`` and :func:`lr_lambda`); returns them as plain values."""
    check_in("schedule", schedule, SCHEDULES)
    if isinstance(milestones, (str, bytes)) or not hasattr(milestones, "__iter__"):
        raise TypeError(f"milestones must be a sequence of integers; got {type(milestones).__name__} {milestones!r}.")
    milestones = tuple(check_int("milestones", m, 0) for m in milestones)
    gamma = check_positive("gamma", gamma)
    alpha = check_positive(alpha_name, alpha)
    if alpha > 1:
        raise ValueError(f"{alpha_name} (the Mittag-Leffler order) must lie in (0, 1], where E_alpha(-z) decays "
                         f"monotonically; got {alpha!r}.")
    return schedule, milestones, gamma, alpha


def lr_lambda(step: int, *, total_steps: int, warmup_steps: int, schedule: str, milestones=(), gamma: float = 0.1,
              alpha: float = 1.0) -> float:
    r"""Learning-rate multiplier at optimisation step ``step`` (0-based).

    Linear warm-up over ``warmup_steps``, then ``"cosine"`` decay to 0 at ``total_steps``,
    ``"step"`` decay by ``gamma`` at each milestone (in steps), ``"constant"``, or
    ``"mittag_leffler"``: :math:`E_\alpha(-z)` of the time after warm-up, the schedule of the
    inverse-reweighting paper's public code. Without a milestone :math:`z = s/(1-s)` with
    :math:`s` the fraction of post-warm-up steps done; with a milestone (the switch, in steps) :math:`z`
    runs linearly from 0 to 1 up to it and then as :math:`1 + s_2/(1-s_2)` over the remaining steps.
    :math:`E_\alpha` is computed to about ``1e-14`` for every ``z`` (see :mod:`ncbook.train._schedule`),
    so the multiplier never rises; ``alpha`` comes from :func:`mittag_leffler_alpha`.

    Parameters
    ----------
    step : int, ``>= 0``
    total_steps : int, ``>= 1``
    warmup_steps : int, ``>= 0``
    schedule : {"cosine", "step", "constant", "mittag_leffler"}
    milestones : sequence of int
        Steps of the ``"step"`` decays; the first one is the switch of ``"mittag_leffler"``.
    gamma : float, ``> 0``
    alpha : float in ``(0, 1]``
        Order of the Mittag-Leffler function.

    Returns
    -------
    float in ``[0, 1]`` (``gamma ** k`` for ``"step"``).

    Raises
    ------
    ValueError, TypeError
        On an unknown schedule, a non-integer or negative step count, ``gamma <= 0`` or ``alpha``
        outside ``(0, 1]``.

    Examples
    --------
    >>> lr_lambda(50, total_steps=100, warmup_steps=0, schedule="cosine")
    0.5
    >>> round(lr_lambda(50, total_steps=100, warmup_steps=0, schedule="mittag_leffler", alpha=0.5), 6)  # E_1/2(-1)
    0.427584
    """
    step = check_int("step", step, 0)
    total_steps = check_int("total_steps", total_steps, 1)
    warmup_steps = check_int("warmup_steps", warmup_steps, 0)
    schedule, milestones, gamma, alpha = _check_schedule_options(schedule, milestones, gamma, alpha)
    return _multiplier(step, total_steps, warmup_steps, schedule, milestones, gamma, alpha)
