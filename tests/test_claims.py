"""The claim records behind the reproduction page: schema, the two kinds, verdicts, the page, and every
chapter's record calls.

The chapter checks read the ``record_claim(...)`` calls of every chapter with ``ast`` (no chapter is
executed): the kind is explicit; a paper's claim quotes a literal (never a value computed here) with a
source naming the paper and the place in it; an implementation check quotes nothing; a derived value
says how it was derived; every call has a tolerance or says why it cannot be tested. A registry of the
claims the papers make and the chapters test keeps each of them recorded, the unfavourable ones included.
"""

from __future__ import annotations

import ast
import html
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import ncbook.profiles
from ncbook import book
from ncbook.book import claim_counts, claim_verdict, describe_tolerance
from ncbook.book._records import CHAPTERS, CHECK_VERDICTS, CLAIM_VERDICTS, RECORD_PROFILES

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_FILES = sorted((ROOT / "book").glob("*.md"))
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)

PAPER = dict(kind="paper", chapter="seli", setting="s", profile="quick",
             paper="a statement", source="Thrampoulidis et al. 2022, abstract")
CHECK = dict(kind="check", chapter="seli", setting="s", profile="quick")


# --------------------------------------------------------------------------- the two kinds
def test_kind_is_required_and_has_no_default(tmp_path):
    with pytest.raises(TypeError, match="required keyword-only argument: 'kind'"):
        book.record_claim(tmp_path, chapter="seli", claim="c", ours=1.0, setting="s", profile="quick",
                          tolerance={"above": 0})
    with pytest.raises(ValueError, match=r"kind must be one of \['paper', 'check'\]; got 'value'"):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **{**CHECK, "kind": "value"})


@pytest.mark.parametrize("source, match", [
    (None, "needs its source"),
    ("  ", "needs its source"),
    ("Theorem 3", r"must name the paper \(authors and year\)"),                  # no paper
    ("Thrampoulidis et al. 2022", "must name the place in it"),                  # no place
    ("the paper's closed-form solution", r"must name the paper \(authors and year\) and the place"),
])
def test_paper_claim_without_a_source_is_refused(tmp_path, source, match):
    with pytest.raises(ValueError, match=match):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **{**PAPER, "source": source})


def test_paper_claim_needs_the_papers_statement(tmp_path):
    with pytest.raises(ValueError, match=r"a paper's claim needs paper="):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **{**PAPER, "paper": None})


@pytest.mark.parametrize("extra", [{"paper": "w* = ..."}, {"source": "Wang et al. 2026, abstract"}])
def test_a_check_quotes_nothing_from_a_paper(tmp_path, extra):
    with pytest.raises(ValueError, match=r"an implementation check \(kind='check'\) quotes nothing"):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **CHECK, **extra)


def test_checks_pass_or_fail_and_never_count_as_reproduced(tmp_path):
    book.record_claim(tmp_path, claim="a", ours=1.0, derived=1.0, derived_how="by hand",
                      tolerance={"abs": 1e-9, "against": "derived"}, **CHECK)
    book.record_claim(tmp_path, claim="b", ours=2.0, derived=1.0, derived_how="by hand",
                      tolerance={"abs": 1e-9, "against": "derived"}, **CHECK)
    book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **PAPER)
    records = {r["claim"]: r for r in book.load_claims(tmp_path)}
    assert (records["a"]["verdict"], records["b"]["verdict"], records["c"]["verdict"]) == ("passed", "failed",
                                                                                           "reproduced")
    counts = claim_counts(book.load_claims(tmp_path))
    assert counts["paper"]["quick"] == {"reproduced": 1, "not reproduced": 0, "not testable": 0, "not run": 0}
    assert counts["check"]["quick"] == {"passed": 1, "failed": 1, "not run": 0}
    assert [r["claim"] for r in book.load_claims(tmp_path, kind="check")] == ["a", "b"]


def test_derived_value_needs_its_method_and_a_number(tmp_path):
    with pytest.raises(ValueError, match="a derived value needs derived_how"):
        book.record_claim(tmp_path, claim="c", ours=1.0, derived=0.5, tolerance={"above": 0}, **PAPER)
    with pytest.raises(ValueError, match="derived must be a number"):
        book.record_claim(tmp_path, claim="c", ours=1.0, derived="0.5", derived_how="by hand",
                          tolerance={"above": 0}, **PAPER)


def test_measurement_must_be_numeric(tmp_path):
    with pytest.raises(TypeError, match="ours must be a number or a list of numbers; got 'high'"):
        book.record_claim(tmp_path, claim="c", ours="high", tolerance={"above": 0}, **PAPER)


def test_ranking_is_kept_and_checked(tmp_path):
    path = book.record_claim(tmp_path, claim="c", ours=1.0, ranking=[("A", np.float64(0.9)), ["B", float("nan")]],
                             tolerance={"above": 0}, **PAPER)
    assert json.loads(path.read_text())[0]["ranking"] == [["A", 0.9], ["B", "nan"]]
    with pytest.raises(ValueError, match=r"ranking must be a non-empty list of \[name, value\] pairs"):
        book.record_claim(tmp_path, claim="c", ours=1.0, ranking=[0.9, 0.8], tolerance={"above": 0}, **PAPER)


@pytest.mark.parametrize("tolerance, match", [
    ("agrees to 1e-4", "tolerance must be a dict"),
    ({}, "exactly one of"),
    ({"above": 0, "below": 1}, "exactly one of"),
    ({"abs": 1e-3}, "needs against='paper' or 'derived'"),
    ({"abs": 1e-3, "against": "paper"}, "needs against='paper' or 'derived'"),   # the paper value is a statement
    ({"above": 0, "against": "derived"}, "'against' goes with 'abs' or 'rel' only"),
    ({"between": [1]}, r"must be \[low, high\]"),
    ({"above": "zero"}, "must be a number or a list of numbers"),
])
def test_malformed_tolerance_is_refused(tmp_path, tolerance, match):
    with pytest.raises((TypeError, ValueError), match=match):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance=tolerance, **PAPER)


def test_tolerance_is_required_unless_not_testable(tmp_path):
    with pytest.raises(ValueError, match="tolerance is required"):
        book.record_claim(tmp_path, claim="c", ours=1.0, **PAPER)


# --------------------------------------------------------------------------- profiles
def test_every_profile_records_apart(tmp_path):
    assert set(ncbook.profiles.PROFILES) <= set(RECORD_PROFILES) == {"quick", "gpu", "full"}
    kw = dict(claim="w_min/w_maj at R = 10", derived=0.7079, derived_how="closed form",
              tolerance={"abs": 1e-3, "against": "derived"})
    for profile, ours in (("full", 0.7085), ("quick", 0.70), ("quick", 0.7079), ("gpu", 0.75)):
        book.record_claim(tmp_path, ours=ours, **{**CHECK, "profile": profile}, **kw)
    claims = book.load_claims(tmp_path)   # replaced by claim within a profile; quick, gpu, full in that order
    assert [(c["profile"], c["ours"], c["verdict"]) for c in claims] == [
        ("quick", 0.7079, "passed"), ("gpu", 0.75, "failed"), ("full", 0.7085, "passed")]
    assert sorted(p.parent.name for p in (tmp_path / "claims").glob("*/seli.json")) == ["full", "gpu", "quick"]
    assert [c["profile"] for c in book.load_claims(tmp_path, profile="gpu")] == ["gpu"]
    with pytest.raises(ValueError, match=r"profile must be one of \['quick', 'gpu', 'full'\]; got 'fast'"):
        book.record_claim(tmp_path, ours=1.0, **{**CHECK, "profile": "fast"}, **kw)


def test_records_carry_the_scale(tmp_path, monkeypatch):
    monkeypatch.setenv("NCBOOK_SCALE", "smoke")
    book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, **{**PAPER, "profile": "full"})
    assert book.load_claims(tmp_path)[0]["scale"] == "smoke"


# --------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize("ours, tolerance, refs, expected", [
    (0.7080, {"abs": 1e-3, "against": "derived"}, {"derived": 0.7079}, "reproduced"),
    (0.7179, {"abs": 1e-3, "against": "derived"}, {"derived": 0.7079}, "not reproduced"),
    ([1.0, 2.0], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "reproduced"),
    ([1.0, 2.1], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "not reproduced"),
    ([1.0], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "not reproduced"),   # shape mismatch
    (1.0, {"abs": 1e-9, "against": "derived"}, {"derived": float("nan")}, "not reproduced"),   # no reference
    (47.0, {"rel": 0.05, "against": "paper"}, {"paper": 47.88}, "reproduced"),
    (40.0, {"rel": 0.05, "against": "paper"}, {"paper": 47.88}, "not reproduced"),
    (0.3, {"above": 0.0}, {}, "reproduced"),
    (0.0, {"above": 0.0}, {}, "not reproduced"),        # strict
    (-0.4, {"below": 0.0}, {}, "reproduced"),
    (0.5, {"between": [0.0, 1.0]}, {}, "reproduced"),
    ([0.99, -0.98], {"between": [[0.95, -1.0], [1.0, -0.95]]}, {}, "reproduced"),    # one bound per entry
    ([0.99, 0.98], {"between": [[0.95, -1.0], [1.0, -0.95]]}, {}, "not reproduced"),
    ([0.99], {"between": [[0.95, -1.0], [1.0, -0.95]]}, {}, "not reproduced"),       # bounds for two entries
    ([0.5, -0.5], {"above": [0.0, -1.0]}, {}, "reproduced"),
    (float("nan"), {"above": 0.0}, {}, "not reproduced"),
    (float("inf"), {"below": 0.0}, {}, "not reproduced"),
    ([0.3, float("nan")], {"above": 0.0}, {}, "not reproduced"),
    ([0.3, None], {"above": 0.0}, {}, "not reproduced"),                            # a missing entry
    (np.array([0.3, np.nan]), {"above": 0.0}, {}, "not reproduced"),
    (torch.tensor([0.3, 0.4]), {"above": 0.0}, {}, "reproduced"),
    ("nan", {"above": 0.0}, {}, "not reproduced"),                                  # as a record keeps it
    (None, {"above": 0.0}, {}, "not run"),
])
def test_verdict_from_tolerance(ours, tolerance, refs, expected):
    assert claim_verdict(ours, tolerance, **refs) == expected


@pytest.mark.parametrize("ours, stored, reason", [
    (float("nan"), "nan", "the run happened but its measurement is not finite (nan)"),
    (np.float32("inf"), "inf", "the run happened but its measurement is not finite (inf)"),
    ([0.5, float("nan"), None], [0.5, "nan", None],
     "the run happened but its measurement is not finite (entry 1: nan, entry 2: missing)"),
    (torch.tensor([1.0, -math.inf]), [1.0, "-inf"], "the run happened but its measurement is not finite (entry 1: -inf)"),
])
def test_a_non_finite_measurement_is_not_reproduced_with_its_reason(tmp_path, ours, stored, reason):
    path = book.record_claim(tmp_path, claim="c", ours=ours, tolerance={"above": 0}, **PAPER)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text           # strict JSON
    [record] = json.loads(text)
    assert (record["verdict"], record["ours"], record["reason"]) == ("not reproduced", stored, reason)
    book.record_claim(tmp_path, claim="c", ours=ours, tolerance={"above": 0}, **CHECK)
    assert book.load_claims(tmp_path, kind="check")[0]["verdict"] == "failed"


def test_nothing_measured_is_not_run(tmp_path):
    book.record_claim(tmp_path, claim="c", ours=None, tolerance={"above": 0}, **PAPER)
    [record] = book.load_claims(tmp_path)
    assert (record["verdict"], record["reason"]) == ("not run", "nothing was measured in this run")


def test_not_testable_is_a_verdict_with_its_reason(tmp_path):
    book.record_claim(tmp_path, claim="c", ours=None, setting="s", not_testable=" digits, not CIFAR-100 ",
                      **{k: v for k, v in PAPER.items() if k != "setting"})
    [record] = book.load_claims(tmp_path)
    assert (record["verdict"], record["reason"], record["tolerance"]) == ("not testable", "digits, not CIFAR-100", None)
    with pytest.raises(ValueError, match="has no measurement: pass ours=None"):
        book.record_claim(tmp_path, claim="c", ours=0.5, not_testable="why", **PAPER)
    with pytest.raises(ValueError, match="not_testable is for a paper's claim"):
        book.record_claim(tmp_path, claim="c", ours=None, not_testable="why", **CHECK)
    with pytest.raises(ValueError, match="must say why"):
        book.record_claim(tmp_path, claim="c", ours=None, not_testable="  ", **PAPER)


def test_every_record_carries_its_verdict_and_values_stay_apart(tmp_path):
    book.record_claim(tmp_path, claim="a", ours=0.70, derived=0.7079, derived_how="closed form",
                      tolerance={"abs": 1e-3, "against": "derived"}, **PAPER)
    book.record_claim(tmp_path, claim="b", ours=None, tolerance={"abs": 1e-3, "against": "paper"},
                      **{**PAPER, "paper": 0.9292, "source": "Nguyen et al. 2026, Theorem 2"})
    records = {r["claim"]: r for r in book.load_claims(tmp_path)}
    assert records["a"]["verdict"] == "not reproduced" and records["b"]["verdict"] == "not run"
    assert records["a"]["paper"] == "a statement" and records["a"]["derived"] == 0.7079  # derived never in paper
    assert records["b"]["source"] == "Nguyen et al. 2026, Theorem 2" and records["b"]["derived"] is None
    assert records["a"]["tolerance_text"] == describe_tolerance({"abs": 1e-3, "against": "derived"})


def test_counts_treat_a_claim_missing_from_a_profile_as_not_run():
    records = [{"kind": "paper", "chapter": "seli", "claim": "a", "profile": "quick", "verdict": "reproduced"},
               {"kind": "paper", "chapter": "seli", "claim": "a", "profile": "full", "verdict": "not reproduced"},
               {"kind": "paper", "chapter": "seli", "claim": "b", "profile": "quick", "verdict": "not testable"}]
    counts = claim_counts(records)
    assert counts["paper"]["quick"] == {"reproduced": 1, "not reproduced": 0, "not testable": 1, "not run": 0}
    assert counts["paper"]["gpu"] == {"reproduced": 0, "not reproduced": 0, "not testable": 0, "not run": 2}
    assert counts["paper"]["full"] == {"reproduced": 0, "not reproduced": 1, "not testable": 0, "not run": 1}
    assert set(counts["check"]["quick"]) == set(CHECK_VERDICTS) and set(counts["paper"]["quick"]) == set(CLAIM_VERDICTS)


# --------------------------------------------------------------------------- the page
def test_the_report_opens_with_counts_and_keeps_the_kinds_apart(tmp_path):
    book.record_claim(tmp_path, claim="paper claim <a>", ours=float("nan"), tolerance={"above": 0}, **PAPER)
    book.record_claim(tmp_path, claim="our check", ours=1.0, tolerance={"above": 0}, **CHECK)
    book.record_claim(tmp_path, claim="paper claim <a>", ours=1.0, tolerance={"above": 0}, **{**PAPER, "profile": "gpu"})
    report = book.reproduction_report(tmp_path, shown_as="results")
    page = html.unescape(report.html)
    heads = [page.index(f"<h3>{h}</h3>") for h in
             ("Counts per kind and profile", "The papers' claims", "This book's implementation checks")]
    assert heads == sorted(heads) and heads[0] == 0
    assert "paper claim &lt;a&gt;" in report.html and heads[1] < page.index("paper claim <a>") < heads[2] \
        < page.index("our check")
    assert "the run happened but its measurement is not finite (nan)" in page
    assert report.counts["paper"]["quick"]["not reproduced"] == 1 and report.counts["paper"]["gpu"]["reproduced"] == 1
    assert report.counts["paper"]["full"]["not run"] == 1 and report.counts["check"]["quick"]["passed"] == 1
    assert report.origin.startswith("Claim records read from results/claims/ (3 records: quick 2, gpu 1, full 0)")
    assert "<a href" not in page and '<a href="seli.html">' in book.reproduction_report(tmp_path, links=True).html


def test_the_report_reads_past_the_cost_estimates_a_chapter_writes_while_running(tmp_path):
    """A chapter run writes cost estimates beside its claim records (results/costs/<profile>/): not a run's results."""
    from ncbook import train

    book.record_claim(tmp_path, claim="our check", ours=1.0, tolerance={"above": 0}, **CHECK)
    cost = train.ChapterCost("seli", results=tmp_path)
    cost.add("network", 1.0, train.Throughput(0.05, 0.5, 1e-4, 128, "cpu (1 thread)", "float32", 4))
    cost._measured("network", 1.5)
    assert list((tmp_path / "costs").rglob("*.json")), "the cost estimate was written"
    report = book.reproduction_report(tmp_path)
    assert report.counts["check"]["quick"]["passed"] == 1


def test_the_report_says_where_records_come_from_when_there_are_none(tmp_path):
    report = book.reproduction_report(tmp_path / "nowhere")
    assert report.origin.startswith(f"No claim records in {tmp_path / 'nowhere'}/claims/.")
    assert "RESULTS" in report.origin and "None recorded" in report.html
    assert "leave the recording cells out" not in report.origin and "results_dir()" in report.origin
    relative = book.reproduction_report("nowhere-here")                      # a lone notebook: where it looked, in full
    assert f"(that is, {os.path.abspath('nowhere-here')}/claims/)" in relative.origin
    assert all(n == 0 for k in report.counts.values() for p in k.values() for n in p.values())


def test_chapter_titles_and_order_follow_the_book():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    order = [Path(c["file"]).name for part in toc["parts"] for c in part["chapters"]]
    assert list(CHAPTERS) == [stem for stem in order if stem in CHAPTERS]
    for stem, title in CHAPTERS.items():
        heading = next(ln for ln in (ROOT / "book" / f"{stem}.md").read_text().splitlines() if ln.startswith("# "))
        assert heading[2:].strip() == title, f"ncbook.book._records.CHAPTERS[{stem!r}] is not the chapter's title"


def test_reproduction_page_reads_no_file_of_the_checkout():
    text = (ROOT / "book" / "reproduction.md").read_text()
    code = "\n".join(_CELL.findall(text))
    assert "_toc.yml" not in code and "yaml" not in code and ".md\").read" not in code
    assert "reproduction_report(RESULTS" in code


# --------------------------------------------------------------------------- the chapters' calls
def _call_name(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _record_calls(path: Path) -> list[ast.Call]:
    """The ``record_claim(...)`` calls of a chapter's cells."""
    calls = []
    for source in _CELL.findall(path.read_text()):
        lines = [ln for ln in source.splitlines() if not ln.startswith(":tags:")]
        tree = ast.parse("\n".join(lines))
        calls += [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _call_name(node) == "record_claim"]
    return calls


def _is_text(node: ast.expr) -> bool:
    """A string literal, an f-string, or a concatenation of them (a source written in the chapter)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(node.value.strip())
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and _is_text(node.left) and _is_text(node.right)


def _text(node: ast.expr) -> str:
    """The literal parts of a claim sentence (f-string holes left out)."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _text(node.left) + _text(node.right)
    return ""


def _claim_calls(tree: ast.AST) -> list[ast.Call]:
    """``Claim(kind, claim, ...)`` of the experiment layer, read like ``record_claim(kind=..., claim=...)``: its two
    positional arguments are named, and ``profile`` (given by ``record_claims`` to every claim) is implied."""
    calls = []
    for node in ast.walk(tree):
        name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
            getattr(getattr(node, "func", None), "id", "")
        if isinstance(node, ast.Call) and name == "Claim" and any(k.arg is None for k in node.keywords):
            continue   # a factory (Claim(kind, claim, **fields)): its callers are read by _experiment_claims
        if isinstance(node, ast.Call) and name == "Claim":
            named = [ast.keyword(arg=a, value=v) for a, v in zip(("kind", "claim"), node.args)]
            profile = ast.keyword(arg="profile", value=ast.Constant("set by record_claims"))
            calls.append(ast.Call(func=node.func, args=[], keywords=named + node.keywords + [profile],
                                  lineno=node.lineno, col_offset=node.col_offset))
    return calls


def _experiment_calls(path: Path) -> list[ast.Call]:
    """The claims a chapter builds in its cells and in its experiment module (ncbook/experiments/_<stem>.py)."""
    cells = [ast.parse("\n".join(ln for ln in src.splitlines() if not ln.startswith(":tags:")))
             for src in _CELL.findall(path.read_text())]
    module = ROOT / "ncbook" / "experiments" / f"_{path.stem}.py"
    trees = cells + ([ast.parse(module.read_text())] if module.exists() else [])
    return [_named_texts(call, tree) for tree in trees for call in _claim_calls(tree)]


def _named_texts(call: ast.Call, tree: ast.AST) -> ast.Call:
    """``call`` with a keyword that names a variable (``source=paper_source``) replaced by the text it is
    assigned once in ``tree``, so that a sentence kept in a variable is audited like a written one."""
    texts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _is_text(node.value):
            texts.setdefault(node.targets[0].id, []).append(node.value)
    for k in call.keywords:
        if isinstance(k.value, ast.Name) and len(texts.get(k.value.id, [])) == 1:
            k.value = texts[k.value.id][0]
    return call


CALLS = [(path.stem, call) for path in CHAPTER_FILES for call in _record_calls(path) + _experiment_calls(path)]


def _kw(call):
    return {k.arg: k.value for k in call.keywords}


def _experiment_claims(stem: str) -> list[tuple[str, str, dict]]:
    """``(kind, claim sentence, keywords)`` of the claims a chapter's experiments build (``Claim(kind, claim, ...)``
    or a helper ``_claim(kind, claim, verdict, ...)`` in ``ncbook/experiments/_<stem>.py``; their values and
    tolerances come from the verdicts, and ``tests/test_experiments_<stem>.py`` records them)."""
    path = ROOT / "ncbook" / "experiments" / f"_{stem}.py"
    if not path.exists():
        return []
    return [(ast.literal_eval(node.args[0]), _text(node.args[1]), _kw(node)) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Claim", "_claim") and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)]


def test_chapters_record_claims():
    stems = {stem for stem, _ in CALLS}
    stems |= {path.stem for path in CHAPTER_FILES if "experiments.record_claims(" in path.read_text()
              and _experiment_claims(path.stem)}
    assert set(CHAPTERS) <= stems, stems


@pytest.mark.parametrize("stem, call", CALLS, ids=[f"{s}:{c.lineno}" for s, c in CALLS])
def test_chapter_record_call(stem, call):
    kw = _kw(call)
    where = f"{stem} line {call.lineno}"
    assert None not in kw, f"{stem}: record_claim(**...) hides its arguments from this check"
    needed = {"kind", "claim", "ours", "setting"} | ({"profile"} if _call_name(call) == "record_claim" else set())
    assert needed <= set(kw), f"{where}: missing {needed - set(kw)}"
    kind = ast.literal_eval(kw["kind"])
    assert kind in ("paper", "check"), f"{where}: kind must be a literal 'paper' or 'check'"
    assert "tolerance" in kw or "not_testable" in kw, f"{where}: no tolerance and no reason it cannot be tested"
    assert isinstance(kw["claim"], (ast.Constant, ast.BinOp, ast.JoinedStr)) and _is_text(kw["claim"]), where
    if kind == "paper":
        try:   # quoted from the paper: a literal typed in the chapter, never a value computed here
            ast.literal_eval(kw["paper"])
        except (KeyError, ValueError):
            pytest.fail(f"{where}: a paper's claim needs paper= as a literal quoted from the paper")
        assert "source" in kw and _is_text(kw["source"]), f"{where}: paper value without source"
        how = _text(kw.get("derived_how", ast.Constant(""))).lower()
        assert "by hand" not in how, f"{where}: ncbook against a hand evaluation of the same formula is kind='check'"
    else:
        assert "paper" not in kw and "source" not in kw, f"{where}: a check quotes nothing from a paper"
        assert "not_testable" not in kw, where
    if "derived" in kw:
        assert "derived_how" in kw and _is_text(kw["derived_how"]), f"{where}: derived without how"
    if isinstance(kw.get("tolerance"), ast.Dict):
        keys = {ast.literal_eval(k) for k in kw["tolerance"].keys}
        assert len(keys & {"abs", "rel", "above", "below", "between"}) == 1, f"{where}: {keys}"
        if keys & {"abs", "rel"}:
            against = ast.literal_eval(kw["tolerance"].values[list(map(ast.literal_eval, kw["tolerance"].keys)).index("against")])
            assert against in kw, f"{where}: compares against {against!r}, which it does not record"


def _claims(stem: str, kind: str) -> list[str]:
    return [_text(_kw(c)["claim"]) for s, c in CALLS if s == stem and ast.literal_eval(_kw(c)["kind"]) == kind] + \
        [text for k, text, _ in _experiment_claims(stem) if k == kind]


# Claims the papers make (seeds and the fidelity review) that the chapters test: each recorded, the
# unfavourable ones included; and the chapters' self-checks, recorded as checks, never as claims.
REQUIRED = [
    ("inverse_reweighting", "paper", "improves top-1 accuracy over CE"),
    ("inverse_reweighting", "paper", "also beats the other reweighting methods"),
    ("inverse_reweighting", "paper", "lower NC2 than every baseline"),
    ("inverse_reweighting", "paper", "lower NC3 than every baseline"),
    ("inverse_reweighting", "paper", "lowest loss imbalance"),
    ("inverse_reweighting", "paper", "Ablation: the batch-wise inverse weights and the macro factor are complementary"),
    ("inverse_reweighting", "check", "Largest inverse-frequency baseline weight"),
    ("inverse_reweighting", "check", "Detaching the weights changes the gradient"),
    ("inverse_reweighting", "check", "evaluates the closed form"),
    ("mr2_margins", "paper", "MR2 assigns larger logit margins to hard classes"),
    ("mr2_margins", "paper", "Ablation: both the logit margins and the representation margin are needed"),
    ("mr2_margins", "paper", "does not trade off the easy classes"),
    ("mr2_margins", "check", "evaluates the margin rule"),
    ("contrastive_imbalance", "paper", "to one vector opposite the majority"),
    ("seli", "paper", "unlike the balanced case"),
    ("seli", "check", "STEP closed form of the SELI minority/majority classifier norm ratio"),
    ("weighted_contrastive", "paper", "Soft SupCon with the temperature-matched epsilon keeps the regular simplex"),
]


@pytest.mark.parametrize("stem, kind, fragment", REQUIRED, ids=[f"{s}:{f[:30]}" for s, _, f in REQUIRED])
def test_the_claims_a_chapter_tests_are_recorded_whole(stem, kind, fragment):
    assert any(fragment in text for text in _claims(stem, kind)), \
        f"{stem}: no {kind} record containing {fragment!r} (found {_claims(stem, kind)})"


def _call(stem: str, fragment: str) -> dict:
    [kw] = [_kw(c) for s, c in CALLS if s == stem and fragment in _text(_kw(c)["claim"])] or \
        [kw for _, text, kw in _experiment_claims(stem) if fragment in text]
    return kw


def test_the_records_the_review_found_comparing_unlike_quantities_now_compare_like_with_like():
    soft = _call("weighted_contrastive", "Soft SupCon with the temperature-matched epsilon")
    assert "derived" not in soft        # epsilon* is the setting, not a value next to a Gram deviation
    ridge = _call("seli", "unlike the balanced case")   # the measurement holds the balanced control
    assert isinstance(ridge["ours"], ast.List) and len(ridge["ours"].elts) == 2
    opposite = _call("contrastive_imbalance", "opposite the majority")  # the majority cosine is tested too
    assert isinstance(opposite["ours"], ast.List) and len(opposite["ours"].elts) == 2


FULL = sorted(p for profile in ("gpu", "full") for p in (ROOT / "results" / "claims" / profile).glob("*.json"))


@pytest.mark.parametrize("path", FULL, ids=[f"{p.parent.name}/{p.stem}" for p in FULL])
def test_committed_records(path):
    for record in json.loads(path.read_text()):
        kind = record.get("kind")
        assert kind in ("paper", "check"), record["claim"]
        assert record.get("verdict") in (CLAIM_VERDICTS if kind == "paper" else CHECK_VERDICTS), record["claim"]
        if kind == "paper":
            assert record.get("source") and record.get("paper") is not None, record["claim"]
        if record.get("derived") is not None:
            assert record.get("derived_how"), record["claim"]


def test_load_results_skips_what_chapters_write_while_running(tmp_path):
    """Claim records and cost estimates sit beside the results but are not results (no setting, no seed)."""
    book.save_result(tmp_path, chapter="seli", setting="s", seed=0, metrics={"a": 1.0}, wall_seconds=1.0)
    for folder in ("claims", "costs"):
        (tmp_path / folder / "quick").mkdir(parents=True)
        (tmp_path / folder / "quick" / "seli.json").write_text('{"estimate": 1.0}')
    assert [r["setting"] for r in book.load_results(tmp_path)] == ["s"]
