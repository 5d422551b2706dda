#!/usr/bin/env python3
"""Generate the reader notebooks of every chapter: the Colab/Jupyter notebook and the student one.

From each jupytext chapter ``book/<stem>.md`` listed in ``_toc.yml`` this writes, without outputs:

* ``book/<stem>.ipynb``: the notebook the launch (rocket) button opens in Colab; the whole chapter
  with its solutions;
* ``student/<stem>.ipynb`` (chapters with exercises): the same notebook with every solution removed: solution code becomes
  stubs whose functions raise ``NotImplementedError`` (so each exercise's check reports "not
  implemented yet" and Run-all reaches the end), solution text becomes an answer prompt.

Markdown cells carry no MyST-only markup: definitions, theorems and exercises become bold titles
with blockquotes, numbered per chapter as in the HTML book (Exercise 2.3 in chapter 2);
citations become "Author et al. (year)" with the chapter's references as a Markdown list;
cross-references become text; ``literalinclude`` becomes the listing (read with Sphinx's own
``LiteralIncludeReader``); labelled equations get ``\\tag{2.1}``. A paragraph quoting glued
numbers (``{glue:text}``) becomes a small code cell calling :func:`ncbook.book.show`, whose output
is the sentence with the numbers of the reader's own run.

Markers a chapter uses for the notebooks (the HTML book ignores them or keeps its own reading):

* ``{only} html`` / ``{only} notebook`` / ``{only} not student`` (Sphinx's ``only`` directive around
  Markdown): the HTML build defines the builder's tag ``html``; these notebooks evaluate the
  expression with the tag ``notebook`` (and ``student`` in the student notebook). Text written for
  the HTML page goes in ``{only} html``, its notebook wording in ``{only} notebook``; prose that
  gives an exercise's answer away goes in ``{only} not student``. No label (equation, theorem,
  exercise) inside an ``only`` block: numbers must agree between the book and the notebooks.
* ``:class: answer-<exercise label>`` on a ``literalinclude`` (a listing that holds the answer of
  that exercise) and the cell tag ``answer-<exercise label>`` on a code cell that holds it (the
  cell may only define functions/classes, with imports): the student notebooks withhold them,
  saying where the reference is and asking for the exercise first; the Colab notebook keeps them.
* Bookkeeping: cells tagged ``remove-cell``, ``remove-input``, ``hide-input`` or ``hide-cell`` (but the
  install cell, which stays visible) and cells made only of ``glue``/``put`` calls are hidden in
  the notebooks as in the book (Colab's form view ``cellView: form`` and Jupyter's
  ``jupyter.source_hidden``; in a cell whose output the book removes, a last bare expression is
  silenced with ``;``); a cell made only of ``glue``/``put`` calls whose values no notebook sentence
  quotes is dropped.
* A paragraph quoting glued numbers becomes one hidden ``show`` cell at the paragraph's place (a
  sentence that runs on through a display equation stays one unit); if a value is computed only by
  a later cell the paragraph moves after it (:func:`forward_glues` lists
  these, for ``tools/check_chapters.py``: a chapter should compute before it quotes).

Cells of the student notebook that belong to an exercise carry the metadata
``{"ncbook": {"exercise": "<label>", "role": "stub" | "check" | "answer"}}``; in the Colab notebook
the solution code cells carry ``"role": "solution"`` and the checks ``"check"``. Hidden
bookkeeping cells carry ``"role": "setup"``, glued paragraphs ``"role": "glue"`` and withheld answer
cells of the student notebook ``{"role": "withheld", "answers": "<label>"}``.

Why our own converter: sphinx-tojupyter (the Sphinx builder QuantEcon uses) needs a full Sphinx
build, fills glued numbers with the build's values rather than the reader's, loses the cells that
myst-nb removes (install cell, imports) and every cell tag, and leaves gated solution cells in. So
the code cells come verbatim from the jupytext source and only the Markdown is converted here, with
well-kept libraries for the parts that have one: jupytext (reading), Sphinx's
``LiteralIncludeReader`` (listings, same options as the HTML), pybtex (the bibliography), nbformat.

Public API (also used by the assignment tools and the chapter checklist): :func:`colab_notebook`,
:func:`student_notebook` (``md_path -> nbformat.NotebookNode``), :func:`forward_glues`,
:func:`answer_markers`. The output is deterministic, so CI regenerates and compares::

    python3 tools/student_notebooks.py            # (re)write book/<stem>.ipynb and student/<stem>.ipynb
    python3 tools/student_notebooks.py --check    # exit 1 if a file is stale, missing or orphaned
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
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
STUB_TAG = "exercise"
ANSWER_PROMPT = "**Your answer ({title}).** Write it here."
STUDENT_LINK = "[Open the exercises in Colab]"
READER_LINE = 'os.environ["NCBOOK_NOTEBOOK"] = "reader"  # glued numbers are shown by ncbook.book.show'
NOTEBOOK_TAGS = ("notebook",)              # the tags an ``{only}`` expression sees in the Colab notebook
STUDENT_TAGS = ("notebook", "student")     # ... and in the student notebook
ANSWER_PREFIX = "answer-"                  # :class: answer-<label> on a listing, tag answer-<label> on a cell
BOOKKEEPING_TAGS = ("remove-cell", "remove-input", "hide-input", "hide-cell")
HIDDEN = {"cellView": "form", "jupyter": {"source_hidden": True}}   # Colab form view, Jupyter collapsed input
GLUE_TITLE = "#@title Numbers from your run"
SETUP_TITLE = "#@title Setup (imports and helpers; the code is hidden)"
BOOKKEEPING_TITLE = "#@title Bookkeeping (numbers for the text; the code is hidden)"
OUTPUT_TITLE = "#@title Code hidden, as in the book (its output follows)"
WITHHELD_LISTING = ("> **Listing withheld in the student notebook.** Here the chapter prints `{obj}` of "
                    "`{module}`, the reference answer of {title}. Do the exercise first; afterwards the "
                    "chapter's Colab notebook shows the listing.")
WITHHELD_CELL = ("# Withheld in the student notebook: the chapter's version of this cell is the answer of "
                 "{title}.\n# Write it in the exercise first; the chapter's Colab notebook shows it.")

# an autograder call (check_<name>(...) or run_cases(...)): kept even inside a solution
_CHECK_CALL = re.compile(r"\b(check_\w+|run_cases)\s*\(")
# cells that record the chapter's checks for the reproduction page (not in reader notebooks)
_RECORDS_CLAIMS = re.compile(r"\brecord_claim\(")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,}|~{3,})(?P<rest>.*)$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<name>[\w:.-]+)\}`(?P<content>[^`]*)`")
_ROLE_OR_CODE = re.compile(r"\{(?P<name>[\w:.-]+)\}`(?P<content>[^`]*)`|(?P<code>(?P<ticks>`+)[^`]+?(?P=ticks))")
_EQ_LABEL = re.compile(r"^\$\$\s*\((?P<label>[^)\s]+)\)\s*$")
_GLUE = re.compile(r"\x00(?P<name>\w+)(?::(?P<spec>[^\x00]*))?\x00")
PRF_TITLES = {"definition": "Definition", "theorem": "Theorem", "proposition": "Proposition",
              "corollary": "Corollary", "lemma": "Lemma", "remark": "Remark", "example": "Example",
              "conjecture": "Conjecture", "observation": "Observation", "property": "Property",
              "axiom": "Axiom", "criterion": "Criterion", "algorithm": "Algorithm", "proof": "Proof"}


# --------------------------------------------------------------------------- chapters and labels
def _toc(root: Path) -> dict:
    return yaml.safe_load((root / "_toc.yml").read_text())


def _is_jupytext(path: Path) -> bool:
    text = path.read_text()
    return text.lstrip().startswith("---") and "jupytext:" in text.split("\n---", 1)[0]


def toc_chapters(root: Path = ROOT) -> list[Path]:
    """The jupytext sources (``.md`` with a jupytext header) listed in ``root/_toc.yml``, in TOC order."""
    return [p for p, _ in _toc_entries(root) if p.exists() and _is_jupytext(p)]


def _toc_entries(root: Path) -> list[tuple[Path, bool]]:
    """Every page of the TOC in order, with whether it is numbered (its part says ``numbered``)."""
    toc = _toc(root)
    out = [(root / f"{toc['root']}.md", False)]

    def walk(entries, numbered):
        for entry in entries or []:
            if "file" in entry:
                out.append((root / f"{entry['file']}.md", numbered))
            walk(entry.get("sections"), numbered)

    for part in toc.get("parts", []):
        walk(part.get("chapters"), bool(part.get("numbered")))
    walk(toc.get("chapters"), bool(toc.get("numbered")))
    return out


@dataclass
class Target:
    """A label's text in the notebooks: kind ("Definition", "Exercise", "equation") and number."""

    kind: str
    number: str
    doc: str

    def text(self) -> str:
        return f"({self.number})" if self.kind == "equation" else f"{self.kind} {self.number}".strip()


@dataclass
class Book:
    root: Path
    chapter_number: dict[str, int]
    titles: dict[str, str]
    targets: dict[str, Target]
    bib: dict


def _walk_directives(text: str):
    """(name, arg, options) of every directive of ``text``, nested ones included, in order."""
    for block in _blocks(text.split("\n")):
        if block[0] == "directive":
            _, name, arg, options, body, _ = block
            yield name, arg, options
            yield from _walk_directives("\n".join(body))


def _check_only_blocks(text: str, doc: str) -> None:
    """An ``{only}`` block holds no label: the book and the notebooks must number alike."""
    for block in _blocks(text.split("\n")):
        if block[0] != "directive":
            continue
        _, name, arg, options, body, _ = block
        inner = "\n".join(body)
        if name == "only":
            if not arg.strip():
                raise ValueError(f"{doc}: an {{only}} block needs a tag expression (html, notebook, not student)")
            labelled = [o.get("label") for _, _, o in _walk_directives(inner) if o.get("label")]
            equations = [m.group("label") for line in body if (m := _EQ_LABEL.match(line.strip()))]
            if labelled or equations or re.search(r"^\(.+\)=\s*$", inner, re.M):
                raise ValueError(f"{doc}: the {{only}} {arg} block holds a label ({(labelled + equations)[:3]}): "
                                 "move labelled blocks and equations out of it")
        _check_only_blocks(inner, doc)


@lru_cache(maxsize=4)
def _book(root: Path) -> Book:
    numbers, titles, targets = {}, {}, {}
    count = 0
    for path, numbered in _toc_entries(root):
        if not path.exists():
            continue
        doc = path.relative_to(root).with_suffix("").as_posix()
        text = path.read_text()
        m = re.search(r"^# (.+)$", _strip_front_matter(text), re.M)
        titles[doc] = m.group(1).strip() if m else path.stem
        if numbered:
            count += 1
            numbers[doc] = count
        prefix = f"{count}." if numbered else ""
        counters: dict[str, int] = {}
        body = "\n".join(c.source for c in jupytext.reads(text, fmt="md:myst").cells if c.cell_type == "markdown")
        _check_only_blocks(body, doc)
        for name, arg, options in _walk_directives(body):
            kind = None
            if name.startswith("prf:") and name[4:] in PRF_TITLES and name != "prf:proof":
                kind = PRF_TITLES[name[4:]]
            elif name == "exercise":
                kind = "Exercise"
            if kind:
                counters[kind] = counters.get(kind, 0) + 1
                if "label" in options:
                    targets[options["label"]] = Target(kind, f"{prefix}{counters[kind]}", doc)
        eq = 0
        for line in body.split("\n"):
            m = _EQ_LABEL.match(line.strip())
            if m:
                eq += 1
                targets[m.group("label")] = Target("equation", f"{prefix}{eq}", doc)
    bib = _read_bib(root)
    return Book(root, numbers, titles, targets, bib)


def _strip_front_matter(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        return text[end + 4:] if end >= 0 else text
    return text


# --------------------------------------------------------------------------- bibliography
def _read_bib(root: Path) -> dict:
    """key -> pybtex entry of every .bib file named in ``_config.yml``."""
    from pybtex.database import parse_file

    config = yaml.safe_load((root / "_config.yml").read_text()) if (root / "_config.yml").exists() else {}
    entries = {}
    for name in config.get("bibtex_bibfiles", []) or []:
        path = root / name
        if path.exists():
            entries.update(parse_file(str(path), bib_format="bibtex").entries)
    return entries


def _latex_text(text: str) -> str:
    text = re.sub(r"\\[`'\"^~=.]\{?(\w)\}?", r"\1", text)     # accents: keep the letter
    text = re.sub(r"\\&", "&", text)
    return re.sub(r"[{}]", "", text).replace("--", "–").strip()


def _last_names(entry) -> list[str]:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    return [_latex_text(" ".join(p.prelast_names + p.last_names)) for p in people]


def _cite_label(entry) -> tuple[str, str]:
    names = _last_names(entry) or ["Anonymous"]
    who = names[0] if len(names) == 1 else f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al."
    return who, entry.fields.get("year", "n.d.")


def _reference(entry) -> str:
    people = entry.persons.get("author") or []
    authors = []
    for p in people:
        initials = " ".join(f"{n[0]}." for n in p.first_names + p.middle_names if n)
        authors.append(_latex_text(" ".join(p.prelast_names + p.last_names)) + (f", {initials}" if initials else ""))
    who = "; ".join(authors) if authors else "Anonymous"
    f = entry.fields
    venue = f.get("journal") or f.get("booktitle") or f.get("publisher") or ""
    if not venue and f.get("eprint"):
        venue = f"arXiv:{f['eprint']}"
    parts = [f"{who} ({f.get('year', 'n.d.')}).", f"*{_latex_text(f.get('title', ''))}*."]
    if venue:
        parts.append(_latex_text(venue) + ".")
    url = f.get("url") or (f"https://doi.org/{f['doi']}" if f.get("doi") else "")
    if url:
        parts.append(f"<{url}>")
    return " ".join(parts)


# --------------------------------------------------------------------------- MyST -> Markdown
def _blocks(lines: list[str]):
    """Split Markdown lines into ("text", lines) and ("directive", name, arg, options, body, fence) blocks.

    Plain code fences (no ``{name}``) stay text, with their content untouched.
    """
    i, text = 0, []
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            text.append(lines[i])
            i += 1
            continue
        fence, rest = m.group("fence"), m.group("rest")
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}):
            j += 1
        d = _DIRECTIVE.match(rest.strip())
        if not d:
            text.extend(lines[i:j + 1])
            i = j + 1
            continue
        if text:
            yield ("text", text)
            text = []
        body = lines[i + 1:j]
        options = {}
        while body and _OPTION.match(body[0].strip()):
            o = _OPTION.match(body[0].strip())
            options[o.group("key")] = o.group("value").strip()
            body = body[1:]
        while body and not body[0].strip():
            body = body[1:]
        yield ("directive", d.group("name"), d.group("arg").strip(), options, body, fence)
        i = j + 1
    if text:
        yield ("text", text)


@dataclass
class Context:
    """What converting one chapter needs: the book's labels, and what the chapter cited."""

    book: Book
    doc: str
    student: bool
    cited: list[str] = field(default_factory=list)
    moves: list[tuple[str, list[str]]] = field(default_factory=list)   # glued paragraphs moved down

    @property
    def tags(self):
        from sphinx.util.tags import Tags

        return Tags(list(STUDENT_TAGS if self.student else NOTEBOOK_TAGS))

    def exercise_title(self, label: str) -> str:
        target = self.book.targets.get(label)
        if target is None or target.kind != "Exercise" or target.doc != self.doc:
            raise ValueError(f"{self.doc}: the answer marker {ANSWER_PREFIX}{label} names no exercise of this chapter")
        return f"Exercise {target.number}"


def _role(m: re.Match, ctx: Context) -> str:
    name, content = m.group("name"), m.group("content")
    explicit = re.match(r"^(?P<text>.+?)\s*<(?P<label>[^<>]+)>$", content)
    if name.startswith("glue"):
        key, _, spec = content.partition(":")
        return f"\x00{key.strip()}{':' + spec if spec else ''}\x00"
    if name.startswith("cite"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        labels = []
        for key in keys:
            if key not in ctx.book.bib:
                raise ValueError(f"{ctx.doc}: citation {key!r} is not in the bibliography")
            if key not in ctx.cited:
                ctx.cited.append(key)
            labels.append(_cite_label(ctx.book.bib[key]))
        if name == "cite:t":
            return "; ".join(f"{who} ({year})" for who, year in labels)
        return "(" + "; ".join(f"{who}, {year}" for who, year in labels) + ")"
    if name in ("eq", "prf:ref", "ref", "numref"):
        if explicit:
            return explicit.group("text")
        target = ctx.book.targets.get(content)
        if target is None:
            raise ValueError(f"{ctx.doc}: unknown label {content!r} in {{{name}}}")
        text = target.text()
        if target.doc != ctx.doc and target.doc in ctx.book.titles:
            text += f" (chapter “{ctx.book.titles[target.doc]}”)"
        return text
    if name == "doc":
        if explicit:
            return explicit.group("text")
        doc = (Path(ctx.doc).parent / content).as_posix() if not content.startswith("/") else content.lstrip("/")
        doc = re.sub(r"(^|/)[^/]+/\.\./", r"\1", doc)
        title = ctx.book.titles.get(doc, content)
        number = ctx.book.chapter_number.get(doc)
        return f"chapter {number} (“{title}”)" if number else f"“{title}”"
    if name in ("py:func", "py:class", "py:meth", "py:obj", "py:mod", "py:data", "py:attr", "func", "class", "meth"):
        shown = content.lstrip("~!")
        if content.startswith("~"):
            shown = shown.rsplit(".", 1)[-1]
        return f"`{shown}{'()' if name.endswith('func') and not shown.endswith(')') else ''}`"
    if name == "math":
        return f"${content}$"
    raise ValueError(f"{ctx.doc}: no plain-Markdown form for the role {{{name}}}")


def _inline(text: str, ctx: Context) -> str:
    """Roles of ``text`` replaced (code spans are left alone)."""
    # one left-to-right scan: a role is replaced, an inline code span is kept as it is
    return _ROLE_OR_CODE.sub(lambda m: _role(m, ctx) if m.group("name") else m.group(0), text)


def _literalinclude(arg: str, options: dict, ctx: Context) -> list[str]:
    from sphinx.directives.code import LiteralIncludeReader

    path = (ctx.book.root / ctx.doc).parent / arg
    reader = LiteralIncludeReader(str(path), dict(options), SimpleNamespace(source_encoding="utf-8"))
    listing, _ = reader.read()
    lang = options.get("language", "python")
    return [f"```{lang}", *listing.rstrip("\n").split("\n"), "```"]


def _quote(lines: list[str]) -> list[str]:
    return [("> " + line) if line.strip() else ">" for line in lines]


def _convert_lines(lines: list[str], ctx: Context) -> list[str]:
    """Plain Markdown of MyST ``lines`` without solution directives (handled by the caller)."""
    out: list[str] = []
    for block in _blocks(lines):
        if block[0] == "text":
            out.extend(_convert_text(block[1], ctx))
            continue
        _, name, arg, options, body, _ = block
        if name.startswith("prf:") or name == "exercise":
            kind = "Exercise" if name == "exercise" else PRF_TITLES.get(name[4:], name[4:].title())
            target = ctx.book.targets.get(options.get("label", ""))
            number = f" {target.number}" if target else ""
            title = f" ({_inline(arg, ctx)})" if arg else ""
            out += ["", *_quote([f"**{kind}{number}{title}.**", "", *_convert_lines(body, ctx)]), ""]
        elif name == "literalinclude":
            answers = _answer_labels(options.get("class", "").split())
            if ctx.student and answers:
                obj = options.get("pyobject", Path(arg).name)
                file = re.sub(r"(^|/)[^/]+/\.\./", r"\1", (Path(ctx.doc).parent / arg).as_posix())
                module = file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
                titles = " and ".join(ctx.exercise_title(label) for label in answers)
                out += ["", WITHHELD_LISTING.format(obj=obj, module=module, title=titles), ""]
            else:
                for label in answers:
                    ctx.exercise_title(label)   # a marker must name an exercise of the chapter
                out += ["", *_literalinclude(arg, options, ctx), ""]
        elif name == "only":
            if ctx.tags.eval_condition(arg):
                out += ["", *_convert_lines(body, ctx), ""]
        elif name == "bibliography":
            refs = sorted(ctx.cited, key=lambda k: (_last_names(ctx.book.bib[k]) or [""])[0].lower()
                          + ctx.book.bib[k].fields.get("year", ""))
            out += ["", *[f"- {_reference(ctx.book.bib[k])}" for k in refs], ""]
        elif name in ("note", "tip", "warning", "important", "admonition", "seealso", "attention", "caution"):
            head = arg if name == "admonition" else name.title()
            out += ["", *_quote([f"**{_inline(head, ctx)}.**", "", *_convert_lines(body, ctx)]), ""]
        elif name == "math":
            out += ["", "$$", *body, "$$", ""]
        else:
            raise ValueError(f"{ctx.doc}: no plain-Markdown form for the directive {{{name}}}")
    return out


def _answer_labels(tokens) -> list[str]:
    """Exercise labels named by ``answer-<label>`` tokens (classes of a listing, tags of a cell)."""
    return [t[len(ANSWER_PREFIX):] for t in tokens if t.startswith(ANSWER_PREFIX) and len(t) > len(ANSWER_PREFIX)]


def _convert_text(lines: list[str], ctx: Context) -> list[str]:
    out, in_code = [], False
    for line in lines:
        if ctx.student and line.startswith(STUDENT_LINK):   # the student notebook does not link to itself
            continue
        if _FENCE.match(line):
            in_code = not in_code
            out.append(line)
            continue
        if in_code:
            out.append(line)
            continue
        m = _EQ_LABEL.match(line.strip())
        if m:
            target = ctx.book.targets[m.group("label")]
            out += [f"\\tag{{{target.number}}}", "$$"]
            continue
        if re.match(r"^\(.+\)=\s*$", line):   # a MyST target line
            continue
        out.append(_inline(line, ctx))
    return out


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


def _stub_function(node, lines: list[str], tokens, label: str) -> list[str]:
    """Header lines (decorators included) and docstring of ``node``; the body becomes one raise."""
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


def _defines(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def stub_code(source: str, label: str, title: str | None = None) -> str:
    """The student stub of a solution cell's ``source``.

    Cells that define functions or classes keep their imports, the definitions' signature lines and
    docstrings; function bodies become ``raise NotImplementedError`` (raised when the exercise's check
    calls the function, so Run-all goes on). Any other cell becomes a comment: code to write there
    is part of a written answer and nothing may raise at the top level.
    """
    if not _defines(source):
        return f"# Your code for {title or label} (optional): it is part of your answer."
    tree = ast.parse(source)
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


# --------------------------------------------------------------------------- glue paragraphs
def _paragraphs(text: str) -> list[str]:
    """Split Markdown at blank lines outside code fences and ``$$`` blocks."""
    paras, cur, fence, math = [], [], None, False
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m and fence is None:
            fence = m.group("fence")
        elif fence is not None and line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
            fence = None
        elif fence is None and line.strip().lstrip(">").strip().startswith("$$"):
            s = line.strip().lstrip(">").strip()
            if not (s.endswith("$$") and len(s) > 2):
                math = not math
        if not line.strip() and fence is None and not math:
            if cur:
                paras.append("\n".join(cur))
                cur = []
            continue
        cur.append(line)
    if cur:
        paras.append("\n".join(cur))
    return paras


_TERMINAL = re.compile(r"[.!?:;][)\]*_\"'’”]*$")


def _is_display_math(para: str) -> bool:
    return para.lstrip().startswith("$$")


def _open_sentence(para: str, nxt: str) -> bool:
    """Whether the sentence of ``para`` goes on in ``nxt`` (a display equation inside a sentence)."""
    first, last = para.lstrip()[:1], para.rstrip()
    if _is_display_math(para):
        head = nxt.lstrip()
        return bool(head) and (head[0].islower() or head[0] in "`,.;" or head.startswith("where"))
    if not first or first in "#|>-*+`~:" or first.isdigit():
        return False          # a heading, table, quote, list or fence ends where it ends
    return not _TERMINAL.search(last) and (_is_display_math(nxt) or nxt.lstrip()[:1].islower())


def _sentence_groups(paras: list[str]) -> list[str]:
    """Paragraphs joined where a sentence runs on through a display equation (one unit for ``show``)."""
    out: list[str] = []
    for para in paras:
        if out and _open_sentence(out[-1].rsplit("\n\n", 1)[-1], para):
            out[-1] += "\n\n" + para
        else:
            out.append(para)
    return out


def _show_cell_source(paragraph: str) -> str:
    template = _GLUE.sub(lambda m: "{{" + m.group("name") + (":" + m.group("spec") if m.group("spec") else "") + "}}",
                         paragraph)
    if '"""' in template:
        raise ValueError(f"a glued paragraph contains triple quotes: {paragraph[:80]!r}")
    return GLUE_TITLE + "\nfrom ncbook.book import show\nshow(r\"\"\"\n" + template + "\n\"\"\")"


def _glue_names(paragraph: str) -> list[str]:
    return [m.group("name") for m in _GLUE.finditer(paragraph)]


# --------------------------------------------------------------------------- bookkeeping and answer cells
_GLUE_FUNCS = ("glue", "put")


def _glue_call_key(node: ast.AST):
    """The key of a ``glue(...)``/``put(...)`` call statement (a string, or a regex for an f-string key),
    ``""`` for a call whose key is not a literal, ``None`` if ``node`` is no such call."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func = node.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name not in _GLUE_FUNCS or not node.value.args:
        return None
    key = node.value.args[0]
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.JoinedStr):
        parts = [re.escape(v.value) if isinstance(v, ast.Constant) else r"\w+" for v in key.values]
        return "re:" + "".join(parts)
    return ""


def _only_glue_calls(source: str) -> list[str] | None:
    """The keys if every statement of ``source`` is a ``glue``/``put`` call, else ``None``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    keys = [_glue_call_key(node) for node in tree.body]
    return keys if keys and all(k is not None for k in keys) else None


def _quoted(key: str, names: set[str]) -> bool:
    if key == "":
        return True                      # a computed key: it may be quoted, keep the cell
    if key.startswith("re:"):
        return any(re.fullmatch(key[3:], n) for n in names)
    return key in names


def _drop_unquoted_glue(cells: list[Cell]) -> list[Cell]:
    """Drop the cells made only of glue/put calls whose values no sentence of the notebook quotes."""
    names = {m.group("name") for c in cells if c.kind == "markdown" for m in _GLUE.finditer(c.source)}
    out = []
    for cell in cells:
        keys = cell.metadata.get("ncbook", {}).pop("glue_keys", None) if cell.kind == "code" else None
        if keys is not None and not any(_quoted(k, names) for k in keys):
            continue
        out.append(cell)
    return out


def _hidden_source(source: str, tags=()) -> str:
    """``source`` for a hidden cell: a Colab form title, and a last bare expression silenced with ``;``
    (the book removes a ``remove-cell`` cell's output; a notebook would show e.g. a generator's repr).
    A cell whose output the book shows (``remove-input``, ``hide-input``) keeps every output, its last
    expression's value included."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    shows_output = bool(set(tags) & {"remove-input", "hide-input"})   # the book shows this cell's output
    if tree is not None and tree.body and isinstance(tree.body[-1], ast.Expr) and not shows_output:
        last = tree.body[-1]
        lines = source.split("\n")
        raw = lines[last.end_lineno - 1].encode()
        col = last.end_col_offset
        if not raw[col:].lstrip().startswith(b";"):
            lines[last.end_lineno - 1] = (raw[:col] + b";" + raw[col:]).decode()
            source = "\n".join(lines)
    if source.lstrip().startswith("#@title"):
        return source
    if shows_output:
        return OUTPUT_TITLE + "\n" + source
    has_import = tree is not None and any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
    return (SETUP_TITLE if has_import else BOOKKEEPING_TITLE) + "\n" + source


def _check_answer_cell(source: str, doc: str, label: str) -> None:
    """A cell tagged ``answer-<label>`` may hold only imports and definitions (its stub replaces it)."""
    tree = ast.parse(source)
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    other = [n for n in tree.body if not isinstance(n, allowed)
             and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if other or not _defines(source):
        raise ValueError(f"{doc}: the cell tagged {ANSWER_PREFIX}{label} must define the answer's functions or "
                         f"classes and nothing else (line {other[0].lineno if other else 1} does more): put "
                         "the data and the checks that use it in a cell of their own")


def _defined_names(source: str) -> set[str]:
    tree = ast.parse(source)
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _used_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# --------------------------------------------------------------------------- notebooks
@dataclass
class Cell:
    kind: str                       # "markdown" or "code"
    source: str
    metadata: dict = field(default_factory=dict)


def _exercise_meta(label: str | None, role: str) -> dict:
    return {"ncbook": {"exercise": label, "role": role}} if label else {}


def _title(ctx: Context, label: str | None) -> str:
    target = ctx.book.targets.get(label or "")
    return f"Exercise {target.number}" if target else (label or "the exercise")


def _markdown_pieces(text: str, ctx: Context, state: dict) -> list[Cell]:
    """Markdown cells (and answer cells) of one MyST Markdown cell; ``state`` tracks the open solution."""
    out: list[Cell] = []
    buffer: list[str] = []

    def flush():
        body = "\n".join(_convert_lines(buffer, ctx)) if buffer else ""
        buffer.clear()
        body = re.sub(r"\n{3,}", "\n\n", body).strip("\n")
        if body.strip():
            out.append(Cell("markdown", body))

    for block in _blocks(text.split("\n")):
        if block[0] == "directive" and block[1] in ("solution-start", "solution-end"):
            flush()
            if block[1] == "solution-start":
                if state["inside"] is not None:
                    raise ValueError(f"{{solution-start}} {block[2]} opens inside the solution of {state['inside']}")
                state["inside"], state["text"] = block[2] or "solution", False
                if not ctx.student:
                    out.append(Cell("markdown", f"**Solution to {_title(ctx, state['inside'])}.**"))
            else:
                if state["inside"] is None:
                    raise ValueError("{solution-end} without a {solution-start}")
                if ctx.student and state["text"]:
                    label = state["inside"]
                    out.append(Cell("markdown", ANSWER_PROMPT.format(title=_title(ctx, label)),
                                    _exercise_meta(label, "answer")))
                state["inside"] = None
            continue
        if block[0] == "directive" and block[1] == "exercise":
            state["exercise"] = block[3].get("label", state.get("exercise"))
        lines = block[1] if block[0] == "text" else None
        if ctx.student and state["inside"] is not None:
            if any(line.strip() for line in (lines or ["x"])):
                state["text"] = True
            continue
        if block[0] == "text":
            buffer.extend(lines)
        else:
            _, name, arg, options, body, fence = block
            opts = [f":{k}: {v}" for k, v in options.items()]
            buffer.extend([f"{fence}{{{name}}} {arg}".rstrip(), *opts, "", *body, fence])
    flush()
    return out


def _split_glue(cells: list[Cell], ctx: Context | None = None) -> list[Cell]:
    """Markdown cells whose paragraphs quote glued values: those paragraphs become ``show`` cells."""
    out: list[Cell] = []
    for cell in cells:
        if cell.kind != "markdown" or "\x00" not in cell.source:
            out.append(cell)
            continue
        text: list[str] = []
        for para in _sentence_groups(_paragraphs(cell.source)):
            if "\x00" in para:
                if text:
                    out.append(Cell("markdown", "\n\n".join(text), cell.metadata))
                    text = []
                out.append(Cell("code", _show_cell_source(para),
                                {**copy.deepcopy(HIDDEN), "tags": ["hide-input"],
                                 "ncbook": {"role": "glue", "names": _glue_names(para)}}))
            else:
                text.append(para)
        if text:
            out.append(Cell("markdown", "\n\n".join(text), cell.metadata))
    return _after_their_values(out, ctx.moves if ctx is not None else None)


def _glues_literally(source: str, name: str) -> bool:
    """Whether a code cell names glue key ``name`` literally: as a string, or as ``name=`` in ``dict(...)``."""
    return bool(re.search(rf"""(["']){re.escape(name)}\1|\b{re.escape(name)}=(?!=)""", source))


def _glues_by_pattern(source: str, name: str) -> bool:
    """Whether an f-string key of a ``glue``/``put`` call in the cell can produce ``name``."""
    for m in re.finditer(r"""\b(?:glue|put)\(\s*f(["'])(?P<pat>.*?)\1""", source):
        pattern = re.sub(r"\\\{[^}]*\\\}", r"\\w+", re.escape(m.group("pat")))
        if re.fullmatch(pattern, name):
            return True
    return False


def _after_their_values(cells: list[Cell], moves: list | None = None) -> list[Cell]:
    """Move each ``show`` cell after the code cell that glues its last missing value, if it precedes it.

    A key is found where a code cell names it literally; an f-string key (``glue(f"acc_{k}", ...)``)
    counts only for keys that no later cell names literally. Each move is appended to ``moves`` as
    ``(first words of the paragraph, the names glued only later)``.
    """
    cells = list(cells)
    plain = lambda c: c.kind == "code" and c.metadata.get("ncbook", {}).get("role") != "glue"  # noqa: E731
    i, moved = 0, set()
    while i < len(cells):
        cell = cells[i]
        names = cell.metadata.get("ncbook", {}).get("names") if cell.kind == "code" else None
        if names and id(cell) not in moved:
            before = [c.source for c in cells[:i] if plain(c)]
            after = [(j, c.source) for j, c in enumerate(cells) if j > i and plain(c)]
            target, late = -1, []
            for n in names:
                if any(_glues_literally(src, n) for src in before):
                    continue
                literal = [j for j, src in after if _glues_literally(src, n)]
                if literal:
                    target = max(target, literal[0])
                    late.append(n)
                elif not any(_glues_by_pattern(src, n) for src in before):
                    pattern = [j for j, src in after if _glues_by_pattern(src, n)]
                    if pattern:
                        target = max(target, pattern[0])
                        late.append(n)
            if target > i:
                if moves is not None:
                    text = cell.source.split('r"""', 1)[-1].rsplit('"""', 1)[0].strip()
                    moves.append((" ".join(text.split()[:12]), late))
                moved.add(id(cell))
                cells.insert(target + 1, cell)
                del cells[i]
                continue
        i += 1
    for cell in cells:
        cell.metadata.get("ncbook", {}).pop("names", None)
    return cells


def _reader_cells(md_path: Path, student: bool, root: Path, ctx: Context | None = None) -> tuple[list[Cell], dict]:
    md_path = Path(md_path).resolve()
    book = _book(root)
    doc = md_path.relative_to(root).with_suffix("").as_posix()
    ctx = ctx or Context(book, doc, student)
    nb = jupytext.read(md_path)
    state = {"inside": None, "text": False, "exercise": None}
    cells: list[Cell] = []
    withheld: set[str] = set()     # names defined by withheld answer cells (student notebook)
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown":
            cells += _markdown_pieces(cell.source, ctx, state)
            continue
        if cell.cell_type != "code":
            continue
        source = cell.source
        if _RECORDS_CLAIMS.search(source):
            continue  # the book's reproduction records: a reader's run must not write them
        install = "NCBOOK_PIP_TARGET" in source
        if install and READER_LINE not in source:
            source = source.rstrip("\n") + "\n" + READER_LINE
        meta = {"tags": tags} if tags else {}
        label = state["inside"] or state["exercise"]
        is_check = bool(_CHECK_CALL.search(source))
        in_solution = "solution" in tags or (state["inside"] is not None and not is_check)
        answers = _answer_labels(tags)
        if answers:
            if in_solution or is_check:
                raise ValueError(f"{doc}: a cell tagged {ANSWER_PREFIX}{answers[0]} is part of an exercise; "
                                 "the tag marks a cell of the chapter that holds an exercise's answer")
            titles = " and ".join(ctx.exercise_title(a) for a in answers)
            if student:
                _check_answer_cell(source, doc, answers[0])
                withheld.update(_defined_names(source))
                stub = stub_code(source, answers[0]).replace(
                    f'"exercise: {answers[0]}"', f'"withheld: the answer of exercise {answers[0]}"')
                cells.append(Cell("code", WITHHELD_CELL.format(title=titles) + "\n" + stub,
                                  {"tags": tags, "ncbook": {"role": "withheld", "answers": answers[0]}}))
                continue
        if student and withheld and not in_solution:
            used = sorted(withheld & _used_names(source))
            if used:
                raise ValueError(f"{doc}: a later cell uses {used}, withheld in the student notebook as an "
                                 f"exercise's answer; it would stop Run-all there: {source[:80]!r}")
        glue_keys = None if install else _only_glue_calls(source)
        if student and in_solution:
            tags = [t for t in tags if t != "solution"] + ([STUB_TAG] if STUB_TAG not in tags else [])
            role = "stub" if _defines(source) else "answer"
            meta = {"tags": tags, **_exercise_meta(label, role)}
            cells.append(Cell("code", stub_code(source, label or "solution", _title(ctx, label)), meta))
        elif in_solution:     # the Colab notebook: the reference solution, marked for the assignment tools
            cells.append(Cell("code", source, {**meta, **_exercise_meta(label, "solution")}))
        elif is_check and label:
            cells.append(Cell("code", source, {**meta, **_exercise_meta(label, "check")}))
        elif not install and (set(tags) & set(BOOKKEEPING_TAGS) or glue_keys is not None):
            hidden = {**meta, **copy.deepcopy(HIDDEN), "ncbook": {"role": "setup"}}
            if glue_keys is not None:
                hidden["ncbook"]["glue_keys"] = glue_keys   # dropped below if no sentence quotes them
            cells.append(Cell("code", _hidden_source(source, tags), hidden))
        else:
            cells.append(Cell("code", source, meta))
    if state["inside"] is not None:
        raise ValueError(f"{{solution-start}} {state['inside']} has no {{solution-end}}")
    cells = _drop_unquoted_glue(cells)
    cells = _split_glue(cells, ctx)
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"},
                "ncbook": {("student_version_of" if student else "reader_version_of"): md_path.relative_to(root).as_posix(),
                           "generated_by": "tools/student_notebooks.py"}}
    return cells, metadata


def _notebook(cells: list[Cell], metadata: dict) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata=metadata)
    for i, cell in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if cell.kind == "markdown" else nbformat.v4.new_code_cell
        new = make(cell.source, metadata=copy.deepcopy(cell.metadata))
        new["id"] = f"cell-{i:03d}"
        nb.cells.append(new)
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def colab_notebook(md_path: Path | str, root: Path = ROOT) -> nbformat.NotebookNode:
    """The Colab/Jupyter notebook of the chapter ``md_path`` (with solutions), without outputs."""
    return _notebook(*_reader_cells(Path(md_path), False, root))


def student_notebook(md_path: Path | str, root: Path = ROOT) -> nbformat.NotebookNode:
    """The student notebook of the chapter ``md_path``: solutions stubbed, exercise cells tagged."""
    return _notebook(*_reader_cells(Path(md_path), True, root))


def forward_glues(md_path: Path | str, root: Path = ROOT) -> list[tuple[str, list[str]]]:
    """Paragraphs of the chapter that quote a glued value computed only by a later cell.

    The notebooks move such a paragraph after that cell, away from where the chapter put it. Returns
    ``(first words of the paragraph, the late names)`` per moved paragraph (empty: none).
    """
    md_path = Path(md_path).resolve()
    book = _book(root)
    ctx = Context(book, md_path.relative_to(root).with_suffix("").as_posix(), False)
    _reader_cells(md_path, False, root, ctx)
    return list(ctx.moves)


def answer_markers(md_path: Path | str) -> dict[str, list[str]]:
    """``answer-<label>`` markers of a chapter: listings (``file:object``) and tagged cells, by label."""
    out: dict[str, list[str]] = {}
    for cell in jupytext.read(Path(md_path)).cells:
        if cell.cell_type == "code":
            for label in _answer_labels(cell.metadata.get("tags", [])):
                out.setdefault(label, []).append("cell: " + cell.source.strip().split("\n")[0][:60])
        elif cell.cell_type == "markdown":
            for name, arg, options in _walk_directives(cell.source):
                if name == "literalinclude":
                    for label in _answer_labels(options.get("class", "").split()):
                        out.setdefault(label, []).append(f"listing: {arg}:{options.get('pyobject', '')}")
    return out


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """Deterministic JSON text of ``nb`` (sorted keys, one-space indent, final newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def generate(root: Path = ROOT, student_dir: Path | None = None) -> dict[Path, str]:
    """Map of output path -> text for every chapter in ``root``'s TOC (book/ Colab and student/)."""
    student_dir = student_dir or root / "student"
    out = {}
    for p in toc_chapters(root):
        out[p.with_suffix(".ipynb")] = notebook_text(colab_notebook(p, root))
        if re.search(r"^(`{3,}|:{3,})\{exercise\}", p.read_text(), re.M):   # a chapter with exercises
            out[student_dir / f"{p.stem}.ipynb"] = notebook_text(student_notebook(p, root))
    return out


def _orphans(root: Path, student_dir: Path, fresh: dict[Path, str]) -> list[Path]:
    found = set(student_dir.glob("*.ipynb")) if student_dir.exists() else set()
    found |= set((root / "book").glob("*.ipynb"))
    return sorted(found - set(fresh))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a notebook is stale, missing or orphaned")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (holds _toc.yml)")
    parser.add_argument("--out", type=Path, default=None, help="student folder (default: <root>/student)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    _book.cache_clear()
    student_dir = (args.out or root / "student").resolve()
    fresh = generate(root, student_dir)
    orphans = _orphans(root, student_dir, fresh)
    rel = lambda p: p.relative_to(root) if p.is_relative_to(root) else p  # noqa: E731
    if args.check:
        stale = [p for p, text in fresh.items() if not p.exists() or p.read_text() != text]
        for p in stale:
            print(f"stale reader notebook: {rel(p)} (missing or out of date)", file=sys.stderr)
        for p in orphans:
            print(f"orphaned reader notebook: {rel(p)} (its chapter is not in _toc.yml)", file=sys.stderr)
        if stale or orphans:
            print("regenerate with: python3 tools/student_notebooks.py", file=sys.stderr)
            return 1
        print(f"reader notebooks up to date ({len(fresh)} files)")
        return 0
    student_dir.mkdir(parents=True, exist_ok=True)
    for p in orphans:
        p.unlink()
    for p, text in fresh.items():
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
    print(f"wrote {len(fresh)} reader notebooks (book/ and {rel(student_dir)}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
