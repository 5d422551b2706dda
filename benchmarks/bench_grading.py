"""How long a class takes to grade: 60 exercises-only notebooks, two at a time, the printed estimate beside it.

Builds a chapter's exercises-only assignment, writes a class of ``--notebooks`` submissions (a realistic mix:
correct solutions written by different students, untouched stubs, planted mistakes, cheats, each with its own
``STUDENT``), and grades the folder with the same command an instructor runs (``tools/assignments.py grade``:
calibration on the solutions first, then every notebook in its run and judge sandboxes). Prints the
calibration, the estimate ``grade`` printed before the batch, the measured wall time and their ratio (target:
within a factor of 2 on an idle machine), seconds per notebook, and the machine (CPU, cores, load before and
after). Timings on a shared machine are noisy: quote the ratio and the load.

    python benchmarks/bench_grading.py                      # 60 notebooks of seli, 2 jobs
    python benchmarks/bench_grading.py --chapter nc_primer --notebooks 12
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _tool():
    spec = importlib.util.spec_from_file_location("assignments_tool", ROOT / "tools" / "assignments.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["assignments_tool"] = module
    spec.loader.exec_module(module)
    return module


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def a_class(build: Path, chapter: str, count: int) -> dict[str, nbformat.NotebookNode]:
    """``count`` submissions: mostly solved, some blank, some with a mistake, some cheating, each named."""
    import grading_cheats as cheats
    from test_assignments import ALTERNATIVE, PLANTED

    tool = sys.modules["assignments_tool"]
    _, questions = tool.load_assignment(build)
    parts = [p for q in questions for p in q.auto]
    solutions = nbformat.read(build / "solutions" / f"{chapter}.ipynb", as_version=4)
    untouched = nbformat.read(build / "student" / f"{chapter}.ipynb", as_version=4)
    planted = cheats.copy_nb(solutions)
    _, old, new = PLANTED.get(chapter, (None, "\0", "\0"))
    for cell in planted.cells:
        if old in cell.source:
            cell.source = cell.source.replace(old, new)
    kinds = [solutions, cheats.replace_functions(solutions, ALTERNATIVE.get(chapter, {})), solutions, planted,
             untouched, cheats.cheat_hook(untouched, parts, cheats.HOOK_PYTHON), solutions,
             cheats.cheat_thread(untouched, parts), cheats.replace_functions(solutions, ALTERNATIVE.get(chapter, {})),
             solutions]
    out = {}
    for i in range(count):
        nb = cheats.copy_nb(kinds[i % len(kinds)])
        cell = next(c for c in nb.cells if cheats.meta(c).get("role") == "identity")
        cell.source = f'STUDENT = "student {i:03d}"'
        out[f"student_{i:03d}"] = nb
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", default="seli")
    parser.add_argument("--notebooks", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    tool = _tool()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
        tmp = Path(tmp)
        t0 = time.monotonic()
        build = tool.build(args.chapter, tmp / "build", exercises_only=True, log=lambda *_: None)
        built = time.monotonic() - t0
        subs = tmp / "submissions"
        subs.mkdir()
        for name, nb in a_class(build, args.chapter, args.notebooks).items():
            nbformat.write(nb, subs / f"{name}.ipynb")
        secret = tool.read_secret(tool.write_secret(tmp / "secret" / "secret.txt"))
        log: list[str] = []
        t0 = time.monotonic()
        rows = tool.grade(args.chapter, subs, tmp / "results", secret=secret, build_dir=build, jobs=args.jobs,
                          log=log.append)
        seconds = time.monotonic() - t0
    line = next(x for x in log if "at a time" in x)
    estimate = int(re.search(r"about (\d+) s expected", line).group(1))
    bound = int(re.search(r"at most (\d+) s", line).group(1))
    calibration = next(x for x in log if x.startswith("calibration:"))
    print(f"machine: {cpu_name()}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable); load "
          f"{load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"build ({args.chapter}, exercises-only, editions and their check): {built:.0f} s")
    print(calibration)
    print(f"{len(rows)} notebooks, {args.jobs} at a time: estimate printed {estimate} s (bound {bound} s), "
          f"measured {seconds:.0f} s (calibration included), ratio measured/estimate {seconds / max(estimate, 1):.2f}; "
          f"{seconds / len(rows):.1f} s a notebook")


if __name__ == "__main__":
    main()
