"""Autograder checks for the primer chapter (neural collapse on balanced data)."""

from __future__ import annotations

import numpy as np
import torch

from ..geometry import simplex_etf
from ..metrics import class_means, nc2
from ._core import CheckResult, run_cases

__all__ = ["check_nc2", "check_class_means"]


def _nc2_cases():
    rng = np.random.default_rng(0)
    yield {"x": simplex_etf(4, 6, seed=1)}
    yield {"x": 2.5 * simplex_etf(3)}
    for c, d in ((3, 5), (5, 4), (10, 16)):
        yield {"x": rng.standard_normal((c, d))}
    yield {"x": np.eye(4)}  # orthogonal classes: not an ETF


def check_nc2(student) -> CheckResult:
    """Check ``student(x)`` against :func:`ncbook.metrics.nc2` on ETFs and random (C, d) arrays."""
    return run_cases("nc2", student, lambda x: nc2(x), _nc2_cases(), atol=1e-8, rtol=1e-6,
                     forbid=(nc2,))


def _means_cases():
    rng = np.random.default_rng(1)
    yield {"features": np.arange(6.0).reshape(3, 2), "labels": np.array([0, 1, 2]), "num_classes": 3}
    for n, c, d in ((20, 3, 4), (50, 5, 2), (7, 2, 3)):
        labels = np.concatenate([np.arange(c), rng.integers(0, c, n - c)])  # every class present
        yield {"features": rng.standard_normal((n, d)), "labels": labels, "num_classes": c}


def check_class_means(student) -> CheckResult:
    """Check ``student(features, labels, num_classes)`` against :func:`ncbook.metrics.class_means`."""
    return run_cases("class_means", student, lambda features, labels, num_classes: class_means(
        torch.as_tensor(features), torch.as_tensor(labels), num_classes), _means_cases(), atol=1e-10, forbid=(class_means,))
