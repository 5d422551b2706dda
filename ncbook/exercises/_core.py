"""Shared machinery of the autograder checks.

A check calls a student's function on random and edge inputs, compares with the
reference implementation of :mod:`ncbook`, and returns a :class:`CheckResult`
whose message says which input failed and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

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
        What was checked, or the first failing input with expected and received values.
    """

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        mark = "PASSED" if self.passed else "FAILED"
        return f"[{mark}] {self.name}: {self.message}"

    def _repr_markdown_(self) -> str:  # shown nicely in notebooks
        mark = "✅ passed" if self.passed else "❌ failed"
        return f"**{self.name}** {mark}: {self.message}"


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def _describe(case: dict) -> str:
    parts = []
    for key, value in case.items():
        if isinstance(value, (torch.Tensor, np.ndarray)):
            arr = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
            text = np.array2string(arr, precision=4, threshold=10) if arr.size <= 10 else f"array of shape {arr.shape}"
            parts.append(f"{key}={text}")
        else:
            parts.append(f"{key}={value!r}")
    return ", ".join(parts)


def run_cases(
    name: str,
    student: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Iterable[dict],
    *,
    atol: float = 1e-6,
    rtol: float = 1e-5,
) -> CheckResult:
    """Compare ``student(**case)`` with ``reference(**case)`` on every case.

    Parameters
    ----------
    name : str
        Exercise name used in the message.
    student, reference : callable
        Called with the same keyword arguments; results are compared as float64
        arrays (shape first, then values within ``atol`` + ``rtol``).
    cases : iterable of dict
        Keyword arguments; tensors are cloned before each call so an in-place
        student function cannot corrupt the reference.

    Returns
    -------
    CheckResult
    """
    if not callable(student):
        return CheckResult(name, False, f"expected a function; got {type(student).__name__}.")
    count = 0
    for case in cases:
        count += 1
        fresh = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in case.items()}
        expected = _to_numpy(reference(**fresh))
        fresh = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in case.items()}
        try:
            got_raw = student(**fresh)
        except NotImplementedError:
            return CheckResult(name, False, "not implemented yet (the function raised NotImplementedError).")
        except Exception as exc:  # report any student error as a failed case
            return CheckResult(name, False, f"raised {type(exc).__name__}: {exc} on input {_describe(case)}.")
        if got_raw is None:
            return CheckResult(name, False, f"returned None on input {_describe(case)}: is a `return` missing?")
        try:
            got = _to_numpy(got_raw)
        except (TypeError, ValueError):
            return CheckResult(name, False, f"returned {type(got_raw).__name__}, not an array, on input {_describe(case)}.")
        if got.shape != expected.shape:
            return CheckResult(name, False, f"shape {got.shape}, expected {expected.shape}, on input {_describe(case)}.")
        if not np.allclose(got, expected, atol=atol, rtol=rtol, equal_nan=True):
            diff = np.abs(got - expected)
            err = float(diff[np.isfinite(diff)].max()) if np.isfinite(diff).any() else float("nan")
            exp_txt = np.array2string(expected, precision=5, threshold=8)
            got_txt = np.array2string(got, precision=5, threshold=8)
            return CheckResult(
                name, False, f"on input {_describe(case)}: expected {exp_txt}, got {got_txt} (max error {err:.3g})."
            )
    return CheckResult(name, True, f"matches the reference on {count} cases.")
