"""Calling a student's function on cases and packing what it returned: the harvest, with no answer in it.

This module holds everything a graded sandbox needs to apply a submission's functions to cases and
send the results back as numbers: :func:`collect` (the calls, each watched), :class:`Outcome`, the
``.npz`` packing of cases and outcomes (:func:`pack_cases`, :func:`unpack_cases`, :func:`pack_outcomes`,
:func:`unpack_outcomes`) and :func:`harvest` (the same, file to file). It holds no reference
implementation, no expected value, no comparison and no case generator: the grader copies it, alone
of :mod:`ncbook.exercises`, into the student edition of the package that a graded submission runs
against (``tools/grading/edition.py``), and judges the returned numbers in a process of its own.
:mod:`ncbook.exercises._core` imports it for the public checks.

Letters: a *case* is one dict ``{parameter: value}`` of keyword arguments; an *outcome* is what the
student's function did on it (a float64 array, or an error kind and a sentence).
"""

from __future__ import annotations

import inspect
import io
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

__all__ = ["ERROR_KINDS", "Outcome", "collect", "harvest", "pack_cases", "pack_outcomes", "unpack_cases", "unpack_outcomes"]

Case = dict  # {parameter name: value}
MAX_OUTPUT_SIZE = 10_000_000  # entries of one returned array kept for judging
_MACHINERY = ("ncbook.exercises._core", "ncbook.exercises._harvest")  # whose functions are never "helpers"


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


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
    if not name.startswith("ncbook.") or "._" not in name or name in _MACHINERY:
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


ERROR_KINDS = ("not_implemented", "signature", "forbidden", "exception", "none", "not_array", "too_large", "missing",
               "timeout")
"""Why a case has no value: every ``Outcome.error`` but None is one of these."""


@dataclass(frozen=True)
class Outcome:
    """What the student's function did on one case: a float64 array, or why there is none.

    ``error`` is None for a returned value, else one of :data:`ERROR_KINDS`: ``"not_implemented"``,
    ``"signature"``, ``"forbidden"``, ``"exception"``, ``"none"``, ``"not_array"``, ``"too_large"``,
    ``"missing"`` (no function of that name), ``"timeout"``; ``detail`` is the sentence shown for a
    public case.

    Examples
    --------
    >>> Outcome(value=np.ones(2)).error is None, Outcome(error="none", detail="returned None").detail
    (True, 'returned None')
    """

    value: np.ndarray | None = None
    error: str | None = None
    detail: str = ""


def collect(student: Any, cases: Sequence[Case], forbid: Sequence[Callable] = ()) -> list[Outcome]:
    """Call ``student(**case)`` on copies of every case; the outputs as float64 arrays, or the errors.

    Nothing here knows the expected values: they are computed afterwards, elsewhere
    (:meth:`ncbook.exercises.Exercise.verdicts`). Each call runs under a profiler hook that notes a call
    of a ``forbid`` function (or of one of its private helpers, or of a re-located copy of its code) or
    the start of a thread or process: a signal inside the student's own process, not a defence.

    Parameters
    ----------
    student : callable
        The submission's function, called with the case's keyword arguments.
    cases : sequence of dict
        ``{parameter: value}`` per case; values are copied before each call.
    forbid : sequence of callable, optional
        Functions the student's function may not call or be.

    Returns
    -------
    list of Outcome
        One per case, in order: a float64 array, or an error kind (:data:`ERROR_KINDS`) and a sentence.

    Examples
    --------
    >>> [o.value.tolist() for o in collect(lambda x: [x, 2 * x], [{"x": 1.0}, {"x": 2.0}])]
    [[1.0, 2.0], [2.0, 4.0]]
    >>> collect(lambda y: y, [{"x": 1.0}])[0].error
    'signature'
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


MAX_NPZ_MEMBERS = 10_000


def _read_npz(data: bytes) -> tuple[Any, dict]:
    """Arrays and metadata of an ``.npz`` written by :func:`_npz`; refuses pickles and compressed members
    (a stored member is never larger than the bytes read: nothing expands in the reader's memory)."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ValueError(f"not an .npz file ({exc})") from None
    if len(members) > MAX_NPZ_MEMBERS:
        raise ValueError(f"an .npz of {len(members)} arrays; at most {MAX_NPZ_MEMBERS} are read")
    if any(m.compress_type != zipfile.ZIP_STORED for m in members):
        raise ValueError("a compressed .npz member; only stored (uncompressed) arrays are read")
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if "__meta__" not in arrays or arrays["__meta__"].dtype != np.uint8:
        raise ValueError("an .npz without its __meta__ record")
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    return meta, arrays


def pack_cases(cases: Sequence[Case]) -> bytes:
    """The cases as an ``.npz`` file's bytes (arrays, and their kinds as JSON; no pickles).

    Parameters
    ----------
    cases : sequence of dict
        Values are tensors, arrays (not of objects), numbers, strings, None or lists of these.

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        For a value of another type, or an object array.

    Examples
    --------
    >>> back = unpack_cases(pack_cases([{"x": torch.ones(2, dtype=torch.float32), "k": 3}]))
    >>> back[0]["x"].dtype, back[0]["k"]
    (torch.float32, 3)
    """
    arrays: dict = {}
    meta = [{k: _pack_value(v, f"c{i}_{k}", arrays) for k, v in case.items()} for i, case in enumerate(cases)]
    return _npz(arrays, meta)


def unpack_cases(data: bytes) -> list[Case]:
    """The inverse of :func:`pack_cases` (``allow_pickle=False``, stored members only).

    Raises
    ------
    ValueError
        If ``data`` is not such an ``.npz`` (a pickle, a compressed member, no metadata).

    Examples
    --------
    >>> unpack_cases(pack_cases([{"tau": 0.5}]))
    [{'tau': 0.5}]
    """
    meta, arrays = _read_npz(data)
    return [{k: _unpack_value(m, arrays) for k, m in case.items()} for case in meta]


def pack_outcomes(outcomes: Sequence[Outcome]) -> bytes:
    """Outcomes as an ``.npz`` file's bytes: the returned arrays, and the errors as JSON.

    Examples
    --------
    >>> [o.error for o in unpack_outcomes(pack_outcomes([Outcome(value=np.ones(1)), Outcome(error="none")]))]
    [None, 'none']
    """
    arrays = {f"o{i}": o.value for i, o in enumerate(outcomes) if o.value is not None}
    meta = [{"error": o.error, "detail": o.detail[:2000]} for o in outcomes]
    return _npz(arrays, meta)


def unpack_outcomes(data: bytes) -> list[Outcome]:
    """The inverse of :func:`pack_outcomes`, checked as data from an untrusted process.

    Only float64 arrays of at most ``MAX_OUTPUT_SIZE`` entries count as values; an error kind outside
    :data:`ERROR_KINDS` becomes ``"missing"``; details are cut to 2000 characters.

    Raises
    ------
    ValueError
        If ``data`` is not an ``.npz`` of outcomes (a pickle, a compressed member, metadata that is
        not a list of records).

    Examples
    --------
    >>> unpack_outcomes(pack_outcomes([Outcome(error="made-up kind")]))[0].error
    'missing'
    """
    meta, arrays = _read_npz(data)
    if not isinstance(meta, list) or not all(isinstance(m, dict) for m in meta):
        raise ValueError("outcomes metadata is not a list of records")
    out = []
    for i, m in enumerate(meta):
        value, error = arrays.get(f"o{i}"), m.get("error")
        if error is None and (value is None or value.dtype != np.float64 or value.size > MAX_OUTPUT_SIZE):
            out.append(Outcome(error="missing", detail="no value came back"))
        elif error is None:
            out.append(Outcome(value=value))
        elif error not in ERROR_KINDS:
            out.append(Outcome(error="missing", detail="no value came back"))
        else:
            out.append(Outcome(error=error, detail=str(m.get("detail", ""))[:2000]))
    return out


def harvest(name: str, student: Any, inputs: str, outputs: str, *, function: str = "",
            forbid: Sequence[Callable] = ()) -> None:
    """Apply ``student`` to the cases in the file ``inputs``; write the outcomes (numbers only) to ``outputs``.

    Parameters
    ----------
    name : str
        The exercise's name (for the message when ``student`` is missing).
    student : callable or None
        The submission's function; None when the notebook defined none of that name.
    inputs, outputs : str
        Paths of the ``.npz`` of cases (:func:`pack_cases`) and of the outcomes to write
        (:func:`pack_outcomes`).
    function : str, optional
        The name the student's function should have.
    forbid : sequence of callable, optional
        Functions the student's function may not call (watched as in :func:`collect`).

    Raises
    ------
    ValueError
        If ``inputs`` is not an ``.npz`` of cases (e.g. it holds a pickle).

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> inp, out = os.path.join(folder, "in.npz"), os.path.join(folder, "out.npz")
    >>> _ = open(inp, "wb").write(pack_cases([{"x": 2.0}]))
    >>> harvest("double", lambda x: 2 * x, inp, out)
    >>> [float(o.value) for o in unpack_outcomes(open(out, "rb").read())]
    [4.0]
    """
    with open(inputs, "rb") as f:
        cases = unpack_cases(f.read())
    if student is None:
        outcomes = [Outcome(error="missing", detail=f"no function named {function or name} was defined.")] * len(cases)
    else:
        outcomes = collect(student, cases, forbid)
    data = pack_outcomes(outcomes)
    with open(outputs, "wb") as f:
        f.write(data)
