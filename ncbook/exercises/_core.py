"""Shared machinery of the autograder checks: one declarative spec per coding exercise.

How an exercise declares its checks
-----------------------------------
Each coding exercise is one :class:`Exercise` in its chapter's module
(``ncbook/exercises/_<chapter>.py``) plus a one-line public check::

    def _sel_cases(rng):                       # the inputs: public seed in the notebook,
        yield {"labels": np.array([0, 2]), "num_classes": 3}     # the instructor's secret
        for _ in range(2):                                        # when graded
            c = int(rng.integers(2, 8))
            yield {"labels": rng.integers(0, c, int(rng.integers(1, 20))), "num_classes": c}

    SEL_MATRIX = Exercise(
        "sel_matrix", params=("labels", "num_classes"), cases=_sel_cases,
        reference=sel_matrix, atol=1e-10, forbid=(sel_matrix,))

    def check_sel_matrix(student) -> CheckResult:
        \"\"\"Check ``student(labels, num_classes) -> (C, n)`` against ...\"\"\"
        return SEL_MATRIX.check(student)

* ``params``: the keyword arguments the student's function is called with (its signature).
* ``cases(rng)``: yields the inputs, a dict ``{param: value}`` per case; values are tensors,
  arrays, numbers, strings or lists of numbers. Draw everything random from ``rng`` (a
  ``numpy.random.Generator``) and nothing from anywhere else: the public check draws from
  ``np.random.default_rng(public_seed)``, the graded assignment draws each student's *hidden* cases
  from the instructor's secret and the student's key (:meth:`Exercise.hidden_cases`). Fixed edge
  cases may be yielded as well; they are then part of both. At least one case must come from a
  domain too large to tabulate (more than about 10^9 values: a continuous parameter, or integers
  drawn from a wide range), so that no lookup table holds the answers and neighbours' cases differ
  (``tests/test_assignments.py`` draws the cases of 2000 students). Keep every case valid for any
  draw (the chapter's solution must pass for every secret: the tests try several).
* ``reference(**case)``: the expected value, computed only after the student's function has run on
  every case (so no frame the student's function can read holds it), and in grading only in the
  grader's process, which never runs student code.
* the comparison: ``atol``/``rtol`` (float64, non-finite values by position), or ``compare(got,
  case, expected)`` returning ``None`` or a sentence, for answers judged by a property (any
  rotation of the class means, a threshold bracketed by a factor). Every comparison allows the one
  tolerance rule of :func:`allowed_error` (``atol + rtol |expected| + ULPS eps scale``, ``eps`` the
  precision of the inputs, ``scale`` the value's largest entry); a ``compare`` uses :func:`within`
  for its numbers, never ``==`` on a computed float.
* ``forbid``: the :mod:`ncbook` functions the exercise asks the student to write; passing one, or
  calling one, fails.
* ``points``: (public, hidden) points in the graded assignment, default (1, 1).

Then add the spec to the module's ``EXERCISES`` tuple (``ncbook.exercises.EXERCISES`` collects
them; ``check_<name>`` must be exported) and, in the chapter, put the check cell after the
solution: ``from ncbook.exercises import check_sel_matrix`` / ``check_sel_matrix(my_sel_matrix)``.
The assignment builder reads the question's function name from that call; solution *text* in the
chapter becomes a written part graded by hand. The student's function must return numbers (anything
``numpy.asarray`` or a tensor gives as float64); an answer that is a sentence is a written part.
Keep cases and references cheap (they run for every submission graded) and valid for every draw.
Tests: the chapter's solution passes and a planted mistake fails with its message
(``tests/test_exercises_<chapter>.py``); ``tests/test_assignments.py`` runs the solution on the
hidden cases of several secrets and checks that hidden cases differ from the public ones.

The public check (``check_x(f)`` in the notebook) and the graded hidden cases share this one
definition. ``tools/assignments.py grade`` calls the student's function on both sets in a sandbox
that holds a *student edition* of the package: this module, the chapter modules and every function
the reference executes are absent there; only :mod:`ncbook.exercises._harvest` (the calls and the
packing of their numbers) is present. The numbers are judged with :meth:`Exercise.verdicts` in a
process that never imported the submission.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from ._harvest import (MAX_OUTPUT_SIZE, Case, Outcome, _copy, _to_numpy, collect, harvest as _harvest_file,  # noqa: F401
                       pack_cases, pack_outcomes, unpack_cases, unpack_outcomes)

__all__ = ["CheckResult", "Exercise", "Outcome", "allowed_error", "input_eps", "run_cases", "within"]

ULPS = 64
"""How many units in the last place of the inputs' precision, times the value's scale, every comparison allows
on top of a spec's ``atol`` and ``rtol`` (see :func:`allowed_error`): the rounding of another summation
order, another BLAS or thread count, or float32 inputs, never a wrong formula."""


#: Set to ``"1"`` by the book build for its kernels (``book/_ext/ncbook_cache.py``): there a failed check
#: raises :class:`CheckFailedError`, so a chapter whose own solution fails its check fails the build. A
#: reader's or a student's notebook (the variable unset) shows the failure and goes on.
STRICT_ENV = "NCBOOK_STRICT_CHECKS"


class CheckFailedError(AssertionError):
    """A check failed where failures must stop the run (the book build: ``NCBOOK_STRICT_CHECKS=1``)."""


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

    Raises
    ------
    CheckFailedError
        On a failed result where ``NCBOOK_STRICT_CHECKS=1`` (the book build's kernels), with the message.

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

    def __post_init__(self):
        if not self.passed and os.environ.get(STRICT_ENV, "").strip() == "1":
            raise CheckFailedError(f"{self.name} failed: {self.message} (a failed check fails the book build)")

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


def input_eps(case: Case | None) -> float:
    """Machine epsilon of the least precise floating-point input of ``case`` (float64's without one).

    Parameters
    ----------
    case : dict or None
        ``{parameter: value}``; tensors and arrays count by their dtype, Python floats as float64.

    Returns
    -------
    float
        ``numpy.finfo(dtype).eps`` of the coarsest float dtype found (``2.2e-16`` for float64,
        ``1.2e-7`` for float32).

    Examples
    --------
    >>> input_eps({"x": np.ones(2, dtype=np.float32), "k": 3}) == float(np.finfo(np.float32).eps)
    True
    >>> input_eps({"k": 3}) == float(np.finfo(np.float64).eps)
    True
    """
    eps = float(np.finfo(np.float64).eps)
    for value in (case or {}).values():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                eps = max(eps, float(torch.finfo(v.dtype).eps))
            elif isinstance(v, (np.ndarray, np.floating)) and np.issubdtype(v.dtype, np.floating):
                eps = max(eps, float(np.finfo(v.dtype).eps))
    return eps


def allowed_error(expected: np.ndarray, *, atol: float, rtol: float, eps: float = float(np.finfo(np.float64).eps)
                  ) -> np.ndarray:
    """The error every comparison of the checks allows, entry by entry: the one tolerance rule.

    ``|got - expected| <= atol + rtol |expected| + ULPS * eps * scale``, where ``scale`` is the largest
    finite ``|expected|`` entry (the value's scale: an entry far below the others is compared at the
    precision of the whole value, never exactly) and ``eps`` the machine epsilon of the inputs
    (:func:`input_eps`).

    Parameters
    ----------
    expected : ndarray
        The expected value, float64, any shape.
    atol, rtol : float
        The spec's absolute and relative tolerances (non-negative).
    eps : float, optional
        Machine epsilon of the inputs (float64 by default).

    Returns
    -------
    ndarray of the shape of ``expected``
        The largest error allowed at each entry (meaningful at finite entries).

    Raises
    ------
    ValueError
        If a tolerance is negative or not finite.

    Examples
    --------
    >>> allowed_error(np.array([0.0, 2.0]), atol=0.0, rtol=0.0).tolist() == [ULPS * 2.0 * np.finfo(float).eps] * 2
    True
    """
    for name, value in (("atol", atol), ("rtol", rtol), ("eps", eps)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite non-negative number; got {value!r}")
    e = np.asarray(expected, dtype=np.float64)
    finite = np.abs(e[np.isfinite(e)])
    scale = float(finite.max()) if finite.size else 0.0
    return atol + rtol * np.where(np.isfinite(e), np.abs(e), 0.0) + ULPS * eps * scale


def within(got: float, expected: float, *, atol: float = 0.0, rtol: float = 0.0,
           eps: float = float(np.finfo(np.float64).eps)) -> bool:
    """True when one finite number ``got`` is within :func:`allowed_error` of ``expected``.

    Examples
    --------
    >>> within(1.0 + 1e-15, 1.0), within(1.1, 1.0, rtol=0.05), within(float("nan"), 1.0)
    (True, False, False)
    """
    g, e = float(got), float(expected)
    return bool(np.isfinite(g) and np.isfinite(e) and abs(g - e) <= allowed_error(np.array(e), atol=atol, rtol=rtol,
                                                                                    eps=eps))


def compare_arrays(got: np.ndarray, expected: np.ndarray, *, atol: float, rtol: float,
                   eps: float = float(np.finfo(np.float64).eps)) -> str | None:
    """None when ``got`` matches ``expected``; otherwise a sentence saying where and how it differs.

    NaN and infinities must sit at the same positions with the same signs; finite entries must
    agree within :func:`allowed_error` (``atol + rtol |expected| + ULPS eps scale``). A non-finite value
    where a finite one was expected (or the reverse) is named as such, never reported as a "nan" error.

    Parameters
    ----------
    got, expected : ndarray
        float64 arrays of any shape.
    atol, rtol : float
        The spec's tolerances.
    eps : float, optional
        Machine epsilon of the inputs (:func:`input_eps`).

    Returns
    -------
    str or None

    Examples
    --------
    >>> compare_arrays(np.array([1.0, np.inf]), np.array([1.0 + 1e-15, np.inf]), atol=0, rtol=0) is None
    True
    >>> compare_arrays(np.array([1.0]), np.array([2.0]), atol=0, rtol=1e-9)
    '1 of 1 entries differ; largest error 1 at (0,) (expected 2, got 1)'
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
    allowed = allowed_error(e, atol=atol, rtol=rtol, eps=eps)[finite]
    close = np.abs(g[finite] - e[finite]) <= allowed
    if close.all():
        return None
    idx = np.flatnonzero(finite)[~close]
    err = np.abs(g[idx] - e[idx])
    i = int(idx[np.argmax(err)])
    return (f"{idx.size} of {int(finite.sum())} entries differ; largest error {err.max():.3g} at {where(i)} "
            f"(expected {e[i]:.6g}, got {g[i]:.6g})")


# --------------------------------------------------------------------------- the spec
def _secret_rng(secret: bytes, name: str, student: str = "") -> np.random.Generator:
    """HMAC-SHA256 of the exercise's name and the student's key under the instructor's secret, as a seed."""
    if not isinstance(secret, (bytes, bytearray)) or not secret:
        raise TypeError(f"secret must be non-empty bytes; got {type(secret).__name__}")
    if not isinstance(student, str):
        raise TypeError(f"student must be a str (the student's key); got {type(student).__name__}")
    message = b"ncbook-hidden-cases\0" + name.encode() + b"\0" + student.encode("utf-8", "surrogatepass")
    digest = hmac.new(bytes(secret), message, hashlib.sha256).digest()
    return np.random.default_rng(np.frombuffer(digest, dtype=np.uint32).tolist())


@dataclass(frozen=True)
class Exercise:
    """One coding exercise: the student's signature, its cases, the reference and the comparison.

    Parameters
    ----------
    name : str
        The exercise's name; its public check is ``check_<name>``.
    params : tuple of str
        The keyword arguments the student's function is called with.
    cases : callable
        ``cases(rng)`` yields one dict ``{param: value}`` per case, drawing only from ``rng``.
    reference : callable, optional
        ``reference(**case)``: the expected value (anything ``numpy.asarray`` takes).
    atol, rtol : float
        Tolerances of the default comparison (the rule: :func:`allowed_error`).
    compare : callable, optional
        ``compare(got, case, expected) -> None | str`` replaces the default comparison; ``got`` is
        the student's output as a float64 array, ``expected`` the reference's (None without one).
    forbid : tuple of callable
        The :mod:`ncbook` functions the exercise asks to write (passing or calling one fails).
    points : tuple of float
        (public, hidden) points in the graded assignment.
    public_seed : int
        Seed of the public cases (the notebook's check).
    hint : str
        Appended to a failure message of a public case.

    Examples
    --------
    >>> spec = Exercise("double", params=("x",), cases=lambda rng: [{"x": rng.standard_normal(3)}],
    ...                 reference=lambda x: 2 * x)
    >>> spec.check(lambda x: x + x)
    [PASSED] double: matches the reference on 1 cases.
    >>> bool(spec.check(lambda x: 3 * x))
    False
    >>> len(spec.hidden_cases(b"instructor secret")), bool(spec.hidden_cases(b"a")[0]["x"][0] != spec.public_cases()[0]["x"][0])
    (1, True)
    >>> bool(spec.hidden_cases(b"a", "alice")[0]["x"][0] != spec.hidden_cases(b"a", "bob")[0]["x"][0])
    True
    """

    name: str
    params: tuple[str, ...]
    cases: Callable[[np.random.Generator], Iterable[Case]]
    reference: Callable[..., Any] | None = None
    atol: float = 1e-6
    rtol: float = 1e-5
    compare: Callable[[np.ndarray, Case, Any], str | None] | None = None
    forbid: tuple[Callable, ...] = ()
    points: tuple[float, float] = (1, 1)
    public_seed: int = 0
    hint: str = ""
    summary: str = field(default="", compare=False)

    def public_cases(self) -> list[Case]:
        """The cases of the public check (the notebook's), drawn from ``public_seed``."""
        return list(self.cases(np.random.default_rng(self.public_seed)))

    def hidden_cases(self, secret: bytes, student: str = "") -> list[Case]:
        """The hidden cases of one student: drawn from HMAC-SHA256(``secret``, exercise name + ``student``).

        ``student`` is the student's key (the roster id, else the notebook's ``STUDENT`` cell, else its
        file name): neighbours get different cases. ``""`` gives the cases of no particular student.
        """
        return list(self.cases(_secret_rng(secret, self.name, student)))

    def expected(self, case: Case) -> Any:
        """The reference's value on ``case`` (None without a reference), on copies of the inputs."""
        return None if self.reference is None else self.reference(**{k: _copy(v) for k, v in case.items()})

    def verdict(self, case: Case, outcome: Outcome) -> str | None:
        """None when ``outcome`` is right for ``case``; otherwise the sentence a public check shows."""
        if outcome.error is not None:
            if outcome.error in ("exception", "none", "not_array", "too_large"):
                return f"{outcome.detail} on input {_describe(case)}" + \
                    (": is a `return` missing?" if outcome.error == "none" else ".")
            return outcome.detail
        expected = self.expected(case)
        if self.compare is not None:
            problem = self.compare(outcome.value, case, expected)
            return None if problem is None else f"on input {_describe(case)}:\n  {problem}{self.hint}"
        expected = _to_numpy(expected)
        problem = compare_arrays(outcome.value, expected, atol=self.atol, rtol=self.rtol, eps=input_eps(case))
        if problem is None:
            return None
        return (f"on input {_describe(case)}:\n  {problem}.\n  expected {format_array(expected)}\n"
                f"  got      {format_array(outcome.value)}{self.hint}")

    def verdicts(self, cases: Sequence[Case], outcomes: Sequence[Outcome]) -> list[str | None]:
        """:meth:`verdict` of every case (the grader's judgement of harvested outputs)."""
        if len(outcomes) != len(cases):
            return ["the number of results does not match the number of cases"] * len(cases)
        return [self.verdict(c, o) for c, o in zip(cases, outcomes)]

    def judge(self, cases: Sequence[Case], outcomes: Sequence[Outcome]) -> CheckResult:
        """A :class:`CheckResult`: the first failing case's sentence, or how many cases matched."""
        for case, outcome in zip(cases, outcomes):
            problem = self.verdict(case, outcome)
            if problem is not None:
                return CheckResult(self.name, False, problem)
        return CheckResult(self.name, True, self.summary or f"matches the reference on {len(cases)} cases.")

    def watched(self) -> tuple[Callable, ...]:
        """The functions a student's function may not call: ``forbid``, the reference itself and the case
        generator (with each, the other functions of its private module: the check's own helpers too)."""
        return self.forbid + ((self.reference,) if self.reference is not None else ()) + (self.cases,)

    def check(self, student: Callable[..., Any]) -> CheckResult:
        """The public check: ``student`` on the public cases, judged after every call has returned."""
        cases = self.public_cases()
        return self.judge(cases, collect(student, cases, self.watched()))


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
    """Compare ``student(**case)`` with ``reference(**case)`` on every case (an ad-hoc check).

    Parameters
    ----------
    name : str
        Exercise name used in the message.
    student, reference : callable
        Called with the same keyword arguments; results are compared as float64
        arrays (shape first, then non-finite positions, then finite values within
        ``atol + rtol * |expected|``). ``reference`` runs after every student call.
    cases : iterable of dict
        Keyword arguments; inputs are copied before each call so an in-place
        student function cannot corrupt the reference.
    forbid : sequence of callable, optional
        The ``ncbook`` functions the exercise asks the student to write: passing one of
        them, or a function that calls one of them, fails the check.

    Returns
    -------
    CheckResult
        ``passed`` is False on the first failing case; the message names the input,
        the expected and received values, or the signature problem.

    Examples
    --------
    >>> run_cases("double", lambda x: x + x, lambda x: 2 * x, [{"x": np.ones(2)}])
    [PASSED] double: matches the reference on 1 cases.
    """
    cases = list(cases)
    spec = Exercise(name, tuple(cases[0]) if cases else (), lambda rng: cases, reference, atol=atol, rtol=rtol,
                    forbid=tuple(forbid))
    return spec.check(student)


def _watched(name: str) -> tuple[Callable, ...]:
    from . import EXERCISES

    return EXERCISES[name].watched() if name in EXERCISES else ()


def harvest(name: str, student: Any, inputs: str, outputs: str, *, function: str = "") -> None:
    """:func:`ncbook.exercises._harvest.harvest` with the functions exercise ``name`` forbids watched.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> inp, out = os.path.join(folder, "in.npz"), os.path.join(folder, "out.npz")
    >>> _ = open(inp, "wb").write(pack_cases([{"counts": [5, 5]}]))
    >>> harvest("etf_cost_ratio", lambda counts: 1.0, inp, out)
    >>> [float(o.value) for o in unpack_outcomes(open(out, "rb").read())]
    [1.0]
    """
    _harvest_file(name, student, inputs, outputs, function=function, forbid=_watched(name))

