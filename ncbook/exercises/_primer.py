"""Autograder checks for the primer chapter (neural collapse on balanced data).

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples, ``n_c = n / C`` samples per class
(balanced, ``per_class``), ``noise`` the fraction of relabelled samples (the chapter's ``r_flip``).
The references of the derivation exercises are computed numerically from the exercise's
construction (features, a classifier, a gradient), never from the closed form the student is asked
to derive, so a check compares two independent routes.
"""

from __future__ import annotations

import numpy as np

from ..geometry import simplex_etf
from ..metrics import nc1, nc2, neural_collapse
from ._core import CheckResult, Exercise

__all__ = ["check_nc1", "check_nc1_per_class", "check_nc2", "check_nc2_shifted", "check_zero_threshold",
           "check_nc1_label_noise"]


# --------------------------------------------------------------------------- NC1 from its definition (implement)
def _labels(rng, counts) -> np.ndarray:
    return rng.permutation(np.repeat(np.arange(len(counts)), counts))


def _nc1_cases(rng):
    yield {"features": np.repeat(2.0 * simplex_etf(3), 4, axis=0), "labels": np.repeat(np.arange(3), 4),
           "num_classes": 3}                                                  # collapsed: NC1 = 0
    c, d = int(rng.integers(3, 7)), int(rng.integers(7, 12))                  # d > C - 1: Sigma_B is singular
    labels = _labels(rng, [int(rng.integers(5, 20))] * c)
    means = 3.0 * simplex_etf(c, d, seed=int(rng.integers(2**31)))
    yield {"features": means[labels] + float(rng.uniform(0.2, 1.0)) * rng.standard_normal((labels.size, d)),
           "labels": labels, "num_classes": c}
    c = int(rng.integers(3, 6))                                               # imbalanced: mu_G is the mean of
    labels = _labels(rng, rng.integers(2, 40, c))                             # class means, not the sample mean
    d = int(rng.integers(c, c + 4))
    yield {"features": rng.standard_normal((labels.size, d)) + 2.0 * rng.standard_normal((c, d))[labels],
           "labels": labels, "num_classes": c}
    c, d = int(rng.integers(5, 9)), 2                                         # d < C - 1: Sigma_B has rank d
    labels = _labels(rng, rng.integers(3, 12, c))
    yield {"features": rng.standard_normal((labels.size, d)) + 3.0 * rng.standard_normal((c, d))[labels],
           "labels": labels, "num_classes": c}
    labels = _labels(rng, rng.integers(3, 15, 2))                             # C = 2, far from the origin
    d = int(rng.integers(2, 6))
    yield {"features": 50.0 + rng.standard_normal((labels.size, d)) + rng.standard_normal((2, d))[labels],
           "labels": labels, "num_classes": 2}


NC1 = Exercise("nc1", params=("features", "labels", "num_classes"), cases=_nc1_cases,
               reference=lambda features, labels, num_classes: nc1(features, labels, num_classes),
               atol=1e-8, rtol=1e-6, forbid=(nc1, neural_collapse),
               hint="\n  Hint: mu_G is the plain mean of the class means; Sigma_W averages over all n samples, "
                    "Sigma_B over the C classes; the pseudo-inverse keeps only the non-zero eigenvalues of Sigma_B.")


def check_nc1(student) -> CheckResult:
    """Check ``student(features, labels, num_classes) -> float`` against :func:`ncbook.metrics.nc1`.

    Cases: collapsed features (NC1 = 0), noisy features on a simplex ETF in ``d > C - 1``
    dimensions (a singular :math:`\\Sigma_B`), imbalanced classes (the global mean is the mean of
    the class means), fewer dimensions than ``C - 1`` and two classes far from the origin.
    """
    return NC1.check(student)


# --------------------------------------------------------------------------- NC1 class by class (variant)
def _nc1_per_class(features, labels, num_classes: int) -> np.ndarray:
    """``NC1_c = tr(Sigma_c Sigma_B^+) / C`` for each class, ``Sigma_c`` the covariance of class ``c`` alone.

    ``Sigma_B^+`` inverts ``Sigma_B`` on its ``C - 1`` largest eigenvalues above ``1e-10`` times the largest, as
    :func:`ncbook.metrics.nc1` does; ``mu_G`` is the plain mean of the class means.
    """
    h, y = np.asarray(features, dtype=np.float64), np.asarray(labels)
    c = int(num_classes)
    mu = np.stack([h[y == k].mean(0) for k in range(c)])
    centred = mu - mu.mean(0)
    vals, vecs = np.linalg.eigh(centred.T @ centred / c)
    keep = np.argsort(vals)[::-1][:c - 1]
    keep = keep[vals[keep] > 1e-10 * max(vals.max(), 0.0)]
    v = vecs[:, keep]
    out = np.empty(c)
    for k in range(c):
        proj = (h[y == k] - mu[k]) @ v                                    # (n_c, rank)
        out[k] = float(((proj**2).mean(0) / vals[keep]).sum() / c)
    return out


NC1_PER_CLASS = Exercise("nc1_per_class", params=("features", "labels", "num_classes"), cases=_nc1_cases,
                         reference=_nc1_per_class, atol=1e-8, rtol=1e-6, forbid=(nc1, neural_collapse),
                         hint="\n  Hint: one Sigma_B for all classes (mu_G the plain mean of the class means, its "
                              "pseudo-inverse on the non-zero eigenvalues); Sigma_c averages over the n_c samples of "
                              "class c only; return C numbers in class order.")


def check_nc1_per_class(student) -> CheckResult:
    """Check ``student(features, labels, num_classes) -> (C,)``: NC1 class by class.

    ``NC1_c = tr(Sigma_c Sigma_B^+) / C`` with ``Sigma_c`` the covariance of class ``c`` (over its ``n_c`` samples)
    and ``Sigma_B`` the between-class covariance of :func:`ncbook.metrics.nc1`; their average weighted by ``n_c / n``
    is NC1. Cases: those of :func:`check_nc1` (collapsed features, ``d > C - 1``, imbalanced classes, ``d < C - 1``,
    two classes far from the origin).
    """
    return NC1_PER_CLASS.check(student)


# --------------------------------------------------------------------------- NC2 (kept for self-study)
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
    """Check ``student(x)`` against :func:`ncbook.metrics.nc2` on ETFs and random (C, d) arrays.

    No exercise of the primer asks for it any more (the chapter computes NC2 by hand); it stays
    for readers who write NC2 themselves.
    """
    return NC2.check(student)


# --------------------------------------------------------------------------- NC2 of a shifted classifier (derivation)
def _shifted_classifier(num_classes: int, shift: float) -> np.ndarray:
    """Rows ``m_c + v``: a unit-norm simplex ETF in ``R^C`` plus a common vector ``v`` orthogonal to it, ``|v| = shift``."""
    m = simplex_etf(num_classes, num_classes)              # (C, C), rows span a (C - 1)-dimensional subspace
    v = np.linalg.svd(m.T)[0][:, -1]                      # unit normal of that subspace
    return m + shift * v


def _shifted_cases(rng):
    yield {"num_classes": 4, "shift": 0.0}                                     # the ETF itself: 0
    c = int(rng.integers(3, 12))
    yield {"num_classes": c, "shift": float(1 / np.sqrt(c - 1))}               # the one-hot frame, normalised
    yield {"num_classes": 2, "shift": float(rng.uniform(0.1, 2.0))}
    for _ in range(2):
        yield {"num_classes": int(rng.integers(3, 16)), "shift": float(rng.uniform(0.05, 3.0))}


NC2_SHIFTED = Exercise("nc2_shifted", params=("num_classes", "shift"), cases=_shifted_cases,
                       reference=lambda num_classes, shift: nc2(_shifted_classifier(num_classes, shift)),
                       atol=1e-9, rtol=1e-7, forbid=(nc2, neural_collapse),
                       hint="\n  Hint: write the Gram of the shifted rows with P and the all-ones matrix, then use "
                            "||A - B||^2 = ||A||^2 + ||B||^2 - 2<A, B> for the two normalised Grams.")


def check_nc2_shifted(student) -> CheckResult:
    """Check ``student(num_classes, shift) -> float``: NC2 of the rows ``m_c + v`` in closed form.

    ``m_1, ..., m_C`` form a unit-norm simplex ETF and ``v`` is a common vector orthogonal to all of
    them with ``|v| = shift``. The reference builds these rows and applies :func:`ncbook.metrics.nc2`.
    Cases: ``shift = 0`` (0), the normalised one-hot frame, ``C = 2`` and random ``C`` and shifts.
    """
    return NC2_SHIFTED.check(student)


# --------------------------------------------------------------------------- where zero wins (derivation)
def _gradient_at_zero(num_classes: int, per_class: int) -> float:
    """Spectral norm of the gradient of the mean cross-entropy at zero logits (balanced classes).

    The gradient ``(softmax(0) - y) / n`` is ``(n, C)`` with ``per_class`` equal rows per class, so its singular
    values are ``sqrt(per_class)`` times those of its ``C`` distinct rows (an ``(C, C)`` matrix).
    """
    n = num_classes * per_class
    distinct = (1.0 / num_classes - np.eye(num_classes)) / n            # one row per class
    return float(np.sqrt(per_class) * np.linalg.norm(distinct, 2))


def _threshold_cases(rng):
    yield {"num_classes": 4, "per_class": 10}              # the chapter's UFM
    yield {"num_classes": 2, "per_class": int(rng.integers(1, 50))}
    yield {"num_classes": 10, "per_class": int(rng.integers(20, 500))}
    yield {"num_classes": int(rng.integers(3, 30)), "per_class": int(rng.integers(1, 200))}
    yield {"num_classes": int(rng.integers(2, 400)), "per_class": int(rng.integers(1, 10_000_000))}  # ~4 10^9


ZERO_THRESHOLD = Exercise("zero_threshold", params=("num_classes", "per_class"), cases=_threshold_cases,
                          reference=_gradient_at_zero, atol=1e-12, rtol=1e-8,
                          hint="\n  Hint: the ridge weights enter only through sqrt(lambda_W lambda_H); compare the "
                               "first-order decrease of the loss along a rank-one direction with the ridge's increase.")


def check_zero_threshold(student) -> CheckResult:
    """Check ``student(num_classes, per_class) -> float``, the ridge at which ``W = H = 0`` wins.

    The balanced regularised UFM (:func:`ncbook.ufm.train_ufm`, mean cross-entropy) has the global
    minimiser ``W = H = 0`` exactly when :math:`\\sqrt{\\lambda_W\\lambda_H}` is at least the returned
    value. The reference computes the threshold numerically (a spectral norm), not from a formula.
    """
    return ZERO_THRESHOLD.check(student)


# --------------------------------------------------------------------------- NC1 under label noise (prediction)
def _label_noise_nc1(num_classes: int, noise: float) -> float:
    """NC1, against the clean labels, of features at the ETF vertex of their noisy training label.

    Computed from the population of one clean class (mass ``1 - noise`` at its own vertex, ``noise / (C - 1)``
    at each other vertex): class means, within-class covariance, then ``tr(Sigma_W Sigma_B^+) / C``.
    """
    c = num_classes
    m = simplex_etf(c, c)                                                  # unit vertices, (C, C)
    p = np.full((c, c), noise / (c - 1))
    np.fill_diagonal(p, 1.0 - noise)                                       # p[c, c']: clean c at vertex c'
    mu = p @ m                                                             # clean class means
    sigma_w = sum(p[a, b] * np.outer(m[b] - mu[a], m[b] - mu[a]) for a in range(c) for b in range(c)) / c
    centred = mu - mu.mean(0)
    vals, vecs = np.linalg.eigh(centred.T @ centred / c)
    keep = vals > 1e-12 * vals.max()
    return float(np.trace(vecs[:, keep].T @ sigma_w @ vecs[:, keep] / vals[keep]) / c)


def _noise_cases(rng):
    yield {"num_classes": 10, "noise": 0.0}                                # clean: 0
    yield {"num_classes": 4, "noise": 0.1}                                 # the chapter's run
    yield {"num_classes": 2, "noise": float(rng.uniform(0.01, 0.45))}
    for _ in range(2):
        c = int(rng.integers(3, 20))
        yield {"num_classes": c, "noise": float(rng.uniform(0.01, 0.9) * (c - 1) / c)}


NC1_LABEL_NOISE = Exercise("nc1_label_noise", params=("num_classes", "noise"), cases=_noise_cases,
                           reference=_label_noise_nc1, atol=1e-9, rtol=1e-7, forbid=(nc1, neural_collapse),
                           hint="\n  Hint: the clean class means are a multiple of the ETF vertices; find that "
                                "multiple first, then the within-class covariance.")


def check_nc1_label_noise(student) -> CheckResult:
    """Check ``student(num_classes, noise) -> float``: NC1 against the clean labels under label noise.

    Setting: balanced classes; a fraction ``noise`` of every class carries a wrong training label, spread
    evenly over the other ``C - 1`` classes; every feature sits at the simplex-ETF vertex of its training
    label. Cases: no noise (0), the chapter's run, ``C = 2`` and random ``C`` and noise below ``(C - 1)/C``.
    """
    return NC1_LABEL_NOISE.check(student)


EXERCISES = (NC1, NC1_PER_CLASS, NC2, NC2_SHIFTED, ZERO_THRESHOLD, NC1_LABEL_NOISE)
