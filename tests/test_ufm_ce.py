"""The cross-entropy UFM, its optimisers, and the exact regularised optimum Z_lambda."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook.geometry import cosine_matrix
from ncbook.ufm import ce_margins, log_mean_ce, ridge_optimum, sel_distance, train_ufm, ufm_objective
from ncbook import InaccurateSolutionWarning


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_ce_margins_give_cross_entropy():
    g = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(20, 5, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (20,), generator=g)
    np.testing.assert_allclose(F.softplus(ce_margins(z, y)), F.cross_entropy(z, y, reduction="none"), atol=1e-12)
    naive = [math.log(sum(math.exp(z[i, c] - z[i, y[i]]) for c in range(5) if c != y[i])) for i in range(20)]
    np.testing.assert_allclose(ce_margins(z, y), naive, atol=1e-12)


def test_log_mean_ce_is_stable_where_plain_ce_underflows():
    z = torch.tensor([[800.0, 0.0, 0.0], [0.0, 760.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 1])
    assert F.cross_entropy(z, y).item() == 0.0  # the plain loss has underflowed
    expected = math.log(math.exp(-760 + 800) + 1) - 800  # log((2e^-800 + 2e^-760)/2)
    np.testing.assert_allclose(log_mean_ce(z, y).item(), expected, atol=1e-9)
    g = torch.Generator().manual_seed(1)
    z = torch.randn(7, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 4, (7,), generator=g)
    np.testing.assert_allclose(log_mean_ce(z, y).item(), math.log(F.cross_entropy(z, y).item()), atol=1e-12)
    w = torch.rand(7, generator=g, dtype=torch.float64)
    w = w / w.sum()
    ce = F.cross_entropy(z, y, reduction="none")
    np.testing.assert_allclose(log_mean_ce(z, y, w).item(), math.log((w * ce).sum().item()), atol=1e-12)


def test_log_mean_ce_gradcheck():
    g = torch.Generator().manual_seed(2)
    y = torch.tensor([0, 2, 1])
    for scale in (1.0, 12.0):  # the second puts some margins past the -20 switch
        z = (scale * torch.randn(3, 3, generator=g, dtype=torch.float64)).requires_grad_()
        assert torch.autograd.gradcheck(lambda t: log_mean_ce(t, y), (z,))


def test_objective_class_level_equals_repeated_samples():
    g = torch.Generator().manual_seed(3)
    counts = torch.tensor([4, 2, 1])
    w = torch.randn(3, 5, generator=g, dtype=torch.float64)
    h = torch.randn(3, 5, generator=g, dtype=torch.float64)
    rows = torch.arange(3)
    a = ufm_objective(w, h, rows, lam_w=0.3, lam_h=0.2, multiplicity=counts)
    y = torch.repeat_interleave(rows, counts)
    b = ufm_objective(w, h[y], y, lam_w=0.3, lam_h=0.2)
    naive = sum(F.cross_entropy((h[y] @ w.T)[i:i + 1], y[i:i + 1]) for i in range(7)) / 7
    naive = naive + 0.15 * (w**2).sum() + 0.1 * (h[y] ** 2).sum()
    np.testing.assert_allclose(a.item(), b.item(), atol=1e-12)
    np.testing.assert_allclose(b.item(), naive.item(), atol=1e-12)


def test_ngd_reaches_seli_for_the_issue_counts():
    res = train_ufm([500, 500, 5, 5], 8, optimizer="ngd", steps=4000, lr=0.1, seed=0, record_every=1000)
    assert res.status == "optimal"
    assert res.W.shape == (4, 8) and res.H.shape == (1010, 8)
    assert res.history["z_sel"][-1] <= 2e-3
    assert res.history["w_seli"][-1] <= 5e-3 and res.history["m_seli"][-1] <= 5e-3
    assert res.history["w_etf"][-1] > 0.5  # far from the ETF


def test_class_level_reaches_seli_not_etf():
    res = train_ufm([100, 100, 10, 10], 6, level="class", steps=1500, record_every=1500)
    assert res.history["w_seli"][-1] < 5e-3 and res.history["m_seli"][-1] < 5e-3
    bal = train_ufm([10, 10, 10], 4, level="class", steps=1500, record_every=1500)
    assert bal.history["w_etf"][-1] < 5e-3  # balanced: SELI is the ETF


def test_plain_gd_crawls_where_ngd_converges():
    kw = dict(steps=1500, record_every=1500, seed=1)
    with pytest.warns(InaccurateSolutionWarning, match="gradient norm"):  # GD has not got there: said, not silent
        gd = train_ufm([50, 50, 5, 5], 8, optimizer="gd", lr=1.0, level="class", **kw)
    assert gd.status == "inaccurate"
    ngd = train_ufm([50, 50, 5, 5], 8, optimizer="ngd", lr=0.1, level="class", **kw)
    assert gd.history["z_sel"][-1] > 0.05
    assert ngd.history["z_sel"][-1] < 5e-3


def test_gd_with_ridge_lands_on_the_exact_optimum():
    counts, lam = [50, 50, 5, 5], 1e-2
    opt = ridge_optimum(counts, lam)
    res = train_ufm(counts, 8, optimizer="gd", lr=5.0, lam_w=lam, lam_h=lam, level="class", steps=1500,
                    record_every=1500)
    logits = (res.class_means @ res.W.T).numpy()
    np.testing.assert_allclose(logits, opt.logits, atol=1e-6)
    np.testing.assert_allclose(res.objective, opt.objective, rtol=1e-10)
    np.testing.assert_allclose(res.history["z_sel"][-1], opt.sel_distance, atol=1e-6)
    # sample level: same optimum, and the objective helper agrees with the trainer
    res_s = train_ufm(counts, 8, optimizer="gd", lr=5.0, lam_w=lam, lam_h=lam, steps=600, record_every=600)
    obj = ufm_objective(res_s.W, res_s.H, res_s.labels, lam_w=lam, lam_h=lam).item()
    np.testing.assert_allclose(obj, res_s.objective, rtol=1e-12)
    assert obj >= opt.objective - 1e-12


def _kkt_residual(opt):
    """-grad f(X) / lambda must be a subgradient of the nuclear norm at X = S L."""
    counts = opt.counts
    n, sq = counts.sum(), np.sqrt(counts)[:, None]
    p = np.exp(opt.logits - opt.logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = -((p - np.eye(counts.size)) * (counts / n)[:, None] / sq) / opt.lam
    u, s, vt = np.linalg.svd(opt.logits * sq)
    r = int(np.sum(s > 1e-8 * s[0])) if s[0] > 0 else 0
    on_support = np.abs(u[:, :r].T @ g @ vt[:r].T - np.eye(r)).max() if r else 0.0
    return on_support, np.linalg.norm(g, 2)


@pytest.mark.parametrize("lam", [1e-2, 1e-3, 3e-2])
def test_ridge_optimum_kkt(lam):
    opt = ridge_optimum([50, 50, 5, 5], lam)
    assert opt.status == "optimal"
    on_support, op_norm = _kkt_residual(opt)
    assert on_support < 1e-6 and op_norm <= 1 + 1e-6


def test_ridge_optimum_reference_distances():
    for lam, ref in ((1e-2, 0.224), (1e-3, 0.126), (1e-4, 0.091)):
        assert abs(ridge_optimum([50, 50, 5, 5], lam).sel_distance - ref) < 1e-3


def test_ridge_optimum_agrees_with_cvxpy():
    pytest.importorskip("cvxpy")
    a = ridge_optimum([30, 30, 3], 1e-2)
    b = ridge_optimum([30, 30, 3], 1e-2, method="cvxpy")
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-7)
    assert a.objective <= b.objective + 1e-10
    np.testing.assert_allclose(a.logits, b.logits, atol=1e-3)


def test_large_ridge_collapses_minorities_then_everything():
    mid = ridge_optimum([50, 50, 5, 5], 2.5e-2)
    assert cosine_matrix(mid.classifiers)[2, 3] > 1 - 1e-6  # minority collapse
    zero = ridge_optimum([50, 50, 5, 5], 0.1)
    assert np.abs(zero.logits).max() < 1e-9 and math.isnan(zero.sel_distance)


def test_sel_distance_zero_on_sel():
    c = 3
    assert sel_distance(5 * (np.eye(c) - 1 / c), [4, 2, 1]) < 1e-15


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(dim=2), ValueError, "dim must be an integer >= 3"),
        (dict(loss="mse"), ValueError, "loss must be 'ce'"),
        (dict(optimizer="adam"), ValueError, "optimizer must be one of"),
        (dict(level="batch"), ValueError, "level must be one of"),
        (dict(lam_w=-1.0), ValueError, "lam_w must be a finite number >= 0"),
        (dict(lr=0.0), ValueError, "lr must be a positive"),
        (dict(momentum=1.0), ValueError, r"momentum must lie in \[0, 1\)"),
        (dict(steps=0), ValueError, "steps must be an integer >= 1"),
    ],
)
def test_train_ufm_rejects_bad_arguments(kwargs, error, match):
    args = dict(counts=[5, 5, 1, 1], dim=8, steps=2)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        train_ufm(**args)


def test_ridge_optimum_rejects_bad_arguments():
    with pytest.raises(ValueError, match="lam must be a positive"):
        ridge_optimum([5, 1], 0.0)
    with pytest.raises(ValueError, match="class 1 is empty"):
        ridge_optimum([5, 0], 0.1)
    with pytest.raises(ValueError, match="method must be one of"):
        ridge_optimum([5, 1], 0.1, method="newton")
    with pytest.warns(InaccurateSolutionWarning, match="ridge_optimum: solution inaccurate"):
        assert ridge_optimum([5, 1], 1e-4, max_iter=3).status == "inaccurate"
