#!/usr/bin/env python3
"""Generate the reader notebooks of every chapter: the Colab/Jupyter notebook and the student one.

From each jupytext chapter ``book/<stem>.md`` listed in ``_toc.yml`` this writes, without outputs:

* ``book/<stem>.ipynb``: the notebook the launch (rocket) button opens in Colab; the whole chapter
  with its solutions;
* ``student/<stem>.ipynb`` (chapters with exercises): the same notebook with every solution removed: solution code becomes
  stubs whose functions raise ``NotImplementedError`` (so each exercise's check reports "not
  implemented yet" and Run-all reaches the end), solution text becomes an answer prompt.

The notebooks read like Neuromatch's: the prose is Markdown a reader can read before running
anything, the code shown is the chapter's science, and helper and bookkeeping code sits in titled,
collapsed cells.

Markdown cells carry no MyST-only markup: definitions, theorems and exercises become bold titles
with blockquotes, numbered per chapter as in the HTML book (Exercise 2.3 in chapter 2); admonitions
(``predict``, ``discuss``, ``sources`` boxes...) a quoted block under their bold title, and a dropdown
(``:class: dropdown``, e.g. an exercise's hint) a folded ``<details>`` block, in the student notebook
too; citations become "Author et al. (year)" with the chapter's references as a Markdown list;
cross-references become text (``{ref}`` to a labelled heading, e.g. of the implementation notes: its
title and page), ``{term}`` the term itself; ``literalinclude`` becomes the listing (read with
Sphinx's own ``LiteralIncludeReader``) and ``listing`` (``book/_ext/ncbook_listing.py``) the object's
public name, its docstring as Markdown and its code without the docstring, as the HTML page shows
them; labelled equations get ``\\tag{2.1}``.

Glued numbers (``{glue:text}``): the paragraph stays Markdown, each value a visible slot
(``⟨overall accuracy⟩``, from the glue key's words or the chapter's ``# slot: <label>`` comment on the
glue line), and a collapsed "Numbers from your run" cell after the paragraph's part (before the next
heading or exercise) calls :func:`ncbook.book.show`, whose output is the paragraph with the run's
numbers. A sentence never waits for the run; a number may.

Markers a chapter uses for the notebooks (the HTML book ignores them or keeps its own reading):

* ``{only} html`` / ``{only} notebook`` / ``{only} not student`` (Sphinx's ``only`` directive around
  Markdown): the HTML build defines the builder's tag ``html``; these notebooks evaluate the
  expression with the tag ``notebook`` (and ``student`` in the student notebook). Text written for
  the HTML page goes in ``{only} html``, its notebook wording in ``{only} notebook``; prose that
  gives an exercise's answer away goes in ``{only} not student``. No label (equation, theorem,
  exercise) inside an ``only`` block: numbers must agree between the book and the notebooks.
* ``:class: answer-<exercise label>`` on a ``literalinclude`` or ``listing`` (a listing that holds the
  answer of that exercise) and the cell tag ``answer-<exercise label>`` on a code cell that holds it
  (the cell may only define functions/classes, with imports): the student notebooks withhold them,
  saying where the reference is and asking for the exercise first; the Colab notebook keeps them.
* Hidden cells: cells tagged ``remove-cell``, ``remove-input``, ``hide-input`` or ``hide-cell``, the
  install cell, cells made only of ``glue``/``put`` calls and the claim cell
  (``experiments.record_claims``) are collapsed in the notebooks (Colab's form view ``cellView: form``
  and Jupyter's ``jupyter.source_hidden``) under a title that says what the cell does: the chapter's
  own first line ``# @title <what it does>``, else its first comment line, else what it defines or
  draws (:func:`cell_title`). In a cell whose output the book removes, a last bare expression is
  silenced with ``;``; a cell made only of ``glue``/``put`` calls whose values no notebook sentence
  quotes is dropped; the claim cell records where the cost records go (:func:`ncbook.results_dir`:
  ``NCBOOK_RESULTS``, else ``results/`` beside the notebook), for the Reproduction page.
* Glue lines inside a cell that computes or plots move to a collapsed "Numbers for the text" cell
  after it when nothing can change (:func:`split_glue_lines`); the others stay, and
  ``tools/check_chapters.py`` flags them. A show cell whose value is computed only by a later cell
  goes after that cell (:func:`forward_glues` lists these: a chapter should compute before it quotes).

:func:`reader_counts` measures what a reader meets (visible code lines, visible bookkeeping cells by
:data:`BOOKKEEPING_PATTERNS`, prose hidden until the run); ``--counts`` prints it per chapter.

Cells of the student notebook that belong to an exercise carry the metadata
``{"ncbook": {"exercise": "<label>", "role": "stub" | "check" | "answer"}}``; in the Colab notebook
the solution code cells carry ``"role": "solution"`` and the checks ``"check"``. Hidden
bookkeeping cells carry ``"role": "setup"`` (``"install"`` for the install cell, ``"claims"`` for the
claim cell), glued paragraphs ``"role": "glue"`` and withheld answer cells of the student notebook
``{"role": "withheld", "answers": "<label>"}``.

Why our own converter: sphinx-tojupyter (the Sphinx builder QuantEcon uses) needs a full Sphinx
build, fills glued numbers with the build's values rather than the reader's, loses the cells that
myst-nb removes (install cell, imports) and every cell tag, and leaves gated solution cells in. So
the code cells come verbatim from the jupytext source and only the Markdown is converted here, with
well-kept libraries for the parts that have one: jupytext (reading), Sphinx's
``LiteralIncludeReader`` (listings, same options as the HTML), pybtex (the bibliography), nbformat.

Public API (also used by the assignment tools and the chapter checklist): :func:`colab_notebook`,
:func:`student_notebook` (``md_path -> nbformat.NotebookNode``), :func:`forward_glues`,
:func:`answer_markers`, :func:`reader_counts`, :func:`is_hidden`. The output is deterministic, so CI
regenerates and compares::

    python3 tools/student_notebooks.py            # (re)write book/<stem>.ipynb and student/<stem>.ipynb
    python3 tools/student_notebooks.py --counts   # visible code lines and bookkeeping cells per chapter
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
LISTINGS = ("literalinclude", "listing")   # directives that print code of the package (book/_ext/ncbook_listing.py)
ANSWER_PREFIX = "answer-"                  # :class: answer-<label> on a listing, tag answer-<label> on a cell
BOOKKEEPING_TAGS = ("remove-cell", "remove-input", "hide-input", "hide-cell")
HIDDEN = {"cellView": "form", "jupyter": {"source_hidden": True}}   # Colab form view, Jupyter collapsed input
TITLE_PREFIX = "# @title "                 # Colab's form title; Jupyter shows it as the first line
SHOW_TITLE = "Numbers from your run"      # a glued paragraph filled with the run's values
NUMBERS_TITLE = "Numbers for the text"    # glue/put lines: the values the text quotes
INSTALL_TITLE = "Install ncbook if it is missing (e.g. on Colab)"
CLAIMS_TITLE = "Record this chapter's claims"
# the claim cell records where the chapter's cost records go: ncbook.results_dir() (a comment says so in the cell)
CLAIMS_PREAMBLE = ("# The records go where the cost records go, ncbook.results_dir(): NCBOOK_RESULTS if set, else\n"
                   "# results/ beside this notebook (the checkout's results/ when it runs in book/). The Reproduction\n"
                   "# page reads them from there.")
SLOT = "⟨{}⟩"                             # a glued value in the Markdown, before the notebook has run
WITHHELD_LISTING = ("> **Listing withheld in the student notebook.** Here the chapter prints `{obj}` of "
                    "`{module}`, the reference answer of {title}. Do the exercise first; afterwards the "
                    "chapter's Colab notebook shows the listing.")
WITHHELD_CELL = ("# Withheld in the student notebook: the chapter's version of this cell is the answer of "
                 "{title}.\n# Write it in the exercise first; the chapter's Colab notebook shows it.")

# an autograder call (check_<name>(...) or run_cases(...)): kept even inside a solution
_CHECK_CALL = re.compile(r"\b(check_\w+|run_cases)\s*\(")
# cells that record the chapter's checks for the reproduction page (not in reader notebooks)
_RECORDS_CLAIMS = re.compile(r"\brecord_claim\(")
# the chapter's one claim cell (experiments.record_claims): a titled hidden cell in the notebooks
_RECORD_CLAIMS_CELL = re.compile(r"\brecord_claims\(")
_TITLE_LINE = re.compile(r"^#\s*@title\s*(?P<title>.*)$")
# a label for a glued value's slot, on the line of its glue call: put("acc", acc)  # slot: overall accuracy
_SLOT_COMMENT = re.compile(r"""\b(?:glue|put)\(\s*(["'])(?P<key>\w+)\1[^\n]*#\s*slot:\s*(?P<label>[^#\n]+?)\s*$""", re.M)
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,}|~{3,})(?P<rest>.*)$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[\w:.-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<name>[\w:.-]+)\}`(?P<content>[^`]*)`")
_ROLE_OR_CODE = re.compile(r"\{(?P<name>[\w:.-]+)\}`(?P<content>[^`]*)`|(?P<code>(?P<ticks>`+)[^`]+?(?P=ticks))")
_EQ_LABEL = re.compile(r"^\$\$\s*\((?P<label>[^)\s]+)\)\s*$")
# a MyST target line and the heading it names: (label)=, blank lines, ## Title
_SECTION_LABEL = re.compile(r"^\((?P<label>[^)\s]+)\)=\s*\n(?:\s*\n)*#{1,6}\s+(?P<title>.+?)\s*$", re.M)
_GLUE = re.compile(r"\x00(?P<name>\w+)(?::(?P<spec>[^\x00]*))?\x00")
# admonitions: a quoted block with a bold title; with :class: dropdown (or {dropdown}) a folded block.
# The chapters' classes (predict, discuss, sources, chapter-frame) read as their titles say.
ADMONITIONS = ("note", "tip", "hint", "warning", "important", "admonition", "seealso", "attention", "caution",
               "danger", "error", "dropdown")
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
        if self.kind == "section":      # a labelled heading: its title, as {ref} shows it in the book
            return f"“{self.number}”"
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
        for m in _SECTION_LABEL.finditer(body):
            targets.setdefault(m.group("label"), Target("section", _plain_title(m.group("title")), doc))
    bib = _read_bib(root)
    return Book(root, numbers, titles, targets, bib)


def _plain_title(title: str) -> str:
    """A heading's text without inline markup that would read oddly in quotes (roles, code ticks)."""
    title = re.sub(r"\{[\w:.-]+\}`([^`<]*?)\s*(?:<[^`]*>)?`", r"\1", title)
    return title.replace("`", "").strip()


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
    slot_labels: dict[str, str] = field(default_factory=dict)          # glue key -> label of its slot

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
            title = ctx.book.titles[target.doc]
            number = ctx.book.chapter_number.get(target.doc)
            if target.kind != "section" or number:
                text += f" (chapter “{title}”)"
            elif title != target.number:
                text += f" (in “{title}”)"
        return text
    if name == "term":       # a glossary term: the term as written (the glossary page is in the book)
        return explicit.group("text") if explicit else content
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


def _listing_helpers():
    """``book/_ext/ncbook_listing.py``: the ``listing`` directive's own reading of an object (shared)."""
    module = sys.modules.get("ncbook_listing")
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("ncbook_listing", ROOT / "book" / "_ext" / "ncbook_listing.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["ncbook_listing"] = module
        spec.loader.exec_module(module)
    return module


def _listing(arg: str, options: dict, ctx: Context) -> list[str]:
    """A ``listing`` as Markdown: the object's public name, its docstring (quoted, as Markdown) and its
    code without the docstring, as the HTML page shows them."""
    helpers = _listing_helpers()
    if "pyobject" not in options:
        raise ValueError(f"{ctx.doc}: a listing of {arg} needs :pyobject:")
    doc, code, name = helpers.object_listing((ctx.book.root / ctx.doc).parent / arg, options["pyobject"], options)
    out = [f"**`{name}`**", ""]
    if doc:
        out += [*_quote(helpers.docstring_markdown(doc).split("\n")), ""]
    return out + ["```python", *code.rstrip("\n").split("\n"), "```"]


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
        elif name in LISTINGS:
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
                out += ["", *(_listing(arg, options, ctx) if name == "listing" else _literalinclude(arg, options, ctx)), ""]
        elif name == "only":
            if ctx.tags.eval_condition(arg):
                out += ["", *_convert_lines(body, ctx), ""]
        elif name == "bibliography":
            refs = sorted(ctx.cited, key=lambda k: (_last_names(ctx.book.bib[k]) or [""])[0].lower()
                          + ctx.book.bib[k].fields.get("year", ""))
            out += ["", *[f"- {_reference(ctx.book.bib[k])}" for k in refs], ""]
        elif name in ADMONITIONS:
            head = arg if name in ("admonition", "dropdown") else name.title()
            head = head or "Details"
            inner = _convert_lines(body, ctx)
            if name == "dropdown" or "dropdown" in options.get("class", "").split():
                # collapsed until clicked, in Colab and Jupyter alike (a hint stays, folded)
                summary = _summary_text(_inline(head, ctx))
                out += ["", "<details>", f"<summary><b>{summary}</b></summary>", "", *inner, "", "</details>", ""]
            else:
                out += ["", *_quote([f"**{_inline(head, ctx)}.**", "", *inner]), ""]
        elif name == "math":
            out += ["", "$$", *body, "$$", ""]
        else:
            raise ValueError(f"{ctx.doc}: no plain-Markdown form for the directive {{{name}}}")
    return out


def _summary_text(markdown: str) -> str:
    """Markdown of a title as text for an HTML ``<summary>`` (which renders no Markdown)."""
    text = re.sub(r"\*\*(.+?)\*\*|\*(.+?)\*|`(.+?)`", lambda m: next(g for g in m.groups() if g), markdown)
    return text.replace("<", "&lt;").replace(">", "&gt;")


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


def _template(paragraph: str) -> str:
    """A glued paragraph as a ``show`` template: each value a ``{{name:spec}}`` placeholder."""
    return _GLUE.sub(lambda m: "{{" + m.group("name") + (":" + m.group("spec") if m.group("spec") else "") + "}}",
                     paragraph)


def _show_cell_source(paragraph: str) -> str:
    template = _GLUE.sub(lambda m: "{{" + m.group("name") + (":" + m.group("spec") if m.group("spec") else "") + "}}",
                         paragraph)
    if '"""' in template:
        raise ValueError(f"a glued paragraph contains triple quotes: {paragraph[:80]!r}")
    return _title_line(SHOW_TITLE) + "\nfrom ncbook.book import show\nshow(r\"\"\"\n" + template + "\n\"\"\")"


# words of glue keys, spelled out for a slot's label (keys are snake_case abbreviations)
_SLOT_WORDS = {
    "acc": "accuracy", "bal": "balanced", "lt": "long-tailed", "maj": "majority", "init": "initial",
    "cos": "cosine", "dist": "distance", "err": "error", "sd": "s.d.", "std": "s.d.", "avg": "mean",
    "net": "network", "num": "number of", "n": "n", "pct": "%", "sec": "seconds", "lam": "λ", "lambda": "λ",
    "tau": "τ", "eps": "ε", "gamma": "γ", "rho": "ρ", "sigma": "σ", "alpha": "α", "beta": "β", "mu": "μ",
    "pi1": "π₁", "cvx": "convex", "m": "means", "w": "classifier", "thr": "threshold", "pred": "predicted",
    "ref": "reference", "ex": "exercise", "rel": "relative", "opt": "optimum", "tab": "table", "cmp": "comparison",
}
_SLOT_UPPER = {"nc1", "nc2", "nc3", "nc4", "etf", "seli", "ufm", "scl", "ucl", "ce", "cb", "ib", "mr2", "ldam",
               "kkt", "dgp", "gd", "ngd", "if", "drw", "cl", "sgd", "c10", "c100", "cifar"}


def slot_label(name: str, stem: str = "", labels: dict | None = None) -> str:
    """A short readable label for the glued value ``name``: the chapter's own (``# slot: <label>`` on
    its glue line), else the key's words spelled out, without the chapter's prefix.

    Examples
    --------
    >>> slot_label("bal_train_acc")
    'balanced train accuracy'
    >>> slot_label("seli_net_m_etf", "seli")
    'network means ETF'
    >>> slot_label("acc", labels={"acc": "overall accuracy"})
    'overall accuracy'
    """
    if labels and name in labels:
        return labels[name]
    words = name.split("_")
    prefixes = {stem, stem.split("_")[0]} - {""}
    if len(words) > 1 and words[0] in prefixes:
        words = words[1:]
    out = []
    for w in words:
        low = w.lower()
        m = re.fullmatch(r"ex(\d+)", low)
        if m:
            out.append(f"exercise {m.group(1)}")
        elif low in _SLOT_UPPER:
            out.append(low.upper())
        elif len(low) > 1 or len(words) > 1:     # a key of one letter stays that letter
            out.append(_SLOT_WORDS.get(low, w))
        else:
            out.append(w)
    return " ".join(out) or name


def _slotted(text: str, ctx: "Context | None") -> str:
    """Markdown with each glued value written as a visible slot ``⟨label⟩``."""
    stem = Path(ctx.doc).name if ctx is not None else ""
    labels = ctx.slot_labels if ctx is not None else {}
    return _GLUE.sub(lambda m: SLOT.format(slot_label(m.group("name"), stem, labels)), text)


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


def _silence_last(source: str) -> str:
    """``source`` with its last statement, if a bare expression, ended by ``;`` (no value displayed)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    if not (tree.body and isinstance(tree.body[-1], ast.Expr)):
        return source
    last = tree.body[-1]
    lines = source.split("\n")
    raw = lines[last.end_lineno - 1].encode()
    col = last.end_col_offset
    if not raw[col:].lstrip().startswith(b";"):
        lines[last.end_lineno - 1] = (raw[:col] + b";" + raw[col:]).decode()
    return "\n".join(lines)


def _title_line(title: str) -> str:
    return TITLE_PREFIX + " ".join(title.split())


def _given_title(source: str) -> str | None:
    """The title a chapter gives a cell on its first line (``# @title ...``), if any."""
    first = source.lstrip("\n").split("\n", 1)[0].strip()
    m = _TITLE_LINE.match(first)
    return m.group("title").strip() if m else None


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def cell_title(source: str, tags=()) -> str:
    """The title of a hidden cell: what the cell does, in a few words.

    The chapter's own title (a first line ``# @title <what it does>``) wins; else a first comment line;
    else what the cell defines ("Helper: `make_model`", "Setup: imports and helpers (`put`)"), draws or
    shows.

    Examples
    --------
    >>> cell_title("import numpy as np\\ndef put(k, v):\\n    pass")
    'Setup: imports and helpers (`put`)'
    >>> cell_title("# @title Helper: the cosine classifier\\nclass Cosine: pass")
    'Helper: the cosine classifier'
    """
    given = _given_title(source)
    if given:
        return " ".join(given.split())
    lines = [line for line in source.strip().split("\n") if line.strip()]
    if lines and lines[0].lstrip().startswith("#") and not lines[0].lstrip().startswith("#!"):
        comment = lines[0].lstrip().lstrip("#").strip()
        if comment:
            return _short(comment[:1].upper() + comment[1:])
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    defs = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    imports = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
    named = ", ".join(f"`{d}`" for d in defs[:4]) + (", …" if len(defs) > 4 else "")
    if defs and imports:
        return f"Setup: imports and helpers ({named})"
    if defs:
        return f"Helper{'s' if len(defs) > 1 else ''}: {named}"
    if imports:
        return "Setup: imports" + (" and settings" if len(tree.body) > sum(
            isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body) else "")
    keys = _only_glue_calls(source)
    if keys is not None:
        return NUMBERS_TITLE
    shows_output = bool(set(tags) & {"remove-input", "hide-input"})
    if shows_output and re.search(r"\bplt\.|\bplotting\.|\bfig\b|\.plot\(", source):
        return "Draw the figure (the code is hidden, as in the book)"
    if shows_output:
        return "Code hidden, as in the book (its output follows)"
    return "Bookkeeping (the code is hidden, as in the book)"


def _hidden_source(source: str, tags=(), title: str | None = None) -> str:
    """``source`` for a hidden cell: a Colab form title (``# @title <what it does>``), and a last bare
    expression silenced with ``;`` (the book removes a ``remove-cell`` cell's output; a notebook would
    show e.g. a generator's repr). A cell whose output the book shows (``remove-input``, ``hide-input``)
    keeps every output, its last expression's value included."""
    shows_output = bool(set(tags) & {"remove-input", "hide-input"})   # the book shows this cell's output
    if not shows_output:
        source = _silence_last(source)
    title = title or cell_title(source, tags)
    if _given_title(source) is not None:      # the chapter's title line: written the one way
        body = source.lstrip("\n").split("\n", 1)
        return _title_line(title) + ("\n" + body[1] if len(body) > 1 else "")
    return _title_line(title) + "\n" + source


# ---- glue lines inside a cell that computes or plots: moved to a hidden cell of their own
# names whose value changes between two reads (a timer, a random draw): a glue line reading them stays put
_UNSTABLE = re.compile(r"^(?:time|perf_counter|monotonic|process_time|datetime|clock|random|"
                       r"rand\w*|seed|manual_seed|next|Stopwatch)$")
# methods that change their object in place (a glue line reading the object must not move after them)
_MUTATING = re.compile(r"^(?:append|extend|insert|pop|popitem|update|clear|setdefault|add|discard|remove|sort|"
                       r"reverse|fill|resize|step|zero_grad|train|eval|load_state_dict|record|put|set|\w+_)$")


def _glue_statement(node: ast.AST) -> bool:
    """A ``glue``/``put`` call statement, or a ``for`` loop made only of them."""
    if _glue_call_key(node) is not None:
        return True
    return (isinstance(node, ast.For) and not node.orelse and bool(node.body)
            and all(_glue_statement(b) for b in node.body))


def _glue_keys_of(node: ast.AST) -> list[str]:
    key = _glue_call_key(node)
    if key is not None:
        return [key]
    return [k for b in getattr(node, "body", []) for k in _glue_keys_of(b)]


def _scoped_names(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names read, names bound) by ``node`` in its own scope: a comprehension's variables are its own."""
    loads: set[str] = set()
    stores: set[str] = set()

    def visit(n, bound):
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(bound)
            for gen in n.generators:
                visit(gen.iter, inner)
                inner |= {t.id for t in ast.walk(gen.target) if isinstance(t, ast.Name)}
                for cond in gen.ifs:
                    visit(cond, inner)
            for part in ([n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]):
                visit(part, inner)
            return
        if isinstance(n, ast.Name) and n.id not in bound:
            (loads if isinstance(n.ctx, ast.Load) else stores).add(n.id)
        for child in ast.iter_child_nodes(n):
            visit(child, bound)

    visit(node, frozenset())
    return loads, stores


def _loads(node: ast.AST) -> set[str]:
    return _scoped_names(node)[0]


def _stores(node: ast.AST) -> set[str]:
    """Names a statement binds, deletes or may change in place (an item or attribute set, a mutating
    method call)."""
    out = set(_scoped_names(node)[1])
    for n in ast.walk(node):
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            base = n.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _MUTATING.match(n.func.attr):
            base = n.func.value
            while isinstance(base, (ast.Subscript, ast.Attribute, ast.Call)):
                base = base.func if isinstance(base, ast.Call) else base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


def _unstable(node: ast.AST) -> bool:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return any(_UNSTABLE.match(name) for name in names)


def split_glue_lines(source: str) -> tuple[str, str, list[str]] | None:
    """``(rest, glue, keys)`` when the ``glue``/``put`` lines of a cell that also computes can move after
    it, unchanged in what they glue; ``None`` when there are none, or when moving one could change a value.

    A glue line moves when it is a top-level ``glue``/``put`` call (or a ``for`` loop of them) on lines
    of its own, no later statement of the cell rebinds or changes in place a name it reads (nor reads
    what its loop binds), it reads no timer or random draw, and no later statement reads glued values.
    ``rest`` ends with ``;`` where the moved line had been the cell's last (no value appears that the
    chapter's cell did not show).

    Examples
    --------
    >>> rest, glue, keys = split_glue_lines("acc = 0.9\\nplot(acc)\\nput('acc', acc)")
    >>> rest, glue, keys
    ('acc = 0.9\\nplot(acc);', "put('acc', acc)", ['acc'])
    >>> split_glue_lines("acc = 0.9\\nput('acc', acc)\\nacc = 0.5") is None     # acc changes after the glue line
    True
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    body = tree.body
    moved = [i for i, n in enumerate(body) if _glue_statement(n)]
    if not moved or len(moved) == len(body):
        return None
    kept = [i for i in range(len(body)) if i not in moved]
    spans = {i: (body[i].lineno, body[i].end_lineno) for i in range(len(body))}
    for i in moved:
        lo, hi = spans[i]
        if any(not (spans[j][1] < lo or spans[j][0] > hi) for j in kept):
            return None                     # shares a line with other code (``a = 1; put(...)``)
        if _unstable(body[i]):
            return None
        reads, binds = _loads(body[i]) - {"glue", "put"}, _stores(body[i])
        for j in kept:
            if j < i:
                continue
            later = body[j]
            if _stores(later) & reads or (_loads(later) | _stores(later)) & binds:
                return None
            if _loads(later) & {"glued", "fill", "show"}:
                return None
    lines = source.split("\n")
    drop = {line for i in moved for line in range(spans[i][0] - 1, spans[i][1])}
    glue = "\n".join(line for k, line in enumerate(lines) if k in drop)
    rest = "\n".join(line for k, line in enumerate(lines) if k not in drop).rstrip("\n")
    if moved[-1] == len(body) - 1:
        rest = _silence_last(rest)
    keys = [k for i in moved for k in _glue_keys_of(body[i])]
    return rest, glue, keys


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
    """Markdown cells that quote glued values: the text stays Markdown, each value a visible slot
    (``⟨overall accuracy⟩``), and hidden ``show`` cells ("Numbers from your run") display the glued
    paragraphs with the run's values: after the Markdown cell, or after the cell that computes a value
    quoted before it is computed (consecutive ones are merged). A sentence never waits for the run; a
    number may."""
    out: list[Cell] = []
    for cell in cells:
        if cell.kind != "markdown" or "\x00" not in cell.source:
            out.append(cell)
            continue
        for chunk in _chunks(_sentence_groups(_paragraphs(cell.source))):
            out.append(Cell("markdown", _slotted("\n\n".join(chunk), ctx), cell.metadata))
            for para in chunk:
                if "\x00" in para:
                    out.append(Cell("code", para, {**copy.deepcopy(HIDDEN), "tags": ["hide-input"],
                                                   "ncbook": {"role": "glue", "names": _glue_names(para)}}))
    out = _after_their_values(out, ctx.moves if ctx is not None else None)
    merged: list[Cell] = []
    for cell in out:                   # consecutive glued paragraphs: one "Numbers from your run" cell
        is_show = cell.kind == "code" and cell.metadata.get("ncbook", {}).get("role") == "glue"
        if is_show and merged and merged[-1].kind == "code" and merged[-1].metadata.get("ncbook", {}).get("role") == "glue":
            merged[-1].source += "\n\n" + cell.source
        else:
            merged.append(cell)
    for cell in merged:
        if cell.kind == "code" and cell.metadata.get("ncbook", {}).get("role") == "glue":
            cell.source = _show_cell_source(cell.source)
    return merged


def _starts_a_part(para: str) -> bool:
    """A heading or an exercise: the numbers of the text before it are shown before it."""
    return bool(re.match(r"#{1,6}\s|>\s*\*\*Exercise\b", para.lstrip()))


def _chunks(paras: list[str]) -> list[list[str]]:
    """Paragraphs cut where a part (heading, exercise) starts after a glued paragraph: each chunk's
    numbers follow it, before the next part."""
    chunks: list[list[str]] = [[]]
    for para in paras:
        if chunks[-1] and _starts_a_part(para) and any("\x00" in p for p in chunks[-1]):
            chunks.append([])
        chunks[-1].append(para)
    return chunks


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
                    text = _template(cell.source).strip()
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
    for cell in nb.cells:          # the chapter's own slot labels (# slot: <label> on a glue line)
        if cell.cell_type == "code":
            ctx.slot_labels.update((m.group("key"), m.group("label")) for m in _SLOT_COMMENT.finditer(cell.source))
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
        if in_solution and glue_keys is not None:
            # a solution's numbers for its text: hidden in the Colab notebook, gone with the text in the student one
            if not student:
                hidden = {**meta, **copy.deepcopy(HIDDEN),
                          "ncbook": {"role": "setup", "glue_keys": glue_keys, **({"exercise": label} if label else {})}}
                cells.append(Cell("code", _hidden_source(source, tags), hidden))
            continue
        if student and in_solution:
            tags = [t for t in tags if t != "solution"] + ([STUB_TAG] if STUB_TAG not in tags else [])
            role = "stub" if _defines(source) else "answer"
            meta = {"tags": tags, **_exercise_meta(label, role)}
            cells.append(Cell("code", stub_code(source, label or "solution", _title(ctx, label)), meta))
        elif in_solution:     # the Colab notebook: the reference solution, marked for the assignment tools
            cells += _glue_split_cells(source, {**meta, **_exercise_meta(label, "solution")})
        elif is_check and label:
            cells.append(Cell("code", source, {**meta, **_exercise_meta(label, "check")}))
        elif install:
            cells.append(Cell("code", _hidden_source(source, ["remove-input"], INSTALL_TITLE),
                              {**meta, **copy.deepcopy(HIDDEN), "ncbook": {"role": "install"}}))
        elif _RECORD_CLAIMS_CELL.search(source):
            body = source.lstrip("\n").split("\n", 1)[1] if _given_title(source) is not None else source
            cells.append(Cell("code", "\n".join([_title_line(CLAIMS_TITLE), CLAIMS_PREAMBLE, body]),
                              {**meta, **copy.deepcopy(HIDDEN), "ncbook": {"role": "claims"}}))
        elif set(tags) & set(BOOKKEEPING_TAGS) or glue_keys is not None:
            hidden = {**meta, **copy.deepcopy(HIDDEN), "ncbook": {"role": "setup"}}
            if glue_keys is not None:
                hidden["ncbook"]["glue_keys"] = glue_keys   # dropped below if no sentence quotes them
            cells.append(Cell("code", _hidden_source(source, tags), hidden))
        else:
            cells += _glue_split_cells(source, meta)
    if state["inside"] is not None:
        raise ValueError(f"{{solution-start}} {state['inside']} has no {{solution-end}}")
    cells = _drop_unquoted_glue(cells)
    cells = _split_glue(cells, ctx)
    metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                "language_info": {"name": "python"},
                "ncbook": {("student_version_of" if student else "reader_version_of"): md_path.relative_to(root).as_posix(),
                           "generated_by": "tools/student_notebooks.py"}}
    return cells, metadata


def _glue_split_cells(source: str, meta: dict) -> list[Cell]:
    """A cell that computes, and after it (if its glue lines can move) a hidden cell with those lines."""
    split = split_glue_lines(source)
    if split is None:
        return [Cell("code", source, meta)]
    rest, glue, keys = split
    numbers = {"role": "setup", "glue_keys": keys}
    if meta.get("ncbook", {}).get("exercise"):
        numbers["exercise"] = meta["ncbook"]["exercise"]
    return [Cell("code", rest, meta),
            Cell("code", _hidden_source(glue, (), NUMBERS_TITLE), {**copy.deepcopy(HIDDEN), "ncbook": numbers})]


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
                if name in LISTINGS:
                    for label in _answer_labels(options.get("class", "").split()):
                        out.setdefault(label, []).append(f"listing: {arg}:{options.get('pyobject', '')}")
    return out


# What a reader should not meet as visible code: the machinery of the book (records, costs, checkpoints,
# profile and scale branches, glue). A visible code cell matching one counts as a visible bookkeeping cell.
BOOKKEEPING_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\b(?:glue|put)\(", "glue/put call"),
    (r"\brecord_claims?\(|\bsave_result\(", "claim or result records"),
    (r"(?:CHAPTER_START|T0)\s*=\s*time\.perf_counter\(\)", "chapter timer"),
    (r"\b(?:ChapterCost|COST\.\w+|measure_fit|fit_seconds|in_parallel)\b", "cost bookkeeping"),
    (r"\bcheckpoint_dir\(|\bresults_dir\(", "checkpoint or results folder"),
    (r"^\s*def (?:prepare|job|scores|train_seed)\(", "seed-group harness"),
    (r"\bscale\(\)", "smoke-scale branch"),
    (r"\bPROFILE\s*(?:[!=]=|in\b)|\bif\s+PROFILE\b", "profile branch"),
    (r"\bprofiles\.run_times\(", "run-time estimate"),
)
_BOOKKEEPING = [(re.compile(pattern, re.M), what) for pattern, what in BOOKKEEPING_PATTERNS]


def bookkeeping_reasons(source: str) -> list[str]:
    """What makes the code cell ``source`` bookkeeping (:data:`BOOKKEEPING_PATTERNS`), or ``[]``.

    Examples
    --------
    >>> bookkeeping_reasons('if PROFILE == "quick":\\n    EPOCHS = 10')
    ['profile branch']
    >>> bookkeeping_reasons("acc = model(x).argmax(1)")
    []
    """
    return [what for pattern, what in _BOOKKEEPING if pattern.search(source)]


def is_hidden(cell) -> bool:
    """Whether a notebook cell's code is collapsed (Colab form view and Jupyter's hidden source)."""
    meta = cell.get("metadata", {})
    return meta.get("cellView") == "form" and meta.get("jupyter", {}).get("source_hidden") is True


def reader_counts(nb) -> dict:
    """What a reader of the notebook ``nb`` meets before running it.

    Returns
    -------
    dict
        ``visible_code_lines`` (non-blank lines of code cells not collapsed), ``visible_code_cells``,
        ``hidden_code_cells``, ``bookkeeping`` (``[(cell id, reasons)]`` of visible bookkeeping cells),
        ``prose_chars`` (Markdown characters) and ``hidden_prose_fraction`` (the share of the text a
        reader sees only after running: glued paragraphs whose words are in no Markdown cell).
    """
    visible = [c for c in nb["cells"] if c["cell_type"] == "code" and not is_hidden(c)]
    src = lambda c: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]  # noqa: E731
    markdown = "\n".join(src(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    squashed = " ".join(_GLUE_SLOTS.sub("", markdown).split())
    hidden_chars = 0
    for c in nb["cells"]:
        if c["cell_type"] == "code" and c.get("metadata", {}).get("ncbook", {}).get("role") == "glue":
            template = src(c).split('r"""', 1)[-1].rsplit('"""', 1)[0]
            for para in _paragraphs(template):
                words = " ".join(_GLUE_SLOTS.sub("", para).split())
                if words and words not in squashed:
                    hidden_chars += len(para)
    total = len(markdown) + hidden_chars
    return {"visible_code_lines": sum(1 for c in visible for line in src(c).split("\n") if line.strip()),
            "visible_code_cells": len(visible),
            "hidden_code_cells": sum(1 for c in nb["cells"] if c["cell_type"] == "code" and is_hidden(c)),
            "bookkeeping": [(c.get("id", "?"), r) for c in visible if (r := bookkeeping_reasons(src(c)))],
            "prose_chars": len(markdown),
            "hidden_prose_fraction": hidden_chars / total if total else 0.0}


# placeholders of a show template ({{name:spec}}) and slots of the Markdown (⟨label⟩): compared without them
_GLUE_SLOTS = re.compile(r"\{\{[^{}]*\}\}|⟨[^⟩]*⟩")


def counts_table(root: Path = ROOT) -> list[dict]:
    """:func:`reader_counts` of every chapter's Colab notebook, generated now (one row per chapter)."""
    rows = []
    for p in toc_chapters(root):
        row = reader_counts(colab_notebook(p, root))
        rows.append({"chapter": p.stem, **row, "bookkeeping": len(row["bookkeeping"])})
    return rows


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
    parser.add_argument("--counts", action="store_true",
                        help="print, per chapter, the visible code lines and bookkeeping cells of its Colab notebook")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (holds _toc.yml)")
    parser.add_argument("--out", type=Path, default=None, help="student folder (default: <root>/student)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    _book.cache_clear()
    if args.counts:
        print(f"{'chapter':<24} {'code lines':>10} {'code cells':>10} {'hidden':>7} {'bookkeeping':>11} "
              f"{'prose hidden':>12}")
        for row in counts_table(root):
            print(f"{row['chapter']:<24} {row['visible_code_lines']:>10} {row['visible_code_cells']:>10} "
                  f"{row['hidden_code_cells']:>7} {row['bookkeeping']:>11} {row['hidden_prose_fraction']:>12.0%}")
        return 0
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
