"""Registry tests in scikit-learn's ``test_common`` manner, and the faults of the package review.

Every loss meets one contract (reduction, gradcheck in float64, Module == functional, every
float dtype kept and finite, integer logits promoted never truncated, labels of any integer
dtype); every NC metric is zero at a simplex ETF, invariant to rotation, scale and class
permutation, and refuses degenerate input clearly. The last section turns each silent
wrong value found in the review into a test with the right value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook import geometry, losses, metrics, models
from ncbook._validation import check_int, check_labels, check_probabilities
from ncbook.dgp import euclidean_dgp
from ncbook.margins import ldam_margins

torch.set_num_threads(1)

C, N, D = 3, 6, 4
COUNTS = [30, 10, 2]
LABELS = torch.tensor([0, 0, 1, 2, 1, 0])
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def _logits(dtype=torch.float64, seed=0):
    return torch.randn(N, C, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def _features(dtype=torch.float64, seed=1):
    return torch.randn(N, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


# ---------------------------------------------------------------------------------------------- losses
# name -> (functional(z, y, h, reduction), module factory or None); z: logits (N, C), h: features (N, D)
LOSSES = {
    "weighted_cross_entropy": (lambda z, y, h, r: losses.weighted_cross_entropy(z, y, [1.0, 2.0, 3.0], normalizer="batch", reduction=r),
                               lambda: losses.WeightedCrossEntropy([1.0, 2.0, 3.0], normalizer="batch")),
    "focal_loss": (lambda z, y, h, r: losses.focal_loss(z, y, gamma=2.0, reduction=r),
                   lambda: losses.FocalLoss(gamma=2.0)),
    "ldam_loss": (lambda z, y, h, r: losses.ldam_loss(z, y, ldam_margins(COUNTS), scale=2.0, reduction=r),
                  lambda: losses.FixedMarginLoss(ldam_margins(COUNTS), scale=2.0)),
    "logit_adjusted_loss": (lambda z, y, h, r: losses.logit_adjusted_loss(z, y, COUNTS, tau=1.0, reduction=r),
                            lambda: losses.LogitAdjustedLoss(COUNTS, tau=1.0)),
    "ib_loss": (lambda z, y, h, r: losses.ib_loss(z, y, h, alpha=1.0, eps=0.1, reduction=r),
                lambda: _IBNow()),
    "margin_cross_entropy": (lambda z, y, h, r: losses.margin_cross_entropy(z, y, [0.8, 1.0, 1.5], reduction=r), None),
    "inverse_reweighted_ce": (lambda z, y, h, r: losses.inverse_reweighted_ce(z, y, clamp=None, reduction=r),
                              lambda: losses.InverseReweightedCE(C, gamma=0.0, clamp=None)),
    "representation_margin_loss": (lambda z, y, h, r: losses.representation_margin_loss(h, y, 0.3, reduction=r), None),
    "w_info_nce": (lambda z, y, h, r: losses.w_info_nce(h, losses.supcon_weights(y), temperature=0.5, reduction=r),
                   lambda: losses.WInfoNCELoss(losses.supcon_weights, temperature=0.5)),
    "w_info_nce_euclidean": (lambda z, y, h, r: losses.w_info_nce(h, losses.soft_supcon_weights(y, 0.1), similarity="euclidean",
                                                                  temperature=0.5, reduction=r), None),
    "column_normalized_w_info_nce": (lambda z, y, h, r: losses.column_normalized_w_info_nce(
        h, losses.soft_supcon_weights(y, 0.1), temperature=0.5, reduction=r), None),
    "info_nce": (lambda z, y, h, r: losses.info_nce(h, h.flip(0), torch.stack([h.roll(1, 0), h.roll(2, 0)], 1),
                                                    temperature=0.5, reduction=r),
                 None),
}
# Losses whose "mean" is not the plain mean of "none" (they divide by a weight sum or skip anchors).
MEAN_IS_NOT_PLAIN = {"representation_margin_loss", "w_info_nce", "w_info_nce_euclidean"}
# Inputs the loss uses: logits "z" or features "h" (for dtype and integer checks).
USES_FEATURES_ONLY = {"representation_margin_loss", "w_info_nce", "w_info_nce_euclidean", "column_normalized_w_info_nce",
                      "info_nce"}


class _IBNow(losses.IBLoss):
    """IBLoss past its start epoch (the Module of ib_loss)."""

    def __init__(self):
        super().__init__(alpha=1.0, eps=0.1, start_epoch=0)


def _call(name, z, y, h, reduction="mean"):
    return LOSSES[name][0](z, y, h, reduction)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_reduction_contract(name):
    z, h = _logits(), _features()
    per = _call(name, z, LABELS, h, "none")
    assert per.shape == (N,)
    assert _call(name, z, LABELS, h, "sum").item() == pytest.approx(per.sum().item(), rel=1e-12)
    if name not in MEAN_IS_NOT_PLAIN:
        assert _call(name, z, LABELS, h, "mean").item() == pytest.approx(per.mean().item(), rel=1e-12)
    with pytest.raises(ValueError, match="reduction must be one of"):
        _call(name, z, LABELS, h, "avg")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradcheck_float64(name):
    z = _logits().requires_grad_(True)
    h = _features().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: _call(name, a, LABELS, b), (z, h))


@pytest.mark.parametrize("name", sorted(n for n, (_, m) in LOSSES.items() if m is not None))
def test_module_equals_functional(name):
    z, h = _logits(), _features()
    module = LOSSES[name][1]()
    got = module(z, LABELS, h) if getattr(module, "needs_features", False) else module(z, LABELS)
    torch.testing.assert_close(got, _call(name, z, LABELS, h))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_float_dtype_is_kept_and_finite(name, dtype):
    ref = _call(name, _logits(), LABELS, _features())
    assert torch.isfinite(ref)
    got = _call(name, _logits(dtype), LABELS, _features(dtype))
    assert got.dtype == dtype
    assert torch.isfinite(got)
    tol = {torch.float16: 5e-2, torch.bfloat16: 2e-1, torch.float32: 1e-4, torch.float64: 1e-12}[dtype]
    assert float(got) == pytest.approx(float(ref), rel=tol, abs=tol)


@pytest.mark.parametrize("int_dtype", [torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_integer_inputs_are_promoted_never_truncated(name, int_dtype):
    z = torch.tensor([[6, 0, 1], [0, 0, 0], [2, 5, 1], [1, 1, 3], [0, 4, 0], [3, 0, 0]]).to(int_dtype)
    h = torch.tensor([[1, 0, 2, 0], [0, 1, 1, 1], [2, 2, 0, 1], [1, 0, 0, 3], [0, 3, 1, 0], [2, 1, 1, 1]]).to(int_dtype)
    got = _call(name, z, LABELS, h)
    assert got.dtype == torch.get_default_dtype()
    ref = _call(name, z.to(torch.float64), LABELS, h.to(torch.float64))
    assert float(got) == pytest.approx(float(ref), rel=1e-5)


@pytest.mark.parametrize("label_dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_labels_of_any_integer_dtype(name, label_dtype):
    z, h = _logits(), _features()
    got = _call(name, z, LABELS.to(label_dtype), h)
    torch.testing.assert_close(got, _call(name, z, LABELS, h))


@pytest.mark.parametrize("name", sorted(n for n in LOSSES if n not in USES_FEATURES_ONLY))
def test_float_labels_are_refused_with_their_dtype(name):
    with pytest.raises(TypeError, match=r"labels must hold integers \(any integer dtype\); got dtype torch.float32"):
        _call(name, _logits(), LABELS.float(), _features())


# ---------------------------------------------------------------------------------------------- metrics
def _etf_problem(scale=1.0, n_per_class=3, c=4, d=5, seed=0):
    """Collapsed features on a simplex ETF (rotated into d dims), the classifier aligned with them."""
    m = scale * geometry.simplex_etf(c, d, seed=seed)  # (C, d)
    labels = np.repeat(np.arange(c), n_per_class)
    return torch.as_tensor(m[labels]), torch.as_tensor(labels), torch.as_tensor(m)


def _nc_values(h, y, w):
    return metrics.neural_collapse(h, y, w)


def test_nc_metrics_are_zero_at_a_simplex_etf():
    h, y, w = _etf_problem()
    for key, value in _nc_values(h, y, w).items():
        assert value == pytest.approx(0.0, abs=1e-10), key
    assert metrics.nc2(w) == pytest.approx(0.0, abs=1e-12)
    assert metrics.nc3(w, metrics.centered_means(h, y)) == pytest.approx(0.0, abs=1e-12)
    assert metrics.nc4(h, y, metrics.class_means(h, y)) == 0.0


def _noisy_problem(seed=3):
    g = torch.Generator().manual_seed(seed)
    h, y, w = _etf_problem()
    return h + 0.3 * torch.randn(h.shape, generator=g, dtype=h.dtype), y, w + 0.2 * torch.randn(w.shape, generator=g, dtype=w.dtype)


def test_nc_metrics_are_invariant_to_rotation_scale_and_class_permutation():
    h, y, w = _noisy_problem()
    base = _nc_values(h, y, w)
    q, _ = torch.linalg.qr(torch.randn(h.shape[1], h.shape[1], generator=torch.Generator().manual_seed(9), dtype=h.dtype))
    perm = torch.tensor([2, 0, 3, 1])  # class c becomes perm[c]
    inv = torch.argsort(perm)
    for variant in (_nc_values(h @ q, y, w @ q), _nc_values(7.0 * h, y, 7.0 * w), _nc_values(h, perm[y], w[inv])):
        for key in base:
            assert variant[key] == pytest.approx(base[key], rel=1e-9, abs=1e-12), key


def test_nc_metrics_refuse_degenerate_input_clearly():
    h, y, w = _etf_problem()
    with pytest.raises(ValueError, match="x must not be all zeros"):
        metrics.nc2(torch.zeros(4, 5))
    with pytest.raises(ValueError, match="classifier must not be all zeros"):
        metrics.nc3(torch.zeros(4, 5), metrics.centered_means(h, y))
    with pytest.raises(ValueError, match="every class mean is equal"):
        metrics.nc3(w, torch.zeros(4, 5))
    with pytest.raises(ValueError, match="classifier must not be all zeros"):
        metrics.neural_collapse(h, y, torch.zeros(4, 5))
    with pytest.raises(ValueError, match=r"classes \[3\] have none"):
        metrics.nc1(h[:9], y[:9], 4)
    with pytest.raises(ValueError, match=r"means must have shape \(C, d\) with d = 5"):
        metrics.nc4(h, y, torch.zeros(4, 3))
    with pytest.raises(ValueError, match="predictions given as logits must have C = 4 columns"):
        metrics.nc4(h, torch.zeros(len(y), 3), metrics.class_means(h, y))
    with pytest.raises(ValueError, match="features must be finite"):
        metrics.nc1(torch.full_like(h, float("nan")), y)


def test_procrustes_metrics_take_the_same_argument_order():
    rng = np.random.default_rng(0)
    ref, z = rng.standard_normal((8, 2)), rng.standard_normal((8, 3))
    assert metrics.r2_procrustes(z, ref) == geometry.procrustes_r2(z, ref)
    assert metrics.r2_procrustes(2 * ref @ np.array([[0.0, 1.0], [1.0, 0.0]]) + 3, ref) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------- the review's faults
def test_integer_logits_are_not_truncated():
    got = losses.logit_adjustment(torch.tensor([[6, 0]]), [9, 1])
    np.testing.assert_allclose(got.numpy(), [[6.0 + math.log(10 / 9), math.log(10)]], rtol=1e-6)  # [[6.1054, 2.3026]]
    got = losses.ldam_loss(torch.tensor([[0, 0]]), torch.tensor([0]), [0.5, 0.5], scale=1.0)
    assert got.item() == pytest.approx(math.log(1 + math.exp(0.5)), rel=1e-6)  # 0.9741


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_cosine_of_a_zero_row_is_zero_in_every_dtype(dtype):
    x = torch.tensor([[0, 0], [1, 0], [0, 1]], dtype=dtype)
    expect = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for s in (geometry.cosine_matrix(x), losses.latent_similarity(x, temperature=1.0)):
        assert s.dtype == dtype
        torch.testing.assert_close(s.float(), expect)
    head = models.cosine_logits(x, torch.eye(2, dtype=dtype), scale=1.0)
    torch.testing.assert_close(head.float(), expect[:, 1:])
    got = losses.w_info_nce(x, losses.supcon_weights([0, 0, 1]), temperature=1.0)
    assert got.dtype == dtype and float(got) == pytest.approx(math.log(2), rel=1e-2)


def test_euclidean_similarities_survive_a_large_offset():
    s = losses.latent_similarity(torch.tensor([[512695.0], [512804.0]]), similarity="euclidean", temperature=1.0)
    assert s[0, 1].item() == -11881.0
    z0 = torch.randn(6, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    w = losses.soft_supcon_weights([0, 0, 1, 1, 2, 2], 0.1)
    ref = losses.w_info_nce(z0, w, similarity="euclidean", temperature=1.0)
    shifted = losses.w_info_nce((z0 + 1000).float(), w, similarity="euclidean", temperature=1.0)
    assert float(shifted) == pytest.approx(float(ref), rel=1e-5)


def test_entropic_gap_at_the_exact_optimum_is_zero_far_from_the_origin():
    y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.2]])
    w = losses.gaussian_kernel_weights(y, 1.0).numpy()
    res = euclidean_dgp(w, 0.5, dim=3)
    assert metrics.entropic_gap(res.embedding, w, similarity="euclidean", temperature=0.5) < 1e-12
    assert metrics.entropic_gap(res.embedding + 1e7, w, similarity="euclidean", temperature=0.5) < 1e-9


def test_kernel_weights_neither_overflow_nor_underflow():
    e = torch.randn(4, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    z = torch.randn(4, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    w = losses.xclr_weights(e, 0.01)
    ref = losses.w_info_nce(z, w, temperature=1.0)
    assert float(losses.w_info_nce(z.float(), w, temperature=1.0)) == pytest.approx(float(ref), rel=1e-5)
    assert torch.isfinite(losses.xclr_weights(e, 1e-4)).all()  # e^{10000} would overflow float64
    # Gaussian kernel: at sigma = 0.05 float32 features must not see an all-zero target row
    w = losses.gaussian_kernel_weights([0, 1, 2, 3], 0.05)
    ref = losses.w_info_nce(z, w, similarity="euclidean", temperature=1.0)
    got = losses.w_info_nce(z.float(), w, similarity="euclidean", temperature=1.0)
    assert float(got) == pytest.approx(float(ref), rel=1e-5) and float(ref) > 0.1
    # at sigma = 0.02 the raw kernel is 0 off the diagonal even in float64; the targets are the nearest neighbours
    w = losses.gaussian_kernel_weights([0, 1, 2, 3], 0.02)
    s = -torch.cdist(z, z) ** 2
    log_q = s.masked_fill(torch.eye(4, dtype=torch.bool), float("-inf")).log_softmax(1)
    by_hand = -(log_q[0, 1] + (log_q[1, 0] + log_q[1, 2]) / 2 + (log_q[2, 1] + log_q[2, 3]) / 2 + log_q[3, 2]) / 4
    assert float(losses.w_info_nce(z, w, similarity="euclidean", temperature=1.0)) == pytest.approx(float(by_hand), rel=1e-12)
    assert metrics.entropic_gap(z, w, similarity="euclidean", temperature=1.0) > 0.1  # not "bound reached"


def test_probability_tolerance_follows_the_input_precision():
    counts = np.array([5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50], dtype=np.float32)
    p = counts / counts.sum()
    assert check_probabilities(p).sum() == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="must sum to 1"):
        check_probabilities(p.astype(np.float64) * 1.001)


def test_integer_checks_accept_numpy_integers_and_refuse_bools():
    assert check_int("k", np.int64(10), 2) == 10 and check_int("k", torch.tensor(3), 1) == 3
    with pytest.raises(TypeError, match="k must be an integer >= 1; got bool True"):
        check_int("k", True, 1)
    with pytest.raises(TypeError, match="k must be an integer >= 1; got float 2.0"):
        check_int("k", 2.0, 1)
    assert losses.MR2Loss(np.int64(10)).num_classes == 10


def test_label_checks_name_the_dtype():
    assert check_labels(torch.tensor([0, 1, 3, 2], dtype=torch.int32), 4).dtype == torch.int64
    with pytest.raises(TypeError, match="got dtype torch.float64"):
        check_labels(torch.tensor([0.0, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match=r"labels must have length 3 \(one label per row\); got 4"):
        losses.focal_loss(torch.zeros(3, 2), torch.tensor([0, 1, 1, 0], dtype=torch.int32))


def test_public_boundaries_validate():
    from ncbook.reweighting import batch_class_losses
    from ncbook.ufm import ce_margins

    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        batch_class_losses(torch.ones(3), torch.tensor([0, 1, 5]), 2)
    with pytest.raises(ValueError, match="labels must have length 3"):
        batch_class_losses(torch.ones(3), torch.tensor([0, 1]), 2)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        ce_margins(torch.zeros(2, 2), torch.tensor([0, 2]))


def test_cosine_head_trains_under_fit_with_nc_metrics():
    from ncbook import train

    torch.manual_seed(0)
    net = models.MLP(in_dim=4, hidden=(8,), feat_dim=3, num_classes=3)
    net.classifier = models.CosineClassifier(net.classifier.in_features, 3, scale=4.0)
    assert net.classifier.bias is None
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(24, 4, generator=g), torch.arange(24) % 3
    hist = train.fit(net, F.cross_entropy, (x, y), epochs=1, batch_size=8, progress=False)  # default nc_every=1
    assert np.isfinite(hist.final["nc1"]) and "nc3" in hist.final


# ---------------------------------------------------------------------------------- kinds from public bug reports
# Faults reported against neural-collapse measurement code, long-tail and contrastive repositories, each as a property
# of every function it could hit here (the degenerate-input table in tests/test_degenerate.py holds the rest).
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("gamma", [0.0, 0.25, 0.5, 1.0, 2.0])
def test_focal_loss_has_finite_gradients_at_saturated_logits(gamma, dtype):
    """Focal loss with gamma < 1 went NaN in several repositories once p_t reached 1 ((1 - p_t)^gamma at 0, or a
    cross-entropy rounded below 0)."""
    z = torch.tensor([[60.0, 0.0, 0.0], [0.0, 0.0, 1e-3], [5.0, 5.0, 0.0], [-30.0, 30.0, 0.0]], dtype=dtype)
    y = torch.tensor([0, 2, 0, 1])
    for loss in (lambda v: losses.focal_loss(v, y, gamma=gamma), lambda v: losses.FocalLoss(gamma=gamma)(v, y)):
        v = z.clone().requires_grad_(True)
        out = loss(v)
        (grad,) = torch.autograd.grad(out, v)
        assert torch.isfinite(out) and float(out.detach()) >= 0 and torch.isfinite(grad).all()


def test_supcon_anchor_without_a_positive_is_skipped_not_nan():
    """SupCon implementations divided by an anchor's positive count: an anchor alone in its class gave NaN."""
    h = _features()
    y = torch.tensor([0, 0, 1, 1, 2, 0])  # class 2 has one sample: its anchor has no positive
    per = losses.w_info_nce(h, losses.supcon_weights(y), temperature=0.5, reduction="none")
    assert torch.isfinite(per).all() and float(per[4]) == 0.0
    mean = losses.w_info_nce(h, losses.supcon_weights(y), temperature=0.5)
    assert float(mean) == pytest.approx(float(per[torch.arange(6) != 4].mean()), rel=1e-12)


def test_nc_metrics_stay_in_their_ranges():
    """NC1 was reported negative (a trace with an unstable pseudo-inverse); the ranges hold on random and rank-deficient
    features (d < C - 1), each class with one sample or many."""
    g = torch.Generator().manual_seed(4)
    for d, per_class in ((2, 3), (8, 1), (8, 5), (3, 40)):
        y = torch.arange(5).repeat_interleave(per_class)
        centres = 3 * torch.randn(5, d, generator=g, dtype=torch.float64)
        h = torch.randn(len(y), d, generator=g, dtype=torch.float64) + centres[y]
        w = torch.randn(5, d, generator=g, dtype=torch.float64)
        values = metrics.neural_collapse(h, y, w)
        assert values["nc1"] >= 0.0
        assert 0.0 <= values["nc2_w"] <= math.sqrt(2) and 0.0 <= values["nc2_m"] <= math.sqrt(2)
        assert 0.0 <= values["nc3"] <= 2.0 and 0.0 <= values["nc4"] <= 1.0


def test_a_huge_label_gives_a_short_message():
    """Labels such as raw ids (10**6) must not print a million absent classes."""
    for call in (lambda: metrics.nc1(_features(), [0, 0, 0, 10**6, 10**6, 10**6]),
                 lambda: metrics.class_means(_features(), [0, 0, 0, 10**6, 10**6, 10**6])):
        with pytest.raises(ValueError, match=r"classes \[ *1 +2 +3 \.\.\.") as err:
            call()
        assert len(str(err.value)) < 300


def test_weighted_ce_of_a_batch_of_zero_weight_is_nan_as_torch():
    """Documented: only zero-weight classes in the batch give 0/0, as torch.nn.CrossEntropyLoss(weight=...)."""
    z, y = _logits(), torch.zeros(N, dtype=torch.long)
    ours = losses.weighted_cross_entropy(z, y, [0.0, 1.0, 1.0])
    ref = torch.nn.CrossEntropyLoss(weight=torch.tensor([0.0, 1.0, 1.0], dtype=torch.float64))(z, y)
    assert math.isnan(float(ours)) and math.isnan(float(ref))
    assert "NaN" in losses.weighted_cross_entropy.__doc__


def test_contrastive_sampler_on_non_contiguous_labels():
    """Labels with gaps (ids 0 and 5): positives stay in the anchor's class and SCL negatives outside it."""
    y = torch.tensor([0, 0, 5, 5, 5])
    a, p, n = losses.contrastive_batch_indices(y, 200, 3, setting="scl", generator=torch.Generator().manual_seed(0))
    assert torch.equal(y[a], y[p]) and (y[n] != y[a][:, None]).all()


def test_r2_similarity_of_points_in_one_place_is_nan_not_noise():
    """Every point at one place up to float32 rounding: the similarities are rounding noise, and their correlation
    with the weights is no result (it was a number in [0, 1])."""
    g = torch.Generator().manual_seed(0)
    z = (torch.tensor([1.0, 2.0, 3.0, 4.0]) + 1e-7 * torch.randn(6, 4, generator=g)).float()
    w = losses.soft_supcon_weights(LABELS, 0.2)
    assert math.isnan(metrics.r2_similarity(z, w))
    assert math.isnan(metrics.r2_similarity(z, w, similarity="euclidean"))
    assert 0.0 <= metrics.r2_similarity(_features(), w) <= 1.0  # ordinary points: a number
