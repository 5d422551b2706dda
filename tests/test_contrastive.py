"""Tests of ncbook.contrastive: the convex program, the risk and the exact collapse points."""

import itertools
import math
import warnings

import numpy as np
import pytest

from ncbook.contrastive import (
    PAPER_THRESHOLDS,
    cl_risk,
    cl_risk_gradient,
    class_means_from_gram,
    collapse_margin,
    collapse_threshold,
    gap_certificate,
    negative_distribution,
    negative_multisets,
    num_multiset_terms,
    optimal_gram,
    solve_gram,
)
from ncbook._status import InaccurateSolutionWarning, SolverError
from ncbook.contrastive._solvers import certified_threshold
from ncbook.geometry import etf_gram

# (lambda, k, setting, t, a = A_01, b = A_12, S*) -- the spec's reference table
REFERENCE = [
    ((0.6, 0.2, 0.2), 1, "ucl", 1.0, -0.751480, 0.129445, 0.40976758),
    ((0.6, 0.2, 0.2), 1, "scl", 1.0, -0.846688, 0.433761, 0.17679564),
    ((0.6, 0.2, 0.2), 1, "ucl", 0.5, -0.638347, -0.185026, 0.32992136),
    ((0.9, 0.05, 0.05), 1, "ucl", 1.0, -1.0, 1.0, 0.59122773),
]


def _naive_risk(gram, lam, k, setting, t):
    """Average over all C**k ordered tuples of negatives (no multiset reduction)."""
    lam = np.asarray(lam)
    q = negative_distribution(lam, setting=setting)
    total = 0.0
    for y in range(lam.size):
        for tup in itertools.product(range(lam.size), repeat=k):
            p = np.prod([q[y, c] for c in tup])
            if p == 0:
                continue
            total += lam[y] * p * np.log1p(sum(np.exp((gram[y, c] - 1.0) / t) for c in tup))
    return total


@pytest.mark.parametrize("lam, k, setting, t, a, b, s", REFERENCE)
def test_reference_values(lam, k, setting, t, a, b, s):
    res = solve_gram(lam, k, setting=setting, temperature=t)
    assert res.status == "optimal" and res.gap < 1e-9
    assert res.solution[0, 1] == pytest.approx(a, abs=2e-6)
    assert res.solution[0, 2] == pytest.approx(a, abs=2e-6)  # C = 3: an isosceles triangle
    assert res.solution[1, 2] == pytest.approx(b, abs=2e-6)
    assert res.objective == pytest.approx(s, abs=1e-8)
    assert cl_risk(res.solution, lam, k, setting=setting, temperature=t) == pytest.approx(s, abs=1e-8)


@pytest.mark.parametrize("setting, value", [("ucl", 0.36532458), ("scl", 0.20141328)])
def test_balanced_c3_objective(setting, value):
    assert cl_risk(etf_gram(3), [1 / 3] * 3, 1, setting=setting) == pytest.approx(value, abs=1e-8)


@pytest.mark.parametrize("c, k", [(3, 1), (4, 2), (5, 3), (6, 1)])
@pytest.mark.parametrize("setting", ["ucl", "scl"])
def test_balanced_gives_simplex_etf(c, k, setting):
    np.testing.assert_allclose(optimal_gram(np.full(c, 1 / c), k, setting=setting), etf_gram(c), atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_at_most_c_minus_1_and_not_etf(seed):
    lam = np.random.default_rng(seed).dirichlet(np.ones(5))
    a = optimal_gram(lam, 2, setting="ucl")
    vals = np.linalg.eigvalsh(a)
    assert vals[0] < 1e-7 * vals[-1]  # rank <= C - 1
    assert vals[0] > -1e-9  # PSD
    assert np.abs(a - etf_gram(5)).max() > 1e-2  # imbalanced: not an ETF


def test_theorem3_equal_probability_classes_share_inner_products():
    a = optimal_gram([0.4, 0.3, 0.15, 0.15], 2, setting="scl")
    assert a[0, 2] == pytest.approx(a[0, 3], abs=1e-8)
    assert a[1, 2] == pytest.approx(a[1, 3], abs=1e-8)
    assert abs(a[0, 2] - a[1, 2]) > 1e-2  # different classes do differ


@pytest.mark.parametrize("setting", ["ucl", "scl"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_multiset_reduction_matches_ordered_tuples(setting, k):
    rng = np.random.default_rng(k)
    m = rng.standard_normal((4, 3))
    gram = (m / np.linalg.norm(m, axis=1, keepdims=True)) @ (m / np.linalg.norm(m, axis=1, keepdims=True)).T
    lam = rng.dirichlet(np.ones(4))
    assert cl_risk(gram, lam, k, setting=setting, temperature=0.7) == pytest.approx(_naive_risk(gram, lam, k, setting, 0.7), rel=1e-12)


def test_multisets_weights_and_counts():
    counts, w = negative_multisets([0.2, 0.3, 0.5], 3)
    assert counts.shape == (10, 3) and np.all(counts.sum(axis=1) == 3)
    assert w.sum() == pytest.approx(1.0)
    assert w[np.all(counts == [1, 1, 1], axis=1)][0] == pytest.approx(6 * 0.2 * 0.3 * 0.5)
    assert num_multiset_terms(20, 4) == 177100
    assert num_multiset_terms(20, 4, setting="scl") == 20 * math.comb(22, 4)


@pytest.mark.parametrize("psi, k", [("infonce", 3), ("exp", 3), ("infonce", math.inf)])
@pytest.mark.parametrize("setting", ["ucl", "scl"])
def test_gradient_matches_finite_differences(psi, k, setting):
    rng = np.random.default_rng(3)
    m = rng.standard_normal((4, 4))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    gram, lam, h = m @ m.T, np.array([0.4, 0.3, 0.2, 0.1]), 1e-6
    g = cl_risk_gradient(gram, lam, k, setting=setting, temperature=0.8, psi=psi)
    for i, j in [(0, 1), (1, 3), (2, 3)]:
        e = np.zeros((4, 4))
        e[i, j] = e[j, i] = h
        fd = (cl_risk(gram + e, lam, k, setting=setting, temperature=0.8, psi=psi)
              - cl_risk(gram - e, lam, k, setting=setting, temperature=0.8, psi=psi)) / (2 * h)
        assert 2 * g[i, j] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_large_k_limit_of_the_multiset_risk():
    lam, gram = [0.7, 0.3], np.array([[1.0, -0.4], [-0.4, 1.0]])
    s_inf = cl_risk(gram, lam, math.inf)
    errs = [abs(cl_risk(gram, lam, k) - math.log(k) - s_inf) for k in (25, 100, 400)]
    assert errs[2] < errs[1] < errs[0] < 0.1  # O(1/k) convergence
    assert errs[2] < 0.3 * errs[0]


def test_solvers_agree():
    lam = [0.5, 0.25, 0.15, 0.1]
    newton = solve_gram(lam, 2, setting="ucl")
    bm = solve_gram(lam, 2, setting="ucl", method="bm")
    clarabel = solve_gram(lam, 2, setting="ucl", solver="CLARABEL", tol=1e-12)
    assert bm.status == newton.status == clarabel.status == "optimal"
    np.testing.assert_allclose(bm.solution, newton.solution, atol=1e-6)
    np.testing.assert_allclose(clarabel.solution, newton.solution, atol=1e-5)
    assert clarabel.objective == pytest.approx(newton.objective, abs=1e-8)


def test_gap_certificate_separates_optimum_from_etf():
    lam = [0.6, 0.2, 0.2]
    res = solve_gram(lam, 2)
    g = cl_risk_gradient(etf_gram(3), lam, 2)
    gap_etf = gap_certificate(g, etf_gram(3))
    true_gap = cl_risk(etf_gram(3), lam, 2) - res.objective
    assert res.gap < 1e-9
    assert gap_etf >= true_gap > 1e-3  # a valid upper bound, and the ETF is not optimal


@pytest.mark.parametrize("k, value", [(1, 0.807490), (2, 0.840240), (4, 0.869292), (math.inf, 0.924020)])
def test_ucl_collapse_points(k, value):
    assert collapse_threshold(k, setting="ucl") == pytest.approx(value, abs=1e-6)
    assert collapse_threshold(k, setting="ucl", num_classes=7) == pytest.approx(value, abs=1e-6)
    assert collapse_threshold(k, setting="ucl") < PAPER_THRESHOLDS["ucl"]


def test_ucl_k1_closed_form_and_temperature():
    for t in (0.5, 1.0, 2.0):
        sig = 1 / (1 + math.exp(2 / t))
        assert collapse_threshold(1, temperature=t) == pytest.approx(1 / (1 + 2 * sig), abs=1e-10)
    assert collapse_threshold(12) < 0.9 < collapse_threshold(13)  # the real-network choice


@pytest.mark.parametrize("c, value", [(3, 0.691540), (5, 0.682607)])
def test_scl_collapse_points(c, value):
    assert collapse_threshold(1, setting="scl", num_classes=c) == pytest.approx(value, abs=1e-6)
    assert collapse_threshold(1, setting="scl", num_classes=c) < PAPER_THRESHOLDS["scl"]


@pytest.mark.parametrize("setting, c, k, t, psi", [("ucl", 3, 2, 1.0, "infonce"), ("scl", 4, 2, 1.0, "infonce"),
                                                  ("ucl", 3, 1, 0.5, "infonce"), ("ucl", 3, 2, 1.0, "exp")])
def test_collapse_point_matches_the_convex_program(setting, c, k, t, psi):
    th = collapse_threshold(k, setting=setting, num_classes=c, temperature=t, psi=psi)

    def b(lam1):
        lam = np.r_[lam1, np.full(c - 1, (1 - lam1) / (c - 1))]
        return optimal_gram(lam, k, setting=setting, temperature=t, psi=psi)[1, 2]

    assert b(th - 0.005) < 1 - 1e-4  # just below: the minorities are apart
    assert b(th + 0.005) > 1 - 1e-6  # just above: collapsed
    assert collapse_margin(th - 0.005, k, setting=setting, num_classes=c, temperature=t, psi=psi) < 0


def test_class_means_from_gram():
    a = optimal_gram([0.5, 0.3, 0.2], 1)
    m = class_means_from_gram(a)
    assert m.shape == (3, 2)
    np.testing.assert_allclose(m @ m.T, a, atol=1e-10)
    assert class_means_from_gram(a, dim=5).shape == (3, 5)
    with pytest.raises(ValueError, match="dim must be an integer >= rank"):
        class_means_from_gram(a, dim=1)
    with pytest.raises(ValueError, match="positive semidefinite"):
        class_means_from_gram(np.array([[1.0, 2.0], [2.0, 1.0]]))


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="must sum to 1"):
        optimal_gram([0.5, 0.2, 0.2], 1)
    with pytest.raises(ValueError, match="strictly positive"):
        optimal_gram([0.5, 0.5, 0.0], 1)
    with pytest.raises(ValueError, match=r"k \(negatives per anchor\) must be an integer >= 1"):
        optimal_gram([0.5, 0.5], 0)
    with pytest.raises(ValueError, match="setting must be one of"):
        optimal_gram([0.5, 0.5], 1, setting="supervised")
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        solve_gram([0.6, 0.2, 0.2], 1, max_iter=0)
    with pytest.raises(ValueError, match="unit diagonal"):
        cl_risk(2 * np.eye(2), [0.5, 0.5], 1)
    with pytest.raises(ValueError, match="num_classes >= 3"):
        collapse_threshold(1, setting="scl")
    with pytest.raises(ValueError, match="terms"):
        optimal_gram(np.full(30, 1 / 30), 8)


@pytest.mark.parametrize("call", [
    lambda **kw: cl_risk(etf_gram(2), [0.5, 0.5], 1, **kw),
    lambda **kw: cl_risk_gradient(etf_gram(2), [0.5, 0.5], 1, **kw),
    lambda **kw: solve_gram([0.5, 0.5], 1, **kw),
    lambda **kw: optimal_gram([0.5, 0.5], 1, **kw),
    lambda **kw: collapse_margin(0.9, 1, **kw),
    lambda **kw: collapse_threshold(1, **kw),
])
def test_temperature_is_the_one_keyword(call):
    """One word per concept: the temperature is ``temperature`` (errors name it), never ``t``."""
    with pytest.raises(ValueError, match="temperature must be a positive finite number; got 0.0"):
        call(temperature=0.0)
    with pytest.raises(TypeError, match="'t'"):
        call(t=1.0)


# ---- status discipline: one vocabulary on every route ---------------------------------------


def _min_eig(a):
    return float(np.linalg.eigvalsh(a)[0])


def test_newton_out_of_iterations_is_inaccurate_with_a_warning():
    with pytest.warns(InaccurateSolutionWarning, match=r"solve_gram \(newton\).*duality gap .* > 1e-09; raise max_iter"):
        res = solve_gram([0.6, 0.2, 0.2], 1, max_iter=3)
    assert res.status == "inaccurate" and res.iterations <= 3
    assert res.gap > certified_threshold(1e-10)


def test_clarabel_is_certified_like_every_route():
    # at the default tol (1e-10), Clarabel stops at a certified gap of ~3e-8: above max(tol, 1e-9)
    with pytest.warns(InaccurateSolutionWarning, match="CLARABEL"):
        res = solve_gram([0.6, 0.2, 0.2], 1, solver="CLARABEL")
    assert res.status == "inaccurate" and res.gap > 1e-8
    assert (res.method, res.solver) == ("exact", "CLARABEL")
    # at a tolerance it can certify, it is optimal, and it agrees with the reference table
    with warnings.catch_warnings():
        warnings.simplefilter("error", InaccurateSolutionWarning)
        ok = solve_gram([0.6, 0.2, 0.2], 1, solver="CLARABEL", tol=1e-12)
    assert ok.status == "optimal" and ok.gap <= 1e-9
    assert ok.solution[1, 2] == pytest.approx(0.129445, abs=1e-5)


def test_scs_loose_answer_is_projected_psd_and_recertified():
    from ncbook.contrastive._solvers import _solve_cvxpy

    lam = np.array([0.6, 0.2, 0.2])
    raw, _, _ = _solve_cvxpy(lam, 1, "ucl", 1.0, "infonce", "multiset", "SCS", 1e-3, None)
    assert _min_eig(raw) < -1e-6  # SCS's own answer is indefinite (-3e-5): not a correlation matrix
    res = solve_gram(lam, 1, solver="SCS", tol=1e-3)
    assert _min_eig(res.solution) >= -1e-12
    np.testing.assert_allclose(np.diag(res.solution), 1.0)
    np.testing.assert_allclose(res.solution, res.solution.T)
    assert class_means_from_gram(res.solution).shape[0] == 3  # used to raise "not PSD"
    # the gap is certified at the projected matrix, and it is what decides the status
    assert res.gap == pytest.approx(gap_certificate(cl_risk_gradient(res.solution, lam, 1), res.solution))
    assert res.status == ("optimal" if res.gap <= 1e-3 else "inaccurate")
    assert cl_risk(res.solution, lam, 1) - 0.40976758 <= res.gap + 1e-12  # the bound holds against S*


def test_scs_honours_max_iter():
    with pytest.warns(InaccurateSolutionWarning):
        res = solve_gram([0.6, 0.2, 0.2], 1, solver="SCS", tol=1e-3, max_iter=5)
    assert res.iterations <= 5  # 175 ran before
    assert res.status == "inaccurate"


@pytest.mark.parametrize("kwargs, method, solver", [
    ({}, "exact", "newton"),
    ({"method": "bm"}, "exact_bm", "bm"),
    ({"method": "large_k"}, "large_k", "newton"),
    ({"method": "large_k", "solver": "bm"}, "large_k", "bm"),
])
def test_method_and_solver_name_the_route(kwargs, method, solver):
    res = solve_gram([0.5, 0.3, 0.2], 2, **kwargs)
    assert res.method == ("bm" if method == "exact_bm" else method)
    assert res.solver == solver
    assert res.status == "optimal" and res.gap <= 1e-9


def test_exact_route_beyond_newton_size_uses_bm(monkeypatch):
    import ncbook.contrastive._program as program

    monkeypatch.setattr(program, "_NEWTON_MAX_CLASSES", 2)
    res = solve_gram([0.5, 0.3, 0.2], 1)
    assert (res.method, res.solver) == ("exact", "bm")


def test_no_solution_raises_solver_error(monkeypatch):
    import ncbook.contrastive._solvers as solvers

    monkeypatch.setattr(solvers, "_solve_newton", lambda risk, c, **kw: (np.full((c, c), np.nan), 1, "max_iter"))
    with pytest.raises(SolverError, match="no usable solution"):
        solve_gram([0.6, 0.2, 0.2], 1)
    assert issubclass(SolverError, RuntimeError)


def test_nearest_correlation_projection_is_feasible():
    from ncbook.contrastive._solvers import _feasible

    bad = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])  # indefinite
    assert _min_eig(bad) < -0.5
    fixed, projected = _feasible(bad)
    assert projected and _min_eig(fixed) >= -1e-12
    np.testing.assert_allclose(np.diag(fixed), 1.0)
    good = optimal_gram([0.5, 0.3, 0.2], 1)
    same, projected = _feasible(good)
    assert not projected and np.array_equal(same, good)


@pytest.mark.parametrize("setting", ["ucl", "scl"])
def test_sparse_hessian_matches_finite_differences(setting):
    from ncbook.contrastive._objective import MultisetRisk

    rng = np.random.default_rng(5)
    m = rng.standard_normal((4, 4))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    a, lam, h = m @ m.T, np.array([0.4, 0.3, 0.2, 0.1]), 1e-5
    risk = MultisetRisk(lam, 3, setting, 0.8)
    hess = risk.hess(a)
    for y, c1, c2 in [(0, 1, 2), (2, 3, 3), (1, 0, 3)]:
        e = np.zeros((4, 4))
        e[y, c2] = h
        fd = (risk.grad(a + e)[1][y, c1] - risk.grad(a - e)[1][y, c1]) / (2 * h)
        assert hess[y, c1, c2] == pytest.approx(fd, rel=1e-6, abs=1e-10)


# ---- the UFM for the contrastive risk -------------------------------------------------------

import torch  # noqa: E402

from ncbook.ufm import contrastive_ufm_risk, fit_contrastive_ufm  # noqa: E402


def _naive_ufm_risk(h, labels, k, setting, t):
    h = h / np.linalg.norm(h, axis=1, keepdims=True)
    n, total = len(labels), 0.0
    for i in range(n):
        pos = [p for p in range(n) if labels[p] == labels[i]]
        neg = list(range(n)) if setting == "ucl" else [j for j in range(n) if labels[j] != labels[i]]
        for p in pos:
            for tup in itertools.product(neg, repeat=k):
                total += np.log1p(sum(np.exp((h[i] @ h[j] - h[i] @ h[p]) / t) for j in tup)) / (
                    n * len(pos) * len(neg) ** k)
    return total


@pytest.mark.parametrize("setting", ["ucl", "scl"])
def test_ufm_risk_matches_naive_loop(setting):
    torch.set_num_threads(1)
    h = np.random.default_rng(0).standard_normal((5, 3))
    labels = np.array([0, 0, 0, 1, 2])
    got = contrastive_ufm_risk(torch.tensor(h), torch.tensor(labels), 2, setting=setting, temperature=0.8)
    assert float(got) == pytest.approx(_naive_ufm_risk(h, labels, 2, setting, 0.8), rel=1e-12)


@pytest.mark.parametrize("setting, k", [("ucl", 2), ("scl", 1)])
def test_ufm_gradient_descent_lands_on_the_convex_optimum(setting, k):
    torch.set_num_threads(1)
    res = fit_contrastive_ufm([6, 2, 2], k, setting=setting, steps=5000, lr=1.0)
    ref = solve_gram([0.6, 0.2, 0.2], k, setting=setting)
    assert res.status == "optimal"
    np.testing.assert_allclose(res.class_gram, ref.solution, atol=1e-6)  # includes the unit diagonal
    assert res.objective == pytest.approx(ref.objective, abs=1e-9)
