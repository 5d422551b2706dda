"""Hidden tests of the SELI assignment (instructors only: not in the package or the student notebook).

Each function ``ex_<label>[__<suffix>](f)`` takes the student's function and asserts on inputs the
public check does not use, against properties and formulas written out here.
"""

import numpy as np
import torch

POINTS = {"ex-seli-5": {"manual": 2}}


def ex_seli_1(f):
    """Entry (c, i) is 1[y_i = c] - 1/C, columns sum to zero, one column per sample."""
    labels = np.array([4, 0, 4, 2, 2, 1, 0, 4])
    got = np.asarray(f(labels=labels, num_classes=6), dtype=float)
    assert got.shape == (6, 8), f"expected shape (6, 8) (C rows, one column per sample), got {got.shape}"
    for i, y in enumerate(labels):
        for c in range(6):
            assert abs(got[c, i] - ((c == y) - 1 / 6)) < 1e-12, f"entry ({c}, {i}) must be 1[y_i = c] - 1/C"
    assert np.allclose(got.sum(0), 0.0), "every column must sum to 0"


def ex_seli_2(f):
    """G_W is symmetric positive semidefinite and its square is P D P."""
    for counts in ([9, 4, 1], [20, 20, 20, 1, 1]):
        c = len(counts)
        p = np.eye(c) - 1.0 / c
        target = p @ np.diag(np.asarray(counts, dtype=float)) @ p
        g = np.asarray(f(counts=np.array(counts)), dtype=float)
        assert g.shape == (c, c), f"counts {counts}: expected shape ({c}, {c}), got {g.shape}"
        assert np.allclose(g, g.T, atol=1e-9), f"counts {counts}: G_W must be symmetric"
        assert np.linalg.eigvalsh((g + g.T) / 2).min() > -1e-8, f"counts {counts}: G_W must be PSD"
        assert np.allclose(g @ g, target, atol=1e-7), f"counts {counts}: G_W @ G_W must equal P D P"


def ex_seli_3(f):
    """The norm ratio is 1 without imbalance and for C = 2, below 1 under imbalance, falling with R."""
    assert abs(float(f(ratio=1.0, num_majority=4, num_minority=3)) - 1) < 1e-9, "R = 1 must give ratio 1"
    for r in (2.0, 25.0, 400.0):
        assert abs(float(f(ratio=r, num_majority=1, num_minority=1)) - 1) < 1e-9, "C = 2 must give ratio 1"
    values = [float(f(ratio=r, num_majority=3, num_minority=4)) for r in (2.0, 20.0, 200.0)]
    assert values[0] < 1 and values[0] > values[1] > values[2] > 0, f"the ratio must fall with R; got {values}"


def ex_seli_4(f):
    """log mean CE of logits separated by 950 and 1000 is -950 + log1p(e^-50) - log 2, finite."""
    logits = torch.tensor([[1000.0, 0.0], [0.0, 950.0]], dtype=torch.float64)
    got = float(f(logits=logits, labels=torch.tensor([0, 1])))
    want = -950.0 + np.log1p(np.exp(-50.0)) - np.log(2.0)
    assert np.isfinite(got) and abs(got - want) < 1e-8, f"expected {want:.9f}, got {got}"
    moderate = torch.tensor([[0.3, -1.2, 2.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    labels = torch.tensor([2, 0])
    want = float(torch.log(torch.nn.functional.cross_entropy(moderate, labels)))
    assert abs(float(f(logits=moderate, labels=labels)) - want) < 1e-10, "moderate logits: expected log(mean CE)"


def ex_seli_5(f):
    """At the returned lambda the two minority classifiers coincide, at lambda / 1.25 they do not (other counts)."""
    from ncbook import geometry, ufm

    def collapsed(counts, lam):
        w = ufm.ridge_optimum(counts, lam).classifiers
        return np.linalg.norm(w[2:], axis=1).min() == 0 or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6

    counts = [120, 120, 4, 4]
    lam = float(f(counts=counts))
    assert np.isfinite(lam) and lam > 0, f"counts {counts}: expected a positive lambda, got {lam}"
    assert collapsed(counts, lam), f"counts {counts}: the minorities must coincide at lambda = {lam:.3g}"
    assert not collapsed(counts, lam / 1.25), f"counts {counts}: lambda = {lam:.3g} is more than 1.25 times too large"
