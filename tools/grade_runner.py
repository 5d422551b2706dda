#!/usr/bin/env python3
"""Run one submitted notebook inside its *run* sandbox; hand back the executed notebook and nothing else.

``tools/assignments.py grade`` starts this file as the only process of a fresh sandbox (bubblewrap
``--as-pid-1``: it is PID 1 there, and every process the notebook starts ends with it), with the full
``ncbook`` package. Nothing is scored from this run: it gives the instructor the notebook as it ran (its
outputs, its public checks). The scores come from the *judge* sandbox (``tools/grade_judge.py``), a fresh
one with the student edition of the package, where the answers are absent. This file is never imported by
the grader. The protocol:

* stdin (read whole, then closed): one JSON job: the notebook (code, Markdown and raw cells), its file
  name, the time limits, the memory limit (used only where the grader has no cgroup), the size the
  executed notebook may have.
* stdout: JSON lines: ``{"event": "notebook", "notebook": ...}`` (the notebook as executed, its outputs cut
  to fit), then ``{"event": "done", "codes": [...], "seconds": s}``: what went wrong, as codes only (a cell
  index, a code such as ``raised``/``cell_timeout``/``kernel_died``, an exception's class name, a number of
  seconds); the grader writes every sentence, and keeps an exception name only when it is in its fixed list
  (a notebook chooses its exceptions' names: ``type("award full marks", (Exception,), {})``).

The kernel gets /dev/null as stdin, stdout and stderr, and this process is not dumpable, so nothing the
notebook runs can read this process's memory or write into the channel to the grader. Cells run one by
one, each with a time limit and the whole notebook with another; a kernel that dies or ignores an
interrupt is replaced and the notebook runs again without that cell.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time

MAX_OUTPUT_TEXT = 20_000      # characters kept of one text output in the returned notebook
MAX_OUTPUT_DATA = 1_000_000   # characters kept of one rich output (an image)


def _undumpable() -> None:
    """PR_SET_DUMPABLE 0: processes of the same user cannot ptrace this one or open its /proc files."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _limits(memory: int, file_size: int, processes: int, rlimits: bool) -> None:
    """RLIMIT_FSIZE and no core files always; RLIMIT_DATA (heap and private mappings: arrays, tensors; not
    RLIMIT_AS: torch alone maps ~4 GiB of address space that never becomes memory) and RLIMIT_NPROC only
    where the grader could make no cgroup (``rlimits``): a weaker, per-process fallback."""
    wanted = [(resource.RLIMIT_FSIZE, file_size), (resource.RLIMIT_CORE, 0)]
    if rlimits:
        wanted += [(resource.RLIMIT_DATA, memory), (resource.RLIMIT_NPROC, processes)]
    for limit, value in wanted:
        if value is not None:
            try:
                resource.setrlimit(limit, (value, value))
            except (ValueError, OSError):
                pass


def _size(obj) -> int:
    return len(json.dumps(obj))


def _trim(nb, budget: int) -> list[dict]:
    """Long text outputs cut, large rich outputs dropped, then whole cells' outputs dropped (the largest first)
    until the notebook's JSON fits in ``budget`` bytes: what goes back stays small whatever the notebook printed."""
    notes = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if isinstance(out.get("text"), str) and len(out["text"]) > MAX_OUTPUT_TEXT:
                out["text"] = out["text"][:MAX_OUTPUT_TEXT] + "\n[... output cut by the grader ...]\n"
            data = out.get("data", {})
            for key in list(data):
                if len(str(data[key])) > MAX_OUTPUT_DATA:
                    del data[key]
                    data.setdefault("text/plain", "[large output dropped by the grader]")
    total = _size(nb)
    if total > budget:
        sizes = sorted(((_size(c.get("outputs", [])), i) for i, c in enumerate(nb.cells) if c.get("outputs")),
                       reverse=True)
        for size, i in sizes:
            if total <= budget:
                break
            nb.cells[i].outputs = [{"output_type": "stream", "name": "stdout",
                                    "text": "[outputs dropped by the grader: the executed notebook is kept under "
                                            f"{budget >> 20} MiB]\n"}]
            total -= size
            notes.append({"cell": i, "code": "outputs_dropped"})
    return notes[:3]


class Runner:
    def __init__(self, job: dict, channel):
        import nbformat
        from nbclient import NotebookClient

        self.job, self.channel = job, channel
        self.problems: list[dict] = []
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
            self.problems.append({"cell": index, "code": "client_error", "exception": type(exc).__name__[:60]})
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
                self.problems.append({"cell": index, "code": "notebook_time_limit"})
                return None
            state = self._run(cell, index, min(job["cell_timeout"], left))
            if state == "dead":
                self.problems.append({"cell": index, "code": "kernel_died"})
                return "died", index
            if state == "timeout":
                limit = "cell_timeout" if job["cell_timeout"] <= left else "notebook_timeout"
                self.problems.append({"cell": index, "code": limit, "seconds": int(min(job["cell_timeout"], left))})
                if not self._alive():
                    self.problems.append({"cell": index, "code": "kernel_stuck"})
                    return "stuck", index
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error" and out.get("ename") not in ("NotImplementedError", "CellTimeout",
                                                                                 "KeyboardInterrupt"):
                    self.problems.append({"cell": index, "code": "raised", "exception": str(out.get("ename"))[:60]})
        return None


def main() -> int:
    _undumpable()
    job = json.loads(sys.stdin.buffer.read())
    channel = os.fdopen(os.dup(1), "w")  # a dup is not inherited by the kernel
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    _limits(job["memory"], job.get("file_size", 1 << 30), job.get("processes", 512), job.get("rlimits", False))
    started = time.monotonic()
    deadline = started + job["notebook_timeout"]
    runner = Runner(job, channel)
    skip: set[int] = set()
    sent = False
    try:
        for attempt in range(3):
            with runner.client.setup_kernel():
                lost = runner.notebook(skip, deadline)
                if lost is not None and attempt < 2 and deadline - time.monotonic() > 5:
                    # the kernel is gone or deaf: a fresh one runs the notebook again without that cell
                    runner.problems.append({"cell": lost[1], "code": "rerun_without"})
                    skip.add(lost[1])
                    continue
            break
    except Exception as exc:  # the kernel would not start, or the client failed: say so, never hang
        runner.problems.append({"code": "could_not_run", "exception": type(exc).__name__[:60]})
    finally:
        runner.problems += _trim(runner.nb, job.get("notebook_bytes", 8 << 20))
        runner.send({"event": "notebook", "notebook": runner.nb})
        sent = True
    unique = list({json.dumps(p, sort_keys=True): p for p in runner.problems}.values())
    runner.send({"event": "done", "codes": unique[:50], "seconds": round(time.monotonic() - started, 1),
                 "sent": sent})
    return 0


if __name__ == "__main__":
    sys.exit(main())
