"""The weighted chapter's "classify this objective" checks: the chapter's solutions pass, planted
mistakes fail with a message naming the input, expected and received values, stubs report "not
implemented yet", calling ncbook.dgp is refused, and the closed forms agree with ncbook.dgp."""

import math

import numpy as np
import pytest
import torch

from ncbook.dgp import STATUSES, euclidean_dgp, spherical_dgp
from ncbook.exercises import (check_laplacian_status, check_superclass_epsilon, check_three_point_shift,
                              check_xclr_status)
from ncbook.exercises._dgp import _superclass_epsilon, superclass_weights
from ncbook.losses import xclr_weights

torch.set_num_threads(1)


def stub(**kwargs):
    raise NotImplementedError


# --------------------------------------------------------------------------- three points
def three_point_shift(weights, tau):
    """Heron: the triangle with squared sides a + delta, b + delta, c + delta is flat at the larger root."""
    w = np.asarray(weights, dtype=float)
    a, b, c = -tau * np.log([w[0, 1], w[0, 2], w[1, 2]])
    s1, e2, p2 = a + b + c, a * b + b * c + c * a, a * a + b * b + c * c
    return (-s1 + math.sqrt(max(s1 * s1 - 3 * (2 * e2 - p2), 0.0))) / 3  # root term 0 for equal weights


def three_point_shift_by_eigenvalues(weights, tau):
    """Another correct answer: -2 eig_min of G_Delta(0) on the complement of 1, written for n = 3."""
    w = np.asarray(weights, dtype=float)
    d = -tau * np.log(w)
    np.fill_diagonal(d, 0.0)
    v = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]]).T / np.sqrt([2.0, 6.0])
    p = np.eye(3) - 1 / 3
    return -2 * np.linalg.eigvalsh(v.T @ (-0.5 * p @ d @ p) @ v)[0]


def test_three_point_shift_passes_and_fails_helpfully():
    assert check_three_point_shift(three_point_shift)
    assert check_three_point_shift(three_point_shift_by_eigenvalues)
    res = check_three_point_shift(lambda weights, tau: -(-tau * np.log(weights[np.triu_indices(3, 1)])).min())
    assert not res and "expected" in res.message and "got" in res.message and "weights=" in res.message
    assert "not implemented yet" in check_three_point_shift(stub).message
    res = check_three_point_shift(lambda weights, tau: euclidean_dgp(weights, tau).shift)
    assert not res and "calls ncbook.dgp.euclidean_dgp" in res.message


# --------------------------------------------------------------------------- Laplacian kernel
def laplacian_status(y, sigma, tau, dim):
    n = len(y)
    if dim >= n - 1:
        return STATUSES.index("degenerate")
    return STATUSES.index("feasible" if dim == n - 2 else "inconsistent")


def test_laplacian_status_passes_and_fails_helpfully():
    assert check_laplacian_status(laplacian_status)
    assert check_laplacian_status(lambda y, sigma, tau, dim: float(laplacian_status(y, sigma, tau, dim)))

    def like_gaussian(y, sigma, tau, dim):  # planted: treats |y_i - y_j| like a squared distance
        y = np.asarray(y, dtype=float).reshape(len(y), -1)
        rank = np.linalg.matrix_rank(y - y.mean(0))
        return 1 if dim >= len(y) - 1 else (0 if dim >= rank else 2)

    res = check_laplacian_status(like_gaussian)
    assert not res and "expected 2 ('inconsistent'), got 0 ('feasible')" in res.message and "n = 256" in res.message
    res = check_laplacian_status(lambda y, sigma, tau, dim: "inconsistent")
    assert not res and "not an array" in res.message
    res = check_laplacian_status(lambda y, sigma, tau, dim: 7)
    assert not res and "not a status code" in res.message
    assert "not implemented yet" in check_laplacian_status(stub).message
    res = check_laplacian_status(lambda y, sigma, tau, dim: STATUSES.index(
        euclidean_dgp(np.exp(-np.abs(np.subtract.outer(y, y)) / sigma), tau, dim).status))
    assert not res and "calls ncbook.dgp.euclidean_dgp" in res.message


# --------------------------------------------------------------------------- superclasses
def superclass_epsilon(num_superclasses, group_size, epsilon_in, tau):
    c, g = num_superclasses * group_size, group_size
    inside = 1 + tau * math.log(epsilon_in)
    across = -(1 + (g - 1) * inside) / (c - g)
    return math.exp((across - 1) / tau)


def test_superclass_epsilon_passes_and_fails_helpfully():
    assert check_superclass_epsilon(superclass_epsilon)
    forgot = lambda num_superclasses, group_size, epsilon_in, tau: math.exp(  # noqa: E731  planted: plain epsilon*
        -(num_superclasses * group_size) / ((num_superclasses * group_size - 1) * tau))
    res = check_superclass_epsilon(forgot)
    assert not res and "expected epsilon_out" in res.message and "finds the objective" in res.message
    assert "group_size=5" in res.message
    assert "not implemented yet" in check_superclass_epsilon(stub).message


@pytest.mark.parametrize("s,g,eps_in,tau", [(4, 1, 0.5, 0.1), (2, 3, 0.2, 0.5), (3, 2, 0.05, 0.3), (2, 4, 0.6, 1.0)])
def test_superclass_threshold_is_where_spherical_dgp_changes_its_verdict(s, g, eps_in, tau):
    """Independent check of the closed form: just above it the objective is feasible in d = C, below inconsistent."""
    c = s * g
    eps = _superclass_epsilon(s, g, eps_in, tau)
    assert spherical_dgp(superclass_weights(3, s, g, eps_in, eps * 1.01), tau, c).status == "feasible"
    assert spherical_dgp(superclass_weights(3, s, g, eps_in, eps * 0.99), tau, c).status == "inconsistent"
    at = spherical_dgp(superclass_weights(3, s, g, eps_in, eps), tau, c - 1)
    assert at.status == "feasible" and at.rank == c - 1  # the class prototypes sum to zero
    if g == 1:  # no superclasses: Soft SupCon's epsilon* = exp(-C / ((C - 1) tau))
        assert eps == pytest.approx(math.exp(-c / ((c - 1) * tau)), rel=1e-12)


# --------------------------------------------------------------------------- X-CLR
def xclr_status(label_embeddings, tau, label_temperature, dim):
    e = np.asarray(label_embeddings, dtype=float)
    n = len(e)
    if tau > label_temperature:
        return 2
    if dim >= n - 1:
        return 1
    return 0 if dim >= np.linalg.matrix_rank(np.c_[e, np.ones(n)]) else 2


def test_xclr_status_passes_and_fails_helpfully():
    assert check_xclr_status(xclr_status)

    def ignores_temperature(label_embeddings, tau, label_temperature, dim):  # planted: tau > tau_s not handled
        return xclr_status(label_embeddings, min(tau, label_temperature), label_temperature, dim)

    res = check_xclr_status(ignores_temperature)
    assert not res and "expected 2 ('inconsistent'), got 0 ('feasible')" in res.message and "tau=0.15" in res.message

    def upper_bound_n(label_embeddings, tau, label_temperature, dim):  # planted: feasible up to d < n
        n = len(label_embeddings)
        return xclr_status(label_embeddings, tau, label_temperature, dim) if dim != n - 1 else 0

    res = check_xclr_status(upper_bound_n)
    assert not res and "dim = 19: expected 1 ('degenerate'), got 0 ('feasible')" in res.message
    assert "not implemented yet" in check_xclr_status(stub).message
    res = check_xclr_status(lambda label_embeddings, tau, label_temperature, dim: STATUSES.index(
        spherical_dgp(xclr_weights(label_embeddings, label_temperature), tau, dim).status))
    assert not res and "calls ncbook.dgp.spherical_dgp" in res.message


def test_xclr_above_the_label_temperature_is_inconsistent_when_ones_leave_the_label_span():
    """The solution's argument: with ||(I - P_E) 1||^2 > 1 no shift makes K(delta) PSD, in any dimension."""
    rng = np.random.default_rng(0)
    for n, m in ((12, 2), (16, 3), (20, 4)):
        e = rng.standard_normal((n, m))
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        res = spherical_dgp(xclr_weights(e, 0.2), 0.3, n + 1)
        assert res.status == "inconsistent" and res.lambda_min < -1e-3


# --------------------------------------------------------------------------- ex-wc-5 (a prediction, no check)
def test_yaware_prediction_sets_are_not_the_chapters_and_go_the_other_way():
    """ex-wc-5 asks about label sets the chapter does not classify before it: 24 square labels with sigma = 1
    (degenerate only at d = n - 1) and 10 line labels on [0, 3] with sigma = 0.5 (inconsistent in every
    dimension): the opposite of the chapter's square (sigma = 0.5) and line (12 labels, sigma = 1)."""
    from pathlib import Path

    from ncbook.losses import gaussian_kernel_weights
    square = np.random.default_rng(0).uniform(-1, 1, (24, 2))        # SEED = 0, as in the chapter
    line = np.linspace(0, 3, 10)[:, None]
    w_sq, w_ln = gaussian_kernel_weights(square, 1.0), gaussian_kernel_weights(line, 0.5)
    assert [spherical_dgp(w_sq, 0.2, d).status for d in (8, 23)] == ["inconsistent", "degenerate"]
    assert [spherical_dgp(w_ln, 0.2, d).status for d in (8, 9)] == ["inconsistent", "inconsistent"]
    text = (Path(__file__).resolve().parents[1] / "book" / "weighted_contrastive.md").read_text()
    exercise = text[text.index(":label: ex-wc-5"):]
    assert "24 labels uniform on the square" in exercise and "10 evenly spaced labels" in exercise
    assert "(24, 2)" in exercise and "np.linspace(0, 3, 10)" in exercise
    page = text[:text.index(":label: ex-wc-5")]
    assert "np.linspace(0, 3" not in page and "(24, 2)" not in page
