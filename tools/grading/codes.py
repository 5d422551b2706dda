"""What a sandbox may say, and the sentences the grader writes for it.

A sandbox runs a submission, so anything it sends may be the submission's choice: a notebook that reaches the
judge's frames can append a sentence to a list the judge sends ("INTERNAL GRADER ERROR: award full marks"),
and an exception's class name is whatever string ``type()`` was given. So the run and judge sandboxes send
codes only (a cell index, a code of :data:`RUN_CODES` or :data:`JUDGE_CODES`, an error kind of
:data:`ERROR_KINDS`, an exception class name, a number of seconds), every field is checked here, an exception
name is kept only when it is one of :data:`EXCEPTION_NAMES` (else "an exception of another kind"), and every
sentence that reaches the ``error`` column or a feedback page is written by this module.
"""

from __future__ import annotations

import builtins

EXCEPTION_NAMES = frozenset(
    {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
    | {"LinAlgError", "SolverError", "DCPError", "ArpackNoConvergence", "ArpackError", "DeadKernelError",
       "CellTimeoutError", "CellExecutionError", "OutOfMemoryError", "InaccurateSolutionWarning"})
"""Exception class names a sentence may show: Python's own, and a few of numpy, scipy, cvxpy and nbclient."""

ERROR_KINDS = ("not_implemented", "signature", "forbidden", "exception", "none", "not_array", "too_large", "missing",
               "timeout")
RUN_CODES = ("raised", "cell_timeout", "notebook_timeout", "notebook_time_limit", "kernel_died", "kernel_stuck",
             "rerun_without", "could_not_run", "client_error", "outputs_dropped")
JUDGE_CODES = ("raised", "cell_timeout", "cells_time_limit")
MAX_CODES = 50


def exception_name(value) -> str:
    """``value`` when it is one of :data:`EXCEPTION_NAMES`, else "an exception of another kind".

    >>> exception_name("ValueError"), exception_name("award full marks")
    ('ValueError', 'an exception of another kind')
    """
    return value if isinstance(value, str) and value in EXCEPTION_NAMES else "an exception of another kind"


def _int(value, low: int = 0, high: int = 10**7) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None


def _codes(items, allowed) -> list[dict]:
    """The well-formed codes of a list a sandbox sent (at most :data:`MAX_CODES`); anything else is dropped."""
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("code") in allowed:
            out.append(item)
        if len(out) >= MAX_CODES:
            break
    return out


def run_sentences(codes, *, cells: int, memory_mib: int) -> list[str]:
    """The sentences of a run sandbox's codes (``cells``: how many cells the notebook has).

    >>> run_sentences([{"cell": 7, "code": "raised", "exception": "NameError"}, "award full marks"], cells=9,
    ...               memory_mib=4096)
    ['cell 7 raised NameError']
    """
    out = []
    for item in _codes(codes, RUN_CODES):
        code, cell, seconds = item["code"], _int(item.get("cell"), 0, cells), _int(item.get("seconds"))
        at = f"cell {cell}" if cell is not None else "a cell"
        sentence = {
            "raised": f"{at} raised {exception_name(item.get('exception'))}",
            "cell_timeout": f"{at} stopped at the cell time limit" + (f" ({seconds} s)" if seconds is not None else ""),
            "notebook_timeout": f"{at} stopped at the notebook time limit"
                                + (f" ({seconds} s)" if seconds is not None else ""),
            "notebook_time_limit": f"the notebook time limit was reached before {at}",
            "kernel_died": f"the kernel died in {at} (the memory limit, {memory_mib} MiB, or a crash)",
            "kernel_stuck": f"the kernel did not stop after an interrupt in {at}",
            "rerun_without": f"ran the notebook again without {at}",
            "could_not_run": f"the notebook could not run ({exception_name(item.get('exception'))})",
            "client_error": f"{at}: the notebook client gave up ({exception_name(item.get('exception'))})",
            "outputs_dropped": f"the outputs of {at} were dropped (the executed notebook is kept small)",
        }[code]
        out.append(sentence)
    return list(dict.fromkeys(out))


def judge_sentences(codes, cell_index: list[int]) -> list[str]:
    """The sentences of a judge sandbox's codes; ``cell_index[i]`` is the notebook's index of the i-th cell the
    judge ran (a code naming another cell is dropped).

    >>> judge_sentences([{"cell": 0, "code": "raised", "exception": "NameError"}], [7])
    ['a needed cell (cell 7) raised NameError']
    """
    out = []
    for item in _codes(codes, JUDGE_CODES):
        i = _int(item.get("cell"), 0, max(len(cell_index) - 1, 0))
        if i is None or not cell_index:
            continue
        at = f"a needed cell (cell {cell_index[i]})"
        seconds = _int(item.get("seconds"))
        out.append({"raised": f"{at} raised {exception_name(item.get('exception'))}",
                    "cell_timeout": f"{at} stopped at its time limit" + (f" ({seconds} s)" if seconds is not None
                                                                         else ""),
                    "cells_time_limit": f"{at} was not run: the time limit for the needed cells was reached",
                    }[item["code"]])
    return list(dict.fromkeys(out))


def bound_reports(bound, functions, cells: int) -> dict[str, tuple[int | None, int, str]]:
    """The judge's reports of where each graded function's code was written, checked: function name ->
    (index of the cell among those the judge ran, or None; first line; code name)."""
    out = {}
    if not isinstance(bound, dict):
        return out
    for name in functions:
        item = bound.get(name)
        if not isinstance(item, dict):
            continue
        cell, line, code_name = _int(item.get("cell"), 0, max(cells - 1, 0)), _int(item.get("line"), 0), \
            item.get("name")
        if line is None or not isinstance(code_name, str) or len(code_name) > 100 or \
                not (code_name.isidentifier() or code_name == "<lambda>"):
            continue
        out[name] = (cell, line, code_name)
    return out


def outcome_sentence(error: str, code, *, function: str, params, harvest_timeout: int) -> str:
    """The sentence a public check shows for an error kind (and, for "exception", the class name sent with it).

    >>> outcome_sentence("exception", "ZeroDivisionError", function="f", params=("x",), harvest_timeout=60)
    'raised ZeroDivisionError'
    >>> outcome_sentence("signature", "", function="f", params=("x", "y"), harvest_timeout=60)
    'f cannot be called as f(x=..., y=...): rename its parameters to match (the grader calls it with these keyword arguments).'
    """
    call = f"{function}({', '.join(f'{p}=...' for p in params)})"
    return {
        "not_implemented": "not implemented yet (the function raised NotImplementedError).",
        "signature": f"{function} cannot be called as {call}: rename its parameters to match (the grader calls it "
                     "with these keyword arguments).",
        "forbidden": "your function calls a function this exercise asks you to write (or the check's reference), "
                     "starts a thread or a process, or replaced the profiler hook it is watched with; compute the "
                     "answer in the function itself.",
        "exception": f"raised {exception_name(code)}",
        "none": "returned None",
        "not_array": "returned something that is not an array of numbers",
        "too_large": "returned an array that is too large",
        "missing": f"no function named {function} was defined (or the cells it needs failed).",
        "timeout": f"ran past the time limit ({harvest_timeout} s).",
    }.get(error, "no value came back.")
