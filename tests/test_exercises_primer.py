"""The primer's exercise checks: the chapter's solutions pass, planted mistakes fail with a message
naming the input, expected and received values, stubs are "not implemented yet", the package's own
functions are refused, and each reference (computed numerically from the exercise's construction)
agrees with the closed form the chapter derives, on many draws and against an independent route."""

import math

import numpy as np
import pytest

from ncbook import geometry, metrics, ufm
from ncbook.exercises import (EXERCISES, check_nc1, check_nc1_label_noise, check_nc1_per_class, check_nc2,
                              check_nc2_shifted, check_zero_threshold)
from ncbook.exercises._primer import _gradient_at_zero, _label_noise_nc1, _nc1_per_class, _shifted_classifier


# --------------------------------------------------------------------------- the chapter's solutions
def my_nc1(features, labels, num_classes):
    h, y = np.asarray(features, dtype=float), np.asarray(labels)
    mu = np.stack([h[y == c].mean(0) for c in range(num_classes)])
    centred = mu - mu.mean(0)
    dev = h - mu[y]
    sigma_w = dev.T @ dev / len(h)
    sigma_b = centred.T @ centred / num_classes
    return np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=1e-10)) / num_classes


def nc1_per_class(features, labels, num_classes):
    h, y = np.asarray(features, dtype=float), np.asarray(labels)
    mu = np.stack([h[y == c].mean(0) for c in range(num_classes)])
    centred = mu - mu.mean(0)
    b_pinv = np.linalg.pinv(centred.T @ centred / num_classes, rcond=1e-10)
    out = []
    for c in range(num_classes):
        dev = h[y == c] - mu[c]
        out.append(np.trace(dev.T @ dev / len(dev) @ b_pinv) / num_classes)
    return np.array(out)


def nc2_shifted(num_classes, shift):
    return math.sqrt(2 - 2 / math.sqrt(1 + (num_classes - 1) * shift**4))


def zero_threshold(num_classes, per_class):
    return 1 / (num_classes * math.sqrt(per_class))


def nc1_label_noise(num_classes, noise):
    kappa = 1 - noise * num_classes / (num_classes - 1)
    return (num_classes - 1) * (1 - kappa**2) / (num_classes * kappa**2)


def my_nc2(x):
    x = np.asarray(x, dtype=float)
    g = x @ x.T
    c = len(x)
    return np.linalg.norm(g / np.linalg.norm(g) - (np.eye(c) - 1 / c) / np.sqrt(c - 1))


SOLUTIONS = {"nc1": (check_nc1, my_nc1), "nc1_per_class": (check_nc1_per_class, nc1_per_class), "nc2": (check_nc2, my_nc2), "nc2_shifted": (check_nc2_shifted, nc2_shifted),
             "zero_threshold": (check_zero_threshold, zero_threshold),
             "nc1_label_noise": (check_nc1_label_noise, nc1_label_noise)}


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_the_solutions_pass_public_and_hidden_cases(name):
    check, solution = SOLUTIONS[name]
    assert check(solution), check(solution).message
    spec = EXERCISES[name]
    for secret in (b"a secret of 16 bytes", b"another secret, 16+"):
        cases = spec.hidden_cases(secret)
        from ncbook.exercises._core import collect
        assert spec.verdicts(cases, collect(solution, cases, spec.watched())) == [None] * len(cases)


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_a_stub_is_not_implemented_yet(name):
    check, solution = SOLUTIONS[name]
    namespace = {}
    params = ", ".join(EXERCISES[name].params)
    exec(f"def stub({params}):\n    raise NotImplementedError", namespace)
    res = check(namespace["stub"])
    assert not res and "not implemented yet" in res.message


def test_the_package_functions_are_not_solutions():
    res = check_nc1(metrics.nc1)
    assert not res and "ncbook.metrics.nc1 itself" in res.message
    res = check_nc1(lambda features, labels, num_classes: metrics.neural_collapse(
        features, labels, np.ones((num_classes, np.shape(features)[1])))["nc1"])
    assert not res and "calls ncbook.metrics.neural_collapse" in res.message
    res = check_nc2_shifted(lambda num_classes, shift: metrics.nc2(_shifted_classifier(num_classes, shift)))
    assert not res and "calls" in res.message
    res = check_nc1_label_noise(lambda num_classes, noise: _label_noise_nc1(num_classes, noise))  # the reference
    assert not res and "calls" in res.message


# --------------------------------------------------------------------------- planted mistakes
def test_nc1_mistakes_fail_naming_input_expected_and_received():
    def sample_mean(features, labels, num_classes):  # mu_G = the sample mean: wrong under imbalance
        h, y = np.asarray(features, dtype=float), np.asarray(labels)
        mu = np.stack([h[y == c].mean(0) for c in range(num_classes)])
        dev, centred = h - mu[y], mu - h.mean(0)
        return np.trace(dev.T @ dev / len(h) @ np.linalg.pinv(centred.T @ centred / num_classes, rcond=1e-10)) \
            / num_classes

    res = check_nc1(sample_mean)
    assert not res and "on input features=array of shape" in res.message
    assert "expected" in res.message and "got" in res.message and "Hint: mu_G" in res.message

    res = check_nc1(lambda features, labels, num_classes: num_classes * my_nc1(features, labels, num_classes))
    assert not res and "expected" in res.message  # forgets the 1/C

    res = check_nc1(lambda features, labels, num_classes: None)
    assert not res and "returned None" in res.message


def test_nc1_per_class_mistakes_fail():
    def sample_mean(features, labels, num_classes):    # mu_G = the sample mean: wrong under imbalance
        h, y = np.asarray(features, dtype=float), np.asarray(labels)
        mu = np.stack([h[y == c].mean(0) for c in range(num_classes)])
        b_pinv = np.linalg.pinv((mu - h.mean(0)).T @ (mu - h.mean(0)) / num_classes, rcond=1e-10)
        return np.array([np.trace((h[y == c] - mu[c]).T @ (h[y == c] - mu[c]) / (y == c).sum() @ b_pinv)
                         for c in range(num_classes)]) / num_classes

    res = check_nc1_per_class(sample_mean)
    assert not res and "on input features=array of shape" in res.message and "Hint: one Sigma_B" in res.message
    weighted = lambda features, labels, num_classes: nc1_per_class(features, labels, num_classes) \
        * np.bincount(labels, minlength=num_classes) / len(labels)          # the terms of NC1, not NC1_c
    res = check_nc1_per_class(weighted)
    assert not res and "expected" in res.message
    res = check_nc1_per_class(lambda features, labels, num_classes: [metrics.nc1(features, labels, num_classes)] *
                              num_classes)
    assert not res and "calls ncbook.metrics.nc1" in res.message


def test_nc1_per_class_averages_to_nc1_and_its_class_variant():
    """The written part of the exercise: NC1 is the n_c / n average of NC1_c, within='class' their plain mean."""
    rng = np.random.default_rng(3)
    for c, d in ((3, 2), (4, 8), (6, 5), (10, 32)):
        counts = rng.integers(2, 40, c)
        y = rng.permutation(np.repeat(np.arange(c), counts))
        h = 2.0 * rng.standard_normal((c, d))[y] + rng.uniform(0.2, 1.5, c)[y, None] * rng.standard_normal((y.size, d))
        per = _nc1_per_class(h, y, c)
        assert math.isclose(float(per @ counts / counts.sum()), metrics.nc1(h, y, c), rel_tol=1e-9)
        assert math.isclose(float(per.mean()), metrics.nc1(h, y, c, within="class"), rel_tol=1e-9)
        np.testing.assert_allclose(nc1_per_class(h, y, c), per, rtol=1e-9)


def test_nc2_shifted_mistakes_fail():
    res = check_nc2_shifted(lambda num_classes, shift: math.sqrt(2 - 2 / math.sqrt(1 + (num_classes - 1) * shift**2)))
    assert not res and "num_classes=" in res.message and "expected" in res.message  # |v|^2 for |v|^4
    res = check_nc2_shifted(lambda num_classes, shift: 2 - 2 / math.sqrt(1 + (num_classes - 1) * shift**4))
    assert not res  # NC2 squared


def test_zero_threshold_mistakes_fail():
    res = check_zero_threshold(lambda num_classes, per_class: 1 / math.sqrt(per_class))  # forgets C
    assert not res and "per_class=" in res.message
    res = check_zero_threshold(lambda num_classes, per_class: 1 / (num_classes * per_class))  # sqrt lost
    assert not res
    res = check_zero_threshold(lambda num_classes, per_class: (num_classes - 1) / (num_classes * math.sqrt(per_class)))
    assert not res  # the gradient's entry instead of its spectral norm


def test_label_noise_mistakes_fail():
    res = check_nc1_label_noise(lambda num_classes, noise: 2 * noise)  # the small-noise limit only
    assert not res and "noise=" in res.message
    kappa = lambda c, e: 1 - e  # noqa: E731  (forgets that noise into other classes also moves the mean)
    res = check_nc1_label_noise(lambda num_classes, noise: (num_classes - 1) * (1 - kappa(num_classes, noise)**2)
                                / (num_classes * kappa(num_classes, noise)**2))
    assert not res


# --------------------------------------------------------------------------- the references are right
def test_shifted_classifier_is_an_etf_plus_an_orthogonal_common_vector():
    for c in (2, 3, 7):
        w = _shifted_classifier(c, 0.8)
        m = geometry.simplex_etf(c, c)
        v = w - m
        np.testing.assert_allclose(v - v[0], 0, atol=1e-12)          # the same vector added to every row
        np.testing.assert_allclose(m @ v[0], 0, atol=1e-12)          # orthogonal to every vertex
        np.testing.assert_allclose(np.linalg.norm(v[0]), 0.8, rtol=1e-12)


@pytest.mark.parametrize("c", [2, 3, 5, 10, 17])
def test_nc2_shifted_closed_form_and_the_one_hot_frame(c):
    for shift in np.linspace(0, 3, 13):
        assert math.isclose(metrics.nc2(_shifted_classifier(c, shift)), nc2_shifted(c, shift), abs_tol=1e-9)
    # the one-hot frame e_c is the ETF e_c - 1/C plus the common vector 1/C, normalised: shift 1/sqrt(C - 1)
    assert math.isclose(metrics.nc2(np.eye(c)), nc2_shifted(c, 1 / math.sqrt(c - 1)), abs_tol=1e-12)


def test_cross_entropy_ignores_the_common_vector():
    """The written part of the shift exercise: adding v to every classifier row shifts all logits equally."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(0)
    h = torch.as_tensor(rng.standard_normal((12, 5)))
    y = torch.as_tensor(rng.integers(0, 5, 12))
    w = torch.as_tensor(_shifted_classifier(5, 0.0))
    shifted = torch.as_tensor(_shifted_classifier(5, 2.0))
    z, zs = h @ w.T, h @ shifted.T
    np.testing.assert_allclose((zs - z).std(dim=1).numpy(), 0, atol=1e-12)  # the same shift for every class
    assert math.isclose(F.cross_entropy(z, y).item(), F.cross_entropy(zs, y).item(), rel_tol=1e-12)
    np.testing.assert_allclose(F.log_softmax(zs, 1).numpy(), F.log_softmax(z, 1).numpy(), atol=1e-12)


@pytest.mark.parametrize("counts", [[10] * 4, [5] * 3, [7] * 2, [3] * 9])
def test_zero_threshold_is_where_the_exact_ridge_optimum_becomes_zero(counts):
    c, per = len(counts), counts[0]
    lam = zero_threshold(c, per)
    assert math.isclose(_gradient_at_zero(c, per), lam, rel_tol=1e-12)
    assert np.linalg.norm(ufm.ridge_optimum(counts, 0.9 * lam).classifiers) > 0.1
    assert np.linalg.norm(ufm.ridge_optimum(counts, 1.1 * lam).classifiers) == 0


def test_zero_threshold_by_gradient_descent_on_the_factorised_model():
    """The same threshold for the (W, H) model the chapter trains, with unequal ridges (only the product counts)."""
    import warnings

    lam = zero_threshold(4, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        below = ufm.train_ufm([10] * 4, 5, optimizer="gd", lam_w=0.8 * lam * 2, lam_h=0.8 * lam / 2, steps=1500,
                              lr=0.5, record_every=1500)
        above = ufm.train_ufm([10] * 4, 5, optimizer="gd", lam_w=1.25 * lam * 2, lam_h=1.25 * lam / 2, steps=1500,
                              lr=0.5, record_every=1500)
    assert float(below.W.norm()) > 0.5 and float(above.W.norm()) < 1e-4  # zero is approached linearly


@pytest.mark.parametrize("c,per,flips", [(4, 30, 1), (10, 90, 2), (3, 10, 2), (2, 20, 7), (5, 40, 9)])
def test_label_noise_reference_equals_a_sample_construction(c, per, flips):
    """Features at the ETF vertex of the noisy label, NC1 measured with metrics.nc1 against the clean labels."""
    noise = flips * (c - 1) / per
    train_labels = np.repeat(np.arange(c), per)
    clean = np.concatenate([[k] * (per - flips * (c - 1)) + [j for j in range(c) if j != k for _ in range(flips)]
                            for k in range(c)])
    assert (np.bincount(clean) == per).all()
    h = 2.5 * geometry.simplex_etf(c, c + 2, seed=1)[train_labels]
    measured = metrics.nc1(h, clean, c)
    assert math.isclose(_label_noise_nc1(c, noise), measured, rel_tol=1e-9)
    assert math.isclose(nc1_label_noise(c, noise), measured, rel_tol=1e-9)


def test_label_noise_small_noise_limit_and_pole():
    for c in (2, 5, 20):
        assert math.isclose(_label_noise_nc1(c, 1e-4), 2e-4, rel_tol=1e-3)       # NC1 ~ 2 eta, any C
        assert _label_noise_nc1(c, 0.999 * (c - 1) / c) > 1e4                   # uniform labels: no signal
