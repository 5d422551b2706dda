"""Hidden tests of the MR2 assignment (instructors only: not in the package or the student notebook).
Each function ``ex_<label>[__<suffix>](f)`` takes the student's function."""

import torch

POINTS = {"ex-mr2-4": {"manual": 2}}


def ex_mr2_1(f):
    """Margins are c_bar * C * t_c / sum t with t_c the cube root of norm + deviation; they average to c_bar."""
    norms = torch.tensor([1.0, 2.0, 6.0, 0.5], dtype=torch.float64)
    devs = torch.tensor([7.0, 6.0, 2.0, 0.5], dtype=torch.float64)
    got = torch.as_tensor(f(mean_sq_norms=norms, mean_sq_devs=devs, c_bar=1.3), dtype=torch.float64)
    t = torch.tensor([8.0, 8.0, 8.0, 1.0], dtype=torch.float64) ** (1 / 3)  # 2, 2, 2, 1
    want = 1.3 * 4 * t / t.sum()
    assert got.shape == (4,) and torch.allclose(got, want, atol=1e-9), f"expected {want.tolist()}, got {got.tolist()}"
    assert abs(float(got.mean()) - 1.3) < 1e-9, "the margins must average to c_bar"


def ex_mr2_2(f):
    """One row at a time: CE of the row divided by the margin of its own label."""
    logits = torch.tensor([[2.0, -1.0], [0.5, 0.5], [-3.0, 4.0]], dtype=torch.float64)
    labels = torch.tensor([1, 0, 1])
    margins = torch.tensor([0.5, 2.0], dtype=torch.float64)
    want = torch.stack([torch.logsumexp(logits[i] / margins[labels[i]], 0) - logits[i, labels[i]] / margins[labels[i]]
                        for i in range(3)])
    got = torch.as_tensor(f(logits=logits, labels=labels, margins=margins), dtype=torch.float64)
    assert got.shape == (3,) and torch.allclose(got, want, atol=1e-9), f"expected {want.tolist()}, got {got.tolist()}"


def ex_mr2_3(f):
    """Two anchors of one class and a singleton: mean over the two anchors of log(1 + exp(d^2 - 2 sbar))."""
    features = torch.tensor([[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]], dtype=torch.float64)
    labels = torch.tensor([0, 0, 1])
    want = torch.log1p(torch.exp(torch.tensor(25.0 - 2 * 0.75, dtype=torch.float64)))
    got = float(f(features=features, labels=labels, sbar=0.75))
    assert abs(got - float(want)) < 1e-8, f"expected {float(want):.8f} (the singleton skipped), got {got}"
