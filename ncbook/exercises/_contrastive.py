"""Autograder checks for the contrastive-imbalance chapter."""

from __future__ import annotations


import numpy as np

from ..contrastive import class_means_from_gram, cl_risk, collapse_threshold, optimal_gram
from ._core import CheckResult, _signature_problem, run_cases

__all__ = ["check_multiset_risk", "check_ucl_collapse_k1", "check_means_from_gram"]


def _random_gram(rng, c):
    m = rng.standard_normal((c, c))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m @ m.T


def _risk_cases():
    rng = np.random.default_rng(0)
    yield {"gram": np.eye(2), "class_probs": np.array([0.5, 0.5]), "k": 1, "setting": "ucl", "t": 1.0}
    for c, k, setting, t in ((3, 1, "scl", 1.0), (3, 2, "ucl", 0.5), (4, 3, "scl", 1.0), (4, 2, "ucl", 2.0),
                             (3, 3, "ucl", 1.0)):
        yield {"gram": _random_gram(rng, c), "class_probs": rng.dirichlet(np.ones(c)), "k": k, "setting": setting,
               "t": t}


def check_multiset_risk(student) -> CheckResult:
    """Check ``student(gram, class_probs, k, setting, t) -> float`` against :func:`ncbook.contrastive.cl_risk`
    (InfoNCE, positives at cosine 1, UCL collisions included)."""
    return run_cases("multiset_risk", student,
                     lambda gram, class_probs, k, setting, t: cl_risk(gram, class_probs, k, setting=setting, temperature=t),
                     _risk_cases(), atol=1e-9, rtol=1e-9, forbid=(cl_risk,))


def check_ucl_collapse_k1(student) -> CheckResult:
    """Check ``student(t) -> float``, the exact UCL collapse point at ``k = 1``, for several temperatures."""
    cases = ({"t": t} for t in (0.25, 0.5, 1.0, 2.0, 5.0))
    return run_cases("ucl_collapse_k1", student, lambda t: collapse_threshold(1, setting="ucl", temperature=t), cases,
                     atol=1e-8, rtol=1e-8, forbid=(collapse_threshold,))


def check_means_from_gram(student) -> CheckResult:
    """Check ``student(gram) -> means (C, d)`` reproduces ``gram = means @ means.T`` (any rotation)."""
    def cases():
        yield {"gram": optimal_gram([0.6, 0.2, 0.2], 1)}
        yield {"gram": optimal_gram([0.4, 0.3, 0.2, 0.1], 2, setting="scl")}
        yield {"gram": optimal_gram([0.9, 0.05, 0.05], 1)}  # collapsed: rank 1
        yield {"gram": np.eye(3)}

    def wrapped(gram):
        m = np.asarray(student(gram), dtype=np.float64)
        if m.ndim != 2 or m.shape[0] != gram.shape[0]:
            raise ValueError(f"expected means of shape (C, d) with C = {gram.shape[0]}; got shape {m.shape}")
        return m @ m.T

    if not callable(student):
        return CheckResult("means_from_gram", False, f"expected a function; got {type(student).__name__}.")
    if problem := _signature_problem(student, {"gram": None}):
        return CheckResult("means_from_gram", False, problem)
    if student is class_means_from_gram:
        return CheckResult("means_from_gram", False, "this is ncbook.contrastive.class_means_from_gram itself; "
                                                     "the exercise is to write it yourself.")
    res = run_cases("means_from_gram", wrapped, lambda gram: gram, cases(), atol=1e-7, rtol=1e-7,
                    forbid=(class_means_from_gram,))
    if not res.passed and "expected" in res.message:
        return CheckResult(res.name, False, res.message + " (the check compares means @ means.T with gram)")
    return res


