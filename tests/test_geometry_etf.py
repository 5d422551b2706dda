import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from ncbook import geometry


@given(c=st.integers(2, 12), extra=st.integers(0, 5), seed=st.one_of(st.none(), st.integers(0, 100)))
@settings(max_examples=40, deadline=None)
def test_simplex_etf_is_equiangular_and_unit_norm(c, extra, seed):
    m = geometry.simplex_etf(c, c - 1 + extra, seed=seed)
    assert m.shape == (c, c - 1 + extra)
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-12)
    cos = m @ m.T
    np.testing.assert_allclose(cos[~np.eye(c, dtype=bool)], -1 / (c - 1), atol=1e-12)
    np.testing.assert_allclose(m.sum(0), 0.0, atol=1e-12)  # centred


def test_simplex_etf_rejects_small_dim():
    with pytest.raises(ValueError, match=r"dim must be an integer >= 4 \(num_classes - 1 = 4\)"):
        geometry.simplex_etf(5, 3)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        geometry.simplex_etf(1)


def test_etf_gram_closed_form():
    np.testing.assert_allclose(geometry.etf_gram(3), [[1, -0.5, -0.5], [-0.5, 1, -0.5], [-0.5, -0.5, 1]])


def test_cosine_matrix_numpy_and_torch_agree():
    x = np.random.default_rng(0).standard_normal((5, 3))
    a = geometry.cosine_matrix(x)
    b = geometry.cosine_matrix(torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(np.diag(a), 1.0)
    np.testing.assert_allclose(a[0, 1], x[0] @ x[1] / np.linalg.norm(x[0]) / np.linalg.norm(x[1]))


def test_frobenius_distance_is_scale_free_and_bounded():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    assert geometry.frobenius_distance(a, 7 * a) == pytest.approx(0, abs=1e-12)
    assert geometry.frobenius_distance(a, -a) == pytest.approx(2)
    assert 0 <= geometry.frobenius_distance(a, b) <= 2
    t = geometry.frobenius_distance(torch.as_tensor(a), torch.as_tensor(b))
    assert float(t) == pytest.approx(geometry.frobenius_distance(a, b))
    with pytest.raises(ValueError, match="same shape"):
        geometry.frobenius_distance(a, b[:3])
    with pytest.raises(ValueError, match="non-zero"):
        geometry.frobenius_distance(a, 0 * b)


def test_procrustes_r2_invariances():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((20, 3))
    q = ortho_group.rvs(3, random_state=3)
    assert geometry.procrustes_r2(x, 3 * x @ q + 5) == pytest.approx(1.0, abs=1e-10)
    # different widths are padded with zeros
    assert geometry.procrustes_r2(x[:, :2], x) == pytest.approx(geometry.procrustes_r2(np.c_[x[:, :2], np.zeros(20)], x))
    assert geometry.procrustes_r2(x, rng.standard_normal((20, 3))) < 0.5
    with pytest.raises(ValueError, match="same number of rows"):
        geometry.procrustes_r2(x, x[:5])


def test_procrustes_align_recovers_a_rotated_copy():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((15, 2))
    q = ortho_group.rvs(3, random_state=8)
    y = 2 * np.c_[x, np.zeros(15)] @ q - 1  # wider, rotated, scaled, shifted
    x_std, y_aligned, disparity = geometry.procrustes_align(x, y)
    assert x_std.shape == y_aligned.shape == (15, 3)
    np.testing.assert_allclose(y_aligned, x_std, atol=1e-10)
    assert disparity == pytest.approx(0, abs=1e-12)
    assert geometry.procrustes_r2(x, y) == pytest.approx(1 - disparity)
