"""Autograder checks of the inverse-reweighting chapter.

Each check compares a student's function with a reference on hand-picked edge cases (absent
classes, ``alpha = 0``, large ``alpha``, a class seen in no batch yet) and on random inputs.
Letters (as in the chapter): ``C`` classes; a batch of size ``b`` holds ``b_c`` samples of class
``c``; ``L_c`` is the mean cross-entropy of class ``c`` in the batch (NaN where ``b_c = 0``);
``u_c`` a class weight, ``u^(0)`` the prior, ``alpha`` the Tikhonov strength; ``B_c`` the
number of batches that contained class ``c`` and ``kappa`` the macro exponent; ``n_c`` the
training count of class ``c`` and ``zeta`` the class-balanced hyper-parameter (Cui et al.'s beta).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import inverse_reweighted_ce
from ..reweighting import batch_class_losses, effective_number_weights, inverse_weights, macro_factors
from ._core import CheckResult, Exercise

__all__ = [
    "check_balanced_batch_loss",
    "check_cb_weight_ratio",
    "check_ema_inverse_weights",
    "check_expected_batch_factor",
    "check_macro_factors",
    "check_official_coefficients",
]


def _f64(x):
    return torch.as_tensor(x, dtype=torch.float64)


# --------------------------------------------------------------------------- ex-reweighting-1
def _coefficient_cases(rng):
    yield {"class_losses": _f64([0.5, 1.0, 2.0, 4.0]), "samples_per_class": _f64([60, 40, 20, 8]),
           "prior": torch.ones(4, dtype=torch.float64), "alpha": 0.0}      # alpha = 0: every entry 1/4
    yield {"class_losses": _f64([0.5, 1.0, 2.0, 4.0]), "samples_per_class": _f64([60, 40, 20, 8]),
           "prior": torch.ones(4, dtype=torch.float64), "alpha": 1.0}
    yield {"class_losses": _f64([1.0, float("nan"), 3.0, 0.5]), "samples_per_class": _f64([5, 0, 2, 9]),
           "prior": _f64([0.5, 1.0, 1.5, 1.0]), "alpha": 0.5}                # an absent class
    for alpha in (0.0, float(rng.uniform(0.05, 3.0)), 1e3):
        c = int(rng.integers(3, 9))
        losses, counts = rng.uniform(0.05, 3.0, c), rng.integers(1, 40, c).astype(float)
        if rng.random() < 0.7:
            gone = int(rng.integers(0, c))
            losses[gone], counts[gone] = np.nan, 0.0
        prior = rng.uniform(0.3, 3.0, c)
        yield {"class_losses": _f64(losses), "samples_per_class": _f64(counts), "prior": _f64(prior / prior.mean()),
               "alpha": alpha}


def _coefficient_reference(class_losses, samples_per_class, prior, alpha):
    """d/dL_c of sum_c (b_c / b) u*_c(L) L_c by autograd, with u* from the package's closed form."""
    present = ~torch.isnan(class_losses)
    leaf = torch.where(present, class_losses, torch.zeros_like(class_losses)).requires_grad_(True)
    u = inverse_weights(torch.where(present, leaf, torch.full_like(leaf, float("nan"))), prior=prior,
                        alpha=alpha, eps=0.0)
    loss = (samples_per_class / samples_per_class.sum() * u * leaf).sum()
    grad, = torch.autograd.grad(loss, leaf)
    return grad


OFFICIAL_COEFFICIENTS = Exercise(
    "official_coefficients", params=("class_losses", "samples_per_class", "prior", "alpha"), cases=_coefficient_cases,
    reference=_coefficient_reference, atol=1e-9, rtol=1e-7,
    forbid=(inverse_weights, inverse_reweighted_ce, torch.autograd.grad, torch.autograd.backward),
    hint="\n  (derive the coefficients by hand: the check refuses autograd and ncbook's weights)")


def check_official_coefficients(student: Callable) -> CheckResult:
    """Check ``student(class_losses, samples_per_class, prior, alpha)`` -> (C,) gradient coefficients.

    The official loss of one batch, with weights that carry gradient, no macro factor and no
    clamp, is ``sum_c (b_c / b) u*_c(L) L_c`` with ``u*`` the closed form of the inverse problem;
    the coefficient of class ``c`` is its derivative in ``L_c`` (through ``u*_c`` and through the
    mean ``Lbar`` of the present classes), 0 for an absent class (``b_c = 0``, ``L_c`` NaN).
    ``class_losses``, ``samples_per_class``, ``prior`` are float64 tensors of shape (C,), ``prior`` of
    mean 1; ``alpha >= 0``.
    """
    return OFFICIAL_COEFFICIENTS.check(student)


# --------------------------------------------------------------------------- ex-reweighting-2
def _macro_cases(rng):
    yield {"batch_counts": torch.tensor([0.0, 1.0, 4.0, 100.0]), "kappa": 1.0}
    yield {"batch_counts": torch.tensor([3.0, 3.0]), "kappa": 0.5}
    yield {"batch_counts": torch.tensor([5.0, 0.0, 2.0]), "kappa": 0.0}
    for _ in range(3):
        yield {"batch_counts": torch.as_tensor(rng.integers(0, 50, int(rng.integers(2, 9))).astype(float)),
               "kappa": float(rng.uniform(0.0, 2.0))}


MACRO_FACTORS = Exercise("macro_factors", params=("batch_counts", "kappa"), cases=_macro_cases,
                         reference=lambda batch_counts, kappa: macro_factors(batch_counts, gamma=kappa),
                         forbid=(macro_factors,))


def check_macro_factors(student: Callable) -> CheckResult:
    """Check ``student(batch_counts, kappa)`` -> (C,) ``max(B_c, 1)^-kappa`` normalised to mean 1."""
    return MACRO_FACTORS.check(student)


def _batch_factor_cases(rng):
    yield {"counts": _f64([124, 80, 51, 33, 21, 14, 9, 5, 3, 2]), "macro": torch.ones(10, dtype=torch.float64)}
    yield {"counts": _f64([30, 10]), "macro": _f64([0.5, 1.5])}
    for _ in range(3):
        c = int(rng.integers(2, 11))
        beta = rng.uniform(0.1, 3.0, c)
        yield {"counts": _f64(np.sort(rng.integers(1, 500, c))[::-1].copy()), "macro": _f64(beta / beta.mean())}


def _batch_factor_reference(counts, macro):
    """E[b_c] / b = pi_c for a uniform draw without replacement, so the expectation is the pi-weighted mean."""
    return float(np.average(np.asarray(macro, dtype=np.float64), weights=np.asarray(counts, dtype=np.float64)))


EXPECTED_BATCH_FACTOR = Exercise("expected_batch_factor", params=("counts", "macro"), cases=_batch_factor_cases,
                                 reference=_batch_factor_reference, atol=1e-12, rtol=1e-10)


def check_expected_batch_factor(student: Callable) -> CheckResult:
    """Check ``student(counts, macro)`` -> the expected batch factor ``E[sum_c beta_c b_c / b]``.

    A batch of ``b`` samples drawn uniformly without replacement from a training set with ``counts[c]``
    samples of class ``c`` holds ``b_c`` of class ``c``; ``macro`` holds the macro factors ``beta_c``.
    ``counts`` and ``macro`` are float64 tensors of shape (C,).
    """
    return EXPECTED_BATCH_FACTOR.check(student)


# --------------------------------------------------------------------------- ex-reweighting-3
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
                               forbid=(inverse_reweighted_ce, batch_class_losses))


def check_balanced_batch_loss(student: Callable) -> CheckResult:
    """Check ``student(logits, labels, num_classes)`` -> the class-balanced batch mean ``Lbar``.

    ``Lbar`` is the unweighted mean, over the classes present in the batch, of each
    class's mean cross-entropy. The check also confirms it matches the official
    (non-detached, alpha = 0, no clamp) inverse-reweighted loss, which is ``Lbar`` times
    ``sum_c b_c / b = 1``.
    """
    return BALANCED_BATCH_LOSS.check(student)


# --------------------------------------------------------------------------- ex-reweighting-4
def _cb_cases(rng):
    yield {"n_max": 124, "n_min": 2, "zeta": 0.9999}        # long-tailed digits, the chapter's CB
    yield {"n_max": 5000, "n_min": 50, "zeta": 0.9999}      # CIFAR-10-LT IF 100
    yield {"n_max": 10, "n_min": 10, "zeta": 0.5}           # equal counts: ratio 1
    yield {"n_max": 100, "n_min": 1, "zeta": 0.0}           # zeta = 0: uniform weights
    for _ in range(3):
        n_max = int(rng.integers(2, 5001))
        yield {"n_max": n_max, "n_min": int(rng.integers(1, n_max + 1)),
               "zeta": float(rng.choice([rng.uniform(0.0, 0.99), 0.999, 0.9999, 0.99999]))}
    n_max = int(rng.integers(2, 100_000))                  # and one from a continuum
    yield {"n_max": n_max, "n_min": int(rng.integers(1, n_max + 1)), "zeta": float(1 - 10 ** rng.uniform(-6, -0.05))}


def _cb_reference(n_max, n_min, zeta):
    w = effective_number_weights([n_max, n_min], zeta)
    return w[1] / w[0]


CB_WEIGHT_RATIO = Exercise("cb_weight_ratio", params=("n_max", "n_min", "zeta"), cases=_cb_cases,
                           reference=_cb_reference, atol=1e-9, rtol=1e-9, forbid=(effective_number_weights,))


def check_cb_weight_ratio(student: Callable) -> CheckResult:
    """Check ``student(n_max, n_min, zeta)`` -> ``u_min / u_max`` of the class-balanced weights.

    ``u_c`` is proportional to ``(1 - zeta) / (1 - zeta^{n_c})`` (Cui et al. 2019); the ratio is
    that of the class with ``n_min`` training samples to the class with ``n_max``, ``0 <= zeta < 1``.
    """
    return CB_WEIGHT_RATIO.check(student)


# --------------------------------------------------------------------------- ex-reweighting-6
def _ema_cases(rng):
    nan = float("nan")
    yield {"class_losses": _f64([[1.0, 2.0, nan], [nan, 1.0, 4.0], [2.0, 2.0, 2.0]]), "momentum": 0.5, "alpha": 0.0}
    yield {"class_losses": _f64([[0.5, 1.0, 2.0, 4.0]] * 2), "momentum": 0.0, "alpha": 1.0}  # the batch's own weights
    for _ in range(3):
        t, c = int(rng.integers(4, 13)), int(rng.integers(3, 9))
        seen = rng.random((t, c)) < np.linspace(0.95, 0.3, c)        # tail classes appear in fewer batches
        losses = np.where(seen, rng.uniform(0.05, 3.0, (t, c)), np.nan)
        yield {"class_losses": _f64(losses), "momentum": float(rng.uniform(0.0, 0.99)),
               "alpha": float(rng.choice([0.0, rng.uniform(0.1, 2.0)]))}


def _ema_reference(class_losses, momentum, alpha):
    """One batch at a time: update the running losses of the present classes, then the closed form."""
    t_max, c = class_losses.shape
    m = [None] * c
    out = torch.ones(t_max, c, dtype=torch.float64)
    for t in range(t_max):
        for k in range(c):
            x = float(class_losses[t, k])
            if not np.isnan(x):
                m[k] = x if m[k] is None else momentum * m[k] + (1 - momentum) * x
        seen = [k for k in range(c) if m[k] is not None]
        mbar = sum(m[k] for k in seen) / len(seen)
        for k in seen:
            out[t, k] = (mbar * m[k] + alpha) / (m[k] ** 2 + alpha)
    return out


EMA_INVERSE_WEIGHTS = Exercise("ema_inverse_weights", params=("class_losses", "momentum", "alpha"), cases=_ema_cases,
                               reference=_ema_reference, atol=1e-9, rtol=1e-9, forbid=(inverse_weights,))


def check_ema_inverse_weights(student: Callable) -> CheckResult:
    """Check ``student(class_losses, momentum, alpha)`` -> (T, C) weights from running class losses.

    ``class_losses`` is a float64 tensor of shape (T, C): the batch class losses of T batches in
    order, NaN where a class is absent. A running loss ``m_c`` starts at the first loss seen and then
    follows ``m_c <- momentum m_c + (1 - momentum) L_c`` in the batches containing ``c``; the weights
    of batch ``t`` (after its update) are the closed form with uniform prior on the running losses,
    ``(mbar m_c + alpha) / (m_c^2 + alpha)``, ``mbar`` the mean over the classes seen so far;
    a class not seen yet keeps the prior 1.
    """
    return EMA_INVERSE_WEIGHTS.check(student)


EXERCISES = (OFFICIAL_COEFFICIENTS, MACRO_FACTORS, EXPECTED_BATCH_FACTOR, BALANCED_BATCH_LOSS, CB_WEIGHT_RATIO,
             EMA_INVERSE_WEIGHTS)
