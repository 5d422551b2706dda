#!/usr/bin/env python3
"""Build assignments from a chapter's exercises, and grade a class's notebooks in a sandbox.

::

    python3 tools/assignments.py secret <file>                    # the instructor's secret (keep it private)
    python3 tools/assignments.py build <chapter> [--out DIR] [--exercises-only]
    python3 tools/assignments.py grade <chapter> <folder-of-notebooks> --secret <file> --out DIR
                                 [--build DIR] [--jobs N] [--timeout S] [--cell-timeout S] [--memory MiB]
                                 [--no-sandbox]

``build`` turns the chapter's student notebook (the one generator, ``tools/student_notebooks.py``:
the same stubs, public checks and answer prompts) into an assignment in ``DIR`` (default
``assignments/build/<chapter>``): ``student/<chapter>.ipynb`` to hand out (a first cell for the
student's name, the chapter's public checks; it runs in Colab without any other file),
``solutions/<chapter>.ipynb`` (the same notebook filled in with the chapter's solutions) and
``assignment.json`` (the questions: the exercise spec, function name and points of each
autograded part, the points of each written part). Nothing in it is secret. ``--exercises-only``
keeps the exercises and the earlier code cells they need: a short assignment that grades in seconds.

``grade`` runs every ``*.ipynb`` of a folder, each in its own bubblewrap sandbox, side by side over
the cores. A sandbox sees the system, the Python environment and the ``ncbook`` package, read-only,
and an empty private folder (its HOME, in memory) — no network, nothing else of the machine; its
processes end with it; time and memory are limited. After the notebook's cells, the student's
functions are applied there to the public cases and to hidden cases drawn from the instructor's
secret; only the returned numbers leave the sandbox, and this process, which never imports a
submission, compares them with the reference. ``DIR`` gets ``scores.csv`` (one row per notebook,
written as each finishes), ``feedback/`` (per student: points, the public checks' messages, how
many hidden cases passed), ``executed/`` (each notebook as it ran, before any hidden case existed
in its sandbox) and ``answers/<question>.csv`` (the written answers, one file per question, for
grading by hand). Without ``bwrap`` the command refuses unless ``--no-sandbox`` is given.

Why not otter-grader (used here before): its local grading runs the tests in the submission's own
process, where a cell can rebind the checks, ``torch.allclose`` or otter's runner, read the tests
from disk and leave processes behind (otter's documentation recommends its Docker mode, which
needs an image registry); and its Colab mode needs the test files at a URL. The stripping of
solutions and the public checks are the generator's and the package's already.
"""

from __future__ import annotations

import argparse
import ast
import base64
import builtins
import concurrent.futures
import copy
import csv
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "grade_runner.py"
WRITTEN_POINTS = 2
IDENTITY_SOURCE = ('# Your name or student id, as your instructor asked for it (it names your row of the grades)\n'
                   'STUDENT = ""')
SANDBOX_HOME = "/home/student"

_CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(\s*(\w+)\s*[,)]")
_STUB_LABEL = re.compile(r'raise NotImplementedError\("exercise: ([^"]+)"\)')
_ANSWER = re.compile(r"\*\*Your answer \((?P<label>[^)]+)\)\.\*\* Write it here\.")
_PROMPT = re.compile(r"^\s*\*\*Your answer \((?P<title>[^)]+)\)\.\*\*\s*(Write it here\.)?")
_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>solution-start|solution-end)\}\s*(?P<arg>\S*)")


# --------------------------------------------------------------------------- the one generator
def _generator():
    spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "tools" / "student_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses in the generator look their module up here
    spec.loader.exec_module(module)
    return module


def _meta(cell) -> dict:
    return cell.metadata.get("ncbook", {}) if isinstance(cell.metadata.get("ncbook"), dict) else {}


def student_notebook(md_path: Path) -> nbformat.NotebookNode:
    """The chapter's student notebook with exercise cells tagged ``metadata.ncbook = {exercise, role}``.

    Adapter: where the generator already returns a tagged ``NotebookNode`` it is used as is;
    otherwise its JSON text is read and tagged here (stubs by their ``raise NotImplementedError("exercise:
    <label>")`` line, answer prompts by their text, checks by their ``check_<name>(...)`` call), and a
    markdown cell holding an answer prompt among other text is split around it.
    """
    made = _generator().student_notebook(Path(md_path))
    nb = made if isinstance(made, nbformat.NotebookNode) else nbformat.reads(made, as_version=4)
    if any(_meta(c).get("exercise") for c in nb.cells):
        return nb
    cells, label = [], None
    for cell in nb.cells:
        if cell.cell_type == "code" and (m := _STUB_LABEL.search(cell.source)):
            label = m.group(1)
            cell.metadata["ncbook"] = {"exercise": label, "role": "stub"}
            cells.append(cell)
        elif cell.cell_type == "code" and label and _CHECK_CALL.search(cell.source):
            cell.metadata["ncbook"] = {"exercise": label, "role": "check"}
            cells.append(cell)
        elif cell.cell_type == "markdown" and (m := _ANSWER.search(cell.source)):
            label = m.group("label")
            before, after = cell.source[:m.start()].strip("\n"), cell.source[m.end():].strip("\n")
            if before:
                cells.append(nbformat.v4.new_markdown_cell(before))
            cells.append(nbformat.v4.new_markdown_cell(m.group(0), metadata={"ncbook": {"exercise": label, "role": "answer"}}))
            if after:
                cells.append(nbformat.v4.new_markdown_cell(after))
        else:
            cells.append(cell)
    nb.cells = cells
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


# --------------------------------------------------------------------------- chapter solutions
@dataclass
class Solution:
    """What the chapter's solution region of one exercise holds."""

    code: list[str] = field(default_factory=list)      # solution code cells, in order (checks excluded)
    markdown: list[str] = field(default_factory=list)  # solution text, one entry per markdown stretch


def chapter_solutions(md_path: Path) -> dict[str, Solution]:
    """Solution code and text of every exercise of a jupytext MyST chapter, by label."""
    out: dict[str, Solution] = {}
    inside = None
    for cell in jupytext.read(md_path).cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code":
            if (inside or "solution" in tags) and not _CHECK_CALL.search(cell.source):
                name = re.search(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", cell.source, re.M)
                label = inside or (f"write {name.group(1)}" if name else "solution")  # the generator's label
                out.setdefault(label, Solution()).code.append(cell.source)
            continue
        if cell.cell_type != "markdown":
            continue
        kept: list[str] = []
        lines, i = cell.source.split("\n"), 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if m:
                j = i + 1
                while j < len(lines) and lines[j].strip() != m.group("fence"):
                    j += 1
                if inside and kept and "\n".join(kept).strip():
                    out.setdefault(inside, Solution()).markdown.append("\n".join(kept).strip())
                kept = []
                inside = (m.group("arg") or "solution") if m.group("name") == "solution-start" else None
                i = j + 1
                continue
            if inside:
                kept.append(lines[i])
            i += 1
        if inside and "\n".join(kept).strip():
            out.setdefault(inside, Solution()).markdown.append("\n".join(kept).strip())
    return out


def _names(source: str) -> tuple[set[str], set[str]]:
    """(free names a cell reads, names it binds at top level); names bound inside functions stay local."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    loads, top, inner, updated = set(), set(), set(), set()

    def bind(node, scope):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            scope.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            scope.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            updated.add(node.target.id)  # x += ... reads x

    def visit(node, scope):
        bind(node, scope)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.add(node.id)
        nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                                   ast.DictComp, ast.GeneratorExp))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
            for d in getattr(node, "decorator_list", []) + node.args.defaults + node.args.kw_defaults:
                if d is not None:
                    visit(d, scope)
            body = node.body if isinstance(node.body, list) else [node.body]
            for child in body:
                visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, inner if nested else scope)

    for stmt in tree.body:
        visit(stmt, top)
    return ((loads - inner - top) | updated) - set(dir(builtins)), top


def _exercise_start(cells) -> int:
    """Index of the first cell of the exercises: the "## Exercises" heading, else the first exercise cell."""
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and re.search(r"^#+\s+Exercises\s*$", cell.source, re.M):
            return i
    first = next(i for i, c in enumerate(cells) if _meta(c).get("exercise"))
    return max(first - 1, 0)


def _slice_exercises(cells, needed_sources: list[str]) -> list:
    """The chapter's title, the exercises, and the earlier code cells they need (by the names they use)."""
    start = _exercise_start(cells)
    head = cells[start]
    if head.cell_type == "markdown" and (m := re.search(r"^#+\s+Exercises\s*$", head.source, re.M)):
        head = copy.deepcopy(head)
        head.source = head.source[m.start():]
    tail = [head]
    for cell in cells[start + 1:]:
        if cell.cell_type == "markdown" and (m := re.search(r"^#+\s+References\s*$", cell.source, re.M)):
            if cell.source[:m.start()].strip():
                tail.append(nbformat.v4.new_markdown_cell(cell.source[:m.start()].strip(), metadata=cell.metadata))
            break  # the bibliography is the book's
        if "remove-cell" not in cell.metadata.get("tags", []):
            tail.append(cell)
    needed: set[str] = set()
    for src in needed_sources + [c.source for c in tail if c.cell_type == "code"]:
        needed |= _names(src)[0]
    keep = []
    for cell in reversed(cells[:start]):
        if cell.cell_type != "code":
            continue
        loads, stores = _names(cell.source)
        if stores & needed or "parameters" in cell.metadata.get("tags", []) or "NCBOOK_PIP" in cell.source:
            keep.append(cell)
            needed = (needed - stores) | loads
    title = cells[0] if cells[0].cell_type == "markdown" else nbformat.v4.new_markdown_cell("# Assignment")
    title = nbformat.v4.new_markdown_cell(title.source.split("\n\n")[0] + "\n\nThis assignment keeps the chapter's "
                                          "exercises and only the code they need; the chapter itself is in the book.")
    return [title] + list(reversed(keep)) + tail


# --------------------------------------------------------------------------- the assignment's notebooks
def _renumber(nb) -> None:
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"


def _exercise_module():
    import ncbook.exercises

    return ncbook.exercises


@dataclass
class Part:
    """One autograded part: the exercise spec's name and the student's function."""

    exercise: str
    function: str
    public: float
    hidden: float


@dataclass
class Question:
    """An exercise of the assignment: its autograded parts and its written part (points or None)."""

    label: str
    title: str
    auto: list[Part] = field(default_factory=list)
    written: float | None = None

    @property
    def auto_points(self) -> float:
        return sum(p.public + p.hidden for p in self.auto)


def _questions(cells, titles: dict[str, str]) -> list[Question]:
    exercises = _exercise_module()
    questions: dict[str, Question] = {}
    for cell in cells:
        label, role = _meta(cell).get("exercise"), _meta(cell).get("role")
        if not label:
            continue
        q = questions.setdefault(label, Question(label, titles.get(label, label)))
        if role == "check" and cell.cell_type == "code":
            for m in _CHECK_CALL.finditer(cell.source):
                check = getattr(exercises, m.group(1), None)
                name = m.group(1).removeprefix("check_")
                if check is not None and name in exercises.EXERCISES and not any(p.exercise == name for p in q.auto):
                    spec = exercises.EXERCISES[name]
                    q.auto.append(Part(name, m.group(2), *spec.points))
        elif role == "answer":
            q.written = WRITTEN_POINTS
    return list(questions.values())


_STATEMENT = re.compile(r"\*\*(?P<title>Exercise \d+(?:\.\d+)*)\.?\*\*")


def _statements(cells) -> dict[str, tuple[str, str]]:
    """(title, text) of each exercise's statement: the last "**Exercise N.M.**" Markdown cell before its first cell."""
    out = {}
    for i, cell in enumerate(cells):
        label = _meta(cell).get("exercise")
        if not label or label in out:
            continue
        for j in range(i - 1, -1, -1):
            if cells[j].cell_type == "markdown" and (m := _STATEMENT.search(cells[j].source)):
                out[label] = (m.group("title"), cells[j].source)
                break
        else:
            out[label] = (label, "")
    return out


def _add_answer_prompts(cells) -> list:
    """An answer prompt after each exercise whose statement asks a question but that has none yet.

    The generator writes a prompt where the chapter's solution has text; a question answered
    nowhere in the solution (e.g. "does it change the accuracy?") would otherwise be graded nowhere.
    """
    cells = list(cells)
    statements = _statements(cells)
    for label, (title, text) in statements.items():
        has_prompt = any(_meta(c).get("exercise") == label and _meta(c).get("role") == "answer"
                         and c.cell_type == "markdown" for c in cells)
        if "?" in text and not has_prompt:
            last = max(i for i, c in enumerate(cells) if _meta(c).get("exercise") == label)
            cells.insert(last + 1, nbformat.v4.new_markdown_cell(
                f"**Your answer ({title}).** Write it here.", metadata={"ncbook": {"exercise": label, "role": "answer"}}))
    return cells


def _fill(student, solutions: dict[str, Solution], md_name: str):
    """The handed-out notebook filled in with the chapter's solutions (code in the stubs, text after the prompts)."""
    nb = copy.deepcopy(student)
    used: dict[str, int] = {}
    for cell in nb.cells:
        label, role = _meta(cell).get("exercise"), _meta(cell).get("role")
        sol = solutions.get(label or "", Solution())
        if cell.cell_type == "code" and role in ("stub", "answer"):
            i = used.get(label, 0)
            if i >= len(sol.code):
                raise ValueError(f"{md_name}: exercise {label} has more stub cells than solution code cells")
            cell.source, used[label] = sol.code[i], i + 1
        elif cell.cell_type == "markdown" and role == "answer" and sol.markdown:
            prompt = _PROMPT.match(cell.source)
            head = cell.source[:prompt.end(0) - len(prompt.group(2) or "")] if prompt else cell.source
            cell.source = head.rstrip() + " " + "\n\n".join(sol.markdown)
    for label in dict.fromkeys(_meta(c).get("exercise") for c in nb.cells if _meta(c).get("exercise")):
        n = len(solutions.get(label, Solution()).code)
        if used.get(label, 0) != n:
            raise ValueError(f"{md_name}: exercise {label} has {used.get(label, 0)} stub cells but {n} solution "
                             "code cells")
    return nb


def assignment_notebooks(md_path: Path, *, exercises_only: bool = False):
    """(handed-out notebook, the same filled in with the solutions, questions) of a chapter."""
    md_path = Path(md_path)
    student = student_notebook(md_path)
    solutions = chapter_solutions(md_path)
    cells = student.cells
    labels = list(dict.fromkeys(_meta(c)["exercise"] for c in cells if _meta(c).get("exercise")))
    if exercises_only:
        cells = _slice_exercises(cells, [s for lab in labels for s in solutions.get(lab, Solution()).code])
    cells = _add_answer_prompts(cells)
    identity = nbformat.v4.new_code_cell(IDENTITY_SOURCE, metadata={"ncbook": {"role": "identity"}})
    first = 1 if cells and cells[0].cell_type == "markdown" else 0
    cells = list(cells[:first]) + [identity] + list(cells[first:])
    handed = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(student.metadata))
    handed.metadata.setdefault("ncbook", {})["assignment"] = md_path.stem
    _renumber(handed)
    questions = _questions(handed.cells, {k: v[0] for k, v in _statements(handed.cells).items()})
    return handed, _fill(handed, solutions, md_path.name), questions


def _chapter_path(chapter: str) -> Path:
    path = Path(chapter)
    if not path.suffix:
        path = ROOT / "book" / f"{chapter}.md"
    if not path.exists():
        raise SystemExit(f"no chapter {chapter!r}: expected a book/<stem>.md file, looked for {path}")
    return path


def build(chapter: str, out: Path | None = None, *, exercises_only: bool = False) -> Path:
    """Build the assignment of ``chapter`` into ``out`` (default ``assignments/build/<chapter>``); return ``out``."""
    import ncbook

    md = _chapter_path(chapter)
    out = Path(out or ROOT / "assignments" / "build" / md.stem).resolve()
    handed, filled, questions = assignment_notebooks(md, exercises_only=exercises_only)
    for sub, nb in (("student", handed), ("solutions", filled)):
        (out / sub).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / sub / f"{md.stem}.ipynb")
    manifest = {"chapter": md.stem, "exercises_only": exercises_only, "notebook": f"{md.stem}.ipynb",
                "ncbook": ncbook.__version__,
                "questions": [{"label": q.label, "title": q.title, "auto": [p.__dict__ for p in q.auto],
                               "written": q.written} for q in questions]}
    (out / "assignment.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return out


def load_assignment(build_dir: Path) -> tuple[dict, list[Question]]:
    """The manifest of a built assignment and its questions."""
    path = Path(build_dir) / "assignment.json"
    if not path.is_file():
        raise SystemExit(f"no assignment in {build_dir}: expected {path} (run `tools/assignments.py build` first)")
    manifest = json.loads(path.read_text())
    questions = [Question(q["label"], q["title"], [Part(**p) for p in q["auto"]], q["written"])
                 for q in manifest["questions"]]
    return manifest, questions


# --------------------------------------------------------------------------- reading a submission (as data)
class NotebookError(ValueError):
    """A submission that is not a readable notebook."""


MAX_NOTEBOOK_BYTES = 50 << 20


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The submission's cells as a clean v4 notebook (sources and our cell metadata only); never executes it.

    Raises
    ------
    NotebookError
        Too large, not UTF-8 JSON (a truncated file), or no list of cells.
    """
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"{size >> 20} MiB: larger than the {MAX_NOTEBOOK_BYTES >> 20} MiB a notebook may have")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} "
                            f"({exc.msg}; a truncated file?)") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no list of cells; nbformat 4 expected)")
    cells = []
    for cell in raw["cells"]:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else str(source)
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        ours = {"ncbook": meta["ncbook"]} if isinstance(meta.get("ncbook"), dict) else {}
        kind = cell.get("cell_type")
        if kind == "code":
            cells.append(nbformat.v4.new_code_cell(source, metadata=ours))
        elif kind in ("markdown", "raw"):
            cells.append((nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_raw_cell)(
                source, metadata=ours))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    _renumber(nb)
    return nb


def _clean(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` printable characters, safe in a spreadsheet (no leading = + - @)."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip()[:limit]
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def student_identity(nb) -> str | None:
    """The value of the first non-empty ``STUDENT = "..."`` of a code cell (read with ``ast``, not run)."""
    for cell in nb.cells:
        if cell.cell_type != "code" or "STUDENT" not in cell.source:
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "STUDENT" for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                    and node.value.value.strip()):
                return _clean(node.value.value, 100)
    return None


# what in a submission's own code the instructor should look at (see review_flags): attributes of the grading
# machinery, the references, the profiler hook, frames and code objects; names of dynamic code; modules that
# start threads or processes or reach into the interpreter
_REVIEW_ATTRIBUTES = {"EXERCISES", "reference", "expected", "harvest", "collect", "watched", "setprofile",
                      "getprofile", "settrace", "gettrace", "_getframe", "f_locals", "f_globals", "f_back", "__code__",
                      "co_code", "get_objects", "getsource", "modules", "__globals__", "__closure__"}
_REVIEW_NAMES = {"EXERCISES", "exec", "eval", "compile", "__import__", "__builtins__", "setattr", "globals"}
_REVIEW_MODULES = {"importlib", "ctypes", "gc", "threading", "_thread", "multiprocessing", "subprocess", "signal",
                   "concurrent", "pickle", "marshal"}


def review_flags(nb, handed=None) -> list[str]:
    """What in a submission's own code cells (not the handed-out ones) an instructor should read: statically,
    never run. A notebook runs in the student's kernel, where code can rewrite the grading code itself
    (monkeypatching ``ncbook`` or numpy) or call a reference outside the watched function; the scores cannot
    see that, this list can: a private module or attribute of an imported package, an assignment to an
    attribute of an imported module, one of the attributes, names or modules of :data:`_REVIEW_ATTRIBUTES`,
    :data:`_REVIEW_NAMES` and :data:`_REVIEW_MODULES`, a shell or magic line, a cell that does not parse.
    One line each (cell index and what), in the order found.
    """
    own = {_norm(c.source) for c in (handed.cells if handed is not None else []) if c.cell_type == "code"}
    flags: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip() or _norm(cell.source) in own:
            continue
        lines = cell.source.splitlines()
        if any(line.lstrip().startswith(("%", "!")) for line in lines):
            flags.append(f"cell {index}: a shell or magic line")
        code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            flags.append(f"cell {index}: does not parse")
            continue
        modules: set[str] = set()
        found: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    modules.add((a.asname or a.name).split(".")[0])
                    if any(part.startswith("_") for part in a.name.split(".")) or \
                            a.name.split(".")[0] in _REVIEW_MODULES:
                        found.append(f"imports {a.name}")
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if any(part.startswith("_") for part in mod.split(".")) or mod.split(".")[0] in _REVIEW_MODULES or \
                        any(a.name.startswith("_") or a.name in _REVIEW_ATTRIBUTES for a in node.names):
                    found.append(f"imports from {mod}: {', '.join(a.name for a in node.names)}")
                modules.update(a.asname or a.name for a in node.names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                root = node
                while isinstance(root, ast.Attribute):
                    root = root.value
                base = root.id if isinstance(root, ast.Name) else ""
                if node.attr in _REVIEW_ATTRIBUTES:
                    found.append(f"uses .{node.attr}")
                elif base in modules and node.attr.startswith("_") and not node.attr.startswith("__"):
                    found.append(f"uses the private attribute {node.attr} of {base}")
                if isinstance(node.ctx, (ast.Store, ast.Del)) and base in modules:
                    found.append(f"assigns to an attribute of the module {base} (.{node.attr})")
            elif isinstance(node, ast.Name) and node.id in _REVIEW_NAMES:
                found.append(f"uses {node.id}")
        flags += [f"cell {index}: {what}" for what in dict.fromkeys(found)]
    return flags


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def written_answers(nb, handed, questions: list[Question]) -> dict[str, str]:
    """Each written question's answer: its prompt cells' text and the cells the student added after them.

    Prompts are found by their metadata, or by their text in a notebook that lost it (cells pasted
    into a new notebook); a cell counts as added when the handed-out notebook has no cell like it.
    """
    wanted = {q.label for q in questions if q.written}
    by_title = {q.title: q.label for q in questions if q.written}
    original = {_norm(c.source) for c in handed.cells}
    functions = {p.function for q in questions for p in q.auto} | {
        m.group(1) for c in handed.cells if _meta(c).get("role") == "stub"
        for m in re.finditer(r"^\s*def\s+(\w+)", c.source, re.M)}  # the stubs' functions: not an answer
    parts: dict[str, list[str]] = {label: [] for label in wanted}
    current, pending = None, []  # pending: added cells just before a prompt (an answer's code, pasted)
    for cell in nb.cells:
        meta = _meta(cell)
        prompt = _PROMPT.match(cell.source) if cell.cell_type == "markdown" else None
        label = meta.get("exercise") if meta.get("role") == "answer" else None
        if label is None and prompt:
            label = by_title.get(prompt.group("title"))
        defines = cell.cell_type == "code" and any(re.search(rf"^\s*def\s+{re.escape(f)}\b", cell.source, re.M)
                                                   for f in functions)
        added = _norm(cell.source) not in original and bool(cell.source.strip())
        text = cell.source.strip() if cell.cell_type == "markdown" else f"```python\n{cell.source.strip()}\n```"
        if label in wanted:
            if label != current:
                parts[label] += pending
            current, pending = label, []
            if not added:
                continue
            if prompt and cell.cell_type == "markdown":
                text = cell.source[prompt.end():].strip()
            if text:
                parts[label].append(text)
        elif added and not meta.get("role") and not defines:
            (parts[current] if current else pending).append(text)
        else:
            current, pending = None, []
    return {label: "\n\n".join(p) for label, p in parts.items()}


# --------------------------------------------------------------------------- the sandbox
def _python_dirs() -> list[str]:
    """The interpreter's installation and environment (prefixes), without nesting."""
    dirs = {os.path.realpath(d) for d in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                          os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))}
    dirs = sorted(d for d in dirs if d not in ("/", "/usr"))
    return [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]


_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime", "alternatives", "mime.types")


@dataclass
class Limits:
    """What one submission may use."""

    notebook_timeout: int = 600      # seconds for all its cells
    cell_timeout: int = 300          # seconds for one cell
    harvest_timeout: int = 60        # seconds to apply the functions of one question to its public cases (and again
                                     # to its hidden cases)
    memory: int = 4096 << 20         # bytes of data (heap, arrays, tensors) per process
    folder: int = 512 << 20          # bytes of its private folder (and of its /tmp)

    def wall(self, harvests: int) -> int:
        """The most seconds a submission's sandbox may take before it is killed, with ``harvests`` harvests (two
        a question: its public cases, then its hidden cases)."""
        return self.notebook_timeout + self.harvest_timeout * max(harvests, 1) + 90


def sandbox_env(profile: str | None, home: str = SANDBOX_HOME) -> dict[str, str]:
    """The whole environment of a submission's run: nothing of the grader's but the profile.

    Results, claim records, cost estimates and checkpoints a chapter writes go under ``home`` (the run's
    only writable folder), never to the course's folders.
    """
    python_bin = os.path.dirname(os.path.realpath(sys.executable))
    return {"HOME": home, "NCBOOK_RESULTS": f"{home}/results", "NCBOOK_CHECKPOINTS": f"{home}/checkpoints", "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8",
            "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": "/opt/ncbook",
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "TMPDIR": "/tmp",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NCBOOK_WORKERS": "1",
            "JUPYTER_PLATFORM_DIRS": "1", "NCBOOK_PROFILE": profile or os.environ.get("NCBOOK_PROFILE", "quick")}


def _bwrap_features() -> set[str]:
    try:
        text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {f for f in ("--disable-userns", "--size", "--as-pid-1") if f in text}


def sandbox_command(limits: Limits, *, profile: str | None = None, extra_ro: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command line that runs ``tools/grade_runner.py`` for one submission.

    Bound read-only: ``/usr`` and the top-level library folders (or their symlinks), a few files of
    ``/etc`` (the loader cache, fonts, time zone), the Python installation and environment, the
    ``ncbook`` package (at ``/opt/ncbook/ncbook``) and the runner; nothing else of the machine.
    Private: ``/proc`` (own PID namespace), a minimal read-only ``/dev``, and ``/tmp``, ``/dev/shm`` and
    HOME (``/home/student``, the working folder) as size-limited in-memory folders, the only writable
    places. No network (an empty network namespace),
    no further user namespaces, no capabilities; the sandbox dies with the grader.
    """
    import ncbook

    features = _bwrap_features()
    cmd = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--die-with-parent",
           "--new-session", "--clearenv"]
    if "--as-pid-1" not in features:
        raise SystemExit("this bubblewrap lacks --as-pid-1; install bubblewrap 0.5 or newer")
    cmd.append("--as-pid-1")
    if "--disable-userns" in features:
        cmd.append("--disable-userns")
    if os.geteuid() == 0:
        cmd += ["--cap-drop", "ALL"]
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for path in (*_python_dirs(), *extra_ro):
        cmd += ["--ro-bind", path, path]
    cmd += ["--ro-bind", str(Path(ncbook.__file__).resolve().parent), "/opt/ncbook/ncbook",
            "--ro-bind", str(RUNNER), "/opt/ncbook/grade_runner.py", "--proc", "/proc", "--dev", "/dev"]
    for folder in ("/tmp", SANDBOX_HOME, "/dev/shm"):
        cmd += (["--size", str(limits.folder)] if "--size" in features else []) + ["--tmpfs", folder]
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", SANDBOX_HOME]  # the rest stays unwritable
    for key, value in sandbox_env(profile).items():
        cmd += ["--setenv", key, value]
    return cmd + [os.path.realpath(sys.executable), "/opt/ncbook/grade_runner.py"]


def check_sandbox(limits: Limits, profile: str | None = None) -> None:
    """Refuse (SystemExit) unless bubblewrap runs and the environment imports inside it."""
    if shutil.which("bwrap") is None:
        raise SystemExit("grading needs bubblewrap (`bwrap`) to keep each submission in a sandbox, and it was not "
                         "found. Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
                         "bubblewrap) or pass --no-sandbox to run submissions with your own rights (they can then "
                         "read and write your files and reach the network: only for notebooks you trust).")
    cmd = sandbox_command(limits, profile=profile)[:-1] + ["-c", "import ncbook.exercises, nbclient, ipykernel"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"bubblewrap is installed but the sandbox does not start ({proc.stderr.strip()[-800:]}).\n"
                         "It needs user namespaces (or a setuid bwrap). Fix that, or pass --no-sandbox.")


@dataclass
class RunResult:
    """What came back from one sandbox: the executed notebook, each part's outcomes (npz bytes), problems."""

    notebook: dict | None = None
    outcomes: dict[int, bytes | str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def run_submission(job: dict, limits: Limits, *, sandbox: bool, profile: str | None = None) -> RunResult:
    """Run the runner on ``job`` (in bubblewrap, or as a plain child process with ``sandbox=False``)."""
    data = json.dumps(job).encode()
    scratch = None
    if sandbox:
        cmd, cwd, env = sandbox_command(limits, profile=profile), None, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    else:
        import ncbook

        scratch = tempfile.mkdtemp(prefix="ncbook-grade-")
        env = {**sandbox_env(profile, home=scratch), "TMPDIR": scratch,
               "PYTHONPATH": str(Path(ncbook.__file__).resolve().parents[1])}
        cmd, cwd = [sys.executable, str(RUNNER)], scratch
    start = time.monotonic()
    result = RunResult()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(data, timeout=limits.wall(len(job["harvest"])))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        result.problems.append(f"killed at the time limit of the whole run ({limits.wall(len(job['harvest']))} s)")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its process group
        except ProcessLookupError:
            pass
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    result.seconds = time.monotonic() - start
    done = False
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            result.problems.append("the sandbox sent something unreadable")
            break
        kind = event.get("event") if isinstance(event, dict) else None
        if kind == "notebook" and result.notebook is None and not result.outcomes:
            result.notebook = event.get("notebook")
        elif kind == "outcomes" and isinstance(event.get("index"), int) and event["index"] not in result.outcomes:
            result.outcomes[event["index"]] = base64.b64decode(event["npz"]) if "npz" in event else \
                _clean(event.get("error", "no results"), 80)
        elif kind == "done" and not done:
            done = True
            result.problems += [_clean(p, 200) for p in event.get("problems", [])][:20]
    if not done and not result.problems:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        result.problems.append(f"the sandbox ended early (exit {proc.returncode}: {_clean(tail[0], 200)})")
    return result


# --------------------------------------------------------------------------- grading
@dataclass
class Graded:
    """One submission's row, and what its feedback says."""

    row: dict
    feedback: str
    answers: dict[str, str]
    notebook: dict | None


_KINDS = {"not_implemented": "not implemented", "exception": "raised an exception", "none": "returned None",
          "not_array": "returned something that is not an array", "signature": "parameters do not match",
          "forbidden": "uses the ncbook function it should implement", "missing": "function not defined",
          "too_large": "returned an array that is too large", "timeout": "ran past the time limit"}


class Grader:
    """Grades notebooks against one built assignment, with the hidden cases of one secret."""

    def __init__(self, build_dir: Path, secret: bytes, limits: Limits, *, sandbox: bool = True,
                 profile: str | None = None):
        from ncbook.exercises import EXERCISES
        from ncbook.exercises._core import pack_cases

        self.build_dir = Path(build_dir).resolve()
        self.manifest, self.questions = load_assignment(self.build_dir)
        self.handed = nbformat.read(self.build_dir / "student" / self.manifest["notebook"], as_version=4)
        self.limits, self.sandbox, self.profile = limits, sandbox, profile
        self.parts: list[tuple[Question, Part, list, list]] = []
        for q in self.questions:
            for part in q.auto:
                if part.exercise not in EXERCISES:
                    raise SystemExit(f"{self.build_dir}/assignment.json names the exercise {part.exercise!r}, which "
                                     "this ncbook does not have: rebuild the assignment")
                spec = EXERCISES[part.exercise]
                self.parts.append((q, part, spec.public_cases(), spec.hidden_cases(secret)))
        # every question's public cases first, then every question's hidden cases: while any text of the
        # student's can still reach the feedback (a public case's error message), no hidden case exists in the
        # sandbox, and nothing the student writes after that is shown (the runner sends no text of a hidden stage)
        def item(part: Part, stage: str, cases: list) -> dict:
            return {"exercise": part.exercise, "function": part.function, "stage": stage,
                    "cases": base64.b64encode(pack_cases(cases)).decode()}

        self.harvest = [item(part, "public", public) for _, part, public, _ in self.parts] + \
                       [item(part, "hidden", hidden) for _, part, _, hidden in self.parts]

    # the columns of the scores table
    def columns(self) -> list[str]:
        auto = [q.label for q in self.questions if q.auto]
        written = [f"{q.label} written" for q in self.questions if q.written]
        return ["student", "submission", *auto, *written, "total", "possible", "written_possible", "seconds", "error",
                "review"]

    def possible(self) -> float:
        return sum(q.auto_points for q in self.questions)

    def run(self, path: Path) -> tuple[Path, nbformat.NotebookNode | None, RunResult | str]:
        """Read and run one submission (the part that may run side by side with others)."""
        try:
            nb = read_submission(path)
        except (NotebookError, OSError) as exc:
            return path, None, str(exc)
        job = {"notebook": nb, "filename": self.manifest["notebook"], "cell_timeout": self.limits.cell_timeout,
               "notebook_timeout": self.limits.notebook_timeout, "harvest_timeout": self.limits.harvest_timeout,
               "memory": self.limits.memory, "harvest": self.harvest}
        return path, nb, run_submission(job, self.limits, sandbox=self.sandbox, profile=self.profile)

    def judge(self, path: Path, nb, result: RunResult | str) -> Graded:
        """Score one submission from the data its sandbox returned (in this process, which ran none of it)."""
        from ncbook.exercises import EXERCISES
        from ncbook.exercises._core import Outcome, unpack_outcomes

        identity = (student_identity(nb) if nb is not None else None) or _clean(path.stem, 100)
        row = {c: "" for c in self.columns()}
        row.update(student=identity, submission=path.name, possible=self.possible(),
                   written_possible=sum(q.written or 0 for q in self.questions))
        lines = [f"# Feedback for {identity} ({path.name})", ""]
        if isinstance(result, str):
            problems, result = [result], RunResult()
        else:
            problems = list(result.problems)
            row["seconds"] = round(result.seconds, 1)
        scores = {q.label: 0.0 for q in self.questions if q.auto}
        body = []
        def outcomes_of(index: int, cases: list) -> list:
            got = result.outcomes.get(index)
            if isinstance(got, bytes):
                try:
                    outcomes = unpack_outcomes(got)
                except Exception:  # a malformed file from the sandbox: nothing earned
                    outcomes = []
            else:
                outcomes = [Outcome(error="missing", detail=f"no results: {got or 'the notebook did not finish'}.")] * \
                           len(cases)
            if len(outcomes) != len(cases):
                outcomes = [Outcome(error="missing", detail="the results do not match the cases.")] * len(cases)
            return outcomes

        for i, (q, part, public, hidden) in enumerate(self.parts):
            spec = EXERCISES[part.exercise]
            check = spec.judge(public, outcomes_of(i, public))
            hidden_outcomes = outcomes_of(len(self.parts) + i, hidden)
            verdicts = spec.verdicts(hidden, hidden_outcomes)
            passed = sum(v is None for v in verdicts)
            earned = (part.public if check.passed else 0) + (part.hidden if passed == len(hidden) else 0)
            scores[q.label] += earned
            first = next((o for o, v in zip(hidden_outcomes, verdicts) if v is not None), None)
            why = "" if first is None else f" (first failure: {_KINDS.get(first.error, 'wrong value')})"
            body += [f"## {q.title} ({q.label}): `{part.function}`, {earned:g} of {_points(part.public + part.hidden)}",
                     "", f"- public check ({_points(part.public)}): {'passed' if check.passed else 'failed'}",
                     "", "```text", str(check.message), "```", "",
                     f"- hidden cases ({_points(part.hidden)}): {passed} of {len(hidden)} passed{why}", ""]
        for q in self.questions:
            if q.written:
                body += [f"## {q.title} ({q.label}), written answer: graded by hand ({_points(q.written)})", ""]
        row.update(scores)
        row["total"] = sum(scores.values())
        if problems:
            row["error"] = _clean(f"{path.name}: " + "; ".join(problems), 600)
        if nb is not None:
            row["review"] = _clean("; ".join(review_flags(nb, self.handed)), 600)
        lines += [f"Autograded: {row['total']:g} of {_points(row['possible'])}. Written answers: graded by hand "
                  f"({_points(row['written_possible'])}).", ""]
        if problems:
            lines += ["Problems: " + "; ".join(problems), ""]
        answers = written_answers(nb, self.handed, self.questions) if nb is not None else {}
        return Graded(row, "\n".join(lines + body), answers, result.notebook)


def _points(value: float) -> str:
    return f"{value:g} point" + ("" if value == 1 else "s")


def _key(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", Path(name).stem)[:80] or "submission"


def grade(chapter: str, submissions: Path, out: Path, *, secret: bytes, build_dir: Path | None = None,
          limits: Limits | None = None, jobs: int | None = None, sandbox: bool = True,
          profile: str | None = None, log=print) -> list[dict]:
    """Grade every ``*.ipynb`` of ``submissions``; write ``out/scores.csv`` (and feedback, executed, answers).

    Returns the rows of ``scores.csv``, sorted by submission.
    """
    import ncbook

    stem = _chapter_path(chapter).stem
    build_dir = Path(build_dir or ROOT / "assignments" / "build" / stem)
    limits = limits or Limits()
    if sandbox:
        check_sandbox(limits, profile)
    else:
        log("WARNING: --no-sandbox: every submission runs with your rights; it can read and write your files, "
            "reach the network and leave processes behind. Grade only notebooks you trust this way.")
    grader = Grader(build_dir, secret, limits, sandbox=sandbox, profile=profile)
    paths = sorted(p for p in Path(submissions).glob("*.ipynb") if p.is_file())
    jobs = max(1, jobs or ncbook.usable_cores())
    bound = math.ceil(len(paths) / jobs) * limits.wall(len(grader.harvest)) if paths else 0
    digest = hashlib.sha256((build_dir / "assignment.json").read_bytes()).hexdigest()[:12]
    log(f"assignment {build_dir / 'assignment.json'} (sha256 {digest}; chapter {grader.manifest['chapter']}, "
        f"{len(grader.parts)} autograded parts); {len(paths)} notebooks, {jobs} at a time; at most {bound} s")
    out = Path(out)
    for sub in ("feedback", "executed", "answers"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    columns = grader.columns()
    rows, answers = [], {q.label: [] for q in grader.questions if q.written}
    scores = out / "scores.csv"
    with scores.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        f.flush()
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = [pool.submit(grader.run, p) for p in paths]
            for future in concurrent.futures.as_completed(futures):
                graded = grader.judge(*future.result())
                writer.writerow(graded.row)
                f.flush()  # a row per finished notebook: nothing lost on an interrupt
                rows.append(graded.row)
                key = _key(graded.row["submission"])
                (out / "feedback" / f"{key}.md").write_text(graded.feedback + "\n")
                if graded.notebook is not None:
                    nbformat.write(nbformat.from_dict(graded.notebook), out / "executed" / f"{key}.ipynb")
                for label, text in graded.answers.items():
                    answers[label].append((graded.row["student"], graded.row["submission"], label, text))
                log(f"  {graded.row['submission']}: {graded.row['total']:g} of {graded.row['possible']:g}"
                    + (f"  [{graded.row['error']}]" if graded.row["error"] else ""))
    rows.sort(key=lambda r: r["submission"])
    tmp = scores.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, scores)
    for label, entries in answers.items():
        with (out / "answers" / f"{label}.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["student", "submission", "question", "answer", "points"])
            writer.writerows([(*e, "") for e in sorted(entries, key=lambda e: e[1])])
    return rows


def read_secret(path: Path) -> bytes:
    """The instructor's secret: the bytes of a private file outside the course repository."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SystemExit(f"no secret file {path}: make one with `tools/assignments.py secret {path}`")
    if path.is_relative_to(ROOT):
        raise SystemExit(f"the secret {path} lies inside the course repository ({ROOT}); keep it outside, where "
                         "students cannot read it")
    data = path.read_bytes().strip()
    if len(data) < 16:
        raise SystemExit(f"the secret in {path} is too short ({len(data)} bytes); make one with "
                         "`tools/assignments.py secret`")
    return data


def write_secret(path: Path) -> Path:
    """A new random secret (64 hex digits) in ``path``, readable by its owner only."""
    path = Path(path).resolve()
    if path.is_relative_to(ROOT):
        raise SystemExit(f"refusing to write a secret inside the course repository ({ROOT})")
    if path.exists():
        raise SystemExit(f"{path} exists; hidden cases depend on the secret, so it is never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("secret", help="write a new random secret (the hidden cases are drawn from it)")
    s.add_argument("file", type=Path, help="where to write it (outside the course repository; keep it private)")
    b = sub.add_parser("build", help="build the student notebook, its solutions and the assignment manifest")
    b.add_argument("chapter", help="chapter stem (e.g. seli) or path to its .md")
    b.add_argument("--out", type=Path, default=None, help="output folder (default: assignments/build/<chapter>)")
    b.add_argument("--exercises-only", action="store_true", help="keep only the exercises and the code they need")
    g = sub.add_parser("grade", help="grade a folder of submitted notebooks, each in a sandbox")
    g.add_argument("chapter")
    g.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    g.add_argument("--secret", type=Path, required=True, help="the instructor's secret file (hidden cases)")
    g.add_argument("--out", type=Path, required=True, help="results folder: scores.csv, feedback/, executed/, answers/")
    g.add_argument("--build", type=Path, default=None, help="the built assignment (default: assignments/build/<chapter>)")
    g.add_argument("--jobs", type=int, default=None, help="notebooks graded at once (default: the usable cores)")
    d = Limits()
    g.add_argument("--timeout", type=int, default=d.notebook_timeout, help="seconds for one notebook's cells")
    g.add_argument("--cell-timeout", type=int, default=d.cell_timeout, help="seconds for one cell")
    g.add_argument("--harvest-timeout", type=int, default=d.harvest_timeout,
                   help="seconds to run one question's functions on its cases")
    g.add_argument("--memory", type=int, default=d.memory >> 20, help="MiB of memory (heap, arrays) per process")
    g.add_argument("--profile", default=None, help="NCBOOK_PROFILE inside the sandbox (default: yours, else quick)")
    g.add_argument("--no-sandbox", action="store_true",
                   help="run submissions without bubblewrap, with your rights (only for notebooks you trust)")
    args = parser.parse_args(argv)
    if args.command == "secret":
        print(f"secret written to {write_secret(args.file)} (keep it private; the same secret gives the same "
              "hidden cases)")
        return 0
    if args.command == "build":
        out = build(args.chapter, args.out, exercises_only=args.exercises_only)
        print(f"student notebook: {out / 'student'}\nsolutions: {out / 'solutions'}\nassignment: "
              f"{out / 'assignment.json'}")
        return 0
    limits = Limits(args.timeout, args.cell_timeout, args.harvest_timeout, args.memory << 20)
    start = time.monotonic()
    rows = grade(args.chapter, args.submissions, args.out, secret=read_secret(args.secret), build_dir=args.build,
                 limits=limits, jobs=args.jobs, sandbox=not args.no_sandbox, profile=args.profile)
    print(f"graded {len(rows)} notebooks in {time.monotonic() - start:.0f} s -> {Path(args.out) / 'scores.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
