"""Assignments built with otter-grader from the chapters' exercises (``tools/assignments.py``).

``python -m pytest -k assignment`` runs these alone. For three chapters (exercises-only variant,
quick profile) the assignment is built, then three submissions are graded by the grading command
into a CSV: the chapter's own solutions (full marks), the untouched student notebook (0 on every
autograded question, every cell still executed) and the solutions with one planted mistake (exactly
that question's points lost).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("assignments_tool", ROOT / "tools" / "assignments.py")
tool = importlib.util.module_from_spec(_spec)
sys.modules["assignments_tool"] = tool  # dataclasses look their module up
_spec.loader.exec_module(tool)

pytest.importorskip("otter", reason="otter-grader is not installed (pip install -r requirements.txt)")

# chapter -> (question with a planted mistake, text in the solutions, the mistake)
PLANTED = {
    "nc_primer": ("ex-primer-1", "/ np.sqrt(c - 1))", ")"),                       # NC2 without 1/sqrt(C-1)
    "seli": ("ex-seli-1", "return onehot - 1.0 / num_classes", "return onehot"),  # SEL matrix not centred
    "contrastive_imbalance": ("ex-contrastive-2", "eps = math.exp(-2 / t)", "eps = math.exp(-2)"),  # no temperature
}


def _plant(solutions: Path, target: Path, old: str, new: str) -> None:
    nb = nbformat.read(solutions, as_version=4)
    hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source and "BEGIN SOLUTION" in c.source]
    assert len(hits) == 1, f"the planted mistake must hit one solution cell; {len(hits)} contain {old!r}"
    hits[0].source = hits[0].source.replace(old, new)
    nbformat.write(nb, target)


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", sorted(PLANTED))
def test_assignment_grades_solutions_stubs_and_a_planted_mistake(chapter, tmp_path):
    build = tool.build(chapter, tmp_path / "build", exercises_only=True, run_tests=False)
    manifest = json.loads((build / "assignment.json").read_text())
    auto = {q["name"]: q["points"] for q in manifest["questions"] if not q["manual"]}
    manual = [q["name"] for q in manifest["questions"] if q["manual"]]
    assert len(auto) >= 2

    subs = tmp_path / "submissions"
    subs.mkdir()
    shutil.copy(build / "autograder" / f"{chapter}.ipynb", subs / "solutions.ipynb")
    shutil.copy(build / "student" / f"{chapter}.ipynb", subs / "untouched.ipynb")
    question, old, new = PLANTED[chapter]
    _plant(build / "autograder" / f"{chapter}.ipynb", subs / "planted.ipynb", old, new)

    scores = tmp_path / "scores.csv"
    rc = tool.main(["grade", chapter, str(subs), "--build", str(build), "--out", str(scores),
                    "--executed", str(tmp_path / "executed")])
    assert rc == 0
    with scores.open() as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    print(f"\n{chapter} scores:\n" + scores.read_text())
    header = list(next(iter(rows.values())))
    assert header == ["submission", *auto, *(f"{m} (manual)" for m in manual), "total", "possible"]

    possible = sum(auto.values())
    full, zero, planted = rows["solutions.ipynb"], rows["untouched.ipynb"], rows["planted.ipynb"]
    assert {q: float(full[q]) for q in auto} == {q: float(p) for q, p in auto.items()}
    assert float(full["total"]) == float(full["possible"]) == possible
    assert {q: float(zero[q]) for q in auto} == {q: 0.0 for q in auto} and float(zero["total"]) == 0
    assert float(planted[question]) == 0
    assert {q: float(planted[q]) for q in auto if q != question} == {q: float(p) for q, p in auto.items() if q != question}
    assert float(planted["total"]) == possible - auto[question]
    assert all(full[f"{m} (manual)"] == "" for m in manual)

    ran = nbformat.read(tmp_path / "executed" / "untouched.ipynb", as_version=4)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") is not None for c in code), "the untouched notebook did not run to the end"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert all(o.ename == "NotImplementedError" for o in errors), [o.ename for o in errors]
    checks = [c for c in code if c.source.startswith("from ncbook.exercises import check_")]
    assert checks and all("not implemented yet" in json.dumps(c.outputs) for c in checks)
    solved = nbformat.read(tmp_path / "executed" / "solutions.ipynb", as_version=4)
    assert not [o for c in solved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def test_assignment_student_notebook_is_the_generators(tmp_path):
    """The handed-out notebook is the one generator's student notebook plus otter's cells, nothing else."""
    md = ROOT / "book" / "seli.md"
    build = tool.build("seli", tmp_path / "seli", run_tests=False)
    handed_out = nbformat.read(build / "student" / "seli.ipynb", as_version=4)
    otter_cells = re.compile(r"^(# Initialize Otter|grader\.check\()")
    got = [c.source for c in handed_out.cells if not otter_cells.match(c.source)]
    got = [re.sub(r"(<!-- (BEGIN|END) QUESTION -->\n\n)|(\n\n_Points:_ [\d.]+$)", "", s) for s in got]
    want = [c.source for c in tool.student_notebook(md).cells]
    assert got == want


def test_assignment_keeps_hidden_tests_out_of_the_student_notebook_and_marks_manual_questions(tmp_path):
    build = tool.build("contrastive_imbalance", tmp_path / "c", exercises_only=True, run_tests=False)
    student = (build / "student" / "contrastive_imbalance.ipynb").read_text()
    hidden_source = (ROOT / "assignments" / "hidden" / "contrastive_imbalance.py").read_text()
    assert "def ex_contrastive_1" in hidden_source and "ex_contrastive_1" not in student
    assert "BEGIN SOLUTION" not in student and "math.exp(-2 / t)" not in student  # no solution leaks
    with zipfile.ZipFile(tool.autograder_zip(build)) as z:
        tests = z.read("tests/ex-contrastive-1.py").decode()
    assert "ex_contrastive_1(multiset_risk)" in tests and "'hidden': True" in tests  # the autograder has them
    public = json.loads(student)["metadata"]["otter"]["tests"]["ex-contrastive-1"]
    assert all(not case["hidden"] for suite in public["suites"] for case in suite["cases"])
    manifest = json.loads((build / "assignment.json").read_text())
    kinds = {q["name"]: q["manual"] for q in manifest["questions"]}
    assert kinds == {"ex-contrastive-1": False, "ex-contrastive-2": False, "ex-contrastive-3": False,
                     "ex-contrastive-4": True}
    master = nbformat.read(build / "master" / "contrastive_imbalance.ipynb", as_version=4)
    configs = [c.source for c in master.cells if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")]
    assert '"manual": true' in configs[-1] and all('"manual"' not in c for c in configs[:-1])
    hidden_cells = [c.source for c in master.cells if c.cell_type == "code" and c.source.startswith("# HIDDEN")]
    assert len(hidden_cells) == 3 and "ex_contrastive_1(multiset_risk)" in hidden_cells[0]


def test_assignment_adapter_tags_every_exercise_cell():
    nb = tool.student_notebook(ROOT / "book" / "nc_primer.md")
    roles = [(c.metadata["ncbook"]["exercise"], c.metadata["ncbook"]["role"]) for c in nb.cells
             if "exercise" in c.metadata.get("ncbook", {})]
    assert ("ex-primer-1", "stub") in roles and ("ex-primer-1", "check") in roles
    assert ("ex-primer-2", "answer") in roles and ("ex-primer-4", "answer") in roles
    assert ("ex-primer-3", "check") not in roles


def _solution_namespace(md: Path) -> dict:
    """The chapter's solution functions, defined without running the chapter (cells that need more are skipped)."""
    import math
    import itertools

    import numpy as np
    import torch
    import torch.nn.functional as F

    import ncbook
    from ncbook import contrastive, geometry, losses, metrics, reweighting, ufm

    ns = {"np": np, "torch": torch, "F": F, "math": math, "itertools": itertools, "ncbook": ncbook,
          "contrastive": contrastive, "geometry": geometry, "losses": losses, "metrics": metrics,
          "reweighting": reweighting, "ufm": ufm}
    for solution in tool.chapter_solutions(md).values():
        for source in solution.code:
            try:
                exec(compile(source, md.name, "exec"), ns)
            except Exception:  # a solution cell that also uses the chapter's variables: its defs ran first
                pass
    return ns


HIDDEN = sorted(p.stem for p in (ROOT / "assignments" / "hidden").glob("*.py"))


@pytest.mark.parametrize("chapter", HIDDEN)
def test_assignment_hidden_tests_pass_the_solutions_and_fail_a_stub(chapter):
    md = ROOT / "book" / f"{chapter}.md"
    tests, _ = tool.hidden_tests(chapter)
    ns = _solution_namespace(md)
    student = tool.student_notebook(md)
    checked = {}
    for cell in student.cells:
        meta = cell.metadata.get("ncbook", {})
        if meta.get("role") == "check" and (m := tool._CHECK_CALL.search(cell.source)):
            checked[meta["exercise"]] = m.group(2)
    assert checked and set(checked) == {name.split("__")[0].replace("_", "-") for name in tests}, \
        "every checked exercise has hidden tests, and every hidden test an exercise"

    def stub(**kwargs):
        raise NotImplementedError

    for label, function in checked.items():
        for name, source in tool._hidden_for(label, tests):
            env = dict(ns)
            exec(source, env)
            env[name](ns[function])  # the chapter's solution passes
            with pytest.raises(NotImplementedError):
                env[name](stub)
