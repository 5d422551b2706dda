"""The shared check machinery: non-finite values, readable matrices, signatures, assertions, stubs."""

import numpy as np
import pytest

import ncbook.exercises as ex
from ncbook.exercises import CheckResult, run_cases
from ncbook.exercises._core import compare_arrays, format_array

CHECKS = [getattr(ex, name) for name in ex.__all__ if name.startswith("check_")]


def test_non_finite_values_compare_by_position_and_sign():
    inf, nan = np.inf, np.nan
    assert compare_arrays(np.array([-inf, 1.0, nan]), np.array([-inf, 1.0, nan]), atol=0, rtol=1e-9) is None
    msg = compare_arrays(np.array(-inf), np.array(-800.0), atol=1e-8, rtol=1e-10)
    assert "expected -800.0 (finite), got -inf (-inf)" in msg and "nan" not in msg
    msg = compare_arrays(np.array([1.0, inf]), np.array([1.0, -inf]), atol=0, rtol=0)
    assert "at (1,)" in msg and "+inf" in msg and "-inf" in msg
    msg = compare_arrays(np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]), atol=0, rtol=1e-9)
    assert "1 of 4 entries differ" in msg and "at (1, 1)" in msg and "expected 4, got 5" in msg


def test_a_large_matrix_is_truncated_on_aligned_lines():
    text = format_array(np.arange(400.0).reshape(20, 20))
    lines = text.splitlines()
    assert lines[0] == "(shape (20, 20))" and "..." in text and len(lines) < 12
    assert all(line.startswith("    ") for line in lines[1:])


def test_assert_passed_raises_with_the_message():
    res = run_cases("double", lambda x: 3 * x, lambda x: 2 * x, [{"x": np.ones(2)}])
    with pytest.raises(AssertionError, match=r"double failed: on input x=\[1. 1.\]"):
        res.assert_passed()
    assert run_cases("double", lambda x: x + x, lambda x: 2 * x, [{"x": np.ones(2)}]).assert_passed() is None
    assert "```text" in res._repr_markdown_()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_every_check_reports_a_stub_as_not_implemented(check):
    def stub(*args, **kwargs):
        raise NotImplementedError("exercise: demo")

    res = check(stub)
    assert isinstance(res, CheckResult) and not res
    assert "not implemented yet" in res.message
    with pytest.raises(AssertionError, match="not implemented yet"):
        res.assert_passed()


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_every_check_names_its_parameters_when_they_do_not_match(check):
    def wrong(completely_wrong_name):
        return 0.0

    res = check(wrong)
    assert not res and "wrong(completely_wrong_name)" in res.message and "rename the parameters" in res.message
