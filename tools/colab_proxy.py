#!/usr/bin/env python3
"""Colab proxy test: run a committed chapter notebook against an installed wheel of ncbook only.

A chapter that works from the source tree may still fail on Colab: a module missing from the
wheel, a dependency missing from ``pyproject.toml``, a file read relative to the checkout, an
import that only the book build provides. This script reproduces Colab's situation:

1. build a wheel of ncbook (``pip wheel --no-deps``);
2. create a fresh virtual environment in a temporary folder, without system site packages, and
   install the wheel with its own (loose) dependencies plus the notebook runner (nbclient,
   ipykernel, jupytext, pyyaml); then uninstall ncbook itself again, so that the chapter's first
   cell has to install it, as on Colab;
3. copy the committed ``.ipynb`` (only that file) into the temporary folder, point its install
   cell at the wheel (environment variable ``NCBOOK_PIP_TARGET``, and the git URL in the cell
   replaced by the wheel's path in cells that do not read the variable), and execute it top to
   bottom with ``NCBOOK_PROFILE=quick`` from there, so ``import ncbook`` cannot reach the checkout;
4. check, in a last cell, that ``ncbook`` was imported from the virtual environment.

With ``--students`` it runs every student notebook (``student/*.ipynb``, all stubs untouched) in
one such environment and also checks, for each, that the run reached the last cell and that every
exercise check (cells with metadata ``ncbook.role == "check"``) reported "not implemented yet".

Usage::

    python3 tools/colab_proxy.py                         # book/nc_primer.ipynb
    python3 tools/colab_proxy.py book/seli.ipynb --keep  # keep the temporary folder
    python3 tools/colab_proxy.py --students              # every student notebook, stubs untouched
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIT_TARGET = "ncbook @ git+https://github.com/ncbook/ncbook"
RUNNER_DEPS = ["nbclient", "ipykernel", "jupytext", "pyyaml"]
KERNEL = "ncbook-colab-proxy"

VERIFY_CELL = """\
import sys, ncbook
assert ncbook.__file__.startswith(sys.prefix), f"ncbook came from {ncbook.__file__}, not the virtual environment {sys.prefix}"
print("ncbook imported from", ncbook.__file__)
"""

EXECUTE = """\
import json, sys, nbclient, nbformat
path, kernel, out = sys.argv[1:4]
nb = nbformat.read(path, as_version=4)
client = nbclient.NotebookClient(nb, timeout=1800, kernel_name=kernel, resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}})
try:
    client.execute()
finally:
    nbformat.write(nb, out)
"""


def _run(cmd: list[str], **kw) -> None:
    """Run ``cmd``; its output is shown only when it fails (pip is chatty)."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        print(result.stdout[-5000:], result.stderr[-5000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"colab proxy: step failed (exit {result.returncode}): {' '.join(map(str, cmd))}")


def _clean_env(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv), PYTHONNOUSERSITE="1",
               NCBOOK_PROFILE="quick", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def point_install_cell_at(nb: dict, wheel: Path) -> int:
    """Replace the git install target by the wheel's path in code cells that do not read
    ``NCBOOK_PIP_TARGET``; return the number of cells rewritten."""
    count = 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if GIT_TARGET in source and "NCBOOK_PIP_TARGET" not in source:
            cell["source"] = source.replace(GIT_TARGET, str(wheel))
            count += 1
    return count


NOT_IMPLEMENTED = "not implemented yet"


def _output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        for key in ("text/plain", "text/markdown"):
            if key in out.get("data", {}):
                parts.append("".join(out["data"][key]))
    return "\n".join(parts)


def student_report(executed: dict) -> list[str]:
    """Problems of an executed student notebook: a cell that did not run, an error output, or a
    check that did not report "not implemented yet". Empty when all is well."""
    problems = []
    code = [c for c in executed["cells"] if c["cell_type"] == "code"]
    if not code or code[-1].get("execution_count") is None:
        problems.append("the run did not reach the last cell")
    for cell in code:
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            problems.append(f"cell {cell.get('id')} raised an error")
        meta = cell.get("metadata", {}).get("ncbook", {})
        if meta.get("role") == "check" and NOT_IMPLEMENTED not in _output_text(cell):
            problems.append(f"the check of {meta.get('exercise')} did not report {NOT_IMPLEMENTED!r}: "
                            f"{_output_text(cell)[:200]!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, default=[ROOT / "book" / "nc_primer.ipynb"])
    parser.add_argument("--students", action="store_true", help="run every student/*.ipynb (stubs untouched)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = parser.parse_args(argv)
    notebooks = sorted((ROOT / "student").glob("*.ipynb")) if args.students else [p.resolve() for p in args.notebooks]
    start = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="ncbook-colab-proxy-"))
    try:
        wheels, venv, work = tmp / "wheel", tmp / "venv", tmp / "work"
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)])
        wheel = next(wheels.glob("ncbook-*.whl"))
        _run([sys.executable, "-m", "venv", str(venv)])           # no system site packages
        env = _clean_env(venv)
        py = str(venv / "bin" / "python")
        _run([py, "-m", "pip", "install", "-q", str(wheel), *RUNNER_DEPS], env=env, cwd=tmp)
        _run([py, "-m", "pip", "uninstall", "-q", "-y", "ncbook"], env=env, cwd=tmp)   # the install cell's job
        _run([py, "-m", "ipykernel", "install", "--prefix", str(venv), "--name", KERNEL], env=env, cwd=tmp)
        print(f"environment ready: {time.time() - start:.0f} s", flush=True)

        env["NCBOOK_PIP_TARGET"] = str(wheel)
        (tmp / "execute.py").write_text(EXECUTE)
        failed = []
        for notebook in notebooks:
            nb = json.loads(notebook.read_text())
            rewritten = point_install_cell_at(nb, wheel)
            nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "colab-proxy-verify",
                                "metadata": {}, "outputs": [], "source": VERIFY_CELL})
            folder = work / notebook.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            src = folder / notebook.name
            src.write_text(json.dumps(nb))
            executed_path = folder / f"{notebook.stem}.executed.ipynb"
            print(f"{notebook.name}: install target -> {wheel.name} ({rewritten} cell(s) rewritten)", flush=True)
            run_start = time.time()
            result = subprocess.run([py, str(tmp / "execute.py"), str(src), KERNEL, str(executed_path)],
                                    env=env, cwd=folder)
            problems = [] if result.returncode == 0 else ["the notebook client stopped on an error"]
            if args.students and executed_path.exists():
                problems += student_report(json.loads(executed_path.read_text()))
            checks = sum(1 for c in nb["cells"] if c.get("metadata", {}).get("ncbook", {}).get("role") == "check")
            print(f"executed {notebook.parent.name}/{notebook.name}: {time.time() - run_start:.0f} s"
                  + (f", {checks} checks" if args.students else ""), flush=True)
            for problem in problems:
                print(f"  FAILED: {problem}", file=sys.stderr)
            if problems:
                failed.append(notebook.name)
        print(f"total {time.time() - start:.0f} s", flush=True)
        if failed:
            print(f"colab proxy FAILED: {', '.join(failed)} (executed copies kept under {work})", file=sys.stderr)
            args.keep = True
            return 1
        print(f"colab proxy passed: {len(notebooks)} notebook(s) ran top to bottom against the wheel {wheel.name}")
        return 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
