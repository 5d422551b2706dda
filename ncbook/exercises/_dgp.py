"""Autograder checks for the weighted-contrastive (distance geometry) chapter.

Letters: ``n`` samples, ``d`` latent dimension, ``tau`` the temperature, ``C`` classes.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..dgp import euclidean_dgp
from ..losses import gaussian_kernel_weights, soft_supcon_weights, w_info_nce
from ._core import CheckResult, Exercise

__all__ = ["check_euclidean_shift", "check_simplex_epsilon", "check_w_info_nce"]


def _w_info_nce_cases(rng):
    yield {"z": torch.eye(3, dtype=torch.float64), "weights": torch.ones(3, 3, dtype=torch.float64), "tau": 1.0}
    for n, d, tau in ((5, 2, 0.5), (8, 3, 0.1), (int(rng.integers(6, 14)), 4, float(rng.uniform(0.2, 2.0)))):
        w = rng.random((n, n))
        yield {"z": torch.as_tensor(rng.standard_normal((n, d))), "weights": torch.as_tensor((w + w.T) / 2), "tau": tau}
    labels = torch.as_tensor(np.sort(rng.integers(0, 3, 6)))  # soft SupCon: strongly unequal weights, diagonal of ones
    yield {"z": torch.as_tensor(rng.standard_normal((6, 3))), "weights": soft_supcon_weights(labels, 0.05), "tau": 0.2}
    # cosine / tau up to 1000: needs a stable log-sum-exp
    yield {"z": torch.as_tensor(rng.standard_normal((6, 3))), "weights": torch.as_tensor(rng.random((6, 6))),
           "tau": 1e-3}


W_INFO_NCE = Exercise("w_info_nce", params=("z", "weights", "tau"), cases=_w_info_nce_cases,
                      reference=lambda z, weights, tau: w_info_nce(z, weights, temperature=tau),
                      atol=1e-8, rtol=1e-7, forbid=(w_info_nce,))


def check_w_info_nce(student) -> CheckResult:
    """Check ``student(z, weights, tau)`` (cosine latent, mean over anchors) against
    :func:`ncbook.losses.w_info_nce`; the diagonal of ``weights`` must be ignored."""
    return W_INFO_NCE.check(student)


def _epsilon_star(num_classes: int, tau: float) -> float:
    return math.exp(-num_classes / ((num_classes - 1) * tau))


def _epsilon_cases(rng):
    yield {"num_classes": 2, "tau": 1.0}
    yield {"num_classes": 4, "tau": 0.1}
    yield {"num_classes": int(rng.integers(5, 20)), "tau": float(rng.uniform(0.2, 1.0))}
    yield {"num_classes": int(rng.integers(50, 200)), "tau": float(rng.uniform(0.1, 0.5))}
    yield {"num_classes": 3, "tau": float(rng.uniform(1.0, 3.0))}


SIMPLEX_EPSILON = Exercise("simplex_epsilon", params=("num_classes", "tau"), cases=_epsilon_cases,
                           reference=_epsilon_star, atol=0.0, rtol=1e-9)


def check_simplex_epsilon(student) -> CheckResult:
    """Check ``student(num_classes, tau)`` returns the Soft SupCon epsilon that gives a regular simplex."""
    return SIMPLEX_EPSILON.check(student)


def _shift_cases(rng):
    yield {"weights": gaussian_kernel_weights(rng.uniform(-1, 1, (10, 2)), 0.5).numpy(), "tau": 0.2}
    for n in (4, int(rng.integers(5, 9))):
        a = rng.uniform(0.05, 1.0, (n, n))
        yield {"weights": (a + a.T) / 2, "tau": 1.0}
    a = rng.uniform(0.2, 1.0, (6, 6))
    yield {"weights": (a + a.T) / 2, "tau": float(rng.uniform(0.2, 0.6))}


EUCLIDEAN_SHIFT = Exercise("euclidean_shift", params=("weights", "tau"), cases=_shift_cases,
                           reference=lambda weights, tau: euclidean_dgp(weights, tau).shift,
                           atol=1e-8, rtol=1e-6, forbid=(euclidean_dgp,))


def check_euclidean_shift(student) -> CheckResult:
    """Check ``student(weights, tau)`` returns the smallest realisable shift ``delta_min``
    of the Euclidean DGP (``-2 lambda_min`` of ``B_0`` on the complement of ``1``)."""
    return EUCLIDEAN_SHIFT.check(student)


EXERCISES = (W_INFO_NCE, SIMPLEX_EPSILON, EUCLIDEAN_SHIFT)
