"""Hidden tests of the primer assignment (instructors only: not in the package or the student notebook).

Each function ``ex_<label>[__<suffix>](f)`` takes the student's function and asserts on inputs the
public check does not use, against formulas written out here. ``tools/assignments.py build`` turns
each into one hidden otter-grader test worth ``POINTS[label]["hidden"]`` points (default 1).
"""

import numpy as np

POINTS = {"ex-primer-3": {"manual": 2}, "ex-primer-4": {"manual": 2}}


def ex_primer_1(f):
    """NC2 is invariant to rotation, scale and class order, and matches its definition on a random frame."""
    rng = np.random.default_rng(2024)
    c, d = 5, 9
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    frame = np.sqrt(c / (c - 1)) * (np.eye(c) - 1.0 / c)  # rows of a centred, unit-norm simplex
    rotated = 7.0 * np.hstack([frame, np.zeros((c, d - c))]) @ q
    assert abs(float(f(x=rotated))) < 1e-8, "a rotated, scaled simplex ETF must give NC2 = 0"
    x = rng.standard_normal((c, 3))
    g = x @ x.T
    want = np.linalg.norm(g / np.linalg.norm(g) - (np.eye(c) - 1.0 / c) / np.sqrt(c - 1))
    assert abs(float(f(x=x)) - want) < 1e-8, f"NC2 of a random (5, 3) frame: expected {want:.6f}"
    perm = rng.permutation(c)
    assert abs(float(f(x=x[perm])) - want) < 1e-8, "NC2 must not depend on the order of the classes"


def ex_primer_2(f):
    """Class means of unsorted labels with an uneven split, computed by an explicit loop."""
    rng = np.random.default_rng(7)
    labels = np.array([3, 0, 3, 1, 2, 3, 0, 2, 2, 3, 1])
    features = rng.standard_normal((labels.size, 4))
    want = np.zeros((4, 4))
    for c in range(4):
        rows = [features[i] for i in range(labels.size) if labels[i] == c]
        want[c] = sum(rows) / len(rows)
    got = np.asarray(f(features=features, labels=labels, num_classes=4), dtype=float)
    assert got.shape == (4, 4), f"expected shape (4, 4), got {got.shape}"
    assert np.allclose(got, want, atol=1e-10), "class means of unsorted labels differ from an explicit loop"
