"""Per-chapter execution time in the quick profile, and the whole-book build time.

Targets (issue: foundation): each chapter about a minute on 2 CPU cores, the whole book
under 10 minutes. Prints seconds and the ratio to each target; asserts nothing.

    python benchmarks/bench_book.py            # chapters one by one
    python benchmarks/bench_book.py --build    # also time `jupyter-book build .`
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

import jupytext
import nbclient
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_TARGET_S = 60.0
BOOK_TARGET_S = 600.0


def chapters() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [ROOT / f"{f}.md" for f in files if "jupytext" in (ROOT / f"{f}.md").read_text()]


def time_chapter(path: Path) -> float:
    nb = jupytext.read(path)
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=3600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", action="store_true", help="also time the whole book build")
    args = parser.parse_args()
    os.environ["NCBOOK_PROFILE"] = "quick"
    print(f"cores: {os.cpu_count()}")
    total = 0.0
    for path in chapters():
        seconds = time_chapter(path)
        total += seconds
        print(f"{path.stem:28s} {seconds:7.1f} s   ratio to the {CHAPTER_TARGET_S:.0f} s target: {seconds / CHAPTER_TARGET_S:.2f}")
    print(f"{'all chapters':28s} {total:7.1f} s   ratio to the {BOOK_TARGET_S:.0f} s book target: {total / BOOK_TARGET_S:.2f}")
    if args.build:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([shutil.which("jupyter-book") or "jupyter-book", "build", str(ROOT), "-W", "--keep-going"], check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        print(f"{'jupyter-book build':28s} {seconds:7.1f} s   ratio to the {BOOK_TARGET_S:.0f} s target: {seconds / BOOK_TARGET_S:.2f}")


if __name__ == "__main__":
    main()
