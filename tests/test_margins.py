"""Tests for MR2 (margin rules in ncbook.margins, losses in ncbook.losses, the cosine head in ncbook.models,
the grouping in ncbook.metrics): hand values, limits, naive loops, gradients, state, errors."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook.losses import FixedMarginLoss, MR2Loss, ldam_loss, margin_cross_entropy, representation_margin_loss
from ncbook.margins import class_feature_statistics, ldam_margins, mr2_margins
from ncbook.metrics import difficulty_groups, group_accuracy
from ncbook.models import CosineClassifier, cosine_logits

torch.set_num_threads(1)

LOGITS = torch.tensor([[3.0, 1.0, 0.0], [0.5, 2.0, 1.0], [1.0, 1.2, 0.8]], dtype=torch.float64)
LABELS = torch.tensor([0, 1, 2])


# ----------------------------------------------------------------------------- margins
def test_reference_margins():
    gamma = mr2_margins([4.0, 4.0, 4.0], [1.0, 4.0, 23.0], c_bar=1.0)
    np.testing.assert_allclose(gamma.numpy(), [0.7645, 0.8942, 1.3413], atol=5e-5)
    # by hand: t = (5^(1/3), 2, 3)
    t = np.array([5 ** (1 / 3), 2.0, 3.0])
    np.testing.assert_allclose(gamma.numpy(), 3 * t / t.sum(), rtol=1e-12)


@pytest.mark.parametrize("c_bar", [0.5, 1.0, 2.5])
def test_equal_statistics_give_c_bar(c_bar):
    gamma = mr2_margins(torch.full((7,), 3.0), torch.full((7,), 0.4), c_bar=c_bar)
    np.testing.assert_allclose(gamma.numpy(), c_bar, rtol=1e-7)
    np.testing.assert_allclose(mr2_margins(np.zeros(4), np.zeros(4), c_bar=c_bar).numpy(), c_bar)


def test_margins_mean_scale_invariance_and_monotonicity():
    rng = np.random.default_rng(0)
    norms, devs = rng.uniform(0, 5, 6), rng.uniform(0, 5, 6)
    g = mr2_margins(norms, devs, c_bar=1.7)
    assert g.mean().item() == pytest.approx(1.7)
    np.testing.assert_allclose(mr2_margins(8 * norms, 8 * devs, c_bar=1.7).numpy(), g.numpy(), rtol=1e-12)
    order = np.argsort(norms + devs)
    assert np.all(np.diff(g.numpy()[order]) > 0)


def test_margins_dtype_follows_tensor_input():
    g = mr2_margins(torch.ones(3), torch.tensor([0.0, 1.0, 2.0]))
    assert g.dtype == torch.float32 and g.shape == (3,)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mean_sq_norms=[1.0, 1.0], mean_sq_devs=[1.0, 1.0], c_bar=0.0), "c_bar must be a positive"),
        (dict(mean_sq_norms=[1.0, 1.0], mean_sq_devs=[1.0, 1.0], c_bar=-1.0), "c_bar must be a positive"),
        (dict(mean_sq_norms=[1.0, -0.5], mean_sq_devs=[1.0, 1.0]), r"mean_sq_norms must be >= 0.*class 1"),
        (dict(mean_sq_norms=[1.0, 1.0], mean_sq_devs=[-2.0, 1.0]), r"mean_sq_devs must be >= 0.*class 0"),
        (dict(mean_sq_norms=[1.0, 1.0], mean_sq_devs=[1.0, 1.0, 1.0]), "same shape"),
        (dict(mean_sq_norms=[1.0, float("nan")], mean_sq_devs=[1.0, 1.0]), "must be finite"),
    ],
)
def test_margins_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mr2_margins(**kwargs)


# ----------------------------------------------------------------------------- statistics
def _naive_stats(f, y, C, p):
    norms, devs = np.zeros(C), np.zeros(C)
    for k in range(C):
        fk = f[y == k]
        if len(fk) == 0:
            continue
        mu = fk.mean(0)
        norms[k] = np.sum(np.abs(mu) ** p) ** (2 / p)
        devs[k] = np.mean([np.sum(np.abs(v - mu) ** p) ** (2 / p) for v in fk])
    return norms, devs


@pytest.mark.parametrize("p", [2.0, 3.0, 5.0])
def test_class_statistics_match_naive_loop(p):
    g = torch.Generator().manual_seed(1)
    f = torch.randn(30, 5, generator=g, dtype=torch.float64)
    y = torch.randint(0, 4, (30,), generator=g)
    y[y == 3] = 2  # class 3 absent
    norms, devs, counts = class_feature_statistics(f, y, 4, p=p)
    n_ref, d_ref = _naive_stats(f.numpy(), y.numpy(), 4, p)
    np.testing.assert_allclose(norms.numpy(), n_ref, rtol=1e-10)
    np.testing.assert_allclose(devs.numpy(), d_ref, rtol=1e-10)
    assert counts.tolist() == np.bincount(y.numpy(), minlength=4).tolist() and counts[3] == 0


def test_unit_features_l2_statistics_sum_to_one_but_not_lp():
    f = F.normalize(torch.randn(40, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2)), dim=1)
    y = torch.arange(40) % 4
    norms, devs, _ = class_feature_statistics(f, y, 4, p=2)
    np.testing.assert_allclose((norms + devs).numpy(), 1.0, rtol=1e-12)  # ||mu||^2 + ||s||^2 = E||phi||^2
    np.testing.assert_allclose(mr2_margins(norms, devs).numpy(), 1.0, rtol=1e-10)
    n3, d3, _ = class_feature_statistics(f, y, 4, p=3)
    assert (n3 + d3).std() > 1e-3


def test_statistics_p_below_one_raises():
    with pytest.raises(ValueError, match="p must be >= 1"):
        class_feature_statistics(torch.randn(4, 2), [0, 0, 1, 1], 2, p=0.5)


# ----------------------------------------------------------------------------- logit margin loss
def test_margin_cross_entropy_reference_values():
    ce = F.cross_entropy(LOGITS, LABELS, reduction="none")
    np.testing.assert_allclose(ce.numpy(), [0.1698, 0.4644, 1.3119], atol=5e-5)
    got = margin_cross_entropy(LOGITS, LABELS, [0.8, 1.0, 1.2], reduction="none")
    np.testing.assert_allclose(got.numpy(), [0.1004, 0.4644, 1.2745], atol=5e-5)
    # by hand, row 0: logits / 0.8 = (3.75, 1.25, 0)
    assert got[0].item() == pytest.approx(math.log(1 + math.exp(-2.5) + math.exp(-3.75)), rel=1e-12)
    assert margin_cross_entropy(LOGITS, LABELS, [0.8, 1.0, 1.2], reduction="sum").item() == pytest.approx(got.sum().item())
    assert margin_cross_entropy(LOGITS, LABELS, [0.8, 1.0, 1.2]).item() == pytest.approx(got.mean().item())


def test_margin_cross_entropy_unit_margins_is_ce():
    z = torch.randn(20, 5, generator=torch.Generator().manual_seed(3))
    y = torch.randint(0, 5, (20,), generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(margin_cross_entropy(z, y, torch.ones(5)), F.cross_entropy(z, y))


def test_margin_cross_entropy_naive_loop_and_gradcheck():
    g = torch.Generator().manual_seed(5)
    z = torch.randn(6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 3, 1])
    gamma = torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=torch.float64)
    naive = []
    for i in range(6):
        s = z[i] / gamma[y[i]]
        naive.append(-(s[y[i]] - torch.log(torch.exp(s).sum())))
    torch.testing.assert_close(margin_cross_entropy(z, y, gamma, reduction="none"), torch.stack(naive))
    assert torch.autograd.gradcheck(lambda t: margin_cross_entropy(t, y, gamma), (z,))


@pytest.mark.parametrize(
    "margins, match",
    [([1.0, 0.0, 1.0], r"margins must be finite and > 0; got \[1\. 0\. 1\.\]"), ([1.0, 1.0], r"shape \(3,\)")],
)
def test_margin_cross_entropy_errors(margins, match):
    with pytest.raises(ValueError, match=match):
        margin_cross_entropy(LOGITS, LABELS, margins)
    with pytest.raises(ValueError, match="reduction must be one of"):
        margin_cross_entropy(LOGITS, LABELS, [1.0, 1.0, 1.0], reduction="avg")
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\) \(num_classes = 3\)"):
        margin_cross_entropy(LOGITS, [0, 1, 3], [1.0, 1.0, 1.0])


# ----------------------------------------------------------------------------- representation loss
def _naive_rep(f, y, sbar, T=1.0):
    out = []
    for i in range(len(f)):
        pos = [j for j in range(len(f)) if j != i and y[j] == y[i]]
        if not pos:
            out.append(None)
            continue
        s = sum(math.exp((float(((f[i] - f[j]) ** 2).sum()) - 2 * sbar) / T) for j in pos)
        out.append(math.log1p(s))
    return out


def test_representation_loss_hand_computed_batch():
    phi = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [5.0, 5.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 1])
    # anchor 0: D = 2, 1 ; anchor 1: D = 2, 1 ; anchor 2: D = 1, 1 ; anchor 3: no positive
    sbar = 0.5
    a0 = math.log(1 + math.exp(2 - 1) + math.exp(1 - 1))
    a2 = math.log(1 + 2 * math.exp(0.0))
    per = representation_margin_loss(phi, y, sbar, reduction="none")
    np.testing.assert_allclose(per.numpy(), [a0, a0, a2, 0.0], rtol=1e-12)
    assert representation_margin_loss(phi, y, sbar).item() == pytest.approx((2 * a0 + a2) / 3, rel=1e-12)
    assert representation_margin_loss(phi, y, sbar, reduction="sum").item() == pytest.approx(2 * a0 + a2)
    # code aggregation: mean over class 0's anchors, class 1 skipped, divided by K = 2
    got = representation_margin_loss(phi, y, sbar, reduction="class", num_classes=2)
    assert got.item() == pytest.approx((2 * a0 + a2) / 3 / 2, rel=1e-12)


def test_representation_loss_naive_loop_and_temperature():
    g = torch.Generator().manual_seed(6)
    f = torch.randn(12, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 3, 3, 0, 4])
    for T in (1.0, 7.0):
        ref = _naive_rep(f.numpy(), y.tolist(), 0.3, T)
        got = representation_margin_loss(f, y, 0.3, temperature=T, reduction="none").numpy()
        vals = [r for r in ref if r is not None]
        np.testing.assert_allclose(got[[r is not None for r in ref]], vals, rtol=1e-10)
        np.testing.assert_allclose(got[[r is None for r in ref]], 0.0)
        mean = representation_margin_loss(f, y, 0.3, temperature=T).item()
        assert mean == pytest.approx(np.mean(vals), rel=1e-10)


def test_representation_loss_gradient_matches_finite_differences():
    g = torch.Generator().manual_seed(7)
    f = torch.randn(7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    assert torch.autograd.gradcheck(lambda t: representation_margin_loss(t, y, 0.4), (f,))
    assert torch.autograd.gradcheck(
        lambda t: representation_margin_loss(t, y, 0.0, temperature=30.0, reduction="class", num_classes=4), (f,)
    )
    # explicit central difference on one coordinate
    loss = representation_margin_loss(f, y, 0.4)
    (grad,) = torch.autograd.grad(loss, f)
    eps = 1e-6
    e = torch.zeros_like(f)
    e[1, 2] = eps
    fd = (representation_margin_loss(f + e, y, 0.4) - representation_margin_loss(f - e, y, 0.4)) / (2 * eps)
    assert grad[1, 2].item() == pytest.approx(fd.item(), rel=1e-6)


def test_anchors_without_positives_are_skipped():
    g = torch.Generator().manual_seed(8)
    f = torch.randn(5, 3, generator=g, requires_grad=True)
    base = representation_margin_loss(f[:4], [0, 0, 1, 1], 0.2)
    with_single = representation_margin_loss(f, [0, 0, 1, 1, 2], 0.2)
    assert with_single.item() == pytest.approx(base.item(), rel=1e-6)
    singles = representation_margin_loss(f, [0, 1, 2, 3, 4], 0.2)
    assert singles.item() == 0.0 and singles.requires_grad
    singles.backward()
    assert torch.isfinite(f.grad).all() and (f.grad == 0).all()


def test_representation_loss_far_apart_pairs_stay_finite():
    f = torch.tensor([[0.0], [100.0], [-100.0]], requires_grad=True)
    loss = representation_margin_loss(f, [0, 0, 0], 0.0)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(f.grad).all()
    # anchor 0 has D = 1e4 twice: ln(1 + 2 e^{1e4}) = 1e4 + ln 2 up to e^{-1e4}
    per = representation_margin_loss(f.detach(), [0, 0, 0], 0.0, reduction="none")
    assert per[0].item() == pytest.approx(1e4 + math.log(2), rel=1e-6)


def test_representation_loss_errors():
    f = torch.randn(4, 2)
    with pytest.raises(ValueError, match="sbar must be a finite number >= 0"):
        representation_margin_loss(f, [0, 0, 1, 1], -1.0)
    with pytest.raises(ValueError, match="pass num_classes"):
        representation_margin_loss(f, [0, 0, 1, 1], 0.0, reduction="class")
    with pytest.raises(ValueError, match="reduction must be one of"):
        representation_margin_loss(f, [0, 0, 1, 1], 0.0, reduction="batch")
    with pytest.raises(ValueError, match="temperature must be a positive"):
        representation_margin_loss(f, [0, 0, 1, 1], 0.0, temperature=0.0)
    with pytest.raises(ValueError, match=r"labels must have length 4 \(one label per row\)"):
        representation_margin_loss(f, [0, 0, 1], 0.0)


# ----------------------------------------------------------------------------- MR2Loss
def _batch(seed=0, n=24, C=3, d=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, C, generator=g), torch.arange(n) % C, torch.randn(n, d, generator=g)


def test_mr2loss_ema_by_hand_and_margins():
    z, y, f = _batch(0)
    loss = MR2Loss(3, ema=0.9, lam=0.0)
    assert loss.needs_features and torch.allclose(loss.margins(), torch.ones(3, dtype=torch.float32))
    loss(z, y, f)
    n1, d1, _ = class_feature_statistics(f, y, 3)
    torch.testing.assert_close(loss.mean_sq_norm_ema, n1)
    z2, y2, f2 = _batch(1)
    out = loss(z2, y2, f2)
    n2, d2, _ = class_feature_statistics(f2, y2, 3)
    torch.testing.assert_close(loss.mean_sq_norm_ema, 0.9 * n1 + 0.1 * n2)
    torch.testing.assert_close(loss.mean_sq_dev_ema, 0.9 * d1 + 0.1 * d2)
    gamma = mr2_margins(0.9 * n1 + 0.1 * n2, 0.9 * d1 + 0.1 * d2)
    torch.testing.assert_close(out, margin_cross_entropy(z2, y2, gamma))


def test_mr2loss_total_is_logit_plus_lambda_rep():
    z, y, f = _batch(2)
    loss = MR2Loss(3, lam=0.3, c_bar=1.5)
    out = loss(z, y, f)
    norms, devs, _ = class_feature_statistics(f, y, 3)
    expect = margin_cross_entropy(z, y, mr2_margins(norms, devs, c_bar=1.5)) + 0.3 * representation_margin_loss(
        f, y, devs.mean()
    )
    torch.testing.assert_close(out, expect)
    rep_only = MR2Loss(3, lam=0.3, logit_margins=False)(z, y, f)
    torch.testing.assert_close(rep_only, F.cross_entropy(z, y) + 0.3 * representation_margin_loss(f, y, devs.mean()))


def test_mr2loss_code_mode_matches_official_formula():
    z, y, f = _batch(3, n=20, C=4, d=6)
    y = torch.tensor([0] * 6 + [1] * 6 + [2] * 7 + [3])  # class 3 is a singleton
    loss = MR2Loss(4, mode="code", ema=0.9)
    assert loss.p == 5.0 and loss.lam == 0.1 and loss.reset_each_epoch
    out = loss(z, y, f)
    # independent re-derivation for one batch (EMA = batch statistics on the first batch)
    t, rep = [], 0.0
    for k in range(4):
        fk = f[y == k]
        mu = fk.mean(0)
        t.append((mu.norm(5) ** 2 + ((fk - mu).norm(5, dim=1) ** 2).mean()) ** (1 / 3))
        if len(fk) > 1:
            D = torch.cdist(fk, fk) ** 2
            terms = torch.exp(D / 60.0) - torch.eye(len(fk))
            rep += torch.log1p(terms.sum(1)).mean()
    t = torch.stack(t)
    gamma = 4 * t / t.sum()
    expect = F.cross_entropy(z / gamma[y].unsqueeze(1), y) + 0.1 * rep * 6 / 10 / 4
    torch.testing.assert_close(out, expect, rtol=1e-5, atol=1e-6)


def test_mr2loss_skips_small_classes_and_fills_unseen():
    z, _, f = _batch(4, n=9)
    y = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2])
    loss = MR2Loss(4, lam=0.0)
    loss(z[:, :3].repeat(1, 2)[:, :4], y, f)
    assert loss.seen.tolist() == [True, True, False, False]
    norms, devs = loss.statistics()
    assert norms[2].item() == pytest.approx(loss.mean_sq_norm_ema[:2].mean().item())
    assert devs[3].item() == pytest.approx(loss.mean_sq_dev_ema[:2].mean().item())
    assert loss.margins().mean().item() == pytest.approx(1.0)
    code = MR2Loss(4, mode="code", lam=0.0)
    code(z[:, :3].repeat(1, 2)[:, :4], y, f)
    assert code.seen.tolist() == [True, True, True, False]


def test_mr2loss_state_survives_save_and_load():
    loss = MR2Loss(3, ema=0.5)
    for s in range(3):
        loss(*_batch(s))
    buf = io.BytesIO()
    torch.save(loss.state_dict(), buf)
    buf.seek(0)
    fresh = MR2Loss(3, ema=0.5)
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    assert set(loss.state_dict()) == {"mean_sq_norm_ema", "mean_sq_dev_ema", "seen"}
    torch.testing.assert_close(fresh.margins(), loss.margins())
    z, y, f = _batch(9)
    torch.testing.assert_close(fresh(z, y, f), loss(z, y, f))


def test_set_epoch_resets_only_when_asked():
    paper, code = MR2Loss(3), MR2Loss(3, mode="code")
    for m in (paper, code):
        m(*_batch(0))
        m.set_epoch(1)
    assert paper.seen.all() and not code.seen.any()
    assert (code.mean_sq_norm_ema == 0).all()


def test_mr2loss_backward_and_normalized_features():
    z, y, f = _batch(5)
    z.requires_grad_(True)
    f.requires_grad_(True)
    MR2Loss(3, normalize_features=True, p=3.0)(z, y, f).backward()
    assert torch.isfinite(z.grad).all() and torch.isfinite(f.grad).all() and f.grad.abs().sum() > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(c_bar=0.0), "c_bar must be a positive"),
        (dict(p=0.5), "p must be >= 1"),
        (dict(ema=1.0), r"ema must lie in \[0, 1\)"),
        (dict(lam=-0.1), "lam must be a finite number >= 0"),
        (dict(mode="official"), "mode must be one of"),
    ],
)
def test_mr2loss_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MR2Loss(3, **kwargs)
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2"):
        MR2Loss(1)


# ----------------------------------------------------------------------------- cosine head
def test_cosine_classifier():
    head = CosineClassifier(4, 3, scale=10.0)
    assert head.weight.shape == (3, 4)
    f = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
    z = head(f)
    ref = 10 * torch.stack([torch.stack([F.cosine_similarity(f[i], head.weight[c], dim=0) for c in range(3)]) for i in range(8)])
    torch.testing.assert_close(z, ref)
    torch.testing.assert_close(head(5 * f), z)  # invariant to the feature scale
    assert z.abs().max() <= 10 + 1e-5
    with pytest.raises(ValueError, match="weight must have shape"):
        cosine_logits(f, torch.randn(3, 5))


# ----------------------------------------------------------------------------- fixed margins
def test_ldam_margins_and_additive_loss():
    np.testing.assert_allclose(ldam_margins([50] * 4, max_margin=0.7).numpy(), 0.7)
    np.testing.assert_allclose(ldam_margins([100, 1]).numpy(), [0.5 * 100 ** -0.25, 0.5])
    z = LOGITS.clone()
    torch.testing.assert_close(ldam_loss(z, LABELS, torch.zeros(3), scale=1.0), F.cross_entropy(z, LABELS))
    got = ldam_loss(z, LABELS, [1.0, 1.0, 1.0], scale=2.0, reduction="none")
    # row 0 by hand: 2 * (3 - 1, 1, 0) = (4, 2, 0)
    assert got[0].item() == pytest.approx(math.log(1 + math.exp(-2) + math.exp(-4)))
    mod = FixedMarginLoss([1.0, 1.0, 1.0], scale=2.0)
    assert mod(z.float(), LABELS).item() == pytest.approx(got.mean().item(), rel=1e-6)
    with pytest.raises(ValueError, match="margins must be finite and >= 0"):
        ldam_loss(z, LABELS, [1.0, -1.0, 1.0])


# ----------------------------------------------------------------------------- difficulty groups
def test_difficulty_groups_thirds():
    acc = np.array([0.9, 0.5, 1.0, 0.7, 0.95, 0.6, 0.8, 0.85, 0.3, 0.99])
    groups = difficulty_groups(acc)
    assert [len(v) for v in groups.values()] == [4, 3, 3]
    assert groups["easy"].tolist() == [0, 2, 4, 9]
    assert groups["hard"].tolist() == [1, 5, 8]
    means = group_accuracy(acc, groups)
    assert means["easy"] == pytest.approx(np.mean([0.9, 1.0, 0.95, 0.99]))
    assert means["easy"] > means["medium"] > means["hard"]
    with pytest.raises(ValueError, match="at least 3 classes"):
        difficulty_groups([0.5, 0.6])
