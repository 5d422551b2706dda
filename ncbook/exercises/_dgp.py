"""Autograder checks for the weighted-contrastive (distance geometry) chapter: "classify this objective".

Letters: ``n`` samples, ``d`` (``dim``) the latent dimension, ``tau`` the temperature, ``C`` classes,
``m`` the dimension of the X-CLR label embeddings. A *status code* is the position of a status in
:data:`ncbook.dgp.STATUSES`: 0 feasible, 1 degenerate, 2 inconsistent.

Each check compares the student's answer, derived by hand, with :mod:`ncbook.dgp` on the same
objective (the superclass threshold with its closed form, which the tests check against
:func:`ncbook.dgp.spherical_dgp`); calling :func:`ncbook.dgp.euclidean_dgp` or
:func:`ncbook.dgp.spherical_dgp` fails.
"""

from __future__ import annotations

import math

import numpy as np

from ..dgp import STATUSES, euclidean_dgp, spherical_dgp
from ..losses import xclr_weights
from ._core import CheckResult, Exercise, input_eps, within

__all__ = ["check_laplacian_status", "check_superclass_epsilon", "check_three_point_shift", "check_xclr_status"]

_FORBID = (euclidean_dgp, spherical_dgp)


# --------------------------------------------------------------------------- status codes
def _status_name(value: float) -> str:
    if np.isfinite(value) and float(value).is_integer() and 0 <= value < len(STATUSES):
        return repr(STATUSES[int(value)])
    return "not a status code"


def _same_status(got: np.ndarray, case: dict, expected) -> str | None:
    """A status code is one number: 0 feasible, 1 degenerate, 2 inconsistent."""
    if got.size != 1:
        return f"expected one status code (0, 1 or 2), got an array of shape {got.shape}"
    g, e = float(got.reshape(-1)[0]), int(expected)
    if within(g, e, atol=1e-9):  # a code is an integer: any rounding of it is the same code
        return None
    n = len(np.asarray(next(iter(case.values()))))
    return (f"with n = {n} points and dim = {case['dim']}: expected {e} ({STATUSES[e]!r}), "
            f"got {g:g} ({_status_name(g)})")


# --------------------------------------------------------------------------- ex: three points
def _three_point_cases(rng):
    yield {"weights": np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.2], [0.5, 0.2, 1.0]]), "tau": 1.0}
    yield {"weights": np.array([[1.0, 0.3, 0.3], [0.3, 1.0, 0.3], [0.3, 0.3, 1.0]]), "tau": 0.5}  # equilateral
    yield {"weights": np.array([[1.0, 0.9, 1e-6], [0.9, 1.0, 0.8], [1e-6, 0.8, 1.0]]), "tau": 0.2}  # one long side
    for _ in range(3):
        w = np.eye(3)
        w[np.triu_indices(3, 1)] = np.exp(rng.uniform(-4.0, 0.0, 3))
        yield {"weights": np.maximum(w, w.T), "tau": float(rng.uniform(0.1, 2.0))}


THREE_POINT_SHIFT = Exercise(
    "three_point_shift", params=("weights", "tau"), cases=_three_point_cases,
    reference=lambda weights, tau: euclidean_dgp(weights, tau).shift, atol=1e-9, rtol=1e-7, forbid=_FORBID,
    hint=" (the reference is ncbook.dgp.euclidean_dgp(weights, tau).shift)")


def check_three_point_shift(student) -> CheckResult:
    """Check ``student(weights, tau)``: the smallest shift ``delta_min`` of three points, Euclidean latent.

    ``weights`` is ``(3, 3)``, symmetric and positive (diagonal ignored); the answer is compared with
    :func:`ncbook.dgp.euclidean_dgp` ``(weights, tau).shift``.
    """
    return THREE_POINT_SHIFT.check(student)


# --------------------------------------------------------------------------- ex: Laplacian kernel
def _laplacian_weights(y, sigma: float) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    return np.exp(-np.sqrt(((y[:, None, :] - y[None, :, :]) ** 2).sum(-1)) / sigma)


def _laplacian_cases(rng):
    yield {"y": np.linspace(-1.0, 1.0, 256), "sigma": 1.0, "tau": 0.1, "dim": 128}  # a batch of 256, d = 128
    yield {"y": rng.uniform(-1, 1, (6, 2)), "sigma": 0.5, "tau": 0.2, "dim": 4}
    yield {"y": rng.uniform(-1, 1, (6, 2)), "sigma": 0.5, "tau": 0.2, "dim": 5}
    for _ in range(5):
        n, p = int(rng.integers(5, 15)), int(rng.integers(1, 4))
        dim = int(rng.choice([1, n - 3, n - 2, n - 1, n + 1]))
        yield {"y": rng.uniform(-1, 1, (n, p)), "sigma": float(rng.uniform(0.2, 2.0)),
               "tau": float(rng.uniform(0.05, 1.0)), "dim": max(dim, 1)}


def _laplacian_status(y, sigma, tau, dim) -> int:
    return STATUSES.index(euclidean_dgp(_laplacian_weights(y, sigma), tau, dim).status)


LAPLACIAN_STATUS = Exercise("laplacian_status", params=("y", "sigma", "tau", "dim"), cases=_laplacian_cases,
                            reference=_laplacian_status, compare=_same_status, forbid=_FORBID,
                            hint=" (0 feasible, 1 degenerate, 2 inconsistent: the reference is ncbook.dgp.euclidean_dgp)")


def check_laplacian_status(student) -> CheckResult:
    """Check ``student(y, sigma, tau, dim)``: the status code of Laplacian-kernel weights
    ``omega_ij = exp(-||y_i - y_j|| / sigma)`` with the Euclidean latent in ``dim`` dimensions.

    ``y`` is ``(n,)`` or ``(n, p)`` with distinct rows; the answer (0 feasible, 1 degenerate,
    2 inconsistent) is compared with :func:`ncbook.dgp.euclidean_dgp`.
    """
    return LAPLACIAN_STATUS.check(student)


# --------------------------------------------------------------------------- ex: superclasses
def superclass_weights(labels_per_class: int, num_superclasses: int, group_size: int, epsilon_in: float,
                       epsilon_out: float) -> np.ndarray:
    """Sample-level weights of SupCon with superclasses: 1 within a class, ``epsilon_in`` within a
    superclass, ``epsilon_out`` across superclasses (``labels_per_class`` samples a class)."""
    classes = np.repeat(np.arange(num_superclasses * group_size), labels_per_class)
    groups = classes // group_size
    w = np.where(groups[:, None] == groups[None, :], epsilon_in, epsilon_out)
    return np.where(classes[:, None] == classes[None, :], 1.0, w)


def _superclass_epsilon(num_superclasses, group_size, epsilon_in, tau) -> float:
    """The prototype Gram 1 + tau log(omega-bar) is PSD iff its all-ones eigenvalue is >= 0."""
    c, g = num_superclasses * group_size, group_size
    inside = 1.0 + tau * math.log(epsilon_in)                  # cosine of two classes of one superclass
    across = -(1.0 + (g - 1) * inside) / (c - g)               # smallest cosine across superclasses
    return math.exp((across - 1.0) / tau)


def _superclass_cases(rng):
    yield {"num_superclasses": 4, "group_size": 1, "epsilon_in": 0.5, "tau": 0.1}   # plain Soft SupCon, C = 4
    yield {"num_superclasses": 2, "group_size": 5, "epsilon_in": 0.1, "tau": 0.5}   # CIFAR-10: animals, vehicles
    yield {"num_superclasses": 20, "group_size": 5, "epsilon_in": 0.01, "tau": 0.5}  # CIFAR-100's 20 superclasses
    for _ in range(3):
        s, g = int(rng.integers(2, 6)), int(rng.integers(1, 5))
        tau = float(rng.uniform(0.1, 1.0))
        lo = -g / ((g - 1) * tau) if g > 1 else -3.0             # log epsilon_in of the superclass's own simplex
        yield {"num_superclasses": s, "group_size": g, "epsilon_in": float(math.exp(rng.uniform(0.05, 0.8) * lo)),
               "tau": tau}


def _superclass_compare(got: np.ndarray, case: dict, expected) -> str | None:
    if got.size != 1:
        return f"expected one number, got an array of shape {got.shape}"
    g, e = float(got.reshape(-1)[0]), float(expected)
    if within(g, e, rtol=1e-9, eps=input_eps(case)):
        return None
    text = f"expected epsilon_out = {e:.6g}, got {g:.6g}"
    if np.isfinite(g) and 0 < g <= 1:
        s, size = case["num_superclasses"], case["group_size"]
        w = superclass_weights(2, s, size, case["epsilon_in"], g)
        status = spherical_dgp(w, case["tau"], s * size).status
        text += (f"; at your value ncbook.dgp.spherical_dgp (2 samples a class, dim = C = {s * size}) finds the "
                 f"objective {status}")
    return text


SUPERCLASS_EPSILON = Exercise("superclass_epsilon", params=("num_superclasses", "group_size", "epsilon_in", "tau"),
                              cases=_superclass_cases, reference=_superclass_epsilon, compare=_superclass_compare,
                              forbid=_FORBID)


def check_superclass_epsilon(student) -> CheckResult:
    """Check ``student(num_superclasses, group_size, epsilon_in, tau)``: the smallest cross-superclass
    weight ``epsilon_out`` for which SupCon with superclasses (cosine latent) can reach its bound.

    ``num_superclasses`` groups of ``group_size`` classes; weights 1 within a class, ``epsilon_in``
    within a superclass, ``epsilon_out`` across. Compared with the closed form to a relative ``1e-9``.
    """
    return SUPERCLASS_EPSILON.check(student)


# --------------------------------------------------------------------------- ex: X-CLR
def _unit_rows(rng, n, m):
    e = rng.standard_normal((n, m))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def _off_ones(e: np.ndarray) -> float:
    """||(I - P_E) 1||^2: the part of the ones vector outside the span of the label embeddings."""
    ones = np.ones(len(e))
    coef, *_ = np.linalg.lstsq(e, ones, rcond=None)
    return float(((ones - e @ coef) ** 2).sum())


def _xclr_cases(rng):
    e = _unit_rows(np.random.default_rng(4), 20, 3)  # the chapter's setting: rank-3 labels, n = 20
    for dim, tau in ((3, 0.05), (4, 0.05), (18, 0.05), (19, 0.05), (4, 0.15)):  # tau_s = 0.1: tau = tau_s / 2, 1.5 tau_s
        yield {"label_embeddings": e, "tau": tau, "label_temperature": 0.1, "dim": dim}
    for _ in range(6):
        m = int(rng.integers(2, 5))
        n = int(rng.integers(m + 7, 19))
        e = _unit_rows(rng, n, m)
        while _off_ones(e) <= 1.5:  # general position (true for almost every draw of this size)
            e = _unit_rows(rng, n, m)
        ts = float(rng.uniform(0.1, 1.0))
        ratio = float(rng.choice([0.25, 0.5, 0.8, 1.5, 2.0]))
        dim = int(rng.choice([m, m + 1, m + 2, n - 2, n - 1, n]))
        yield {"label_embeddings": e, "tau": ratio * ts, "label_temperature": ts, "dim": dim}


def _xclr_status(label_embeddings, tau, label_temperature, dim) -> int:
    w = xclr_weights(label_embeddings, label_temperature).numpy()
    return STATUSES.index(spherical_dgp(w, tau, dim).status)


XCLR_STATUS = Exercise("xclr_status", params=("label_embeddings", "tau", "label_temperature", "dim"),
                       cases=_xclr_cases, reference=_xclr_status, compare=_same_status, forbid=_FORBID,
                       hint=" (0 feasible, 1 degenerate, 2 inconsistent: the reference is ncbook.dgp.spherical_dgp)")


def check_xclr_status(student) -> CheckResult:
    """Check ``student(label_embeddings, tau, label_temperature, dim)``: the status code of X-CLR
    (``omega_ij = exp(<e_i, e_j> / tau_s)``, cosine latent at ``tau``) in ``dim`` dimensions.

    ``label_embeddings`` is ``(n, m)`` with unit rows in general position; compared with
    :func:`ncbook.dgp.spherical_dgp`.
    """
    return XCLR_STATUS.check(student)


EXERCISES = (THREE_POINT_SHIFT, LAPLACIAN_STATUS, SUPERCLASS_EPSILON, XCLR_STATUS)
