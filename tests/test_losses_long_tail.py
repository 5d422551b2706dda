"""Tests of the long-tailed baselines in ncbook.losses against direct formulas on small batches."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook.losses import (
    FocalLoss,
    IBLoss,
    LDAMLoss,
    LogitAdjustedLoss,
    WeightedCrossEntropy,
    focal_loss,
    ib_loss,
    ldam_loss,
    logit_adjusted_loss,
    logit_adjustment,
    weighted_cross_entropy,
)
from ncbook.margins import ldam_margins
from ncbook.reweighting import effective_number_weights, inverse_frequency_weights

torch.set_num_threads(1)

COUNTS = [40, 12, 5, 2]
CIFAR10_LT_100 = [int(5000 * 0.01 ** (i / 9)) for i in range(10)]


def _batch(n=10, c=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, c, generator=g, dtype=torch.float64), torch.randint(c, (n,), generator=g)


def _logp(z, y):
    return [math.log(math.exp(z[i][y[i]]) / sum(math.exp(v) for v in z[i])) for i in range(len(y))]


def test_weighted_ce_normalisers():
    z, y = _batch()
    w = torch.tensor([0.2, 1.0, 2.0, 3.0], dtype=torch.float64)
    lp = _logp(z.tolist(), y.tolist())
    wy = [w[k].item() for k in y.tolist()]
    by_weights = -sum(a * b for a, b in zip(wy, lp)) / sum(wy)
    by_batch = -sum(a * b for a, b in zip(wy, lp)) / len(lp)
    assert weighted_cross_entropy(z, y, w).item() == pytest.approx(by_weights, rel=1e-12)
    assert weighted_cross_entropy(z, y, w).item() == pytest.approx(torch.nn.CrossEntropyLoss(weight=w)(z, y).item())
    assert weighted_cross_entropy(z, y, w, normalizer="batch").item() == pytest.approx(by_batch, rel=1e-12)
    assert WeightedCrossEntropy(w)(z, y).item() == pytest.approx(by_weights, rel=1e-12)
    assert weighted_cross_entropy(z, y).item() == pytest.approx(F.cross_entropy(z, y).item())


def test_focal_direct_formula_and_gamma_zero():
    z, y = _batch()
    lp = _logp(z.tolist(), y.tolist())
    want = sum(-((1 - math.exp(v)) ** 2) * v for v in lp) / len(lp)
    assert focal_loss(z, y, gamma=2.0).item() == pytest.approx(want, rel=1e-12)
    assert focal_loss(z, y, gamma=0.0).item() == pytest.approx(F.cross_entropy(z, y).item(), rel=1e-12)
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)
    want_w = sum(-w[k].item() * (1 - math.exp(v)) * v for k, v in zip(y.tolist(), lp)) / len(lp)
    assert FocalLoss(gamma=1.0, weight=w)(z, y).item() == pytest.approx(want_w, rel=1e-12)


def test_ldam_margins_reference_values():
    m = ldam_margins(CIFAR10_LT_100, 0.5)
    assert m.max().item() == pytest.approx(0.5) and m.min().item() == pytest.approx(0.1581, abs=5e-5)
    assert m[-1].item() == pytest.approx(0.5) and m.argmin().item() == 0
    np.testing.assert_allclose(ldam_margins([16, 1]), [0.25, 0.5])


def test_ldam_direct_formula_and_drw():
    z, y = _batch()
    m = ldam_margins(COUNTS).tolist()
    s = 30.0
    rows = []
    for i, k in enumerate(y.tolist()):
        zz = [s * (z[i, j].item() - (m[k] if j == k else 0.0)) for j in range(4)]
        rows.append(-(zz[k] - math.log(sum(math.exp(v) for v in zz))))
    assert ldam_loss(z, y, m).item() == pytest.approx(sum(rows) / len(rows), rel=1e-10)
    w = effective_number_weights(COUNTS)
    wy = [w[k].item() for k in y.tolist()]
    want_w = sum(a * b for a, b in zip(wy, rows)) / sum(wy)
    loss_fn = LDAMLoss(COUNTS, drw_epoch=2)
    loss_fn.set_epoch(1)
    assert loss_fn(z, y).item() == pytest.approx(sum(rows) / len(rows), rel=1e-10)
    loss_fn.set_epoch(2)
    assert loss_fn(z, y).item() == pytest.approx(want_w, rel=1e-10)
    assert "epoch" in loss_fn.state_dict()


def test_logit_adjusted_loss_and_post_hoc():
    z, y = _batch()
    pi = np.array(COUNTS) / sum(COUNTS)
    shifted = z + torch.as_tensor(np.log(pi))
    assert logit_adjusted_loss(z, y, COUNTS).item() == pytest.approx(F.cross_entropy(shifted, y).item(), rel=1e-12)
    assert logit_adjusted_loss(z, y, COUNTS, tau=0.0).item() == pytest.approx(F.cross_entropy(z, y).item())
    assert LogitAdjustedLoss(COUNTS, tau=1.0)(z, y).item() == pytest.approx(F.cross_entropy(shifted, y).item())
    np.testing.assert_allclose(logit_adjustment(shifted, COUNTS), z, atol=1e-12)
    # equal logits: post-hoc adjustment predicts the rarest class
    assert logit_adjustment(torch.zeros(1, 4), COUNTS).argmax().item() == 3


def test_ib_direct_formula_and_module():
    z, y = _batch()
    h = torch.randn(10, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    p = F.softmax(z, 1)
    w = inverse_frequency_weights(COUNTS)
    total = 0.0
    for i, k in enumerate(y.tolist()):
        g1 = sum(abs(p[i, j].item() - (1.0 if j == k else 0.0)) for j in range(4))
        infl = g1 * h[i].abs().sum().item()
        total += w[k].item() * -math.log(p[i, k].item()) * 1000.0 / (infl + 1e-3)
    assert ib_loss(z, y, h, weight=w).item() == pytest.approx(total / 10, rel=1e-10)
    loss_fn = IBLoss(COUNTS, start_epoch=1)
    assert loss_fn.needs_features is True
    loss_fn.set_epoch(0)
    assert loss_fn(z, y, h).item() == pytest.approx(F.cross_entropy(z, y).item())
    loss_fn.set_epoch(1)
    assert loss_fn(z, y, h).item() == pytest.approx(total / 10, rel=1e-10)


@pytest.mark.parametrize("fn", [
    lambda z, y, r: focal_loss(z, y, gamma=1.0, reduction=r),
    lambda z, y, r: logit_adjusted_loss(z, y, COUNTS, reduction=r),
    lambda z, y, r: ldam_loss(z, y, ldam_margins(COUNTS), reduction=r),
])
def test_reduction_contract(fn):
    z, y = _batch()
    per = fn(z, y, "none")
    assert per.shape == (10,)
    assert fn(z, y, "sum").item() == pytest.approx(per.sum().item())
    assert fn(z, y, "mean").item() == pytest.approx(per.mean().item())


def test_gradcheck_ib_and_ldam():
    z, y = _batch(n=6, c=3)
    h = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    zz = z.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: ib_loss(a, y, b, alpha=1.0, eps=0.1), (zz, h))
    assert torch.autograd.gradcheck(lambda a: ldam_loss(a, y, [0.1, 0.2, 0.5], scale=2.0), (zz,))


def test_bad_inputs_raise():
    z, y = _batch()
    with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
        focal_loss(z, y, gamma=-1.0)
    with pytest.raises(ValueError, match="counts must be positive integers"):
        ldam_margins([10, 0])
    with pytest.raises(ValueError, match="counts must be positive integers"):
        logit_adjusted_loss(z, y, [10, 5, 0, 1])
    with pytest.raises(ValueError, match="weight must be finite and >= 0"):
        weighted_cross_entropy(z, y, [1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\)"):
        focal_loss(z, y, weight=[1.0, 1.0])
    with pytest.raises(ValueError, match="normalizer must be one of"):
        weighted_cross_entropy(z, y, normalizer="sum")
    with pytest.raises(ValueError, match=r"features must have 10 rows \(one per label\)"):
        ib_loss(z, y, torch.zeros(3, 2))
    with pytest.raises(ValueError, match="counts must have one entry per class"):
        logit_adjustment(z, [1, 2])
