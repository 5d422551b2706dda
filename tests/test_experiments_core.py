"""The experiment layer's shared parts: a verdict and its record can never disagree."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from ncbook import experiments
from ncbook.book import claim_verdict

floats = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(floats, min_size=1, max_size=5), st.lists(floats, min_size=1, max_size=5), st.floats(0, 5))
def test_compare_means_and_its_record_agree(a, b, noise):
    v = experiments.compare_means(a, b, noise=noise)
    rec = v.tolerance()
    assert (claim_verdict(rec["ours"], rec["tolerance"]) == "reproduced") == v.holds


@settings(max_examples=300, deadline=None)
@given(floats, floats, st.floats(0, 1), st.floats(0, 1))
def test_matches_and_its_record_agree(value, ref, rtol, atol):
    v = experiments.matches(value, ref, rtol=rtol, atol=atol)
    rec = v.tolerance()
    assert (claim_verdict(rec["ours"], rec["tolerance"]) == "reproduced") == v.holds


@settings(max_examples=300, deadline=None)
@given(floats, floats)
def test_exceeds_and_its_record_agree(value, threshold):
    v = experiments.exceeds(value, threshold)
    rec = v.tolerance()
    assert (claim_verdict(rec["ours"], rec["tolerance"]) == "reproduced") == v.holds


def test_a_non_finite_value_is_never_a_verdict_that_holds():
    for v in (experiments.compare_means([math.nan], [0.0], noise=0.1), experiments.matches(math.nan, 1.0),
              experiments.exceeds(math.inf, 0.0)):
        assert v.outcome == "undefined" and not v.holds
        assert "cannot be judged" in v.word(("a", "b", "c")[: 3 if v.rule == "compare_means" else 2])


def test_words_must_match_the_outcomes():
    with pytest.raises(ValueError, match="one word per outcome"):
        experiments.compare_means([1.0], [0.0], noise=0.1).word(("beats", "trails"))


def test_seed_noise_is_twice_the_largest_spread_and_refuses_none():
    assert experiments.seed_noise([0.01, 0.03]) == pytest.approx(0.06)
    with pytest.raises(ValueError, match="at least one method"):
        experiments.seed_noise([])


def test_range_noise_is_the_chance_range_of_seed_draws():
    """The 95% quantile of the range of k draws with the largest spread: 1.96 * sqrt(2) for two draws (their
    difference), and by simulation for five; bad arguments are refused."""
    assert experiments.range_noise([0.5, 1.0], 2) == pytest.approx(1.959964 * 2 ** 0.5, rel=1e-5)
    draws = np.random.default_rng(0).normal(0.0, 0.33, (200_000, 5))
    exceeded = np.mean(np.ptp(draws, axis=1) > experiments.range_noise([0.33], 5))
    assert abs(exceeded - 0.05) < 0.003
    # the review's case: five single runs spanning 0.80 points with seed sd 0.33 are within the seed's range
    assert experiments.exceeds(0.80, experiments.range_noise([0.33], 5)).outcome == "below"
    assert experiments.exceeds(0.80, experiments.seed_noise([0.33])).outcome == "above"   # the old rule said "matter"
    with pytest.raises(ValueError, match="count must be an integer >= 2"):
        experiments.range_noise([0.1], 1)
    with pytest.raises(ValueError, match="at least one method"):
        experiments.range_noise([], 3)
    with pytest.raises(ValueError, match="level must be a probability"):
        experiments.range_noise([0.1], 3, level=1.0)
    with pytest.raises(ValueError, match="spreads must be a finite number >= 0"):
        experiments.range_noise([-0.1], 3)


def test_summary_and_record_claims(tmp_path):
    table = pd.DataFrame({"method": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1], "acc": [0.8, 0.82, 0.7, 0.71]})
    setting = experiments.Setting("quick", "paper", {}, "toy")
    res = experiments.ExperimentResult("demo", setting, table)
    s = res.summary()
    assert s.loc["a", ("acc", "mean")] == pytest.approx(0.81) and s.loc["b", ("acc", "std")] == pytest.approx(0.005)
    check = experiments.Claim("check", "two halves make a whole", ours=1.0, derived=1.0, derived_how="by hand",
                              tolerance={"abs": 1e-12, "against": "derived"}, setting="toy")
    out = experiments.record_claims("demo", res, check, folder=tmp_path)
    assert list(out["verdict"]) == ["passed"]
    assert (tmp_path / "claims" / "quick" / "demo.json").exists()
    other = experiments.ExperimentResult("demo", experiments.Setting("full", "paper", {}, "toy"), table)
    with pytest.raises(ValueError, match="different profiles"):
        experiments.record_claims("demo", res, other, folder=tmp_path)
