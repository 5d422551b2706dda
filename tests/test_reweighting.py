"""Tests of ncbook.reweighting: closed forms, limits, the detach identity, resume, errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook.losses import InverseReweightedCE, inverse_reweighted_ce
from ncbook.reweighting import (
    batch_class_losses,
    effective_number_weights,
    inverse_frequency_weights,
    inverse_weights,
    macro_factors,
    prior_weights,
)

torch.set_num_threads(1)

L4 = [0.5, 1.0, 2.0, 4.0]
CIFAR10_LT_100 = [int(5000 * 0.01 ** (i / 9)) for i in range(10)]  # 5000 ... 50


def _batch(n=24, c=4, seed=0, dtype=torch.float64, missing=()):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g, dtype=dtype) * 2
    allowed = torch.tensor([k for k in range(c) if k not in missing])
    labels = allowed[torch.randint(len(allowed), (n,), generator=g)]
    labels[: len(allowed)] = allowed  # every allowed class present
    return logits, labels


# ----------------------------------------------------------------------------- closed form
def test_spec_worked_values():
    np.testing.assert_allclose(inverse_weights(L4, eps=0.0), [3.75, 1.875, 0.9375, 0.46875], rtol=1e-14)
    np.testing.assert_allclose(inverse_weights(L4, alpha=1.0, eps=0.0), [1.55, 1.4375, 0.95, 0.5], rtol=1e-14)
    np.testing.assert_allclose(inverse_weights(L4, alpha=1e6), 1.0, atol=1e-5)


def test_alpha_zero_equalises_weighted_losses():
    losses = torch.tensor([0.3, 0.7, 1.9, 2.2, 5.0], dtype=torch.float64)
    w = inverse_weights(losses, alpha=0.0, eps=0.0)
    np.testing.assert_allclose(w * losses, losses.mean().expand(5), rtol=1e-14)


def test_alpha_to_infinity_gives_prior_and_objective_is_minimised():
    prior = torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=torch.float64)  # mean 1.25 -> normalised
    w0 = prior / prior.mean()
    np.testing.assert_allclose(inverse_weights(L4, prior=prior, alpha=1e9), w0, rtol=1e-7)
    # the closed form minimises (w L - Lbar)^2 + alpha (w - w0)^2 class by class
    alpha, lbar = 0.7, float(np.mean(L4))
    w = inverse_weights(L4, prior=prior, alpha=alpha, eps=0.0).numpy()
    for c, lc in enumerate(L4):
        grid = w[c] + np.linspace(-1e-3, 1e-3, 201)
        obj = (grid * lc - lbar) ** 2 + alpha * (grid - w0[c].item()) ** 2
        assert np.argmin(obj) == 100


def test_absent_classes_keep_prior_and_lbar_over_present_only():
    prior = [1.0, 2.0, 3.0, 2.0]  # mean 2 -> [0.5, 1, 1.5, 1]
    w = inverse_weights([1.0, float("nan"), 3.0, float("nan")], prior=prior, eps=0.0)
    np.testing.assert_allclose(w, [2.0, 1.0, 2.0 / 3.0, 1.0], rtol=1e-14)  # Lbar = 2 over present classes
    np.testing.assert_allclose(inverse_weights([float("nan")] * 3), 1.0)


def test_batch_class_losses_naive_loop():
    logits, labels = _batch(missing=(2,))
    ce = F.cross_entropy(logits, labels, reduction="none")
    got = batch_class_losses(ce, labels, 4)
    for c in range(4):
        if c == 2:
            assert math.isnan(got[c])
        else:
            assert got[c].item() == pytest.approx(ce[labels == c].mean().item(), rel=1e-14)


def test_macro_factors_mean_one_and_limits():
    b = torch.tensor([0.0, 1.0, 4.0, 100.0])
    beta = macro_factors(b, 1.0)
    assert beta.mean().item() == pytest.approx(1.0, abs=1e-14)
    raw = np.array([1.0, 1.0, 0.25, 0.01])
    np.testing.assert_allclose(beta, raw / raw.mean(), rtol=1e-14)
    np.testing.assert_allclose(macro_factors(b, 0.0), 1.0)
    np.testing.assert_allclose(macro_factors(b, 0.5), np.array([1, 1, 0.5, 0.1]) / 0.65, rtol=1e-14)


def test_count_based_weights_cifar10_lt():
    inv = inverse_frequency_weights(CIFAR10_LT_100)
    cb = effective_number_weights(CIFAR10_LT_100, 0.9999)
    assert inv.sum().item() == pytest.approx(10.0) and cb.sum().item() == pytest.approx(10.0)
    assert (inv.min().item(), inv.max().item()) == (pytest.approx(0.0402, abs=5e-5), pytest.approx(4.0236, abs=5e-5))
    assert (cb.min().item(), cb.max().item()) == (pytest.approx(0.0506, abs=5e-5), pytest.approx(3.9927, abs=5e-5))
    np.testing.assert_allclose(effective_number_weights([5, 50, 500], 0.0), 1.0)
    # beta -> 1 tends to inverse frequency
    np.testing.assert_allclose(effective_number_weights([5, 50, 500], 1 - 1e-9), inverse_frequency_weights([5, 50, 500]), rtol=1e-5)


def test_prior_weights_options():
    np.testing.assert_allclose(prior_weights(3, "inv_freq", [1, 2, 4]), np.array([1, 0.5, 0.25]) / (1.75 / 3))
    np.testing.assert_allclose(prior_weights(2, "inv_sqrt_freq", [1, 4]), np.array([1, 0.5]) / 0.75)
    assert prior_weights(3).tolist() == [1.0, 1.0, 1.0]


# ----------------------------------------------------------------------------- the loss
def _naive_irce(logits, labels, prior, alpha, beta, clamp):
    """A loop transcription of the closed form and the batch-size normaliser."""
    c = logits.shape[1]
    ce = F.cross_entropy(logits, labels, reduction="none")
    present = [k for k in range(c) if (labels == k).any()]
    lc = {k: ce[labels == k].mean() for k in present}
    lbar = sum(lc.values()) / len(present)
    total = 0.0
    for i in range(len(labels)):
        k = int(labels[i])
        w = (lbar * lc[k] + alpha * prior[k]) / (lc[k] ** 2 + alpha + 1e-8) * beta[k]
        total = total + torch.clamp(w, 0.0, clamp) * ce[i]
    return total / len(labels)


@pytest.mark.parametrize("alpha,clamp", [(0.0, 10.0), (0.5, 10.0), (0.0, 1.2)])
def test_loss_matches_naive_loop(alpha, clamp):
    logits, labels = _batch(missing=(1,))
    prior = torch.tensor([1.0, 2.0, 0.5, 0.5], dtype=torch.float64)
    beta = torch.tensor([0.4, 1.2, 1.6, 0.8], dtype=torch.float64)
    got = inverse_reweighted_ce(logits, labels, prior=prior, alpha=alpha, macro=beta, clamp=clamp)
    want = _naive_irce(logits, labels, prior / prior.mean(), alpha, beta, clamp)
    assert got.item() == pytest.approx(want.item(), rel=1e-12)


def test_non_detached_loss_is_class_balanced_batch_mean():
    """alpha = 0, no clamp: loss = Lbar * sum_c beta_c n_c / n, and so is its gradient."""
    logits, labels = _batch(n=30, c=5, missing=(3,))
    beta = macro_factors([3, 1, 7, 0, 2], 1.0)
    z1 = logits.clone().requires_grad_(True)
    loss = inverse_reweighted_ce(z1, labels, macro=beta, clamp=None, eps=0.0)
    z2 = logits.clone().requires_grad_(True)
    lc = batch_class_losses(F.cross_entropy(z2, labels, reduction="none"), labels, 5)
    n_c = torch.bincount(labels, minlength=5).double()
    balanced = torch.nanmean(lc) * (beta * n_c).sum() / len(labels)
    assert loss.item() == pytest.approx(balanced.item(), rel=1e-12)
    (g1,) = torch.autograd.grad(loss, z1)
    (g2,) = torch.autograd.grad(balanced, z2)
    np.testing.assert_allclose(g1, g2, atol=1e-12)


def test_detached_gradient_coefficients():
    """detach=True: gradient of sum_c (n_c/n) beta_c (Lbar/L_c) L_c with the coefficients frozen."""
    logits, labels = _batch(n=30, c=5)
    beta = macro_factors([3, 1, 7, 4, 2], 1.0)
    z1 = logits.clone().requires_grad_(True)
    loss = inverse_reweighted_ce(z1, labels, macro=beta, clamp=None, eps=0.0, detach=True)
    z2 = logits.clone().requires_grad_(True)
    lc = batch_class_losses(F.cross_entropy(z2, labels, reduction="none"), labels, 5)
    n_c = torch.bincount(labels, minlength=5).double()
    coef = (n_c / len(labels) * beta * lc.mean() / lc).detach()
    (g1,) = torch.autograd.grad(loss, z1)
    (g2,) = torch.autograd.grad((coef * lc).sum(), z2)
    np.testing.assert_allclose(g1, g2, atol=1e-12)
    # and it differs from the non-detached gradient
    z3 = logits.clone().requires_grad_(True)
    (g3,) = torch.autograd.grad(inverse_reweighted_ce(z3, labels, macro=beta, clamp=None), z3)
    assert (g1 - g3).abs().max() > 1e-3


def test_gradcheck_float64():
    logits, labels = _batch(n=12, c=3)
    z = logits.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: inverse_reweighted_ce(t, labels, alpha=0.3, clamp=None), (z,))


def test_reductions():
    logits, labels = _batch()
    per = inverse_reweighted_ce(logits, labels, reduction="none")
    assert per.shape == (24,)
    assert inverse_reweighted_ce(logits, labels, reduction="sum").item() == pytest.approx(per.sum().item())
    assert inverse_reweighted_ce(logits, labels).item() == pytest.approx(per.mean().item())


# ----------------------------------------------------------------------------- the module
def _stream(num_batches, c=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    probs = torch.tensor([0.7, 0.2, 0.07, 0.03])
    return [(torch.randn(16, c, generator=g, dtype=torch.float64),
             torch.multinomial(probs, 16, replacement=True, generator=g)) for _ in range(num_batches)]


def test_module_switch_epoch_and_counts():
    loss_fn = InverseReweightedCE(4, switch_epoch=1, gamma=1.0)
    batches = _stream(3)
    loss_fn.set_epoch(0)
    for z, y in batches:
        assert loss_fn(z, y).item() == pytest.approx(F.cross_entropy(z, y).item())
    assert loss_fn.batch_counts.sum().item() == 0
    loss_fn.set_epoch(1)  # B = 0 -> beta = 1 in the switch epoch itself
    np.testing.assert_allclose(loss_fn.macro_weight, 1.0)
    for z, y in batches:
        assert loss_fn(z, y).item() == pytest.approx(inverse_reweighted_ce(z, y).item())
    want = np.array([sum(int((y == k).any()) for _, y in batches) for k in range(4)], dtype=float)
    np.testing.assert_array_equal(loss_fn.batch_counts, want)
    loss_fn.set_epoch(2)
    np.testing.assert_allclose(loss_fn.macro_weight, macro_factors(want, 1.0))
    loss_fn.eval()  # evaluation calls do not count
    loss_fn(*batches[0])
    np.testing.assert_array_equal(loss_fn.batch_counts, want)


def test_resume_restores_batch_counts_exactly():
    batches = _stream(12)

    def run(loss_fn, epochs, start=0):
        out = []
        for epoch in range(start, epochs):
            loss_fn.set_epoch(epoch)
            out += [loss_fn(z, y).item() for z, y in batches[3 * epoch: 3 * epoch + 3]]
        return out

    full = InverseReweightedCE(4, switch_epoch=1, prior="inv_freq", counts=[70, 20, 7, 3])
    ref = run(full, 4)
    first = InverseReweightedCE(4, switch_epoch=1, prior="inv_freq", counts=[70, 20, 7, 3])
    part1 = run(first, 2)
    state = {k: v.clone() for k, v in first.state_dict().items()}
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    resumed = InverseReweightedCE(4, switch_epoch=1, prior="inv_freq", counts=[70, 20, 7, 3])
    resumed.load_state_dict(state)
    part2 = run(resumed, 4, start=2)
    assert part1 + part2 == ref
    assert torch.equal(resumed.batch_counts, full.batch_counts)
    assert torch.equal(resumed.macro_weight, full.macro_weight)


def test_module_float32_and_detach_flag():
    z, y = _batch(dtype=torch.float32)
    a = InverseReweightedCE(4)(z, y)
    b = InverseReweightedCE(4, detach=True)(z, y)
    assert a.dtype == torch.float32 and a.item() == pytest.approx(b.item(), rel=1e-6)  # same value
    assert InverseReweightedCE(4).detach is False


# ----------------------------------------------------------------------------- errors
def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="class_losses must be >= 0"):
        inverse_weights([1.0, -0.1])
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        inverse_weights([1.0, 2.0], alpha=-1.0)
    with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
        macro_factors([1, 2], gamma=-0.5)
    with pytest.raises(ValueError, match="batch_counts must be finite and >= 0"):
        macro_factors([1, -2])
    with pytest.raises(ValueError, match="counts must be positive integers"):
        inverse_frequency_weights([10, 0, 3])
    with pytest.raises(ValueError, match="counts must be positive integers"):
        effective_number_weights([10, -1])
    with pytest.raises(ValueError, match=r"beta must lie in \[0, 1\)"):
        effective_number_weights([10, 5], beta=1.0)
    with pytest.raises(ValueError, match="needs the training counts"):
        InverseReweightedCE(3, prior="inv_freq")
    with pytest.raises(ValueError, match="prior must have num_classes = 3"):
        inverse_weights([1.0, 2.0, 3.0], prior=[1.0, 1.0])
    with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
        InverseReweightedCE(3, gamma=-1.0)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\)"):
        inverse_reweighted_ce(torch.zeros(2, 3), torch.tensor([0, 3]))
