"""Autograder checks for the MR2 chapter (class-dependent margins).

Letters: ``C`` classes, ``n`` samples, ``d`` feature dimension, ``b_c`` samples of class ``c`` in a
batch. A class's statistics are its squared mean norm ``||mu_c||^2`` (``mean_sq_norms``) and its
spread ``sigma_c^2``, the mean squared deviation from its mean (``mean_sq_devs``), as returned by
:func:`ncbook.margins.class_feature_statistics`.

The exercises:

* ``bound_ratio`` (a derivation): how much the cube-root margins lower the schematic bound
  ``sum_c t_c^3 / gamma_c^2`` against uniform margins with the same mean;
* ``expected_batch_statistics`` (a derivation): the expectations of a batch's plug-in estimates;
* ``half_pull_distance`` (a derivation): where the representation loss pulls at half strength, with
  the positives of a batch or of the whole class;
* ``relative_spread_margins`` (a variant the package does not contain): margins from the relative
  spread ``sigma_c^2 / ||mu_c - mu_G||^2``.

The references are private functions of this module: the package has no such functions, and a
student's code cannot call them (the check watches its reference).
"""

from __future__ import annotations

import numpy as np
import torch

from ._core import CheckResult, Exercise

__all__ = ["check_bound_ratio", "check_expected_batch_statistics", "check_half_pull_distance",
           "check_relative_spread_margins"]


def _t(x, dtype=torch.float64):
    return torch.as_tensor(x, dtype=dtype)


# --------------------------------------------------------------------------- the bound's gain
def _bound_ratio(mean_sq_norms, mean_sq_devs) -> float:
    """``C^2 sum_c t_c^3 / (sum_c t_c)^3`` with ``t_c^3 = ||mu_c||^2 + sigma_c^2`` (derived in the chapter)."""
    cubes = np.asarray(mean_sq_norms, dtype=np.float64) + np.asarray(mean_sq_devs, dtype=np.float64)
    t = np.cbrt(cubes)
    return float(t.size ** 2 * cubes.sum() / t.sum() ** 3)


def _bound_cases(rng):
    yield {"mean_sq_norms": np.array([4.0, 4.0, 4.0]), "mean_sq_devs": np.array([1.0, 4.0, 23.0])}
    yield {"mean_sq_norms": np.full(5, 2.0), "mean_sq_devs": np.full(5, 0.5)}     # equal classes: ratio 1
    yield {"mean_sq_norms": np.array([1.0, 0.0, 0.0, 0.0]),                       # one class carries the bound
           "mean_sq_devs": np.array([0.0, 1e-9, 1e-9, 1e-9])}
    for _ in range(2):
        c = int(rng.integers(2, 12))
        yield {"mean_sq_norms": rng.uniform(0.0, 30.0, c), "mean_sq_devs": rng.uniform(0.1, 10.0, c)}


BOUND_RATIO = Exercise("bound_ratio", params=("mean_sq_norms", "mean_sq_devs"), cases=_bound_cases,
                       reference=_bound_ratio, atol=1e-9, rtol=1e-7)


def check_bound_ratio(student) -> CheckResult:
    """Check ``student(mean_sq_norms, mean_sq_devs) -> float``: the schematic bound with uniform margins
    divided by its value at the cube-root margins with the same mean.

    Cases: the chapter's worked example, equal statistics (the ratio is 1), one class holding almost
    all of the bound (the ratio approaches ``C^2``) and random statistics for 2 to 11 classes.
    """
    return BOUND_RATIO.check(student)


# --------------------------------------------------------------------------- batch estimates
def _expected_batch_statistics(mean_sq_norm, mean_sq_dev, batch_count) -> np.ndarray:
    """Expectations of ``||mu_hat||^2``, ``sigma_hat^2`` and their sum from ``b`` i.i.d. samples of one class."""
    m, s, b = float(mean_sq_norm), float(mean_sq_dev), int(batch_count)
    return np.array([m + s / b, s * (b - 1) / b, m + s])


def _batch_cases(rng):
    yield {"mean_sq_norm": 4.0, "mean_sq_dev": 2.0, "batch_count": 1}   # one sample: no spread is seen
    yield {"mean_sq_norm": 4.0, "mean_sq_dev": 2.0, "batch_count": 2}
    yield {"mean_sq_norm": 0.0, "mean_sq_dev": 3.0, "batch_count": 6}   # a class centred at the origin
    for _ in range(2):
        yield {"mean_sq_norm": float(rng.uniform(0.0, 50.0)), "mean_sq_dev": float(rng.uniform(0.1, 20.0)),
               "batch_count": int(rng.integers(2, 40))}


EXPECTED_BATCH_STATISTICS = Exercise(
    "expected_batch_statistics", params=("mean_sq_norm", "mean_sq_dev", "batch_count"), cases=_batch_cases,
    reference=_expected_batch_statistics, atol=1e-9, rtol=1e-9)


def check_expected_batch_statistics(student) -> CheckResult:
    """Check ``student(mean_sq_norm, mean_sq_dev, batch_count) -> (3,)``: the expected values of a
    batch's estimates ``||mu_hat_c||^2``, ``sigma_hat_c^2`` and their sum, from ``batch_count``
    independent samples of a class with squared mean norm ``mean_sq_norm`` and spread ``mean_sq_dev``.

    The estimates are those of :func:`ncbook.margins.class_feature_statistics` (the spread averages
    over the ``b_c`` samples, dividing by ``b_c``). Cases: one sample, two samples, a class centred at
    the origin and random statistics and counts.
    """
    return EXPECTED_BATCH_STATISTICS.check(student)


# --------------------------------------------------------------------------- positives in the batch or the class
def _half_pull_distance(sbar, num_positives) -> float:
    """``2 sigma_bar^2 - ln n+``: where ``d/du ln(1 + n+ e^(u - 2 sigma_bar^2))`` is 1/2 (derived in the chapter)."""
    return float(2.0 * float(sbar) - np.log(float(num_positives)))


def _pull_cases(rng):
    yield {"sbar": 0.25, "num_positives": 1}            # one positive: the pull is half at 2 sigma_bar^2
    yield {"sbar": 1.5, "num_positives": 99}            # the paper's sum over a class of 100 training samples
    yield {"sbar": 0.0, "num_positives": 5}             # sigma_bar^2 = 0 (the official code's setting)
    for _ in range(2):
        yield {"sbar": float(rng.uniform(0.0, 20.0)), "num_positives": int(rng.integers(2, 500))}


HALF_PULL_DISTANCE = Exercise("half_pull_distance", params=("sbar", "num_positives"), cases=_pull_cases,
                              reference=_half_pull_distance, atol=1e-9, rtol=1e-9)


def check_half_pull_distance(student) -> CheckResult:
    """Check ``student(sbar, num_positives) -> float``: the squared distance at which the representation
    margin loss of an anchor whose ``num_positives`` positives all lie at that distance pulls at half its
    full strength (its derivative in the squared distance is 1/2), for the mean spread ``sbar``.

    Cases: one positive, a class of 100 training samples, ``sbar = 0`` and random spreads and counts.
    """
    return HALF_PULL_DISTANCE.check(student)


# --------------------------------------------------------------------------- a margin statistic of our own
def _relative_spread_margins(features, labels, num_classes, c_bar) -> np.ndarray:
    """``gamma_c = c_bar C t_c / sum t`` with ``t_c = (sigma_c^2 / ||mu_c - mu_G||^2)^(1/3)``, in float64.

    ``mu_G`` is the plain mean of the class means (every class weighs the same, whatever its count).
    """
    h = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    means = np.stack([h[y == c].mean(axis=0) for c in range(int(num_classes))])          # (C, d)
    spreads = np.array([((h[y == c] - means[c]) ** 2).sum(axis=1).mean() for c in range(int(num_classes))])
    centred = ((means - means.mean(axis=0)) ** 2).sum(axis=1)                           # ||mu_c - mu_G||^2
    t = np.cbrt(spreads / centred)
    return float(c_bar) * t.size * t / t.sum()


def _relative_cases(rng):
    # two classes on a line: means 1 and 3 (mu_G = 2, ||mu_c - mu_G||^2 = 1), spreads 1 and 4
    yield {"features": _t([[0.0], [2.0], [1.0], [5.0]]), "labels": torch.tensor([0, 0, 1, 1]),
           "num_classes": 2, "c_bar": 1.0}
    for offset, uneven in ((5.0, False), (float(rng.uniform(-20.0, 20.0)), True)):
        c, d = int(rng.integers(3, 8)), int(rng.integers(2, 6))
        counts = rng.integers(2, 30, c) if uneven else np.full(c, int(rng.integers(2, 12)))
        labels = np.repeat(np.arange(c), counts)
        centres = 4.0 * rng.standard_normal((c, d))
        scales = rng.uniform(0.2, 2.0, c)
        features = offset + centres[labels] + scales[labels, None] * rng.standard_normal((labels.size, d))
        order = rng.permutation(labels.size)  # samples in any order
        yield {"features": _t(features[order]), "labels": torch.as_tensor(labels[order]), "num_classes": c,
               "c_bar": float(rng.uniform(0.5, 2.0))}


RELATIVE_SPREAD_MARGINS = Exercise(
    "relative_spread_margins", params=("features", "labels", "num_classes", "c_bar"), cases=_relative_cases,
    reference=_relative_spread_margins, atol=1e-8, rtol=1e-7)


def check_relative_spread_margins(student) -> CheckResult:
    """Check ``student(features, labels, num_classes, c_bar) -> (C,)``: margins with mean ``c_bar``
    proportional to the cube root of each class's relative spread ``sigma_c^2 / ||mu_c - mu_G||^2``.

    ``mu_G`` is the plain mean of the class means. Cases: two classes on a line (worked out by hand),
    features far from the origin with equal class counts, and uneven counts in shuffled order (a
    sample-weighted global mean is then wrong). Every class has at least two samples.
    """
    return RELATIVE_SPREAD_MARGINS.check(student)


EXERCISES = (BOUND_RATIO, EXPECTED_BATCH_STATISTICS, HALF_PULL_DISTANCE, RELATIVE_SPREAD_MARGINS)
