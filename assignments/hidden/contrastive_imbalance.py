"""Hidden tests of the contrastive-imbalance assignment (instructors only: not in the package or the
student notebook). Each function ``ex_<label>[__<suffix>](f)`` takes the student's function."""

import itertools
import math

import numpy as np

POINTS = {"ex-contrastive-4": {"manual": 2}}


def ex_contrastive_1(f):
    """The risk by brute force over ordered tuples of negative classes (UCL collisions included)."""
    rng = np.random.default_rng(11)
    m = rng.standard_normal((3, 4))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    gram, lam = m @ m.T, np.array([0.6, 0.3, 0.1])
    for setting, k, t in (("ucl", 2, 0.7), ("scl", 2, 1.5), ("ucl", 1, 0.3)):
        want = 0.0
        for y in range(3):
            q = lam if setting == "ucl" else np.where(np.arange(3) == y, 0.0, lam / (1 - lam[y]))
            for tup in itertools.product(range(3), repeat=k):
                p = math.prod(q[c] for c in tup)
                want += lam[y] * p * math.log1p(sum(math.exp((gram[y, c] - 1) / t) for c in tup))
        got = float(f(gram=gram, class_probs=lam, k=k, setting=setting, t=t))
        assert abs(got - want) < 1e-9, f"{setting}, k = {k}, t = {t}: expected {want:.10f}, got {got:.10f}"


def ex_contrastive_2(f):
    """(1 + e^{-2/t}) / (1 + 3 e^{-2/t}): near 1 at small t, near 1/2 at large t."""
    for t in (0.1, 0.8, 3.0, 40.0):
        eps = math.exp(-2 / t)
        want = (1 + eps) / (1 + 3 * eps)
        assert abs(float(f(t=t)) - want) < 1e-10, f"t = {t}: expected {want:.10f}"


def ex_contrastive_3(f):
    """A rank-2 Gram of five classes is reproduced, with real means of at most 5 columns."""
    rng = np.random.default_rng(5)
    m = rng.standard_normal((5, 2))
    gram = m @ m.T
    got = np.asarray(f(gram=gram), dtype=float)
    assert got.ndim == 2 and got.shape[0] == 5, f"expected means of shape (5, d), got {got.shape}"
    assert np.allclose(got @ got.T, gram, atol=1e-8), "means @ means.T must equal the Gram matrix"
