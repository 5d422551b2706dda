"""Assignments: built from the chapters, graded in a sandbox against hidden cases drawn from a secret.

``python -m pytest -k assignment`` runs these alone. The fast tests build every chapter's assignment,
prove that each chapter's solutions pass the hidden cases of any secret and a stub fails them, that
the hidden cases are hidden (secret-dependent, absent from the repository, out of reach of a public
check's caller) and that unreadable submissions and identities are handled. The ``notebook`` test
grades, for three chapters, one folder of honest and dishonest notebooks in one command, each in
its bubblewrap sandbox (see ``GRADED``), and checks every score, file and process afterwards.
"""

from __future__ import annotations

import base64
import csv
import errno
import hashlib
import importlib.util
import json
import math
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

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("assignments_tool", ROOT / "tools" / "assignments.py")
tool = importlib.util.module_from_spec(_spec)
sys.modules["assignments_tool"] = tool  # dataclasses look their module up
_spec.loader.exec_module(tool)

from ncbook.exercises import EXERCISES  # noqa: E402
from ncbook.exercises._core import (Outcome, collect, pack_cases, pack_outcomes, unpack_cases,  # noqa: E402
                                    unpack_outcomes)

CHAPTERS = ["nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting", "mr2_margins"]
GRADED = ["nc_primer", "seli", "contrastive_imbalance"]
CI_BUDGET_S = 300  # one chapter's folder of 12 notebooks, 2 at a time on 2 cores (measured: see the CI log)

# chapter -> (question with a planted mistake, text in the solutions, the mistake)
PLANTED = {
    "nc_primer": ("ex-primer-1", "centred = mu - mu.mean(0)", "centred = mu - h.mean(0)"),  # mu_G: sample mean
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
    y = np.repeat(np.eye(num_classes), per_class, axis=0)
    return float(np.linalg.svd((y - 1.0 / num_classes) / len(y), compute_uv=False)[0])''',
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
        if np.linalg.norm(w[2:], axis=1).min() == 0 or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6:
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
    """Every chapter's exercises-only assignment, built once."""
    base = tmp_path_factory.mktemp("built")
    return {c: tool.build(c, base / c, exercises_only=True) for c in CHAPTERS}


# --------------------------------------------------------------------------- building
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_assignment_builds_for_every_chapter(chapter, built, tmp_path):
    md = ROOT / "book" / f"{chapter}.md"
    full = tool.build(chapter, tmp_path / "full")
    solutions = tool.chapter_solutions(md)
    for folder in (full, built[chapter]):
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
        assert json.dumps(manifest).count("[") < 10 + 4 * len(questions)  # questions only: no numbers, no cases
        statements = tool._statements(handed.cells)
        for q in questions:  # every exercise that asks a question is graded somewhere
            if "?" in statements[q.label][1]:
                assert q.written, f"{q.label} asks a question but has no written part"


def test_assignment_student_notebook_is_the_generators_plus_an_identity_cell(tmp_path):
    md = ROOT / "book" / "seli.md"
    handed = nbformat.read(tool.build("seli", tmp_path / "seli") / "student" / "seli.ipynb", as_version=4)
    got = [c.source for c in handed.cells if _meta(c).get("role") != "identity"]
    want = [c.source for c in tool.student_notebook(md).cells]
    added = [s for s in got if s.startswith("**Your answer (") and s not in want]  # prompts for questions without text
    assert [s for s in got if s not in added] == want


def test_assignment_adapter_tags_every_exercise_cell():
    nb = tool.student_notebook(ROOT / "book" / "nc_primer.md")
    roles = [(_meta(c)["exercise"], _meta(c)["role"]) for c in nb.cells if "exercise" in _meta(c)]
    assert ("ex-primer-1", "stub") in roles and ("ex-primer-1", "check") in roles
    assert ("ex-primer-2", "answer") in roles and ("ex-primer-4", "answer") in roles
    assert ("ex-primer-3", "check") not in roles


# --------------------------------------------------------------------------- hidden cases
def _solution_namespace(md: Path) -> dict:
    """The chapter's solution functions, defined without running the chapter (cells that need more are skipped)."""
    import itertools

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


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_assignment_solutions_pass_the_hidden_cases_of_any_secret_and_a_stub_fails(chapter, built):
    _, questions = tool.load_assignment(built[chapter])
    ns = _solution_namespace(ROOT / "book" / f"{chapter}.md")

    def stub(**kwargs):
        raise NotImplementedError

    for secret in (b"0" * 16, secrets.token_bytes(16), secrets.token_bytes(16)):
        for part in (p for q in questions for p in q.auto):
            spec = EXERCISES[part.exercise]
            cases = spec.hidden_cases(secret)
            verdicts = spec.verdicts(cases, collect(ns[part.function], cases, spec.watched()))
            assert verdicts == [None] * len(cases), (part.exercise, next(v for v in verdicts if v))
            assert all(v is not None for v in spec.verdicts(cases, collect(stub, cases, spec.watched())))


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
    public, hidden = spec.public_cases(), spec.hidden_cases(b"first secret, 16+ bytes")
    other = spec.hidden_cases(b"another secret, 16+ bytes")
    assert all(set(c) == set(spec.params) for c in public + hidden + other), "every case passes the signature"
    differs = lambda xs, ys: any(not all(_same(x[k], y[k]) for k in x) for x, y in zip(xs, ys))  # noqa: E731
    assert differs(hidden, public) and differs(hidden, other), "hidden cases are neither public nor fixed"
    assert not differs(hidden, spec.hidden_cases(b"first secret, 16+ bytes")), "the same secret, the same cases"
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


def hidden_tokens(secret: bytes, names=None) -> set[str]:
    """Distinctive texts of every hidden input and expected value of ``secret`` (none of a public case's inputs
    or expected values: those are printed by the notebook's own checks)."""
    public, hidden = set(), set()
    for name in names or EXERCISES:
        spec = EXERCISES[name]
        for case in spec.public_cases():  # a hidden case may repeat a public one (few discrete parameters)
            values = list(case.values()) + ([spec.expected(case)] if spec.reference is not None else [])
            public |= {t for value in values for v in _floats(value) for t in _tokens(v)}
        for case in spec.hidden_cases(secret):
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
    secret = secrets.token_hex(32).encode()  # a secret made now, as CI does: nothing committed can know it
    tokens = hidden_tokens(secret)
    assert len(tokens) > 200
    found = []
    for name in filter(None, files.split("\0")):
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        text = path.read_text(errors="ignore")
        found += [(name, t) for t in tokens if t in text]
        assert secret.decode() not in text
    assert not found, found[:5]


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
             "list.ipynb": b"[1, 2]", "nocells.ipynb": b'{"cells": 3}'}
    messages = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(tool.NotebookError) as info:
            tool.read_submission(tmp_path / name)
        messages[name] = str(info.value)
    assert "invalid JSON at line 1" in messages["truncated.ipynb"] and "truncated" in messages["truncated.ipynb"]
    assert "not UTF-8" in messages["binary.ipynb"]
    assert "no list of cells" in messages["list.ipynb"] and "no list of cells" in messages["nocells.ipynb"]


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
    assert "sample mean" in with_meta["ex-primer-3"] and "```python" in with_meta["ex-primer-3"]
    nbformat.write(_strip(nb), tmp_path / "pasted.ipynb")
    pasted = tool.read_submission(tmp_path / "pasted.ipynb")
    assert tool.written_answers(pasted, handed, questions) == with_meta
    blank = tool.read_submission(folder / "student" / "nc_primer.ipynb")
    assert tool.student_identity(blank) is None
    assert set(tool.written_answers(blank, handed, questions).values()) == {""}
    nb.cells[1].source = 'STUDENT = "=HYPERLINK(1)\\n"'
    assert tool.student_identity(nb) == "'=HYPERLINK(1)"  # a spreadsheet reads it as text


def test_every_hidden_case_enters_the_sandbox_after_every_public_case(built):
    """A public case's message (the student's own exception text) reaches the feedback: while it can be written, no
    hidden case may exist in the sandbox. The job lists each question's public cases, then each one's hidden cases."""
    from ncbook.exercises._core import unpack_cases

    grader = tool.Grader(built["seli"], b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    stages = [h["stage"] for h in grader.harvest]
    n = len(grader.parts)
    assert stages == ["public"] * n + ["hidden"] * n
    for i, (_, part, public, hidden) in enumerate(grader.parts):
        for item, cases in ((grader.harvest[i], public), (grader.harvest[n + i], hidden)):
            assert item["exercise"] == part.exercise
            got = unpack_cases(base64.b64decode(item["cases"]))
            assert len(got) == len(cases) and all(
                np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for a, b in zip(got, cases) for k in a)
    assert tool.Limits().wall(len(grader.harvest)) == 600 + 60 * 2 * n + 90


def test_review_flags_name_what_rewrites_the_grading_and_spare_honest_code(built):
    handed = nbformat.read(built["nc_primer"] / "student" / "nc_primer.ipynb", as_version=4)
    solutions = nbformat.read(built["nc_primer"] / "solutions" / "nc_primer.ipynb", as_version=4)
    assert tool.review_flags(solutions, handed) == [] and tool.review_flags(handed, handed) == []
    cases = {
        CHEAT_PATCH: ["imports ncbook.exercises._core", "uses .harvest", "assigns to an attribute of the module _core"],
        "import sys\nsys.setprofile = lambda *a: None": ["uses .setprofile", "assigns to an attribute of the module sys"],
        "from ncbook.metrics import _nc\nx = _nc._class_means": ["imports from ncbook.metrics: _nc"],
        "import numpy as np\nnp.savez = print": ["assigns to an attribute of the module np (.savez)"],
        "import threading": ["imports threading"],
        "f = eval('1')": ["uses eval"],
        "!cat /etc/passwd": ["a shell or magic line"],
        "def f(:\n    pass": ["does not parse"],
    }
    for source, expected in cases.items():
        flags = tool.review_flags(_with_cell(handed, 3, source), handed)
        assert flags and all(f.startswith("cell 3: ") for f in flags), (source, flags)
        for text in expected:
            assert any(text in f for f in flags), (source, text, flags)
    honest = "import numpy as np\nexpected = np.ones(3)\nresult = np.linalg.svd(np.eye(3))[1]"  # names, not machinery
    assert tool.review_flags(_with_cell(handed, 3, honest), handed) == []


def test_grading_refuses_without_bubblewrap_unless_told(built, tmp_path, monkeypatch):
    secret = tool.write_secret(tmp_path / "secret.txt")
    monkeypatch.setattr(tool.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="bubblewrap.*--no-sandbox"):
        tool.main(["grade", "nc_primer", str(tmp_path), "--secret", str(secret), "--out", str(tmp_path / "o"),
                   "--build", str(built["nc_primer"])])


def test_the_secret_stays_outside_the_repository(tmp_path):
    with pytest.raises(SystemExit, match="inside the course repository"):
        tool.write_secret(ROOT / "assignments" / "secret.txt")
    path = tool.write_secret(tmp_path / "s")
    assert path.stat().st_mode & 0o077 == 0 and len(tool.read_secret(path)) == 64
    with pytest.raises(SystemExit, match="never overwritten"):
        tool.write_secret(path)


def test_the_sandbox_binds_the_environment_and_the_package_only():
    cmd = tool.sandbox_command(tool.Limits()) if shutil.which("bwrap") else pytest.skip("bubblewrap not installed")
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert str(ROOT) not in binds and "/" not in binds and os.path.expanduser("~") not in binds
    assert not any(b == str(ROOT) or (str(ROOT) + "/").startswith(b + "/") for b in binds)  # not the checkout
    assert {"--unshare-all", "--die-with-parent", "--as-pid-1", "--clearenv"} <= set(cmd)
    assert str(tool.RUNNER) in binds and str(ROOT / "ncbook") in binds
    i = cmd.index("--chdir")
    assert cmd[i - 2:i] == ["--remount-ro", "/"]  # after every mount: only its own in-memory folders are writable


# --------------------------------------------------------------------------- one folder, graded in one command
def _replace_functions(nb, sources: dict[str, str]):
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        m = re.search(r"^def (\w+)", cell.source, re.M)
        if _meta(cell).get("role") == "stub" and m and m.group(1) in sources:
            cell.source = sources[m.group(1)]
    return nb


def _with_cell(nb, index: int, source: str):
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells.insert(index if index >= 0 else len(nb.cells), nbformat.v4.new_code_cell(source))
    return nb


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


CHEAT_LEAK = '''import json, sys

def leak(**kwargs):
    """Raise with every case found in a caller's frame, the last first: a public case's message reaches the feedback."""
    frame = sys._getframe(1)
    while frame is not None:
        cases = frame.f_locals.get("cases")
        if isinstance(cases, list) and cases:
            rows = [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in c.items()} for c in cases[::-1]]
            raise RuntimeError("LEAK " + json.dumps(rows)[:1900])
        frame = frame.f_back
    raise RuntimeError("LEAK none")
'''

# the grading code rewritten inside the kernel: it cannot be prevented there, and the review column names it
CHEAT_PATCH = '''import ncbook.exercises._core as _core
from ncbook.exercises import EXERCISES as _EX

def _fake_harvest(name, student, inputs, outputs, *, function=""):
    cases = _core.unpack_cases(open(inputs, "rb").read())
    outs = [_core.Outcome(value=_core._to_numpy(_EX[name].expected(c))) for c in cases]
    open(outputs, "wb").write(_core.pack_outcomes(outs))

_core.harvest = _fake_harvest
'''


def _stub_leak(function: str, params) -> str:
    return f"def {function}({', '.join(params)}):\n    leak()"


def _stub_unwatched(function: str, exercise: str, params, turn: int) -> str:
    """The reference run where the profiler hook of the calling thread does not see it: in a thread (even turns), or
    as a copy of its code with other line numbers (odd turns)."""
    call = ", ".join(f"{p}={p}" for p in params)
    if turn % 2 == 0:
        body = (f"    import threading\n    from ncbook.exercises import EXERCISES\n    box = []\n"
                f"    t = threading.Thread(target=lambda: box.append(EXERCISES[{exercise!r}].expected(dict({call}))))\n"
                f"    t.start(); t.join()\n    return box[0]")
    else:
        body = (f"    import types\n    from ncbook.exercises import EXERCISES\n    ref = EXERCISES[{exercise!r}].reference\n"
                f"    code = ref.__code__.replace(co_firstlineno=ref.__code__.co_firstlineno + 10000)\n"
                f"    copy = types.FunctionType(code, ref.__globals__, ref.__name__, ref.__defaults__, ref.__closure__)\n"
                f"    copy.__kwdefaults__ = ref.__kwdefaults__\n    return copy({call})")
    return f"def {function}({', '.join(params)}):\n{body}"


def _stub_cheat(function: str, params) -> str:
    args = ", ".join(params)
    return f"def {function}({args}):\n    return from_frames({', '.join(f'{p}={p}' for p in params)})"


def _marker_processes(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def _snapshot(*folders: Path) -> dict:
    out = {}
    for folder in folders:
        for path in Path(folder).rglob("*"):
            if "__pycache__" not in path.parts and ".git" not in path.parts and path.is_file():
                out[str(path)] = path.stat().st_mtime_ns
    return out


@pytest.mark.notebook
@pytest.mark.parametrize("chapter", GRADED)
def test_assignment_folder_with_honest_and_dishonest_notebooks_grades_in_one_command(chapter, tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap); .ci/run installs it")
    build = tool.build(chapter, tmp_path / "build", exercises_only=True)
    manifest, questions = tool.load_assignment(build)
    auto = {q.label: q.auto_points for q in questions if q.auto}
    possible = sum(auto.values())
    secret_path = tool.write_secret(tmp_path / "instructor" / "secret.txt")
    secret = tool.read_secret(secret_path)
    (tmp_path / "instructor" / "notes.txt").write_text("the instructor's own file")
    subs, out = tmp_path / "submissions", tmp_path / "grades"
    subs.mkdir()
    solutions = nbformat.read(build / "solutions" / f"{chapter}.ipynb", as_version=4)
    untouched = nbformat.read(build / "student" / f"{chapter}.ipynb", as_version=4)
    marker = f"ncbook-cheat-{uuid.uuid4().hex}"
    scores = out / "scores.csv"

    question, old, new = PLANTED[chapter]
    planted = nbformat.from_dict(json.loads(json.dumps(solutions)))
    hits = [c for c in planted.cells if old in c.source and _meta(c).get("role") == "stub"]
    assert len(hits) == 1, f"the planted mistake must hit one solution cell; {len(hits)} contain {old!r}"
    hits[0].source = hits[0].source.replace(old, new)
    read_targets = [str(ROOT / "README.md"), str(ROOT / "tools" / "assignments.py"), str(build / "assignment.json"),
                    str(build / "solutions" / f"{chapter}.ipynb"), str(secret_path), str(subs / "solutions.ipynb"),
                    str(tmp_path / "instructor" / "notes.txt"), str(ROOT), str(tmp_path), str(Path.home())]
    write_targets = [str(ROOT), str(ROOT / "tools"), str(build), str(subs), str(out), str(tmp_path / "instructor"),
                     str(Path.home()), "/tmp", "/var/tmp", "/dev/shm"]
    functions = [(p.function, EXERCISES[p.exercise].params) for q in questions for p in q.auto]
    frames = _with_cell(untouched, -1, CHEAT_FRAMES + "\n\n" + "\n\n".join(_stub_cheat(f, ps) for f, ps in functions))
    leak = _with_cell(untouched, -1, CHEAT_LEAK + "\n\n" + "\n\n".join(_stub_leak(f, ps) for f, ps in functions))
    unwatched = _with_cell(untouched, -1, "\n\n".join(
        _stub_unwatched(p.function, p.exercise, EXERCISES[p.exercise].params, i)
        for i, p in enumerate(p for q in questions for p in q.auto)))
    notebooks = {
        "solutions": solutions,
        "alternative": _replace_functions(solutions, ALTERNATIVE[chapter]),
        "untouched": untouched,
        "planted": planted,
        "loop": _with_cell(solutions, 2, "while True:\n    pass"),
        "no_metadata": _strip(solutions),
        "cheat_rebind": _with_cell(untouched, 2, CHEAT_REBIND),
        "cheat_frames": frames,
        "cheat_leak": leak,
        "cheat_unwatched": unwatched,
        "cheat_patch": _with_cell(untouched, 2, CHEAT_PATCH),
        "cheat_read": _with_cell(untouched, 2, f"TARGETS = {read_targets!r}\n" + CHEAT_READ),
        "cheat_write": _with_cell(untouched, 2, f"TARGETS = {write_targets!r}\nMARKER = {marker!r}\n" + CHEAT_WRITE),
        "cheat_background": _with_cell(untouched, 2, f"TARGETS = {[str(scores), '/tmp/' + marker]!r}\n"
                                                     f"MARKER = {marker!r}\n" + CHEAT_BACKGROUND),
    }
    for name, nb in notebooks.items():
        nbformat.write(nb, subs / f"{name}.ipynb")
    (subs / "truncated.ipynb").write_bytes((subs / "solutions.ipynb").read_bytes()[:4000])
    watched = (ROOT, build, subs, tmp_path / "instructor")
    before = _snapshot(*watched)

    log: list[str] = []
    limits = tool.Limits(notebook_timeout=150, cell_timeout=20, harvest_timeout=90)
    start = time.monotonic()
    rows = tool.grade(chapter, subs, out, secret=secret, build_dir=build, limits=limits, jobs=2, log=log.append)
    seconds = time.monotonic() - start
    stated = int(re.search(r"at most (\d+) s", log[0]).group(1))
    print(f"\n{chapter}: {len(rows)} notebooks graded in {seconds:.0f} s (stated bound {stated} s)\n"
          + "\n".join(log) + "\n" + scores.read_text())
    assert seconds < min(stated, CI_BUDGET_S), f"the batch took {seconds:.0f} s"

    # the CSV, written by a process that never ran a submission, cannot change afterwards
    digest = hashlib.sha256(scores.read_bytes()).hexdigest()
    assert _marker_processes(marker) == [], "a submission's process outlived its sandbox"
    time.sleep(2)  # the background loop writes every 0.1 s: had it survived, the CSV would change
    assert hashlib.sha256(scores.read_bytes()).hexdigest() == digest

    with scores.open() as f:
        table = {r["submission"]: r for r in csv.DictReader(f)}
    header = next(csv.reader(scores.open()))
    written = [f"{q.label} written" for q in questions if q.written]
    assert header == ["student", "submission", *auto, *written, "total", "possible", "written_possible", "seconds",
                      "error", "review"]
    got = {name: {q: float(r[q]) for q in auto} for name, r in table.items()}
    full = {q: float(p) for q, p in auto.items()}
    zero = {q: 0.0 for q in auto}
    for name in ("solutions.ipynb", "alternative.ipynb", "loop.ipynb", "no_metadata.ipynb"):
        assert got[name] == full, (name, table[name]["error"])
        assert float(table[name]["total"]) == possible == float(table[name]["possible"])
    assert got["planted.ipynb"] == {**full, question: 0.0}
    for name in ("untouched.ipynb", "truncated.ipynb", "cheat_rebind.ipynb", "cheat_frames.ipynb", "cheat_read.ipynb",
                 "cheat_write.ipynb", "cheat_background.ipynb", "cheat_leak.ipynb", "cheat_unwatched.ipynb"):
        assert got[name] == zero, (name, table[name]["error"])
    # what rewrites the grading code in the kernel is named for the instructor; honest notebooks are not
    assert "harvest" in table["cheat_patch.ipynb"]["review"] and "_core" in table["cheat_patch.ipynb"]["review"]
    for name in ("cheat_rebind.ipynb", "cheat_frames.ipynb", "cheat_unwatched.ipynb"):
        assert table[name]["review"], name
    for name in ("solutions.ipynb", "alternative.ipynb", "untouched.ipynb", "planted.ipynb", "no_metadata.ipynb"):
        assert table[name]["review"] == "", (name, table[name]["review"])
    assert "time limit" in table["loop.ipynb"]["error"] and table["loop.ipynb"]["error"].startswith("loop.ipynb: ")
    assert "invalid JSON" in table["truncated.ipynb"]["error"] and "truncated.ipynb" in table["truncated.ipynb"]["error"]
    assert table["untouched.ipynb"]["error"] == "" and table["solutions.ipynb"]["error"] == ""
    assert {r["student"] for r in table.values()} == {Path(n).stem for n in table}  # no identity filled: file names
    assert all(r[w] == "" for r in table.values() for w in written)

    # the untouched notebook ran to the end with its stubs blank; the solutions without an error
    ran = nbformat.read(out / "executed" / "untouched.ipynb", as_version=4)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") is not None for c in code), "the untouched notebook did not run to the end"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert all(o.ename == "NotImplementedError" for o in errors), [o.ename for o in errors]
    assert any("not implemented yet" in json.dumps(c.outputs) for c in code if "check_" in c.source)
    solved = nbformat.read(out / "executed" / "solutions.ipynb", as_version=4)
    assert not [o for c in solved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]

    # nothing outside a submission's folder could be read or written; no file appeared
    def printed(name, prefix):
        nb = nbformat.read(out / "executed" / f"{name}.ipynb", as_version=4)
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        return json.loads(re.search(rf"^{prefix} (.*)$", text, re.M).group(1))

    read = printed("cheat_read", "READ")
    assert read.pop("interfaces") == ["lo"] and read.pop("network") == errno.ENETUNREACH  # no network at all
    visible = {Path(p).relative_to(Path.home()).parts[0] for p in tool._python_dirs()
               if Path(p).is_relative_to(Path.home())}
    for path, result in read.items():
        assert result in ("FileNotFoundError", "PermissionError") or (isinstance(result, list) and set(result) <= visible
                                                                       | {".venv", "venv"}), (path, result)
    wrote = printed("cheat_write", "WROTE")
    private = ("/tmp", "/dev/shm")  # the sandbox's own in-memory folders: writable there, gone afterwards
    assert all(wrote[p] in ("FileNotFoundError", "PermissionError", "OSError") for p in wrote if p not in private), wrote
    for folder in write_targets:
        assert not (Path(folder) / marker).exists(), f"a submission wrote into {folder}"
    after = _snapshot(*watched)
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}, "files changed outside the submissions"

    # no hidden input or expected value in any output or feedback; feedback has the public checks' messages
    tokens = hidden_tokens(secret, [p.exercise for q in questions for p in q.auto])
    outputs = [p for p in out.rglob("*") if p.is_file()]
    assert {p.parent.name for p in outputs} >= {"feedback", "executed", "answers"}
    leaks = [(p.name, t) for p in outputs for t in tokens if t in p.read_text(errors="ignore")]
    leaks += [("log", t) for t in tokens if t in "\n".join(log)]
    assert not leaks, leaks[:5]
    feedback = (out / "feedback" / "planted.md").read_text()
    assert "public check" in feedback and "hidden cases" in feedback and "expected" in feedback
    answers = next((out / "answers").glob("*.csv"), None)
    if answers is not None:
        rows_ = list(csv.DictReader(answers.open()))
        assert [r for r in rows_ if r["submission"] == "solutions.ipynb"] and set(rows_[0]) == {
            "student", "submission", "question", "answer", "points"}


def test_a_submission_writes_its_records_in_its_own_folder():
    """Chapters write claim records, cost estimates and checkpoints: in a graded run they go under its HOME."""
    for home in (tool.SANDBOX_HOME, "/scratch/x"):
        env = tool.sandbox_env("quick", home=home)
        assert env["HOME"] == home
        assert all(env[k].startswith(home + "/") for k in ("NCBOOK_RESULTS", "NCBOOK_CHECKPOINTS"))
