#!/usr/bin/env python3
"""Run one submitted notebook inside the grading sandbox; hand back data only.

``tools/assignments.py grade`` starts this file as the only process of a fresh sandbox (bubblewrap
``--as-pid-1``: it is PID 1 there, and every process the notebook starts ends with it). It is never
imported by the grader. The protocol:

* stdin (read whole, then closed): one JSON job: the notebook (code and Markdown cells), its file
  name, the time limits, the memory limit and, per autograded question, the exercise name, the
  student's function name, the stage (``public`` or ``hidden``) and the cases (an ``.npz`` of numbers,
  base64; no expected values). Every public stage comes before every hidden one.
* stdout: JSON lines. ``{"event": "notebook", ...}`` (the notebook as executed, sent *before* any
  hidden case is written to disk), then one ``{"event": "outcomes", "index": i, "npz": ...}`` per
  question (what the student's function returned on each case: numbers, or an error kind), then
  ``{"event": "done", "problems": [...]}``.

The kernel gets /dev/null as stdin, stdout and stderr, and this process is not dumpable, so nothing
the notebook runs can read this process's memory or write into the channel to the grader. The
notebook's cells run first (each with a time limit, the whole notebook with another); then, in
the same kernel, :func:`ncbook.exercises._core.harvest` applies each named function to its cases
and writes the outcomes to a file that this process reads back and forwards.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import resource
import sys
import time

HARVEST_DIR = ".ncbook-harvest"
MAX_OUTPUT_TEXT = 20_000      # characters kept of one text output in the returned notebook
MAX_OUTCOMES_BYTES = 64 << 20


def _undumpable() -> None:
    """PR_SET_DUMPABLE 0: processes of the same user cannot ptrace this one or open its /proc files."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _limits(memory: int, file_size: int) -> None:
    # RLIMIT_DATA (heap and private mappings: arrays, tensors), not RLIMIT_AS: torch alone maps ~4 GiB of
    # address space that never becomes memory
    for limit, value in ((resource.RLIMIT_DATA, memory), (resource.RLIMIT_FSIZE, file_size),
                         (resource.RLIMIT_CORE, 0)):
        if value:
            try:
                resource.setrlimit(limit, (value, value))
            except (ValueError, OSError):
                pass


def _trim(nb) -> None:
    """Long text outputs cut, large images dropped: the notebook that goes back stays small."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if isinstance(out.get("text"), str) and len(out["text"]) > MAX_OUTPUT_TEXT:
                out["text"] = out["text"][:MAX_OUTPUT_TEXT] + "\n[... output cut by the grader ...]\n"
            data = out.get("data", {})
            for key in list(data):
                if len(str(data[key])) > 2_000_000:
                    data[key] = "[large output dropped by the grader]" if key.startswith("text") else ""
                    if not key.startswith("text"):
                        del data[key]


class Runner:
    def __init__(self, job: dict, channel):
        import nbformat
        from nbclient import NotebookClient

        self.job, self.channel = job, channel
        self.problems: list[str] = []
        self.nb = nbformat.from_dict(job["notebook"])
        nbformat.write(self.nb, job["filename"])  # a notebook may read its own file
        self.client = NotebookClient(
            self.nb, timeout=job["cell_timeout"], kernel_name="python3", allow_errors=True,
            interrupt_on_timeout=True, iopub_timeout=5, raise_on_iopub_timeout=False, startup_timeout=120,
            error_on_timeout={"ename": "CellTimeout", "evalue": "the cell ran past its time limit", "traceback": []},
            resources={"metadata": {"path": os.getcwd()}}, record_timing=False, shutdown_kernel="immediate")

    def send(self, event: dict) -> None:
        self.channel.write(json.dumps(event) + "\n")
        self.channel.flush()

    def _run(self, cell, index: int, timeout: float) -> str:
        """Execute one cell: "ok", "timeout", or "dead" (the kernel is gone)."""
        from nbclient.exceptions import DeadKernelError

        self.client.timeout = max(1, int(timeout))
        start = time.monotonic()
        try:
            self.client.execute_cell(cell, index)
        except DeadKernelError:
            return "dead"
        except Exception as exc:  # nbclient gave up on this cell (e.g. the kernel stopped answering)
            self.problems.append(f"cell {index}: {type(exc).__name__}")
            return "timeout" if time.monotonic() - start >= self.client.timeout else "dead"
        return "timeout" if time.monotonic() - start >= self.client.timeout else "ok"

    def _alive(self) -> bool:
        """After a timeout: does the kernel answer again within 15 s (did the interrupt work)?"""
        import nbformat

        probe = nbformat.v4.new_code_cell("pass")
        self.nb.cells.append(probe)
        state = self._run(probe, len(self.nb.cells) - 1, 15)
        self.nb.cells.pop()
        return state == "ok"

    def notebook(self, skip: set[int], deadline: float) -> tuple[str, int] | None:
        """Run every code cell but those in ``skip``: None, or ("stuck" | "died", index of the cell)."""
        job = self.job
        for index, cell in enumerate(self.nb.cells):
            if cell.cell_type != "code":
                continue
            if index in skip:
                cell.outputs, cell.execution_count = [], None
                continue
            left = deadline - time.monotonic()
            if left < 1:
                self.problems.append(f"notebook time limit ({job['notebook_timeout']} s) reached before cell {index}")
                return None
            state = self._run(cell, index, min(job["cell_timeout"], left))
            if state == "dead":
                self.problems.append(f"the kernel died in cell {index} (memory limit {job['memory'] >> 20} MiB, "
                                     "or a crash)")
                return "died", index
            if state == "timeout":
                limit = "cell" if job["cell_timeout"] <= left else "notebook"
                self.problems.append(f"cell {index} stopped at the {limit} time limit "
                                     f"({int(min(job['cell_timeout'], left))} s)")
                if not self._alive():
                    self.problems.append(f"the kernel did not stop after an interrupt in cell {index}")
                    return "stuck", index
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error" and out.get("ename") not in ("NotImplementedError", "CellTimeout",
                                                                                 "KeyboardInterrupt"):
                    self.problems.append(f"cell {index} raised {str(out.get('ename'))[:60]}")
        return None

    def harvest(self) -> None:
        import nbformat

        os.makedirs(HARVEST_DIR, exist_ok=True)
        for i, q in enumerate(self.job["harvest"]):
            inputs, outputs = f"{HARVEST_DIR}/{i}-in.npz", f"{HARVEST_DIR}/{i}-out.npz"
            with open(inputs, "wb") as f:
                f.write(base64.b64decode(q["cases"]))
            code = (f"__import__('ncbook.exercises._core', fromlist=['harvest']).harvest("
                    f"{q['exercise']!r}, globals().get({q['function']!r}), {inputs!r}, {outputs!r}, "
                    f"function={q['function']!r})")
            cell = nbformat.v4.new_code_cell(code)
            self.nb.cells.append(cell)
            state = self._run(cell, len(self.nb.cells) - 1, self.job["harvest_timeout"])
            event = {"event": "outcomes", "index": i}
            if state != "ok":
                event["error"] = "timeout" if state == "timeout" else "kernel died"
            elif not os.path.isfile(outputs) or os.path.getsize(outputs) > MAX_OUTCOMES_BYTES:
                errors = [o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                # a hidden stage sends no text the notebook chose (an exception's name could carry a hidden input)
                event["error"] = f"no results ({str(errors[0])[:60]})" if errors and q.get("stage") != "hidden" \
                    else "no results"
            else:
                with open(outputs, "rb") as f:
                    event["npz"] = base64.b64encode(f.read()).decode()
            self.send(event)
            if state == "dead" or (state == "timeout" and not self._alive()):
                for j in range(i + 1, len(self.job["harvest"])):
                    self.send({"event": "outcomes", "index": j, "error": "kernel stopped"})
                return


def main() -> int:
    _undumpable()
    job = json.loads(sys.stdin.buffer.read())
    channel = os.fdopen(os.dup(1), "w")  # a dup is not inherited by the kernel
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _limits(job["memory"], job.get("file_size", 1 << 30))
    started = time.monotonic()
    deadline = started + job["notebook_timeout"]
    runner = Runner(job, channel)
    skip: set[int] = set()
    try:
        for attempt in range(3):
            with runner.client.setup_kernel():
                lost = runner.notebook(skip, deadline)
                if lost is not None and attempt < 2 and deadline - time.monotonic() > 5:
                    # the kernel is gone or deaf: a fresh one runs the notebook again without that cell
                    runner.problems.append(f"ran the notebook again without cell {lost[1]}")
                    skip.add(lost[1])
                    continue
                alive = lost is None
                _trim(runner.nb)
                runner.send({"event": "notebook", "notebook": runner.nb})  # before any hidden case is on disk
                if alive:
                    runner.harvest()
                else:
                    for i in range(len(job["harvest"])):
                        runner.send({"event": "outcomes", "index": i, "error": "kernel stopped"})
            break
    except Exception as exc:  # the kernel would not start, or the client failed: say so, never hang
        runner.problems.append(f"the notebook could not run ({type(exc).__name__}: {str(exc)[:200]})")
    runner.send({"event": "done", "problems": list(dict.fromkeys(runner.problems)), "seconds": round(time.monotonic() - started, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
