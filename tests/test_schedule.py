"""The learning-rate schedules, read by value: the Mittag-Leffler function against mpmath at high precision.

The reference is mpmath's quadrature (30 digits) of the real integral representation of
E_alpha(-z) for 0 < alpha < 1,

    E_alpha(-z) = sin(alpha pi) / (alpha pi) * int_0^inf exp(-(u z)^(1/alpha)) / (u^2 + 2 u cos(alpha pi) + 1) du,

a different formula and a different method from the package's contour integral, itself checked
against mpmath's power series where that converges without cancellation and against the closed
forms E_1(-z) = exp(-z) and E_1/2(-z) = exp(z^2) erfc(z).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from ncbook import train
from ncbook.train._schedule import _mittag_leffler_neg

ALPHAS = [0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.97, 0.999]
ZS = [1e-6, 1e-3, 0.1, 0.5, 0.999, 1.0, 1.001, 2.0, 5.0, 10.0, 30.0, 100.0, 1e3, 1e4, 1e6]


def reference(alpha: float, z: float, dps: int = 30) -> float:
    """E_alpha(-z) by mpmath quadrature of the integral representation (0 < alpha < 1)."""
    with mp.workdps(dps):
        a, x = mp.mpf(alpha), mp.mpf(z)
        c, s = mp.cos(a * mp.pi), mp.sin(a * mp.pi)
        points = sorted({mp.mpf(0), 1 / x, mp.mpf(1), *(mp.mpf(1) + d for d in (-(1 - a), 1 - a) if 1 - a < 0.5)})
        value = s / (a * mp.pi) * mp.quad(lambda u: mp.exp(-(u * x) ** (1 / a)) / (u * u + 2 * u * c + 1),
                                          points + [mp.inf])
        return float(value)


def series(alpha: float, z: float) -> float:
    with mp.workdps(40):
        return float(mp.nsum(lambda k: (-mp.mpf(z)) ** k / mp.gamma(alpha * k + 1), [0, mp.inf]))


def test_the_reference_is_right_where_it_can_be_checked():
    for alpha in (0.3, 0.5, 0.8):
        for z in (0.01, 0.3, 1.0):
            assert reference(alpha, z) == pytest.approx(series(alpha, z), abs=1e-14)
    for z in (0.5, 3.0, 20.0):
        assert reference(0.5, z) == pytest.approx(float(mp.exp(z * z) * mp.erfc(z)), rel=1e-13)
    assert reference(0.999999, 2.0) == pytest.approx(math.exp(-2.0), rel=1e-5)  # E_alpha -> E_1 = exp


@pytest.fixture(scope="module")
def grid():
    return [(a, z, reference(a, z)) for a in ALPHAS for z in ZS]


def test_mittag_leffler_within_1e_10_of_mpmath_over_the_schedules_range(grid):
    errors = [abs(_mittag_leffler_neg(z, a) - ref) for a, z, ref in grid]
    worst = max(errors)
    print(f"max |E_alpha(-z) - mpmath| over {len(grid)} points: {worst:.2e}")
    assert worst < 1e-10
    assert _mittag_leffler_neg(0.0, 0.3) == 1.0
    for z in (0.0, 0.5, 7.0, 1e3):
        assert _mittag_leffler_neg(z, 1.0) == pytest.approx(math.exp(-z), rel=1e-15, abs=1e-300)
        # near alpha = 1 the tail is 1 / (z Gamma(1 - alpha)): 1e-12 at z = 1000 when exp(-z) is 0
        assert _mittag_leffler_neg(z, 1.0 - 1e-9) == pytest.approx(math.exp(-z), rel=1e-6, abs=2e-12)


def test_mittag_leffler_decreases_monotonically():
    zs = np.concatenate([np.linspace(0, 3, 3001), np.geomspace(3, 1e6, 2000)])
    for alpha in (0.25, 0.5, 0.8, 0.95, 0.999, 1.0):
        values = np.array([_mittag_leffler_neg(float(z), alpha) for z in zs])
        assert values[0] == 1.0 and np.all(values >= 0) and np.all(values <= 1)
        assert np.all(np.diff(values) <= 1e-15), alpha  # completely monotone: it never rises


def test_the_old_fault_is_gone():
    """The former two-branch formula gave 0.564 at alpha = 1/2, z = 1 (truth 0.4276) and rose by 1.316x there."""
    assert _mittag_leffler_neg(1.0, 0.5) == pytest.approx(math.e * math.erfc(1.0), abs=1e-13)  # 0.427584
    assert _mittag_leffler_neg(1.0 + 1e-6, 0.5) < _mittag_leffler_neg(1.0 - 1e-6, 0.5)
    assert _mittag_leffler_neg(5.0, 0.9) == pytest.approx(reference(0.9, 5.0), abs=1e-12)  # was 0.28x too small


def test_mittag_leffler_schedule_values():
    # alpha = 1: E_1(-z) = exp(-z); without a switch z = s / (1 - s)
    kw = dict(total_steps=110, warmup_steps=10, schedule="mittag_leffler", alpha=1.0)
    assert train.lr_lambda(4, **kw) == pytest.approx(0.5)  # warm-up
    assert train.lr_lambda(10, **kw) == pytest.approx(1.0)
    assert train.lr_lambda(35, **kw) == pytest.approx(math.exp(-1 / 3), rel=1e-12)  # s = 1/4
    # alpha = 1/2, switch at step 50 of 100: z = t / 50 (times 1 - 1e-6) up to it, 1 + s / (1 - s + 1e-6) after
    kw = dict(total_steps=100, warmup_steps=0, schedule="mittag_leffler", alpha=0.5, milestones=(50,))
    erfcx = lambda z: float(mp.exp(mp.mpf(z) ** 2) * mp.erfc(z))  # noqa: E731  E_1/2(-z)
    assert train.lr_lambda(25, **kw) == pytest.approx(erfcx(0.5 * (1 - 1e-6)), abs=1e-12)
    assert train.lr_lambda(75, **kw) == pytest.approx(erfcx(1 + 0.5 / (0.5 + 1e-6)), abs=1e-12)  # 0.25540, not 0.282
    steps = [train.lr_lambda(s, **kw) for s in range(100)]
    assert all(b <= a for a, b in zip(steps, steps[1:])), "the multiplier never rises, across the switch too"
    alpha = 0.7
    kw = dict(total_steps=200, warmup_steps=0, schedule="mittag_leffler", alpha=alpha, milestones=(160,))
    for step in (0, 80, 159, 160, 161, 190, 199):
        t = step
        z = (1 - 1e-6) * t / 160 if t < 160 else 1 + min((t - 160) / 40, 1 - 1e-6) / (1 - min((t - 160) / 40, 1 - 1e-6) + 1e-6)
        assert train.lr_lambda(step, **kw) == pytest.approx(reference(alpha, z) if z > 0 else 1.0, abs=1e-10), step


def test_schedule_arguments_are_validated():
    kw = dict(total_steps=100, warmup_steps=0, schedule="mittag_leffler")
    with pytest.raises(ValueError, match=r"alpha \(the Mittag-Leffler order\) must lie in \(0, 1\]"):
        train.lr_lambda(3, alpha=1.5, **kw)
    with pytest.raises(ValueError, match="alpha must be a positive finite number"):
        train.lr_lambda(3, alpha=float("nan"), **kw)
    with pytest.raises(TypeError, match="step must be an integer >= 0"):
        train.lr_lambda(2.5, **kw)
    with pytest.raises(ValueError, match="schedule must be one of"):
        train.lr_lambda(1, total_steps=10, warmup_steps=0, schedule="linear")
    with pytest.raises(TypeError, match="milestones must be a sequence of integers"):
        train.lr_lambda(1, total_steps=10, warmup_steps=0, schedule="step", milestones=5)


def test_lr_schedule_shapes():
    kw = dict(total_steps=100, warmup_steps=10)
    assert train.lr_lambda(0, schedule="cosine", **kw) == pytest.approx(0.1)
    assert train.lr_lambda(10, schedule="cosine", **kw) == pytest.approx(1.0)
    assert train.lr_lambda(55, schedule="cosine", **kw) == pytest.approx(0.5)
    assert train.lr_lambda(60, schedule="step", milestones=[50, 80], gamma=0.1, **kw) == pytest.approx(0.1)
    assert train.lr_lambda(90, schedule="step", milestones=[50, 80], gamma=0.1, **kw) == pytest.approx(0.01)


def test_mittag_leffler_alpha():
    assert train.mittag_leffler_alpha([5, 5]) == pytest.approx(1.0)
    assert train.mittag_leffler_alpha([1000, 1]) == pytest.approx(0.25 + 0.75 * 0.0113978026, rel=1e-8)
    with pytest.raises(ValueError, match="counts must be at least 2 positive numbers"):
        train.mittag_leffler_alpha([3, 0])
