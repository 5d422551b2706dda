"""Autograder checks: one ``check_<name>(student_function)`` per coding exercise.

Each check calls the student's function on random and edge inputs, compares it with
the reference implementation in :mod:`ncbook` and returns a :class:`CheckResult`
(truthy when passed; its message names the failing input, expected and received).
"""

from ._core import CheckResult
from ._core import run_cases

__all__ = [
    "CheckResult",
    "run_cases",
]
