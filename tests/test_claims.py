"""The claim records behind the reproduction page: schema, verdicts, and every chapter's record calls.

The chapter check reads the ``record_claim(...)`` calls of every chapter with ``ast`` (no chapter is
executed): a paper value must be a literal (quoted, never computed here) and come with its source, a
derived value with how it was derived, and every call with a tolerance, so every record gets a verdict.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from ncbook import book
from ncbook.book import claim_verdict, describe_tolerance

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.md"))
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)

BASE = dict(chapter="seli", setting="s", profile="quick")


# --------------------------------------------------------------------------- schema
def test_paper_value_needs_a_source(tmp_path):
    with pytest.raises(ValueError, match="a paper value needs its source"):
        book.record_claim(tmp_path, claim="c", ours=1.0, paper=0.5, tolerance={"above": 0}, **BASE)
    with pytest.raises(ValueError, match="a paper value needs its source"):
        book.record_claim(tmp_path, claim="c", ours=1.0, paper="a statement", source="  ",
                           tolerance={"above": 0}, **BASE)


def test_derived_value_needs_its_method_and_a_number(tmp_path):
    with pytest.raises(ValueError, match="a derived value needs derived_how"):
        book.record_claim(tmp_path, claim="c", ours=1.0, derived=0.5, tolerance={"above": 0}, **BASE)
    with pytest.raises(ValueError, match="derived must be a number"):
        book.record_claim(tmp_path, claim="c", ours=1.0, derived="0.5", derived_how="by hand",
                           tolerance={"above": 0}, **BASE)


def test_comparison_needs_a_ranking(tmp_path):
    with pytest.raises(ValueError, match="must state the ranking"):
        book.record_claim(tmp_path, claim="c", ours=1.0, kind="comparison", tolerance={"above": 0}, **BASE)
    path = book.record_claim(tmp_path, claim="c", ours=1.0, kind="comparison", ranking=[["A", 0.9], ["B", 0.8]],
                              tolerance={"above": 0}, **BASE)
    assert json.loads(path.read_text())[0]["ranking"] == [["A", 0.9], ["B", 0.8]]


@pytest.mark.parametrize("tolerance, match", [
    ("agrees to 1e-4", "tolerance must be a dict"),
    ({}, "exactly one of"),
    ({"above": 0, "below": 1}, "exactly one of"),
    ({"abs": 1e-3}, "needs against='paper' or 'derived'"),
    ({"abs": 1e-3, "against": "paper"}, "needs against='paper' or 'derived'"),   # no numeric paper value
    ({"above": 0, "against": "derived"}, "'against' goes with 'abs' or 'rel' only"),
    ({"between": [1]}, r"must be \[low, high\]"),
])
def test_malformed_tolerance_is_refused(tmp_path, tolerance, match):
    with pytest.raises((TypeError, ValueError), match=match):
        book.record_claim(tmp_path, claim="c", ours=1.0, paper="statement", source="abstract",
                           tolerance=tolerance, **BASE)


def test_unknown_profile_and_kind_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"profile must be one of \['quick', 'gpu', 'full'\]"):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, chapter="x", setting="s",
                           profile="fast")
    with pytest.raises(ValueError, match="kind must be one of"):
        book.record_claim(tmp_path, claim="c", ours=1.0, tolerance={"above": 0}, kind="ranking", **BASE)


# --------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize("ours, tolerance, refs, expected", [
    (0.7080, {"abs": 1e-3, "against": "derived"}, {"derived": 0.7079}, "reproduced"),
    (0.7179, {"abs": 1e-3, "against": "derived"}, {"derived": 0.7079}, "not reproduced"),
    ([1.0, 2.0], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "reproduced"),
    ([1.0, 2.1], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "not reproduced"),
    ([1.0], {"abs": 1e-9, "against": "derived"}, {"derived": [1.0, 2.0]}, "not reproduced"),   # shape mismatch
    (47.0, {"rel": 0.05, "against": "paper"}, {"paper": 47.88}, "reproduced"),
    (40.0, {"rel": 0.05, "against": "paper"}, {"paper": 47.88}, "not reproduced"),
    (0.3, {"above": 0.0}, {}, "reproduced"),
    (0.0, {"above": 0.0}, {}, "not reproduced"),        # strict
    (-0.4, {"below": 0.0}, {}, "reproduced"),
    (0.5, {"between": [0.0, 1.0]}, {}, "reproduced"),
    (float("nan"), {"above": 0.0}, {}, "not reproduced"),
    (None, {"above": 0.0}, {}, "not run"),
])
def test_verdict_from_tolerance(ours, tolerance, refs, expected):
    assert claim_verdict(ours, tolerance, **refs) == expected


def test_every_record_carries_its_verdict_and_kinds_stay_apart(tmp_path):
    book.record_claim(tmp_path, claim="a", ours=0.70, derived=0.7079, derived_how="closed form",
                       tolerance={"abs": 1e-3, "against": "derived"}, **BASE)
    book.record_claim(tmp_path, claim="b", ours=None, paper=0.9292, source="Theorem 2",
                       tolerance={"abs": 1e-3, "against": "paper"}, **BASE)
    records = {r["claim"]: r for r in book.load_claims(tmp_path)}
    assert records["a"]["verdict"] == "not reproduced" and records["b"]["verdict"] == "not run"
    assert records["a"]["paper"] is None and records["a"]["derived"] == 0.7079      # derived never in paper
    assert records["b"]["source"] == "Theorem 2" and records["b"]["derived"] is None
    assert records["a"]["tolerance_text"] == describe_tolerance({"abs": 1e-3, "against": "derived"})


# --------------------------------------------------------------------------- the chapters' calls
def _record_calls(path: Path) -> list[ast.Call]:
    calls = []
    for source in _CELL.findall(path.read_text()):
        lines = [ln for ln in source.splitlines() if not ln.startswith(":tags:")]
        tree = ast.parse("\n".join(lines))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name == "record_claim":
                    calls.append(node)
    return calls


def _is_text(node: ast.expr) -> bool:
    """A string literal, an f-string, or a concatenation of them (a source written in the chapter)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(node.value.strip())
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.BinOp) and _is_text(node.left) and _is_text(node.right)


CALLS = [(path.stem, call) for path in CHAPTERS for call in _record_calls(path)]


def test_chapters_record_claims():
    stems = {stem for stem, _ in CALLS}
    assert {"nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting",
            "mr2_margins"} <= stems, stems


@pytest.mark.parametrize("stem, call", CALLS, ids=[f"{s}:{c.lineno}" for s, c in CALLS])
def test_chapter_record_call(stem, call):
    kw = {k.arg: k.value for k in call.keywords}
    assert None not in kw, f"{stem}: record_claim(**...) hides its arguments from this check"
    assert {"claim", "ours", "setting", "profile", "tolerance"} <= set(kw), f"{stem}: missing {set(kw)}"
    if "paper" in kw:
        try:   # quoted from the paper: a literal typed in the chapter, never a value computed here
            ast.literal_eval(kw["paper"])
        except ValueError:
            pytest.fail(f"{stem} line {call.lineno}: paper= must be a literal quoted from the paper, "
                        f"got {ast.unparse(kw['paper'])}")
        assert "source" in kw and _is_text(kw["source"]), f"{stem} line {call.lineno}: paper value without source"
    if "derived" in kw:
        assert "derived_how" in kw and _is_text(kw["derived_how"]), f"{stem} line {call.lineno}: derived without how"
    if isinstance(kw["tolerance"], ast.Dict):
        keys = {ast.literal_eval(k) for k in kw["tolerance"].keys}
        assert len(keys & {"abs", "rel", "above", "below", "between"}) == 1, f"{stem} line {call.lineno}: {keys}"
        if keys & {"abs", "rel"}:
            against = ast.literal_eval(kw["tolerance"].values[list(map(ast.literal_eval, kw["tolerance"].keys)).index("against")])
            assert against in kw, f"{stem} line {call.lineno}: compares against {against!r}, which it does not record"
    kind = kw.get("kind")
    if kind is not None and ast.literal_eval(kind) == "comparison":
        assert "ranking" in kw, f"{stem} line {call.lineno}: a comparison must state the ranking"


FULL = sorted((ROOT / "results" / "claims" / "full").glob("*.json"))


@pytest.mark.parametrize("path", FULL, ids=[p.stem for p in FULL])
def test_committed_full_records(path):
    for record in json.loads(path.read_text()):
        assert record.get("verdict") in ("reproduced", "not reproduced", "not run"), record["claim"]
        if record.get("paper") is not None:
            assert record.get("source"), record["claim"]
        if record.get("derived") is not None:
            assert record.get("derived_how"), record["claim"]
