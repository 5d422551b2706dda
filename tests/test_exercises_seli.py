"""Autograder checks of the SELI chapter: the chapter's solutions pass, planted mistakes fail helpfully,
stubs report "not implemented yet", and every reference agrees with an independent derivation."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.optimize import minimize_scalar

from ncbook import geometry, ufm
from ncbook.exercises import (check_collapse_lambda, check_etf_cost_ratio, check_log_mean_ce,
                              check_minority_norm_ratio_limit, check_minority_orthogonal_ratio, check_step_multipliers)
from ncbook.exercises._seli import ETF_COST_RATIO, MINORITY_NORM_RATIO_LIMIT, MINORITY_ORTHOGONAL_RATIO, STEP_MULTIPLIERS
from ncbook.geometry import seli_step_closed_form, seli_step_limits
from ncbook.ufm import log_mean_ce


def stub(**kwargs):
    raise NotImplementedError


# --------------------------------------------------------------------------- ex-seli-1: ETF cost ratio
def etf_cost_ratio(counts):  # the chapter's solution
    n_c = np.asarray(counts, dtype=float)
    c, n = n_c.size, n_c.sum()
    p = np.eye(c) - 1 / c
    seli_cost = np.sqrt(np.linalg.eigvalsh(p @ np.diag(n_c) @ p)[1:]).sum()  # ||Z_hat||_*: drop the zero eigenvalue
    return (c - 1) * np.sqrt(n / c) / seli_cost


def test_etf_cost_ratio_check():
    assert check_etf_cost_ratio(etf_cost_ratio)

    def trace_not_nuclear(counts):  # SELI's cost as tr(PDP) instead of the sum of its square roots
        n_c = np.asarray(counts, dtype=float)
        c = n_c.size
        p = np.eye(c) - 1 / c
        return (c - 1) * np.sqrt(n_c.sum() / c) / np.trace(p @ np.diag(n_c) @ p)

    res = check_etf_cost_ratio(trace_not_nuclear)
    assert not res and "counts=[50 50  5  5]" in res.message and "expected 1.08" in res.message
    assert "not implemented yet" in check_etf_cost_ratio(stub).message


def _svm_objective_of_etf_classifier(counts):
    """Best objective with a simplex-ETF classifier, found numerically over the scale (features w_c / a)."""
    c = len(counts)
    vals, vecs = np.linalg.eigh(np.eye(c) - 1 / c)
    etf = vecs[:, 1:]                                              # rows with Gram P

    def objective(a):
        w, m = np.sqrt(a) * etf, etf / np.sqrt(a)
        z = m @ w.T
        margins = (np.diag(z)[:, None] - z)[~np.eye(c, dtype=bool)]
        assert np.allclose(margins, 1.0)                           # feasible, every margin binds
        return 0.5 * ((w ** 2).sum() + (np.asarray(counts)[:, None] * m ** 2).sum())

    return minimize_scalar(objective, bounds=(1e-4, 1e4), method="bounded", options={"xatol": 1e-10}).fun


def _svm_objective_of_seli(counts):
    """(||W||^2 + ||H||^2) / 2 of the sample-level SELI factors W = V L^(1/2), H = U L^(1/2) (unit margins)."""
    c = len(counts)
    labels = np.repeat(np.arange(c), counts)
    z = geometry.sel_matrix(labels, c).T                             # (n, C)
    u, s, vt = np.linalg.svd(z, full_matrices=False)
    u, s, v = u[:, :c - 1], s[:c - 1], vt[:c - 1].T
    w, h = v * np.sqrt(s), u * np.sqrt(s)
    logits = h @ w.T
    true = logits[np.arange(labels.size), labels][:, None]
    margins = (true - logits)[np.arange(c)[None, :] != labels[:, None]]
    assert np.allclose(margins, 1.0)
    return 0.5 * ((w ** 2).sum() + (h ** 2).sum())


@pytest.mark.parametrize("counts", [[50, 50, 5, 5], [7, 3], [9, 9, 9], [120, 40, 12, 3, 1]])
def test_etf_cost_ratio_reference_against_a_numerical_optimum(counts):
    expected = _svm_objective_of_etf_classifier(counts) / _svm_objective_of_seli(counts)
    assert ETF_COST_RATIO.expected({"counts": np.array(counts)}) == pytest.approx(expected, rel=1e-8)


def test_etf_cost_ratio_is_at_least_one_and_one_exactly_for_the_etf_cases():
    rng = np.random.default_rng(3)
    for _ in range(50):
        counts = rng.integers(1, 500, int(rng.integers(2, 10)))
        assert ETF_COST_RATIO.expected({"counts": counts}) >= 1 - 1e-12      # SELI solves the SVM
    assert ETF_COST_RATIO.expected({"counts": np.array([4, 4, 4, 4])}) == pytest.approx(1, abs=1e-12)
    assert ETF_COST_RATIO.expected({"counts": np.array([1, 999])}) == pytest.approx(1, abs=1e-12)
    assert ETF_COST_RATIO.expected({"counts": np.array([500, 500, 5, 5])}) > 1.1


# --------------------------------------------------------------------------- ex-seli-2: orthogonal minorities
def orthogonal_ratio(num_majority, num_minority):  # the chapter's solution
    c = num_majority + num_minority
    chi = (c / num_majority) ** 2           # <w_min, w'_min> = 0  <=>  sqrt(chi) C_maj / C = 1
    return (chi * c - num_majority) / num_minority


def test_minority_orthogonal_ratio_check():
    assert check_minority_orthogonal_ratio(orthogonal_ratio)

    def no_square(num_majority, num_minority):  # sqrt(chi) = C / C_maj read as chi = C / C_maj
        c = num_majority + num_minority
        return (c / num_majority * c - num_majority) / num_minority

    res = check_minority_orthogonal_ratio(no_square)
    assert not res and "num_majority=1, num_minority=2" in res.message and "expected 13" in res.message
    assert "<w_min, w'_min> = 0" in res.message                       # the hint
    assert "not implemented yet" in check_minority_orthogonal_ratio(stub).message

    def by_the_closed_form(num_majority, num_minority):
        return seli_step_closed_form(7.0, num_majority, num_minority)["w_cos_min_min"]

    res = check_minority_orthogonal_ratio(by_the_closed_form)
    assert not res and "calls ncbook.geometry.seli_step_closed_form" in res.message


@pytest.mark.parametrize("split, counts", [((2, 2), [7, 7, 1, 1]), ((1, 2), [13, 1, 1]),
                                           ((3, 2), [49, 49, 49, 9, 9]), ((5, 5), [7] * 5 + [1] * 5)])
def test_at_the_orthogonal_ratio_the_svd_route_has_orthogonal_minority_classifiers(split, counts):
    r = MINORITY_ORTHOGONAL_RATIO.expected({"num_majority": split[0], "num_minority": split[1]})
    assert r == pytest.approx(counts[0] / counts[-1], rel=1e-12)
    g = geometry.seli_geometry(counts, method="svd").classifier_gram
    assert abs(g[-1, -2]) < 1e-10 * g[-1, -1]
    below = geometry.seli_geometry([counts[0] - 1] * split[0] + [counts[-1]] * split[1]).classifier_gram
    assert below[-1, -2] < 0                                          # obtuse below the ratio


# --------------------------------------------------------------------------- ex-seli-3: the large-R limit
def norm_ratio_limit(num_majority, num_minority):  # the chapter's solution
    a, b = num_majority, num_minority
    c = a + b
    rho = np.sqrt(b / c)                    # sqrt(chi / R) -> sqrt(C_min / C)
    return np.sqrt((rho * a / (c * b)) / (1 - 1 / a + rho * b / (c * a)))


def test_minority_norm_ratio_limit_check():
    assert check_minority_norm_ratio_limit(norm_ratio_limit)

    def squared(num_majority, num_minority):  # the ratio of squared norms
        return norm_ratio_limit(num_majority, num_minority) ** 2

    res = check_minority_norm_ratio_limit(squared)
    assert not res and "num_majority=2, num_minority=2" in res.message and "expected 0.511" in res.message
    assert "not implemented yet" in check_minority_norm_ratio_limit(stub).message
    res = check_minority_norm_ratio_limit(lambda num_majority, num_minority: seli_step_limits(
        num_majority, num_minority)["w_norm_ratio"])
    assert not res and "seli_step_limits" in res.message


@pytest.mark.parametrize("split", [(2, 2), (1, 3), (4, 1), (3, 7), (10, 2)])
def test_the_limit_is_the_closed_form_at_large_ratio(split):
    limit = MINORITY_NORM_RATIO_LIMIT.expected({"num_majority": split[0], "num_minority": split[1]})
    far = seli_step_closed_form(1e16, *split)["w_norm_ratio"]
    assert far == pytest.approx(limit, rel=1e-6)
    if split[0] == 1:
        assert limit == pytest.approx(1 / split[1], rel=1e-12)       # one majority: 1 / C_min


# --------------------------------------------------------------------------- ex-seli-4: log mean CE
def my_log_mean_ce(logits, labels):  # log-sum-exp of log CE_i, exact for separated logits
    others = logits.masked_fill(F.one_hot(labels, logits.shape[1]).bool(), -float("inf"))
    s = torch.logsumexp(others - logits.gather(1, labels[:, None]), dim=1)  # log sum_j exp(z_j - z_y)
    log_ce = torch.where(s < -30, s, torch.log(F.softplus(s)))              # log log(1 + e^s)
    return torch.logsumexp(log_ce, 0) - np.log(len(labels))


def test_log_mean_ce_check():
    assert check_log_mean_ce(my_log_mean_ce)

    def naive(logits, labels):  # underflows to log(0) = -inf on separated logits
        return torch.log(F.cross_entropy(logits, labels))

    res = check_log_mean_ce(naive)
    assert not res and "-inf" in res.message and "nan" not in res.message
    assert "expected -800" in res.message and "non-finite" in res.message
    assert not check_log_mean_ce(lambda logits, labels: log_mean_ce(logits, labels))


def test_renamed_parameter_names_the_expected_signature():
    def renamed(logits, y):
        return my_log_mean_ce(logits, y)

    res = check_log_mean_ce(renamed)
    assert not res and "renamed(logits, y)" in res.message and "(logits, labels)" in res.message


# --------------------------------------------------------------------------- ex-seli-4: SELI's multipliers
def step_multipliers(ratio, num_majority, num_minority):  # the chapter's solution
    a, b = num_majority, num_minority
    c = a + b
    chi = (ratio * b + a) / c
    return np.array([1 / (np.sqrt(ratio) * a) - b / (np.sqrt(chi) * c * a),
                     1 / b - a / (np.sqrt(chi) * c * b),
                     1 / (np.sqrt(chi) * c)])


def test_step_multipliers_check():
    assert check_step_multipliers(step_multipliers)

    def classifier_gram(ratio, num_majority, num_minority):  # G_W's entries (no sqrt R -> 1 / sqrt R substitution)
        a, b = num_majority, num_minority
        c = a + b
        chi = (ratio * b + a) / c
        return -np.array([-np.sqrt(ratio) / a + np.sqrt(chi) * b / (c * a), -1 / b + np.sqrt(chi) * a / (c * b),
                          -np.sqrt(chi) / c])

    res = check_step_multipliers(classifier_gram)
    assert not res and "ratio=10, num_majority=2, num_minority=2" in res.message
    assert "(maj-maj, min-min, maj-min)" in res.message                         # the hint names the order
    assert "not implemented yet" in check_step_multipliers(stub).message
    res = check_step_multipliers(lambda ratio, num_majority, num_minority: -geometry.seli_geometry(
        [ratio] * num_majority + [1] * num_minority).mean_gram[[0, -1, 0], [1, -2, -1]])
    assert not res and "seli_geometry" in res.message


@pytest.mark.parametrize("ratio, split", [(10, (2, 2)), (1, (3, 2)), (37, (3, 4)), (400, (2, 5))])
def test_step_multipliers_are_the_sample_level_kkt_multipliers(ratio, split):
    """Independently of the class route: the multipliers of the sample-level certificate, Ups = U V^T (the SVD of the
    SEL matrix), read constraint by constraint, take the three values of the reference and are all positive."""
    counts = [ratio] * split[0] + [1] * split[1]
    c = len(counts)
    labels = np.repeat(np.arange(c), counts)
    u, _, vt = np.linalg.svd(geometry.sel_matrix(labels, c).T, full_matrices=False)
    ups = u[:, :c - 1] @ vt[:c - 1]                                    # (n, C), row i: minus the multipliers of sample i
    maj, mino = labels < split[0], labels >= split[0]
    expected = STEP_MULTIPLIERS.expected({"ratio": ratio, "num_majority": split[0], "num_minority": split[1]})
    found = [-ups[maj][:, 1 if split[0] > 1 else 0][labels[maj] != 1].max(), -ups[mino][:, c - 1][labels[mino] != c - 1].max(),
             -ups[maj][:, c - 1].max()]
    assert found == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert np.all(expected > 0) and expected[2] == pytest.approx(1 / (c * np.sqrt((ratio * split[1] + split[0]) / c)))


def test_step_multipliers_at_extreme_imbalance_keep_only_the_minority_pair():
    near, far = (STEP_MULTIPLIERS.expected({"ratio": r, "num_majority": 2, "num_minority": 2}) for r in (10**4, 10**6))
    assert far[1] == pytest.approx(1 / 2, abs=1e-3) and far[0] < 1e-3 and far[2] < 1e-3
    assert near[[0, 2]] / far[[0, 2]] == pytest.approx([10.0, 10.0], rel=1e-2)   # both vanish like R^(-1/2)


# --------------------------------------------------------------------------- ex-seli-5: the collapse lambda
def collapse_lambda(counts, lo=1e-4, hi=1e-1):  # the chapter's solution: bisection on a log scale
    def collapsed(lam):
        w = ufm.ridge_optimum(counts, lam).classifiers
        norms = np.linalg.norm(w, axis=1)               # a vanished row is ~1e-16 of the others, not always 0
        return norms[2:].min() <= 1e-9 * norms.max() or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6

    while hi / lo > 1.2:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if collapsed(mid) else (mid, hi)
    return hi


def _grid_collapse_lambda(counts, grid=np.geomspace(1e-4, 1e-1, 40)):
    """An independent solution: the first grid point where the minority classifiers coincide."""
    for lam in grid:
        w = ufm.ridge_optimum(counts, lam).classifiers
        norms = np.linalg.norm(w, axis=1)
        if norms[2:].min() <= 1e-9 * norms.max() or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6:
            return lam
    return np.nan


def test_check_collapse_lambda():
    assert check_collapse_lambda(collapse_lambda)
    assert check_collapse_lambda(_grid_collapse_lambda)
    res = check_collapse_lambda(lambda counts: 4 * collapse_lambda(counts))   # too large
    assert not res and "too large" in res.message
    res = check_collapse_lambda(lambda counts: collapse_lambda(counts) / 4)   # too small
    assert not res and "do not coincide" in res.message
    assert "not implemented yet" in check_collapse_lambda(stub).message
