"""The MR2 autograder checks: each reference agrees with an independent derivation, the chapter's
solution passes, planted mistakes fail with a message that names the input, and a stub reports
"not implemented yet"."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from ncbook.exercises import (check_bound_ratio, check_expected_batch_statistics, check_half_pull_distance,
                              check_relative_spread_margins)
from ncbook.exercises._margins import (BOUND_RATIO, EXPECTED_BATCH_STATISTICS, HALF_PULL_DISTANCE,
                                       RELATIVE_SPREAD_MARGINS, _bound_ratio, _expected_batch_statistics,
                                       _half_pull_distance, _relative_spread_margins)
from ncbook.losses import representation_margin_loss
from ncbook.margins import class_feature_statistics, mr2_margins
from ncbook.plotting import group_accuracy_bars, variability_scatter

torch.set_num_threads(1)


def todo(**kwargs):
    raise NotImplementedError


# --------------------------------------------------------------------------- the chapter's solutions
def bound_ratio(mean_sq_norms, mean_sq_devs):
    t = np.cbrt(np.asarray(mean_sq_norms, dtype=float) + np.asarray(mean_sq_devs, dtype=float))
    return len(t) ** 2 * np.sum(t ** 3) / np.sum(t) ** 3


def expected_batch_statistics(mean_sq_norm, mean_sq_dev, batch_count):
    b = batch_count
    return np.array([mean_sq_norm + mean_sq_dev / b, mean_sq_dev * (b - 1) / b, mean_sq_norm + mean_sq_dev])


def relative_spread_margins(features, labels, num_classes, c_bar):
    _, devs, _ = class_feature_statistics(features, labels, num_classes)   # the spread ignores where the origin is
    means = torch.stack([features[labels == c].mean(0) for c in range(num_classes)])
    centred = ((means - means.mean(0)) ** 2).sum(1)                          # ||mu_c - mu_G||^2
    t = (devs / centred) ** (1 / 3)
    return c_bar * num_classes * t / t.sum()


def half_pull_distance(sbar, num_positives):
    return 2 * sbar - np.log(num_positives)


# --------------------------------------------------------------------------- bound_ratio
def test_bound_ratio_reference_is_the_ratio_of_two_numerical_minima():
    """Uniform margins against the numerically optimal ones of sum_c t_c^3 / gamma_c^2 at a fixed mean."""
    rng = np.random.default_rng(3)
    for _ in range(4):
        c = int(rng.integers(2, 7))
        norms, devs = rng.uniform(0, 20, c), rng.uniform(0.1, 5, c)
        cubes, mean = norms + devs, float(rng.uniform(0.5, 2))
        objective = lambda g: np.sum(cubes / g ** 2)  # noqa: E731
        best = minimize(objective, np.full(c, mean), bounds=[(1e-3, None)] * c, tol=1e-14,
                        constraints=[{"type": "eq", "fun": lambda g: g.mean() - mean}])
        assert best.success
        assert math.isclose(_bound_ratio(norms, devs), objective(np.full(c, mean)) / best.fun, rel_tol=1e-6)
        # and the minimiser is MR2's rule
        np.testing.assert_allclose(best.x, mr2_margins(norms, devs, c_bar=mean).numpy(), rtol=1e-4)


def test_bound_ratio_limits():
    assert math.isclose(_bound_ratio([3.0] * 4, [1.0] * 4), 1.0)             # equal classes gain nothing
    assert _bound_ratio([1.0, 0, 0, 0], [0, 1e-12, 1e-12, 1e-12]) > 15.9    # towards C^2 = 16
    rng = np.random.default_rng(0)
    assert all(_bound_ratio(rng.uniform(0, 9, 5), rng.uniform(0, 9, 5)) >= 1 for _ in range(20))  # power means


def test_bound_ratio_check():
    assert check_bound_ratio(bound_ratio)

    def inverted(mean_sq_norms, mean_sq_devs):  # optimal over uniform
        return 1 / bound_ratio(mean_sq_norms, mean_sq_devs)

    res = check_bound_ratio(inverted)
    assert not res and "mean_sq_devs=[ 1.  4. 23.]" in res.message and f"expected {_bound_ratio([4.0] * 3, [1.0, 4, 23]):.6g}" in res.message

    def square_root_rule(mean_sq_norms, mean_sq_devs):  # the value at margins proportional to sqrt(t^3)
        cubes = np.asarray(mean_sq_norms) + np.asarray(mean_sq_devs)
        g = np.sqrt(cubes) / np.sqrt(cubes).mean()
        return np.sum(cubes) / np.sum(cubes / g ** 2)

    assert not check_bound_ratio(square_root_rule)
    assert "not implemented yet" in check_bound_ratio(todo).message


# --------------------------------------------------------------------------- expected_batch_statistics
def test_expected_batch_statistics_reference_agrees_with_monte_carlo():
    rng = np.random.default_rng(1)
    d, reps = 3, 40_000
    for b in (1, 2, 5):
        mu = np.array([1.0, -2.0, 0.5])                       # ||mu||^2 = 5.25
        scale = np.array([0.5, 1.0, 1.5])                     # spread sigma^2 = 0.25 + 1 + 2.25 = 3.5
        h = mu + scale * rng.standard_normal((reps, b, d))    # reps batches of b samples of one class
        mean = h.mean(axis=1)
        est = np.stack([(mean ** 2).sum(-1), ((h - mean[:, None]) ** 2).sum(-1).mean(-1)], 1)
        est = np.c_[est, est.sum(1)].mean(0)
        np.testing.assert_allclose(est, _expected_batch_statistics(5.25, 3.5, b), atol=0.03)


def test_expected_batch_statistics_agrees_with_the_package_estimates():
    """The estimates are class_feature_statistics' (spread divided by b_c, not b_c - 1)."""
    g = torch.Generator().manual_seed(0)
    h = torch.tensor([2.0, 0.0]) + torch.randn(30_000, 4, 2, generator=g, dtype=torch.float64)  # spread 2
    norms, devs = [], []
    for batch in h:
        n_, d_, _ = class_feature_statistics(batch, torch.zeros(4, dtype=torch.long), 1)
        norms.append(n_.item())
        devs.append(d_.item())
    np.testing.assert_allclose([np.mean(norms), np.mean(devs)], _expected_batch_statistics(4.0, 2.0, 4)[:2],
                               atol=0.03)


def test_expected_batch_statistics_check():
    assert check_expected_batch_statistics(expected_batch_statistics)

    def unbiased(mean_sq_norm, mean_sq_dev, batch_count):  # believes both estimates unbiased
        return np.array([mean_sq_norm, mean_sq_dev, mean_sq_norm + mean_sq_dev])

    res = check_expected_batch_statistics(unbiased)
    assert not res and "batch_count=1" in res.message and "expected [6. 0. 6.]" in res.message

    def bessel(mean_sq_norm, mean_sq_dev, batch_count):  # the spread as if divided by b - 1
        b = batch_count
        return np.array([mean_sq_norm + mean_sq_dev / b, mean_sq_dev, mean_sq_norm + mean_sq_dev * (b + 1) / b])

    res = check_expected_batch_statistics(bessel)
    assert not res and "batch_count=1" in res.message
    assert "not implemented yet" in check_expected_batch_statistics(todo).message


# --------------------------------------------------------------------------- relative_spread_margins
def test_relative_spread_reference_by_hand_and_its_invariances():
    h, y = torch.tensor([[0.0], [2.0], [1.0], [5.0]]), torch.tensor([0, 0, 1, 1])
    t = np.cbrt([1.0, 4.0])                                   # spreads 1 and 4 over ||mu_c - mu_G||^2 = 1
    np.testing.assert_allclose(_relative_spread_margins(h, y, 2, 1.0), 2 * t / t.sum(), rtol=1e-12)
    rng = np.random.default_rng(2)
    h = torch.as_tensor(rng.standard_normal((40, 3)) + 3 * np.repeat(np.eye(4, 3), 10, axis=0))
    y = torch.arange(4).repeat_interleave(10)
    base = _relative_spread_margins(h, y, 4, 1.3)
    assert math.isclose(base.mean(), 1.3)
    np.testing.assert_allclose(_relative_spread_margins(h + 7.0, y, 4, 1.3), base, rtol=1e-10)   # translation
    np.testing.assert_allclose(_relative_spread_margins(5.0 * h, y, 4, 1.3), base, rtol=1e-10)   # scale
    q = torch.as_tensor(np.linalg.qr(rng.standard_normal((3, 3)))[0])
    np.testing.assert_allclose(_relative_spread_margins(h @ q, y, 4, 1.3), base, rtol=1e-10)     # rotation
    perm = torch.tensor([2, 0, 3, 1])
    np.testing.assert_allclose(_relative_spread_margins(h, perm[y], 4, 1.3), base[np.argsort(perm.numpy())],
                               rtol=1e-10)                                                     # relabelling


def test_relative_spread_margins_check():
    assert check_relative_spread_margins(relative_spread_margins)

    def uncentred(features, labels, num_classes, c_bar):  # ||mu_c||^2 instead of ||mu_c - mu_G||^2
        norms, devs, _ = class_feature_statistics(features, labels, num_classes)
        t = (devs / norms) ** (1 / 3)
        return c_bar * num_classes * t / t.sum()

    res = check_relative_spread_margins(uncentred)
    assert not res and "features=" in res.message and "expected [0.77" in res.message

    def sample_weighted(features, labels, num_classes, c_bar):  # mu_G as the mean of all samples
        _, devs, _ = class_feature_statistics(features, labels, num_classes)
        means = torch.stack([features[labels == c].mean(0) for c in range(num_classes)])
        t = (devs / ((means - features.mean(0)) ** 2).sum(1)) ** (1 / 3)
        return c_bar * num_classes * t / t.sum()

    res = check_relative_spread_margins(sample_weighted)
    assert not res and "array of shape" in res.message   # the uneven case, the only one it fails
    res = check_relative_spread_margins(lambda features, labels, num_classes, c_bar:
                                        _relative_spread_margins(features, labels, num_classes, c_bar))
    assert not res and "calls" in res.message             # calling the reference is refused
    assert "not implemented yet" in check_relative_spread_margins(todo).message


# --------------------------------------------------------------------------- positives in the batch or the class
@pytest.mark.parametrize("sbar, n_pos", [(0.25, 1), (1.5, 99), (0.0, 5), (7.3, 6)])
def test_half_pull_reference_is_where_the_losss_gradient_is_one_half(sbar, n_pos):
    """Independent of the closed form: the squared distance at which d loss / d distance = 1/2, found by root
    finding on the autograd derivative of ncbook's representation loss for an anchor with n+ positives at it."""
    from scipy.optimize import brentq

    def slope(dist2):
        x = torch.tensor(float(dist2), dtype=torch.float64, requires_grad=True)
        h = torch.cat([torch.zeros(1, 1, dtype=torch.float64), torch.sqrt(x).expand(n_pos, 1)])   # n+ at distance^2 x
        per_anchor = representation_margin_loss(h, [0] * (n_pos + 1), sbar, reduction="none")
        per_anchor[0].backward()              # the anchor's loss; its derivative in the common squared distance
        return float(x.grad) - 0.5

    centre = _half_pull_distance(sbar, n_pos)
    root = brentq(slope, max(centre - 5.0, 1e-6), centre + 5.0, xtol=1e-12) if centre > 1e-3 else None
    if root is not None:
        assert root == pytest.approx(centre, rel=1e-7, abs=1e-9)
    assert _half_pull_distance(sbar, n_pos) == pytest.approx(2 * sbar - math.log(n_pos), rel=1e-12, abs=1e-12)


def test_half_pull_check():
    assert check_half_pull_distance(half_pull_distance)
    for wrong in (lambda sbar, num_positives: 2 * sbar + np.log(num_positives),        # the sign of the shift
                  lambda sbar, num_positives: 2 * sbar - np.log(num_positives + 1),    # the anchor counted
                  lambda sbar, num_positives: sbar - np.log(num_positives)):           # sigma_bar^2, not twice it
        res = check_half_pull_distance(wrong)
        assert not res and "expected" in res.message
    assert "not implemented yet" in check_half_pull_distance(todo).message


@pytest.mark.parametrize("spec", [BOUND_RATIO, EXPECTED_BATCH_STATISTICS, HALF_PULL_DISTANCE, RELATIVE_SPREAD_MARGINS])
def test_cases_are_valid_for_any_secret(spec):
    """Every draw gives finite references (no empty class, no zero centred norm)."""
    for k in range(20):
        for case in spec.hidden_cases(f"secret number {k:04d} of the test".encode()):
            assert np.all(np.isfinite(np.asarray(spec.expected(case), dtype=float))), case


# --------------------------------------------------------------------------- figures
def test_plots_return_axes_with_correlation():
    ax = variability_scatter([1.0, 2.0, 3.0], [0.9, 0.8, 0.6], title="x")
    r = np.corrcoef([1.0, 2.0, 3.0], [0.9, 0.8, 0.6])[0, 1]
    assert ax.get_title() == f"x: r = {r:.2f}" and len(ax.texts) == 3
    with pytest.raises(ValueError, match="same shape"):
        variability_scatter([1.0, 2.0], [0.5])
    ax = group_accuracy_bars({"CE": {"easy": 0.9, "hard": 0.5}, "MR2": {"easy": 0.91, "hard": 0.6}},
                             errors={"CE": {"easy": 0.01, "hard": 0.02}, "MR2": {"easy": 0.01, "hard": 0.02}})
    assert len(ax.patches) == 4 and math.isclose(ax.patches[3].get_height(), 0.6)
    with pytest.raises(ValueError, match="at least one method"):
        group_accuracy_bars({})
