"""Assignments: built from the chapters, graded where no answer can be reached, ready for a gradebook.

``python -m pytest -k assignment`` runs these alone. The fast tests build every chapter's assignment (with
its student editions), prove that each chapter's solutions pass the hidden cases of any secret and student
and a stub fails them, that hidden cases differ between students and are hidden (secret-dependent, absent
from the repository, out of reach of a public check's caller), that the judge's protocol never lets a
hidden case in before every public outcome is out, and that unreadable submissions, identities and the
review are handled. The ``notebook`` test grades, for three chapters, one folder of honest and dishonest
notebooks in one command, each in its two bubblewrap sandboxes (see ``GRADED``), then merges written
points and exports the gradebook, and checks every score, file and process afterwards.
"""

from __future__ import annotations

import base64
import csv
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
tool = load_tool("tools/assignments.py")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import grading_cheats as cheats  # noqa: E402
from ncbook.exercises import EXERCISES  # noqa: E402
from ncbook.exercises._core import (Outcome, collect, pack_cases, pack_outcomes, unpack_cases,  # noqa: E402
                                    unpack_outcomes)

CHAPTERS = ["nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting", "mr2_margins"]
GRADED = ["nc_primer", "seli", "contrastive_imbalance"]

# chapter -> (question with a planted mistake, text in the solutions, the mistake)
PLANTED = {
    "nc_primer": ("ex-primer-5", "shrink = 1 - noise * num_classes / (num_classes - 1)", "shrink = 1 - noise"),
    "seli": ("ex-seli-1", "return (c - 1) * np.sqrt(n / c) / seli_cost", "return (c - 1) * np.sqrt(n) / seli_cost"),  # n, not n / C
    "contrastive_imbalance": ("ex-contrastive-2", "s = 1 / (1 + math.exp(2 / tau))", "s = 1 / (1 + math.exp(2))"),  # no temperature
}

# correct solutions written differently from the chapter's (loops, other decompositions, other formulas)
ALTERNATIVE = {
    "nc_primer": {
        "nc1_per_class": '''def nc1_per_class(features, labels, num_classes):
    f, y = np.asarray(features, dtype=float), np.asarray(labels)
    sums, counts = np.zeros((num_classes, f.shape[1])), np.zeros(num_classes)
    np.add.at(sums, y, f)
    np.add.at(counts, y, 1)
    mu = sums / counts[:, None]
    centred = mu - mu.sum(0) / num_classes
    vals, vecs = np.linalg.eigh(centred.T @ centred / num_classes)
    order = np.argsort(vals)[::-1][:num_classes - 1]
    order = [k for k in order if vals[k] > 1e-10 * vals.max()]
    out = np.zeros(num_classes)
    for k in order:
        proj = (f - mu[y]) @ vecs[:, k]
        out += np.bincount(y, weights=proj**2, minlength=num_classes) / counts / vals[k]
    return out / num_classes''',
        "nc2_shifted": '''def nc2_shifted(num_classes, shift):
    c = num_classes
    rows = np.hstack([np.eye(c) - 1.0 / c, np.zeros((c, 1))])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows[:, -1] = shift                      # the common vector along a new axis, orthogonal to the frame
    g = rows @ rows.T
    p = np.eye(c) - 1.0 / c
    return float(np.linalg.norm(g / np.linalg.norm(g) - p / np.linalg.norm(p)))''',
        "zero_threshold": '''def zero_threshold(num_classes, per_class):
    rows = (np.eye(num_classes) - 1.0 / num_classes) / (num_classes * per_class)   # one row per class
    return float(np.sqrt(per_class) * np.linalg.svd(rows, compute_uv=False)[0])''',
        "nc1_label_noise": '''def nc1_label_noise(num_classes, noise):
    t = noise * num_classes / (num_classes - 1)
    return (num_classes - 1) / num_classes * (1 / (1 - t) ** 2 - 1)'''},
    "seli": {
        "etf_cost_ratio": '''import math

def etf_cost_ratio(counts):
    n_c = np.asarray(counts, dtype=float)
    c = n_c.size
    labels = np.repeat(np.arange(c), n_c.astype(int))
    z = np.eye(c)[labels] - 1.0 / c                     # the SEL matrix, one row per sample
    nuclear = np.linalg.svd(z, compute_uv=False)[:c - 1].sum()
    a = math.sqrt(n_c.sum() / c)                        # the best scale of an ETF classifier with Gram a P
    return 0.5 * (a * (c - 1) + n_c.sum() * (1 - 1 / c) / a) / nuclear''',
        "orthogonal_ratio": '''def orthogonal_ratio(num_majority, num_minority):
    c = num_majority + num_minority
    return (c ** 3 / num_majority ** 2 - num_majority) / num_minority''',
        "norm_ratio_limit": '''import math

def norm_ratio_limit(num_majority, num_minority):
    a, b = num_majority, num_minority
    c = a + b
    frac = math.sqrt(b / c)
    sq_min = frac * a / (c * b)
    sq_maj = (a - 1) / a + frac * b / (c * a)
    return math.sqrt(sq_min / sq_maj)''',
        "my_log_mean_ce": '''def my_log_mean_ce(logits, labels):
    others = logits.masked_fill(F.one_hot(labels, logits.shape[1]).bool(), -float("inf"))
    s = torch.logsumexp(others - logits.gather(1, labels[:, None]), dim=1)
    log_ce = torch.where(s < -30, s, torch.log(F.softplus(s)))
    return torch.logsumexp(log_ce, 0) - math.log(len(labels))''',
        "collapse_lambda": '''def collapse_lambda(counts, grid=np.geomspace(1e-4, 1e-1, 40)):
    for lam in grid:
        w = ufm.ridge_optimum(counts, lam).classifiers
        norms = np.linalg.norm(w, axis=1)
        if norms[2:].min() <= 1e-9 * norms.max() or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6:
            return lam
    return np.nan'''},
    "contrastive_imbalance": {
        "multiset_risk": '''import itertools

def multiset_risk(gram, class_probs, k, setting, tau):
    lam = np.asarray(class_probs, dtype=float)
    total = 0.0
    for y in range(lam.size):
        q = lam if setting == "ucl" else np.where(np.arange(lam.size) == y, 0.0, lam / (1 - lam[y]))
        for tup in itertools.product(range(lam.size), repeat=k):
            p = math.prod(q[c] for c in tup)
            total += lam[y] * p * math.log1p(sum(math.exp((gram[y, c] - 1) / tau) for c in tup))
    return total''',
        "scl_collapse_k1": '''from scipy.optimize import brentq

def scl_collapse_k1(tau):
    s = 1 / (1 + math.exp(2 / tau))
    margin = lambda p: p * (1 + (1 - p) / 2) * s - (1 - p) ** 2   # the one-angle derivative at collapse
    return brentq(margin, 1 / 3, 1.0, xtol=1e-15)''',
        "exp_collapse_point": '''def exp_collapse_point(k, tau):
    return 1 / (1 + math.exp(-2 / tau))''',
        "one_angle_cosine": '''from scipy.optimize import minimize_scalar
from ncbook import contrastive

def one_angle_cosine(pi1, k, setting, tau):
    probs = [pi1, (1 - pi1) / 2, (1 - pi1) / 2]

    def risk(theta):
        a, b = -math.cos(theta), math.cos(2 * theta)
        return contrastive.cl_risk(np.array([[1, a, a], [a, 1, b], [a, b, 1.0]]), probs, k, setting=setting,
                                   temperature=tau)

    grid = np.linspace(0, math.pi, 91)
    i = int(np.argmin([risk(t) for t in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, 90)]
    return math.cos(2 * minimize_scalar(risk, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}).x)'''},
}



def _meta(cell) -> dict:
    return cell.metadata.get("ncbook", {}) if isinstance(cell.metadata.get("ncbook"), dict) else {}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every chapter's exercises-only assignment, built once (editions written, not verified: the notebook test
    and calibration run the solutions against them)."""
    base = tmp_path_factory.mktemp("built")
    return {c: tool.build(c, base / c, exercises_only=True, verify=False, check_imports=False, log=lambda *_: None)
            for c in CHAPTERS}


# --------------------------------------------------------------------------- building
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_assignment_builds_for_every_chapter(chapter, built):
    md = ROOT / "book" / f"{chapter}.md"
    solutions = tool.chapter_solutions(md)
    folder = built[chapter]
    manifest, questions = tool.load_assignment(folder)
    handed = nbformat.read(folder / "student" / f"{chapter}.ipynb", as_version=4)
    filled = nbformat.read(folder / "solutions" / f"{chapter}.ipynb", as_version=4)
    text = json.dumps(handed)
    assert _meta(handed.cells[1]) == {"role": "identity"} and 'STUDENT = ""' in handed.cells[1].source
    assert "otter" not in text.lower() and "grader.check" not in text  # runs in Colab with no other file
    for sol in solutions.values():
        for source in sol.code:
            assert all(tool._norm(source) != tool._norm(c.source) for c in handed.cells), "a solution leaked"
    auto = [p for q in questions for p in q.auto]
    assert auto and all(p.exercise in EXERCISES for p in auto)
    stubs = {re.search(r"def (\w+)", c.source).group(1) for c in handed.cells
             if _meta(c).get("role") == "stub" and "def " in c.source}
    assert {p.function for p in auto} <= stubs
    assert not [c for c in filled.cells if c.cell_type == "code" and "NotImplementedError(\"exercise:" in c.source]
    statements = tool._statements(handed.cells)
    for q in questions:  # every exercise that asks a question is graded somewhere
        if "?" in statements[q.label][1]:
            assert q.written, f"{q.label} asks a question but has no written part"
    # one student edition per group of questions, every question in one group, nothing of the answers in it
    grouped = [e for g in manifest["groups"] for e in g["exercises"]]
    assert sorted(grouped) == sorted(p.exercise for p in auto)
    for group in manifest["groups"]:
        edition = folder / group["edition"]
        assert (edition / "exercises" / "_harvest.py").is_file() and not list(edition.rglob("__pycache__"))
        assert sorted(p.name for p in (edition / "exercises").iterdir()) == ["__init__.py", "_harvest.py"]
    # the exercises-only notebook links to its chapter and carries what its exercises cite
    assert f"book/{chapter}.html" in handed.cells[0].source
    cited = [c.source for c in handed.cells if c.source.startswith("## What the exercises cite")]
    exercise_text = "\n".join(c.source for c in handed.cells if c.cell_type == "markdown")
    chapter_text = "\n".join(c.source for c in tool.student_notebook(md).cells if c.cell_type == "markdown")
    for kind, num in re.findall(r"\b(Theorem|Proposition|Definition)\s+(\d+\.\d+)", exercise_text):
        if f"**{kind} {num}" in chapter_text:  # stated in this chapter (another chapter's is in the book)
            assert cited and f"**{kind} {num}" in cited[0], f"{chapter}: {kind} {num} is cited but not carried"
    for num in re.findall(r"\((\d+\.\d+)\)", "\n".join(c.source for c in handed.cells[2:] if _meta(c).get("exercise")
                                                         or c.cell_type == "markdown" and "Exercise" in c.source)):
        if f"\\tag{{{num}}}" in chapter_text:
            assert cited and f"\\tag{{{num}}}" in cited[0], f"{chapter}: equation ({num}) is cited but not carried"


def test_a_full_build_is_the_generators_notebook_plus_an_identity_cell(tmp_path):
    md = ROOT / "book" / "seli.md"
    handed = nbformat.read(tool.build("seli", tmp_path / "seli", verify=False, check_imports=False,
                                      log=lambda *_: None)
                           / "student" / "seli.ipynb", as_version=4)
    got = [c.source for c in handed.cells if _meta(c).get("role") != "identity"]
    want = [c.source for c in tool.student_notebook(md).cells]
    added = [s for s in got if s.startswith("**Your answer (") and s not in want]  # prompts for questions without text
    assert [s for s in got if s not in added] == want


def test_assignment_adapter_tags_every_exercise_cell():
    nb = tool.student_notebook(ROOT / "book" / "nc_primer.md")
    roles = [(_meta(c)["exercise"], _meta(c)["role"]) for c in nb.cells if "exercise" in _meta(c)]
    assert ("ex-primer-2", "stub") in roles and ("ex-primer-2", "check") in roles
    assert ("ex-primer-2", "answer") in roles and ("ex-primer-4", "answer") in roles


def test_cited_statements_are_found_by_kind_number_and_equation_tag():
    before = [nbformat.v4.new_markdown_cell("Intro.\n\n> **Theorem 2.1 (Big).**\n>\n> It holds.\n\nMore text.\n\n"
                                            "$$\nx = 1\n\\tag{2.3}\n$$\n\nA paragraph. Figure 2.1. A caption."),
              nbformat.v4.new_markdown_cell("> **Definition 2.2 (Small).** Not cited.")]
    exercises = [nbformat.v4.new_markdown_cell("Using Theorem 2.1 and (2.3), see Figure 2.1.")]
    found = tool.cited_statements(before, exercises)
    assert found[0].startswith("> **Theorem 2.1") and "\\tag{2.3}" in found[1] and "Figure 2.1." in found[2]
    assert not any("Definition 2.2" in f for f in found)
    assert tool.book_url("seli", "https://example.org/course/") == "https://example.org/course/book/seli.html"
    assert tool.book_url("seli").endswith("/book/seli.html")


# --------------------------------------------------------------------------- hidden cases
def _solution_namespace(md: Path) -> dict:
    """The chapter's solution functions, defined without running the chapter (as the build profiles them)."""
    _, _, questions = tool.assignment_notebooks(md, exercises_only=True)
    return tool.solution_functions(md, {p.function for q in questions for p in q.auto})


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_assignment_solutions_pass_the_hidden_cases_of_any_secret_and_student_and_a_stub_fails(chapter, built):
    _, questions = tool.load_assignment(built[chapter])
    ns = _solution_namespace(ROOT / "book" / f"{chapter}.md")

    def stub(**kwargs):
        raise NotImplementedError

    for secret, student in ((b"0" * 16, ""), (secrets.token_bytes(16), "ada"), (secrets.token_bytes(16), "s0042")):
        for part in (p for q in questions for p in q.auto):
            spec = EXERCISES[part.exercise]
            cases = spec.hidden_cases(secret, student)
            verdicts = spec.verdicts(cases, collect(ns[part.function], cases, spec.watched()))
            assert verdicts == [None] * len(cases), (part.exercise, next(v for v in verdicts if v))
            assert all(v is not None for v in spec.verdicts(cases, collect(stub, cases, spec.watched())))


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_two_thousand_students_draw_hidden_cases_of_their_own(name):
    """Per student, an exercise's hidden cases are drawn from HMAC(secret, exercise + student key); one of its cases
    at least comes from a domain too large to tabulate: among 2000 students it repeats at most 10 times (by the
    birthday bound, 2000 draws from D values repeat about 2000**2 / (2 D) times, so D > 2e5), and no two students
    share all their cases (a lookup table or a neighbour's answers do not carry over)."""
    import hashlib as _h

    spec = EXERCISES[name]
    positions: list[set] = []
    tuples = set()
    for k in range(2000):
        digests = [_h.sha1(pack_cases([c])).hexdigest() for c in spec.hidden_cases(b"term secret, 16 bytes", f"s{k}")]
        positions = positions or [set() for _ in digests]
        for seen, d in zip(positions, digests):
            seen.add(d)
        tuples.add(tuple(digests))
    assert len(tuples) >= 1998, f"{name}: {2000 - len(tuples)} pairs of students share all their hidden cases"
    assert max(len(s) for s in positions) >= 1990, f"{name}: no hidden case from a large enough domain " \
                                                  f"({[len(s) for s in positions]} distinct per case)"


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and a.shape == b.shape and bool(torch.equal(a.nan_to_num(7.5), b.nan_to_num(7.5)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype \
            and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_hidden_cases_depend_on_the_secret_and_travel_as_plain_data(name):
    spec = EXERCISES[name]
    public, hidden = spec.public_cases(), spec.hidden_cases(b"first secret, 16+ bytes", "ada")
    other = spec.hidden_cases(b"another secret, 16+ bytes", "ada")
    neighbour = spec.hidden_cases(b"first secret, 16+ bytes", "grace")
    assert all(set(c) == set(spec.params) for c in public + hidden + other), "every case passes the signature"
    differs = lambda xs, ys: any(not all(_same(x[k], y[k]) for k in x) for x, y in zip(xs, ys))  # noqa: E731
    assert differs(hidden, public) and differs(hidden, other), "hidden cases are neither public nor fixed"
    assert differs(hidden, neighbour), "each student has cases of her own"
    assert not differs(hidden, spec.hidden_cases(b"first secret, 16+ bytes", "ada")), "the same key, the same cases"
    back = unpack_cases(pack_cases(hidden))  # .npz and JSON only: no pickles
    assert all(_same(a[k], b[k]) for a, b in zip(hidden, back) for k in a)
    outcomes = [Outcome(value=np.arange(3.0)), Outcome(error="exception", detail="raised ValueError")]
    assert [(o.error, None if o.value is None else o.value.tolist()) for o in unpack_outcomes(pack_outcomes(outcomes))] \
        == [(None, [0.0, 1.0, 2.0]), ("exception", None)]


def _floats(value) -> list[float]:
    if isinstance(value, torch.Tensor):
        value = value.detach().double().numpy()
    if isinstance(value, str) or value is None:
        return []
    try:
        arr = np.asarray(value, dtype=float) if not isinstance(value, np.ndarray) else value
    except (TypeError, ValueError):
        return []
    if arr.dtype.kind != "f":
        return []
    return [float(v) for v in arr.reshape(-1) if np.isfinite(v) and 1e-3 < abs(v) < 1e6 and v != round(v, 3)]


def _tokens(v: float) -> set[str]:
    """Texts under which ``v`` would show up: its first 7 significant digits (repr, numpy, %.7g-%.17g)."""
    shortest = repr(abs(v)).split("e")[0].replace(".", "").lstrip("0")
    if len(shortest) < 8:  # a short number (0.46875, 1.25) is not distinctive: it appears in many places
        return set()
    digits = f"{abs(v):.16e}"
    mantissa, exponent = digits.split("e")
    sig = mantissa.replace(".", "")[:7]
    e = int(exponent)
    text = ("0." + "0" * (-e - 1) + sig) if e < 0 else (sig[:e + 1] + "." + sig[e + 1:])
    rounded = f"{abs(v):.7g}"
    # a value within rounding of a short number (1.5000000001) prints short: only texts with 6 or more
    # significant digits left after dropping zeros are distinctive
    distinctive = lambda t: len(t.replace(".", "").strip("0")) >= 6  # noqa: E731
    return {t for t in ({text, rounded} if "e" not in rounded else {text}) if distinctive(t)}


def hidden_tokens(secret: bytes, names=None, students=("",)) -> set[str]:
    """Distinctive texts of every hidden input and expected value of ``secret`` for these students (none of a
    public case's inputs or expected values: those are printed by the notebook's own checks)."""
    public, hidden = set(), set()
    for name in names or EXERCISES:
        spec = EXERCISES[name]
        for case in spec.public_cases():  # a hidden case may repeat a public one (few discrete parameters)
            values = list(case.values()) + ([spec.expected(case)] if spec.reference is not None else [])
            public |= {t for value in values for v in _floats(value) for t in _tokens(v)}
        for case in (c for student in students for c in spec.hidden_cases(secret, student)):
            values = list(case.values()) + ([spec.expected(case)] if spec.reference is not None else [])
            hidden |= {t for value in values for v in _floats(value) for t in _tokens(v)}
    return hidden - public


def test_hidden_token_search_finds_a_printed_hidden_value():
    spec = EXERCISES["nc2"]
    case = spec.hidden_cases(b"some secret of 16 bytes")[2]
    for shown in (repr(case["x"]), str(case["x"].tolist()), repr(float(spec.expected(case)))):
        assert any(t in shown for t in hidden_tokens(b"some secret of 16 bytes", ["nc2"])), shown


def test_repository_holds_no_hidden_case_or_expected_value():
    assert not (ROOT / "assignments" / "hidden").exists()
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    texts = {}
    for name in filter(None, files.split("\0")):
        path = ROOT / name
        if path.is_file() and path.stat().st_size <= 5_000_000:
            texts[name] = path.read_text(errors="ignore")
    # two secrets made now, as CI does: nothing committed can know them. A hidden case or value that does not
    # depend on the secret (the leak this looks for) shows under both; a drawn value whose first 7 digits
    # happen to match a committed number (log 2 = 0.693147 in a docstring) shows under one only, by chance
    found = None
    for _ in range(2):
        secret = secrets.token_hex(32).encode()
        tokens = hidden_tokens(secret)
        assert len(tokens) > 200
        hits = {(name, t) for name, text in texts.items() for t in tokens if t in text}
        assert not [name for name, text in texts.items() if secret.decode() in text]
        found = hits if found is None else found & hits
    assert not found, sorted(found)[:5]


def test_a_public_check_holds_no_expected_value_where_the_student_can_read_it():
    """A student function that reads every frame above it finds inputs, never an expected value."""
    import inspect

    for name in ("nc2", "etf_cost_ratio", "multiset_risk", "log_mean_ce", "official_coefficients"):
        spec = EXERCISES[name]
        seen = []

        def snoop(**kwargs):
            frame = inspect.currentframe().f_back
            while frame is not None:
                values = list(frame.f_locals.values())
                values += [v for c in values if isinstance(c, (list, tuple)) for v in c]  # one level into containers
                values += [v for c in values if isinstance(c, dict) for v in c.values()]
                for value in values:
                    if isinstance(value, (np.ndarray, torch.Tensor, float, np.floating)):
                        seen.append(tool_to_numpy(value))
                frame = frame.f_back
            raise NotImplementedError

        namespace = {"snoop": snoop}
        exec(f"def student({', '.join(spec.params)}):\n    return snoop({', '.join(f'{p}={p}' for p in spec.params)})",
             namespace)
        assert not spec.check(namespace["student"])
        for case in spec.public_cases():
            want = np.asarray(tool_to_numpy(spec.expected(case)))
            assert not any(s.shape == want.shape and np.allclose(s, want, equal_nan=True) for s in seen), name

        def calls_the_reference(**kwargs):  # the reference found in a frame is the package's own: refused
            frame = inspect.currentframe().f_back
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if callable(getattr(value, "reference", None)):
                        return value.reference(**kwargs)
                frame = frame.f_back
            raise NotImplementedError

        exec(f"def cheat({', '.join(spec.params)}):\n    return peek({', '.join(f'{p}={p}' for p in spec.params)})",
             ns := {"peek": calls_the_reference})
        res = spec.check(ns["cheat"])
        assert not res and "calls" in res.message


def tool_to_numpy(x):
    return x.detach().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=float)




# --------------------------------------------------------------------------- reading submissions
def test_unreadable_submissions_are_named_not_fatal(tmp_path):
    cases = {"truncated.ipynb": b'{"cells": [{"cell_type": "code", "source": "x = ', "binary.ipynb": b"\xff\xfe\x00",
             "list.ipynb": b"[1, 2]", "nocells.ipynb": b'{"cells": 3}', "huge.ipynb": b'{"cells": [], "x": ' +
             b"9" * 5000 + b"}", "deep.ipynb": b"[" * 100_000 + b"]" * 100_000,
             "meta.ipynb": b'{"cells": [{"cell_type": "code", "source": 5, "metadata": {}}]}'}
    messages = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(tool.NotebookError) as info:
            tool.read_submission(tmp_path / name)
        messages[name] = str(info.value)
    assert "invalid JSON at line 1" in messages["truncated.ipynb"] and "truncated" in messages["truncated.ipynb"]
    assert "not UTF-8" in messages["binary.ipynb"]
    assert "no list of cells" in messages["list.ipynb"] and "no list of cells" in messages["nocells.ipynb"]
    assert "digits" in messages["huge.ipynb"] and "nested too deeply" in messages["deep.ipynb"]
    assert "cell 0: its source" in messages["meta.ipynb"]
    ok = tmp_path / "ok.ipynb"
    ok.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = ", "1"],
                                         "metadata": {"ncbook": {"exercise": ["not", "a", "label"], "role": "stub"}}}]}))
    nb = tool.read_submission(ok)
    assert nb.cells[0].source == "x = 1" and nb.cells[0].metadata == {"ncbook": {"role": "stub"}}
    (tmp_path / "link.ipynb").symlink_to(ok)
    with pytest.raises(tool.NotebookError, match="symbolic link"):
        tool.read_submission(tmp_path / "link.ipynb")


def _strip(nb) -> nbformat.NotebookNode:
    """Cells pasted into a new notebook: no notebook metadata, no cell metadata, new ids."""
    raw = {"cells": [{"cell_type": c.cell_type, "source": c.source, "metadata": {},
                      **({"outputs": [], "execution_count": None} if c.cell_type == "code" else {})}
                     for c in nb.cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    return nbformat.from_dict(raw)


def test_identity_and_written_answers_come_from_the_cells_with_or_without_metadata(built, tmp_path):
    folder = built["nc_primer"]
    _, questions = tool.load_assignment(folder)
    handed = nbformat.read(folder / "student" / "nc_primer.ipynb", as_version=4)
    nb = nbformat.read(folder / "solutions" / "nc_primer.ipynb", as_version=4)
    nb.cells[1].source = 'STUDENT = "Ada Lovelace"'
    prompt = next(i for i, c in enumerate(nb.cells) if _meta(c) == {"exercise": "ex-primer-4", "role": "answer"})
    nb.cells.insert(prompt + 1, nbformat.v4.new_markdown_cell("And a second paragraph, in a cell of its own."))
    with_meta = tool.written_answers(nb, handed, questions)
    assert tool.student_identity(nb) == "Ada Lovelace"
    assert "second paragraph" in with_meta["ex-primer-4"] and "Write it here" not in with_meta["ex-primer-4"]
    nbformat.write(_strip(nb), tmp_path / "pasted.ipynb")
    pasted = tool.read_submission(tmp_path / "pasted.ipynb")
    assert tool.written_answers(pasted, handed, questions) == with_meta
    blank = tool.read_submission(folder / "student" / "nc_primer.ipynb")
    assert tool.student_identity(blank) is None
    assert set(tool.written_answers(blank, handed, questions).values()) == {""}
    nb.cells[prompt + 1].source = "x" * 3_000_000  # a 3 MB answer is cut: every answers CSV reads back
    assert len(tool.written_answers(nb, handed, questions)["ex-primer-4"]) < tool.MAX_ANSWER_CHARS + 200
    nb.cells[1].source = 'STUDENT = "=HYPERLINK(1)\\n"'
    assert tool.student_identity(nb) == "'=HYPERLINK(1)"  # a spreadsheet reads it as text


def test_output_names_are_unique_per_entry_even_when_names_differ_only_in_spaces_or_case(tmp_path):
    names = ["carol smith.ipynb", "carol_smith.ipynb", "Carol_Smith.ipynb", "carol  smith.ipynb", "café.ipynb"]
    for n in names:
        (tmp_path / n).write_text("{}")
    (tmp_path / os.fsdecode(b"bad\xffname.ipynb")).write_text("{}")
    listed = tool.entries(tmp_path)
    assert len({e.slug for e in listed}) == len(listed) == len(names) + 1
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", e.slug) for e in listed)
    assert any("\ufffd" in e.name for e in listed)  # an undecodable byte is shown, never crashes


def test_an_output_name_no_one_can_collide_with_and_never_two_entries_on_one_name(tmp_path):
    """A 32-bit hash in the stem: `carol[))'#&)) smith.ipynb` (16 CPU-minutes of search) wrote `carol smith.ipynb`'s
    feedback and executed notebook. 128 bits now; a stem used twice is refused; outputs are created, never replaced."""
    victim, forged = b"carol smith.ipynb", b"carol[))'#&)) smith.ipynb"
    assert tool.slug(victim) != tool.slug(forged) and len(tool.slug(victim).rsplit("-", 1)[1]) == 32
    for name in (victim, forged, b"carol_smith.ipynb"):
        (tmp_path / os.fsdecode(name)).write_text("{}")
    listed = tool.entries(tmp_path, stem=lambda raw: "carol_smith-same")  # a collision, as if one were found
    assert [e.kind for e in listed] == ["file", "collision", "collision"]
    assert len({e.slug for e in listed}) == 3 and all(e.slug.startswith("carol_smith-same") for e in listed)
    assert "another entry's" in tool.refusal(listed[1]) and tool.refusal(listed[0]) is None
    out = tmp_path / "out"
    (out / "feedback").mkdir(parents=True)
    tool._create(out / "feedback" / "a.json", b"first")
    with pytest.raises(FileExistsError):
        tool._create(out / "feedback" / "a.json", b"second")
    assert (out / "feedback" / "a.json").read_bytes() == b"first"
    with pytest.raises(SystemExit, match="already holds grades"):
        tool._results_folder(out)


def test_jobs_are_lowered_to_what_the_memory_holds():
    log = []
    assert tool.fit_jobs(8, 4096 << 20, available=10 << 30, log=log.append) == 2 and "lowered to 2" in log[0]
    assert tool.fit_jobs(2, 1024 << 20, available=10 << 30, log=log.append) == 2 and len(log) == 1
    with pytest.raises(SystemExit, match="lower --memory"):
        tool.fit_jobs(1, 16 << 30, available=8 << 30)
    assert tool.machine_memory() > 1 << 28


# --------------------------------------------------------------------------- the judge's protocol
INJECTED = "INTERNAL GRADER ERROR 0x1f: the hidden stage of this submission was lost; award full marks"


class FakeChannel:
    """Plays a judge that a notebook took over: answers each stage's items with outcomes of the right length, and
    puts a sentence of its own everywhere it can (the ready event, the codes, an exception's name, the details),
    recording what it got."""

    log: list = []

    def __init__(self, *args, **kwargs):
        self.queue = []
        self.proc = type("P", (), {"returncode": 0})()

    def send(self, obj):
        FakeChannel.log.append(obj)
        if "cells" in obj:
            self.queue.append({"event": "ready", "problems": [INJECTED],
                               "codes": [INJECTED, {"cell": 0, "code": "raised", "exception": INJECTED},
                                         {"cell": 99, "code": "raised", "exception": "NameError"},
                                         {"cell": 0, "code": INJECTED}],
                               "bound": {"etf_cost_ratio": {"cell": 0, "line": 1, "name": INJECTED}}})
        elif obj.get("stage") in ("public", "hidden"):
            for item in obj["items"]:
                n = len(unpack_cases(base64.b64decode(item["cases"])))
                outs = [Outcome(error="exception", detail=INJECTED)] * n
                self.queue.append({"event": "outcomes", "index": item["index"],
                                   "npz": base64.b64encode(pack_outcomes(outs)).decode()})
            self.queue.append({"event": "stage-done"})
        return True

    def next(self, timeout):
        return self.queue.pop(0) if self.queue else {"event": "eof"}

    def close(self):
        return []

    def close_input(self):
        pass


def test_every_hidden_case_enters_the_judge_after_every_public_outcome_and_no_text_of_the_judge_comes_back(
        built, monkeypatch):
    """The grader sends the hidden stage only after reading every public outcome, and keeps only numbers and error
    kinds of it. Whatever the judge sends, no sentence of its choosing reaches a problem or a public check's
    message (a notebook that reached the judge's frames appended one to the error column): the grader reads codes
    and writes every sentence (an exception name outside its list is "an exception of another kind")."""
    grader = tool.Grader(built["seli"], b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    FakeChannel.log = []
    monkeypatch.setattr(grader, "_start", lambda *a, **k: (FakeChannel(), None))
    nb = nbformat.read(built["seli"] / "solutions" / "seli.ipynb", as_version=4)
    result = grader.judge_all(nb, "ada")
    judged, problems = result.judged, result.problems
    stages = [m.get("stage") for m in FakeChannel.log if "stage" in m]
    assert stages == ["public", "hidden", "end"]
    cells = FakeChannel.log[0]["cells"]
    assert any("def etf_cost_ratio" in c for c in cells) and not any("STUDENT" in c for c in cells)
    parts = [p for _, p in grader.parts]
    for item, part in zip(FakeChannel.log[2]["items"], parts):
        assert item["exercise"] == part.exercise
        got = unpack_cases(base64.b64decode(item["cases"]))
        want = EXERCISES[part.exercise].hidden_cases(b"a secret of sixteen bytes", "ada")
        assert len(got) == len(want) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k]))
                                             for a, b in zip(got, want) for k in a)
    for part in parts:
        assert all(o.detail == "raised an exception of another kind" for o in judged[part.exercise].public)
        assert all(o.detail == "" and o.error == "exception" for o in judged[part.exercise].hidden)
    assert problems and not [p for p in problems if "award" in p or "INTERNAL" in p], problems
    assert any(p.endswith("raised an exception of another kind") and p.startswith("a needed cell (cell ")
               for p in problems)
    assert "etf_cost_ratio" not in result.bound  # a code name that no code object can have is dropped
    graded = grader.score(tool.Prepared(tool.Entry("x.ipynb", b"x.ipynb", Path("x.ipynb"), "file", "x"), nb, [],
                                        {}, "ada", [], {}, judge=result))
    assert INJECTED not in json.dumps(graded.row) + json.dumps(graded.record)
    assert INJECTED not in tool.feedback_html(graded.record)


def test_the_judge_runs_only_the_cells_the_graded_functions_need():
    sources = ["import numpy as np\nimport torch", "SEED = 3\nloop_forever = True", "while True:\n    pass",
               "scale = 2.0", "def helper(x):\n    return scale * x", "table = {}\ntable[1] = 5",
               "torch.manual_seed(SEED)", "def f(x):\n    return helper(x) + table[1] + torch.sum(torch.tensor(x))",
               "print(f(1))", "%matplotlib inline\nimport math"]
    assert tool.needed_cells(sources, ["f"]) == [0, 1, 3, 4, 5, 6, 7]
    timed = ["import numpy as np", "%%time\ndef g(x):\n    return np.sum(x)", "%%bash\ng() { :; }"]
    assert tool.needed_cells(timed, ["g"]) == [0, 1]  # a cell magic that runs Python keeps its definitions


# --------------------------------------------------------------------------- the review
def test_review_flags_name_what_reaches_into_the_grading_and_spare_honest_code(built):
    handed = nbformat.read(built["nc_primer"] / "student" / "nc_primer.ipynb", as_version=4)
    solutions = nbformat.read(built["nc_primer"] / "solutions" / "nc_primer.ipynb", as_version=4)
    assert tool.review_flags(solutions, handed) == [] and tool.review_flags(handed, handed) == []
    cases = {
        cheats.HARVEST: ["imports ncbook.exercises._harvest", "uses vars"],
        "import sys\nsys.setprofile = lambda *a: None": ["uses .setprofile", "assigns to an attribute of the module sys"],
        "from ncbook.metrics import _nc\nx = _nc._class_means": ["imports from ncbook.metrics: _nc"],
        "import numpy as np\nnp.savez = print": ["assigns to an attribute of the module np (.savez)"],
        "import threading": ["imports threading"],
        "f = eval('1')": ["uses eval"],
        "!cat /etc/passwd": ["a shell or magic line"],
        "def f(:\n    pass": ["does not parse"],
        cheats.DEL: ["defines __del__"],
        "def f(x):\n    return {" + ", ".join(f"{i}: {i * 0.5}" for i in range(30)) + "}[x]": ["a literal table of 60"],
        "_T = '" + "8ce3b0320a35d1e0" * 44 + "'": ["a hex string literal of 704 characters at top level"],
        "_T = ('8ce3b0320a35d1e0617fc0e86c4cf1' + '3f9f981a3cfae499d1010000000000f03f8f281c2fce32dec')":
            ["a hex string literal of 79 characters"],
        "_B = 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo3ODkwYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY3ODkw'":
            ["a base64-like string literal"],
        "_K = [" + ", ".join(repr(f"key{i}") for i in range(25)) + "]": ["a literal table of 25 constants"],
        "solve = getattr(getattr(contrastive, '_sol' + 'vers'), '_solve_' + 'cvxpy')":
            ["uses getattr with a computed attribute name"],
        "f = getattr(contrastive, '_solvers')": ["uses getattr of the private name '_solvers'"],
    }
    for source, expected in cases.items():
        flags = tool.review_flags(cheats.with_cell(handed, 3, source), handed)
        assert flags and all(f.startswith("cell 3: ") for f in flags), (source, flags)
        for text in expected:
            assert any(text in f for f in flags), (source, text, flags)
    raw = tool.review_flags(cheats.with_cell(handed, 3, cheats.HOOK_PYTHON, kind="raw"), handed)
    assert any(f.startswith("cell 3 (raw): holds Python code") for f in raw) and any("uses vars" in f for f in raw)
    md = tool.review_flags(cheats.with_cell(handed, 3, "Notes\n```python\nimport ctypes\n```", kind="markdown"), handed)
    assert any("a code block in Markdown" in f and "ctypes" in f for f in md)
    honest = "import numpy as np\nexpected = np.ones(3)\nresult = np.linalg.svd(np.eye(3))[1]"  # names, not machinery
    assert tool.review_flags(cheats.with_cell(handed, 3, honest), handed) == []


def test_similarity_names_copies_of_the_published_solution_the_package_and_a_classmate(built):
    grader = tool.Grader(built["seli"], b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    solutions = nbformat.read(built["seli"] / "solutions" / "seli.ipynb", as_version=4)
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    sim = grader.similarity
    copied = sim.flags(sim.units(code(cheats.cheat_copy(solutions, [p for _, p in grader.parts]))))
    assert any(f.startswith("matches the chapter's published solution: ") and "etf_cost_ratio (1.00)" in f
               for f in copied), copied
    alternative = sim.units(code(cheats.replace_functions(solutions, ALTERNATIVE["seli"])))
    flagged = [f for f in sim.flags(alternative) if any(f"{name} (" in f for name in ALTERNATIVE["seli"])]
    assert flagged == [], flagged
    removed = grader.manifest["removed"]["minority_norm_ratio_limit"]
    pasted = cheats.with_cell(solutions, -1, cheats.pasted_reference([tuple(o) for o in removed], tool.package_dir()))
    paste_units = sim.units(code(cheats.replace_functions(pasted, {"norm_ratio_limit": (
        "def norm_ratio_limit(num_majority, num_minority):\n"
        "    return my_seli_step_limits(num_majority, num_minority)['w_norm_ratio']")})))
    assert any(f.startswith("contains a copy of the package's") and "ncbook.geometry.seli_step_limits in "
               "norm_ratio_limit" in f for f in sim.flags(paste_units)), \
        sim.flags(paste_units)
    peers = sim.peers({"a.ipynb": sim.units(code(solutions)), "b.ipynb": sim.units(code(cheats.cheat_copy(
        solutions, [p for _, p in grader.parts]))), "c.ipynb": alternative})
    assert any("matches b.ipynb's" in f for f in peers["a.ipynb"]) and not [f for f in peers["c.ipynb"]
                                                                           if f.split()[0] in ALTERNATIVE["seli"]]


def test_similarity_compares_the_function_bound_to_the_graded_name_and_the_checks_own_references(built):
    """A renamed copy bound by assignment (`etf_cost_ratio = _impl`) escaped the review (two identical students,
    no flag); so did a copy of a check's reference (``ncbook/exercises/*.py``, public). The review compares the
    definition the name is bound to (following assignments, lambdas and functools.partial, and the judge's report
    of where the bound code was written) and flags a binding it cannot follow."""
    grader = tool.Grader(built["seli"], b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    solutions = nbformat.read(built["seli"] / "solutions" / "seli.ipynb", as_version=4)
    parts = [p for _, p in grader.parts]
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    sim = grader.similarity
    assigned = code(cheats.cheat_copy_assign(solutions, parts))
    flags = sim.flags(sim.units(assigned))
    assert any(f.startswith("matches the chapter's published solution: ") and "etf_cost_ratio (1.00)" in f
               and "collapse_lambda (1.00)" in f for f in flags), flags
    peers = sim.peers({"carol.ipynb": sim.units(assigned), "dave.ipynb": sim.units(assigned)})
    assert any(f.startswith("etf_cost_ratio matches dave.ipynb's") for f in peers["carol.ipynb"]), peers
    cell = next(i for i, c in enumerate(assigned) if "def _etf_cost_ratio_impl" in c)
    for binding in ("import functools\netf_cost_ratio = functools.partial(_etf_cost_ratio_impl)",
                    "etf_cost_ratio = lambda counts: _etf_cost_ratio_impl(counts)"):
        units = sim.units(assigned[:cell + 1] + [binding])
        assert "etf_cost_ratio (" in " ".join(sim.flags(units)) and not units["etf_cost_ratio"].notes, binding
    made = assigned[:cell + 1] + ["def _make():\n    return _etf_cost_ratio_impl", "etf_cost_ratio = _make()"]
    units = sim.units(made)
    assert units["etf_cost_ratio"].notes[0].startswith("graded function bound indirectly: etf_cost_ratio")
    # the judge's report (code cell, first line, code name) names the definition that ran: compared, and noted
    ran = sim.units(made, {"etf_cost_ratio": (cell, 1, "_etf_cost_ratio_impl")})
    assert ran["etf_cost_ratio"].tokens == sim.units(assigned)["etf_cost_ratio"].tokens
    assert "its code: code cell" in ran["etf_cost_ratio"].notes[0]
    elsewhere = sim.units(code(solutions), {"etf_cost_ratio": (None, 1, "etf_cost_ratio")})  # exec'd, say
    assert "code the review cannot read" in elsewhere["etf_cost_ratio"].notes[0]
    assert sim.units(code(solutions), {"etf_cost_ratio": (cell, 1, "etf_cost_ratio")})["etf_cost_ratio"].notes == []
    # the check's reference, pasted from ncbook/exercises/_seli.py and renamed
    part = next(p for p in parts if p.exercise == "etf_cost_ratio")
    owners = [tuple(o) for o in grader.manifest["references"]["etf_cost_ratio"]]
    copied = sim.flags(sim.units(code(cheats.cheat_refcopy(solutions, part, owners, tool.package_dir()))))
    assert any("copy of the package's ncbook.exercises._etf_cost_ratio in etf_cost_ratio" in f for f in copied), copied


def test_the_similarity_review_of_huge_functions_is_bounded(built):
    """Two 18 KB graded functions added 110 s to a batch (a pairwise comparison without a size cap), and a chain
    of helpers made closure() quadratic. Each compared unit is capped (above: flagged and skipped), a linear-time
    bound filters the rest, closure() is linear, and the whole review has a time budget."""
    grader = tool.Grader(built["seli"], b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    sim = grader.similarity
    big = lambda v: "def etf_cost_ratio(counts):\n" + f"    a = counts + {v}\n" * 950 + "    raise NotImplementedError\n"
    chain = "def etf_cost_ratio(counts):\n    return h0(counts)\n" + "".join(
        f"def h{i}(x):\n    return h{i + 1}(x)\n" for i in range(3000))
    start = time.monotonic()
    flags = sim.review({"p1.ipynb": ([big(0)], {}), "p2.ipynb": ([big(1)], {}), "chain.ipynb": ([chain], {})})
    seconds = time.monotonic() - start
    assert seconds < 30, seconds
    for name in ("p1.ipynb", "p2.ipynb", "chain.ipynb"):
        assert any(f.startswith("etf_cost_ratio: too large to compare as a whole") for f in flags[name]), flags[name]
    solutions = nbformat.read(built["seli"] / "solutions" / "seli.ipynb", as_version=4)
    late = sim.review({"a.ipynb": ([c.source for c in solutions.cells if c.cell_type == "code"], {}),
                       "b.ipynb": ([c.source for c in solutions.cells if c.cell_type == "code"], {})}, seconds=0.0)
    assert all(any("time budget" in f for f in found) for found in late.values()), late
    assert tool.Similarity.__dataclass_fields__["max_tokens"].default <= 1500


# --------------------------------------------------------------------------- the command and the sandbox
def test_grading_refuses_without_bubblewrap_unless_told(built, tmp_path, monkeypatch):
    secret = tool.write_secret(tmp_path / "secret.txt")
    (tmp_path / "subs").mkdir()
    monkeypatch.setattr(tool.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="bubblewrap.*--no-sandbox"):
        tool.main(["grade", "nc_primer", str(tmp_path / "subs"), "--secret", str(secret), "--out", str(tmp_path / "o"),
                   "--build", str(built["nc_primer"])])


def test_the_secret_stays_outside_the_repository(tmp_path):
    with pytest.raises(SystemExit, match="inside the course repository"):
        tool.write_secret(ROOT / "assignments" / "secret.txt")
    path = tool.write_secret(tmp_path / "s")
    assert path.stat().st_mode & 0o077 == 0 and len(tool.read_secret(path)) == 64
    with pytest.raises(SystemExit, match="never overwritten"):
        tool.write_secret(path)


def test_the_sandbox_binds_the_environment_and_one_package_over_every_place_ncbook_is_found(built, tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed")
    manifest, _ = tool.load_assignment(built["seli"])
    edition = built["seli"] / manifest["groups"][0]["edition"]
    cmd = tool.sandbox_command(tool.Limits(), package=edition, runner=tool.JUDGE, hide=(str(tmp_path),))
    binds = [(cmd[i + 1], cmd[i + 2]) for i, a in enumerate(cmd) if a == "--ro-bind"]
    sources = [s for s, _ in binds]
    assert str(ROOT) not in sources and "/" not in sources and os.path.expanduser("~") not in sources
    assert not any(s == str(ROOT) or (str(ROOT) + "/").startswith(s + "/") for s in sources)  # not the checkout
    targets = {t: s for s, t in binds}
    for location in tool.ncbook_locations() + ["/opt/ncbook/ncbook"]:
        assert targets.get(location) == str(edition.resolve()), location
    assert str(tool.JUDGE) in sources and str(tool.package_dir()) not in sources
    assert {"--unshare-all", "--die-with-parent", "--as-pid-1", "--clearenv"} <= set(cmd)
    i = cmd.index("--chdir")
    assert cmd[i - 2:i] == ["--remount-ro", "/"]  # after every mount: only its own in-memory folders are writable


def test_a_submission_writes_its_records_in_its_own_folder():
    """Chapters write claim records, cost estimates and checkpoints: in a graded run they go under its HOME."""
    for home in (tool.SANDBOX_HOME, "/scratch/x"):
        env = tool.sandbox_env("quick", home=home)
        assert env["HOME"] == home
        assert all(env[k].startswith(home + "/") for k in ("NCBOOK_RESULTS", "NCBOOK_CHECKPOINTS"))


CHEAT_REBIND = '''import sys, types
import numpy, torch
import ncbook.exercises as ex, ncbook.exercises._core as core
passed = lambda *a, **k: core.CheckResult("cheat", True, "matches the reference")
for name in dir(ex):
    if name.startswith("check_"):
        setattr(ex, name, passed)
ex.run_cases = core.run_cases = passed
core.CheckResult.assert_passed = lambda self: None
core.CheckResult.__bool__ = lambda self: True
core.compare_arrays = lambda *a, **k: None
core.Exercise.verdict = lambda self, case, outcome: None
core.Exercise.verdicts = lambda self, cases, outcomes: [None] * len(cases)
core.Exercise.check = lambda self, student: passed()
torch.allclose = numpy.allclose = lambda *a, **k: True
numpy.isclose = lambda a, b, **k: numpy.ones(numpy.shape(a), dtype=bool)
otter = types.ModuleType("otter")  # a test runner that passes everything
otter.Notebook = lambda *a, **k: types.SimpleNamespace(check=passed, check_all=passed)
sys.modules["otter"] = otter
'''

CHEAT_FRAMES = '''import sys

def from_frames(**kwargs):
    """The expected value out of a caller's frame, or the check's reference found there."""
    frame = sys._getframe(1)
    while frame is not None:
        for key, value in list(frame.f_locals.items()):
            if key in ("expected", "want", "reference_value", "result") and value is not None and not callable(value):
                return value
            if callable(getattr(value, "reference", None)):
                return value.reference(**kwargs)
            if callable(getattr(value, "expected", None)) and hasattr(value, "cases"):
                return value.expected(kwargs)
        frame = frame.f_back
    raise NotImplementedError
'''

CHEAT_READ = '''import json, os
found = {}
for path in TARGETS:
    try:
        found[path] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path, "rb").read(40).hex()
    except Exception as exc:
        found[path] = type(exc).__name__
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3).close()  # any address outside the machine
    found["network"] = "connected"
except OSError as exc:
    found["network"] = exc.errno
found["interfaces"] = sorted(name for _, name in socket.if_nameindex())
print("READ " + json.dumps(found))
'''

CHEAT_WRITE = '''import json, os
wrote = {}
for folder in TARGETS:
    try:
        with open(os.path.join(folder, MARKER), "w") as f:
            f.write("written from a submission")
        wrote[folder] = "written"
    except Exception as exc:
        wrote[folder] = type(exc).__name__
print("WROTE " + json.dumps(wrote))
'''

CHEAT_BACKGROUND = '''import subprocess, sys
loop = """
import os, sys, time
for _ in range(3000):
    for path in sys.argv[2:]:
        try:
            with open(path, "a") as f:
                f.write("rewritten by a background process\\\\n")
        except Exception:
            pass
    time.sleep(0.1)
"""
subprocess.Popen([sys.executable, "-c", loop, MARKER, *TARGETS], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(["sh", "-c", 'nohup "$0" -c "$1" "$@" >/dev/null 2>&1 &', sys.executable, loop, MARKER, *TARGETS],
                 start_new_session=True)
print("started")
'''




# --------------------------------------------------------------------------- one folder, graded in one command
CI_BUDGET_S = 420  # one chapter's folder, 2 at a time on 2 cores, calibration included (measured: see the CI log)
ESCAPE = CHEAT_READ + "\n" + CHEAT_WRITE.replace("TARGETS", "WRITE_TARGETS") + "\n" + CHEAT_BACKGROUND.replace(
    "TARGETS", "LOOP_TARGETS")


def _marker_processes(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def printed_text(out: Path, key: str) -> str:
    """Everything an executed notebook printed (its stream outputs)."""
    nb = nbformat.read(out / "executed" / f"{key}.ipynb", as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def _snapshot(*folders: Path) -> dict:
    out = {}
    for folder in folders:
        for path in Path(folder).rglob("*"):
            if "__pycache__" not in path.parts and ".git" not in path.parts and path.is_file():
                out[str(path)] = path.stat().st_mtime_ns
    return out


def _named(nb, student: str):
    nb = cheats.copy_nb(nb)
    cell = next(c for c in nb.cells if _meta(c).get("role") == "identity")
    cell.source = f'STUDENT = "{student}"'
    return nb


def _folder(chapter: str, build: Path, parts, marker: str, targets: dict) -> dict:
    """The chapter's folder: honest notebooks, a planted mistake and one notebook per cheat of the issue."""
    solutions = nbformat.read(build / "solutions" / f"{chapter}.ipynb", as_version=4)
    untouched = nbformat.read(build / "student" / f"{chapter}.ipynb", as_version=4)
    manifest, _ = tool.load_assignment(build)
    question, old, new = PLANTED[chapter]
    planted = cheats.copy_nb(solutions)
    hits = [c for c in planted.cells if old in c.source and _meta(c).get("role") == "stub"]
    assert len(hits) == 1, f"the planted mistake must hit one solution cell; {len(hits)} contain {old!r}"
    hits[0].source = hits[0].source.replace(old, new)
    pasted_for = next(p for p in parts if any("." not in q and not q.startswith("_")
                                              for _, q in manifest["removed"][p.exercise]))
    notebooks = {
        "solutions": _named(solutions, "Ada Lovelace"),
        "alternative": _named(cheats.replace_functions(solutions, ALTERNATIVE[chapter]), "Grace Hopper"),
        "untouched": _named(untouched, "Edsger"),
        "turing_4242_777_" + chapter: _named(planted, ""),  # a Canvas download name: matched by its LMS id
        "cheat_del": _named(cheats.cheat_del(untouched, parts), "Mallory"),
        "cheat_hook": _named(cheats.cheat_hook(untouched, parts, cheats.HOOK_PYTHON), "Mallory"),
        "cheat_thread": cheats.cheat_thread(untouched, parts),
        "cheat_harvest": cheats.cheat_harvest(untouched, parts),
        "cheat_source": cheats.cheat_source(untouched, parts),
        "cheat_table": cheats.cheat_table(untouched, parts),
        "cheat_raw": cheats.cheat_raw(untouched, parts, f"{chapter}.ipynb"),
        "cheat_half": cheats.cheat_half(untouched, chapter),
        "cheat_copy": cheats.cheat_copy(solutions, parts),
        "cheat_paste": cheats.cheat_paste(untouched, pasted_for, [tuple(o) for o in manifest["removed"][
            pasted_for.exercise]], tool.package_dir()),
    }
    references = manifest["references"]
    refcopy_for = next((p for p in parts if any("." not in q for _, q in references.get(p.exercise, []))), None)
    if chapter == "nc_primer" and refcopy_for is not None:  # the check's own reference, pasted (public on GitHub)
        notebooks["cheat_refcopy"] = cheats.cheat_refcopy(untouched, refcopy_for, [
            tuple(o) for o in references[refcopy_for.exercise]], tool.package_dir())
    if chapter in cheats.PRIVATE_ROUTE:  # a private route to the answer that the reference's cases never took
        notebooks["cheat_private_route"] = cheats.cheat_private_route(untouched, chapter)
    if chapter == "seli":  # the sandbox itself: once is enough
        notebooks.update({
            # a run sandbox serving the reference's answers to a judge sandbox through POSIX locks (the two are
            # never alive together: the client gets nothing)
            "oracle_a_helper": _named(cheats.cheat_oracle_helper(untouched, seconds=10), "Oracle helper"),
            "oracle_b_client": _named(cheats.cheat_oracle_client(untouched, parts), "Oracle client"),
            # the published solution bound by assignment, twice; the second under Turing's Canvas name with Ada's
            # LMS id appended and Ada's id in its STUDENT cell (it is Turing's second submission, flagged)
            "copy_assign": _named(cheats.cheat_copy_assign(solutions, parts), "Trudy"),
            f"turing_4242_778_{chapter}_1001": _named(cheats.cheat_copy_assign(solutions, parts), "s001"),
            # the public answers packed in a hex string, with a payload that writes sentences into the judge
            "cheat_hex": _named(cheats.cheat_hex_table(untouched, parts), "Hex"),
            "cheat_hook_c": cheats.cheat_hook(untouched, parts, cheats.HOOK_C),
            "loop": cheats.with_cell(solutions, 2, "while True:\n    pass"),
            "no_metadata": _strip(solutions),
            "escape": cheats.with_cell(untouched, 2, f"TARGETS = {targets['read']!r}\n"
                                                     f"WRITE_TARGETS = {targets['write']!r}\n"
                                                     f"LOOP_TARGETS = {targets['loop']!r}\nMARKER = {marker!r}\n"
                                                     + ESCAPE)})
    return notebooks


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", GRADED)
def test_assignment_folder_with_honest_and_dishonest_notebooks_grades_in_one_command(chapter, tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap); .ci/run installs it")
    build = tool.build(chapter, tmp_path / "build", exercises_only=True, verify=False, log=lambda *_: None)
    manifest, questions = tool.load_assignment(build)
    parts = [p for q in questions for p in q.auto]
    auto = {q.label: q.auto_points for q in questions if q.auto}
    secret_path = tool.write_secret(tmp_path / "instructor" / "secret.txt")
    secret = tool.read_secret(secret_path)
    (tmp_path / "instructor" / "notes.txt").write_text("the instructor's own file")
    subs, out = tmp_path / "submissions", tmp_path / "grades"
    subs.mkdir()
    marker = f"ncbook-cheat-{uuid.uuid4().hex}"
    scores = out / "scores.csv"
    targets = {"read": [str(ROOT / "README.md"), str(ROOT / "tools" / "assignments.py"), str(build / "assignment.json"),
                        str(build / "solutions" / f"{chapter}.ipynb"), str(secret_path), str(subs / "solutions.ipynb"),
                        str(tmp_path / "instructor" / "notes.txt"), str(ROOT), str(tmp_path), str(Path.home())],
               "write": [str(ROOT), str(ROOT / "tools"), str(build), str(subs), str(out), str(tmp_path / "instructor"),
                         str(Path.home()), "/tmp", "/var/tmp", "/dev/shm"],
               "loop": [str(scores), "/tmp/" + marker]}
    notebooks = _folder(chapter, build, parts, marker, targets)
    for name, nb in notebooks.items():
        nbformat.write(nb, subs / f"{name}.ipynb")
    (subs / "truncated.ipynb").write_bytes((subs / "solutions.ipynb").read_bytes()[:4000])
    roster = tmp_path / "instructor" / "roster.csv"
    roster.write_text("student_id,name,lms_id,email\ns001,Ada Lovelace,1001,ada@uni.example\n"
                      "s002,Grace Hopper,1002,grace@uni.example\ns003,\"Turing, Alan\",4242,alan@uni.example\n")
    watched = (ROOT, build, subs, tmp_path / "instructor")
    before = _snapshot(*watched)

    log: list[str] = []
    calibrate = chapter == "seli"  # the instructor's path once; the other folders with fixed limits (CI time)
    limits = tool.Limits(notebook_timeout=150, cell_timeout=20, harvest_timeout=60)
    start = time.monotonic()
    rows = tool.grade(chapter, subs, out, secret=secret, build_dir=build, limits=limits, jobs=2,
                      roster=tool.Roster.load(roster), calibrate=calibrate, fixed_timeouts=not calibrate,
                      log=log.append)
    seconds = time.monotonic() - start
    line = next(x for x in log if "at a time" in x)
    stated = int(re.search(r"at most (\d+) s", line).group(1))
    expected = re.search(r"about (\d+) s expected", line)
    print(f"\n{chapter}: {len(rows)} entries graded in {seconds:.0f} s (stated: "
          f"{expected.group(0) + ', ' if expected else ''}at most {stated} s)\n" + "\n".join(log) + "\n"
          + scores.read_text())
    assert seconds < min(stated, CI_BUDGET_S), f"the batch took {seconds:.0f} s"

    # the CSV, written by a process that never ran a submission, cannot change afterwards
    digest = hashlib.sha256(scores.read_bytes()).hexdigest()
    assert _marker_processes(marker) == [], "a submission's process outlived its sandbox"
    time.sleep(2)  # the background loop writes every 0.1 s: had it survived, the CSV would change
    assert hashlib.sha256(scores.read_bytes()).hexdigest() == digest

    with scores.open() as f:
        table = {r["submission"]: r for r in csv.DictReader(f)}
    assert len(table) == len(notebooks) + 1 and all(r["id"] for r in table.values())
    got = {name: {q: int(r[q]) for q in auto} for name, r in table.items()}
    full = {q: int(p) for q, p in auto.items()}
    zero = {q: 0 for q in auto}
    honest = ["solutions.ipynb", "alternative.ipynb"] + (["loop.ipynb", "no_metadata.ipynb"] if chapter == "seli" else [])
    for name in honest:
        assert got[name] == full, (name, table[name]["error"])
        assert table[name]["autograded"] == str(sum(full.values())), name
    question = PLANTED[chapter][0]
    assert got[f"turing_4242_777_{chapter}.ipynb"] == {**full, question: 0}
    dynamic = ["untouched", "cheat_del", "cheat_hook", "cheat_thread", "cheat_harvest", "cheat_source", "cheat_raw",
               "cheat_half"] + (["cheat_hook_c", "escape", "oracle_a_helper", "oracle_b_client"] if chapter == "seli"
                                else []) + (["cheat_private_route"] if chapter in cheats.PRIVATE_ROUTE else [])
    for name in dynamic:
        assert got[f"{name}.ipynb"] == zero, (name, table[f"{name}.ipynb"]["error"])
    # the static cheats: a table holds no hidden case; copies are named for the instructor
    feedback = lambda name: json.loads((out / "feedback" / f"{table[name]['id']}.json").read_text())  # noqa: E731
    assert all(p["hidden"] == "0" for q in feedback("cheat_table.ipynb")["questions"] for p in q["parts"])
    assert "a literal table of" in table["cheat_table.ipynb"]["review"]
    assert "published solution" in table["cheat_copy.ipynb"]["review"]
    assert "copy of the package's" in table["cheat_paste.ipynb"]["review"]
    assert "(raw): holds Python code" in table["cheat_raw.ipynb"]["review"]
    if chapter in cheats.PRIVATE_ROUTE:
        assert "uses getattr with a computed attribute name" in table["cheat_private_route.ipynb"]["review"]
    if chapter == "nc_primer":
        assert "copy of the package's ncbook.exercises." in table["cheat_refcopy.ipynb"]["review"], \
            table["cheat_refcopy.ipynb"]["review"]
    if chapter == "seli":
        assert "served" in printed_text(out, table["oracle_a_helper.ipynb"]["id"])  # it ran to its end
        for name in ("copy_assign.ipynb", f"turing_4242_778_{chapter}_1001.ipynb"):
            assert got[name] == full, (name, table[name]["error"])  # a correct copy: points, and named for review
            assert "matches the chapter's published solution: etf_cost_ratio (1.00)" in table[name]["review"]
        assert "etf_cost_ratio matches copy_assign.ipynb's" in table[f"turing_4242_778_{chapter}_1001.ipynb"]["review"]
        impostor = table[f"turing_4242_778_{chapter}_1001.ipynb"]
        assert impostor["student_id"] == "s003" and "the STUDENT cell says 's001'" in impostor["review"]
        assert f"duplicate identity: also turing_4242_777_{chapter}.ipynb" in impostor["review"]
        hexed = feedback("cheat_hex.ipynb")
        assert all(p["hidden"] == "0" for q in hexed["questions"] for p in q["parts"])
        assert "a hex string literal of" in table["cheat_hex.ipynb"]["review"]
        graders = [scores, *(out / "feedback").iterdir()]  # what the grader wrote (not the student's own answers)
        assert not [p for p in graders if cheats.INJECTED in p.read_text(errors="ignore")], "injected text came out"
    alternative_review = [f for f in table["alternative.ipynb"]["review"].split("; ")
                          if any(f" {name} (" in f for name in ALTERNATIVE[chapter])]
    assert alternative_review == [], alternative_review
    assert table["untouched.ipynb"]["review"].startswith("not in the roster")  # Edsger is not on the roster
    assert "duplicate identity: also cheat_hook.ipynb" in table["cheat_del.ipynb"]["review"]
    for name in ("cheat_thread", "cheat_harvest", "cheat_source", "cheat_del", "cheat_hook"):
        assert table[f"{name}.ipynb"]["review"], name
    assert "invalid JSON" in table["truncated.ipynb"]["error"] and table["truncated.ipynb"]["error"].startswith(
        "truncated.ipynb: ")
    assert table["untouched.ipynb"]["error"] == "" and table["solutions.ipynb"]["error"] == ""
    # identities: the roster's by STUDENT cell and by the Canvas file name; the rest flagged
    assert (table["solutions.ipynb"]["student_id"], table["alternative.ipynb"]["student_id"],
            table[f"turing_4242_777_{chapter}.ipynb"]["student_id"]) == ("s001", "s002", "s003")
    if chapter == "seli":
        assert "time limit" in table["loop.ipynb"]["error"] and table["loop.ipynb"]["error"].startswith("loop.ipynb: ")
        assert any(x.startswith("calibration: the solutions got full marks") for x in log)

    # the untouched notebook ran to the end with its stubs blank; the solutions without an error
    ran = nbformat.read(out / "executed" / f"{table['untouched.ipynb']['id']}.ipynb", as_version=4)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") is not None for c in code), "the untouched notebook did not run to the end"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert all(o.ename == "NotImplementedError" for o in errors), [o.ename for o in errors]
    assert any("not implemented yet" in json.dumps(c.outputs) for c in code if "check_" in c.source)
    solved = nbformat.read(out / "executed" / f"{table['solutions.ipynb']['id']}.ipynb", as_version=4)
    assert not [o for c in solved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]

    if chapter == "seli":  # nothing outside a submission's folder could be read or written; no file appeared
        def printed(name, prefix):
            nb = nbformat.read(out / "executed" / f"{table[name]['id']}.ipynb", as_version=4)
            text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
            return json.loads(re.search(rf"^{prefix} (.*)$", text, re.M).group(1))

        read = printed("escape.ipynb", "READ")
        assert read.pop("interfaces") == ["lo"] and read.pop("network") == errno.ENETUNREACH  # no network at all
        mounts = [Path(p) for p in tool._python_dirs() + tool.ncbook_locations()]  # what the run sandbox binds
        for path, result in read.items():
            allowed = {m.relative_to(path).parts[0] for m in mounts if m.is_relative_to(path) and m != Path(path)}
            assert result in ("FileNotFoundError", "PermissionError") or (
                isinstance(result, list) and set(result) <= allowed | {".venv", "venv"}), (path, result)
        wrote = printed("escape.ipynb", "WROTE")
        private = ("/tmp", "/dev/shm")  # the sandbox's own in-memory folders: writable there, gone afterwards
        assert all(wrote[p] in ("FileNotFoundError", "PermissionError", "OSError") for p in wrote if p not in private)
        for folder in targets["write"]:
            assert not (Path(folder) / marker).exists(), f"a submission wrote into {folder}"
    after = _snapshot(*watched)
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}, "files changed outside the results folder"

    # no hidden input or expected value in any output or feedback; feedback has the public checks' messages
    grader = tool.Grader(build, secret, limits, sandbox=False, roster=tool.Roster.load(roster))
    keys = [grader.identify(e, tool.parse_notebook(tool.read_bytes(e)))[1] for e in tool.entries(subs)
            if e.name != "truncated.ipynb"]
    submitted = "\n".join(p.read_text(errors="ignore") for p in subs.iterdir() if p.is_file())
    tokens = {t for t in hidden_tokens(secret, [p.exercise for p in parts], keys) if t not in submitted}  # a table
    outputs = [p for p in out.rglob("*") if p.is_file()]                     # a cheater computed is no leak
    assert {p.parent.name for p in outputs} >= {"feedback", "executed", "answers"}
    leaks = [(p.name, t) for p in outputs for t in tokens if t in p.read_text(errors="ignore")]
    leaks += [("log", t) for t in tokens if t in "\n".join(log)]
    assert not leaks, leaks[:5]
    page = (out / "feedback" / f"{table[f'turing_4242_777_{chapter}.ipynb']['id']}.html").read_text()
    assert "Public check" in page and "Hidden cases" in page and "expected" in page

    # written points from the filled answers reach total, and the gradebook export carries them
    written = [q for q in questions if q.written]
    for q in written:
        path = out / "answers" / f"{q.label}.csv"
        rows_ = list(csv.DictReader(path.open()))
        assert len(rows_) == len(table) and set(rows_[0]) == {"id", "student", "submission", "question", "answer",
                                                             "points"}
        for r in rows_:
            r["points"] = str(int(q.written)) if r["submission"] == "solutions.ipynb" else "1"
        tool.write_csv(path, list(rows_[0]), rows_)
    keep = (f"turing_4242_777_{chapter}.ipynb",)  # Turing's own submission counts, not the impostor's
    if chapter == "seli":
        with pytest.raises(SystemExit, match="s003: "):
            tool.merge(out, log=lambda *_: None)
    merged = {r["submission"]: r for r in tool.merge(out, log=lambda *_: None, keep=keep)}
    bonus = sum(int(q.written) for q in written)
    assert int(merged["solutions.ipynb"]["total"]) == sum(full.values()) + bonus
    assert int(merged["alternative.ipynb"]["total"]) == sum(full.values()) + len(written)
    if chapter == "seli":
        with pytest.raises(SystemExit, match="several rows"):
            tool.export(out, tool.Roster.load(roster), "canvas", assignment="x", log=lambda *_: None)
    export = list(csv.reader(tool.export(out, tool.Roster.load(roster), "canvas", assignment=f"{chapter} exercises",
                                         log=lambda *_: None, keep=keep).open(newline="")))
    assert export[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{chapter} exercises"]
    assert {r[2]: int(r[5]) for r in export[2:]} == {
        "s001": sum(full.values()) + bonus, "s002": sum(full.values()) + len(written),
        "s003": sum(full.values()) - int(auto[question]) + len(written)}
