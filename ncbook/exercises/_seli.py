"""Autograder checks for the SELI chapter (Imbalance Trouble).

Letters: ``C`` classes, ``n`` samples, ``R`` the STEP imbalance ratio.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ..geometry import cosine_matrix, sel_matrix, seli_geometry, seli_step_closed_form
from ..ufm import log_mean_ce, ridge_optimum
from ._core import CheckResult, Exercise

__all__ = ["check_sel_matrix", "check_seli_classifier_gram", "check_minority_norm_ratio", "check_log_mean_ce",
           "check_collapse_lambda"]


def _sel_cases(rng):
    yield {"labels": np.array([0, 2]), "num_classes": 3}
    c = int(rng.integers(3, 7))
    yield {"labels": rng.permutation(np.r_[np.arange(c), rng.integers(0, c, 3)]), "num_classes": c}  # shuffled
    c = int(rng.integers(4, 8))
    yield {"labels": np.full(int(rng.integers(1, 5)), int(rng.integers(0, c))), "num_classes": c}  # absent classes
    c = int(rng.integers(2, 10))
    yield {"labels": rng.integers(0, c, size=int(rng.integers(5, 30))), "num_classes": c}


SEL_MATRIX = Exercise("sel_matrix", params=("labels", "num_classes"), cases=_sel_cases, reference=sel_matrix,
                      atol=1e-10, forbid=(sel_matrix,))


def check_sel_matrix(student) -> CheckResult:
    """Check ``student(labels, num_classes) -> (C, n)`` against :func:`ncbook.geometry.sel_matrix`.

    Cases: the docstring example, a shuffled batch, a batch missing some classes
    (the SEL matrix still has ``C`` rows) and random labels. Shape ``(C, n)``: one
    column per sample, as in the paper.
    """
    return SEL_MATRIX.check(student)


def _gram_cases(rng):
    yield {"counts": np.full(int(rng.integers(2, 6)), int(rng.integers(1, 10)))}     # balanced: a scaled ETF Gram
    maj, mino = int(rng.integers(20, 100)), int(rng.integers(1, 10))
    yield {"counts": np.array([maj, maj, mino, mino])}                               # STEP
    yield {"counts": np.array([int(rng.integers(2, 20)), int(rng.integers(1, 3))])}  # two classes
    yield {"counts": np.sort(rng.integers(1, 200, int(rng.integers(3, 8))))[::-1].copy()}  # long tail


SELI_CLASSIFIER_GRAM = Exercise("seli_classifier_gram", params=("counts",), cases=_gram_cases,
                                reference=lambda counts: seli_geometry(counts).classifier_gram, atol=1e-8,
                                forbid=(seli_geometry,))


def check_seli_classifier_gram(student) -> CheckResult:
    """Check ``student(counts) -> (C, C)`` equals :math:`(PDP)^{1/2}` (the SELI classifier Gram).

    Cases: balanced counts (a scaled ETF Gram), STEP counts, two classes and a
    long-tailed profile.
    """
    return SELI_CLASSIFIER_GRAM.check(student)


def _ratio_cases(rng):
    yield {"ratio": 1.0, "num_majority": int(rng.integers(1, 6)), "num_minority": int(rng.integers(1, 6))}
    for ratio in (10.0, 100.0):
        yield {"ratio": ratio, "num_majority": 2, "num_minority": 2}                  # the chapter's table
    yield {"ratio": float(rng.uniform(2, 200)), "num_majority": 5, "num_minority": 5}  # ten classes
    yield {"ratio": float(rng.uniform(2, 200)), "num_majority": int(rng.integers(2, 9)),
           "num_minority": int(rng.integers(2, 9))}                                    # an uneven split
    yield {"ratio": float(rng.uniform(1.5, 50)), "num_majority": 1, "num_minority": 1}  # C = 2: always 1


MINORITY_NORM_RATIO = Exercise("minority_norm_ratio", params=("ratio", "num_majority", "num_minority"),
                               cases=_ratio_cases,
                               reference=lambda **kw: seli_step_closed_form(**kw)["w_norm_ratio"], atol=1e-8,
                               forbid=(seli_step_closed_form,))


def check_minority_norm_ratio(student) -> CheckResult:
    """Check ``student(ratio, num_majority, num_minority) -> float`` equals ``||w_min|| / ||w_maj||`` of SELI.

    Cases: ``R = 1`` (must be 1), the chapter's table, ten classes, an uneven split and
    ``C = 2`` (must be 1 for every ``R``).
    """
    return MINORITY_NORM_RATIO.check(student)


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


def _minorities_collapsed(counts, lam: float) -> bool:
    """Do the last two classifiers of the exact ridge optimum coincide (or vanish) at ``lam``?"""
    w = ridge_optimum(counts, lam).classifiers                     # (C, C - 1)
    return bool(np.linalg.norm(w[2:], axis=1).min() == 0 or cosine_matrix(w)[2, 3] > 1 - 1e-6)


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
    n = int(rng.integers(3, 8))
    yield {"counts": [n * int(rng.integers(8, 60))] * 2 + [n, n]}  # R between 8 and 60


COLLAPSE_LAMBDA = Exercise("collapse_lambda", params=("counts",), cases=_collapse_cases, compare=_bracketed,
                           summary="every threshold found to within a factor 1.25.")


def check_collapse_lambda(student, factor: float = 1.25) -> CheckResult:
    """Check ``student(counts) -> lambda``, the smallest ridge at which the two minorities collapse.

    For counts ``(50, 50, 5, 5)`` and ``(500, 500, 5, 5)`` (and, graded, other STEP counts) the exact
    ridge optimum (:func:`ncbook.ufm.ridge_optimum`) must have coinciding minority classifiers at the
    returned ``lambda`` and distinct ones at ``lambda / factor``: the threshold to within ``factor``.
    """
    spec = COLLAPSE_LAMBDA
    if factor != 1.25:
        from dataclasses import replace
        spec = replace(spec, compare=functools.partial(_bracketed, factor=factor),
                       summary=f"every threshold found to within a factor {factor}.")
    return spec.check(student)


EXERCISES = (SEL_MATRIX, SELI_CLASSIFIER_GRAM, MINORITY_NORM_RATIO, LOG_MEAN_CE, COLLAPSE_LAMBDA)
