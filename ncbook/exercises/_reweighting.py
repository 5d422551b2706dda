"""Autograder checks of the inverse-reweighting chapter.

Each check compares a student's function with the reference in :mod:`ncbook` on
hand-picked edge cases (absent classes, zero loss, large ``alpha``) and random inputs.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..metrics import loss_imbalance
from ..losses import inverse_reweighted_ce
from ..reweighting import effective_number_weights, inverse_weights, macro_factors
from ._core import CheckResult, run_cases

__all__ = [
    "check_balanced_batch_loss",
    "check_effective_number_weights",
    "check_inverse_weights",
    "check_loss_imbalance",
    "check_macro_factors",
]


def check_inverse_weights(student: Callable) -> CheckResult:
    """Check ``student(class_losses, prior, alpha)`` -> (C,) closed-form Tikhonov weights.

    ``class_losses`` is a float64 tensor with NaN for absent classes; ``prior`` a
    float64 tensor with mean 1; absent classes must keep the prior.
    """
    rng = np.random.default_rng(0)
    cases = [
        {"class_losses": torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64), "prior": torch.ones(4, dtype=torch.float64), "alpha": 0.0},
        {"class_losses": torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64), "prior": torch.ones(4, dtype=torch.float64), "alpha": 1.0},
        {"class_losses": torch.tensor([1.0, float("nan"), 3.0], dtype=torch.float64),
         "prior": torch.tensor([0.5, 1.0, 1.5], dtype=torch.float64), "alpha": 0.0},
    ]
    for _ in range(3):
        c = int(rng.integers(3, 8))
        prior = torch.as_tensor(rng.uniform(0.5, 2.0, c))
        cases.append({"class_losses": torch.as_tensor(rng.uniform(0.1, 3.0, c)), "prior": prior / prior.mean(),
                      "alpha": float(rng.uniform(0.0, 2.0))})

    def reference(class_losses, prior, alpha):
        return inverse_weights(class_losses, prior=prior, alpha=alpha, eps=0.0)

    return run_cases("inverse_weights", student, reference, cases, atol=1e-6, rtol=1e-6,
                     forbid=(inverse_weights,))


def check_macro_factors(student: Callable) -> CheckResult:
    """Check ``student(batch_counts, gamma)`` -> (C,) ``max(B, 1)^-gamma`` normalised to mean 1."""
    rng = np.random.default_rng(1)
    cases = [
        {"batch_counts": torch.tensor([0.0, 1.0, 4.0, 100.0]), "gamma": 1.0},
        {"batch_counts": torch.tensor([3.0, 3.0]), "gamma": 0.5},
        {"batch_counts": torch.tensor([5.0, 0.0, 2.0]), "gamma": 0.0},
    ]
    for _ in range(3):
        cases.append({"batch_counts": torch.as_tensor(rng.integers(0, 50, int(rng.integers(2, 9))).astype(float)),
                      "gamma": float(rng.uniform(0.0, 2.0))})
    return run_cases("macro_factors", student, lambda batch_counts, gamma: macro_factors(batch_counts, gamma), cases,
                     forbid=(macro_factors,))


def check_effective_number_weights(student: Callable) -> CheckResult:
    """Check ``student(counts, beta)`` -> (C,) class-balanced weights summing to ``C``."""
    cases = [
        {"counts": torch.tensor([5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]), "beta": 0.9999},
        {"counts": torch.tensor([10, 10, 10]), "beta": 0.99},
        {"counts": torch.tensor([100, 1]), "beta": 0.0},
        {"counts": torch.tensor([124, 80, 51, 33, 21, 14, 9, 5, 3, 2]), "beta": 0.9},
    ]
    return run_cases("effective_number_weights", student,
                     lambda counts, beta: effective_number_weights(counts, beta), cases, atol=1e-6, rtol=1e-6,
                     forbid=(effective_number_weights,))


def check_loss_imbalance(student: Callable) -> CheckResult:
    """Check ``student(class_losses)`` -> 0-d ``std/mean`` (population std) of a 1-D tensor."""
    rng = np.random.default_rng(2)
    cases = [{"class_losses": torch.tensor([1.0, 3.0])}, {"class_losses": torch.tensor([2.0, 2.0, 2.0])}]
    cases += [{"class_losses": torch.as_tensor(rng.uniform(0.01, 4.0, int(rng.integers(2, 12))))} for _ in range(3)]
    return run_cases("loss_imbalance", student, lambda class_losses: loss_imbalance(class_losses), cases,
                     forbid=(loss_imbalance,))


def check_balanced_batch_loss(student: Callable) -> CheckResult:
    """Check ``student(logits, labels, num_classes)`` -> the class-balanced batch mean ``Lbar``.

    ``Lbar`` is the unweighted mean, over the classes present in the batch, of each
    class's mean cross-entropy. The check also confirms it matches the official
    (non-detached, alpha = 0) inverse-reweighted loss up to ``sum_c n_c / n = 1``.
    """
    g = torch.Generator().manual_seed(3)
    cases = []
    for n, c in [(8, 3), (20, 5), (12, 6)]:
        labels = torch.randint(c - 1, (n,), generator=g)  # the last class is always absent
        cases.append({"logits": torch.randn(n, c, generator=g, dtype=torch.float64), "labels": labels, "num_classes": c})

    def reference(logits, labels, num_classes):
        ce = F.cross_entropy(logits, labels, reduction="none")
        present = [k for k in range(num_classes) if bool((labels == k).any())]
        out = torch.stack([ce[labels == k].mean() for k in present]).mean()
        assert torch.allclose(out, inverse_reweighted_ce(logits, labels, clamp=None, eps=0.0))
        return out

    return run_cases("balanced_batch_loss", student, reference, cases, atol=1e-8, rtol=1e-8,
                     forbid=(inverse_reweighted_ce,))
