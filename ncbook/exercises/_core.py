"""Shared machinery of the autograder checks.

A check calls a student's function on random and edge inputs, compares with the
reference implementation of :mod:`ncbook`, and returns a :class:`CheckResult`
whose message says which input failed, what was expected and what came back.
A failed result turns into an ``AssertionError`` with :meth:`CheckResult.assert_passed`
(for pytest and the otter-grader tests of the assignments).
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

__all__ = ["CheckResult", "run_cases"]


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one autograder check.

    Attributes
    ----------
    name : str
        The exercise checked.
    passed : bool
        True when every case matched the reference.
    message : str
        What was checked, or the first failing input with expected and received values
        (arrays printed over several aligned lines).

    Examples
    --------
    >>> ok = CheckResult("demo", True, "matches the reference on 3 cases.")
    >>> bool(ok), ok.assert_passed()
    (True, None)
    >>> CheckResult("demo", False, "expected 1.0, got 2.0.").assert_passed()
    Traceback (most recent call last):
    ...
    AssertionError: demo failed: expected 1.0, got 2.0.
    """

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def assert_passed(self) -> None:
        """Return None when passed; raise ``AssertionError`` carrying the message otherwise.

        Raises
        ------
        AssertionError
            ``"<name> failed: <message>"`` when the check failed.
        """
        if not self.passed:
            raise AssertionError(f"{self.name} failed: {self.message}")

    def __repr__(self) -> str:
        mark = "PASSED" if self.passed else "FAILED"
        return f"[{mark}] {self.name}: {self.message}"

    def _repr_markdown_(self) -> str:  # shown nicely in notebooks
        mark = "✅ passed" if self.passed else "❌ failed"
        if "\n" not in self.message:
            return f"**{self.name}** {mark}: {self.message}"
        return f"**{self.name}** {mark}:\n\n```text\n{self.message}\n```"


# --------------------------------------------------------------------------- formatting
def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def format_array(x: Any, *, precision: int = 5, indent: int = 4) -> str:
    """An array printed readably: scalars inline, vectors and matrices on aligned lines.

    Large arrays keep their first and last three rows and columns (numpy's summarisation);
    lines after the first are indented by ``indent`` spaces so that a matrix stays a block
    inside a message.
    """
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if arr.ndim == 0:
        return np.array2string(arr, precision=precision)
    text = np.array2string(arr, precision=precision, threshold=64, edgeitems=3, max_line_width=100,
                           suppress_small=False)
    if arr.ndim == 1:
        return text
    return f"(shape {arr.shape})\n" + textwrap.indent(text, " " * indent)


def _describe(case: dict) -> str:
    parts = []
    for key, value in case.items():
        if isinstance(value, (torch.Tensor, np.ndarray)):
            arr = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
            if arr.ndim <= 1 and arr.size <= 10:
                parts.append(f"{key}={np.array2string(arr, precision=4)}")
            elif arr.size <= 64:
                parts.append(f"{key}=" + format_array(arr, precision=4, indent=6))
            else:
                parts.append(f"{key}=array of shape {arr.shape}")
        else:
            parts.append(f"{key}={value!r}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- comparison
def _kind(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return "finite"


def compare_arrays(got: np.ndarray, expected: np.ndarray, *, atol: float, rtol: float) -> str | None:
    """None when ``got`` matches ``expected``; otherwise a sentence saying where and how it differs.

    NaN and infinities must sit at the same positions with the same signs; finite entries
    must agree within ``atol + rtol * |expected|``. A non-finite value where a finite one
    was expected (or the reverse) is named as such, never reported as a "nan" error.
    """
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    g, e = got.reshape(-1), expected.reshape(-1)
    gk = np.where(np.isnan(g), 0, np.where(np.isposinf(g), 1, np.where(np.isneginf(g), 2, 3)))
    ek = np.where(np.isnan(e), 0, np.where(np.isposinf(e), 1, np.where(np.isneginf(e), 2, 3)))
    where = lambda i: str(tuple(int(j) for j in np.unravel_index(i, expected.shape))) if expected.ndim else "the value"  # noqa: E731
    bad_kind = np.flatnonzero(gk != ek)
    if bad_kind.size:
        i = int(bad_kind[0])
        return (f"{bad_kind.size} non-finite mismatch(es); first at {where(i)}: expected {float(e[i])!r} "
                f"({_kind(e[i])}), got {float(g[i])!r} ({_kind(g[i])})")
    finite = ek == 3
    close = np.isclose(g[finite], e[finite], atol=atol, rtol=rtol)
    if close.all():
        return None
    idx = np.flatnonzero(finite)[~close]
    err = np.abs(g[idx] - e[idx])
    i = int(idx[np.argmax(err)])
    return (f"{idx.size} of {int(finite.sum())} entries differ; largest error {err.max():.3g} at {where(i)} "
            f"(expected {e[i]:.6g}, got {g[i]:.6g})")


# --------------------------------------------------------------------------- student calls
def _signature_problem(student: Callable, case: dict) -> str | None:
    """A sentence when ``student`` cannot be called with the case's keyword arguments."""
    try:
        sig = inspect.signature(student)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return None
    try:
        sig.bind(**case)
    except TypeError as exc:
        expected = ", ".join(case)
        name = getattr(student, "__name__", "your function")
        return (f"{name}{sig} cannot be called as {name}({expected}) ({exc}). The check calls it with the "
                f"keyword arguments ({expected}): rename the parameters to match.")
    return None


def _code_of(fn: Callable) -> Any:
    fn = inspect.unwrap(fn)
    return getattr(fn, "__code__", None) or getattr(getattr(fn, "forward", None), "__code__", None)


class _CallWatcher:
    """Notes whether any of ``forbidden`` runs while the student's function runs (``sys.setprofile``)."""

    def __init__(self, forbidden: Sequence[Callable]):
        self.codes = {c: f for f in forbidden if (c := _code_of(f)) is not None}
        self.hit: Callable | None = None
        self._previous = None

    def _profile(self, frame, event, arg):
        if event == "call" and self.hit is None and frame.f_code in self.codes:
            self.hit = self.codes[frame.f_code]

    def __enter__(self):
        if self.codes:
            self._previous = sys.getprofile()
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        if self.codes:
            sys.setprofile(self._previous)
        return False


def _qualname(fn: Callable) -> str:
    fn = inspect.unwrap(fn)
    module = getattr(fn, "__module__", "") or ""
    public = module.split("._")[0] if module.startswith("ncbook") else module
    return f"{public}.{getattr(fn, '__name__', repr(fn))}"


def run_cases(
    name: str,
    student: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Iterable[dict],
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    forbid: Sequence[Callable] = (),
) -> CheckResult:
    """Compare ``student(**case)`` with ``reference(**case)`` on every case.

    Parameters
    ----------
    name : str
        Exercise name used in the message.
    student, reference : callable
        Called with the same keyword arguments; results are compared as float64
        arrays (shape first, then non-finite positions, then finite values within
        ``atol + rtol * |expected|``).
    cases : iterable of dict
        Keyword arguments; tensors are cloned before each call so an in-place
        student function cannot corrupt the reference.
    forbid : sequence of callable, optional
        The ``ncbook`` functions the exercise asks the student to write: passing one of
        them, or a function that calls one of them, fails the check.

    Returns
    -------
    CheckResult
        ``passed`` is False on the first failing case; the message names the input,
        the expected and received values, or the signature problem.
    """
    if not callable(student):
        return CheckResult(name, False, f"expected a function; got {type(student).__name__}.")
    for fn in forbid:
        if inspect.unwrap(student) is inspect.unwrap(fn):
            return CheckResult(name, False, f"this is {_qualname(fn)} itself; the exercise is to write it yourself.")
    count = 0
    for case in cases:
        count += 1
        if count == 1 and (problem := _signature_problem(student, case)):
            return CheckResult(name, False, problem)
        fresh = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in case.items()}
        expected = _to_numpy(reference(**fresh))
        fresh = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in case.items()}
        watcher = _CallWatcher(forbid)
        try:
            with watcher:
                got_raw = student(**fresh)
        except NotImplementedError:
            return CheckResult(name, False, "not implemented yet (the function raised NotImplementedError).")
        except Exception as exc:  # report any student error as a failed case
            return CheckResult(name, False, f"raised {type(exc).__name__}: {exc} on input {_describe(case)}.")
        if watcher.hit is not None:
            return CheckResult(name, False, f"your function calls {_qualname(watcher.hit)}, the function this "
                                            "exercise asks you to write; implement it without it.")
        if got_raw is None:
            return CheckResult(name, False, f"returned None on input {_describe(case)}: is a `return` missing?")
        try:
            got = _to_numpy(got_raw)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"returned {type(got_raw).__name__}, not an array, on input {_describe(case)}.")
        problem = compare_arrays(got, expected, atol=atol, rtol=rtol)
        if problem is not None:
            return CheckResult(
                name, False,
                f"on input {_describe(case)}:\n  {problem}.\n  expected {format_array(expected)}\n"
                f"  got      {format_array(got)}",
            )
    return CheckResult(name, True, f"matches the reference on {count} cases.")
