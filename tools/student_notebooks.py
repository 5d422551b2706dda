#!/usr/bin/env python3
"""Generate the student version of every chapter: solutions replaced by stubs.

For each jupytext chapter listed in ``_toc.yml`` this writes ``student/<stem>.ipynb``,
without outputs, where

* every code cell tagged ``solution``, and every other code cell between a ``{solution-start}``
  directive and its ``{solution-end}`` except those calling an autograder ``check_<name>(...)``,
  is replaced by a stub: a cell that defines functions (or classes) keeps its imports,
  ``def``/``class`` header lines and docstrings, and each function body (comments included)
  becomes ``raise NotImplementedError("exercise: <label>")``; any other cell becomes that single
  ``raise`` line;
* the text of every solution (the markdown between ``{solution-start}`` and
  ``{solution-end}``, directive lines included) is removed and replaced by a short
  "write your answer here" prompt.

The output is deterministic (sorted JSON keys, fixed metadata, cell ids derived from the
cell's position) so that CI can regenerate and compare::

    python3 tools/student_notebooks.py            # (re)write student/*.ipynb
    python3 tools/student_notebooks.py --check    # exit 1 if a committed file is stale
"""

from __future__ import annotations

import argparse
import ast
import copy
import io
import json
import re
import sys
import tokenize
from pathlib import Path

import jupytext
import yaml

ROOT = Path(__file__).resolve().parents[1]
STUB_TAG = "exercise"
ANSWER_PROMPT = "**Your answer ({label}).** Write it here."

# A directive fence opens with 3+ backticks or colons followed by {name}; it closes with the
# same run of characters alone on a line.
# an autograder call (ncbook.exercises.check_<name>(...)): kept even inside a solution
_CHECK_CALL = re.compile(r"\bcheck_\w+\s*\(")
# cells that record the chapter's checks for the reproduction page (dropped from student notebooks)
_RECORDS_CLAIMS = re.compile(r"\brecord_claim\(")
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>solution-start|solution-end)\}\s*(?P<arg>\S*)")


# --------------------------------------------------------------------------- chapters
def toc_chapters(root: Path) -> list[Path]:
    """The jupytext sources (``.md`` with a jupytext header) listed in ``root/_toc.yml``, in TOC order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    paths = [root / f"{f}.md" for f in files]
    return [p for p in paths if p.exists() and p.read_text().lstrip().startswith("---") and "jupytext:" in p.read_text()]


# --------------------------------------------------------------------------- code stubs
def _raise_line(label: str, indent: str = "") -> str:
    return f'{indent}raise NotImplementedError("exercise: {label}")'


def _header_end(tokens: list[tokenize.TokenInfo], node: ast.AST) -> int:
    """Line number (1-based) of the ``:`` that ends the ``def``/``class`` header of ``node``."""
    depth, started = 0, False
    for tok in tokens:
        if not started:
            started = tok.start == (node.lineno, node.col_offset)
            if not started:
                continue
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.OP and tok.string == ":" and depth == 0:
            return tok.start[0]
    return node.body[0].lineno - 1


def _docstring(node: ast.AST) -> ast.Expr | None:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _stub_function(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], tokens, label: str) -> list[str]:
    """Header lines (decorators included) and docstring of ``node``; the body becomes one raise.

    Comments and statements of the body are dropped: they are the solution.
    """
    start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
    end = _header_end(tokens, node)
    first_body = node.body[0]
    if first_body.lineno == end:  # body on the header line: rebuild the header
        bare = copy.copy(node)
        bare.body, bare.decorator_list = [ast.Pass()], []
        header = ast.unparse(bare).splitlines()[0]
        indent = " " * node.col_offset
        out = [indent + line.strip() for line in lines[start:node.lineno - 1]]
        return out + [indent + header, _raise_line(label, indent + "    ")]
    out = lines[start:end]
    doc = _docstring(node)
    if doc is not None:
        out += lines[doc.lineno - 1:doc.end_lineno]
    return out + [_raise_line(label, " " * first_body.col_offset)]


def _stub_class(node: ast.ClassDef, lines: list[str], tokens, label: str) -> list[str]:
    """Header and docstring of the class, and the stub of each of its methods."""
    start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
    end = _header_end(tokens, node)
    if node.body[0].lineno == end:
        return lines[start:end]
    out = lines[start:end]
    doc = _docstring(node)
    if doc is not None:
        out += lines[doc.lineno - 1:doc.end_lineno]
    methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for i, item in enumerate(methods):
        out += ([""] if i or doc is not None else []) + _stub_function(item, lines, tokens, label)
    if not methods:
        out.append(_raise_line(label, " " * node.body[0].col_offset))
    return out


def stub_code(source: str, label: str) -> str:
    """The student stub of a solution cell's ``source``.

    Cells that define functions or classes keep their imports, definitions' signature lines and
    docstrings; function bodies become ``raise NotImplementedError``. Anything else (including
    source that is not plain Python, e.g. with magics) becomes a single ``raise`` line.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return _raise_line(label)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not defs:
        return _raise_line(label)
    lines = source.splitlines()
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out += lines[node.lineno - 1:node.end_lineno]
        elif isinstance(node, ast.ClassDef):
            out += ([""] if out else []) + _stub_class(node, lines, tokens, label)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += ([""] if out else []) + _stub_function(node, lines, tokens, label)
    return "\n".join(out)


# --------------------------------------------------------------------------- markdown
def _strip_solutions(text: str, inside: str | None, prompted: set[str]) -> tuple[str, str | None]:
    """Remove solution text from one markdown cell.

    ``inside`` is the label of the solution region open at the start of the cell (None if
    none). Where a region's text is removed, one answer prompt is left (once per region; the
    labels already prompted are in ``prompted``, which is updated). Returns the kept text and the
    region still open at the end of the cell.
    """
    kept: list[str] = []
    pending = False
    lines = text.split("\n")

    def prompt():
        kept.extend(["", ANSWER_PROMPT.format(label=inside), ""])
        prompted.add(inside)

    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if m:  # skip the directive through its closing fence
            fence = m.group("fence")
            j = i + 1
            while j < len(lines) and lines[j].strip() != fence:
                j += 1
            if m.group("name") == "solution-start":
                if inside is not None:
                    raise ValueError(f"{{solution-start}} {m.group('arg')} opens inside the solution of {inside}")
                inside = m.group("arg") or "solution"
            else:
                if inside is None:
                    raise ValueError(f"{{solution-end}} without a {{solution-start}} near: {lines[i]!r}")
                if pending:
                    prompt()
                    pending = False
                inside = None
            i = j + 1
            continue
        if inside is None:
            kept.append(lines[i])
        elif lines[i].strip() and inside not in prompted:
            pending = True
        i += 1
    if pending:
        prompt()
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept))
    return text.strip("\n"), inside


# --------------------------------------------------------------------------- notebooks
def _cell(cell_type: str, source: str, tags: list[str], index: int) -> dict:
    cell = {"cell_type": cell_type, "id": f"cell-{index:03d}", "metadata": {"tags": tags} if tags else {},
            "source": source.splitlines(keepends=True)}
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def student_cells(nb) -> list[tuple[str, str, list[str]]]:
    """(cell_type, source, tags) of the student version of the jupytext notebook ``nb``."""
    out: list[tuple[str, str, list[str]]] = []
    inside: str | None = None
    prompted: set[str] = set()
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown":
            text, inside = _strip_solutions(cell.source, inside, prompted)
            if text.strip():
                out.append(("markdown", text, tags))
        elif cell.cell_type == "code":
            if _RECORDS_CLAIMS.search(cell.source):
                continue  # the book's reproduction records: a student's run must not overwrite them
            if "solution" in tags or (inside is not None and not _CHECK_CALL.search(cell.source)):
                label = inside or _first_def_name(cell.source) or "solution"
                tags = [t for t in tags if t != "solution"] + ([STUB_TAG] if STUB_TAG not in tags else [])
                out.append(("code", stub_code(cell.source, label), tags))
            else:
                out.append(("code", cell.source, tags))
        else:
            out.append((cell.cell_type, cell.source, tags))
    if inside is not None:
        raise ValueError(f"{{solution-start}} {inside} has no {{solution-end}}")
    return out


def _first_def_name(source: str) -> str | None:
    m = re.search(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", source, re.M)
    return f"write {m.group(1)}" if m else None


def student_notebook(path: Path, root: Path = ROOT) -> str:
    """The JSON text of the student notebook of chapter ``path`` (deterministic)."""
    nb = jupytext.read(path)
    cells = [_cell(kind, src, tags, i) for i, (kind, src, tags) in enumerate(student_cells(nb))]
    metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "ncbook": {"student_version_of": path.relative_to(root).as_posix(),
                   "generated_by": "tools/student_notebooks.py"},
    }
    doc = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate(root: Path, out_dir: Path) -> dict[Path, str]:
    """Map of student notebook path -> text for every chapter in ``root``'s TOC."""
    return {out_dir / f"{p.stem}.ipynb": student_notebook(p, root) for p in toc_chapters(root)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if student/ differs from a fresh generation")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (holds _toc.yml)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <root>/student)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    out_dir = (args.out or root / "student").resolve()
    fresh = generate(root, out_dir)
    if args.check:
        stale = [p for p, text in fresh.items() if not p.exists() or p.read_text() != text]
        extra = sorted(set(out_dir.glob("*.ipynb")) - set(fresh)) if out_dir.exists() else []
        for p in stale:
            print(f"stale student notebook: {p.relative_to(root)} (missing or out of date)", file=sys.stderr)
        for p in extra:
            print(f"stale student notebook: {p.relative_to(root)} (its chapter is not in _toc.yml)", file=sys.stderr)
        if stale or extra:
            print("regenerate with: python3 tools/student_notebooks.py", file=sys.stderr)
            return 1
        print(f"student notebooks up to date ({len(fresh)} chapters)")
        return 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for p in sorted(set(out_dir.glob("*.ipynb")) - set(fresh)):
        p.unlink()
    for p, text in fresh.items():
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
    print(f"wrote {len(fresh)} student notebooks to {out_dir.relative_to(root) if out_dir.is_relative_to(root) else out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
