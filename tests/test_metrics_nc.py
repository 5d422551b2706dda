import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from ncbook import geometry, metrics


def _collapsed(c=5, d=8, per=7, scale=3.0, seed=0):
    means = scale * geometry.simplex_etf(c, d, seed=seed)
    labels = np.repeat(np.arange(c), per)
    return means[labels], labels, means


def test_all_metrics_zero_on_collapsed_etf():
    h, y, m = _collapsed()
    out = metrics.neural_collapse(h, y, 0.3 * m)
    assert set(out) == {"nc1", "nc2_w", "nc2_m", "nc3", "nc3_zhu", "nc4"}
    for key, value in out.items():
        assert abs(value) < 1e-10, key


def test_metrics_positive_on_noisy_features():
    h, y, m = _collapsed()
    noisy = h + 0.5 * np.random.default_rng(0).standard_normal(h.shape)
    out = metrics.neural_collapse(noisy, y, m + 0.3 * np.random.default_rng(1).standard_normal(m.shape))
    assert out["nc1"] > 1e-3 and out["nc2_m"] > 1e-3 and out["nc2_w"] > 1e-3 and out["nc3"] > 1e-3


def _naive(h, y, w, global_mean="class", within="sample"):
    c = w.shape[0]
    mu = np.stack([h[y == k].mean(0) for k in range(c)])
    g = mu.mean(0) if global_mean == "class" else h.mean(0)
    mbar = mu - g
    if within == "sample":
        sw = sum(np.outer(hi - mu[yi], hi - mu[yi]) for hi, yi in zip(h, y)) / len(h)
    else:
        sw = sum((h[y == k] - mu[k]).T @ (h[y == k] - mu[k]) / (y == k).sum() for k in range(c)) / c
    sb = mbar.T @ mbar / c
    vals, vecs = np.linalg.eigh(sb)
    keep = np.argsort(vals)[::-1][: c - 1]
    pinv = vecs[:, keep] @ np.diag(1 / vals[keep]) @ vecs[:, keep].T
    nc1 = np.trace(sw @ pinv) / c

    def nc2(x):
        gg = x @ x.T
        return np.linalg.norm(gg / np.linalg.norm(gg) - (np.eye(c) - 1 / c) / np.sqrt(c - 1))

    nc3 = np.linalg.norm(w / np.linalg.norm(w) - mbar / np.linalg.norm(mbar))
    p = w @ mbar.T
    nc3z = np.linalg.norm(p / np.linalg.norm(p) - (np.eye(c) - 1 / c) / np.sqrt(c - 1))
    pred = (h @ w.T).argmax(1)
    ncc = np.argmin(((h[:, None, :] - mu[None]) ** 2).sum(-1), 1)
    return {"nc1": nc1, "nc2_w": nc2(w), "nc2_m": nc2(mbar), "nc3": nc3, "nc3_zhu": nc3z, "nc4": np.mean(pred != ncc)}


@pytest.mark.parametrize("global_mean", ["class", "sample"])
@pytest.mark.parametrize("within", ["sample", "class"])
def test_metrics_match_naive_numpy(global_mean, within):
    rng = np.random.default_rng(3)
    c, d = 4, 6
    y = np.concatenate([np.arange(c), rng.integers(0, c, 60)])
    h = rng.standard_normal((len(y), d)) + 2 * rng.standard_normal((c, d))[y]
    w = rng.standard_normal((c, d))
    ours = metrics.neural_collapse(h, y, w, global_mean=global_mean, within=within)
    ref = _naive(h, y, w, global_mean, within)
    for key in ref:
        assert ours[key] == pytest.approx(ref[key], rel=1e-9, abs=1e-12), key
    assert metrics.nc1(h, y, global_mean=global_mean, within=within) == pytest.approx(ref["nc1"], rel=1e-9)


def test_metrics_invariant_to_rotation_scale_and_class_permutation():
    rng = np.random.default_rng(4)
    c, d = 5, 7
    y = np.concatenate([np.arange(c), rng.integers(0, c, 80)])
    h = rng.standard_normal((len(y), d)) + 3 * rng.standard_normal((c, d))[y]
    w = rng.standard_normal((c, d))
    base = metrics.neural_collapse(h, y, w)
    q = ortho_group.rvs(d, random_state=5)
    rot = metrics.neural_collapse(2.0 * h @ q, y, 3.0 * w @ q)
    perm = rng.permutation(c)
    inv = np.argsort(perm)
    permuted = metrics.neural_collapse(h, inv[y], w[perm])
    for key in base:
        assert rot[key] == pytest.approx(base[key], rel=1e-8, abs=1e-12), key
        assert permuted[key] == pytest.approx(base[key], rel=1e-8, abs=1e-12), key


def test_sample_centring_hides_etf_under_imbalance():
    h, y, m = _collapsed(c=4, per=20)
    keep = np.r_[0:20, 20:40, 40:42, 60:62]
    assert metrics.nc2(metrics.centered_means(h[keep], y[keep])) < 1e-10
    assert metrics.nc2(metrics.centered_means(h[keep], y[keep], global_mean="sample")) > 0.05


def test_nc1_float32_roundoff_does_not_explode():
    h, y, _ = _collapsed(c=10, d=64, per=30)
    h = torch.as_tensor(h, dtype=torch.float32) + 1e-3 * torch.randn(len(y), 64)
    value = metrics.nc1(h, y)
    assert 0 <= value < 1e-3


def test_accumulator_matches_batch_metrics():
    rng = np.random.default_rng(6)
    c, d = 4, 5
    y = np.concatenate([np.arange(c), rng.integers(0, c, 100)])
    h = rng.standard_normal((len(y), d)) + 2 * rng.standard_normal((c, d))[y]
    w = rng.standard_normal((c, d))
    for within in ("sample", "class"):
        acc = metrics.NCAccumulator(c, d, within=within)
        chunks = np.array_split(np.arange(len(y)), 7)
        for idx in chunks:
            acc.update_means(h[idx], y[idx])
        restored = metrics.NCAccumulator(c, d, within=within)
        restored.load_state_dict(acc.state_dict())
        for idx in chunks:
            restored.update_covariance(h[idx], y[idx], logits=torch.as_tensor(h[idx] @ w.T))
        got = restored.compute(w)
        want = metrics.neural_collapse(h, y, w, within=within)
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), (within, key)


def test_bad_inputs_raise():
    h, y, m = _collapsed()
    with pytest.raises(ValueError, match="features must be finite"):
        bad = h.copy()
        bad[0, 0] = np.nan
        metrics.nc1(bad, y)
    with pytest.raises(ValueError, match="one entry per row"):
        metrics.nc1(h, y[:-1])
    with pytest.raises(ValueError, match=r"classes \[2\] have none"):
        metrics.class_means(h[y != 2], y[y != 2], 5)
    with pytest.raises(ValueError, match="features must have 2 dimensions"):
        metrics.nc1(h[0], y[:1])
    with pytest.raises(ValueError, match="global_mean must be one of"):
        metrics.nc1(h, y, global_mean="weighted")
    with pytest.raises(TypeError, match="labels must hold integers"):
        metrics.nc1(h, y.astype(float))
    with pytest.raises(ValueError, match="means must have shape"):
        metrics.nc3(m, m[:3])


def test_per_class_and_shot_accuracy():
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 2, 2])
    preds = torch.tensor([0, 1, 1, 1, 0, 2, 2, 2])
    acc = metrics.per_class_accuracy(preds, labels, 4)
    np.testing.assert_allclose(acc[:3].numpy(), [0.5, 1.0, 0.75])
    assert torch.isnan(acc[3])
    logits = torch.nn.functional.one_hot(preds, 3).float()
    shots = metrics.shot_accuracy(logits, labels, [500, 50, 5], many=100, few=20)
    assert shots == pytest.approx({"overall": 0.75, "many": 0.5, "medium": 1.0, "few": 0.75})
    with pytest.raises(ValueError, match="train_counts must be positive"):
        metrics.shot_accuracy(preds, labels, [5, 0, 3])


def test_transposed_classifier_is_named_in_the_error():
    h, y, m = _collapsed(c=4, d=8)
    with pytest.raises(ValueError, match=r"classifier must have shape \(C, d\) with d = 8"):
        metrics.neural_collapse(h, y, m.T)
    with pytest.raises(ValueError, match=r"classifier must have shape \(C, d\)"):
        metrics.neural_collapse(h, y, m[:, :6])


def test_nc2_is_at_most_sqrt2_and_reaches_it_when_every_row_is_the_same():
    """Both Grams are PSD, so tr(G P) >= 0 and NC2^2 = 2 - 2 tr(G P) / (|G| |P|) <= 2; equality when G P = 0
    (all rows equal: G is a multiple of 11^T, orthogonal to the centring P)."""
    rng = np.random.default_rng(0)
    values = [metrics.nc2(rng.standard_normal((5, 3)) * rng.exponential(size=(5, 1)) ** 3) for _ in range(500)]
    assert max(values) <= np.sqrt(2) + 1e-12
    assert metrics.nc2(np.tile(rng.standard_normal(4), (6, 1))) == pytest.approx(np.sqrt(2), abs=1e-12)
