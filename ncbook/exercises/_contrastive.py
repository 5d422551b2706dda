"""Autograder checks for the contrastive-imbalance chapter.

Letters: ``C`` classes, ``k`` negatives per anchor, ``t`` the temperature.
"""

from __future__ import annotations

import numpy as np

from ..contrastive import class_means_from_gram, cl_risk, collapse_threshold, optimal_gram
from ._core import CheckResult, Exercise, compare_arrays

__all__ = ["check_multiset_risk", "check_ucl_collapse_k1", "check_means_from_gram"]


def _random_gram(rng, c):
    m = rng.standard_normal((c, c))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m @ m.T


def _risk_cases(rng):
    yield {"gram": np.eye(2), "class_probs": np.array([0.5, 0.5]), "k": 1, "setting": "ucl", "t": 1.0}
    for c, k, setting in ((3, 1, "scl"), (3, 2, "ucl"), (4, 3, "scl"), (4, 2, "ucl"), (3, 3, "ucl")):
        yield {"gram": _random_gram(rng, c), "class_probs": rng.dirichlet(np.ones(c)), "k": k, "setting": setting,
               "t": float(rng.choice([0.5, 1.0, 2.0])) if rng.random() < 0.5 else float(rng.uniform(0.3, 3.0))}


MULTISET_RISK = Exercise(
    "multiset_risk", params=("gram", "class_probs", "k", "setting", "t"), cases=_risk_cases,
    reference=lambda gram, class_probs, k, setting, t: cl_risk(gram, class_probs, k, setting=setting, temperature=t),
    atol=1e-9, rtol=1e-9, forbid=(cl_risk,))


def check_multiset_risk(student) -> CheckResult:
    """Check ``student(gram, class_probs, k, setting, t) -> float`` against :func:`ncbook.contrastive.cl_risk`
    (InfoNCE, positives at cosine 1, UCL collisions included)."""
    return MULTISET_RISK.check(student)


def _temperature_cases(rng):
    yield {"t": 0.25}
    yield {"t": 1.0}
    for low, high in ((0.1, 0.5), (0.5, 2.0), (2.0, 20.0)):
        yield {"t": float(rng.uniform(low, high))}


UCL_COLLAPSE_K1 = Exercise("ucl_collapse_k1", params=("t",), cases=_temperature_cases,
                           reference=lambda t: collapse_threshold(1, setting="ucl", temperature=t),
                           atol=1e-8, rtol=1e-8, forbid=(collapse_threshold,))


def check_ucl_collapse_k1(student) -> CheckResult:
    """Check ``student(t) -> float``, the exact UCL collapse point at ``k = 1``, for several temperatures."""
    return UCL_COLLAPSE_K1.check(student)


def _gram_cases(rng):
    yield {"gram": optimal_gram([0.6, 0.2, 0.2], 1)}
    yield {"gram": optimal_gram(np.sort(rng.dirichlet(np.ones(4)))[::-1], 2, setting="scl")}
    yield {"gram": optimal_gram([0.9, 0.05, 0.05], 1)}  # collapsed: rank 1
    yield {"gram": np.eye(int(rng.integers(2, 6)))}
    m = rng.standard_normal((int(rng.integers(3, 7)), 2))  # a rank-2 Gram of several classes
    yield {"gram": m @ m.T}


def _reproduces_gram(got, case, expected) -> str | None:
    gram = np.asarray(case["gram"], dtype=np.float64)
    if got.ndim != 2 or got.shape[0] != gram.shape[0]:
        return f"expected means of shape (C, d) with C = {gram.shape[0]}; got shape {got.shape}"
    problem = compare_arrays(got @ got.T, gram, atol=1e-7, rtol=1e-7)
    return None if problem is None else f"means @ means.T differs from gram: {problem}"


MEANS_FROM_GRAM = Exercise("means_from_gram", params=("gram",), cases=_gram_cases, compare=_reproduces_gram,
                           forbid=(class_means_from_gram,), hint=" (the check compares means @ means.T with gram)",
                           summary="means @ means.T reproduces every Gram matrix.")


def check_means_from_gram(student) -> CheckResult:
    """Check ``student(gram) -> means (C, d)`` reproduces ``gram = means @ means.T`` (any rotation)."""
    return MEANS_FROM_GRAM.check(student)


EXERCISES = (MULTISET_RISK, UCL_COLLAPSE_K1, MEANS_FROM_GRAM)
