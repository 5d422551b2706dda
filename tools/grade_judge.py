#!/usr/bin/env python3
"""Apply a submission's functions to cases inside its *judge* sandbox; hand back numbers only.

``tools/assignments.py grade`` starts this file as the only process of a fresh bubblewrap sandbox whose
``ncbook`` is the *student edition* of the package (``tools/grading/edition.py``): the reference
implementations of the graded exercises, their helpers, the checks and their sources are absent there;
only ``ncbook.exercises._harvest`` (calling a function on cases, packing the returned numbers) is present.
The submission's code runs in this very process (an IPython shell, no kernel): whatever it rewrites here,
the only numbers it can send back are numbers it computed itself. This file is never imported by the grader.

The protocol (JSON lines on stdin and stdout):

1. in: ``{"cells": [source, ...], "cell_timeout": s, "cells_timeout": s, ...}``: the submission's code
   cells that its graded functions need (nothing else of the notebook); they run in order.
   out: ``{"event": "ready", "problems": [...]}`` (which cells raised, by exception name).
2. in: ``{"stage": "public", "items": [...]}``; out: one ``{"event": "outcomes", "index": i, "npz": ...}``
   (or ``"error": "timeout"``) per item, then ``{"event": "stage-done"}``. An item names the exercise, the
   function, the functions outside the package its exercise forbids (watched, a signal only), the cases
   (an ``.npz``, base64) and a time limit.
3. in: ``{"stage": "hidden", "items": [...]}``: the hidden cases, sent by the grader only after it has read
   every public outcome; out: as in 2 (the grader keeps no text of this stage, numbers and error kinds only).
4. in: ``{"stage": "end"}`` or end of input: the process exits.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import resource
import signal
import sys
import time


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

    def cells(self, job: dict) -> list[str]:
        problems = []
        deadline = time.monotonic() + job["cells_timeout"]
        for i, source in enumerate(job["cells"]):
            left = min(job["cell_timeout"], deadline - time.monotonic())
            if left <= 0:
                problems.append(f"the time limit for the cells ({job['cells_timeout']} s) was reached")
                break
            try:
                result = self._timed(left, lambda: self.shell.run_cell(source, store_history=False, silent=True))
            except _Timeout:
                problems.append(f"a needed cell stopped at its time limit ({int(left)} s)")
                continue
            error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
            if isinstance(error, _Timeout):
                problems.append(f"a needed cell stopped at its time limit ({int(left)} s)")
            elif error is not None and not isinstance(error, NotImplementedError):
                problems.append(f"a needed cell raised {type(error).__name__[:60]}")
        return problems

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
                event["npz"] = base64.b64encode(pack_outcomes(outcomes)).decode()
            except _Timeout:
                event["error"] = "timeout"
            except Exception as exc:  # noqa: BLE001 - e.g. the packing failed on what the function returned
                event["error"] = f"no results ({type(exc).__name__[:60]})"
            self.send(event)
        self.send({"event": "stage-done"})


def main() -> int:
    channel = os.fdopen(os.dup(1), "w")
    commands = os.fdopen(os.dup(0), "r")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    job = json.loads(commands.readline())
    _limits(job)
    judge = Judge(channel, commands)
    judge.send({"event": "ready", "problems": judge.cells(job)[:20]})
    for line in commands:
        request = json.loads(line)
        if request.get("stage") not in ("public", "hidden"):
            break
        judge.stage(request["items"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
