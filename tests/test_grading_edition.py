"""The student edition of the package: what it removes, how, and that the answers are absent from the judge.

The fast tests check the removal plan (what a reference executes, a forbid function's private module, never
the argument checks), the stubs (their message, no code or docstring left), the stub checks of
``ncbook.exercises``, the grouping of questions whose solutions need each other's answers, and where a
sandbox's Python could import ``ncbook`` from. The ``notebook`` test scans a judge sandbox for the references'
source lines and code objects: nothing; the same scan with the real package bound finds them (so it can
fail), and so does a sandbox that binds the real package over one of those places (a regression).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import edition, sandbox  # noqa: E402

from ncbook.exercises import EXERCISES  # noqa: E402


def _tool():
    return load_tool("tools/assignments.py")


def test_the_edition_removes_what_a_reference_runs_and_a_forbid_functions_module_never_the_checks():
    etf = edition.removed_for(EXERCISES["etf_cost_ratio"])
    assert {("ncbook.geometry._seli", "seli_geometry"), ("ncbook.geometry._seli", "_svd_route"),
            ("ncbook.geometry._seli", "sel_matrix")} <= etf  # a public, not forbidden function: half the answer
    assert not any(m in edition.KEEP_MODULES or m.startswith("ncbook.exercises") for m, _ in etf)
    orthogonal = edition.removed_for(EXERCISES["minority_orthogonal_ratio"])
    assert ("ncbook.geometry._seli", "seli_step_limits") in orthogonal      # forbidden
    assert ("ncbook.geometry._seli", "_step_entries") in orthogonal         # its helper
    assert ("ncbook.geometry._seli", "SELIGeometry.logits") in orthogonal   # and the rest of its module, methods too
    assert not any(q.endswith(("__init__", "__eq__", "__repr__")) and m == "ncbook.geometry._seli"
                   for m, q in orthogonal)  # a dataclass's generated methods are not in the file
    risk = edition.removed_for(EXERCISES["multiset_risk"])
    assert ("ncbook.contrastive._objective", "MultisetRisk.value") in risk
    assert edition.external_forbidden(EXERCISES["official_coefficients"]) == ["torch.autograd.grad",
                                                                              "torch.autograd.backward"]


def test_the_edition_removes_what_a_reference_reaches_in_its_private_modules_not_only_what_it_ran():
    """`ncbook.contrastive._solvers._solve_cvxpy`, reached by getattr, gave one_angle_cosine full marks: the
    reference's cases take the Newton route, so the profile never saw the cvxpy one. Every function statically
    reachable from what the reference runs, within its private modules, goes too."""
    removed = edition.removed_for(EXERCISES["one_angle_cosine"])
    assert {("ncbook.contrastive._solvers", "_solve_cvxpy"), ("ncbook.contrastive._solvers", "_solve_bm"),
            ("ncbook.contrastive._solvers", "run_solver")} <= removed
    assert not any(m in edition.KEEP_MODULES for m, _ in removed)


def test_static_reach_follows_names_dispatch_tables_imports_and_attributes(tmp_path):
    pkg = tmp_path / "ncbook" / "demo"
    pkg.mkdir(parents=True)
    (tmp_path / "ncbook" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from ._solve import entry\n")
    (pkg / "_solve.py").write_text(
        "from ._other import helper\n\n\ndef _fast(x):\n    return x\n\n\ndef _slow(x):\n    return _deep(x)\n\n\n"
        "def _deep(x):\n    return x\n\n\n_ROUTES = {'fast': _fast, 'slow': _slow}\n\n\n"
        "def entry(x, how='fast'):\n    return helper(_ROUTES[how](x)) + Risk().value(x)\n\n\n"
        "class Risk:\n    def value(self, x):\n        return self.grad(x)\n\n    def grad(self, x):\n        return x\n\n\n"
        "def unrelated(x):\n    return x\n")
    (pkg / "_other.py").write_text("def helper(x):\n    return x\n\n\ndef other(x):\n    return x\n")
    found = edition.reachable({("ncbook.demo._solve", "entry")}, root=tmp_path / "ncbook")
    assert {q for _, q in found} == {"entry", "_fast", "_slow", "_deep", "Risk.value", "Risk.grad"}
    both = edition.reachable({("ncbook.demo._solve", "entry"), ("ncbook.demo._other", "helper")},
                             root=tmp_path / "ncbook")
    assert ("ncbook.demo._other", "helper") in both and ("ncbook.demo._other", "other") not in both
    assert ("ncbook.demo._solve", "unrelated") not in both


def test_a_stub_keeps_the_name_and_the_decorators_that_matter_and_nothing_else():
    source = '''import functools


class Box:
    """A box."""

    @property
    def secret(self):
        """The answer is 42."""
        return 6 * 7

    def kept(self):
        return 1


@functools.lru_cache(None)
def answer(x, *, y=2):
    """Returns x times 42."""
    # the formula of the exercise
    return 42 * x


def other():
    return answer(1)
'''
    out = edition.strip_module(source, "ncbook.demo._mod", ["answer", "Box.secret"])
    assert "42" not in out and "formula" not in out and "lru_cache" not in out
    assert "@property" in out and "def kept" in out and "def other" in out
    namespace = {}
    exec(compile(out, "<edition>", "exec"), namespace)
    with pytest.raises(RuntimeError, match=r"ncbook\.demo\.answer is not available while this assignment is graded"):
        namespace["other"]()
    with pytest.raises(RuntimeError, match=r"ncbook\.demo\.Box\.secret is not available"):
        namespace["Box"]().secret
    assert namespace["Box"]().kept() == 1
    with pytest.raises(ValueError, match="cannot find"):
        edition.strip_module(source, "ncbook.demo._mod", ["nothing_here"])


def test_the_written_edition_has_stub_checks_the_harvest_and_no_answer(tmp_path):
    removed = edition.removed_for(EXERCISES["etf_cost_ratio"]) | edition.removed_for(EXERCISES["nc2_shifted"])
    package = edition.write_edition(tmp_path / "ed", removed)
    assert sorted(p.name for p in (package / "exercises").iterdir()) == ["__init__.py", "_harvest.py"]
    assert not list(package.rglob("__pycache__")) and not list(package.rglob("*.pyc"))
    assert edition.import_check(package) is None
    code = ("import json, ncbook.exercises as ex, ncbook.geometry as g\n"
            "r = ex.check_etf_cost_ratio(lambda counts: 1.0)\n"
            "try:\n    g.seli_geometry([5, 5])\n    msg = ''\nexcept RuntimeError as exc:\n    msg = str(exc)\n"
            "print(json.dumps([bool(r), r.message, ex.EXERCISES, msg, g.simplex_etf.__doc__]))")
    env = {**os.environ, "PYTHONPATH": str(package.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    passed, message, registry, error, doc = json.loads(subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=tmp_path).stdout)
    assert (passed, registry) == (False, {}) and "runs in the grader" in message
    assert "seli_geometry is not available while this assignment is graded" in error and doc is None
    lines, digests = edition.fingerprints(removed, package)
    text = "\n".join(p.read_text() for p in package.rglob("*.py"))
    assert lines and digests and not [line for line in lines if line in text]
    real = "\n".join(p.read_text() for p in edition.package_root().rglob("*.py"))
    assert sum(line in real for line in lines) == len(lines)  # each is the package's own


def test_questions_whose_solutions_need_each_others_answers_are_judged_apart():
    tool = _tool()
    md = ROOT / "book" / "contrastive_imbalance.md"
    _, _, questions = tool.assignment_notebooks(md, exercises_only=True)
    groups, removed = tool.plan_groups(md, questions)
    where = {e: i for i, g in enumerate(groups) for e in g.exercises}
    assert where["multiset_risk"] != where["one_angle_cosine"]  # one_angle_cosine's solution calls cl_risk
    assert ("ncbook.contrastive._risk", "cl_risk") in removed["multiset_risk"]
    assert ("ncbook.contrastive._risk", "cl_risk") not in groups[where["one_angle_cosine"]].removed
    solo = edition.groups({"a": {("m", "f")}, "b": {("m", "g")}}, {"a": set(), "b": set()})
    assert [g.exercises for g in solo] == [("a", "b")]


def test_every_place_python_could_import_ncbook_from_is_found(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    (site / "ncbook").mkdir(parents=True)
    (tmp_path / "editable" / "ncbook").mkdir(parents=True)
    (tmp_path / "pth" / "ncbook").mkdir(parents=True)
    (site / "__editable___ncbook_0_1_0_finder.py").write_text(
        f"MAPPING: dict[str, str] = {{'ncbook': {str(tmp_path / 'editable' / 'ncbook')!r}}}\n")
    (site / "extra.pth").write_text(f"# a comment\nimport os\n{tmp_path / 'pth'}\n")
    monkeypatch.setattr(sandbox, "_site_dirs", lambda: [str(site)])
    found = sandbox.ncbook_locations()
    for path in (site / "ncbook", tmp_path / "editable" / "ncbook", tmp_path / "pth" / "ncbook"):
        assert str(path.resolve()) in found
    assert str(edition.package_root()) in found


MIN_LINES = 3  # distinct lines of the answers in one file that make it a copy of them


def _scan(cmd: list[str], payload: dict) -> dict:
    proc = subprocess.run(cmd, input=json.dumps(payload), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.notebook
def test_nothing_a_judged_submission_can_reach_holds_an_answer(tmp_path):
    """Inside a judge sandbox (the seli assignment's edition), every readable file, every loaded module and every
    code object importable from ``ncbook`` is free of the references' source lines and code; the same scan finds
    them when the real package is bound instead (the regression the edition prevents)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    tool = _tool()
    build = tool.build("seli", tmp_path / "build", exercises_only=True, verify=False, log=lambda *_: None)
    manifest, _ = tool.load_assignment(build)
    group = manifest["groups"][0]
    package = build / group["edition"]
    removed = {tuple(o) for o in group["removed"]}
    lines, digests = edition.fingerprints(removed, package)
    payload = {"lines": lines, "digests": digests}
    runner = ROOT / "tests" / "grading_scan.py"
    limits = tool.Limits(memory=2048 << 20)
    judge = _scan(tool.sandbox_command(limits, package=package, runner=runner), payload)
    assert judge["checked"]["files"] > 50_000 and judge["checked"]["code"] > 1000, judge["checked"]
    # a line as plain as `y = np.asarray(y, dtype=np.float64)` also appears in numpy's or scipy's own code: one or
    # two such lines in a file of another package are a coincidence; a copy of an answer holds many
    copies = [(path, found) for path, found in judge["files"] if len(found) >= MIN_LINES or "ncbook" in path]
    assert copies == [] and judge["code"] == [], (copies[:3], judge["code"][:5])
    assert judge["ncbook"] == "/opt/ncbook/ncbook"
    # the same scan, the real package bound where the edition was (the regression the edition prevents): it finds
    # the answers' files and code, so the scan above could have failed
    full = _scan(tool.sandbox_command(limits, package=tool.package_dir(), runner=runner), payload)
    assert [p for p, found in full["files"] if p.startswith("/opt/ncbook/ncbook/") and len(found) >= MIN_LINES]
    assert full["code"] and full["ncbook"] == "/opt/ncbook/ncbook", "the scan cannot find what is there"
