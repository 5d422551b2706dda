"""Autograder checks for the contrastive-imbalance chapter.

Letters: ``C`` classes, ``k`` negatives per anchor, ``tau`` the temperature, ``pi1`` the majority's
probability (one majority and equal minorities).
"""

from __future__ import annotations

import numpy as np

from ..contrastive import cl_risk, collapse_margin, collapse_threshold, optimal_gram, solve_gram
from ._core import CheckResult, Exercise

__all__ = ["check_multiset_risk", "check_scl_collapse_k1", "check_exp_collapse_point", "check_one_angle_cosine"]


def _random_gram(rng, c):
    m = rng.standard_normal((c, c))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m @ m.T


def _temperature(rng) -> float:
    return float(rng.choice([0.5, 1.0, 2.0])) if rng.random() < 0.5 else float(rng.uniform(0.3, 3.0))


def _risk_cases(rng):
    yield {"gram": np.eye(2), "class_probs": np.array([0.5, 0.5]), "k": 1, "setting": "ucl", "tau": 1.0}
    for c, k, setting in ((3, 1, "scl"), (3, 2, "ucl"), (4, 3, "scl"), (4, 2, "ucl"), (3, 3, "ucl")):
        yield {"gram": _random_gram(rng, c), "class_probs": rng.dirichlet(np.ones(c)), "k": k, "setting": setting,
               "tau": _temperature(rng)}


MULTISET_RISK = Exercise(
    "multiset_risk", params=("gram", "class_probs", "k", "setting", "tau"), cases=_risk_cases,
    reference=lambda gram, class_probs, k, setting, tau: cl_risk(gram, class_probs, k, setting=setting,
                                                                 temperature=tau),
    atol=1e-9, rtol=1e-9, forbid=(cl_risk,))


def check_multiset_risk(student) -> CheckResult:
    """Check ``student(gram, class_probs, k, setting, tau) -> float`` against :func:`ncbook.contrastive.cl_risk`
    (InfoNCE, positives at cosine 1, UCL collisions included).

    Examples
    --------
    >>> check_multiset_risk(lambda gram, class_probs, k, setting, tau: 0.0).passed
    False
    """
    return MULTISET_RISK.check(student)


def _temperature_cases(rng):
    yield {"tau": 0.25}
    yield {"tau": 1.0}
    for low, high in ((0.1, 0.5), (0.5, 2.0), (2.0, 20.0)):
        yield {"tau": float(rng.uniform(low, high))}


SCL_COLLAPSE_K1 = Exercise(
    "scl_collapse_k1", params=("tau",), cases=_temperature_cases,
    reference=lambda tau: collapse_threshold(1, setting="scl", num_classes=3, temperature=tau),
    atol=1e-8, rtol=1e-8, forbid=(collapse_threshold, collapse_margin),
    hint=" (the exact SCL collapse point of three classes, one negative, as a function of the temperature)")


def check_scl_collapse_k1(student) -> CheckResult:
    """Check ``student(tau) -> float``: the majority probability above which SCL collapses the two minorities
    of three classes (InfoNCE, ``k = 1``), against :func:`ncbook.contrastive.collapse_threshold`, at several
    temperatures.

    Examples
    --------
    >>> check_scl_collapse_k1(lambda tau: 0.5).passed
    False
    """
    return SCL_COLLAPSE_K1.check(student)


def _exp_cases(rng):
    yield {"k": 1, "tau": 1.0}
    yield {"k": 64, "tau": 1.0}
    for low, high in ((0.2, 0.6), (0.6, 2.0), (2.0, 10.0)):
        yield {"k": int(rng.integers(1, 33)), "tau": float(rng.uniform(low, high))}


EXP_COLLAPSE_POINT = Exercise(
    "exp_collapse_point", params=("k", "tau"), cases=_exp_cases,
    reference=lambda k, tau: collapse_threshold(k, setting="ucl", temperature=tau, psi="exp"),
    atol=1e-8, rtol=1e-8, forbid=(collapse_threshold, collapse_margin),
    hint=" (the exact UCL collapse point of the sum-of-exponentials loss)")


def check_exp_collapse_point(student) -> CheckResult:
    """Check ``student(k, tau) -> float``: the exact UCL collapse point of the sum-of-exponentials loss
    ``psi(g) = sum_j exp(g_j / tau)``, against :func:`ncbook.contrastive.collapse_threshold` (``psi="exp"``).

    Examples
    --------
    >>> check_exp_collapse_point(lambda k, tau: 0.9).passed
    False
    """
    return EXP_COLLAPSE_POINT.check(student)


def _one_angle_cases(rng):
    yield {"pi1": 0.6, "k": 1, "setting": "ucl", "tau": 1.0}
    yield {"pi1": 0.85, "k": 2, "setting": "ucl", "tau": 1.0}    # collapsed: the minority cosine is 1
    yield {"pi1": 0.85, "k": 32, "setting": "ucl", "tau": 1.0}   # many negatives: not collapsed
    for setting in ("ucl", "scl", str(rng.choice(["ucl", "scl"]))):
        yield {"pi1": float(rng.uniform(0.4, 0.97)), "k": int(rng.choice([1, 2, 3, 4, 6])), "setting": setting,
               "tau": float(rng.uniform(0.5, 2.0))}


def _one_angle_reference(pi1, k, setting, tau):
    probs = np.array([pi1, (1 - pi1) / 2, (1 - pi1) / 2])
    return optimal_gram(probs, k, setting=setting, temperature=tau)[1, 2]


ONE_ANGLE_COSINE = Exercise(
    "one_angle_cosine", params=("pi1", "k", "setting", "tau"), cases=_one_angle_cases,
    reference=_one_angle_reference, atol=1e-4, rtol=0.0, forbid=(optimal_gram, solve_gram),
    hint=" (the minority-minority cosine A*_23 of the convex optimum, to 1e-4)")


def check_one_angle_cosine(student) -> CheckResult:
    """Check ``student(pi1, k, setting, tau) -> float``: the minority-minority cosine of the optimal class means
    of one majority (probability ``pi1``) and two equal minorities, against the convex program
    (:func:`ncbook.contrastive.optimal_gram`), to ``1e-4``.

    Examples
    --------
    >>> check_one_angle_cosine(lambda pi1, k, setting, tau: 1.0).passed
    False
    """
    return ONE_ANGLE_COSINE.check(student)


EXERCISES = (MULTISET_RISK, SCL_COLLAPSE_K1, EXP_COLLAPSE_POINT, ONE_ANGLE_COSINE)
