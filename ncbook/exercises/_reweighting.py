"""Autograder checks of the inverse-reweighting chapter.

Each check compares a student's function with the reference in :mod:`ncbook` on
hand-picked edge cases (absent classes, zero loss, large ``alpha``) and random inputs.
Letters: ``C`` classes, ``n`` samples, ``B`` the per-class counts of a batch.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import inverse_reweighted_ce
from ..metrics import loss_imbalance
from ..reweighting import effective_number_weights, inverse_weights, macro_factors
from ._core import CheckResult, Exercise

__all__ = [
    "check_balanced_batch_loss",
    "check_effective_number_weights",
    "check_inverse_weights",
    "check_loss_imbalance",
    "check_macro_factors",
]


def _f64(x):
    return torch.as_tensor(x, dtype=torch.float64)


def _inverse_cases(rng):
    yield {"class_losses": _f64([0.5, 1.0, 2.0, 4.0]), "prior": torch.ones(4, dtype=torch.float64), "alpha": 0.0}
    yield {"class_losses": _f64([0.5, 1.0, 2.0, 4.0]), "prior": torch.ones(4, dtype=torch.float64), "alpha": 1.0}
    yield {"class_losses": _f64([1.0, float("nan"), 3.0]), "prior": _f64([0.5, 1.0, 1.5]), "alpha": 0.0}
    for _ in range(3):
        c = int(rng.integers(3, 8))
        prior = rng.uniform(0.5, 2.0, c)
        losses = rng.uniform(0.1, 3.0, c)
        if rng.random() < 0.5:
            losses[int(rng.integers(0, c))] = np.nan  # an absent class keeps its prior
        yield {"class_losses": _f64(losses), "prior": _f64(prior / prior.mean()), "alpha": float(rng.uniform(0.0, 2.0))}


INVERSE_WEIGHTS = Exercise("inverse_weights", params=("class_losses", "prior", "alpha"), cases=_inverse_cases,
                           reference=lambda class_losses, prior, alpha: inverse_weights(class_losses, prior=prior,
                                                                                        alpha=alpha, eps=0.0),
                           atol=1e-6, rtol=1e-6, forbid=(inverse_weights,))


def check_inverse_weights(student: Callable) -> CheckResult:
    """Check ``student(class_losses, prior, alpha)`` -> (C,) closed-form Tikhonov weights.

    ``class_losses`` is a float64 tensor with NaN for absent classes; ``prior`` a
    float64 tensor with mean 1; absent classes must keep the prior.
    """
    return INVERSE_WEIGHTS.check(student)


def _macro_cases(rng):
    yield {"batch_counts": torch.tensor([0.0, 1.0, 4.0, 100.0]), "gamma": 1.0}
    yield {"batch_counts": torch.tensor([3.0, 3.0]), "gamma": 0.5}
    yield {"batch_counts": torch.tensor([5.0, 0.0, 2.0]), "gamma": 0.0}
    for _ in range(3):
        yield {"batch_counts": torch.as_tensor(rng.integers(0, 50, int(rng.integers(2, 9))).astype(float)),
               "gamma": float(rng.uniform(0.0, 2.0))}


MACRO_FACTORS = Exercise("macro_factors", params=("batch_counts", "gamma"), cases=_macro_cases,
                         reference=lambda batch_counts, gamma: macro_factors(batch_counts, gamma),
                         forbid=(macro_factors,))


def check_macro_factors(student: Callable) -> CheckResult:
    """Check ``student(batch_counts, gamma)`` -> (C,) ``max(B, 1)^-gamma`` normalised to mean 1."""
    return MACRO_FACTORS.check(student)


def _effective_cases(rng):
    yield {"counts": torch.tensor([5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50]), "beta": 0.9999}
    yield {"counts": torch.tensor([10, 10, 10]), "beta": 0.99}
    yield {"counts": torch.tensor([100, 1]), "beta": 0.0}
    c = int(rng.integers(3, 11))
    yield {"counts": torch.as_tensor(np.sort(rng.integers(2, 500, c))[::-1].copy()),
           "beta": float(rng.choice([0.9, 0.99, 0.999]))}


EFFECTIVE_NUMBER_WEIGHTS = Exercise("effective_number_weights", params=("counts", "beta"), cases=_effective_cases,
                                    reference=lambda counts, beta: effective_number_weights(counts, beta),
                                    atol=1e-6, rtol=1e-6, forbid=(effective_number_weights,))


def check_effective_number_weights(student: Callable) -> CheckResult:
    """Check ``student(counts, beta)`` -> (C,) class-balanced weights summing to ``C``."""
    return EFFECTIVE_NUMBER_WEIGHTS.check(student)


def _imbalance_cases(rng):
    yield {"class_losses": torch.tensor([1.0, 3.0])}
    yield {"class_losses": torch.tensor([2.0, 2.0, 2.0])}
    for _ in range(3):
        yield {"class_losses": _f64(rng.uniform(0.01, 4.0, int(rng.integers(2, 12))))}


LOSS_IMBALANCE = Exercise("loss_imbalance", params=("class_losses",), cases=_imbalance_cases,
                          reference=lambda class_losses: loss_imbalance(class_losses), forbid=(loss_imbalance,))


def check_loss_imbalance(student: Callable) -> CheckResult:
    """Check ``student(class_losses)`` -> 0-d ``std/mean`` (population std) of a 1-D tensor."""
    return LOSS_IMBALANCE.check(student)


def _balanced_cases(rng):
    for n, c in [(8, 3), (20, 5), (int(rng.integers(6, 30)), int(rng.integers(3, 8)))]:
        labels = torch.as_tensor(rng.integers(0, c - 1, n))  # the last class is always absent
        yield {"logits": _f64(rng.standard_normal((n, c))), "labels": labels, "num_classes": c}


def _balanced_reference(logits, labels, num_classes):
    ce = F.cross_entropy(logits, labels, reduction="none")
    present = [k for k in range(num_classes) if bool((labels == k).any())]
    out = torch.stack([ce[labels == k].mean() for k in present]).mean()
    official = inverse_reweighted_ce(logits, labels, clamp=None, eps=0.0)
    if not torch.allclose(out, official):
        raise RuntimeError(f"the class-balanced mean {float(out)} differs from inverse_reweighted_ce {float(official)}")
    return out


BALANCED_BATCH_LOSS = Exercise("balanced_batch_loss", params=("logits", "labels", "num_classes"),
                               cases=_balanced_cases, reference=_balanced_reference, atol=1e-8, rtol=1e-8,
                               forbid=(inverse_reweighted_ce,))


def check_balanced_batch_loss(student: Callable) -> CheckResult:
    """Check ``student(logits, labels, num_classes)`` -> the class-balanced batch mean ``Lbar``.

    ``Lbar`` is the unweighted mean, over the classes present in the batch, of each
    class's mean cross-entropy. The check also confirms it matches the official
    (non-detached, alpha = 0) inverse-reweighted loss up to ``sum_c n_c / n = 1``.
    """
    return BALANCED_BATCH_LOSS.check(student)


EXERCISES = (INVERSE_WEIGHTS, MACRO_FACTORS, EFFECTIVE_NUMBER_WEIGHTS, LOSS_IMBALANCE, BALANCED_BATCH_LOSS)
