"""The contrastive chapter's autograder checks: independent solutions pass, planted mistakes fail helpfully,
stubs report "not implemented yet"; and the chapter's figures."""

import itertools
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.optimize import brentq, minimize_scalar  # noqa: E402

from ncbook import plotting  # noqa: E402
from ncbook.contrastive import cl_risk, collapse_threshold, negative_distribution, optimal_gram  # noqa: E402
from ncbook.exercises import (check_exp_collapse_point, check_multiset_risk, check_one_angle_cosine,  # noqa: E402
                              check_scl_collapse_k1)


def _stub(**kwargs):
    raise NotImplementedError("exercise: demo")


# --------------------------------------------------------------------------- ex-contrastive-1
def _risk(gram, class_probs, k, setting, tau, *, drop_collisions=False):
    """The risk over ordered tuples of negative classes (C^k terms), no multisets."""
    lam = np.asarray(class_probs)
    q = negative_distribution(lam, setting=setting)
    total = 0.0
    for y in range(lam.size):
        for tup in itertools.product(range(lam.size), repeat=k):
            p = np.prod([q[y, c] for c in tup])
            if p:
                inner = sum(np.exp((gram[y, c] - 1) / tau) for c in tup if not (drop_collisions and c == y))
                total += lam[y] * p * np.log1p(inner)
    return total


def test_multiset_risk_reference_passes_and_mistake_fails():
    assert check_multiset_risk(_risk)
    bad = check_multiset_risk(lambda **kw: _risk(**kw, drop_collisions=True))
    assert not bad and "expected" in bad.message and "setting='ucl'" in bad.message
    assert "not implemented yet" in check_multiset_risk(_stub).message


# --------------------------------------------------------------------------- ex-contrastive-2
def _scl_k1_by_bisection(tau, forget_temperature=False):
    """Independent of the closed form: the root of the one-angle derivative at collapse,
    pi1 (1 + rho/2) sigmoid(-2/tau) - rho^2 with rho = 1 - pi1."""
    s = 1 / (1 + math.exp(2 / (1.0 if forget_temperature else tau)))
    return brentq(lambda p: p * (1 + (1 - p) / 2) * s - (1 - p) ** 2, 1 / 3, 1.0, xtol=1e-15)


def test_scl_collapse_k1():
    assert check_scl_collapse_k1(_scl_k1_by_bisection)
    assert abs(_scl_k1_by_bisection(1.0) - 0.6915) < 5e-5   # the point the chapter quotes at tau = 1
    bad = check_scl_collapse_k1(lambda tau: _scl_k1_by_bisection(tau, forget_temperature=True))
    assert not bad and "tau=0.25" in bad.message and "expected" in bad.message
    ucl = check_scl_collapse_k1(lambda tau: 1 / (1 + 2 / (1 + math.exp(2 / tau))))  # the UCL point instead
    assert not ucl and "collapse point" in ucl.message
    res = check_scl_collapse_k1(lambda tau: collapse_threshold(1, setting="scl", num_classes=3, temperature=tau))
    assert not res and "calls ncbook.contrastive.collapse_threshold" in res.message
    assert "not implemented yet" in check_scl_collapse_k1(_stub).message


# --------------------------------------------------------------------------- ex-contrastive-3
def test_exp_collapse_point():
    assert check_exp_collapse_point(lambda k, tau: 1 / (1 + math.exp(-2 / tau)))
    # the InfoNCE k = 1 point in its place: sigmoid' of InfoNCE where the exponential's derivative belongs
    bad = check_exp_collapse_point(lambda k, tau: 1 / (1 + 2 / (1 + math.exp(2 / tau))))
    assert not bad and "k=1, tau=1.0" in bad.message
    grows = check_exp_collapse_point(lambda k, tau: 1 / (1 + math.exp(-2 / tau)) + 1e-3 * math.log(k))
    assert not grows and "k=64" in grows.message            # a k-dependence fails on the k = 64 case
    assert "not implemented yet" in check_exp_collapse_point(_stub).message


# --------------------------------------------------------------------------- ex-contrastive-5
def _one_angle(pi1, k, setting, tau, *, cosine_of_theta=False):
    """Minorities at +-theta from -mu_1: A_12 = -cos(theta), A_23 = cos(2 theta); a grid then a bounded search."""
    probs = [pi1, (1 - pi1) / 2, (1 - pi1) / 2]

    def risk(theta):
        a, b = -math.cos(theta), (math.cos(theta) if cosine_of_theta else math.cos(2 * theta))
        gram = np.array([[1, a, a], [a, 1, b], [a, b, 1.0]])
        try:
            return cl_risk(gram, probs, k, setting=setting, temperature=tau)
        except ValueError:  # not a correlation matrix (the planted mistake leaves the elliptope)
            return math.inf

    grid = np.linspace(0, math.pi, 181)
    i = int(np.argmin([risk(t) for t in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    theta = minimize_scalar(risk, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}).x
    return math.cos(theta) if cosine_of_theta else math.cos(2 * theta)


def test_one_angle_cosine():
    assert check_one_angle_cosine(_one_angle)
    bad = check_one_angle_cosine(lambda **kw: _one_angle(**kw, cosine_of_theta=True))
    assert not bad and "A*_23" in bad.message and "expected" in bad.message
    res = check_one_angle_cosine(lambda pi1, k, setting, tau: optimal_gram([pi1, (1 - pi1) / 2, (1 - pi1) / 2], k,
                                                                           setting=setting, temperature=tau)[1, 2])
    assert not res and "calls ncbook.contrastive.optimal_gram" in res.message
    assert "not implemented yet" in check_one_angle_cosine(_stub).message


def test_one_angle_cosine_asks_what_the_page_does_not_print():
    """The exercise asks for A*_23 at pi_1 = 0.85, tau = 1 (UCL), k = 2 and k = 32: the check covers both (one
    collapsed, one apart), and the chapter's table of A*_23 (pi_1 = 0.9) does not hold them."""
    from ncbook.exercises._contrastive import ONE_ANGLE_COSINE
    cases = list(ONE_ANGLE_COSINE.cases(np.random.default_rng(0)))
    asked = [c for c in cases if c["pi1"] == 0.85 and c["setting"] == "ucl" and c["tau"] == 1.0]
    assert sorted(c["k"] for c in asked) == [2, 32]
    cos = {k: optimal_gram([0.85, 0.075, 0.075], k)[1, 2] for k in (2, 32)}
    assert cos[2] > 1 - 1e-6 and cos[32] < 0.95
    text = (Path(__file__).resolve().parents[1] / "book" / "contrastive_imbalance.md").read_text()
    exercise = text[text.index(":label: ex-contrastive-5"):]
    assert "$\\pi_1 = 0.85$" in exercise and "$k = 2$ to $k = 32$" in exercise
    page = text[:text.index(":label: ex-contrastive-5")]
    assert f"{cos[32]:.4f}" not in page and "experiments.batch_negatives(0.9," in page


# --------------------------------------------------------------------------- figures
def test_risk_profiles_marks_each_minimum_inside_the_axes():
    theta = np.linspace(0, math.pi / 2, 50)
    curves = {"a": (theta - 0.5) ** 2, "b": theta ** 2}
    ax = plotting.risk_profiles(theta, curves, xlabel="theta")
    marked = [line for line in ax.lines if line.get_marker() not in (None, "None", "")]
    assert [float(m.get_xdata()[0]) for m in marked] == [float(theta[np.argmin(v)]) for v in curves.values()]
    assert ax.get_legend() is not None and ax.get_legend().get_bbox_to_anchor() is not None
    with pytest.raises(ValueError, match="curve 'b' has 3 values; x has 50"):
        plotting.risk_profiles(theta, {"b": [1, 2, 3]})
    plt.close("all")


def test_collapse_curves_keeps_the_legend_off_the_data():
    fig, ax = plt.subplots()
    plotting.collapse_curves([1, 2, 3], {"curve": [0.1, 0.5, 0.9]}, ax, hlines={"bound": 0.95})
    legend = ax.get_legend()
    fig.canvas.draw()
    box = legend.get_window_extent()
    assert box.x0 >= ax.get_window_extent().x1 - 1  # to the right of the axes
    plt.close("all")
