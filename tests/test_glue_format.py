"""One formatting of numbers: a glued value reads the same in the HTML page and in the reader notebooks.

The HTML page gets ``{glue:text}`name:spec``` from myst-nb (``format_plain_text`` applied to the
``text/plain`` that ``myst_nb.glue`` stored); a reader notebook gets ``{{name:spec}}`` from
``ncbook.book.fill``. Both are compared over every spec the chapters use (read from ``book/*.md``)
and the specs a chapter may reach for (``,d``, ``>8``, ``.1%`` ...), on values of every kind a
chapter glues: in this process, and end to end in a kernel where ``glue`` records for myst-nb.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from IPython.core.formatters import PlainTextFormatter
from myst_nb.core.variables import format_plain_text
from myst_nb.ext.glue import extract_glue_data_cell

from ncbook.book import _glue
from ncbook.book import fill, format_glued, glue

ROOT = Path(__file__).resolve().parents[1]
ROLE = re.compile(r"\{glue:text\}`([^`]+)`")
# specs a chapter may use beyond those it uses today (the issue's list, and the usual ones)
MORE_SPECS = ["", "s", ",d", "d", ">8", "<8", "^9", ".1%", ".0%", ".2e", ".3g", "+.3f", ",.0f", ",.2f", ".0f", ".1f",
              ".3f", "08.3f", "e", "g", "%"]
VALUES = [0, 7, -3, 12406, 1234567, 0.5, 2.0, -0.0004, 0.123456789, 1e-7, 3.5e12, 12406.0, 0.0, -0.0,
          math.nan, math.inf, -math.inf, True, False, "abc", "0.5", "12406"]


def chapter_specs() -> list[str]:
    """Every format spec of a ``{glue:text}`` role in the chapters, split as myst-nb splits it (last colon)."""
    specs = set()
    for path in sorted((ROOT / "book").glob("*.md")):
        for content in ROLE.findall(path.read_text(encoding="utf-8")):
            key_spec = content.rsplit(":", 1)
            specs.add(key_spec[1] if len(key_spec) == 2 else "")
    return sorted(specs)


def book_side(text_plain: str, spec: str) -> str:
    """What the HTML page shows: myst-nb's role, ``s`` when the role has no spec."""
    return format_plain_text(text_plain, spec or "s")


def test_the_chapters_specs_are_found():
    found = chapter_specs()
    assert {".3f", ".2f", ""} <= set(found), found     # the scan reads the roles (a broken regex finds nothing)


@pytest.mark.parametrize("spec", sorted(set(chapter_specs()) | set(MORE_SPECS)))
def test_fill_formats_as_the_book_does(spec):
    """Same text, or an error on both routes, for every value kind."""
    plain = PlainTextFormatter()
    for value in VALUES:
        try:
            expected = book_side(plain(value), spec)
        except (TypeError, ValueError, OverflowError):
            expected = None
        if expected is None:
            with pytest.raises(ValueError, match="does not apply to the glued value"):
                format_glued(value, spec)
        else:
            assert format_glued(value, spec) == expected, (value, spec)


def test_the_issue_cases_and_the_glued_kinds(monkeypatch):
    """``,d`` and ``>8`` of 12406 read as in the book; numpy and torch scalars are stored as plain numbers."""
    monkeypatch.setenv(_glue.READER_ENV, "reader")          # no myst-nb record outside a book build
    glue("lt_total", np.int64(12406))
    glue("lt_acc", torch.tensor(0.8125))
    assert fill("{{lt_total:,d}} | {{lt_total:>8}} | {{lt_total}} | {{lt_acc:.1%}} | {{lt_acc:.2e}}") == \
        "12,406 |    12406 | 12406 | 81.2% | 8.12e-01"
    glue("word", "collapse")
    with pytest.raises(ValueError, match=r"\{\{word:\.3f\}\}: spec '\.3f' does not apply to the glued value 'collapse'"):
        fill("{{word:.3f}}")


SPEC_CELL = """
import json, math, numpy as np, torch
from ncbook.book import glue, fill
VALUES = {values}
SPECS = {specs}
for i, v in enumerate(VALUES):
    glue(f"v{{i}}", v)
glue("v_np", np.float64(0.8125))
glue("v_t", torch.tensor(12406))
out = {{}}
for key in [f"v{{i}}" for i in range(len(VALUES))] + ["v_np", "v_t"]:
    for spec in SPECS:
        try:
            out[key + "|" + spec] = fill("{{{{" + key + (":" + spec if spec else "") + "}}}}")
        except ValueError:
            out[key + "|" + spec] = None
print(json.dumps(out))
"""


def test_a_kernel_glues_and_fills_as_the_book_renders(tmp_path, monkeypatch):
    """End to end: a kernel glues as a chapter does (myst-nb records in the outputs) and fills every
    placeholder; myst-nb's own formatting of those records gives the same texts."""
    import nbclient

    monkeypatch.delenv(_glue.READER_ENV, raising=False)
    specs = sorted(set(chapter_specs()) | set(MORE_SPECS))
    values = [v for v in VALUES if not (isinstance(v, float) and not math.isfinite(v))]
    source = SPEC_CELL.format(values=repr(values) [:-1] + ", math.nan, math.inf, -math.inf]", specs=repr(specs))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    cell = nb.cells[0]
    filled = json.loads("".join(o["text"] for o in cell.outputs if o.get("name") == "stdout"))
    records = dict(extract_glue_data_cell(cell))
    assert len(records) == len(values) + 5
    compared = 0
    for key, record in records.items():
        for spec in specs:
            try:
                expected = book_side(record["data"]["text/plain"], spec)
            except (TypeError, ValueError, OverflowError):
                expected = None
            assert filled[f"{key}|{spec}"] == expected, (key, record["data"]["text/plain"], spec)
            compared += 1
    assert compared == len(records) * len(specs)
