"""Prose-only rebuild of the book against the 30 s target (execution cache on).

Run:  python benchmarks/bench_rebuild.py [--chapter mr2_margins] [--warm]

1. ``--warm``: first build the book (``jupyter-book build .``) so that ``_build/`` and the execution
   cache hold every chapter (minutes when the cache is cold; seconds when it is warm).
2. Append a paragraph at the end of the chapter (a prose-only edit), rebuild, and time it.
3. Put the chapter back as it was and rebuild again (also timed).

Prints both rebuild times as a ratio of 30 s and which pages were executed (expected: only the
reproduction page, which is executed on every rebuild; the edited chapter comes from the cache).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 30.0


def build() -> tuple[float, list[str], list[str]]:
    """Run ``jupyter-book build .``; return seconds, executed pages and pages served from the cache."""
    start = time.perf_counter()
    out = subprocess.run(["jupyter-book", "build", ".", "--keep-going"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    log = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    if out.returncode != 0:
        sys.exit(f"the build failed (exit {out.returncode}):\n{log[-3000:]}")
    executed = sorted(set(re.findall(r"book/(\w+)(?:\.md)?: (?:Executed notebook|executed side by side)", log)))
    cached = sorted(set(re.findall(r"book/(\w+)\.md: Using cached notebook", log)))
    return seconds, executed, cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapter", default="mr2_margins", help="stem of the chapter to edit (book/<stem>.md)")
    parser.add_argument("--warm", action="store_true", help="build once first (fills _build and the cache)")
    args = parser.parse_args()

    path = ROOT / "book" / f"{args.chapter}.md"
    original = path.read_text()
    if args.warm:
        seconds, executed, _ = build()
        print(f"warm-up build: {seconds:.1f} s, executed {len(executed)} pages: {', '.join(executed) or '-'}")
    try:
        path.write_text(original.rstrip("\n") + "\n\nA paragraph added to time a prose-only rebuild.\n")
        edit = build()
    finally:
        path.write_text(original)
    back = build()
    for label, (seconds, executed, cached) in (("prose-only edit", edit), ("edit undone", back)):
        print(f"{label} of book/{args.chapter}.md: rebuilt in {seconds:.1f} s = {seconds / TARGET:.2f} x the "
              f"{TARGET:.0f} s target; executed: {', '.join(executed) or '-'}; from the cache: {', '.join(cached) or '-'}")


if __name__ == "__main__":
    main()
