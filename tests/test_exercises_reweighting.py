"""The reweighting chapter's autograder checks: the chapter's solutions pass, planted mistakes fail with
a message naming the input, expected and received values, stubs report "not implemented yet"; and the
chapter's figures keep their legends off the data."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from ncbook.exercises import (  # noqa: E402
    check_balanced_batch_loss,
    check_cb_weight_ratio,
    check_ema_inverse_weights,
    check_expected_batch_factor,
    check_macro_factors,
    check_official_coefficients,
)
from ncbook.plotting import class_loss_curves, loss_imbalance_curves, weight_paths  # noqa: E402
from ncbook.reweighting import effective_number_weights, inverse_weights, macro_factors  # noqa: E402

torch.set_num_threads(1)


def not_implemented(**kwargs):
    raise NotImplementedError


# --------------------------------------------------------------------------- ex-reweighting-1
def closed_form_coefficients(class_losses, samples_per_class, prior, alpha):  # the chapter's solution
    present = ~torch.isnan(class_losses)
    L = torch.where(present, class_losses, torch.zeros_like(class_losses))
    p = samples_per_class / samples_per_class.sum()
    lbar = L[present].mean()
    den = torch.where(present, L ** 2 + alpha, torch.ones_like(L))
    direct = p * alpha * (2 * lbar * L + prior * (alpha - L ** 2)) / den ** 2
    via_mean = (p * L ** 2 / den)[present].sum() / present.sum()
    return torch.where(present, direct + via_mean, torch.zeros_like(L))


def finite_difference_coefficients(class_losses, samples_per_class, prior, alpha, h=1e-6):
    """An independent route: central differences of the loss written one class at a time."""
    c = len(class_losses)
    present = [k for k in range(c) if not math.isnan(float(class_losses[k]))]
    b = float(samples_per_class.sum())

    def loss(values):
        lbar = sum(values[k] for k in present) / len(present)
        return sum(float(samples_per_class[k]) / b * (lbar * values[k] + alpha * float(prior[k])) / (values[k] ** 2 + alpha)
                   * values[k] for k in present)

    base = [float(v) for v in class_losses]
    out = []
    for k in range(c):
        if k not in present:
            out.append(0.0)
            continue
        up, down = list(base), list(base)
        up[k] += h
        down[k] -= h
        out.append((loss(up) - loss(down)) / (2 * h))
    return torch.tensor(out, dtype=torch.float64)


def test_official_coefficients_check_passes_the_solution_and_agrees_with_finite_differences():
    assert check_official_coefficients(closed_form_coefficients)
    L, counts, prior = torch.tensor([0.7, float("nan"), 2.0, 0.3], dtype=torch.float64), \
        torch.tensor([10.0, 0.0, 3.0, 20.0], dtype=torch.float64), torch.tensor([0.5, 1.5, 1.0, 1.0], dtype=torch.float64)
    for alpha in (0.0, 0.4, 7.0):
        np.testing.assert_allclose(closed_form_coefficients(L, counts, prior, alpha),
                                   finite_difference_coefficients(L, counts, prior, alpha), atol=1e-7)
    # the limits the solution states: equal coefficients 1/|C_B| at alpha = 0, b_c u0_c / b as alpha -> inf
    np.testing.assert_allclose(closed_form_coefficients(L, counts, prior, 0.0), [1 / 3, 0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(closed_form_coefficients(L, counts, prior, 1e9), counts * prior / counts.sum(), atol=1e-7)


def test_official_coefficients_check_names_the_mistakes():
    def forgot_the_mean(class_losses, samples_per_class, prior, alpha):  # u* treated as if Lbar were a constant
        present = ~torch.isnan(class_losses)
        L = torch.where(present, class_losses, torch.zeros_like(class_losses))
        p = samples_per_class / samples_per_class.sum()
        lbar = L[present].mean()
        den = torch.where(present, L ** 2 + alpha, torch.ones_like(L))
        return torch.where(present, p * alpha * (2 * lbar * L + prior * (alpha - L ** 2)) / den ** 2,
                           torch.zeros_like(L))

    res = check_official_coefficients(forgot_the_mean)
    assert not res and "expected" in res.message and "got" in res.message and "class_losses" in res.message
    assert "derive the coefficients by hand" in res.message

    def detached(class_losses, samples_per_class, prior, alpha):  # the detached weights' coefficients (b_c/b) u*_c
        u = inverse_weights(class_losses, prior=prior, alpha=alpha, eps=0.0)
        return torch.where(torch.isnan(class_losses), torch.zeros_like(u), samples_per_class / samples_per_class.sum() * u)

    res = check_official_coefficients(detached)
    assert not res and "ncbook.reweighting.inverse_weights" in res.message

    def by_autograd(class_losses, samples_per_class, prior, alpha):
        x = torch.nan_to_num(class_losses).requires_grad_(True)
        present = ~torch.isnan(class_losses)
        lbar = x[present].mean()
        u = (lbar * x + alpha * prior) / torch.where(present, x ** 2 + alpha, torch.ones_like(x))
        g, = torch.autograd.grad((samples_per_class / samples_per_class.sum() * u * x).sum(), x)
        return g

    res = check_official_coefficients(by_autograd)
    assert not res and "torch.autograd.grad" in res.message
    res = check_official_coefficients(not_implemented)
    assert not res and "not implemented yet" in res.message


# --------------------------------------------------------------------------- ex-reweighting-2
def test_macro_factors_check():
    def by_hand(batch_counts, kappa):
        beta = [max(float(b), 1.0) ** -kappa for b in batch_counts]
        return torch.tensor(beta, dtype=torch.float64) * len(beta) / sum(beta)

    assert check_macro_factors(by_hand)
    res = check_macro_factors(lambda batch_counts, kappa: batch_counts.clamp(min=1) ** -kappa)  # not normalised
    assert not res and "expected" in res.message and "batch_counts" in res.message
    res = check_macro_factors(lambda batch_counts, kappa: batch_counts ** -kappa / (batch_counts ** -kappa).mean())
    assert not res and "non-finite" in res.message        # an unseen class (B_c = 0) gives inf, not max(B_c, 1)
    assert "itself" in check_macro_factors(macro_factors).message
    res = check_macro_factors(lambda batch_counts, gamma: macro_factors(batch_counts, gamma))
    assert not res and "rename the parameters" in res.message
    assert "not implemented yet" in check_macro_factors(not_implemented).message


def test_expected_batch_factor_check_and_a_simulated_stream():
    def solution(counts, macro):  # the chapter's solution: sum_c pi_c beta_c
        return (macro * counts).sum() / counts.sum()

    assert check_expected_batch_factor(solution)
    # the derivation against batches drawn without replacement, as the chapter's stream draws them
    counts = torch.tensor([124.0, 80, 51, 33, 21, 14, 9, 5, 3, 2], dtype=torch.float64)
    beta = macro_factors(torch.tensor([300.0, 299, 290, 270, 240, 200, 150, 100, 60, 40]), gamma=1.0).double()
    y = torch.repeat_interleave(torch.arange(10), counts.long())
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([beta[y[torch.randperm(len(y), generator=g)[:128]]].mean() for _ in range(4000)])
    assert abs(float(draws.mean()) - float(solution(counts, beta))) < 4 * float(draws.std()) / 4000 ** 0.5
    assert float(solution(counts, beta)) < 1.0     # Chebyshev's sum inequality: beta and pi ordered oppositely
    res = check_expected_batch_factor(lambda counts, macro: macro.mean())   # the unweighted mean: always 1
    assert not res and "expected" in res.message and "counts" in res.message
    assert "not implemented yet" in check_expected_batch_factor(not_implemented).message


# --------------------------------------------------------------------------- ex-reweighting-3
def test_balanced_batch_loss_check():
    def reference(logits, labels, num_classes):
        ce = F.cross_entropy(logits, labels, reduction="none")
        return torch.stack([ce[labels == k].mean() for k in labels.unique()]).mean()

    assert check_balanced_batch_loss(reference)
    res = check_balanced_batch_loss(lambda logits, labels, num_classes: F.cross_entropy(logits, labels))
    assert not res and "expected" in res.message and "logits" in res.message

    def nan_for_absent(logits, labels, num_classes):
        ce = F.cross_entropy(logits, labels, reduction="none")
        return torch.stack([ce[labels == k].mean() for k in range(num_classes)]).mean()

    res = check_balanced_batch_loss(nan_for_absent)
    assert not res and "non-finite" in res.message

    def copies_the_chapter_cell(logits, labels, num_classes):
        from ncbook.reweighting import batch_class_losses
        return torch.nanmean(batch_class_losses(F.cross_entropy(logits, labels, reduction="none"), labels, num_classes))

    res = check_balanced_batch_loss(copies_the_chapter_cell)
    assert not res and "batch_class_losses" in res.message
    assert "not implemented yet" in check_balanced_batch_loss(not_implemented).message


# --------------------------------------------------------------------------- ex-reweighting-4
def test_cb_weight_ratio_check_and_its_limits():
    def ratio(n_max, n_min, zeta):
        return (1 - zeta ** n_max) / (1 - zeta ** n_min)

    assert check_cb_weight_ratio(ratio)
    # the limits the solution states: 1 as zeta -> 0 (uniform), n_max / n_min as zeta -> 1 (inverse frequency)
    assert math.isclose(ratio(124, 2, 1e-12), 1.0) and math.isclose(ratio(124, 2, 1 - 1e-12), 62.0, rel_tol=1e-6)
    w = effective_number_weights([5000, 50], 0.9999)
    assert math.isclose(ratio(5000, 50, 0.9999), float(w[1] / w[0]), rel_tol=1e-12)

    res = check_cb_weight_ratio(lambda n_max, n_min, zeta: n_max / n_min)  # inverse frequency instead
    assert not res and "expected" in res.message and "n_max" in res.message
    res = check_cb_weight_ratio(lambda n_max, n_min, zeta: (1 - zeta ** n_min) / (1 - zeta ** n_max))  # upside down
    assert not res and "got" in res.message
    res = check_cb_weight_ratio(lambda n_max, n_min, zeta: float(effective_number_weights([n_max, n_min], zeta)[1]
                                                                 / effective_number_weights([n_max, n_min], zeta)[0]))
    assert not res and "effective_number_weights" in res.message
    assert "not implemented yet" in check_cb_weight_ratio(not_implemented).message


# --------------------------------------------------------------------------- ex-reweighting-6
def ema_solution(class_losses, momentum, alpha):  # the chapter's solution
    m = torch.full(class_losses.shape[1:], float("nan"), dtype=torch.float64)
    out = []
    for L in class_losses:
        here = ~torch.isnan(L)
        m = torch.where(here & torch.isnan(m), L, m)
        m = torch.where(here, momentum * m + (1 - momentum) * L, m)
        seen = ~torch.isnan(m)
        out.append(torch.where(seen, (m[seen].mean() * m + alpha) / (m ** 2 + alpha), torch.ones_like(m)))
    return torch.stack(out)


def test_ema_inverse_weights_check():
    assert check_ema_inverse_weights(ema_solution)
    # momentum 0 with every class in the batch: the official batch weights of the chapter's closed form
    L = torch.tensor([[0.5, 1.0, 2.0, 4.0], [1.0, 1.0, 3.0, 0.2]], dtype=torch.float64)
    for t in range(2):
        np.testing.assert_allclose(ema_solution(L, 0.0, 0.7)[t], inverse_weights(L[t], alpha=0.7, eps=0.0))

    def batch_weights_only(class_losses, momentum, alpha):  # ignores the running losses: the official weights
        return torch.stack([inverse_weights(row, alpha=alpha, eps=0.0) for row in class_losses])

    res = check_ema_inverse_weights(batch_weights_only)
    assert not res and "inverse_weights" in res.message

    def starts_at_zero(class_losses, momentum, alpha):  # an EMA started at 0, not at the first loss seen
        m = torch.zeros(class_losses.shape[1], dtype=torch.float64)
        seen = torch.zeros(class_losses.shape[1], dtype=torch.bool)
        out = []
        for L in class_losses:
            here = ~torch.isnan(L)
            m = torch.where(here, momentum * m + (1 - momentum) * torch.nan_to_num(L), m)
            seen = seen | here
            out.append(torch.where(seen, (m[seen].mean() * m + alpha) / (m ** 2 + alpha), torch.ones_like(m)))
        return torch.stack(out)

    res = check_ema_inverse_weights(starts_at_zero)
    assert not res and "expected" in res.message and "momentum" in res.message
    assert "not implemented yet" in check_ema_inverse_weights(not_implemented).message


# --------------------------------------------------------------------------- figures
def _outside(ax) -> bool:
    """Whether the axes' legend lies wholly to the right of the data area."""
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend()
    return legend is not None and legend.get_window_extent().x0 >= ax.get_window_extent().x1


def test_figures_keep_their_legends_off_the_data():
    curves = {"CE": np.exp(-np.linspace(0, 3, 20))[:, None] * np.linspace(1, 3, 4),
              "inverse": np.exp(-np.linspace(0, 3, 20))[:, None] * np.ones(4)}
    ax = loss_imbalance_curves(curves, switch=16)
    assert _outside(ax) and len(ax.get_lines()) == 3              # two methods and the switch
    rho = ax.get_lines()[0].get_ydata()
    np.testing.assert_allclose(rho, np.std(np.linspace(1, 3, 4)) / np.mean(np.linspace(1, 3, 4)))
    with pytest.raises(ValueError, match=r"shape \(T, C\)"):
        loss_imbalance_curves({"CE": np.ones(5)})
    ax = loss_imbalance_curves(curves, x=np.arange(10, 210, 10))  # the epochs a run evaluated
    assert ax.get_lines()[0].get_xdata()[-1] == 200
    with pytest.raises(ValueError, match=r"x must have one entry per row of curves\['CE'\] \(20\)"):
        loss_imbalance_curves(curves, x=np.arange(5))
    ax = class_loss_curves(curves["CE"], counts=[9, 5, 3, 1])
    assert _outside(ax) and len(ax.get_lines()) == 4
    ax = class_loss_curves(curves["CE"], legend=False)
    assert ax.get_legend() is None
    ax = weight_paths(np.logspace(-2, 2, 5), np.ones((5, 3)), prior=np.ones(3))
    assert _outside(ax) and ax.get_ylabel() == r"$u_c^\star$"
