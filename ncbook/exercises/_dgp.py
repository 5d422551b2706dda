"""Autograder checks for the weighted-contrastive (distance geometry) chapter."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..dgp import euclidean_dgp
from ..losses import gaussian_kernel_weights, soft_supcon_weights, w_info_nce
from ._core import CheckResult, run_cases

__all__ = ["check_euclidean_shift", "check_simplex_epsilon", "check_w_info_nce"]


def _w_info_nce_cases():
    g = torch.Generator().manual_seed(0)
    yield {"z": torch.eye(3, dtype=torch.float64), "weights": torch.ones(3, 3, dtype=torch.float64), "tau": 1.0}
    for n, d, tau in ((5, 2, 0.5), (8, 3, 0.1), (12, 4, 1.0)):
        z = torch.randn(n, d, generator=g, dtype=torch.float64)
        w = torch.rand(n, n, generator=g, dtype=torch.float64)
        yield {"z": z, "weights": (w + w.T) / 2, "tau": tau}
    labels = torch.tensor([0, 0, 1, 1, 1, 2])  # soft SupCon: strongly unequal weights, diagonal of ones
    yield {"z": torch.randn(6, 3, generator=g, dtype=torch.float64), "weights": soft_supcon_weights(labels, 0.05), "tau": 0.2}
    big = torch.randn(6, 3, generator=g, dtype=torch.float64)  # cosine / tau up to 1000: needs a stable log-sum-exp
    yield {"z": big, "weights": torch.rand(6, 6, generator=g, dtype=torch.float64), "tau": 1e-3}


def check_w_info_nce(student) -> CheckResult:
    """Check ``student(z, weights, tau)`` (cosine latent, mean over anchors) against
    :func:`ncbook.losses.w_info_nce`; the diagonal of ``weights`` must be ignored."""
    return run_cases("w_info_nce", student, lambda z, weights, tau: w_info_nce(z, weights, temperature=tau),
                     _w_info_nce_cases(), atol=1e-8, rtol=1e-7, forbid=(w_info_nce,))


def _epsilon_star(num_classes: int, tau: float) -> float:
    return math.exp(-num_classes / ((num_classes - 1) * tau))


def check_simplex_epsilon(student) -> CheckResult:
    """Check ``student(num_classes, tau)`` returns the Soft SupCon epsilon that gives a regular simplex."""
    cases = [{"num_classes": c, "tau": t} for c, t in ((2, 1.0), (4, 0.1), (10, 0.5), (100, 0.2), (3, 2.0))]
    return run_cases("simplex_epsilon", student, _epsilon_star, cases, atol=0.0, rtol=1e-9)


def _shift_cases():
    rng = np.random.default_rng(3)
    yield {"weights": gaussian_kernel_weights(rng.uniform(-1, 1, (10, 2)), 0.5).numpy(), "tau": 0.2}
    for n in (4, 7):
        a = rng.uniform(0.05, 1.0, (n, n))
        yield {"weights": (a + a.T) / 2, "tau": 1.0}
    a = rng.uniform(0.2, 1.0, (6, 6))
    yield {"weights": (a + a.T) / 2, "tau": 0.3}


def check_euclidean_shift(student) -> CheckResult:
    """Check ``student(weights, tau)`` returns the smallest realisable shift ``delta_min``
    of the Euclidean DGP (``-2 lambda_min`` of ``B_0`` on the complement of ``1``)."""
    return run_cases("euclidean_shift", student, lambda weights, tau: euclidean_dgp(weights, tau).shift,
                     _shift_cases(), atol=1e-8, rtol=1e-6, forbid=(euclidean_dgp,))
