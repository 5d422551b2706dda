"""Autograder checks for the MR2 chapter (class-dependent margins).

Letters: ``C`` classes, ``n`` samples, ``d`` feature dimension.
"""

from __future__ import annotations

import torch

from ..losses import margin_cross_entropy, representation_margin_loss
from ..margins import mr2_margins
from ._core import CheckResult, Exercise

__all__ = ["check_margin_cross_entropy", "check_mr2_margins", "check_representation_margin_loss"]


def _t(x, dtype=torch.float64):
    return torch.as_tensor(x, dtype=dtype)


def _margin_cases(rng):
    yield {"mean_sq_norms": _t([4.0, 4.0, 4.0]), "mean_sq_devs": _t([1.0, 4.0, 23.0]), "c_bar": 1.0}
    yield {"mean_sq_norms": torch.full((5,), 2.0, dtype=torch.float64),
           "mean_sq_devs": torch.full((5,), 0.5, dtype=torch.float64), "c_bar": 0.7}
    for c_bar in (0.5, float(rng.uniform(1.0, 3.0))):
        c = int(rng.integers(3, 11))
        yield {"mean_sq_norms": _t(rng.random(c) * 5), "mean_sq_devs": _t(rng.random(c) * 5), "c_bar": c_bar}


MR2_MARGINS = Exercise("mr2_margins", params=("mean_sq_norms", "mean_sq_devs", "c_bar"), cases=_margin_cases,
                       reference=lambda **kw: mr2_margins(**kw), atol=1e-7, forbid=(mr2_margins,))


def check_mr2_margins(student) -> CheckResult:
    """Check ``student(mean_sq_norms, mean_sq_devs, c_bar) -> (C,)`` against :func:`ncbook.margins.mr2_margins`.

    Cases: the spec's reference values, equal statistics (every margin must be
    ``c_bar``), and random statistics with ``c_bar`` 0.5 and between 1 and 3.
    """
    return MR2_MARGINS.check(student)


def _ce_cases(rng):
    yield {"logits": _t([[3.0, 1.0, 0.0], [0.5, 2.0, 1.0], [1.0, 1.2, 0.8]]),
           "labels": torch.tensor([0, 1, 2]), "margins": _t([0.8, 1.0, 1.2])}
    yield {"logits": _t(rng.standard_normal((6, 4))), "labels": torch.tensor([3, 3, 0, 1, 2, 0]),
           "margins": torch.ones(4, dtype=torch.float64)}
    n, c = int(rng.integers(5, 16)), int(rng.integers(2, 7))
    yield {"logits": _t(5 * rng.standard_normal((n, c))), "labels": torch.as_tensor(rng.integers(0, c, n)),
           "margins": _t(0.5 + rng.random(c))}


MARGIN_CROSS_ENTROPY = Exercise("margin_cross_entropy", params=("logits", "labels", "margins"), cases=_ce_cases,
                                reference=lambda **kw: margin_cross_entropy(**kw, reduction="none"), atol=1e-7,
                                forbid=(margin_cross_entropy,))


def check_margin_cross_entropy(student) -> CheckResult:
    """Check per-sample ``student(logits, labels, margins) -> (n,)`` against
    :func:`ncbook.losses.margin_cross_entropy` with ``reduction="none"``.

    Cases: the spec's reference batch, unit margins (plain CE) and random logits
    with random margins (only the true class's margin may be used).
    """
    return MARGIN_CROSS_ENTROPY.check(student)


def _rep_cases(rng):
    yield {"features": _t([[0.0], [1.0], [3.0]]), "labels": torch.tensor([0, 0, 1]), "sbar": 0.25}
    yield {"features": _t(rng.standard_normal((9, 3))), "labels": torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 4]),
           "sbar": 0.5}
    n = int(rng.integers(8, 16))
    labels = rng.integers(0, 3, n)
    labels[:2] = 0  # at least one class with a positive
    yield {"features": _t(rng.standard_normal((n, 4))), "labels": torch.as_tensor(labels),
           "sbar": float(rng.uniform(0.5, 2.0))}


REPRESENTATION_MARGIN_LOSS = Exercise("representation_margin_loss", params=("features", "labels", "sbar"),
                                      cases=_rep_cases, reference=lambda **kw: representation_margin_loss(**kw),
                                      atol=1e-7, forbid=(representation_margin_loss,))


def check_representation_margin_loss(student) -> CheckResult:
    """Check ``student(features, labels, sbar) -> scalar`` (mean over anchors that have a
    positive) against :func:`ncbook.losses.representation_margin_loss`.

    Cases include singleton classes: their anchors must be skipped, not counted as 0
    and not turned into NaN.
    """
    return REPRESENTATION_MARGIN_LOSS.check(student)


EXERCISES = (MR2_MARGINS, MARGIN_CROSS_ENTROPY, REPRESENTATION_MARGIN_LOSS)
