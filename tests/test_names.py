"""No module of the repository reads a name it never defines or imports.

Python finds an undefined name only when the line runs, so a merge that drops an import (or a rename that
misses one use) passes every test that does not reach that line. pyflakes reads every tracked Python file and
reports the names no scope defines; unused imports and other style findings are not checked here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pyflakes_api = pytest.importorskip("pyflakes.api")
from pyflakes import messages, reporter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(reporter.Reporter):
    def __init__(self):
        self.found: list[str] = []

    def flake(self, message):
        if isinstance(message, UNDEFINED):
            self.found.append(f"{message.filename}:{message.lineno}: {message.message % message.message_args}")

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: syntax error: {msg}")

    def unexpectedError(self, filename, msg):
        self.found.append(f"{filename}: {msg}")


def undefined_names(source: str, filename: str) -> list[str]:
    """The undefined-name findings of pyflakes in one source text."""
    collect = _Collect()
    pyflakes_api.check(source, filename, collect)
    return collect.found


def _tracked_python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        return sorted(p for p in ROOT.rglob("*.py") if "_build" not in p.parts and ".git" not in p.parts)
    return [ROOT / line for line in listed.stdout.splitlines() if (ROOT / line).is_file()]


def test_no_module_reads_an_undefined_name():
    files = _tracked_python_files()
    assert len(files) > 100, f"only {len(files)} Python files found under {ROOT}"
    found = [f for path in files for f in undefined_names(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert not found, "undefined names:\n" + "\n".join(found)


def test_a_dropped_import_is_found():
    """The regression this guards against: the import removed, the use left in a test body."""
    source = (ROOT / "tests" / "test_experiments_core.py").read_text(encoding="utf-8")
    assert undefined_names(source, "kept.py") == []
    dropped = source.replace("import numpy as np\n", "", 1)
    assert dropped != source
    assert any("undefined name 'np'" in f for f in undefined_names(dropped, "dropped.py"))
