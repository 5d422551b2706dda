"""Autograder checks for the MR2 chapter (class-dependent margins)."""

from __future__ import annotations

import torch

from ..losses import margin_cross_entropy, representation_margin_loss
from ..margins import mr2_margins
from ._core import CheckResult, run_cases

__all__ = ["check_margin_cross_entropy", "check_mr2_margins", "check_representation_margin_loss"]


def _margin_cases():
    g = torch.Generator().manual_seed(0)
    yield {"mean_sq_norms": torch.tensor([4.0, 4.0, 4.0], dtype=torch.float64),
           "mean_sq_devs": torch.tensor([1.0, 4.0, 23.0], dtype=torch.float64), "c_bar": 1.0}
    yield {"mean_sq_norms": torch.full((5,), 2.0, dtype=torch.float64),
           "mean_sq_devs": torch.full((5,), 0.5, dtype=torch.float64), "c_bar": 0.7}
    for c_bar in (0.5, 2.0):
        yield {"mean_sq_norms": torch.rand(8, generator=g, dtype=torch.float64) * 5,
               "mean_sq_devs": torch.rand(8, generator=g, dtype=torch.float64) * 5, "c_bar": c_bar}


def check_mr2_margins(student) -> CheckResult:
    """Check ``student(mean_sq_norms, mean_sq_devs, c_bar) -> (C,)`` against :func:`ncbook.margins.mr2_margins`.

    Cases: the spec's reference values, equal statistics (every margin must be
    ``c_bar``), and random statistics with ``c_bar`` 0.5 and 2.
    """
    return run_cases("mr2_margins", student, lambda **kw: mr2_margins(**kw), _margin_cases(), atol=1e-7,
                     forbid=(mr2_margins,))


def _ce_cases():
    g = torch.Generator().manual_seed(1)
    yield {"logits": torch.tensor([[3.0, 1.0, 0.0], [0.5, 2.0, 1.0], [1.0, 1.2, 0.8]], dtype=torch.float64),
           "labels": torch.tensor([0, 1, 2]), "margins": torch.tensor([0.8, 1.0, 1.2], dtype=torch.float64)}
    yield {"logits": torch.randn(6, 4, generator=g, dtype=torch.float64), "labels": torch.tensor([3, 3, 0, 1, 2, 0]),
           "margins": torch.ones(4, dtype=torch.float64)}
    yield {"logits": 5 * torch.randn(10, 5, generator=g, dtype=torch.float64),
           "labels": torch.randint(0, 5, (10,), generator=g),
           "margins": 0.5 + torch.rand(5, generator=g, dtype=torch.float64)}


def check_margin_cross_entropy(student) -> CheckResult:
    """Check per-sample ``student(logits, labels, margins) -> (n,)`` against
    :func:`ncbook.losses.margin_cross_entropy` with ``reduction="none"``.

    Cases: the spec's reference batch, unit margins (plain CE) and random logits
    with random margins (only the true class's margin may be used).
    """
    return run_cases("margin_cross_entropy", student,
                     lambda **kw: margin_cross_entropy(**kw, reduction="none"), _ce_cases(), atol=1e-7,
                     forbid=(margin_cross_entropy,))


def _rep_cases():
    g = torch.Generator().manual_seed(2)
    yield {"features": torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64),
           "labels": torch.tensor([0, 0, 1]), "sbar": 0.25}
    yield {"features": torch.randn(9, 3, generator=g, dtype=torch.float64),
           "labels": torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 4]), "sbar": 0.5}
    yield {"features": torch.randn(12, 4, generator=g, dtype=torch.float64),
           "labels": torch.randint(0, 3, (12,), generator=g), "sbar": 1.5}


def check_representation_margin_loss(student) -> CheckResult:
    """Check ``student(features, labels, sbar) -> scalar`` (mean over anchors that have a
    positive) against :func:`ncbook.losses.representation_margin_loss`.

    Cases include singleton classes: their anchors must be skipped, not counted as 0
    and not turned into NaN.
    """
    return run_cases("representation_margin_loss", student,
                     lambda **kw: representation_margin_loss(**kw), _rep_cases(), atol=1e-7,
                     forbid=(representation_margin_loss,))
