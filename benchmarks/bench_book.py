"""Where the quick book's time goes: per chapter, per cell, kernel start-up, imports; and the clean build.

Target (issue: speed): a whole clean build, every chapter executed, in at most 180 s on 2 CPU cores.
Prints seconds and ratios; asserts nothing (timings on a shared machine are noisy: compare
ratios measured in the same run).

    python benchmarks/bench_book.py                      # every chapter, its slowest cells
    python benchmarks/bench_book.py --chapters mr2_margins seli --top 8
    python benchmarks/bench_book.py --imports            # import time of torch, cvxpy, matplotlib, ncbook
    python benchmarks/bench_book.py --build              # also time a clean `jupyter-book build .`

Per-cell seconds come from the timestamps nbclient records in each cell's metadata
(``execute_input`` to ``execute_reply``); "start-up" is the time from creating the kernel
to its first cell.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import jupytext
import nbclient
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK_TARGET_S = 180.0


def chapters() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [ROOT / f"{f}.md" for f in files if "jupytext" in (ROOT / f"{f}.md").read_text()]


def _stamp(cell, key: str) -> float | None:
    value = cell.get("metadata", {}).get("execution", {}).get(key)
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def time_chapter(path: Path) -> dict:
    """Execute one chapter in a fresh kernel; wall seconds, start-up seconds and per-cell seconds."""
    nb = jupytext.read(path)
    start = time.time()
    client = nbclient.NotebookClient(nb, timeout=3600, kernel_name="python3", record_timing=True,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    wall = time.time() - start
    cells = []
    for i, cell in enumerate(nb.cells):
        begin, end = _stamp(cell, "iopub.execute_input"), _stamp(cell, "shell.execute_reply")
        if cell.cell_type == "code" and begin is not None and end is not None:
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            cells.append({"index": i, "seconds": end - begin, "begin": begin, "first_line": first[:70]})
    startup = (cells[0]["begin"] - start) if cells else float("nan")
    return {"chapter": path.stem, "wall": wall, "startup": startup, "cells": cells}


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapters", nargs="*", help="stems to execute (default: every chapter in _toc.yml)")
    parser.add_argument("--top", type=int, default=5, help="slowest cells to print per chapter")
    parser.add_argument("--imports", action="store_true", help="time `import torch`, cvxpy, matplotlib, ncbook")
    parser.add_argument("--build", action="store_true", help="also time a clean `jupyter-book build .`")
    parser.add_argument("--json", type=Path, help="write the per-cell timings here")
    parser.add_argument("--skip-chapters", action="store_true", help="only --imports / --build")
    args = parser.parse_args()
    os.environ["NCBOOK_PROFILE"] = "quick"
    print(f"cores: {os.cpu_count()}; timings on a shared machine are noisy, compare ratios")
    if args.imports:
        for module in ("torch", "cvxpy", "matplotlib.pyplot", "sklearn.datasets", "ncbook", "ncbook.plotting"):
            print(f"import {module:22s} {import_seconds(module):6.2f} s (fresh interpreter)")
    records = []
    if not args.skip_chapters:
        paths = chapters()
        if args.chapters:
            paths = [p for p in paths if p.stem in set(args.chapters)]
        total = 0.0
        for path in paths:
            rec = time_chapter(path)
            records.append(rec)
            total += rec["wall"]
            in_cells = sum(c["seconds"] for c in rec["cells"])
            print(f"{rec['chapter']:24s} {rec['wall']:7.1f} s  (kernel start-up {rec['startup']:4.1f} s, "
                  f"cells {in_cells:6.1f} s, {len(rec['cells'])} code cells)")
            for c in sorted(rec["cells"], key=lambda c: -c["seconds"])[:args.top]:
                print(f"    cell {c['index']:3d} {c['seconds']:7.2f} s   {c['first_line']}")
        print(f"{'all chapters':24s} {total:7.1f} s  ratio to the {BOOK_TARGET_S:.0f} s book target: "
              f"{total / BOOK_TARGET_S:.2f} (chapters one after another, without Sphinx)")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    if args.build:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
        with tempfile.TemporaryDirectory() as cache:  # an empty execution cache: every chapter executes
            start = time.perf_counter()
            build = subprocess.run([shutil.which("jupyter-book") or "jupyter-book", "build", str(ROOT), "-W", "--keep-going"],
                                   check=True, capture_output=True, text=True,
                                   env={**os.environ, "NCBOOK_EXECUTION_CACHE": cache})
            seconds = time.perf_counter() - start
        log = build.stdout + build.stderr
        # myst-nb logs "<doc>: Executed notebook in <s> seconds" for a chapter executed while it is read;
        # book/_ext/ncbook_cache.py "<doc>: executed side by side in <s> seconds" for one executed before the read
        for doc, how, sec in re.findall(r"([\w/.-]+): (Executed notebook|executed side by side) in ([\d.]+) seconds", log):
            where = "side by side" if how.startswith("executed") else "while read"
            print(f"    {Path(doc).stem:20s} {float(sec):7.1f} s executed {where}")
        for line in re.findall(r"ncbook_cache: \d+ chapters executed side by side \(\d+ failed\) in [\d.]+ s of wall time", log):
            print(f"    {line.removeprefix('ncbook_cache: ')}")
        print(f"{'clean jupyter-book build':24s} {seconds:7.1f} s  ratio to the {BOOK_TARGET_S:.0f} s target: "
              f"{seconds / BOOK_TARGET_S:.2f}")


if __name__ == "__main__":
    main()
