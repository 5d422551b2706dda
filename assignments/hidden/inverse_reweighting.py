"""Hidden tests of the inverse-reweighting assignment (instructors only: not in the package or the student
notebook). Each function ``ex_<label>[__<suffix>](f)`` takes the student's function."""

import torch
import torch.nn.functional as F

POINTS = {}


def ex_reweighting_1(f):
    """w_c = (Lbar L_c + alpha w0_c) / (L_c^2 + alpha), absent classes keep the prior, by hand."""
    losses = torch.tensor([2.0, float("nan"), 0.5, 1.0], dtype=torch.float64)
    prior = torch.tensor([1.2, 0.6, 1.0, 1.2], dtype=torch.float64)
    lbar = (2.0 + 0.5 + 1.0) / 3
    want = torch.tensor([(lbar * 2 + 0.5 * 1.2) / (4 + 0.5), 0.6, (lbar * 0.5 + 0.5) / (0.25 + 0.5),
                         (lbar + 0.5 * 1.2) / 1.5], dtype=torch.float64)
    got = torch.as_tensor(f(class_losses=losses, prior=prior, alpha=0.5), dtype=torch.float64)
    assert torch.allclose(got, want, atol=1e-9), f"expected {want.tolist()}, got {got.tolist()}"


def ex_reweighting_2(f):
    """max(B, 1)^-gamma normalised to mean 1, by hand."""
    got = torch.as_tensor(f(batch_counts=torch.tensor([0.0, 4.0, 16.0]), gamma=0.5), dtype=torch.float64)
    raw = torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64)
    want = raw / raw.mean()
    assert torch.allclose(got, want, atol=1e-9), f"expected {want.tolist()}, got {got.tolist()}"


def ex_reweighting_3(f):
    """Mean over the classes present of each class's mean cross-entropy, by hand."""
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 3.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 1, 0])
    ce = F.cross_entropy(logits, labels, reduction="none")
    want = ((ce[0] + ce[3]) / 2 + (ce[1] + ce[2]) / 2) / 2
    got = float(f(logits=logits, labels=labels, num_classes=3))
    assert abs(got - float(want)) < 1e-9, f"expected {float(want):.9f} (class 2 absent), got {got}"


def ex_reweighting_4(f):
    """(1 - beta) / (1 - beta^n) normalised to sum C, by hand."""
    got = torch.as_tensor(f(counts=torch.tensor([1, 2]), beta=0.5), dtype=torch.float64)
    raw = torch.tensor([0.5 / 0.5, 0.5 / 0.75], dtype=torch.float64)
    want = raw * 2 / raw.sum()
    assert torch.allclose(got, want, atol=1e-9), f"expected {want.tolist()}, got {got.tolist()}"


def ex_reweighting_5(f):
    """Population std over mean: [1, 2, 3, 6] gives sqrt(3.5) / 3."""
    got = float(f(class_losses=torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)))
    assert abs(got - 3.5 ** 0.5 / 3) < 1e-9, f"expected {3.5 ** 0.5 / 3:.9f}, got {got}"
