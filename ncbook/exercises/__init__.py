"""Autograder checks: one ``check_<name>(student_function)`` per coding exercise.

Each check calls the student's function on random and edge inputs, compares it with
the reference implementation in :mod:`ncbook` and returns a :class:`CheckResult`
(truthy when passed; its message names the failing input, expected and received).
"""

from ._core import CheckResult
from ._core import run_cases
from ._primer import check_class_means
from ._primer import check_nc2

__all__ = [
    "CheckResult",
    "check_class_means",
    "check_nc2",
    "run_cases",
]
