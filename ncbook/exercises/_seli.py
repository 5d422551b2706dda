"""Autograder checks for the SELI chapter (Imbalance Trouble).

Letters: ``C`` classes, ``n`` samples, ``n_c`` samples of class ``c``, ``R`` the STEP
imbalance ratio, ``C_maj`` / ``C_min`` the majority / minority classes of STEP counts.
Four checks take a closed form the student derived (as a function of its parameters)
and compare it with an independent computation on cases; one brackets a threshold found by
experiment (``collapse_lambda``). ``log_mean_ce`` (an implementation) stays for the grader's tests.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from scipy.optimize import brentq

from ..geometry import cosine_matrix, seli_geometry, seli_step_closed_form, seli_step_limits
from ..ufm import log_mean_ce, ridge_optimum
from ._core import CheckResult, Exercise

__all__ = ["check_etf_cost_ratio", "check_minority_orthogonal_ratio", "check_minority_norm_ratio_limit",
           "check_log_mean_ce", "check_step_multipliers", "check_collapse_lambda"]


# --------------------------------------------------------------------------- ex-seli-1: the ETF's SVM cost
def _etf_cost_ratio(counts) -> float:
    """SVM objective of the best ETF-classifier point over SELI's, by the SVD of the SEL matrix.

    SELI's objective ``(||W||^2 + ||H||^2) / 2`` at unit margins is the nuclear norm of the SEL
    matrix (the sum of its singular values, from the SVD route); the ETF's is
    ``(C - 1) sqrt(n / C)``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    c, n = counts.size, counts.sum()
    seli_cost = seli_geometry(counts.astype(np.int64), method="svd").singular_values.sum()
    return float((c - 1) * np.sqrt(n / c) / seli_cost)


def _cost_cases(rng):
    yield {"counts": np.array([50, 50, 5, 5])}                                       # the chapter's counts
    yield {"counts": np.full(int(rng.integers(2, 7)), int(rng.integers(1, 30)))}      # balanced: 1
    yield {"counts": np.array([int(rng.integers(1, 50)), int(rng.integers(1, 50))])}  # two classes: 1
    n_min, r = int(rng.integers(1, 6)), int(rng.integers(2, 80))
    k_maj, k_min = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    yield {"counts": np.array([r * n_min] * k_maj + [n_min] * k_min)}                # STEP
    yield {"counts": np.sort(rng.integers(1, 20_000, int(rng.integers(4, 9))))[::-1].copy()}  # a long tail: > 10^15


ETF_COST_RATIO = Exercise("etf_cost_ratio", params=("counts",), cases=_cost_cases, reference=_etf_cost_ratio,
                          atol=1e-9, rtol=1e-6)  # a square root of the zero eigenvalue of PDP costs ~1e-8


def check_etf_cost_ratio(student) -> CheckResult:
    """Check ``student(counts) -> float``: the SVM cost of the best simplex-ETF classifier over SELI's.

    The SVM is the one of the SELI theorem: ``min (||W||_F^2 + ||H||_F^2) / 2`` subject to unit
    margins. With the classifier fixed to a simplex ETF (Gram proportional to ``P``) and the
    features and the scale chosen optimally its value is ``(C - 1) sqrt(n / C)``; at SELI it is the
    nuclear norm of the SEL matrix. Cases: the chapter's counts, balanced counts and two classes
    (both 1), STEP counts and a long tail.
    """
    return ETF_COST_RATIO.check(student)


# --------------------------------------------------------------------------- ex-seli-2: orthogonal minorities
def _orthogonal_ratio(num_majority: int, num_minority: int) -> float:
    """The STEP ratio at which the two SELI minority classifiers are orthogonal (a root of the cosine)."""
    cos = lambda r: seli_step_closed_form(r, num_majority, num_minority)["w_cos_min_min"]  # noqa: E731
    c = num_majority + num_minority
    return float(brentq(cos, 1.0, float(c) ** 3 + 1.0, xtol=1e-13, rtol=1e-14))


def _orthogonal_cases(rng):
    yield {"num_majority": 1, "num_minority": 2}                                      # the worked instance
    for _ in range(2):
        yield {"num_majority": int(rng.integers(1, 9)), "num_minority": int(rng.integers(2, 9))}
    yield {"num_majority": int(rng.integers(1, 100_000)), "num_minority": int(rng.integers(2, 100_000))}  # ~10^10


MINORITY_ORTHOGONAL_RATIO = Exercise(
    "minority_orthogonal_ratio", params=("num_majority", "num_minority"), cases=_orthogonal_cases,
    reference=_orthogonal_ratio, atol=1e-8, rtol=1e-9, forbid=(seli_step_closed_form, seli_step_limits),
    hint="\n  (R is the imbalance ratio n_maj / n_min at which <w_min, w'_min> = 0.)")


def check_minority_orthogonal_ratio(student) -> CheckResult:
    """Check ``student(num_majority, num_minority) -> R``: the STEP ratio where the minority classifiers turn.

    At ``R = 1`` two minority classifiers of SELI have cosine ``-1/(C - 1)``; as ``R`` grows they
    align. The exercise asks for the ratio at which their inner product is 0, in closed form; the
    reference finds the root of the cosine numerically. Cases: one majority and two minorities
    (the chapter's worked instance) and random splits with at least two minorities.
    """
    return MINORITY_ORTHOGONAL_RATIO.check(student)


# --------------------------------------------------------------------------- ex-seli-3: the large-R limit
def _limit_cases(rng):
    yield {"num_majority": 2, "num_minority": 2}                                      # the chapter's limit
    yield {"num_majority": 1, "num_minority": int(rng.integers(1, 8))}                # one majority class
    yield {"num_majority": int(rng.integers(2, 9)), "num_minority": 1}                # one minority class
    yield {"num_majority": int(rng.integers(1, 12)), "num_minority": int(rng.integers(1, 12))}
    yield {"num_majority": int(rng.integers(1, 100_000)), "num_minority": int(rng.integers(1, 100_000))}  # ~10^10


MINORITY_NORM_RATIO_LIMIT = Exercise(
    "minority_norm_ratio_limit", params=("num_majority", "num_minority"), cases=_limit_cases,
    reference=lambda num_majority, num_minority: seli_step_limits(num_majority, num_minority)["w_norm_ratio"],
    atol=1e-9, rtol=1e-9, forbid=(seli_step_limits, seli_step_closed_form))


def check_minority_norm_ratio_limit(student) -> CheckResult:
    """Check ``student(num_majority, num_minority) -> float``: ``lim ||w_min|| / ||w_maj||`` as ``R -> inf``.

    The limit of SELI's minority over majority classifier norm under STEP imbalance, for any split
    (the chapter states it for half minorities). Cases: half minorities, a single majority class,
    a single minority class and random splits.
    """
    return MINORITY_NORM_RATIO_LIMIT.check(student)


# --------------------------------------------------------------------------- ex-seli-4: log mean CE
def _ce_cases(rng):
    yield {"logits": torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]], dtype=torch.float64),
           "labels": torch.tensor([0, 2])}
    n, c = int(rng.integers(3, 12)), int(rng.integers(2, 6))
    yield {"logits": torch.as_tensor(rng.standard_normal((n, c))), "labels": torch.as_tensor(rng.integers(0, c, n))}
    # far past the point where exp underflows: log CE is about -800, CE itself is 0.0 in float64
    yield {"logits": torch.tensor([[800.0, 0.0, 0.0], [0.0, 900.0, 0.0]], dtype=torch.float64),
           "labels": torch.tensor([0, 1])}
    n, c = int(rng.integers(2, 6)), int(rng.integers(2, 5))
    labels = rng.integers(0, c, n)
    logits = rng.standard_normal((n, c))
    logits[np.arange(n), labels] += rng.uniform(760, 1000, n)  # every CE underflows
    yield {"logits": torch.as_tensor(logits), "labels": torch.as_tensor(labels)}


LOG_MEAN_CE = Exercise("log_mean_ce", params=("logits", "labels"), cases=_ce_cases,
                       reference=lambda logits, labels: log_mean_ce(logits, labels), atol=1e-8, rtol=1e-10,
                       forbid=(log_mean_ce,))


def check_log_mean_ce(student) -> CheckResult:
    """Check ``student(logits, labels) -> scalar`` equals ``log(mean CE)`` without underflow.

    Cases: a hand-sized batch, random logits, and logits so separated that the mean
    CE underflows to 0 (``torch.log(F.cross_entropy(...))`` gives ``-inf`` there).
    """
    return LOG_MEAN_CE.check(student)


# --------------------------------------------------------------------------- ex-seli-4: SELI's multipliers
def _step_multipliers(ratio: int, num_majority: int, num_minority: int) -> np.ndarray:
    """SELI's KKT multipliers under STEP counts (``n_min = 1``): minus the off-diagonal entries of ``G_M``.

    ``(maj-maj, min-min, maj-min)``, read from the class route of :func:`ncbook.geometry.seli_geometry`.
    """
    counts = [ratio] * num_majority + [1] * num_minority
    g = seli_geometry(counts).mean_gram
    return -np.array([g[0, 1], g[-1, -2], g[0, -1]])


def _multiplier_cases(rng):
    yield {"ratio": 10, "num_majority": 2, "num_minority": 2}                        # the chapter's counts
    yield {"ratio": 1, "num_majority": 3, "num_minority": 2}                         # balanced: all 1 / C
    yield {"ratio": int(rng.integers(2, 1000)), "num_majority": int(rng.integers(2, 9)),
           "num_minority": int(rng.integers(2, 9))}
    yield {"ratio": int(rng.integers(10**3, 10**5)), "num_majority": int(rng.integers(2, 12)),
           "num_minority": int(rng.integers(2, 12))}  # far into the imbalance (the reference keeps ~1e-11 up to 1e5)


STEP_MULTIPLIERS = Exercise(
    "step_multipliers", params=("ratio", "num_majority", "num_minority"), cases=_multiplier_cases,
    reference=_step_multipliers, atol=1e-12, rtol=1e-8, forbid=(seli_geometry, seli_step_closed_form),
    hint="\n  (Return (maj-maj, min-min, maj-min): minus G_M's off-diagonal entries at n_min = 1.)")


def check_step_multipliers(student) -> CheckResult:
    """Check ``student(ratio, num_majority, num_minority) -> (3,)``: SELI's KKT multipliers under STEP counts.

    With ``n_min = 1`` (majorities of ``ratio`` samples) the multiplier of a margin constraint of a sample of
    class ``y`` against class ``c`` is ``-(G_M)_{y c}``; under STEP counts it takes three values, returned in
    the order majority-majority, minority-minority, majority-minority. The reference reads them off
    :func:`ncbook.geometry.seli_geometry`. Cases: the chapter's counts, balanced counts (every multiplier
    ``1 / C``), a random split, and a ratio far into the imbalance.
    """
    return STEP_MULTIPLIERS.check(student)


# --------------------------------------------------------------------------- ex-seli-5: the collapse lambda
def _minorities_collapsed(counts, lam: float) -> bool:
    """Do the last two classifiers of the exact ridge optimum coincide (or vanish) at ``lam``?

    A row "vanishes" when its norm is below ``1e-9`` of the largest row's (the solver's zero is ~1e-16 of
    the scale on one machine and exactly 0 on another: never ``== 0``).
    """
    w = ridge_optimum(counts, lam).classifiers                     # (C, C - 1)
    norms = np.linalg.norm(w, axis=1)
    return bool(norms[2:].min() <= 1e-9 * norms.max() or cosine_matrix(w)[2, 3] > 1 - 1e-6)


def _bracketed(got, case, expected, factor: float = 1.25) -> str | None:
    counts = case["counts"]
    if got.size != 1:
        return f"expected one number lambda, got an array of shape {got.shape}"
    lam = float(got.reshape(()))
    if not np.isfinite(lam) or lam <= 0:
        return f"for counts {counts} expected a positive lambda, got {lam}"
    if not _minorities_collapsed(counts, lam):
        return f"for counts {counts} got lambda = {lam:.3g}: the minority classifiers do not coincide there " \
               "(lambda too small)"
    if _minorities_collapsed(counts, lam / factor):
        return f"for counts {counts} got lambda = {lam:.3g}: they already coincide at lambda / {factor} " \
               "(lambda too large)"
    return None


def _collapse_cases(rng):
    yield {"counts": [50, 50, 5, 5]}
    yield {"counts": [500, 500, 5, 5]}
    for _ in range(2):  # R between 8 and 60, n_min up to 3000 (~10^8 counts each; lambda stays above 1e-4)
        n = int(rng.integers(3, 3000))
        yield {"counts": [int(round(n * rng.uniform(8, 60)))] * 2 + [n, n]}


COLLAPSE_LAMBDA = Exercise("collapse_lambda", params=("counts",), cases=_collapse_cases, compare=_bracketed,
                           summary="every threshold found to within a factor 1.25.")


def check_collapse_lambda(student, factor: float = 1.25) -> CheckResult:
    """Check ``student(counts) -> lambda``, the smallest ridge at which the two minorities collapse.

    For counts ``(50, 50, 5, 5)`` and ``(500, 500, 5, 5)`` (and, graded, other STEP counts) the exact
    ridge optimum (:func:`ncbook.ufm.ridge_optimum`) must have coinciding minority classifiers at the
    returned ``lambda`` and distinct ones at ``lambda / factor``: the threshold to within ``factor``.
    The check itself costs two exact solves per case; the student's search costs the rest.
    """
    spec = COLLAPSE_LAMBDA
    if factor != 1.25:
        from dataclasses import replace
        spec = replace(spec, compare=functools.partial(_bracketed, factor=factor),
                       summary=f"every threshold found to within a factor {factor}.")
    return spec.check(student)


EXERCISES = (ETF_COST_RATIO, MINORITY_ORTHOGONAL_RATIO, MINORITY_NORM_RATIO_LIMIT, LOG_MEAN_CE, STEP_MULTIPLIERS,
             COLLAPSE_LAMBDA)
