"""Tests of the generalized contrastive losses and UCL/SCL sampling."""

import math

import pytest
import torch
import torch.nn.functional as F

from ncbook.losses import (
    GeneralizedContrastiveLoss,
    contrastive_batch_indices,
    generalized_contrastive_loss,
    info_nce,
)

torch.set_num_threads(1)


def _naive_info_nce(a, p, negs, t):
    out = []
    for i in range(a.shape[0]):
        ai, pi = a[i] / a[i].norm(), p[i] / p[i].norm()
        total = 1.0
        for j in range(negs.shape[1]):
            nj = negs[i, j] / negs[i, j].norm()
            total += math.exp(float(ai @ nj - ai @ pi) / t)
        out.append(math.log(total))
    return torch.tensor(out, dtype=torch.float64)


def _batch(n=5, k=3, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(n, d, generator=g, dtype=torch.float64),
            torch.randn(n, k, d, generator=g, dtype=torch.float64))


def test_hand_value():
    a = torch.tensor([[1.0, 0.0]])
    neg = torch.tensor([[[-1.0, 0.0], [0.0, 1.0]]])
    assert float(info_nce(a, a, neg, temperature=0.5)) == pytest.approx(math.log(1 + math.exp(-4) + math.exp(-2)))


@pytest.mark.parametrize("t", [0.1, 1.0, 2.5])
def test_info_nce_matches_naive_loop_and_cross_entropy(t):
    a, p, negs = _batch()
    got = info_nce(a, p, negs, t, reduction="none")
    torch.testing.assert_close(got, _naive_info_nce(a, p, negs, t))
    an, pn, nn_ = F.normalize(a, dim=-1), F.normalize(p, dim=-1), F.normalize(negs, dim=-1)
    logits = torch.cat([(an * pn).sum(-1, keepdim=True), torch.einsum("nd,nkd->nk", an, nn_)], 1) / t
    ce = F.cross_entropy(logits, torch.zeros(a.shape[0], dtype=torch.long), reduction="none")
    torch.testing.assert_close(got, ce)


def test_exp_psi_and_callable_psi():
    a, p, negs = _batch(seed=1)
    z = torch.einsum("nd,nkd->nk", F.normalize(a, dim=-1), F.normalize(negs, dim=-1)) - (
        F.normalize(a, dim=-1) * F.normalize(p, dim=-1)).sum(-1, keepdim=True)
    torch.testing.assert_close(generalized_contrastive_loss(a, p, negs, temperature=0.5, psi="exp", reduction="none"),
                               (z / 0.5).exp().sum(-1))
    sq = generalized_contrastive_loss(a, p, negs, temperature=0.5, psi=lambda u: (u + 10).pow(2).sum(-1), reduction="sum")
    torch.testing.assert_close(sq, ((z / 0.5 + 10) ** 2).sum())


def test_gradcheck_and_reductions():
    a, p, negs = _batch(n=3, k=2, d=3, seed=2)
    for x in (a, p, negs):
        x.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda u, v, w: info_nce(u, v, w, 0.7, reduction="none"), (a, p, negs))
    loss = GeneralizedContrastiveLoss(temperature=0.7, reduction="sum")
    torch.testing.assert_close(loss(a, p, negs), info_nce(a, p, negs, 0.7, reduction="none").sum())
    torch.testing.assert_close(info_nce(a, p, negs, 0.7), info_nce(a, p, negs, 0.7, reduction="none").mean())


def test_bad_inputs():
    a, p, negs = _batch()
    with pytest.raises(ValueError, match="negatives must have shape"):
        info_nce(a, p, negs[:2])
    with pytest.raises(ValueError, match="temperature must be a positive"):
        info_nce(a, p, negs, 0.0)
    with pytest.raises(ValueError, match="psi must be one of"):
        generalized_contrastive_loss(a, p, negs, psi="hinge")
    with pytest.raises(ValueError, match="k \\(negatives per anchor\\) must be an integer >= 1"):
        contrastive_batch_indices(torch.tensor([0, 1]), 4, 0)


@pytest.mark.parametrize("setting", ["ucl", "scl"])
def test_sampling_distributions(setting):
    labels = torch.tensor([0] * 60 + [1] * 30 + [2] * 10)
    lam = torch.tensor([0.6, 0.3, 0.1])
    g = torch.Generator().manual_seed(0)
    anc, pos, neg = contrastive_batch_indices(labels, 20000, 3, setting=setting, generator=g)
    y = labels[anc]
    assert torch.equal(labels[pos], y)  # positives come from the anchor's class
    freq = torch.bincount(y, minlength=3) / y.numel()
    assert torch.allclose(freq, lam, atol=0.015)
    ny = labels[neg]
    for c in range(3):
        got = torch.bincount(ny[y == c].ravel(), minlength=3).double()
        got /= got.sum()
        want = lam.double().clone()
        if setting == "scl":
            assert got[c] == 0  # never the anchor's class
            want[c] = 0
            want /= want.sum()
        assert torch.allclose(got, want, atol=0.02)
    # positives are drawn independently: within the class they are uniform, not the anchor itself
    assert (pos != anc).float().mean() > 0.8
