"""Grades ready for a gradebook: roster, points, written points merged into totals, exports, feedback pages.

* :class:`Roster`: a CSV of the class (``student_id``, ``name``, ``lms_id``; optional ``email``, ``login``,
  ``section``) that maps a submission to a student: by the LMS id at its fixed place in the file name a
  learning management system gives a download (Canvas ``name_12345_67890_file.ipynb``: the user id; Moodle
  ``Full Name_123456_assignsubmission_file_file.ipynb``: the participant id), which the ``STUDENT`` cell never
  overrides (a disagreement is flagged); only a name without one is matched by the notebook's ``STUDENT``
  cell (a student id, an email or a name).
* :class:`Points`: the points of every part (``<label>.public``, ``<label>.hidden``, ``<label>.written``),
  integers by default or a declared number of decimals, from the built assignment, a small points file
  and the command line; exact decimal arithmetic.
* :func:`merge`: the filled ``answers/*.csv`` points into ``scores.csv`` (and the feedback pages), so that
  ``total`` includes the written points.
* :func:`export`: a CSV that Canvas's or Moodle's gradebook import takes. Both refuse a results folder with
  two rows of one id, and a student with several rows unless the instructor names the one to keep.
* :func:`feedback_html`: one readable page per student: points, the public checks' messages, how many
  hidden cases passed (only how many: never a hidden input, nor which case failed or how), the written
  points once merged.
* :func:`csv_safe`: every CSV field a student's text reaches is neutralised for spreadsheets.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

KINDS = ("public", "hidden", "written")


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet may read as the start of a formula (OWASP's list): a field starting so is neutralised."""


def csv_safe(value) -> str:
    r"""A CSV field a spreadsheet shows as text: a value starting with one of :data:`FORMULA_STARTS` gets a
    leading apostrophe (the usual neutralisation); anything else is unchanged. Idempotent.

    Parameters
    ----------
    value : object
        The field (``None`` is written as ``""``).

    Returns
    -------
    str

    Examples
    --------
    >>> csv_safe('=HYPERLINK("http://x","y")'), csv_safe("@SUM(1)"), csv_safe("plain"), csv_safe(None)
    ('\'=HYPERLINK("http://x","y")', "'@SUM(1)", 'plain', '')
    >>> csv_safe(csv_safe("-2")) == "'-2"
    True
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_safe_row(row: dict) -> dict:
    """Every field of ``row`` through :func:`csv_safe`."""
    return {k: csv_safe(v) for k, v in row.items()}


def write_csv(path: Path, header: list[str], rows: list[dict]) -> None:
    """Write a CSV atomically (a temporary file, then a rename): a reader never sees half a file. Every field
    goes through :func:`csv_safe`: a student's text (a file name, an answer, a ``STUDENT`` value) never
    reaches a spreadsheet as a formula."""
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv_safe_row(r) for r in rows)
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    """Replace a file atomically (a temporary file, then a rename)."""
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- the roster
_ALIASES = {"student_id": ("student_id", "student id", "id", "sis user id", "id number", "idnumber"),
            "name": ("name", "student", "full name", "full_name"),
            "lms_id": ("lms_id", "lms id", "canvas id", "user id", "participant", "participant id", "moodle id"),
            "email": ("email", "email address", "e-mail"),
            "login": ("login", "sis login id", "username"),
            "section": ("section",)}


@dataclass(frozen=True)
class Student:
    student_id: str
    name: str
    lms_id: str = ""
    email: str = ""
    login: str = ""
    section: str = ""


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip().casefold()


@dataclass
class Roster:
    """The class list. ``match(file name, STUDENT value)`` gives (student or None, how it was matched)."""

    students: list[Student] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> "Roster":
        """Read a roster CSV (UTF-8; header names as in :data:`_ALIASES`, any case).

        Raises
        ------
        SystemExit
            No ``student_id`` and ``name`` columns, an empty or repeated student id, or a repeated LMS id.
        """
        path = Path(path)
        try:
            rows = _csv_rows(path)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise SystemExit(f"cannot read the roster {path}: {exc}") from None
        header = {_fold(h): h for h in (rows[0].keys() if rows else [])}
        columns = {key: next((header[a] for a in aliases if a in header), None) for key, aliases in _ALIASES.items()}
        if not columns["student_id"] or not columns["name"]:
            raise SystemExit(f"the roster {path} needs a student_id and a name column (and lms_id to match LMS "
                             f"downloads); its columns are {sorted(header.values())}")
        students, seen_ids, seen_lms = [], set(), set()
        for line, row in enumerate(rows, start=2):
            values = {k: (row.get(c) or "").strip() if c else "" for k, c in columns.items()}
            if not values["student_id"]:
                raise SystemExit(f"{path}:{line}: a student without a student_id")
            if values["student_id"] in seen_ids:
                raise SystemExit(f"{path}:{line}: the student_id {values['student_id']!r} appears twice")
            if values["lms_id"] and values["lms_id"] in seen_lms:
                raise SystemExit(f"{path}:{line}: the lms_id {values['lms_id']!r} appears twice")
            seen_ids.add(values["student_id"])
            if values["lms_id"]:
                seen_lms.add(values["lms_id"])
            students.append(Student(**values))
        return cls(students)

    def match(self, file_name: str, stated: str | None) -> tuple[Student | None, str]:
        """(student or None, how it was matched): :meth:`identify` without its notes."""
        student, how, _ = self.identify(file_name, stated)
        return student, how

    def identify(self, file_name: str, stated: str | None) -> tuple[Student | None, str, list[str]]:
        """The roster's student of a submission: (student or None, how it was matched, notes for ``review``).

        The LMS id is read at its fixed place in the LMS's download name (:func:`lms_id_in`: Canvas
        ``name_[LATE_]<user id>_<submission id>_...``, Moodle ``..._<participant id>_assignsubmission_...``),
        never picked from other numbers of the name. A name with an LMS id is that student's, whatever the
        notebook's ``STUDENT`` cell says (a disagreement is a note); an id the roster lacks matches no one.
        Only a name without an LMS id is matched by the ``STUDENT`` value (id, email, login or name; case and
        spaces ignored).

        Examples
        --------
        >>> r = Roster([Student("s1", "Ann Lee", "111"), Student("s2", "Bo Chan", "222")])
        >>> r.identify("leeann_111_9002_hw.ipynb", None)[:2]
        (Student(student_id='s1', name='Ann Lee', lms_id='111', email='', login='', section=''), 'LMS id in the file name')
        >>> r.identify("leeann_111_9002_hw_222.ipynb", "s2")[2]
        ["the STUDENT cell says 's2' but the file name's LMS id 111 is Ann Lee's (s1): graded as s1"]
        """
        lms = lms_id_in(file_name)
        if lms is not None:
            hits = [s for s in self.students if s.lms_id == lms]
            if not hits:
                return None, "not in the roster", [f"the LMS id {lms} in the file name is not in the roster"]
            student, notes = hits[0], []
            if stated and not self._is(student, stated):
                notes.append(f"the STUDENT cell says {stated!r} but the file name's LMS id {lms} is "
                             f"{student.name}'s ({student.student_id}): graded as {student.student_id}")
            return student, "LMS id in the file name", notes
        if stated:
            key = _fold(stated)
            for attr in ("student_id", "email", "login", "name"):
                hits = [s for s in self.students if getattr(s, attr) and _fold(getattr(s, attr)) == key]
                if len(hits) == 1:
                    return hits[0], f"STUDENT cell ({attr.replace('_', ' ')})", []
        return None, "not in the roster", []

    @staticmethod
    def _is(student: Student, stated: str) -> bool:
        key = _fold(stated)
        return any(getattr(student, a) and _fold(getattr(student, a)) == key
                   for a in ("student_id", "email", "login", "name", "lms_id"))


_CANVAS = re.compile(r"^[^_]+_(?:LATE_)?(\d+)_\d+_")
_MOODLE = re.compile(r"_(\d+)_assignsubmission_")


def lms_id_in(file_name: str) -> str | None:
    """The LMS id at its fixed place in an LMS download's file name, or None.

    Moodle ``Full Name_<participant id>_assignsubmission_file_<name>``; Canvas
    ``<lastfirst>_[LATE_]<user id>_<submission id>_<name>`` (the first ``_``-separated field is the student's
    name without underscores). Numbers elsewhere in the name never count.

    Examples
    --------
    >>> lms_id_in("smithcarol_12345_998877_seli.ipynb"), lms_id_in("smithcarol_LATE_12345_998877_seli_222.ipynb")
    ('12345', '12345')
    >>> lms_id_in("Dan Ng_654321_assignsubmission_file_seli.ipynb"), lms_id_in("x_999_y.ipynb")
    ('654321', None)
    """
    m = _MOODLE.search(file_name) or _CANVAS.match(file_name)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- points
def parse_points(value: str, precision: int, where: str) -> Decimal:
    """A non-negative number of points with at most ``precision`` decimals, as a Decimal.

    Raises
    ------
    SystemExit
        Naming ``where``: not a number, negative, or more decimals than declared.
    """
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise SystemExit(f"{where}: {value!r} is not a number of points") from None
    if not d.is_finite() or d < 0:
        raise SystemExit(f"{where}: points must be a finite number >= 0; got {value!r}")
    if d != d.quantize(Decimal(1).scaleb(-precision)):
        raise SystemExit(f"{where}: {value!r} has more than {precision} decimal(s); declare --precision "
                         f"{max(precision + 1, -d.as_tuple().exponent)} to use it")
    return d


def fmt(d: Decimal | None, precision: int) -> str:
    """Points as text with exactly ``precision`` decimals ("" for None)."""
    if d is None:
        return ""
    return str(d.quantize(Decimal(1).scaleb(-precision)))


@dataclass
class Points:
    """Points per part: ``table["ex-seli-1/etf_cost_ratio.public"]``, ``...hidden``, ``table["ex-seli-1.written"]``."""

    table: dict[str, Decimal]
    precision: int = 0

    @classmethod
    def of(cls, questions, *, precision: int = 0, file: Path | None = None, overrides: list[str] = ()) -> "Points":
        """The built assignment's points, then a points file's lines (``key = value``, ``#`` comments, and an
        optional ``precision = N``), then ``KEY=VALUE`` overrides. ``key`` is ``<label>.<kind>`` (every part of
        the question) or ``<label>/<function>.<kind>``; kinds: public, hidden, written.

        Raises
        ------
        SystemExit
            An unknown question or kind, a malformed line, or a value that is not a valid number of points.
        """
        lines: list[tuple[str, str, str]] = []
        if file is not None:
            try:
                text = Path(file).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise SystemExit(f"cannot read the points file {file}: {exc}") from None
            for n, line in enumerate(text.splitlines(), start=1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                if "=" not in line:
                    raise SystemExit(f"{file}:{n}: expected `key = value`, got {line!r}")
                key, value = (s.strip() for s in line.split("=", 1))
                if key == "precision":
                    precision = _precision(value, f"{file}:{n}")
                else:
                    lines.append((key, value, f"{file}:{n}"))
        for item in overrides:
            if "=" not in item:
                raise SystemExit(f"--point {item!r}: expected KEY=VALUE (e.g. ex-seli-1.hidden=3)")
            key, value = (s.strip() for s in item.split("=", 1))
            lines.append((key, value, f"--point {item}"))
        table: dict[str, Decimal] = {}
        for q in questions:
            for p in q.auto:
                table[f"{q.label}/{p.function}.public"] = Decimal(str(p.public))
                table[f"{q.label}/{p.function}.hidden"] = Decimal(str(p.hidden))
            if q.written:
                table[f"{q.label}.written"] = Decimal(str(q.written))
        for key, value, where in lines:
            m = re.fullmatch(r"(?P<label>[^/]+?)(?:/(?P<function>\w+))?\.(?P<kind>public|hidden|written)", key)
            if not m:
                raise SystemExit(f"{where}: {key!r} is not <question>.<public|hidden|written> (or "
                                 "<question>/<function>.<kind>)")
            label, function, kind = m.group("label"), m.group("function"), m.group("kind")
            targets = [k for k in table if _label_of(k) == label and k.endswith("." + kind)
                       and (function is None or k == f"{label}/{function}.{kind}")]
            if not targets:
                known = sorted({_label_of(k) for k in table})
                raise SystemExit(f"{where}: no {kind} part of a question {label!r}"
                                 f"{' with the function ' + repr(function) if function else ''}; the questions are "
                                 f"{known}")
            for k in targets:
                table[k] = parse_points(value, precision, where)
        for key, value in table.items():  # the built defaults must fit the declared precision too
            table[key] = parse_points(str(value.normalize()), precision, f"the points of {key}")
        return cls(table, precision)

    def part(self, label: str, function: str, kind: str) -> Decimal:
        return self.table[f"{label}/{function}.{kind}"]

    def written(self, label: str) -> Decimal:
        return self.table.get(f"{label}.written", Decimal(0))

    def as_dict(self) -> dict:
        return {"precision": self.precision, "table": {k: str(v) for k, v in self.table.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "Points":
        return cls({k: Decimal(v) for k, v in data["table"].items()}, int(data["precision"]))


def _label_of(key: str) -> str:
    """The question of a points key: ``ex-seli-1/f.public`` and ``ex-seli-1.written`` -> ``ex-seli-1``."""
    return key.split("/")[0] if "/" in key else key.rsplit(".", 1)[0]


def _precision(value: str, where: str) -> int:
    try:
        p = int(value)
    except ValueError:
        raise SystemExit(f"{where}: precision must be a whole number of decimals (0 for integer points)") from None
    if not 0 <= p <= 4:
        raise SystemExit(f"{where}: precision must be between 0 and 4 decimals; got {p}")
    return p


# --------------------------------------------------------------------------- feedback pages
_STYLE = ("body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
          "pre{background:#f5f5f5;padding:.6rem;overflow-x:auto;white-space:pre-wrap}"
          "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}"
          ".ok{color:#1a7f37}.no{color:#b42318}")


def feedback_html(record: dict) -> str:
    """One student's feedback page (a self-contained HTML file) from the record the grader keeps.

    Shows the points per question, each public check's message, how many hidden cases passed (only how many:
    a function that sees every hidden case could choose which fail, and how, to pass out a few bits a
    regrade), the written points once merged, and the problems the run met. Every text is escaped; no hidden
    input or expected value is in a record.
    """
    e = html.escape
    p = record["precision"]

    def pts(v) -> str:
        return fmt(Decimal(v), p) if v not in (None, "") else "not graded yet"

    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>Feedback: {e(record['student'])}</title><style>{_STYLE}</style></head><body>",
           f"<h1>Feedback for {e(record['student'])}</h1>",
           f"<p>Assignment <b>{e(record['assignment'])}</b>, submission <code>{e(record['submission'])}</code>.</p>",
           "<table><tr><th>question</th><th>autograded</th><th>written</th></tr>"]
    for q in record["questions"]:
        auto = f"{pts(q['auto'])} of {pts(q['auto_possible'])}" if q["auto_possible"] not in (None, "0") else "-"
        written = f"{pts(q['written'])} of {pts(q['written_possible'])}" if q["written_possible"] not in (None, "0") \
            else "-"
        out.append(f"<tr><td>{e(q['title'])} ({e(q['label'])})</td><td>{e(auto)}</td><td>{e(written)}</td></tr>")
    total = record.get("total")
    out.append(f"<tr><th>total</th><th colspan=2>{e(pts(total))} of {e(pts(record['possible']))}"
               f"{'' if record.get('written_done') else ' (written answers not graded yet)'}</th></tr></table>")
    for q in record["questions"]:
        for part in q["parts"]:
            ok = part["public_passed"]
            out += [f"<h2>{e(q['title'])}: <code>{e(part['function'])}</code></h2>",
                    f"<p>Public check ({e(pts(part['public_possible']))}): "
                    f"<span class={'ok' if ok else 'no'}>{'passed' if ok else 'failed'}</span>, "
                    f"{e(pts(part['public']))} earned.</p>",
                    f"<pre>{e(part['message'])}</pre>",
                    f"<p>Hidden cases ({e(pts(part['hidden_possible']))}): {part['hidden_passed']} of "
                    f"{part['hidden_total']} passed, {e(pts(part['hidden']))} earned.</p>"]
    if record.get("problems"):
        out += ["<h2>Problems while grading</h2>", "<ul>"] + \
               [f"<li>{e(x)}</li>" for x in record["problems"]] + ["</ul>"]
    out += ["</body></html>", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- merge and export
def _one_row_each(rows: list[dict], keep, where: Path) -> dict[str, dict]:
    """student_id -> the one row of each roster student: refuses (SystemExit) two rows of one ``id``, and a
    student with several rows unless ``keep`` (submission file names, or row ids) names exactly one of them."""
    ids: dict[str, int] = {}
    for r in rows:
        ids[r["id"]] = ids.get(r["id"], 0) + 1
    twice = sorted(i for i, n in ids.items() if n > 1)
    if twice:
        raise SystemExit(f"{where}: the id {twice[0]!r} names {ids[twice[0]]} rows; every row must have an id of its "
                         "own (grade the folder again into a new results folder)")
    keep = set(keep or ())
    by_student: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("student_id"):
            by_student.setdefault(r["student_id"], []).append(r)
    chosen, unsure = {}, []
    for sid, mine in by_student.items():
        kept = [r for r in mine if r["submission"] in keep or r["id"] in keep]
        if len(mine) == 1 and not kept:
            chosen[sid] = mine[0]
        elif len(kept) == 1:
            chosen[sid] = kept[0]
        else:
            unsure.append((sid, mine, kept))
    if unsure:
        lines = [f"  {sid}: {', '.join(repr(r['submission']) for r in mine)}"
                 + (f" (--keep names {len(kept)} of them)" if kept else "") for sid, mine, kept in unsure]
        raise SystemExit(f"{where}: {len(unsure)} student(s) have several rows; say which submission counts with "
                         "--keep <submission> (once per student; the review column says why each was matched):\n"
                         + "\n".join(lines))
    return chosen


def merge(out: Path, log=print, *, keep=()) -> list[dict]:
    """Put the filled ``answers/*.csv`` points into ``scores.csv`` and the feedback pages; return the rows.

    Each answers file has ``id, student, submission, question, answer, points``; a blank ``points`` is "not
    graded yet". ``total`` becomes autograded plus written points (of the written questions graded so far).
    ``keep``: the submissions (file names or ids) that count for students with several rows.

    Raises
    ------
    SystemExit
        A malformed answers file, an unknown question or id, points outside ``[0, written possible]`` or
        with more decimals than declared (naming the file and line); two rows with one id; a roster student
        with several rows that ``keep`` does not settle.
    """
    out = Path(out)
    info = json.loads((out / "grading.json").read_text())
    points = Points.from_dict(info["points"])
    p = points.precision
    rows = _csv_rows(out / "scores.csv")
    _one_row_each(rows, keep, out / "scores.csv")
    by_id = {r["id"]: r for r in rows}
    written_labels = info["written"]
    filled: dict[tuple[str, str], Decimal] = {}
    for path in sorted((out / "answers").glob("*.csv")):
        try:
            answers = _csv_rows(path)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise SystemExit(f"cannot read {path}: {exc}") from None
        for line, row in enumerate(answers, start=2):
            where = f"{path}:{line}"
            label, rid = (row.get("question") or "").strip(), (row.get("id") or "").strip()
            if label not in written_labels:
                raise SystemExit(f"{where}: unknown question {label!r} (written questions: {written_labels})")
            if rid not in by_id:
                raise SystemExit(f"{where}: no submission with id {rid!r} in scores.csv")
            value = (row.get("points") or "").strip()
            if not value:
                continue
            d = parse_points(value, p, where)
            if d > points.written(label):
                raise SystemExit(f"{where}: {value} points, more than the {fmt(points.written(label), p)} "
                                 f"{label} is worth")
            filled[(rid, label)] = d
    missing = 0
    for r in rows:
        written_sum, complete = Decimal(0), True
        for label in written_labels:
            d = filled.get((r["id"], label))
            r[f"{label} written"] = fmt(d, p)
            if d is None:
                complete, missing = False, missing + 1
            else:
                written_sum += d
        r["written"] = fmt(written_sum, p)
        r["total"] = fmt(Decimal(r["autograded"] or 0) + written_sum, p)
        record_path = out / "feedback" / f"{r['id']}.json"
        if record_path.is_file():
            record = json.loads(record_path.read_text())
            for q in record["questions"]:
                if q["label"] in written_labels:
                    d = filled.get((r["id"], q["label"]))
                    q["written"] = None if d is None else str(d)
            record["total"], record["written_done"] = r["total"], complete
            write_text(record_path, json.dumps(record, indent=1))
            write_text(out / "feedback" / f"{r['id']}.html", feedback_html(record))
    write_csv(out / "scores.csv", info["columns"], rows)
    log(f"merged written points into {out / 'scores.csv'}: {len(filled)} answers graded"
        + (f", {missing} still blank (their points are not in total yet)" if missing else ""))
    return rows


# Canvas: the gradebook import reads Student, ID, SIS User ID, SIS Login ID and Section, then one column per
# assignment (matched by name, or "Name (id)"); a second "Points Possible" row is what Canvas's own export
# writes. Sources: Canvas Instructor Guide, "How do I import grades in the Gradebook?"
# (community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807); Ohio State's
# "Import a CSV file to Carmen grades" guide (the required columns); PrairieLearn issue #4547 (tested: Student,
# SIS Login ID and Section suffice, an assignment column matches by its name).
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Moodle: the assignment's offline grading worksheet (assignfeedback_offline): the importer finds the columns
# "Identifier" ("Participant <id>", the number in the download's file names), "Grade" and "Last modified
# (grade)" by their English names and reads "Feedback comments" when feedback comments are enabled. Source:
# moodle/moodle mod/assign/feedback/offline/importgradeslib.php and the assign language strings
# (recordid, grade, lastmodifiedgrade, hiddenuser).
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


class _SafeWriter:
    """A :func:`csv.writer` whose every field goes through :func:`csv_safe`."""

    def __init__(self, writer):
        self.writer = writer

    def writerow(self, row):
        self.writer.writerow([csv_safe(v) for v in row])


def export(out: Path, roster: Roster, fmt_name: str, *, assignment: str, path: Path | None = None,
           log=print, keep=()) -> Path:
    """Write ``out/export-<format>.csv`` (or ``path``): one row per roster student with a graded submission.

    ``total`` is the points (after :func:`merge`, autograded plus written). Submissions not in the roster are
    left out (named in the log). Every field goes through :func:`csv_safe`.

    Raises
    ------
    SystemExit
        An unknown format; ``scores.csv`` with two rows of one id; a student with several rows (two files
        matched to one student) unless ``keep`` (submission file names or ids) names the one that counts.
    """
    out = Path(out)
    info = json.loads((out / "grading.json").read_text())
    p = int(info["points"]["precision"])
    if fmt_name not in ("canvas", "moodle"):
        raise SystemExit(f"unknown export format {fmt_name!r}: canvas or moodle")
    rows = _csv_rows(out / "scores.csv")
    by_student = _one_row_each(rows, keep, out / "scores.csv")
    for r in sorted(rows, key=lambda r: r["submission"]):
        if not r.get("student_id"):
            log(f"  not exported (not in the roster): {r['submission']}")
    blank = [r["submission"] for r in by_student.values() if any(r.get(f"{w} written", "") == ""
                                                                 for w in info["written"])]
    if blank:
        log(f"  warning: {len(blank)} exported rows lack written points (fill answers/*.csv, then merge)")
    possible = info["possible"]
    buffer = io.StringIO()
    writer = _SafeWriter(csv.writer(buffer, lineterminator="\r\n"))
    if fmt_name == "canvas":
        writer.writerow(CANVAS_COLUMNS + [assignment])
        writer.writerow(["Points Possible", "", "", "", ""] + [possible])
        for s in roster.students:
            r = by_student.get(s.student_id)
            if r is not None:
                writer.writerow([s.name, s.lms_id, s.student_id, s.login or s.email, s.section, r["total"]])
    elif fmt_name == "moodle":
        writer.writerow(MOODLE_COLUMNS)
        now = time.strftime("%A, %d %B %Y, %I:%M %p")
        for s in roster.students:
            r = by_student.get(s.student_id)
            if r is not None and s.lms_id:
                comment = f"Autograded {r['autograded']} of {info['auto_possible']}; written " \
                          f"{r['written'] or 'not graded'} of {info['written_possible']}."
                writer.writerow([f"Participant {s.lms_id}", s.name, s.email, "", r["total"], possible, "Yes", "",
                                 now, comment])
    else:
        raise SystemExit(f"unknown export format {fmt_name!r}: canvas or moodle")
    target = Path(path or out / f"export-{fmt_name}.csv")
    write_text(target, buffer.getvalue())
    log(f"exported {len(by_student)} students to {target} ({fmt_name}; points with {p} decimals)")
    return target
