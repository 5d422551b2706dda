"""Hidden tests of the weighted-contrastive assignment (instructors only: not in the package or the student
notebook). Each function ``ex_<label>[__<suffix>](f)`` takes the student's function."""

import math

import numpy as np
import torch

POINTS = {"ex-wc-4": {"manual": 2}}


def ex_wc_1(f):
    """Three anchors on a line, by hand: -sum_j p_ij log q_ij averaged over anchors, diagonal ignored."""
    z = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]], dtype=torch.float64)
    w = torch.tensor([[5.0, 1.0, 3.0], [1.0, 9.0, 1.0], [3.0, 1.0, 7.0]], dtype=torch.float64)
    cos = torch.tensor([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0]], dtype=torch.float64)
    total = 0.0
    for i in range(3):
        others = [j for j in range(3) if j != i]
        norm = sum(math.exp(cos[i, j] / 0.5) for j in others)
        wsum = sum(float(w[i, j]) for j in others)
        total += -sum(float(w[i, j]) / wsum * (cos[i, j] / 0.5 - math.log(norm)) for j in others)
    got = float(f(z=z, weights=w, tau=0.5))
    assert abs(got - total / 3) < 1e-9, f"expected {total / 3:.9f}, got {got}"


def ex_wc_2(f):
    """epsilon* = exp(-C / ((C - 1) tau)), by hand for two settings."""
    for c, tau in ((5, 0.25), (7, 3.0)):
        want = math.exp(-c / ((c - 1) * tau))
        assert abs(float(f(num_classes=c, tau=tau)) / want - 1) < 1e-9, f"C = {c}, tau = {tau}: expected {want:.6g}"


def ex_wc_3(f):
    """delta_min = -2 lambda_min of B_0 = -J D_0 J / 2 on the complement of 1 (equal off-diagonal weights)."""
    n, tau = 5, 0.4
    w = np.full((n, n), 0.3)
    np.fill_diagonal(w, 1.0)
    d0 = -tau * np.log(w)
    np.fill_diagonal(d0, 0.0)
    j = np.eye(n) - np.ones((n, n)) / n
    b0 = -0.5 * j @ d0 @ j
    want = -2 * np.linalg.eigvalsh(b0 + 10 * np.ones((n, n)))[0]  # the 1-direction pushed out of the way
    got = float(f(weights=w, tau=tau))
    assert abs(got - want) < 1e-8, f"expected {want:.9f}, got {got}"
