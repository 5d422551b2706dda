"""Autograder checks for the primer chapter (neural collapse on balanced data).

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples.
"""

from __future__ import annotations

import numpy as np
import torch

from ..geometry import simplex_etf
from ..metrics import class_means, nc2
from ._core import CheckResult, Exercise

__all__ = ["check_nc2", "check_class_means"]


def _nc2_cases(rng):
    c, d = int(rng.integers(3, 7)), int(rng.integers(7, 12))
    yield {"x": simplex_etf(c, d, seed=int(rng.integers(2**31)))}       # a rotated ETF: NC2 = 0
    yield {"x": float(rng.uniform(0.5, 5.0)) * simplex_etf(int(rng.integers(2, 6)))}  # any scale
    for _ in range(3):
        c = int(rng.integers(3, 11))
        yield {"x": rng.standard_normal((c, int(rng.integers(c - 1, 17))))}
    yield {"x": np.eye(4)}  # orthogonal classes: not an ETF


NC2 = Exercise("nc2", params=("x",), cases=_nc2_cases, reference=lambda x: nc2(x), atol=1e-8, rtol=1e-6,
               forbid=(nc2,))


def check_nc2(student) -> CheckResult:
    """Check ``student(x)`` against :func:`ncbook.metrics.nc2` on ETFs and random (C, d) arrays."""
    return NC2.check(student)


def _means_cases(rng):
    yield {"features": np.arange(6.0).reshape(3, 2), "labels": np.array([0, 1, 2]), "num_classes": 3}
    for _ in range(3):
        c, d = int(rng.integers(2, 7)), int(rng.integers(1, 6))
        n = c + int(rng.integers(0, 40))
        labels = rng.permutation(np.concatenate([np.arange(c), rng.integers(0, c, n - c)]))  # every class present
        yield {"features": rng.standard_normal((n, d)), "labels": labels, "num_classes": c}


CLASS_MEANS = Exercise(
    "class_means", params=("features", "labels", "num_classes"), cases=_means_cases,
    reference=lambda features, labels, num_classes: class_means(torch.as_tensor(features), torch.as_tensor(labels),
                                                                num_classes),
    atol=1e-10, forbid=(class_means,))


def check_class_means(student) -> CheckResult:
    """Check ``student(features, labels, num_classes)`` against :func:`ncbook.metrics.class_means`."""
    return CLASS_MEANS.check(student)


EXERCISES = (NC2, CLASS_MEANS)
