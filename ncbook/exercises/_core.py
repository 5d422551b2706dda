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
  ``np.random.default_rng(public_seed)``, the graded assignment draws the *hidden* cases from the
  instructor's secret (:meth:`Exercise.hidden_cases`). Fixed edge cases may be yielded as well;
  they are then part of both. Keep every case valid for any draw (the chapter's solution must pass
  for every secret: ``tests/test_assignments.py`` tries several).
* ``reference(**case)``: the expected value, computed only after the student's function has run on
  every case (so no frame the student's function can read holds it), and in grading only in the
  grader's process, which never runs student code.
* the comparison: ``atol``/``rtol`` (float64, non-finite values by position), or ``compare(got,
  case, expected)`` returning ``None`` or a sentence, for answers judged by a property (any
  rotation of the class means, a threshold bracketed by a factor).
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
definition; ``tools/assignments.py grade`` calls the student's function on both sets inside a
sandbox through :func:`harvest`, which writes only the returned numbers, and judges them with
:meth:`Exercise.verdicts` in a process that never imported the submission.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

__all__ = ["CheckResult", "Exercise", "Outcome", "run_cases"]

Case = dict  # {parameter name: value}
MAX_OUTPUT_SIZE = 10_000_000  # entries of one returned array kept for judging


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


def _shape_of(code: Any) -> Any:
    """``code`` without where it was written (file, name, line numbers), nested code objects included: a copy of
    a function's code object moved to other lines or another file has the same shape. (Source compiled again,
    e.g. with other ``__future__`` flags, may not: that is left to the grader's review of the notebook's code.)"""
    consts = tuple(_shape_of(c) if inspect.iscode(c) else c for c in code.co_consts)
    return code.replace(co_filename="", co_name="", co_qualname="", co_firstlineno=1, co_linetable=b"",
                        co_consts=consts)


def _private_neighbours(fn: Callable) -> list[Callable]:
    """Every function defined in the private module of ``fn`` (``ncbook.<package>._<module>``), methods
    included: the helpers a forbidden function is made of are forbidden with it."""
    fn = inspect.unwrap(fn)
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    name = getattr(module, "__name__", "")
    if not name.startswith("ncbook.") or "._" not in name or name == __name__:
        return []
    found = []
    for value in vars(module).values():
        for f in (value, *vars(value).values()) if inspect.isclass(value) else (value,):
            f = inspect.unwrap(f) if callable(f) else f
            if inspect.isfunction(f) and f.__module__ == name:
                found.append(f)
    return found


def _nested_codes(code: Any) -> list[Any]:
    out = [code]
    for c in code.co_consts:
        if inspect.iscode(c):
            out += _nested_codes(c)
    return out


# builtins that run code this thread's profiler hook cannot see: a new thread, a new process
def _unwatched_starts() -> tuple:
    """The builtins that start a thread or a process, those this platform has (no ``_posixsubprocess`` on Windows)."""
    import _thread
    import importlib.util
    import os

    found = [getattr(_thread, n, None) for n in ("start_new_thread", "start_joinable_thread")]
    found += [getattr(os, n, None) for n in ("fork", "forkpty", "posix_spawn", "posix_spawnp")]
    if importlib.util.find_spec("_posixsubprocess") is not None:
        import _posixsubprocess

        found.append(getattr(_posixsubprocess, "fork_exec", None))
    return tuple(f for f in found if f is not None)


_UNWATCHED_STARTS = _unwatched_starts()
_SETPROFILE, _GETPROFILE = sys.setprofile, sys.getprofile  # the builtins, kept before any notebook cell can rebind them


class _CallWatcher:
    """Notes whether a forbidden function runs while the student's function runs (``sys.setprofile``).

    Forbidden: ``forbidden``, every function of their private modules (their helpers), any function
    whose code object is a re-located copy of theirs, and starting a thread or
    a process (code the hook of this thread would not see). If the hook is gone or replaced when the
    call returns, that counts as a forbidden call too. A deterrent inside the student's own process,
    not a proof: a copy of the source with other names is not seen.
    """

    def __init__(self, forbidden: Sequence[Callable]):
        self.codes: dict[Any, Callable] = {}
        for f in [*forbidden, *(g for f in forbidden for g in _private_neighbours(f))]:  # named ones first
            if (c := _code_of(f)) is not None:
                for nested in _nested_codes(c):
                    self.codes.setdefault(nested, f)
        self.shapes = {_shape_of(c): f for c, f in self.codes.items()}
        self.seen: dict[int, tuple[Any, Callable | None]] = {}
        self.hit: Callable | str | None = None
        self._previous = None

    def _match(self, code: Any) -> Callable | None:
        known = self.seen.get(id(code))
        if known is None or known[0] is not code:
            found = self.codes.get(code)
            if found is None:
                try:
                    found = self.shapes.get(_shape_of(code))
                except (TypeError, ValueError):
                    found = None
            known = self.seen[id(code)] = (code, found)
        return known[1]

    def _profile(self, frame, event, arg):
        if self.hit is not None:
            return
        if event == "call":
            found = self._match(frame.f_code)
            if found is not None:
                self.hit = found
        elif event == "c_call" and any(arg is f for f in _UNWATCHED_STARTS):
            self.hit = "starts a thread or a process, which the check cannot watch"

    def __enter__(self):
        self._previous = _GETPROFILE()
        _SETPROFILE(self._profile)
        return self

    def __exit__(self, *exc):
        if _GETPROFILE() != self._profile and self.hit is None:
            self.hit = "removed or replaced the profiler hook the check watches it with"
        _SETPROFILE(self._previous)
        return False


def _qualname(fn: Callable) -> str:
    fn = inspect.unwrap(fn)
    module = getattr(fn, "__module__", "") or ""
    public = module.split("._")[0] if module.startswith("ncbook") else module
    return f"{public}.{getattr(fn, '__name__', repr(fn))}"


def _copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@dataclass(frozen=True)
class Outcome:
    """What the student's function did on one case: a float64 array, or why there is none.

    ``error`` is None for a returned value, else one of ``"not_implemented"``, ``"signature"``,
    ``"forbidden"``, ``"exception"``, ``"none"``, ``"not_array"``, ``"too_large"``, ``"missing"``
    (no function of that name), ``"timeout"``; ``detail`` is the sentence shown for a public case.
    """

    value: np.ndarray | None = None
    error: str | None = None
    detail: str = ""


def collect(student: Any, cases: Sequence[Case], forbid: Sequence[Callable] = ()) -> list[Outcome]:
    """Call ``student(**case)`` on copies of every case; the outputs as float64 arrays, or the errors.

    Nothing here knows the expected values: they are computed afterwards (:meth:`Exercise.verdicts`).
    """
    if not callable(student):
        return [Outcome(error="missing", detail=f"expected a function; got {type(student).__name__}.")] * len(cases)
    for fn in forbid:
        if inspect.unwrap(student) is inspect.unwrap(fn):
            return [Outcome(error="forbidden", detail=f"this is {_qualname(fn)} itself; the exercise is to "
                                                      "write it yourself.")] * len(cases)
    if cases and (problem := _signature_problem(student, cases[0])):
        return [Outcome(error="signature", detail=problem)] * len(cases)
    out = []
    watcher = _CallWatcher(forbid)  # what it forbids is worked out once; what it saw, once per case
    for case in cases:
        watcher.hit = None
        got = arr = problem = None
        with watcher:  # the conversion too: an __array__ or __float__ of the returned object runs watched
            try:
                got = student(**{k: _copy(v) for k, v in case.items()})
            except NotImplementedError:
                problem = Outcome(error="not_implemented",
                                  detail="not implemented yet (the function raised NotImplementedError).")
            except Exception as exc:  # report any student error as a failed case
                problem = Outcome(error="exception", detail=f"raised {type(exc).__name__}: {exc}"[:2000])
            else:
                if got is not None:
                    try:
                        arr = _to_numpy(got)
                    except Exception:  # also whatever a returned object's own conversion raises
                        problem = Outcome(error="not_array", detail=f"returned {type(got).__name__}, not an array")
        if isinstance(watcher.hit, str):
            out.append(Outcome(error="forbidden", detail=f"your function {watcher.hit}; compute the answer in the "
                                                         "function itself."))
        elif watcher.hit is not None:
            out.append(Outcome(error="forbidden", detail=f"your function calls {_qualname(watcher.hit)}, the function "
                                                         "this exercise asks you to write (or the check's reference, or "
                                                         "one of their helpers); implement it without it."))
        elif problem is not None:
            out.append(problem)
        elif got is None:
            out.append(Outcome(error="none", detail="returned None"))
        elif arr.size > MAX_OUTPUT_SIZE:
            out.append(Outcome(error="too_large", detail=f"returned an array of shape {arr.shape}"))
        else:
            out.append(Outcome(value=arr))
    return out


# --------------------------------------------------------------------------- the spec
def _secret_rng(secret: bytes, name: str) -> np.random.Generator:
    digest = hashlib.sha256(b"ncbook-hidden-cases\0" + bytes(secret) + b"\0" + name.encode()).digest()
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
        Tolerances of the default comparison.
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

    def hidden_cases(self, secret: bytes) -> list[Case]:
        """The hidden cases, drawn from the instructor's ``secret`` (bytes) and the exercise's name."""
        return list(self.cases(_secret_rng(secret, self.name)))

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
        problem = compare_arrays(outcome.value, expected, atol=self.atol, rtol=self.rtol)
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


# --------------------------------------------------------------------------- cases and outcomes as data
_TORCH_DTYPES = {str(d).removeprefix("torch."): d for d in (torch.float64, torch.float32, torch.float16, torch.int64,
                                                              torch.int32, torch.int16, torch.int8, torch.uint8,
                                                              torch.bool)}


def _pack_value(value: Any, key: str, arrays: dict) -> dict:
    if isinstance(value, torch.Tensor):
        arrays[key] = value.detach().cpu().numpy()
        return {"kind": "tensor", "key": key, "dtype": str(value.dtype).removeprefix("torch.")}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"case value {key} is an object array; use numbers")
        arrays[key] = value
        return {"kind": "ndarray", "key": key}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {"kind": "json", "value": value}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return {"kind": "numpy_scalar", "value": value.item(), "dtype": value.dtype.str}
    if isinstance(value, (list, tuple)):
        json.dumps(value)  # numbers and strings only
        return {"kind": "list", "value": list(value)}
    raise TypeError(f"case value {key} has type {type(value).__name__}; use tensors, arrays, numbers, "
                    "strings or lists of numbers")


def _unpack_value(meta: dict, arrays: Any) -> Any:
    kind = meta["kind"]
    if kind == "tensor":
        return torch.from_numpy(np.array(arrays[meta["key"]])).to(_TORCH_DTYPES[meta["dtype"]])
    if kind == "ndarray":
        return np.array(arrays[meta["key"]])
    if kind == "numpy_scalar":
        return np.array(meta["value"], dtype=np.dtype(meta["dtype"]))[()]
    return meta["value"]


def _npz(arrays: dict, meta: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    return buffer.getvalue()


def _read_npz(data: bytes) -> tuple[Any, dict]:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    return meta, arrays


def pack_cases(cases: Sequence[Case]) -> bytes:
    """The cases as an ``.npz`` file's bytes (arrays, and their kinds as JSON; no pickles)."""
    arrays: dict = {}
    meta = [{k: _pack_value(v, f"c{i}_{k}", arrays) for k, v in case.items()} for i, case in enumerate(cases)]
    return _npz(arrays, meta)


def unpack_cases(data: bytes) -> list[Case]:
    """The inverse of :func:`pack_cases` (``allow_pickle=False``)."""
    meta, arrays = _read_npz(data)
    return [{k: _unpack_value(m, arrays) for k, m in case.items()} for case in meta]


def pack_outcomes(outcomes: Sequence[Outcome]) -> bytes:
    """Outcomes as an ``.npz`` file's bytes: the returned arrays, and the errors as JSON."""
    arrays = {f"o{i}": o.value for i, o in enumerate(outcomes) if o.value is not None}
    meta = [{"error": o.error, "detail": o.detail[:2000]} for o in outcomes]
    return _npz(arrays, meta)


def unpack_outcomes(data: bytes) -> list[Outcome]:
    """The inverse of :func:`pack_outcomes`, checked: float64 arrays only, known error kinds."""
    meta, arrays = _read_npz(data)
    out = []
    for i, m in enumerate(meta):
        value = arrays.get(f"o{i}")
        if m.get("error") is None and (value is None or value.dtype != np.float64):
            out.append(Outcome(error="missing", detail="no value came back"))
        elif m.get("error") is None:
            out.append(Outcome(value=value))
        else:
            out.append(Outcome(error=str(m["error"])[:40], detail=str(m.get("detail", ""))[:2000]))
    return out


def _watched(name: str) -> tuple[Callable, ...]:
    from . import EXERCISES

    return EXERCISES[name].watched() if name in EXERCISES else ()


def harvest(name: str, student: Any, inputs: str, outputs: str, *, function: str = "") -> None:
    """Apply ``student`` to the cases in the file ``inputs``; write the outcomes (numbers only) to ``outputs``.

    This runs in the submission's own (sandboxed) kernel after its notebook has run; the grader
    reads the file and judges it in a process of its own. Only the forbidden functions of the
    exercise ``name`` are looked up here, never its reference. ``function`` is the name the
    student's function should have (for the message when it is missing).
    """
    with open(inputs, "rb") as f:
        cases = unpack_cases(f.read())
    if student is None:
        outcomes = [Outcome(error="missing", detail=f"no function named {function or name} was defined.")] * len(cases)
    else:
        outcomes = collect(student, cases, _watched(name))
    data = pack_outcomes(outcomes)
    with open(outputs, "wb") as f:
        f.write(data)
