"""Feasibility statuses, minimal ranks and closed forms of ncbook.dgp."""

import math

import numpy as np
import pytest
import torch

from ncbook.dgp import STATUSES, euclidean_dgp, spherical_dgp
from ncbook.losses import (
    entropic_lower_bound,
    gaussian_kernel_weights,
    soft_supcon_weights,
    supcon_weights,
    w_info_nce,
    xclr_weights,
)
from ncbook.metrics import entropic_gap, r2_procrustes, r2_similarity


def _uniform_labels(n, p=2, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n, p))


def _reaches_bound(res, w, similarity, tau):
    loss = float(w_info_nce(torch.as_tensor(res.embedding), w, similarity=similarity, temperature=tau))
    return loss - entropic_lower_bound(w)


def test_euclid_euclid_feasible_unique_with_closed_form():
    y = _uniform_labels(30)
    sigma, tau = 0.5, 0.2
    w = gaussian_kernel_weights(y, sigma)
    res = euclidean_dgp(w, tau, dim=8)
    assert res.status == "feasible" and res.rank == 2
    assert res.shift == pytest.approx(0.0, abs=1e-10)
    assert abs(_reaches_bound(res, w, "euclidean", tau)) < 1e-12
    # closed form z = sqrt(tau / (2 sigma^2)) R y + t: same centred Gram
    z = math.sqrt(tau / (2 * sigma**2)) * (y - y.mean(0))
    np.testing.assert_allclose(res.embedding @ res.embedding.T, z @ z.T, atol=1e-10)
    assert r2_procrustes(res.embedding, y) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("dim, status", [(1, "inconsistent"), (2, "feasible"), (28, "feasible"), (29, "degenerate"), (None, "degenerate")])
def test_euclidean_status_by_dimension(dim, status):
    w = gaussian_kernel_weights(_uniform_labels(30), 0.5)
    assert euclidean_dgp(w, 0.2, dim).status == status


def test_euclidean_shift_rule_on_a_non_euclidean_target():
    """A random symmetric W needs delta = -2 lambda_min > 0; the rank drops by the multiplicity."""
    rng = np.random.default_rng(5)
    a = rng.uniform(0.1, 1.0, (8, 8))
    w = (a + a.T) / 2
    res = euclidean_dgp(w, 1.0, dim=7)
    assert res.status == "degenerate"  # dim >= N - 1
    assert res.shift == pytest.approx(-2 * res.lambda_min)
    assert res.rank == 6
    assert abs(_reaches_bound(res, w, "euclidean", 1.0)) < 1e-12
    assert euclidean_dgp(w, 1.0, dim=6).status == "feasible"
    assert euclidean_dgp(w, 1.0, dim=5).status == "inconsistent"


def test_euclidean_zero_weights_are_an_infimum():
    w = supcon_weights(np.repeat(np.arange(3), 4))
    res = euclidean_dgp(w, 0.1, dim=2)
    assert res.status == "degenerate" and "infimum" in res.reason and res.embedding is None
    # the gap shrinks as the class prototypes drift apart
    protos = np.eye(3)
    gaps = [_gap_at_scale(w, protos, s) for s in (0.5, 1.0, 2.0)]
    assert gaps[0] > gaps[1] > gaps[2] > 0
    with pytest.raises(ValueError, match="block pattern"):
        euclidean_dgp(np.array([[1.0, 1, 0], [1, 1, 1], [0, 1, 1]]), 0.1)


def _gap_at_scale(w, protos, scale):
    labels = np.repeat(np.arange(3), 4)
    z = torch.as_tensor(scale * protos[labels])
    return entropic_gap(z, w, similarity="euclidean", temperature=1.0)


@pytest.mark.parametrize("counts", [[5, 5, 5, 5], [20, 5, 5, 5]])
def test_soft_supcon_closed_form_and_simplex_condition(counts):
    c, tau = 4, 0.1
    labels = np.repeat(np.arange(c), counts)
    eps_star = math.exp(-c / ((c - 1) * tau))
    res = spherical_dgp(soft_supcon_weights(labels, eps_star), tau, dim=8)
    assert res.status == "feasible" and res.rank == c - 1
    assert abs(_reaches_bound(res, soft_supcon_weights(labels, eps_star), "cosine", tau)) < 1e-10
    first = np.cumsum([0] + counts[:-1])
    g = res.gram[np.ix_(first, first)]
    np.testing.assert_allclose(g[~np.eye(c, dtype=bool)], -1 / (c - 1), atol=1e-10)
    # larger epsilon: cosine rho = 1 - tau log(1/eps), rank C
    eps = 1e-3
    res = spherical_dgp(soft_supcon_weights(labels, eps), tau, dim=8)
    assert res.status == "feasible" and res.rank == c
    assert res.gram[first[0], first[1]] == pytest.approx(1 - tau * math.log(1 / eps), abs=1e-10)
    # smaller epsilon: rho < -1/(C-1), no unit vectors have these cosines
    assert spherical_dgp(soft_supcon_weights(labels, eps_star / 10), tau, dim=8).status == "inconsistent"


def test_supcon_is_inconsistent_under_cosine():
    res = spherical_dgp(supcon_weights([0, 0, 1, 1]), 0.1, dim=4)
    assert res.status == "inconsistent" and "bounded" in res.reason


@pytest.mark.parametrize("tau, sigma, status", [(0.5, 1.0, "feasible"), (1.0, 1.0, "feasible"), (0.5, 0.5, "inconsistent")])
def test_yaware_on_a_circle(tau, sigma, status):
    """Feasible iff tau r^2 / sigma^2 <= 1; optimum z = (sqrt(2a) y, sqrt(1 - 2 a r^2))."""
    th = np.random.default_rng(1).uniform(0, 2 * np.pi, 12)
    y = np.c_[np.cos(th), np.sin(th)]  # r = 1
    w = gaussian_kernel_weights(y, sigma)
    res = spherical_dgp(w, tau, dim=4)
    assert res.status == status
    if status == "feasible":
        a = tau / (2 * sigma**2)
        z = np.c_[np.sqrt(2 * a) * y, np.full(12, np.sqrt(max(1 - 2 * a, 0.0)))]
        np.testing.assert_allclose(res.gram, z @ z.T, atol=1e-7)
        assert res.rank == (2 if 2 * a == 1 else 3)


def test_yaware_inconsistent_for_uniform_and_1d_labels():
    w = gaussian_kernel_weights(_uniform_labels(40), 0.5)
    assert spherical_dgp(w, 0.2, dim=8).status == "inconsistent"
    y1 = np.linspace(-1, 1, 6)
    res = spherical_dgp(gaussian_kernel_weights(y1, 1.0), 0.1, dim=4)
    assert res.status == "inconsistent" and res.rank == 5  # minimal rank N - 1
    assert spherical_dgp(gaussian_kernel_weights(y1, 1.0), 0.1, dim=5).status == "degenerate"
    two = np.array([-1.0, 1, 1, -1, 1, -1])
    assert spherical_dgp(gaussian_kernel_weights(two, 1.0), 0.1, dim=2).status == "feasible"


def test_cosine_spread_not_largest_distance_decides():
    """K(delta) is never PSD when the target cosines spread over more than 2; a large distance alone is fine.

    Three labels on an equilateral triangle with tau L^2 / (2 sigma^2) = 3 have equal target cosines
    -3 + delta: at delta = 2.5 every off-diagonal entry is -1/2 (a regular simplex), so the bound is
    reached in d = 2 and 3 although tau max ||y_i - y_j||^2 / (2 sigma^2) = 3 > 2.
    """
    tau, sigma = 0.5, 1.0
    side = math.sqrt(3 * 2 * sigma**2 / tau)                    # tau side^2 / (2 sigma^2) = 3
    y = side / math.sqrt(3) * np.array([[math.cos(a), math.sin(a)] for a in (0, 2 * math.pi / 3, 4 * math.pi / 3)])
    w = gaussian_kernel_weights(y, sigma).numpy()
    target = tau * np.log(w) + 2.5 * (np.ones((3, 3)) - np.eye(3)) + np.eye(3)   # K(2.5)
    np.testing.assert_allclose(target[~np.eye(3, dtype=bool)], -0.5, rtol=1e-12)
    assert np.linalg.eigvalsh(target)[0] > -1e-12
    for dim in (2, 3):
        res = spherical_dgp(w, tau, dim=dim)
        assert res.status == "degenerate" and res.shift_interval[0] == pytest.approx(2.5, rel=1e-6)
    # a spread above 2 (the range of tau ||y_i - y_j||^2 / (2 sigma^2) over pairs) is never PSD, in any dimension
    line = np.array([0.0, 0.1, 2.0])                            # range (4 - 0.01) * tau / 2 = 0.9975 at sigma = 1
    for sig, status in ((1.0, "degenerate"), (0.6, "inconsistent")):
        sq = (line[:, None] - line[None]) ** 2
        spread = tau * (sq[sq > 0].max() - sq[sq > 0].min()) / (2 * sig**2)
        assert (spread > 2) == (status == "inconsistent")
        assert spherical_dgp(gaussian_kernel_weights(line, sig), tau, dim=3).status == status


def test_xclr_feasible_when_dim_exceeds_rank_and_tau_below_tau_s():
    e = np.random.default_rng(2).standard_normal((10, 3))
    tau, tau_s = 0.1, 0.2
    w = xclr_weights(e, tau_s)
    res = spherical_dgp(w, tau, dim=4)
    assert res.status == "feasible" and res.rank == 4 and res.shift == pytest.approx(1 - tau / tau_s)
    u = e / np.linalg.norm(e, axis=1, keepdims=True)
    alpha = tau / tau_s
    np.testing.assert_allclose(res.gram, alpha * u @ u.T + (1 - alpha), atol=1e-9)
    assert abs(_reaches_bound(res, w, "cosine", tau)) < 1e-10
    assert r2_similarity(res.embedding, w) == pytest.approx(1.0, abs=1e-10)
    assert spherical_dgp(w, tau, dim=3).status == "inconsistent"
    assert spherical_dgp(w, tau, dim=10).status == "degenerate"
    assert spherical_dgp(w, 0.3, dim=4).status == "inconsistent"  # tau > tau_s here


def test_statuses_and_bad_inputs():
    assert set(STATUSES) == {"feasible", "degenerate", "inconsistent"}
    w = np.ones((3, 3))
    with pytest.raises(ValueError, match="symmetric"):
        euclidean_dgp(np.array([[1.0, 0.5], [0.2, 1.0]]), 0.1)
    with pytest.raises(ValueError, match="non-negative"):
        spherical_dgp(-w, 0.1, dim=2)
    with pytest.raises(ValueError, match="temperature must be a positive"):
        spherical_dgp(w, 0.0, dim=2)
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        spherical_dgp(w, 0.1, dim=0)
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        euclidean_dgp(w, 0.1, dim=0)
    with pytest.raises(ValueError, match="square"):
        euclidean_dgp(np.ones((2, 3)), 0.1)
