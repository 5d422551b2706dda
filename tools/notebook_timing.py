#!/usr/bin/env python3
"""Run a chapter's reader notebook with per-cell timing and list the long cells that show no progress.

A reader who runs a chapter's Colab notebook should never wait more than about ten seconds on a cell
that prints nothing: long calls (``ncbook.experiments``, ``train.fit``, ``run_parallel``) show a
``tqdm`` bar unless progress is turned off (``tools/check_chapters.py`` flags that statically). This
tool measures it: it generates the chapter's Colab notebook (``tools/student_notebooks.py``), runs it
in a kernel with progress bars on (``NCBOOK_PROGRESS=1``), reads each cell's time from the kernel's own
timestamps (nbclient's ``record_timing``) and whether its outputs hold a progress bar (a ``tqdm``
widget, or a text bar such as ``50%|#####     | 5/10 [00:01<00:01, 4.9it/s]``), and lists the cells
that ran longer than the threshold without one.

Usage::

    python3 tools/notebook_timing.py nc_primer                 # one chapter (a stem of _toc.yml)
    python3 tools/notebook_timing.py book/seli.md --threshold 10 --json seli-timing.json
    python3 tools/notebook_timing.py some/notebook.ipynb       # any notebook, as it is

Exit status: 0 when every cell over the threshold shows progress, 1 when some do not, 2 when a cell
fails (the timings up to it are printed). Timings depend on the machine and its load: quote the CPU
(printed) and run it on an otherwise idle machine when the numbers matter.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD_S = 10.0
WIDGET = "application/vnd.jupyter.widget-view+json"
# a tqdm text bar: "42%|####      | 42/100 [00:03<00:04, 12.3it/s]" (or s/it)
_TEXT_BAR = re.compile(r"\d+%\|.*\|\s*\d+/\d+|\d+(?:\.\d+)?\s*(?:it/s|s/it)\]")


@dataclass
class CellTiming:
    """One code cell's run: its position among the code cells, seconds, whether it showed progress."""

    index: int
    cell_id: str
    seconds: float
    progress: bool
    hidden: bool
    first_line: str


def _generator():
    module = sys.modules.get("student_notebooks")
    if module is None:
        spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "tools" / "student_notebooks.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["student_notebooks"] = module
        spec.loader.exec_module(module)
    return module


def reader_notebook(target: str) -> tuple[nbformat.NotebookNode, Path]:
    """The notebook to time and the folder to run it in: a chapter's Colab notebook (by stem or ``.md``,
    run from ``book/`` as the book runs it) or a given ``.ipynb`` (run from its own folder)."""
    path = Path(target)
    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4), path.resolve().parent
    md = path if path.suffix == ".md" else ROOT / "book" / f"{target}.md"
    if not md.exists():
        stems = [p.stem for p in _generator().toc_chapters(ROOT)]
        raise SystemExit(f"no chapter {target!r}: give a stem of _toc.yml ({', '.join(stems)}), a .md or an .ipynb")
    return _generator().colab_notebook(md.resolve(), ROOT), md.resolve().parent


def shows_progress(outputs: list) -> bool:
    """Whether a cell's outputs hold a progress bar (a tqdm widget, or a tqdm text bar).

    Examples
    --------
    >>> shows_progress([{"output_type": "stream", "name": "stderr", "text": " 40%|####  | 4/10 [00:01<00:02, 3.1it/s]"}])
    True
    >>> shows_progress([{"output_type": "stream", "name": "stdout", "text": "accuracy 0.91"}])
    False
    """
    for out in outputs:
        data = out.get("data", {})
        if WIDGET in data:
            return True
        text = out.get("text", "") or data.get("text/plain", "")
        if isinstance(text, list):
            text = "".join(text)
        if _TEXT_BAR.search(text):
            return True
    return False


def _seconds(cell) -> float | None:
    stamps = cell.get("metadata", {}).get("execution", {})
    start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
    if not (start and end):
        return None
    return (datetime.fromisoformat(end.replace("Z", "+00:00"))
            - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()


def timings(nb: nbformat.NotebookNode) -> list[CellTiming]:
    """The :class:`CellTiming` of every code cell of an executed notebook that has the kernel's timestamps."""
    out, k = [], 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        seconds = _seconds(cell)
        if seconds is not None:
            meta = cell.get("metadata", {})
            hidden = meta.get("cellView") == "form" or meta.get("jupyter", {}).get("source_hidden", False)
            first = next((line for line in cell.source.split("\n") if line.strip()), "")
            out.append(CellTiming(k, cell.get("id", f"cell-{k}"), seconds, shows_progress(cell.get("outputs", [])),
                                  bool(hidden), first[:70]))
        k += 1
    return out


def execute(nb: nbformat.NotebookNode, folder: Path, *, timeout: int, env: dict) -> Exception | None:
    """Run ``nb`` in place in ``folder`` with ``env`` for the kernel; the error of a failing cell, if any."""
    import nbclient

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)           # the kernel inherits the environment
    try:
        nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                                resources={"metadata": {"path": str(folder)}}).execute()
    except Exception as err:         # noqa: BLE001 - a failing cell: report what ran before it
        return err
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return None


def silent_long_cells(rows: list[CellTiming], threshold: float = THRESHOLD_S) -> list[CellTiming]:
    """The cells that ran longer than ``threshold`` seconds without a progress bar."""
    return [r for r in rows if r.seconds > threshold and not r.progress]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="a chapter stem of _toc.yml, a chapter .md, or an .ipynb")
    parser.add_argument("--threshold", type=float, default=THRESHOLD_S, help="seconds (default 10)")
    parser.add_argument("--profile", default="quick", help="NCBOOK_PROFILE for the run (default quick)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may run (default 900)")
    parser.add_argument("--json", type=Path, help="also write the timings here")
    args = parser.parse_args(argv)
    nb, folder = reader_notebook(args.target)
    env = {"NCBOOK_PROFILE": args.profile, "NCBOOK_PROGRESS": "1"}
    with tempfile.TemporaryDirectory() as scratch:
        if not os.environ.get("NCBOOK_RESULTS"):
            env["NCBOOK_RESULTS"] = scratch                  # the run's records stay out of the checkout
        error = execute(nb, folder, timeout=args.timeout, env=env)
    rows = timings(nb)
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().split("\n")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    total = sum(r.seconds for r in rows)
    print(f"{args.target}: {len(rows)} code cells ran in {total:.1f} s ({cpu}, {os.cpu_count()} cores, "
          f"load {load:.1f} at the end, profile {args.profile})")
    for r in rows:
        if r.seconds >= 1.0:
            flag = "  <- no progress" if r.seconds > args.threshold and not r.progress else ""
            print(f"  cell {r.index:3d} {r.seconds:7.1f} s  {'bar' if r.progress else '   '}  "
                  f"{'[hidden] ' if r.hidden else ''}{r.first_line}{flag}")
    silent = silent_long_cells(rows, args.threshold)
    print(f"{len(silent)} cell(s) over {args.threshold:g} s without progress")
    if args.json:
        args.json.write_text(json.dumps({"target": args.target, "cpu": cpu, "load": load, "profile": args.profile,
                                         "cells": [asdict(r) for r in rows]}, indent=1) + "\n")
    if error is not None:
        print(f"a cell failed: {type(error).__name__}: {str(error).strip().splitlines()[-1][:200]}", file=sys.stderr)
        return 2
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
