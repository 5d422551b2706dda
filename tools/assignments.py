#!/usr/bin/env python3
"""Build assignments from a chapter's exercises, and grade a class's notebooks where no answer can be reached.

::

    python3 tools/assignments.py secret <file>                  # the instructor's secret (keep it private)
    python3 tools/assignments.py build <chapter> [--out DIR] [--exercises-only] [--book-url URL]
    python3 tools/assignments.py grade <chapter> <folder> --secret <file> --out DIR [--build DIR]
                                 [--roster CSV] [--points FILE] [--point KEY=VALUE ...] [--precision N]
                                 [--jobs N] [--timeout S] [--cell-timeout S] [--harvest-timeout S]
                                 [--memory MiB] [--processes N] [--cpus N] [--no-calibration] [--no-sandbox]
    python3 tools/assignments.py merge DIR [--keep SUBMISSION ...]   # written points (answers/*.csv) into totals
    python3 tools/assignments.py export DIR --roster CSV --format canvas|moodle [--name NAME] [--file PATH]
                                 [--keep SUBMISSION ...]

``build`` turns the chapter's student notebook (the one generator, ``tools/student_notebooks.py``) into an
assignment in ``DIR`` (default ``assignments/build/<chapter>``): ``student/<chapter>.ipynb`` to hand out,
``solutions/<chapter>.ipynb`` (the same filled in with the chapter's solutions), ``edition/<key>/ncbook``
(the *student edition* of the package, one per group of questions: ``tools/grading/edition.py``) and
``assignment.json``. ``--exercises-only`` keeps the exercises, the earlier code cells they need, the
statements they cite and a link to the chapter's page. Nothing in a build is secret.

``grade`` first grades the solutions notebook (it must get full marks; its time sets the default limits
and the printed estimate), then every entry of the folder, each notebook in two bubblewrap sandboxes:
*run* (the whole notebook with the full package, for the executed notebook; nothing is scored from it)
and *judge* (a fresh one with the student edition, where the answers are absent: it runs only the code
cells the graded functions need, applies them to the public cases, and only after those outcomes have
come back receives the hidden cases, drawn for this student from HMAC(secret, exercise + student key);
only numbers come back from that stage). Every notebook's run sandbox first, then, once none is alive,
every notebook's judge sandboxes: a run sandbox (which holds the full package) is never alive beside a
judge. Sandboxes send codes only; this process, which never runs a submission, judges the numbers and
writes every sentence.
``DIR`` gets ``scores.csv``, ``feedback/<id>.html`` (one page per student), ``executed/<id>.ipynb``,
``answers/<question>.csv`` (written answers, a ``points`` column to fill) and ``grading.json``. ``merge``
adds the filled written points to ``total``; ``export`` writes a Canvas or Moodle gradebook CSV.

Why not otter-grader (used here before): its local grading runs the tests in the submission's own
process, where a cell can rebind the checks, ``torch.allclose`` or otter's runner, read the tests from
disk and leave processes behind; and its Colab mode needs the test files at a URL.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import copy
import functools
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import jupytext
import nbformat

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from grading import edition as _edition  # noqa: E402
from grading.codes import (bound_reports, exception_name, judge_sentences, outcome_sentence,  # noqa: E402
                           run_sentences)
from grading.gradebook import (Points, Roster, csv_safe, csv_safe_row, export, feedback_html, fmt, merge,  # noqa: E402,F401
                               write_csv)
from grading.review import Similarity, needed_cells, review_flags  # noqa: E402,F401
from grading.review import names as _names  # noqa: E402
from grading.review import _norm  # noqa: E402,F401
from grading.sandbox import (SANDBOX_HOME, Channel, Limits, bwrap_features, confinement,  # noqa: E402,F401
                             ncbook_locations, python_dirs as _python_dirs, sandbox_command as _sandbox_command,
                             sandbox_env)
from grading.submissions import (MAX_ANSWER_CHARS, Entry, NotebookError, clean as _clean, entries,  # noqa: E402,F401
                                 parse_notebook, read_bytes, read_submission, refusal, slug, student_identity,
                                 written_answers)

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "grade_runner.py"
JUDGE = Path(__file__).resolve().parent / "grade_judge.py"
REVIEW_CHARS = 4000  # of the review column: long enough for every flag, short enough for any spreadsheet
WRITTEN_POINTS = 2
IDENTITY_SOURCE = ('# Your name or student id, as your instructor asked for it (it names your row of the grades)\n'
                   'STUDENT = ""')

_CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(\s*(\w+)\s*[,)]")
_STUB_LABEL = re.compile(r'raise NotImplementedError\("exercise: ([^"]+)"\)')
_ANSWER = re.compile(r"\*\*Your answer \((?P<label>[^)]+)\)\.\*\* Write it here\.")
_PROMPT = re.compile(r"^\s*\*\*Your answer \((?P<title>[^)]+)\)\.\*\*\s*(Write it here\.)?")
_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>solution-start|solution-end)\}\s*(?P<arg>\S*)")


# --------------------------------------------------------------------------- the one generator
@functools.lru_cache(maxsize=None)
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
            if (inside or "solution" in tags) and not _CHECK_CALL.search(cell.source) and \
                    _generator()._only_glue_calls(cell.source) is None:   # a glue-only cell: numbers for the text
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


def _exercise_start(cells) -> int:
    """Index of the first cell of the exercises: the "## Exercises" heading, else the first exercise cell."""
    for i, cell in enumerate(cells):
        if cell.cell_type == "markdown" and re.search(r"^#+\s+Exercises\s*$", cell.source, re.M):
            return i
    first = next(i for i, c in enumerate(cells) if _meta(c).get("exercise"))
    return max(first - 1, 0)


_CITED = re.compile(r"\b(?P<kind>Theorem|Proposition|Definition|Lemma|Corollary|Figure|Table|Example|Remark|"
                    r"Assumption)s?\s+(?P<num>\d+(?:\.\d+)+)|\((?P<eq>\d+\.\d+)\)")


def book_url(stem: str, base: str | None = None) -> str:
    """The chapter's page in the published book: ``base`` (else ``html.baseurl`` of ``_config.yml``, else the
    GitHub Pages address of its ``repository.url``) + ``book/<stem>.html``."""
    if not base:
        import yaml

        config = yaml.safe_load((ROOT / "_config.yml").read_text()) or {}
        base = (config.get("html") or {}).get("baseurl") or ""
        repo = (config.get("repository") or {}).get("url") or ""
        m = re.match(r"https?://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?$", repo)
        if not base and m:
            base = f"https://{m.group(1)}.github.io/{m.group(2)}/"
    return base.rstrip("/") + f"/book/{stem}.html" if base else f"book/{stem}.html"


def _blocks(markdown: str) -> list[str]:
    """A Markdown cell cut into blocks: each blockquote (a run of ``>`` lines), each ``$$`` display, each paragraph."""
    lines, out, i = markdown.split("\n"), [], 0
    while i < len(lines):
        if lines[i].lstrip().startswith(">"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith(">"):
                j += 1
        elif lines[i].strip().startswith("$$"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().endswith("$$"):
                j += 1
            j += 1
        elif not lines[i].strip():
            i += 1
            continue
        else:
            j = i
            while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith((">", "$$")):
                j += 1
        out.append("\n".join(lines[i:j]).strip())
        i = max(j, i + 1)
    return out


def cited_statements(before, exercises) -> list[str]:
    """The blocks of the chapter (``before``: its cells up to the exercises) that the exercises' text cites:
    "Theorem 2.1" (its blockquote), "(2.3)" (the statement or display holding ``\\tag{2.3}``), "Figure 2.1"
    (the paragraph holding its caption). In the order the chapter has them, each once."""
    def cites(texts) -> set:
        return {("eq", m.group("eq")) if m.group("eq") else (m.group("kind"), m.group("num"))
                for text in texts for m in _CITED.finditer(text)}

    blocks = [b for cell in before if cell.cell_type == "markdown" for b in _blocks(cell.source)]
    wanted = cites(c.source for c in exercises if c.cell_type == "markdown")
    found: list[str] = []
    while True:  # a carried statement may cite another ("under the hypotheses of Theorem 3.1"): carry it too
        more = [b for b in blocks if b not in found and any(_holds(b, kind, num) for kind, num in wanted)]
        if not more:
            return [b for b in blocks if b in found]  # in the chapter's order
        found += more
        wanted |= cites(more)


def _holds(block: str, kind: str, num: str) -> bool:
    """Does ``block`` state ``kind num`` (a "**Theorem 2.1" statement, a ``\\tag{2.3}`` display, a caption)?"""
    head = block.lstrip("> ").strip()
    return bool((kind == "eq" and f"\\tag{{{num}}}" in block) or
                (kind != "eq" and re.match(rf"\*\*{kind} {re.escape(num)}\b", head)) or
                (kind in ("Figure", "Table") and re.search(rf"\b{kind} {re.escape(num)}[.:]", block)))


def _slice_exercises(cells, needed_sources: list[str], *, stem: str | None = None, url: str | None = None) -> list:
    """The chapter's title with a link to its page, the statements its exercises cite, the exercises, and the
    earlier code cells they need (by the names they use)."""
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
    heading = title.source.split("\n\n")[0]
    page = book_url(stem, url) if stem else url
    where = f"[its page in the book]({page})" if page else "in the book"
    intro = [nbformat.v4.new_markdown_cell(f"{heading}\n\nThis assignment keeps the chapter's exercises and only the "
                                           f"code they need; the chapter itself, with its figures and derivations, "
                                           f"is {where}.")]
    statements = cited_statements(cells[:start], tail)
    if statements:
        intro.append(nbformat.v4.new_markdown_cell(
            "## What the exercises cite\n\nThe statements, equations and figures of the chapter that the exercises "
            "below refer to, as the chapter states them:\n\n" + "\n\n".join(statements)))
    return intro + list(reversed(keep)) + tail


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


def assignment_notebooks(md_path: Path, *, exercises_only: bool = False, url: str | None = None):
    """(handed-out notebook, the same filled in with the solutions, questions) of a chapter."""
    md_path = Path(md_path)
    student = student_notebook(md_path)
    solutions = chapter_solutions(md_path)
    cells = student.cells
    labels = list(dict.fromkeys(_meta(c)["exercise"] for c in cells if _meta(c).get("exercise")))
    if exercises_only:
        cells = _slice_exercises(cells, [s for lab in labels for s in solutions.get(lab, Solution()).code],
                                 stem=md_path.stem, url=url)
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


def solution_functions(md_path: Path, functions) -> dict:
    """The chapter's solution functions of ``functions``, defined by running only the solution cells that define
    them, in a namespace with the chapter's usual imports (a cell that also uses the chapter's variables
    fails after its definitions: they stay)."""
    import itertools

    import numpy as np
    import torch
    import torch.nn.functional as F

    import ncbook
    from ncbook import contrastive, geometry, losses, metrics, reweighting, ufm

    ns = {"np": np, "torch": torch, "F": F, "math": math, "itertools": itertools, "ncbook": ncbook,
          "contrastive": contrastive, "geometry": geometry, "losses": losses, "metrics": metrics,
          "reweighting": reweighting, "ufm": ufm}
    wanted = set(functions)
    for solution in chapter_solutions(md_path).values():
        for source in solution.code:
            if any(re.search(rf"^\s*def\s+{re.escape(f)}\b", source, re.M) for f in wanted):
                try:
                    with contextlib.redirect_stdout(io.StringIO()):  # a solution cell may print
                        exec(compile(source, str(md_path), "exec"), ns)
                except Exception:  # noqa: BLE001 - see the docstring
                    pass
    return {f: ns[f] for f in wanted if callable(ns.get(f))}


def plan_groups(md_path: Path, questions: list[Question]) -> tuple[list, dict]:
    """(groups of exercises judged together, what the edition removes per exercise): see
    :func:`grading.edition.groups`; a question's "use" is what its chapter solution calls on the public cases."""
    from ncbook.exercises import EXERCISES

    parts = [p for q in questions for p in q.auto]
    removed = {p.exercise: _edition.removed_for(EXERCISES[p.exercise]) for p in parts}
    functions = solution_functions(md_path, {p.function for p in parts})
    used = {}
    for p in parts:
        fn, cases = functions.get(p.function), EXERCISES[p.exercise].public_cases()  # the cases' own calls not counted
        used[p.exercise] = _edition.calls(lambda fn=fn, cases=cases: [fn(**c) for c in cases]) \
            if fn is not None else set()
        # what the chapter's own solution calls stays (one_angle_cosine's cl_risk runs the risk object that its
        # reference's solver runs too): the reference's entry points go, the shared machinery stays
        removed[p.exercise] -= used[p.exercise]
    return _edition.groups(removed, used), removed


def build(chapter: str, out: Path | None = None, *, exercises_only: bool = False, url: str | None = None,
          verify: bool = True, check_imports: bool = True, log=print) -> Path:
    """Build the assignment of ``chapter`` into ``out`` (default ``assignments/build/<chapter>``); return ``out``.

    Writes the handed-out and solutions notebooks, one student edition of the package per group of questions
    (each imported once to check it) and ``assignment.json``. With ``verify`` the solutions notebook is then
    judged on its public cases against each edition (no sandbox: it is the course's own code), so a chapter
    whose solution needs what an edition removes fails here, naming the question. ``check_imports`` imports
    each rewritten module of each edition in a fresh interpreter (a stub that a module uses at import time).
    """
    import ncbook
    from ncbook.exercises import EXERCISES

    md = _chapter_path(chapter)
    out = Path(out or ROOT / "assignments" / "build" / md.stem).resolve()
    handed, filled, questions = assignment_notebooks(md, exercises_only=exercises_only, url=url)
    for sub, nb in (("student", handed), ("solutions", filled)):
        (out / sub).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / sub / f"{md.stem}.ipynb")
    groups, removed = plan_groups(md, questions)
    if (out / "edition").exists():
        shutil.rmtree(out / "edition")
    records = []
    for group in groups:
        package = _edition.write_edition(out / "edition" / group.key, group.removed)
        problem = _edition.import_check(package, {m for m, _ in group.removed}) if check_imports else None
        if problem:
            raise SystemExit(f"the student edition for {', '.join(group.exercises)} does not import:\n{problem}")
        records.append({"exercises": list(group.exercises), "edition": f"edition/{group.key}/ncbook",
                        "removed": sorted(map(list, group.removed))})
    manifest = {"chapter": md.stem, "exercises_only": exercises_only, "notebook": f"{md.stem}.ipynb",
                "ncbook": ncbook.__version__, "groups": records,
                "removed": {e: sorted(map(list, r)) for e, r in removed.items()},
                "forbid_external": {p.exercise: _edition.external_forbidden(EXERCISES[p.exercise])
                                    for q in questions for p in q.auto},
                "references": {p.exercise: sorted(map(list, _edition.reference_owners(EXERCISES[p.exercise])))
                               for q in questions for p in q.auto},
                "questions": [{"label": q.label, "title": q.title, "auto": [p.__dict__ for p in q.auto],
                               "written": q.written} for q in questions]}
    (out / "assignment.json").write_text(json.dumps(manifest, indent=1) + "\n")
    if verify and any(q.auto for q in questions):
        grader = Grader(out, b"public cases only: no secret is used", Limits(), sandbox=False)
        judged, problems, _ = grader.judge(filled, "build", hidden=False)
        bad = [(p, EXERCISES[p.exercise].judge(grader.public[p.exercise], judged[p.exercise].public))
               for _, p in grader.parts]
        bad = [(p, c) for p, c in bad if not c.passed]
        if bad:
            p, check = bad[0]
            raise SystemExit(f"{md.name}: the chapter's solution of {p.exercise} ({p.function}) fails its public check "
                             f"against the student edition ({'; '.join(problems) or 'no problem reported'}):\n"
                             f"{check.message}")
        log(f"built {out}: {len(questions)} questions, {sum(len(q.auto) for q in questions)} autograded parts in "
            f"{len(groups)} judge group(s); the solutions pass their public checks against the student edition")
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


# --------------------------------------------------------------------------- the instructor's secret
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


# --------------------------------------------------------------------------- sandboxes
def package_dir() -> Path:
    """The real ``ncbook`` package (what the run sandbox gets)."""
    import ncbook

    return Path(ncbook.__file__).resolve().parent


def sandbox_command(limits: Limits, *, profile: str | None = None, package: Path | None = None,
                    runner: Path = RUNNER, hide: tuple[str, ...] = (), extra_ro: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command of one sandbox (:func:`grading.sandbox.sandbox_command`); the real package by
    default, the repository always hidden."""
    return _sandbox_command(limits, package=package or package_dir(), runner=runner, profile=profile,
                            hide=(str(ROOT), *hide), extra_ro=extra_ro)


def check_sandbox(limits: Limits, profile: str | None = None) -> None:
    """Refuse (SystemExit) unless bubblewrap runs and the environment imports inside it."""
    if shutil.which("bwrap") is None:
        raise SystemExit("grading needs bubblewrap (`bwrap`) to keep each submission in a sandbox, and it was not "
                         "found. Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
                         "bubblewrap) or pass --no-sandbox to run submissions with your own rights (they can then "
                         "read and write your files and reach the network: only for notebooks you trust).")
    cmd = sandbox_command(limits, profile=profile)[:-1] + [
        "-c", "import ncbook.exercises._harvest, nbclient, ipykernel, IPython"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"bubblewrap is installed but the sandbox does not start ({proc.stderr.strip()[-800:]}).\n"
                         "It needs user namespaces (or a setuid bwrap). Fix that, or pass --no-sandbox.")


# --------------------------------------------------------------------------- judging
@dataclass
class Judged:
    """What the judge sandbox returned for one autograded part."""

    public: list
    hidden: list
    hidden_cases: list


@dataclass
class JudgeResult:
    """A notebook's judge sandboxes: exercise -> :class:`Judged`, the problems (sentences the grader wrote), the
    seconds, and where each graded function's code was written (function -> (code cell index or None, first
    line, code name), for the similarity review)."""

    judged: dict
    problems: list
    seconds: float
    bound: dict = field(default_factory=dict)


@dataclass
class Calibration:
    """The solutions notebook graded before the batch: its seconds (whole, run sandbox, judge sandbox, the
    slowest harvest stage)."""

    seconds: float
    run: float
    judge: float


@dataclass
class Graded:
    """One entry's row, feedback record, written answers, executed notebook and what its review compares."""

    row: dict
    record: dict
    answers: dict[str, str]
    notebook: dict | None
    code: list = field(default_factory=list)    # its code cells' sources
    bound: dict = field(default_factory=dict)   # JudgeResult.bound
    identity: str = ""
    run_seconds: float = 0.0
    judge_seconds: float = 0.0


@dataclass
class Prepared:
    """An entry on its way through the phases of a batch: read, run (all runs first), judged (then all judges)."""

    entry: Entry
    nb: nbformat.NotebookNode | None
    problems: list
    identity: dict
    key: str
    review: list
    answers: dict
    notebook: dict | None = None
    run_problems: list = field(default_factory=list)
    run_seconds: float = 0.0
    judge: JudgeResult | None = None


class SandboxOverlap(RuntimeError):
    """A judge sandbox was about to start while a run sandbox was alive, or the other way round."""


class Grader:
    """Grades entries against one built assignment, with the hidden cases of one secret.

    Run sandboxes (the full package) and judge sandboxes (the student edition, then the hidden cases) never
    live at the same time: a run sandbox could otherwise answer a judge's cases through anything both can
    reach (POSIX record locks on a file every sandbox can read, the Python binary, are seen across namespaces).
    :meth:`_sandbox` refuses to start one kind while the other is alive, so the ordering is a property of the
    grader, not of a schedule; :func:`grade` runs every notebook first, then judges them all.
    """

    def __init__(self, build_dir: Path, secret: bytes, limits: Limits, *, sandbox: bool = True,
                 profile: str | None = None, points: Points | None = None, roster: Roster | None = None,
                 hide: tuple[str, ...] = ()):
        from ncbook.exercises import EXERCISES

        self.build_dir = Path(build_dir).resolve()
        self.manifest, self.questions = load_assignment(self.build_dir)
        self.handed = nbformat.read(self.build_dir / "student" / self.manifest["notebook"], as_version=4)
        self.secret, self.limits, self.sandbox, self.profile = secret, limits, sandbox, profile
        self.points = points or Points.of(self.questions)
        self.roster = roster
        self.hide = (str(self.build_dir), *map(str, hide))
        self.parts: list[tuple[Question, Part]] = [(q, p) for q in self.questions for p in q.auto]
        for _, part in self.parts:
            if part.exercise not in EXERCISES:
                raise SystemExit(f"{self.build_dir}/assignment.json names the exercise {part.exercise!r}, which "
                                 "this ncbook does not have: rebuild the assignment")
        self.groups = [(tuple(g["exercises"]), self.build_dir / g["edition"]) for g in self.manifest.get("groups", [])]
        grouped = {e for g, _ in self.groups for e in g}
        if not {p.exercise for _, p in self.parts} <= grouped or not all(d.is_dir() for _, d in self.groups):
            raise SystemExit(f"{self.build_dir} has no student edition for every question: rebuild the assignment "
                             "with this version of tools/assignments.py")
        self.public = {p.exercise: EXERCISES[p.exercise].public_cases() for _, p in self.parts}
        self.conf = confinement() if sandbox else None
        self.similarity = self._similarity()
        self._lock, self._done = threading.Lock(), {}
        self._live: dict[str, dict[int, Channel]] = {"run": {}, "judge": {}}  # sandboxes not known to be gone

    # -- what the review compares with
    def _similarity(self) -> Similarity:
        from ncbook.exercises import EXERCISES

        functions = {p.exercise: p.function for _, p in self.parts}
        md = ROOT / "book" / f"{self.manifest['chapter']}.md"
        sols = chapter_solutions(md) if md.exists() else {}
        published = {p.exercise: sols[q.label].code for q, p in self.parts if q.label in sols}
        root = _edition.package_root()
        references = self.manifest.get("references")
        package = {}
        for exercise, owners in self.manifest.get("removed", {}).items():
            owners = [tuple(o) for o in owners]
            mine = references.get(exercise, []) if references is not None else \
                sorted(_edition.reference_owners(EXERCISES[exercise]))  # a build from before they were listed
            items = []
            for module, qual in owners + [tuple(o) for o in mine]:
                try:
                    items.append((_edition.public_name(module, qual), _edition._source_of((module, qual), root)))
                except (StopIteration, OSError, SyntaxError):
                    continue
            package[exercise] = items
        return Similarity(functions, published, package)

    # -- the two sandboxes
    @contextlib.contextmanager
    def _sandbox(self, kind: str, runner: Path, package: Path, max_bytes: int):
        """A ``kind`` ("run" or "judge") sandbox's :class:`Channel`, closed (its processes ended) on exit.

        Raises
        ------
        SandboxOverlap
            A sandbox of the other kind is alive (or could not be shown to have ended).
        """
        other = "judge" if kind == "run" else "run"
        with self._lock:
            if self._live[other]:
                raise SandboxOverlap(f"a {kind} sandbox may not start while a {other} sandbox is alive")
            channel, scratch = self._start(runner, package, max_bytes)
            self._live[kind][id(channel)] = channel
        try:
            yield channel
        finally:
            try:
                channel.reached = channel.close()
            finally:
                if scratch:
                    shutil.rmtree(scratch, ignore_errors=True)
                with self._lock:
                    cage = getattr(channel, "cage", None)
                    if cage is None or cage.ended:
                        self._live[kind].pop(id(channel), None)

    def end_runs(self, wait: float = 60.0) -> None:
        """Make sure no run sandbox is left (each one's cgroup empty and removed): retries the close of any that
        was not, for ``wait`` seconds.

        Raises
        ------
        SystemExit
            A run sandbox's processes could not be ended: judging them now would let it talk to the judges.
        """
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                left = list(self._live["run"].values())
            if not left:
                return
            for channel in left:
                if getattr(channel, "cage", None) is None or channel.cage.close():
                    with self._lock:
                        self._live["run"].pop(id(channel), None)
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(left)} run sandbox(es) could not be ended (their cgroup still holds processes);"
                                 " no submission is judged while one is alive. Find and end them, then grade again.")
            time.sleep(1)

    def _start(self, runner: Path, package: Path, max_bytes: int) -> tuple[Channel, str | None]:
        if self.sandbox:
            cmd = sandbox_command(self.limits, profile=self.profile, package=package, runner=runner, hide=self.hide)
            cmd, cage = self.conf.wrap(cmd, self.limits)
            return Channel(cmd, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, cage=cage,
                           max_bytes=max_bytes, max_line=max_bytes), None
        scratch = tempfile.mkdtemp(prefix="ncbook-grade-")
        env = {**sandbox_env(self.profile, home=scratch), "TMPDIR": scratch, "PYTHONPATH": str(Path(package).parent)}
        return Channel([sys.executable, str(runner)], env=env, cwd=scratch, max_bytes=max_bytes,
                       max_line=max_bytes), scratch

    def _job_limits(self) -> dict:
        rlimits = self.conf is None or self.conf.kind == "rlimits"
        return {"memory": self.limits.memory, "processes": self.limits.processes, "rlimits": rlimits,
                "file_size": self.limits.folder}

    def run(self, nb) -> tuple[dict | None, list[str], float]:
        """The whole notebook in a run sandbox (the full package): (executed notebook, problems, seconds)."""
        lim = self.limits
        start = time.monotonic()
        cap = 2 * lim.notebook_bytes + (4 << 20)
        problems, notebook, done, heard = [], None, False, False
        with self._sandbox("run", RUNNER, package_dir(), cap) as channel:
            channel.send({"notebook": nb, "filename": self.manifest["notebook"], "cell_timeout": lim.cell_timeout,
                          "notebook_timeout": lim.notebook_timeout, "notebook_bytes": lim.notebook_bytes,
                          **self._job_limits()})
            channel.close_input()
            deadline = start + lim.run_wall()
            while True:
                event = channel.next(deadline - time.monotonic())
                kind = event.get("event") if event else None
                heard = heard or kind in ("notebook", "done")
                if event is None:
                    problems.append(f"the run was stopped at its time limit ({lim.run_wall()} s)")
                    break
                if kind == "notebook" and notebook is None and isinstance(event.get("notebook"), dict):
                    notebook = event["notebook"]
                elif kind == "done":
                    done = True
                    problems += run_sentences(event.get("codes"), cells=len(nb.cells), memory_mib=lim.memory >> 20)
                    break
                elif kind == "overflow":
                    problems.append(f"the run wrote more than {cap >> 20} MiB: its executed notebook is not kept")
                    notebook = None
                    break
                elif kind in ("eof", "unreadable"):
                    break
        reached = channel.reached
        problems += reached
        if not done and not reached and not any("time limit" in p for p in problems):
            tail = channel.last_error_line() if not heard else ""  # before any cell ran: bubblewrap's own words
            tail = re.sub(r"[^A-Za-z0-9 .,:;_/()'-]", " ", tail)[:160]
            problems.append(f"the run ended early (exit {channel.proc.returncode}{': ' + tail if tail else ''})")
        return notebook, problems, time.monotonic() - start

    def judge(self, nb, key: str, *, hidden: bool = True) -> tuple[dict[str, Judged], list[str], float]:
        """The graded functions in fresh judge sandboxes (student editions), one per group of questions:
        (exercise -> :class:`Judged`, problems, seconds). :meth:`judge_all` also says where each graded
        function's code was written."""
        result = self.judge_all(nb, key, hidden=hidden)
        return result.judged, result.problems, result.seconds

    def judge_all(self, nb, key: str, *, hidden: bool = True) -> JudgeResult:
        """:meth:`judge`, as a :class:`JudgeResult`."""
        start = time.monotonic()
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        positions = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        results, problems, bound = {}, [], {}
        for exercises, package in self.groups:
            parts = [p for _, p in self.parts if p.exercise in exercises]
            got, notes, where = self._judge_group(sources, positions, parts, package, key, hidden)
            results.update(got)
            problems += notes
            bound.update(where)
        return JudgeResult(results, list(dict.fromkeys(problems)), time.monotonic() - start, bound)

    def _outcomes(self, event: dict, stage: str, n: int, part: Part) -> tuple[list, str | None]:
        """A stage's outcomes of one part, as the grader writes them: values and error kinds from the sandbox,
        every sentence from :func:`grading.codes.outcome_sentence`; (outcomes, a problem or None)."""
        from ncbook.exercises import EXERCISES
        from ncbook.exercises._harvest import Outcome, unpack_outcomes

        function = part.function
        say = functools.partial(outcome_sentence, function=function, params=EXERCISES[part.exercise].params,
                                harvest_timeout=self.limits.harvest_timeout)
        if "npz" in event:
            try:
                outcomes = unpack_outcomes(base64.b64decode(event["npz"], validate=True))
            except Exception:  # noqa: BLE001 - a malformed file from the sandbox: nothing earned
                outcomes = []
            if len(outcomes) != n:
                return [Outcome(error="missing", detail="no value came back (the results do not match the cases).")] \
                    * n, f"{function}: its {stage} results were malformed"
            if stage == "hidden":  # numbers and error kinds only
                return [Outcome(value=o.value, error=o.error) for o in outcomes], None
            return [Outcome(value=o.value) if o.error is None else Outcome(error=o.error, detail=say(o.error, o.detail))
                    for o in outcomes], None
        error = event.get("error")
        if error == "timeout":
            return [Outcome(error="timeout", detail=say("timeout", ""))] * n, \
                f"{function}: its {stage} cases ran past the time limit ({self.limits.harvest_timeout} s)"
        why = {"no_results": f"its results could not be packed ({exception_name(event.get('exception'))})",
               "overflow": "the judge wrote more than the grader reads", "eof": "the judge ended",
               "unreadable": "the judge wrote something unreadable",
               "order": "the judge answered out of order"}.get(error if isinstance(error, str) else "", "no results")
        return [Outcome(error="missing", detail=f"no value came back ({why}).")] * n, \
            f"{function}: no results on its {stage} cases ({why})"

    def _judge_group(self, sources: list[str], positions: list[int], parts: list[Part], package: Path, key: str,
                     hidden: bool):
        from ncbook.exercises import EXERCISES
        from ncbook.exercises._harvest import Outcome

        needed = needed_cells(sources, [p.function for p in parts])
        cells = [sources[i] for i in needed]
        cases = {("public", i): self.public[p.exercise] for i, p in enumerate(parts)}
        if hidden:
            cases.update({("hidden", i): EXERCISES[p.exercise].hidden_cases(self.secret, key)
                          for i, p in enumerate(parts)})
        pending = [s for s in (("public", i) for i in range(len(parts)))] + \
                  ([("hidden", i) for i in range(len(parts))] if hidden else [])
        out: dict = {}
        notes: list[str] = []
        where: dict = {}

        def give_up(why: str, kind: str = "missing") -> None:
            for stage, i in pending:
                out[(stage, i)] = [Outcome(error=kind, detail=why)] * len(cases[(stage, i)])
            pending.clear()

        for _ in range(3):
            if not pending:
                break
            channel = None
            try:
                with self._sandbox("judge", JUDGE, package, 64 << 20) as channel:
                    self._judge_in(channel, cells, needed, positions, parts, cases, pending, out, notes, where,
                                   give_up)
            finally:
                if channel is not None:
                    notes += getattr(channel, "reached", [])
        give_up("not judged: the judge stopped three times.")
        return ({p.exercise: Judged(out[("public", i)], out.get(("hidden", i), []), cases.get(("hidden", i), []))
                 for i, p in enumerate(parts)}, list(dict.fromkeys(notes)), where)

    def _judge_in(self, channel, cells, needed, positions, parts, cases, pending, out, notes, where, give_up):
        """One judge sandbox's conversation: the cells, then the public stage, then the hidden stage."""
        from ncbook.exercises._harvest import pack_cases

        lim = self.limits
        channel.send({"cells": cells, "functions": [p.function for p in parts],
                      "cell_timeout": lim.cell_timeout, "cells_timeout": lim.notebook_timeout,
                      **self._job_limits()})
        event = channel.next(lim.notebook_timeout + 120)
        if not event or event.get("event") != "ready":
            why = "the cells the graded functions need did not finish" + \
                (f" within {lim.notebook_timeout} s" if event is None else "")
            notes.append(why)
            give_up(why + ".", "timeout" if event is None else "missing")
            return
        notes += judge_sentences(event.get("codes"), [positions[i] for i in needed])
        for name, (cell, line, code_name) in bound_reports(event.get("bound"), [p.function for p in parts],
                                                           len(cells)).items():
            where[name] = (needed[cell] if cell is not None else None, line, code_name)
        broken = False
        for stage in ("public", "hidden"):
            batch = [i for s, i in pending if s == stage]
            if not batch:
                continue
            items = [{"index": i, "exercise": parts[i].exercise, "function": parts[i].function,
                      "forbid": self.manifest.get("forbid_external", {}).get(parts[i].exercise, []),
                      "cases": base64.b64encode(pack_cases(cases[(stage, i)])).decode(),
                      "timeout": lim.harvest_timeout} for i in batch]
            channel.send({"stage": stage, "items": items})
            for i in batch:
                event = channel.next(lim.harvest_timeout + 30)
                n = len(cases[(stage, i)])
                if event and event.get("event") == "outcomes" and event.get("index") == i:
                    out[(stage, i)], note = self._outcomes(event, stage, n, parts[i])
                    broken = note is not None and "time limit" in note
                elif event is None:
                    out[(stage, i)], note = self._outcomes({"error": "timeout"}, stage, n, parts[i])
                    broken = True
                else:
                    kind = event.get("event")
                    out[(stage, i)], note = self._outcomes(
                        {"error": kind if kind in ("overflow", "eof", "unreadable") else "order"}, stage, n,
                        parts[i])
                    broken = True
                pending.remove((stage, i))
                if note:
                    notes.append(note)
                if broken:
                    break
            if broken:
                break
            channel.next(30)  # stage-done
        if not broken:
            channel.send({"stage": "end"})

    # -- one entry
    def columns(self) -> list[str]:
        auto = [q.label for q in self.questions if q.auto]
        written = [f"{q.label} written" for q in self.questions if q.written]
        return ["id", "student", "student_id", "lms_id", "submission", *auto, *written, "autograded", "written",
                "total", "possible", "seconds", "error", "review"]

    def auto_possible(self) -> Decimal:
        return sum((self.points.part(q.label, p.function, "public") + self.points.part(q.label, p.function, "hidden")
                    for q, p in self.parts), Decimal(0))

    def written_possible(self) -> Decimal:
        return sum((self.points.written(q.label) for q in self.questions if q.written), Decimal(0))

    def identify(self, entry: Entry, nb) -> tuple[dict, str, list[str]]:
        """(identity columns, the key of this student's hidden cases, review notes)."""
        stated = student_identity(nb) if nb is not None else None
        stem = entry.name[:-6] if entry.name.lower().endswith(".ipynb") else entry.name
        notes = []
        if self.roster is not None:
            student, how, said = self.roster.identify(entry.name, stated)
            notes += said
            if student is not None:
                return ({"student": _clean(student.name, 100), "student_id": _clean(student.student_id, 60),
                         "lms_id": _clean(student.lms_id, 40)}, f"id:{student.student_id}", notes)
            if not said:
                notes.append("not in the roster (matched by neither an LMS id in the file name nor the STUDENT cell)")
        name = stated or _clean(stem, 100)
        return {"student": name, "student_id": "", "lms_id": ""}, (f"stated:{' '.join(stated.split()).casefold()}"
                                                                    if stated else f"file:{entry.name}"), notes

    def prepare(self, entry: Entry) -> Prepared:
        """Read an entry (never run): its notebook or why not, identity, hidden-case key, static review, answers."""
        nb, problems, answers, review = None, [], {}, []
        try:
            nb = parse_notebook(read_bytes(entry))
        except NotebookError as exc:
            problems.append(str(exc))
        identity, key, notes = self.identify(entry, nb)
        review += notes
        if nb is not None:
            answers = written_answers(nb, self.handed, self.questions)
            review += review_flags(nb, self.handed)
        return Prepared(entry, nb, problems, identity, key, review, answers)

    def _cached(self, kind: str, digest: str, work):
        """``work()`` once per ``(kind, digest)``: identical notebooks (a resubmitted file, one file under two
        names) are run and judged once; a second caller waits for the first and gets its result (seconds 0)."""
        with self._lock:
            slot = self._done.get((kind, digest))
            mine = slot is None
            if mine:
                slot = self._done[(kind, digest)] = {"ready": threading.Event()}
        if not mine:
            slot["ready"].wait()
            if "result" not in slot:  # the first one failed: do it here
                return self._cached(kind, digest, work)
            return slot["result"], True
        try:
            slot["result"] = work()
        except BaseException:
            with self._lock:
                del self._done[(kind, digest)]
            raise
        finally:
            slot["ready"].set()
        return slot["result"], False

    def run_phase(self, prep: Prepared) -> Prepared:
        """The run sandbox of a prepared notebook (nothing for an unreadable entry)."""
        if prep.nb is not None:
            digest = hashlib.sha256(json.dumps([(c.cell_type, c.source) for c in prep.nb.cells]).encode()).hexdigest()
            (notebook, problems, seconds), again = self._cached("run", digest, lambda: self.run(prep.nb))
            prep.notebook, prep.run_problems, prep.run_seconds = notebook, problems, 0.0 if again else seconds
        return prep

    def judge_phase(self, prep: Prepared) -> Prepared:
        """The judge sandboxes of a prepared notebook (nothing for an unreadable entry)."""
        if prep.nb is not None:
            digest = hashlib.sha256(json.dumps([prep.key, [(c.cell_type, c.source) for c in prep.nb.cells]]).encode()
                                    ).hexdigest()
            result, again = self._cached("judge", digest, lambda: self.judge_all(prep.nb, prep.key))
            prep.judge = JudgeResult(result.judged, result.problems, 0.0 if again else result.seconds, result.bound)
        return prep

    def score(self, prep: Prepared) -> Graded:
        """The row and feedback record of a prepared entry after its sandboxes."""
        from ncbook.exercises import EXERCISES

        p = self.points.precision
        entry = prep.entry
        row = {c: "" for c in self.columns()}
        row.update(prep.identity, id=entry.slug, submission=entry.name)
        judged = prep.judge.judged if prep.judge is not None else {}
        problems = list(prep.problems) + prep.run_problems + (prep.judge.problems if prep.judge is not None else [])
        scores: dict[str, Decimal] = {q.label: Decimal(0) for q in self.questions if q.auto}
        record_questions = []
        for q in self.questions:
            parts_record = []
            for part in q.auto:
                spec = EXERCISES[part.exercise]
                pub_pts, hid_pts = (self.points.part(q.label, part.function, k) for k in ("public", "hidden"))
                public_cases = self.public[part.exercise]
                got = judged.get(part.exercise)
                passed, message, hidden_passed, hidden_total = False, "not graded: " + "; ".join(problems), 0, 0
                if got is not None:
                    try:
                        check = spec.judge(public_cases, got.public)
                        verdicts = spec.verdicts(got.hidden_cases, got.hidden)
                    except Exception as exc:  # noqa: BLE001 - a bug of the grader, named, never a crash of the batch
                        problems.append(f"{q.label}: the grader could not judge {part.function} "
                                        f"({type(exc).__name__}: {str(exc)[:120]})")
                    else:
                        passed, message = check.passed, check.message
                        hidden_total = len(verdicts)
                        hidden_passed = sum(v is None for v in verdicts)
                earned_pub = pub_pts if passed else Decimal(0)
                earned_hid = hid_pts if hidden_total and hidden_passed == hidden_total else Decimal(0)
                scores[q.label] += earned_pub + earned_hid
                parts_record.append({"function": part.function, "public_passed": passed, "public": str(earned_pub),
                                     "public_possible": str(pub_pts), "message": str(message)[:4000],
                                     "hidden_passed": hidden_passed, "hidden_total": hidden_total,
                                     "hidden": str(earned_hid), "hidden_possible": str(hid_pts)})
            auto_possible = sum((self.points.part(q.label, pt.function, k) for pt in q.auto
                                 for k in ("public", "hidden")), Decimal(0))
            record_questions.append({"label": q.label, "title": q.title, "parts": parts_record,
                                     "auto": str(scores.get(q.label, Decimal(0))) if q.auto else None,
                                     "auto_possible": str(auto_possible) if q.auto else None,
                                     "written": None, "written_possible": str(self.points.written(q.label))
                                     if q.written else None})
        autograded = sum(scores.values(), Decimal(0))
        possible = self.auto_possible() + self.written_possible()
        if autograded == self.auto_possible():  # a needed cell that failed in the judge cost nothing: not a problem
            problems = [x for x in problems if not x.startswith("a needed cell")]
        row.update({label: fmt(v, p) for label, v in scores.items()})
        seconds = prep.run_seconds + (prep.judge.seconds if prep.judge is not None else 0.0)
        row.update(autograded=fmt(autograded, p), written="", total=fmt(autograded, p), possible=fmt(possible, p),
                   seconds=f"{seconds:.1f}")
        problems = list(dict.fromkeys(problems))
        if problems:
            row["error"] = _clean(f"{entry.name}: " + "; ".join(problems), 600)
        row["review"] = _clean("; ".join(dict.fromkeys(prep.review)), REVIEW_CHARS)
        record = {"student": row["student"], "submission": entry.name, "assignment": self.manifest["chapter"],
                  "precision": p, "questions": record_questions, "total": str(autograded), "possible": str(possible),
                  "written_done": not any(q.written for q in self.questions), "problems": problems}
        code = [c.source for c in prep.nb.cells if c.cell_type == "code"] if prep.nb is not None else []
        return Graded(row, record, prep.answers, prep.notebook, code, prep.judge.bound if prep.judge else {},
                      prep.key, prep.run_seconds, prep.judge.seconds if prep.judge is not None else 0.0)

    def grade_entry(self, entry: Entry) -> Graded:
        """One entry of the folder, whatever it is, on its own: read, run, judged, scored and compared with the
        published solutions and the package (a batch compares classmates too: :func:`grade`). A row with an
        ``error`` naming the file and the cause for anything that is not a gradable notebook."""
        graded = self.score(self.judge_phase(self.run_phase(self.prepare(entry))))
        add_review(graded, self.similarity.review({entry.name: (graded.code, graded.bound)})[entry.name])
        return graded

    def calibrate(self) -> Calibration:
        """Grade the build's solutions notebook (it must get full marks: else SystemExit with the reason). Its run
        sandbox has ended before its judge starts, and both before any submission's."""
        path = self.build_dir / "solutions" / self.manifest["notebook"]
        raw = os.fsencode(path.name)
        graded = self.grade_entry(Entry(path.name, raw, path, "file", slug(raw)))
        short = [f"{q['label']} ({part['function']}): {'public check failed: ' + part['message'][:300] if not part['public_passed'] else ''}"
                 f"{'' if part['hidden_passed'] == part['hidden_total'] and part['hidden_total'] else ' hidden cases ' + str(part['hidden_passed']) + ' of ' + str(part['hidden_total'])}"
                 for q in graded.record["questions"] for part in q["parts"]
                 if not part["public_passed"] or part["hidden_passed"] != part["hidden_total"] or not part["hidden_total"]]
        if short or graded.row["autograded"] != fmt(self.auto_possible(), self.points.precision):
            raise SystemExit("the assignment's own solutions do not get full marks here, so grading stops (a broken "
                             "environment, a stale build or too tight a limit):\n  " + "\n  ".join(short) +
                             (f"\n  problems: {graded.row['error']}" if graded.row["error"] else ""))
        return Calibration(graded.run_seconds + graded.judge_seconds, graded.run_seconds, graded.judge_seconds)


def add_review(graded: Graded, flags: list[str]) -> None:
    """Put more review flags in a graded entry's row (after its own)."""
    if flags:
        graded.row["review"] = _clean("; ".join(dict.fromkeys(filter(None, [graded.row["review"], *flags]))),
                                      REVIEW_CHARS)


def limits_from(calibration: Calibration, base: Limits) -> Limits:
    """Default limits from the solutions' time: four times their run sandbox plus 30 s (at least 60 s) for a
    notebook's cells, twice their whole judge sandbox plus 10 s (at least 20 s) for one question's stage; never
    above ``base``. A correct notebook several times slower than the solutions still fits; one that sleeps
    under every limit holds its job slot minutes, not the 20 of the fixed defaults."""
    from dataclasses import replace

    notebook = int(min(base.notebook_timeout, max(60, math.ceil(4 * calibration.run + 30))))
    harvest = int(min(base.harvest_timeout, max(20, math.ceil(2 * calibration.judge + 10))))
    return replace(base, notebook_timeout=notebook, cell_timeout=min(base.cell_timeout, notebook),
                   harvest_timeout=harvest)


# --------------------------------------------------------------------------- a batch
def _create(path: Path, data: bytes) -> None:
    """Write a new file; never replace one (``O_EXCL``) nor follow a link (``O_NOFOLLOW``).

    Raises
    ------
    FileExistsError
        ``path`` exists: another entry's output (which :func:`entries` makes impossible) or an earlier batch's.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) |
                 getattr(os, "O_CLOEXEC", 0), 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_executed(out: Path, key: str, notebook: dict) -> str | None:
    """Write an entry's executed notebook; None, or why it was not kept."""
    try:
        text = nbformat.writes(nbformat.from_dict(notebook))
    except Exception:  # noqa: BLE001 - a notebook the runner sent back malformed: not kept, named
        return "the executed notebook could not be written"
    _create(out / "executed" / f"{key}.ipynb", text.encode("utf-8"))
    return None


def _write_feedback(out: Path, graded: Graded) -> None:
    key = graded.row["id"]
    _create(out / "feedback" / f"{key}.json", json.dumps(graded.record, indent=1).encode("utf-8"))
    _create(out / "feedback" / f"{key}.html", feedback_html(graded.record).encode("utf-8"))


def _add_error(row: dict, text: str) -> None:
    row["error"] = _clean((row["error"] + "; " if row["error"] else f"{row['submission']}: ") + text, 600)


def _failed(grader: Grader, entry: Entry, exc: BaseException) -> Graded:
    """The row of an entry whose grading raised: zero points, the file and the cause in ``error``."""
    row = {c: "" for c in grader.columns()}
    p = grader.points.precision
    row.update(id=entry.slug, student=_clean(entry.name, 100), submission=entry.name, autograded=fmt(Decimal(0), p),
               total=fmt(Decimal(0), p), possible=fmt(grader.auto_possible() + grader.written_possible(), p),
               seconds="0.0", error=_clean(f"{entry.name}: could not be graded ({type(exc).__name__}: {exc})", 600))
    row.update({q.label: fmt(Decimal(0), p) for q in grader.questions if q.auto})
    record = {"student": row["student"], "submission": entry.name, "assignment": grader.manifest["chapter"],
              "precision": p, "questions": [], "total": "0", "possible": row["possible"], "written_done": False,
              "problems": [row["error"]]}
    return Graded(row, record, {}, None)


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its own cgroup's limit where that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limits = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                limits.append(Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.max")
            elif "memory" in controllers.split(","):
                limits.append(Path("/sys/fs/cgroup/memory") / path.lstrip("/") / "memory.limit_in_bytes")
    except (OSError, ValueError):
        pass
    for path in limits:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def fit_jobs(jobs: int, memory: int, available: int | None = None, log=print) -> int:
    """``jobs`` lowered so that ``jobs`` sandboxes at their memory limit fit in 90% of the machine's memory.

    Raises
    ------
    SystemExit
        Not even one sandbox fits: ``--memory`` is more than the machine has.
    """
    available = machine_memory() if available is None else available
    room = int(0.9 * available)
    if memory > room:
        raise SystemExit(f"--memory {memory >> 20} MiB a sandbox is more than this machine can give ({room >> 20} MiB, "
                         f"90% of {available >> 20} MiB): lower --memory")
    fit = max(1, room // memory)
    if jobs > fit:
        log(f"--jobs {jobs} lowered to {fit}: {jobs} sandboxes of {memory >> 20} MiB would need "
            f"{(jobs * memory) >> 20} MiB, and this machine has {available >> 20} MiB (lower --memory to run more "
            "at once)")
        return fit
    return jobs


def _results_folder(out: Path) -> None:
    """Refuse a results folder that holds an earlier batch's files (every output is created, never replaced)."""
    held = [p for p in (out / "scores.csv", out / "grading.json") if p.exists()] + \
        [p for sub in ("feedback", "executed", "answers") if (out / sub).is_dir() for p in (out / sub).iterdir()]
    if held:
        raise SystemExit(f"the results folder {out} already holds grades ({held[0].name}, ...): grade into a new folder "
                         "(no file of an earlier batch is ever overwritten or mixed with this one's)")


def grade(chapter: str, submissions: Path, out: Path, *, secret: bytes, build_dir: Path | None = None,
          limits: Limits | None = None, jobs: int | None = None, sandbox: bool = True, profile: str | None = None,
          roster: Roster | None = None, points: Points | None = None, calibrate: bool = True,
          fixed_timeouts: bool | None = None, hide: tuple[str, ...] = (), log=print) -> list[dict]:
    """Grade every entry of ``submissions``; write ``out/scores.csv`` (one row per entry, whatever it is), the
    feedback pages, the executed notebooks, the written answers and ``grading.json``. Returns the rows, sorted
    by entry name.

    In phases: the solutions first (the calibration: its run, then its judge), then every notebook's run
    sandbox (``jobs`` at a time), then, once every run sandbox has ended, every notebook's judge sandboxes
    (``jobs`` at a time): no run sandbox, which holds the full package, is ever alive beside a judge sandbox,
    which receives the hidden cases. Then the review of the whole class (duplicate identities, submissions
    alike, within a time budget).

    The time limits are ``limits``' when ``fixed_timeouts`` (default: when ``limits`` is given), else set from
    the calibration (the solutions' time, :func:`limits_from`). ``jobs`` is lowered to what the machine's
    memory holds (:func:`fit_jobs`). ``hide``: more paths no sandbox may see (the secret's file), wherever they
    are. ``out`` must not hold an earlier batch's results.
    """
    import ncbook

    stem = _chapter_path(chapter).stem
    build_dir = Path(build_dir or ROOT / "assignments" / "build" / stem).resolve()
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    if out == submissions or out.is_relative_to(submissions):
        raise SystemExit(f"the results folder {out} must not be inside the submissions folder {submissions}")
    _results_folder(out)
    given = limits is not None if fixed_timeouts is None else fixed_timeouts
    limits = limits or Limits()
    if sandbox:
        check_sandbox(limits, profile)
    else:
        log("WARNING: --no-sandbox: every submission runs with your rights; it can read and write your files, "
            "reach the network and leave processes behind. Grade only notebooks you trust this way.")
    grader = Grader(build_dir, secret, limits, sandbox=sandbox, profile=profile, points=points, roster=roster,
                    hide=(str(submissions), str(out), *hide))
    listing = entries(submissions)
    notebooks = [e for e in listing if refusal(e) is None]
    jobs = fit_jobs(max(1, jobs or ncbook.usable_cores()), limits.memory, log=log)
    digest = hashlib.sha256((build_dir / "assignment.json").read_bytes()).hexdigest()[:12]
    log(f"assignment {build_dir / 'assignment.json'} (sha256 {digest}; chapter {grader.manifest['chapter']}, "
        f"{len(grader.parts)} autograded parts in {len(grader.groups)} judge sandbox(es) a submission)")
    log(grader.conf.note if grader.conf is not None else "limits: rlimits only (no sandbox)")
    calibration = None
    if calibrate:
        calibration = grader.calibrate()
        if not given:
            grader.limits = limits_from(calibration, limits)
        log(f"calibration: the solutions got full marks in {calibration.seconds:.0f} s (run {calibration.run:.0f} s, "
            f"judge {calibration.judge:.0f} s); limits: {grader.limits.notebook_timeout} s for a notebook's cells, "
            f"{grader.limits.harvest_timeout} s for a question's cases, {grader.limits.memory >> 20} MiB, "
            f"{grader.limits.processes} tasks and {grader.limits.cpus:g} CPU a sandbox")
    rounds = math.ceil(len(notebooks) / jobs) if notebooks else 0
    bound = rounds * grader.limits.wall(len(grader.parts))
    expected = f"about {math.ceil(rounds * calibration.seconds)} s expected, " if calibration else ""
    log(f"{len(listing)} entries ({len(notebooks)} notebooks), {jobs} at a time: {expected}at most {bound} s "
        "(every notebook's run first, then every notebook's judge)")
    for sub in ("feedback", "executed", "answers"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    columns = grader.columns()
    results: list[Graded] = []
    lock = threading.Lock()
    progress = out / "scores.csv"
    write_csv(progress, columns, [])

    def finish(graded: Graded) -> Graded:
        try:
            _write_feedback(out, graded)
        except Exception as exc:  # noqa: BLE001
            _add_error(graded.row, f"its feedback could not be written ({type(exc).__name__})")
        with lock:
            results.append(graded)
            with open(progress, "a", newline="", encoding="utf-8") as f:  # a row per finished entry
                import csv

                csv.DictWriter(f, fieldnames=columns, extrasaction="ignore").writerow(csv_safe_row(graded.row))
            log(f"  {graded.row['submission']}: {graded.row['total']} of {graded.row['possible']}"
                + (f"  [{graded.row['error'][:160]}]" if graded.row["error"] else ""))
        return graded

    failed: dict[str, BaseException] = {}
    prepared: dict[str, Prepared] = {}

    def prepare_and_run(entry: Entry) -> None:
        try:
            prep = grader.run_phase(grader.prepare(entry))
            if prep.notebook is not None:
                why = _write_executed(out, entry.slug, prep.notebook)
                if why:
                    prep.run_problems.append(why)
            prep.notebook = None  # on disk: not held through the judge phase
            prepared[entry.slug] = prep
        except SandboxOverlap:
            raise
        except Exception as exc:  # noqa: BLE001 - one file never breaks the batch
            failed[entry.slug] = exc

    def judge_and_score(entry: Entry) -> None:
        if entry.slug in failed:
            finish(_failed(grader, entry, failed[entry.slug]))
            return
        try:
            graded = grader.score(grader.judge_phase(prepared[entry.slug]))
        except SandboxOverlap:
            raise
        except Exception as exc:  # noqa: BLE001 - one file never breaks the batch
            graded = _failed(grader, entry, exc)
        finish(graded)

    refused = [e for e in listing if refusal(e) is not None]
    for entry in refused:
        finish(grader.score(grader.prepare(entry)))
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:  # phase 1: every run sandbox
        list(pool.map(prepare_and_run, notebooks))
    grader.end_runs()
    log(f"  every notebook ran ({time.monotonic() - start:.0f} s); judging")
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:  # phase 2: every judge sandbox, no run alive
        list(pool.map(judge_and_score, notebooks))
    results.sort(key=lambda g: (g.row["submission"], g.row["id"]))
    # signals that need the whole class: duplicate identities, submissions alike
    by_identity: dict[str, list[Graded]] = {}
    for g in results:
        if not g.identity.startswith("file:"):
            by_identity.setdefault(g.identity, []).append(g)
    for same in by_identity.values():
        if len(same) > 1:
            for g in same:
                others = ", ".join(o.row["submission"] for o in same if o is not g)
                g.row["review"] = _clean("; ".join(filter(None, [f"duplicate identity: also {others}", g.row["review"]])),
                                         REVIEW_CHARS)
    review_start = time.monotonic()
    flags = grader.similarity.review({g.row["submission"]: (g.code, g.bound) for g in results if g.code})
    for g in results:
        add_review(g, flags.get(g.row["submission"], []))
    log(f"  similarity review: {len(flags)} notebooks in {time.monotonic() - review_start:.1f} s")
    rows = [g.row for g in results]
    write_csv(out / "scores.csv", columns, rows)
    written = [q for q in grader.questions if q.written]
    for q in written:
        entries_ = [{"id": g.row["id"], "student": g.row["student"], "submission": g.row["submission"],
                     "question": q.label, "answer": g.answers.get(q.label, ""), "points": ""} for g in results]
        write_csv(out / "answers" / f"{q.label}.csv", ["id", "student", "submission", "question", "answer", "points"],
                  entries_)
    p = grader.points.precision
    info = {"assignment": str(build_dir / "assignment.json"), "sha256": digest, "chapter": grader.manifest["chapter"],
            "columns": columns, "written": [q.label for q in written], "points": grader.points.as_dict(),
            "auto_possible": fmt(grader.auto_possible(), p), "written_possible": fmt(grader.written_possible(), p),
            "possible": fmt(grader.auto_possible() + grader.written_possible(), p),
            "limits": grader.limits.__dict__, "confinement": grader.conf.kind if grader.conf else "none",
            "cpu_capped": bool(grader.conf and grader.conf.cpu), "jobs": jobs,
            "calibration": calibration.__dict__ if calibration else None}
    (out / "grading.json").write_text(json.dumps(info, indent=1) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("secret", help="write a new random secret (the hidden cases are drawn from it)")
    s.add_argument("file", type=Path, help="where to write it (outside the course repository; keep it private)")
    b = sub.add_parser("build", help="build the student notebook, its solutions, the student editions and the manifest")
    b.add_argument("chapter", help="chapter stem (e.g. seli) or path to its .md")
    b.add_argument("--out", type=Path, default=None, help="output folder (default: assignments/build/<chapter>)")
    b.add_argument("--exercises-only", action="store_true", help="keep only the exercises and the code they need")
    b.add_argument("--book-url", default=None, help="the published book's address (default: from _config.yml)")
    g = sub.add_parser("grade", help="grade a folder of submitted notebooks, each in its sandboxes")
    g.add_argument("chapter")
    g.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    g.add_argument("--secret", type=Path, required=True, help="the instructor's secret file (hidden cases)")
    g.add_argument("--out", type=Path, required=True, help="results folder")
    g.add_argument("--build", type=Path, default=None, help="the built assignment (default: assignments/build/<chapter>)")
    g.add_argument("--roster", type=Path, default=None, help="class list CSV: student_id, name, lms_id (email, login, "
                                                             "section optional)")
    g.add_argument("--points", type=Path, default=None, help="points file: lines `ex-seli-1.hidden = 3`, `precision = 1`")
    g.add_argument("--point", action="append", default=[], metavar="KEY=VALUE", help="one part's points (repeatable)")
    g.add_argument("--precision", type=int, default=0, help="decimals of the points (default 0: integers)")
    g.add_argument("--jobs", type=int, default=None, help="notebooks graded at once (default: the usable cores)")
    d = Limits()
    g.add_argument("--timeout", type=int, default=None, help="seconds for one notebook's cells (default: from the "
                                                             f"calibration, at most {d.notebook_timeout})")
    g.add_argument("--cell-timeout", type=int, default=None, help="seconds for one cell")
    g.add_argument("--harvest-timeout", type=int, default=None, help="seconds for one question's cases")
    g.add_argument("--memory", type=int, default=d.memory >> 20, help="MiB for all of a sandbox's processes")
    g.add_argument("--processes", type=int, default=d.processes, help="processes and threads a sandbox may have")
    g.add_argument("--cpus", type=float, default=d.cpus, help="CPUs' worth of time a sandbox's processes may use "
                                                               "together, where a CPU cgroup can be used (default 1)")
    g.add_argument("--profile", default=None, help="NCBOOK_PROFILE inside the sandbox (default: yours, else quick)")
    g.add_argument("--no-calibration", action="store_true", help="skip grading the solutions first")
    g.add_argument("--no-sandbox", action="store_true",
                   help="run submissions without bubblewrap, with your rights (only for notebooks you trust)")
    m = sub.add_parser("merge", help="add the written points of answers/*.csv to scores.csv and the feedback")
    m.add_argument("results", type=Path)
    m.add_argument("--keep", action="append", default=[], metavar="SUBMISSION",
                   help="for a student with several rows, the submission (file name or id) that counts (repeatable)")
    e = sub.add_parser("export", help="write a gradebook CSV (Canvas or Moodle) from scores.csv and a roster")
    e.add_argument("results", type=Path)
    e.add_argument("--roster", type=Path, required=True)
    e.add_argument("--format", choices=("canvas", "moodle"), required=True)
    e.add_argument("--name", default=None, help="the gradebook column (default: the chapter's name)")
    e.add_argument("--file", type=Path, default=None, help="where to write (default: <results>/export-<format>.csv)")
    e.add_argument("--keep", action="append", default=[], metavar="SUBMISSION",
                   help="for a student with several rows, the submission (file name or id) that counts (repeatable)")
    args = parser.parse_args(argv)
    if args.command == "secret":
        print(f"secret written to {write_secret(args.file)} (keep it private; the same secret gives the same "
              "hidden cases)")
        return 0
    if args.command == "build":
        out = build(args.chapter, args.out, exercises_only=args.exercises_only, url=args.book_url)
        print(f"student notebook: {out / 'student'}\nsolutions: {out / 'solutions'}\nassignment: "
              f"{out / 'assignment.json'}")
        return 0
    if args.command == "merge":
        merge(args.results, keep=args.keep)
        return 0
    if args.command == "export":
        info = json.loads((args.results / "grading.json").read_text())
        export(args.results, Roster.load(args.roster), args.format, assignment=args.name or info["chapter"],
               path=args.file, keep=args.keep)
        return 0
    stem = _chapter_path(args.chapter).stem
    build_dir = args.build or ROOT / "assignments" / "build" / stem
    _, questions = load_assignment(build_dir)
    points = Points.of(questions, precision=args.precision, file=args.points, overrides=args.point)
    timed = any(v is not None for v in (args.timeout, args.cell_timeout, args.harvest_timeout))
    if not 0.05 <= args.cpus <= 64:
        raise SystemExit(f"--cpus must be between 0.05 and 64; got {args.cpus}")
    limits = Limits(args.timeout or d.notebook_timeout, args.cell_timeout or d.cell_timeout,
                    args.harvest_timeout or d.harvest_timeout, args.memory << 20, args.processes, cpus=args.cpus)
    start = time.monotonic()
    rows = grade(args.chapter, args.submissions, args.out, secret=read_secret(args.secret), build_dir=build_dir,
                 limits=limits, jobs=args.jobs, sandbox=not args.no_sandbox, profile=args.profile,
                 roster=Roster.load(args.roster) if args.roster else None, points=points,
                 calibrate=not args.no_calibration, fixed_timeouts=timed, hide=(str(args.secret.resolve()),))
    print(f"graded {len(rows)} entries in {time.monotonic() - start:.0f} s -> {Path(args.out) / 'scores.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
