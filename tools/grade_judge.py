#!/usr/bin/env python3
"""Apply a submission's functions to cases inside its *judge* sandbox; hand back numbers only.

``tools/assignments.py grade`` starts this file as the only process of a fresh bubblewrap sandbox whose
``ncbook`` is the *student edition* of the package (``tools/grading/edition.py``): the reference
implementations of the graded exercises, their helpers, the checks and their sources are absent there;
only ``ncbook.exercises._harvest`` (calling a function on cases, packing the returned numbers) is present.
The submission's code runs in this very process (an IPython shell, no kernel): whatever it rewrites here,
the only numbers it can send back are numbers it computed itself. This file is never imported by the grader.

Everything this process sends is a code, never a sentence: the grader reads cell indices, error kinds,
exception class names (kept only when they are in its fixed list), numbers and time limits, and writes every
sentence an instructor or a student reads itself. (A notebook that reaches this process's frames can change
what it sends, but only among codes: no text of its choosing reaches the error column or a feedback page.)

The protocol (JSON lines on stdin and stdout):

1. in: ``{"cells": [source, ...], "functions": [name, ...], "cell_timeout": s, "cells_timeout": s, ...}``:
   the submission's code cells that its graded functions need (nothing else of the notebook); they run in
   order. out: ``{"event": "ready", "codes": [...], "bound": {...}}``: per cell that failed
   ``{"cell": i, "code": "raised", "exception": name}`` or ``{"cell": i, "code": "cell_timeout", "seconds": s}``,
   or ``{"cell": i, "code": "cells_time_limit"}`` where the cells' time ran out; and for each graded function
   bound after the cells, where its code object was written: ``{"cell": i or None, "line": n, "name": s}``
   (the similarity review compares that definition).
2. in: ``{"stage": "public", "items": [...]}``; out: one ``{"event": "outcomes", "index": i, "npz": ...}``
   (or ``"error": "timeout"``) per item, then ``{"event": "stage-done"}``. An item names the exercise, the
   function, the functions outside the package its exercise forbids (watched, a signal only), the cases
   (an ``.npz``, base64) and a time limit. An outcome is a float64 array or an error kind, with the
   exception's class name for the kind "exception" and nothing else.
3. in: ``{"stage": "hidden", "items": [...]}``: the hidden cases, sent by the grader only after it has read
   every public outcome; out: as in 2 (the grader keeps numbers and error kinds only).
4. in: ``{"stage": "end"}`` or end of input: the process exits.
"""

from __future__ import annotations

import base64
import functools
import importlib
import inspect
import json
import os
import re
import resource
import signal
import sys
import time

_RAISED = re.compile(r"^raised ([A-Za-z_][A-Za-z0-9_]{0,59})(?::|$)")


class _Timeout(BaseException):
    """Raised by the alarm in the submission's code (a BaseException: ``except Exception`` does not catch it)."""


def _alarm(signum, frame):
    raise _Timeout()


def _limits(job: dict) -> None:
    wanted = [(resource.RLIMIT_FSIZE, job.get("file_size", 1 << 30)), (resource.RLIMIT_CORE, 0)]
    if job.get("rlimits"):
        wanted += [(resource.RLIMIT_DATA, job["memory"]), (resource.RLIMIT_NPROC, job.get("processes", 512))]
    for limit, value in wanted:
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass


def _resolve(dotted: str):
    """The object at ``module.attr.attr``, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module at this depth
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            return obj
        except AttributeError:
            return None
    return None


class Judge:
    def __init__(self, channel, commands):
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        import ncbook.exercises._harvest  # noqa: F401 - loaded (with numpy and torch) before any cell or timer

        config = Config()
        config.HistoryManager.enabled = False
        self.shell = InteractiveShell.instance(config=config)
        self.channel, self.commands = channel, commands
        signal.signal(signal.SIGALRM, _alarm)

    def send(self, event: dict) -> None:
        self.channel.write(json.dumps(event) + "\n")
        self.channel.flush()

    def _timed(self, seconds: float, run):
        signal.setitimer(signal.ITIMER_REAL, max(0.01, seconds))
        try:
            return run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _filenames(self) -> set:
        return set(getattr(getattr(self.shell, "compile", None), "_filename_map", {}) or {})

    def cells(self, job: dict) -> list[dict]:
        """Run the cells in order; the codes of those that failed. Notes which compiled file names are which
        cell's (for :meth:`bound`)."""
        codes = []
        self.files: dict[str, int] = {}
        deadline = time.monotonic() + job["cells_timeout"]
        for i, source in enumerate(job["cells"]):
            left = min(job["cell_timeout"], deadline - time.monotonic())
            if left <= 0:
                codes.append({"cell": i, "code": "cells_time_limit"})
                break
            before = self._filenames()
            try:
                result = self._timed(left, lambda: self.shell.run_cell(source, store_history=False, silent=True))
            except _Timeout:
                codes.append({"cell": i, "code": "cell_timeout", "seconds": int(left)})
                continue
            finally:
                for name in self._filenames() - before:
                    self.files.setdefault(name, i)
            error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
            if isinstance(error, _Timeout):
                codes.append({"cell": i, "code": "cell_timeout", "seconds": int(left)})
            elif error is not None and not isinstance(error, NotImplementedError):
                codes.append({"cell": i, "code": "raised", "exception": type(error).__name__[:60]})
        return codes

    def bound(self, functions: list[str]) -> dict:
        """For each graded name bound after the cells: where the code object it runs was written (cell index,
        first line, code name). Follows ``functools.partial``, bound methods, ``__wrapped__`` and callable
        objects; nothing where the object gives no code."""
        out = {}
        for name in functions:
            try:
                obj = self.shell.user_ns.get(name)
                for _ in range(10):
                    if isinstance(obj, functools.partial):
                        obj = obj.func
                    elif inspect.ismethod(obj):
                        obj = obj.__func__
                    else:
                        break
                obj = inspect.unwrap(obj) if callable(obj) else obj
                code = getattr(obj, "__code__", None)
                if code is None and callable(obj):
                    code = getattr(getattr(type(obj), "__call__", None), "__code__", None)
                if code is None or not inspect.iscode(code):
                    continue
                out[name] = {"cell": self.files.get(code.co_filename), "line": int(code.co_firstlineno),
                             "name": str(code.co_name)[:100]}
            except Exception:  # noqa: BLE001 - whatever the object does, the report is only a signal
                continue
        return out

    def stage(self, items: list[dict]) -> None:
        harvest = sys.modules["ncbook.exercises._harvest"]  # the module as loaded before the cells ran
        Outcome, collect, pack_outcomes, unpack_cases = (harvest.Outcome, harvest.collect, harvest.pack_outcomes,
                                                         harvest.unpack_cases)
        for item in items:
            event = {"event": "outcomes", "index": item["index"]}
            try:
                cases = unpack_cases(base64.b64decode(item["cases"]))
                student = self.shell.user_ns.get(item["function"])
                forbid = [f for f in (_resolve(name) for name in item.get("forbid", [])) if callable(f)]
                if student is None:
                    outcomes = [Outcome(error="missing", detail=f"no function named {item['function']} was "
                                                                "defined.")] * len(cases)
                else:
                    outcomes = self._timed(item["timeout"], lambda: collect(student, cases, forbid))
                outcomes = [Outcome(value=o.value, error=o.error, detail=_code(o)) for o in outcomes]
                event["npz"] = base64.b64encode(pack_outcomes(outcomes)).decode()
            except _Timeout:
                event["error"] = "timeout"
            except Exception as exc:  # noqa: BLE001 - e.g. the packing failed on what the function returned
                event["error"], event["exception"] = "no_results", type(exc).__name__[:60]
            self.send(event)
        self.send({"event": "stage-done"})


def _code(outcome) -> str:
    """The code an outcome keeps: the exception's class name for the kind "exception", else nothing."""
    if outcome.error != "exception":
        return ""
    m = _RAISED.match(outcome.detail or "")
    return m.group(1) if m else ""


def main() -> int:
    channel = os.fdopen(os.dup(1), "w")
    commands = os.fdopen(os.dup(0), "r")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    job = json.loads(commands.readline())
    _limits(job)
    judge = Judge(channel, commands)
    codes = judge.cells(job)[:50]
    judge.send({"event": "ready", "codes": codes, "bound": judge.bound(list(job.get("functions", [])))})
    for line in commands:
        request = json.loads(line)
        if request.get("stage") not in ("public", "hidden"):
            break
        judge.stage(request["items"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
