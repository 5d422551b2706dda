"""The shared check machinery: non-finite values, readable matrices, signatures, assertions, stubs."""

import io

import numpy as np
import pytest

import ncbook.exercises as ex
from ncbook.exercises import CheckResult, run_cases
from ncbook.exercises._core import collect, compare_arrays, format_array, harvest, pack_cases, unpack_outcomes

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


def test_every_check_is_built_from_one_registered_spec():
    names = {name.removeprefix("check_") for name in ex.__all__ if name.startswith("check_")}
    assert names == set(ex.EXERCISES)
    for name, spec in ex.EXERCISES.items():
        assert spec.name == name and spec.public_cases(), name
        assert all(set(case) == set(spec.params) for case in spec.public_cases()), name
        assert spec.reference is not None or spec.compare is not None, f"{name} has nothing to compare with"


def test_the_expected_value_is_computed_after_every_student_call():
    calls = []
    spec = ex.Exercise("order", params=("x",), cases=lambda rng: [{"x": 1.0}, {"x": 2.0}],
                       reference=lambda x: calls.append(("reference", x)) or 2 * x)
    spec.check(lambda x: calls.append(("student", x)) or 2 * x)
    assert [who for who, _ in calls] == ["student", "student", "reference", "reference"]


def test_the_student_cannot_corrupt_the_inputs_of_the_reference():
    def in_place(x):
        x *= 0
        raise NotImplementedError

    spec = ex.Exercise("copy", params=("x",), cases=lambda rng: [{"x": np.ones(3)}], reference=lambda x: x.sum())
    cases = spec.public_cases()
    collect(in_place, cases)
    assert cases[0]["x"].tolist() == [1.0, 1.0, 1.0]


def test_harvest_writes_numbers_only_and_the_grader_reads_them_without_pickles(tmp_path):
    spec = ex.EXERCISES["etf_cost_ratio"]
    cases = spec.hidden_cases(b"a secret of sixteen bytes")
    (tmp_path / "in.npz").write_bytes(pack_cases(cases))

    def etf_cost_ratio(counts):  # (C - 1) sqrt(n / C) over the nuclear norm of the SEL matrix
        c, n = len(counts), float(np.sum(counts))
        z = np.eye(c)[np.repeat(np.arange(c), counts)] - 1 / c
        return (c - 1) * np.sqrt(n / c) / np.linalg.svd(z, compute_uv=False)[:c - 1].sum()

    harvest("etf_cost_ratio", etf_cost_ratio, str(tmp_path / "in.npz"), str(tmp_path / "out.npz"))
    outcomes = unpack_outcomes((tmp_path / "out.npz").read_bytes())
    assert spec.verdicts(cases, outcomes) == [None] * len(cases)
    harvest("etf_cost_ratio", None, str(tmp_path / "in.npz"), str(tmp_path / "none.npz"), function="my_etf_cost_ratio")
    missing = unpack_outcomes((tmp_path / "none.npz").read_bytes())
    assert missing[0].error == "missing" and "my_etf_cost_ratio" in missing[0].detail
    buffer = io.BytesIO()  # a forged file: an object array (a pickle) is refused, an integer "result" is no value
    np.savez(buffer, __meta__=np.frombuffer(b'[{"error": null}]', dtype=np.uint8), o0=np.array([object()]))
    with pytest.raises(ValueError, match="pickle"):
        unpack_outcomes(buffer.getvalue())
    buffer = io.BytesIO()
    np.savez(buffer, __meta__=np.frombuffer(b'[{"error": null}]', dtype=np.uint8), o0=np.arange(3))
    assert unpack_outcomes(buffer.getvalue())[0].error == "missing"


@pytest.mark.parametrize("name", [n for n, s in ex.EXERCISES.items() if s.reference is not None])
def test_calling_the_reference_of_the_check_is_refused(name):
    spec = ex.EXERCISES[name]  # every reference: a private function of the package or a call of a public one
    res = spec.check(lambda *args, **kwargs: spec.reference(*args, **kwargs))
    assert not res and "calls" in res.message


def _in_thread(spec):
    import threading

    def student(**case):
        box = []
        t = threading.Thread(target=lambda: box.append(spec.expected(case)))
        t.start()
        t.join()
        return box[0]
    return student


def _hook_removed(spec):
    import sys

    def student(**case):
        sys.setprofile(None)
        return spec.expected(case)
    return student


def _lazy_array(spec):
    def student(**case):
        class Lazy:
            def __array__(self, dtype=None, copy=None):
                return np.asarray(spec.expected(case), dtype=dtype)
        return Lazy()
    return student


def _code_copy(spec):
    import types

    ref = spec.reference
    code = ref.__code__.replace(co_firstlineno=ref.__code__.co_firstlineno + 10000, co_filename="elsewhere.py")
    copy = types.FunctionType(code, ref.__globals__, ref.__name__, ref.__defaults__, ref.__closure__)
    copy.__kwdefaults__ = ref.__kwdefaults__
    return lambda **case: copy(**case)


@pytest.mark.parametrize("trick", [_in_thread, _hook_removed, _lazy_array, _code_copy])
@pytest.mark.parametrize("name", ["nc1", "etf_cost_ratio", "laplacian_status"])
def test_the_reference_out_of_the_hooks_sight_is_refused(trick, name):
    """A thread, a removed hook, a conversion after the call, a re-located copy of the code: each is refused."""
    spec = ex.EXERCISES[name]
    res = spec.check(trick(spec))
    assert not res and "your function" in res.message, res.message


def test_a_private_helper_of_a_forbidden_function_is_refused():
    """nc1 is forbidden in the NC1 exercise: so are the helpers of its private module it is made of."""
    from ncbook.metrics import _nc

    def student(features, labels, num_classes):
        h, y = _nc._features_labels(features, labels, num_classes)[:2]
        return float(np.var(np.asarray(h)))  # any value: the call of the helper is what is refused

    res = ex.EXERCISES["nc1"].check(student)
    assert not res and "calls ncbook.metrics._features_labels" in res.message, res.message
