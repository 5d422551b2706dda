"""w-InfoNCE, its entropic bound, the weight builders, the class-level form and the fitters."""

import math

import numpy as np
import pytest
import torch

from ncbook.losses import (
    WInfoNCELoss,
    column_normalized_w_info_nce,
    entropic_lower_bound,
    gaussian_kernel_weights,
    prototype_entropic_lower_bound,
    prototype_w_info_nce,
    soft_supcon_weights,
    supcon_weights,
    w_info_nce,
    xclr_weights,
)
from ncbook.metrics import entropic_gap, r2_procrustes, r2_similarity
from ncbook.ufm import fit_free_embeddings, fit_prototypes

torch.set_num_threads(1)


def naive_w_info_nce(z, w, similarity, tau):
    """Loop reference: mean over anchors with a positive weight of -sum_j p_ij log q_ij."""
    z = np.asarray(z, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    n = len(z)
    total, count = 0.0, 0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        if sum(w[i, j] for j in others) == 0:
            continue
        s = {}
        for j in others:
            if similarity == "cosine":
                s[j] = z[i] @ z[j] / (np.linalg.norm(z[i]) * np.linalg.norm(z[j])) / tau
            else:
                s[j] = -np.sum((z[i] - z[j]) ** 2) / tau
        norm = math.log(sum(math.exp(s[j]) for j in others))
        wsum = sum(w[i, j] for j in others)
        total += -sum(w[i, j] / wsum * (s[j] - norm) for j in others)
        count += 1
    return total / count


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_w_info_nce_matches_naive_loop(similarity):
    g = torch.Generator().manual_seed(0)
    z = torch.randn(7, 3, generator=g, dtype=torch.float64)
    w = torch.rand(7, 7, generator=g, dtype=torch.float64)  # not symmetric: allowed
    got = w_info_nce(z, w, similarity=similarity, temperature=0.7)
    assert float(got) == pytest.approx(naive_w_info_nce(z, w, similarity, 0.7), rel=1e-12)


def test_hand_value_equal_similarities_is_log_n_minus_one():
    z = torch.eye(4, dtype=torch.float64)  # all cosines 0
    w = torch.rand(4, 4, dtype=torch.float64)
    assert float(w_info_nce(z, w, temperature=0.3)) == pytest.approx(math.log(3), rel=1e-12)


def test_diagonal_is_ignored():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(5, 2, generator=g, dtype=torch.float64)
    w = torch.rand(5, 5, generator=g, dtype=torch.float64)
    w2 = w.clone()
    w2.fill_diagonal_(1e6)
    assert torch.allclose(w_info_nce(z, w, temperature=0.5), w_info_nce(z, w2, temperature=0.5), rtol=0, atol=1e-14)


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_gradcheck(similarity):
    g = torch.Generator().manual_seed(2)
    z = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.rand(6, 6, generator=g, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda x: w_info_nce(x, w, similarity=similarity, temperature=0.4), (z,))


def test_stable_on_large_unnormalised_float32():
    z = torch.randn(8, 4) * 1e3
    w = supcon_weights(torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]))
    for sim in ("euclidean", "cosine"):
        assert torch.isfinite(w_info_nce(z, w, similarity=sim, temperature=0.01))


def test_reduction_contract_and_anchors_without_positives():
    labels = torch.tensor([0, 0, 1, 2])  # classes 1 and 2 are singletons: no positive
    z = torch.randn(4, 3, dtype=torch.float64)
    w = supcon_weights(labels)
    per = w_info_nce(z, w, temperature=0.5, reduction="none")
    assert per.shape == (4,) and torch.all(per[2:] == 0) and torch.isfinite(per).all()
    assert float(w_info_nce(z, w, temperature=0.5)) == pytest.approx(float(per[:2].mean()))
    assert float(w_info_nce(z, w, temperature=0.5, reduction="sum")) == pytest.approx(float(per.sum()))
    all_single = supcon_weights(torch.arange(4))
    assert float(w_info_nce(z, all_single, temperature=0.5)) == 0.0


def test_bound_equals_loss_at_closed_form_optimum_and_is_below_elsewhere():
    """Euclid-Euclid optimum z = sqrt(tau / (2 sigma^2)) y reaches the bound exactly."""
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, (20, 2))
    sigma, tau = 0.5, 0.2
    w = gaussian_kernel_weights(y, sigma)
    z = torch.as_tensor(np.sqrt(tau / (2 * sigma**2)) * y)
    bound = entropic_lower_bound(w)
    assert float(w_info_nce(z, w, similarity="euclidean", temperature=tau)) == pytest.approx(bound, abs=1e-12)
    assert entropic_gap(z, w, similarity="euclidean", temperature=tau) == pytest.approx(0.0, abs=1e-13)
    z2 = z * 1.1
    gap = float(w_info_nce(z2, w, similarity="euclidean", temperature=tau)) - bound
    assert gap > 1e-4
    assert entropic_gap(z2, w, similarity="euclidean", temperature=tau) == pytest.approx(gap, rel=1e-8)


def test_bound_hand_values():
    assert entropic_lower_bound(supcon_weights([0, 0, 0, 1, 1, 1])) == pytest.approx(math.log(2))
    assert entropic_lower_bound(np.ones((5, 5))) == pytest.approx(math.log(4))


def test_weight_builders():
    labels = np.array([0, 1, 0])
    np.testing.assert_array_equal(supcon_weights(labels).numpy(), [[1, 0, 1], [0, 1, 0], [1, 0, 1]])
    np.testing.assert_allclose(soft_supcon_weights(labels, 0.1).numpy(), [[1, 0.1, 1], [0.1, 1, 0.1], [1, 0.1, 1]])
    w = gaussian_kernel_weights(np.array([0.0, 1.0, 3.0]), sigma=2.0)
    assert float(w[0, 2]) == pytest.approx(math.exp(-9 / 8))
    e = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    x = xclr_weights(e, label_temperature=0.5)
    assert float(x[0, 1]) == pytest.approx(1.0) and float(x[0, 2]) == pytest.approx(math.exp(math.sqrt(0.5) / 0.5))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: w_info_nce(torch.randn(3, 2), -torch.ones(3, 3), temperature=0.1), "non-negative"),
        (lambda: w_info_nce(torch.randn(3, 2), torch.ones(3, 3), temperature=0.0), "temperature must be a positive"),
        (lambda: w_info_nce(torch.randn(3, 2), torch.ones(4, 4), temperature=0.1), r"\(3, 3\)"),
        (lambda: w_info_nce(torch.randn(3, 2), torch.ones(3, 3), temperature=0.1, similarity="dot"), "similarity must be one of"),
        (lambda: w_info_nce(torch.randn(3, 2), torch.ones(3, 3), temperature=0.1, reduction="avg"), "reduction must be one of"),
        (lambda: w_info_nce(torch.randn(1, 2), torch.ones(1, 1), temperature=0.1), "at least 2 points"),
        (lambda: soft_supcon_weights([0, 1], 2.0), r"epsilon must be in \(0, 1\]"),
        (lambda: gaussian_kernel_weights([0.0, 1.0], sigma=-1), "sigma must be a positive"),
        (lambda: xclr_weights(np.zeros((2, 2)), label_temperature=0.1), "non-zero rows"),
        (lambda: fit_free_embeddings(np.ones((3, 3)), temperature=0.1, dim=0), "dim must be an integer >= 1"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_prototype_form_equals_collapsed_sample_form(similarity):
    counts = np.array([3, 1, 2])
    g = torch.Generator().manual_seed(3)
    protos = torch.randn(3, 4, generator=g, dtype=torch.float64)
    omega = torch.tensor([[1.0, 0.2, 0.0], [0.2, 1.0, 0.5], [0.0, 0.5, 1.0]], dtype=torch.float64)
    labels = torch.as_tensor(np.repeat(np.arange(3), counts))
    z, w = protos[labels], omega[labels][:, labels]
    full = w_info_nce(z, w, similarity=similarity, temperature=0.3)
    assert float(prototype_w_info_nce(protos, counts, omega, similarity=similarity, temperature=0.3)) == pytest.approx(float(full), rel=1e-12)
    assert prototype_entropic_lower_bound(counts, omega) == pytest.approx(entropic_lower_bound(w), rel=1e-12)


def test_supcon_reference_values_balanced_and_imbalanced():
    fit = fit_prototypes([10, 10, 10, 10], np.eye(4), temperature=0.1, dim=8)
    g = fit.solution @ fit.solution.T
    np.testing.assert_allclose(g[~np.eye(4, dtype=bool)], -1 / 3, atol=1e-5)
    assert fit.objective == pytest.approx(2.197230, abs=1e-6)
    assert fit.bound == pytest.approx(math.log(9), abs=1e-12)
    fit = fit_prototypes([40, 10, 10, 10], np.eye(4), temperature=0.1, dim=8)
    g = fit.solution @ fit.solution.T
    np.testing.assert_allclose(g[0, 1:], -0.371802, atol=1e-5)
    np.testing.assert_allclose(g[[1, 1, 2], [2, 3, 3]], -0.292645, atol=1e-5)


@pytest.mark.parametrize("counts", [[10, 10, 10, 10], [40, 10, 10, 10]])
def test_soft_supcon_regular_simplex_at_epsilon_star(counts):
    c, tau = 4, 0.1
    eps = math.exp(-c / ((c - 1) * tau))
    omega = np.where(np.eye(c) > 0, 1.0, eps)
    fit = fit_prototypes(counts, omega, temperature=tau, dim=8)
    g = fit.solution @ fit.solution.T
    assert fit.gap < 1e-9
    np.testing.assert_allclose(g[~np.eye(c, dtype=bool)], -1 / 3, atol=1e-4)


def test_continuous_reference_values():
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, (64, 2))
    w = gaussian_kernel_weights(y, 0.5)
    ee = fit_free_embeddings(w, similarity="euclidean", temperature=0.2, dim=8)
    assert ee.gap < 1e-8
    assert r2_procrustes(ee.solution, y) > 0.999
    assert r2_similarity(ee.solution, w, similarity="euclidean") > 0.9999
    ya = fit_free_embeddings(w, similarity="cosine", temperature=0.2, dim=8)
    assert 2.5e-3 < ya.gap < 4e-3
    assert 0.80 < r2_procrustes(ya.solution, y) < 0.88
    assert entropic_gap(ya.solution, w, similarity="cosine", temperature=0.2) == pytest.approx(ya.gap, rel=1e-6)


def test_column_normalisation_differs_from_rows_unless_row_sums_are_equal():
    g = torch.Generator().manual_seed(4)
    z = torch.randn(6, 3, generator=g, dtype=torch.float64)
    y = torch.randn(6, 1, generator=g, dtype=torch.float64)
    w = gaussian_kernel_weights(y, 1.0)
    bug = column_normalized_w_info_nce(z, w, temperature=0.5, reduction="none")
    assert float((bug - w_info_nce(z, w, temperature=0.5, reduction="none")).abs().max()) > 0.05
    ones = torch.ones(6, 6, dtype=torch.float64)  # equal row sums: the bug is harmless
    assert float(column_normalized_w_info_nce(z, ones, temperature=0.5)) == pytest.approx(float(w_info_nce(z, ones, temperature=0.5)))
    # hand value of one entry: w_01 / sum_{k != 1} w_1k
    per = column_normalized_w_info_nce(z, w, temperature=0.5, reduction="none")
    s = (torch.nn.functional.normalize(z, dim=1) @ torch.nn.functional.normalize(z, dim=1).T / 0.5)
    s.fill_diagonal_(float("-inf"))
    logq = torch.log_softmax(s, dim=1)
    wz = w.clone().fill_diagonal_(0)
    expect0 = -sum(float(wz[0, j] / wz[j].sum() * logq[0, j]) for j in range(1, 6))
    assert float(per[0]) == pytest.approx(expect0, rel=1e-12)


def test_module_follows_training_protocol():
    loss = WInfoNCELoss(supcon_weights, temperature=0.2)
    assert loss.needs_features
    z = torch.randn(6, 3, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    assert torch.allclose(loss(None, y, z), w_info_nce(z, supcon_weights(y), temperature=0.2))
