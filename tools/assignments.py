#!/usr/bin/env python3
"""Build and grade otter-grader assignments from a chapter's exercises.

::

    python3 tools/assignments.py build <chapter> [--out DIR] [--exercises-only]
    python3 tools/assignments.py grade <chapter> <folder-of-notebooks> [--out scores.csv]

``build`` turns the chapter's student notebook (the one generator of ``tools/student_notebooks.py``:
the same stubs, checks and answer prompts) into an otter-grader *master* notebook and runs
``otter assign`` on it. For each exercise of the chapter it writes one otter question:

* a coding exercise (a stub checked by ``ncbook.exercises.check_<name>``) is autograded: a public
  test ``check_<name>(f).assert_passed()`` and hidden tests from ``assignments/hidden/<chapter>.py``
  (other inputs, independent formulas; never shipped in the package or the student notebook);
* an exercise without a check (a written "why" answer, a small experiment) is marked
  ``manual: true`` for manual grading, with the chapter's solution as the instructor's answer.

The result, in ``DIR`` (default ``assignments/build/<chapter>``): ``student/<chapter>.ipynb`` to hand
out, ``autograder/<chapter>-autograder_*.zip`` (public and hidden tests), ``autograder/<chapter>.ipynb``
(the solutions), ``master/<chapter>.ipynb`` and ``assignment.json`` (questions, points, manual or not).
``--exercises-only`` keeps only the exercises and the earlier code cells they need (found by the
names they use): a short assignment that grades in seconds.

``grade`` runs every ``*.ipynb`` of a folder through the autograder with ``otter.api.grade_submission``
(locally, no Docker) and writes one CSV row per submission: one column per autograded question,
one empty column per manually graded question (for the instructor), then ``total`` and ``possible``
(autograded points).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import copy
import csv
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
HIDDEN_DIR = ROOT / "assignments" / "hidden"
DEFAULT_POINTS = {"public": 1, "hidden": 1, "manual": 2}

_CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(\s*(\w+)\s*\)")
_STUB_LABEL = re.compile(r'raise NotImplementedError\("exercise: ([^"]+)"\)')
_ANSWER = re.compile(r"\*\*Your answer \((?P<label>[^)]+)\)\.\*\* Write it here\.")
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


# --------------------------------------------------------------------------- hidden tests and points
def hidden_tests(stem: str, hidden_dir: Path = HIDDEN_DIR) -> tuple[dict[str, list[str]], dict]:
    """Hidden test sources by exercise label, and the optional ``POINTS`` of ``<hidden_dir>/<stem>.py``.

    A hidden test is a function ``<label in snake case>[_<suffix>](student_function)`` of that file;
    each becomes one hidden otter test: the file's imports, the function, and a call on the student's
    function.
    """
    path = hidden_dir / f"{stem}.py"
    if not path.exists():
        return {}, {}
    source = path.read_text()
    tree = ast.parse(source)
    imports = [ast.get_source_segment(source, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    tests: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("ex_"):
            tests.setdefault(node.name, [])
            tests[node.name] = ["\n".join(imports + [ast.get_source_segment(source, node)])]
    points = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "POINTS" for t in node.targets):
            points = ast.literal_eval(node.value)
    return tests, points


def _hidden_for(label: str, tests: dict[str, list[str]]) -> list[tuple[str, str]]:
    key = label.replace("-", "_")
    return [(name, src[0]) for name, src in sorted(tests.items()) if name == key or name.startswith(key + "__")]


# --------------------------------------------------------------------------- master notebook
def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _prompted_solution(stub: str, solution: str) -> str:
    """One master cell: otter keeps ``stub`` for the student and runs ``solution`` in the autograder."""
    quote = next((q for q in ("'''", '"""') if q not in stub), None)
    if quote is None:
        raise ValueError(f"a stub holds both kinds of triple quotes; cannot wrap it as an otter prompt:\n{stub}")
    return f"r{quote} # BEGIN PROMPT\n{stub}\n{quote}; # END PROMPT\n# BEGIN SOLUTION NO PROMPT\n{solution}\n# END SOLUTION"


@dataclass
class Question:
    name: str
    manual: bool
    points: float
    public_points: float = 0
    hidden_points: float = 0
    function: str | None = None
    check: str | None = None


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


def _question_config(q: Question, hidden: dict[str, list[str]]) -> dict:
    if q.manual:
        return {"name": q.name, "manual": True, "points": q.points}
    return {"name": q.name, "points": [q.public_points] + [q.hidden_points] * len(_hidden_for(q.name, hidden))}


def master_notebook(md_path: Path, *, exercises_only: bool = False, run_tests: bool = True,
                    hidden_dir: Path = HIDDEN_DIR) -> tuple[nbformat.NotebookNode, list[Question]]:
    """The otter-grader master notebook of a chapter, and its questions."""
    md_path = Path(md_path)
    stem = md_path.stem
    student = student_notebook(md_path)
    solutions = chapter_solutions(md_path)
    hidden, points = hidden_tests(stem, hidden_dir)
    cells = student.cells
    labels = list(dict.fromkeys(_meta(c)["exercise"] for c in cells if _meta(c).get("exercise")))
    if exercises_only:
        cells = _slice_exercises(cells, [s for lab in labels for s in solutions.get(lab, Solution()).code])

    questions: dict[str, Question] = {}
    for label in labels:
        checks = [c for c in cells if _meta(c) == {"exercise": label, "role": "check"}]
        call = _CHECK_CALL.search(checks[0].source) if checks else None
        tests = _hidden_for(label, hidden)
        pts = points.get(label, {})
        if call:
            q = Question(label, False, 0, pts.get("public", DEFAULT_POINTS["public"]),
                         pts.get("hidden", DEFAULT_POINTS["hidden"]), call.group(2), call.group(1))
            q.points = q.public_points + q.hidden_points * len(tests)
        else:
            q = Question(label, True, pts.get("manual", DEFAULT_POINTS["manual"]))
        questions[label] = q

    last = {lab: max(i for i, c in enumerate(cells) if _meta(c).get("exercise") == lab) for lab in labels}
    first = {lab: min(i for i, c in enumerate(cells) if _meta(c).get("exercise") == lab) for lab in labels}
    config = {"name": stem, "init_cell": True, "check_all_cell": False, "export_cell": False,
              "run_tests": run_tests, "solutions_pdf": False, "generate": {"pdf": False},
              "tests": {"files": False, "ok_format": True}, "show_question_points": True}
    out = [_raw("# ASSIGNMENT CONFIG\n" + json.dumps(config, indent=1))]
    used, answered, closed = {lab: 0 for lab in labels}, set(), set()
    prompts = {lab: first[lab] - 1 for lab in labels
               if first[lab] > 0 and cells[first[lab] - 1].cell_type == "markdown"
               and re.search(rf":label:\s*{re.escape(lab)}\b", cells[first[lab] - 1].source)}
    for i, cell in enumerate(cells):
        meta = _meta(cell)
        label = meta.get("exercise")
        opening = next((lab for lab, j in prompts.items() if j == i), None)
        if opening:
            out.append(_raw("# BEGIN QUESTION\n" + json.dumps(_question_config(questions[opening], hidden))))
        if label and i == first[label]:
            if label not in prompts:
                out.append(_raw("# BEGIN QUESTION\n" + json.dumps(_question_config(questions[label], hidden))))
            out += [_raw("# BEGIN PROMPT"), _raw("# END PROMPT"), _raw("# BEGIN SOLUTION")]
        if meta.get("role") == "stub" or (meta.get("role") == "answer" and cell.cell_type == "code"):
            # a stub, or the code cell left for an exercise whose solution defines no function
            sol = solutions.get(label, Solution()).code
            if used[label] >= len(sol):
                raise ValueError(f"{md_path.name}: exercise {label} has more stubs than solution code cells")
            out.append(nbformat.v4.new_code_cell(_prompted_solution(cell.source, sol[used[label]]), metadata=cell.metadata))
            used[label] += 1
        elif meta.get("role") == "answer":
            kept = copy.deepcopy(cell)
            kept.metadata.setdefault("tags", []).append("otter_include")
            out.append(kept)
            if label not in answered:  # the instructor's answer (removed from the student notebook) follows the prompt
                answered.add(label)
                out += [nbformat.v4.new_markdown_cell(text) for text in solutions.get(label, Solution()).markdown]
        elif meta.get("role") == "check":
            if label not in closed:  # the first check closes the solution; a second check stays in the question
                closed.add(label)
                out.append(_raw("# END SOLUTION"))
            out.append(cell)
        elif cell.cell_type == "markdown" and any(first[lab] < i < last[lab] for lab in labels):
            kept = copy.deepcopy(cell)  # inside an open solution block: keep it in the student notebook
            kept.metadata.setdefault("tags", []).append("otter_include")
            out.append(kept)
        else:
            out.append(cell)
        if label and i == last[label]:
            if label not in closed:
                closed.add(label)
                out.append(_raw("# END SOLUTION"))
            q = questions[label]
            if not q.manual:
                out += [_raw("# BEGIN TESTS"),
                        nbformat.v4.new_code_cell(f"from ncbook.exercises import {q.check}\n"
                                                  f"{q.check}({q.function}).assert_passed()")]
                for name, src in _hidden_for(label, hidden):
                    out.append(nbformat.v4.new_code_cell(f"# HIDDEN\n{src}\n{name}({q.function})"))
                out.append(_raw("# END TESTS"))
            out.append(_raw("# END QUESTION"))
    for label in labels:
        if used[label] != len(solutions.get(label, Solution()).code):
            raise ValueError(f"{md_path.name}: exercise {label} has {used[label]} stub cells but "
                             f"{len(solutions[label].code)} solution code cells")
    nb = nbformat.v4.new_notebook(cells=out, metadata=copy.deepcopy(student.metadata))
    return nb, list(questions.values())


# --------------------------------------------------------------------------- commands
def _chapter_path(chapter: str) -> Path:
    path = Path(chapter)
    if not path.suffix:
        path = ROOT / "book" / f"{chapter}.md"
    if not path.exists():
        raise SystemExit(f"no chapter {chapter!r}: expected a book/<stem>.md file, looked for {path}")
    return path


def build(chapter: str, out: Path | None = None, *, exercises_only: bool = False, run_tests: bool = True) -> Path:
    """Build the assignment of ``chapter`` into ``out``; return ``out``."""
    md = _chapter_path(chapter)
    out = Path(out or ROOT / "assignments" / "build" / md.stem).resolve()
    nb, questions = master_notebook(md, exercises_only=exercises_only, run_tests=run_tests)
    out.mkdir(parents=True, exist_ok=True)
    (out / "master").mkdir(exist_ok=True)
    master = out / "master" / f"{md.stem}.ipynb"  # otter names the student notebook after it
    nbformat.write(nb, master)
    for sub in ("student", "autograder"):
        for old in (out / sub).glob("*") if (out / sub).exists() else []:
            old.unlink() if old.is_file() else None
    cmd = [sys.executable, "-m", "otter", "assign", "--no-pdfs", str(master), str(out)]
    proc = subprocess.run(cmd, cwd=md.parent, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"otter assign failed for {md.stem}:\n{proc.stdout}\n{proc.stderr}")
    (out / "assignment.json").write_text(json.dumps(
        {"chapter": md.stem, "exercises_only": exercises_only,
         "questions": [q.__dict__ for q in questions]}, indent=1) + "\n")
    return out


def autograder_zip(folder: Path) -> Path:
    zips = sorted((Path(folder) / "autograder").glob("*-autograder_*.zip"))
    if not zips:
        raise SystemExit(f"no autograder zip in {folder}/autograder: run `tools/assignments.py build` first")
    return zips[-1]


def grade(chapter: str, submissions: Path, out: Path, *, build_dir: Path | None = None,
          executed: Path | None = None) -> list[dict]:
    """Grade every notebook in ``submissions``; write the scores CSV ``out``; return its rows.

    ``executed``: a folder where each graded notebook is saved as it ran (outputs, errors, test results).
    """
    import otter.api

    stem = _chapter_path(chapter).stem
    build_dir = Path(build_dir or ROOT / "assignments" / "build" / stem)
    manifest = json.loads((build_dir / "assignment.json").read_text())
    auto = [q["name"] for q in manifest["questions"] if not q["manual"]]
    manual = [q["name"] for q in manifest["questions"] if q["manual"]]
    zip_path = autograder_zip(build_dir).resolve()
    rows = []
    for nb_path in sorted(Path(submissions).glob("*.ipynb")):
        with tempfile.TemporaryDirectory() as tmp:  # otter's init cell opens the notebook by the assignment's name
            named = Path(tmp) / f"{stem}.ipynb"
            shutil.copy(nb_path, named)
            results = otter.api.grade_submission(str(named), str(zip_path), quiet=True)
        if executed is not None:
            Path(executed).mkdir(parents=True, exist_ok=True)
            nbformat.write(results.notebook, Path(executed) / nb_path.name)
        row = {"submission": nb_path.name}
        for name in auto:
            row[name] = results.get_score(name) if name in results.test_files else 0
        row.update({f"{name} (manual)": "" for name in manual})
        row["total"] = sum(row[name] for name in auto)
        row["possible"] = sum(q["points"] for q in manifest["questions"] if not q["manual"])
        rows.append(row)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["submission", *auto, *(f"{n} (manual)" for n in manual), "total", "possible"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the student notebook and the autograder of a chapter")
    b.add_argument("chapter", help="chapter stem (e.g. seli) or path to its .md")
    b.add_argument("--out", type=Path, default=None, help="output folder (default: assignments/build/<chapter>)")
    b.add_argument("--exercises-only", action="store_true", help="keep only the exercises and the code they need")
    b.add_argument("--no-run-tests", action="store_true", help="skip otter's check that the solutions pass")
    g = sub.add_parser("grade", help="grade a folder of submitted notebooks into a CSV")
    g.add_argument("chapter")
    g.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    g.add_argument("--out", type=Path, default=Path("scores.csv"), help="scores CSV (default: scores.csv)")
    g.add_argument("--build", type=Path, default=None, help="the assignment folder (default: assignments/build/<chapter>)")
    g.add_argument("--executed", type=Path, default=None, help="save each graded notebook, as it ran, in this folder")
    args = parser.parse_args(argv)
    if args.command == "build":
        out = build(args.chapter, args.out, exercises_only=args.exercises_only, run_tests=not args.no_run_tests)
        student = sorted((out / "student").glob("*.ipynb"))
        print(f"student notebook: {student[0] if student else '?'}\nautograder: {autograder_zip(out)}")
        return 0
    rows = grade(args.chapter, args.submissions, args.out, build_dir=args.build, executed=args.executed)
    print(f"graded {len(rows)} submissions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
