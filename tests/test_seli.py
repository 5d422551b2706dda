"""SEL matrix, SELI geometry and the STEP closed forms (Thrampoulidis et al., NeurIPS 2022)."""

import numpy as np
import pytest

from ncbook.geometry import (
    etf_gram,
    frobenius_distance,
    sel_matrix,
    seli_distances,
    seli_geometry,
    seli_step_closed_form,
    seli_step_limits,
    simplex_etf,
)


def _step(ratio, k_maj, k_min, n_min=1):
    return np.array([ratio * n_min] * k_maj + [n_min] * k_min)


def _closed_form_from_geometry(geo, k_maj):
    """Norm ratios and cosines read off the Grams (a naive reference for the closed forms)."""
    out = {}
    for p, g in (("w", geo.classifier_gram), ("h", geo.mean_gram)):
        norms = np.sqrt(np.diag(g))
        cos = g / np.outer(norms, norms)
        c = g.shape[0]
        out[f"{p}_norm_ratio"] = norms[-1] / norms[0]
        out[f"{p}_cos_maj_maj"] = cos[0, 1] if k_maj > 1 else np.nan
        out[f"{p}_cos_min_min"] = cos[c - 1, c - 2] if c - k_maj > 1 else np.nan
        out[f"{p}_cos_maj_min"] = cos[0, c - 1]
    return out


def test_sel_matrix_by_hand():
    z = sel_matrix([0, 2, 2, 1], 3)
    expected = np.array([[2, -1, -1, -1], [-1, -1, -1, 2], [-1, 2, 2, -1]]) / 3
    np.testing.assert_allclose(z, expected, atol=1e-15)
    assert z.shape == (3, 4)  # paper shape (C, n)
    np.testing.assert_allclose(z.sum(axis=0), 0, atol=1e-15)


def test_sel_matrix_rejects_bad_input():
    with pytest.raises(ValueError, match="num_classes = 3"):
        sel_matrix([0, 3], 3)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        sel_matrix([0, 0], 1)
    with pytest.raises(TypeError, match="must hold integers"):
        sel_matrix(np.array([0.0, 1.0]), 2)


def test_spec_table():
    table = {
        1: (1.0000, -0.3333, -0.3333, -0.3333, 1.0000),
        10: (0.7079, -0.4590, 0.0794, -0.3821, 1.5138),
        100: (0.5796, -0.4757, 0.5607, -0.4523, 2.5066),
    }
    keys = ("w_norm_ratio", "w_cos_maj_maj", "w_cos_min_min", "w_cos_maj_min", "h_norm_ratio")
    for ratio, row in table.items():
        cf = seli_step_closed_form(ratio, 2, 2)
        np.testing.assert_allclose([cf[k] for k in keys], row, atol=6e-5)
        geo = seli_geometry(_step(ratio, 2, 2, n_min=5), method="svd")
        ref = _closed_form_from_geometry(geo, 2)
        for k in keys:
            assert abs(cf[k] - ref[k]) < 1e-12, (ratio, k)


@pytest.mark.parametrize("seed", range(4))
def test_closed_forms_equal_svd_route(seed):
    rng = np.random.default_rng(seed)
    for _ in range(6):
        c = int(rng.integers(2, 9))
        k_min = int(rng.integers(1, c))
        ratio = float(rng.choice([1, 2, 3, 7, 10, 25, 100]))
        n_min = int(rng.integers(1, 4))
        cf = seli_step_closed_form(ratio, c - k_min, k_min)
        geo = seli_geometry(_step(int(ratio), c - k_min, k_min, n_min), method="svd")
        ref = _closed_form_from_geometry(geo, c - k_min)
        for k, v in ref.items():
            np.testing.assert_allclose(cf[k], v, atol=1e-10, err_msg=f"C={c} k_min={k_min} R={ratio} {k}")
        # cos(w_c, h_c) = (1 - 1/C) / (|w_c| |h_c|) at n_min = 1
        geo1 = seli_geometry(_step(int(ratio), c - k_min, k_min))
        wn, hn = np.sqrt(np.diag(geo1.classifier_gram)), np.sqrt(np.diag(geo1.mean_gram))
        np.testing.assert_allclose(cf["w_norm_maj"], wn[0], atol=1e-10)
        np.testing.assert_allclose(cf["h_norm_min"], hn[-1], atol=1e-10)
        cos_wh = np.sum(geo1.classifiers * geo1.means, axis=1) / (wn * hn)
        np.testing.assert_allclose([cf["wh_cos_maj"], cf["wh_cos_min"]], cos_wh[[0, -1]], atol=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_class_route_equals_svd_route(seed):
    rng = np.random.default_rng(100 + seed)
    counts = rng.integers(1, 80, size=int(rng.integers(2, 10)))
    a, b = seli_geometry(counts, method="class"), seli_geometry(counts, method="svd")
    np.testing.assert_allclose(a.classifier_gram, b.classifier_gram, atol=1e-10)
    np.testing.assert_allclose(a.mean_gram, b.mean_gram, atol=1e-10)
    np.testing.assert_allclose(a.singular_values, b.singular_values, atol=1e-10)
    c = counts.size
    p = np.eye(c) - 1 / c
    for geo in (a, b):
        assert geo.classifiers.shape == geo.means.shape == (c, c - 1)
        np.testing.assert_allclose(geo.logits, p, atol=1e-10)  # W H^T = SEL at class level
        np.testing.assert_allclose(geo.classifier_gram @ geo.mean_gram, p, atol=1e-10)
        pdp = p @ np.diag(counts.astype(float)) @ p
        np.testing.assert_allclose(geo.classifier_gram @ geo.classifier_gram, pdp, atol=1e-8)


def test_svd_route_factorises_the_sample_sel_matrix():
    counts = np.array([6, 3, 1])
    labels = np.repeat(np.arange(3), counts)
    z = sel_matrix(labels, 3)
    v, s, ut = np.linalg.svd(z, full_matrices=False)
    geo = seli_geometry(counts, method="svd")
    h_samples = geo.means[labels]  # (n, C-1)
    np.testing.assert_allclose(geo.classifiers @ h_samples.T, z, atol=1e-12)  # W H = Z_hat exactly
    np.testing.assert_allclose(h_samples @ h_samples.T, (ut.T * s) @ ut, atol=1e-12)  # H^T H = U Lambda U^T


@pytest.mark.parametrize("counts", [[5, 5, 5, 5], [1, 1], [1000, 1], [3, 40], [7, 7, 7, 7, 7, 7, 7]])
def test_balanced_or_binary_gives_the_etf(counts):
    geo = seli_geometry(counts)
    c = len(counts)
    assert frobenius_distance(geo.classifier_gram, etf_gram(c)) < 1e-12
    assert frobenius_distance(geo.mean_gram, etf_gram(c)) < 1e-12
    cf = seli_step_closed_form(float(max(counts) / min(counts)), 1, 1) if c == 2 else seli_step_closed_form(1.0, 2, c - 2)
    assert abs(cf["w_norm_ratio"] - 1) < 1e-12 and abs(cf["h_norm_ratio"] - 1) < 1e-12


def test_imbalance_moves_away_from_the_etf():
    geo = seli_geometry([50, 50, 5, 5])
    assert frobenius_distance(geo.classifier_gram, etf_gram(4)) > 0.3


@pytest.mark.parametrize("seed", range(5))
def test_svm_certificate_mean_gram_offdiagonal_nonpositive(seed):
    rng = np.random.default_rng(200 + seed)
    counts = rng.integers(1, 500, size=int(rng.integers(2, 12)))
    g = seli_geometry(counts).mean_gram
    off = g[~np.eye(counts.size, dtype=bool)]
    assert off.max() <= 1e-12, (counts, off.max())


def test_large_ratio_limits():
    for c in (4, 6, 10):
        lim = seli_step_limits(c // 2, c // 2)
        np.testing.assert_allclose(lim["w_norm_ratio"], (1 + np.sqrt(2) * (c - 2)) ** -0.5, atol=1e-12)
        assert lim["w_cos_min_min"] == 1.0  # minority classifiers align
        big = seli_step_closed_form(1e12, c // 2, c // 2)
        for k in ("w_norm_ratio", "w_cos_maj_maj", "w_cos_min_min", "w_cos_maj_min", "h_cos_maj_maj", "h_cos_min_min"):
            np.testing.assert_allclose(big[k], lim[k], atol=1e-4, err_msg=k)
        np.testing.assert_allclose(big["h_norm_ratio"] / 1e3, lim["h_norm_ratio_rate"], rtol=1e-4)  # R^{1/4}
    np.testing.assert_allclose(seli_step_limits(2, 2)["w_norm_ratio"], 0.5111, atol=1e-4)
    lim1 = seli_step_limits(3, 1)  # one minority class: its embedding ratio stays bounded
    assert lim1["h_norm_ratio_rate"] == 0.0
    np.testing.assert_allclose(seli_step_closed_form(1e12, 3, 1)["h_cos_maj_min"], lim1["h_cos_maj_min"], atol=1e-5)


def test_seli_distances():
    geo = seli_geometry([50, 50, 5, 5])
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 6)))[0]
    w = np.pad(geo.classifiers, ((0, 0), (0, 3))) @ q * 7.0  # rotated, padded, rescaled
    m = np.pad(geo.means, ((0, 0), (0, 3))) @ q * 0.1
    d = seli_distances(w, m, [50, 50, 5, 5])
    assert d["w_seli"] < 1e-12 and d["m_seli"] < 1e-12
    assert d["w_etf"] > 0.3 and d["m_etf"] > 0.3
    etf = simplex_etf(4, 5, seed=1)
    d = seli_distances(etf, etf, [1, 1, 1, 1])
    assert max(d.values()) < 1e-12
    with pytest.raises(ValueError, match="shape"):
        seli_distances(np.ones((3, 2)), np.ones((4, 2)), [1, 1, 1, 1])


@pytest.mark.parametrize(
    "counts, match",
    [([5, 0, 3], "class 1 is empty"), ([5, -1], "negative"), ([[1, 2]], "1-D"), ([4], "at least 2"),
     ([1.5, 2], "integers")],
)
def test_bad_counts_raise(counts, match):
    with pytest.raises(ValueError, match=match):
        seli_geometry(counts)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="method must be one of"):
        seli_geometry([2, 1], method="qr")
    with pytest.raises(ValueError, match="ratio = n_maj / n_min must be >= 1"):
        seli_step_closed_form(0.5, 2, 2)
    with pytest.raises(ValueError, match="num_minority must be an integer >= 1"):
        seli_step_closed_form(10, 2, 0)
    with pytest.raises(ValueError, match="ratio must be a positive"):
        seli_step_closed_form(float("nan"), 2, 2)
