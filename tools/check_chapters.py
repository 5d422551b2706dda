#!/usr/bin/env python3
"""The course-frame checklist: what every chapter of the book must have, checked in its source.

Per chapter (a jupytext page of ``_toc.yml`` that has exercises):

``frame``
    An ``{admonition} In this chapter`` before the first ``##`` section, holding
    ``**You will be able to**`` with 3-4 list items, ``**Prerequisites.**`` with at least one link
    (``{doc}``, ``{ref}``, ``{prf:ref}`` or a Markdown link) and ``**Run time.**`` naming the
    ``quick``, ``gpu`` and ``full`` profiles, each number in it glued or given with a source.
``recap`` / ``where next``
    ``## Recap`` with 3-6 list items, then ``## Where next`` linking the next chapter of the TOC
    (the last chapter: any page), both before ``## Exercises``.
``exercises``
    4-6 exercises; each names its kind with ``:class:`` (one of :data:`KINDS`); at least two
    ``derivation`` or ``prediction`` exercises, at most one ``implement`` (a formula the package
    has); at least half of them checked automatically (a ``check_*`` or ``run_cases`` call).
``answers``
    No listing (``literalinclude``) of an object an exercise names (its prompt, or its check
    ``check_<name>``) unless the listing carries ``:class: answer-<label>`` (the student
    notebooks withhold those).
``notation``
    None of the symbols the notation plan retires (:data:`RETIRED`) in the page's mathematics, and
    the temperature written ``\\tau`` (never ``t``), in prose, mathematics and figure labels.
``statements``
    None of the statements flagged in the reproduction review (:data:`FLAGGED`), no reference to
    the internal spec.
``glue order``
    No paragraph quotes a glued number computed only by a later cell (the notebooks would move it).
``progress``
    No ``progress=False`` (nor tqdm's ``disable=True``, nor ``NCBOOK_PROGRESS``) left in the code: long
    cells show progress in a notebook; the book build silences them with ``NCBOOK_PROGRESS=0``.
    ``tools/notebook_timing.py`` measures the cells that still run long without a bar.
``figures: width``
    No ``figsize`` wider than ``ncbook.plotting.MAX_FIGURE_WIDTH`` (12 in): the page shows a figure
    up to that width with its smallest text at 9 px or more.
``notebook: glue cells``
    No ``glue``/``put`` call in a code cell the Colab notebook shows (the generator moves a computing
    cell's glue lines to a hidden cell when nothing can change; the rest must be a cell of their own).
``notebook text``
    The generated Colab notebook has no text for the HTML page (``this page``, ``in this build``,
    the rocket button) and no path of the checkout.

The root page (the intro) must have a course map drawn by code (``plotting.course_map``), a link
to every chapter, the cross-links (the two minority collapses, SCL next to SupCon, SELI as an
equal-loss geometry that is not an ETF), run times per profile and none of its flagged
statements. The reproduction page is checked for its flagged statements only.

Usage::

    python3 tools/check_chapters.py                  # every page; exit 1 if something is missing
    python3 tools/check_chapters.py seli intro       # some pages
    python3 tools/check_chapters.py --json           # machine-readable results

The frame is described, with a worked example, in the chapter-frame notes handed to the chapter
authors; the markers of the notebooks in ``tools/student_notebooks.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]

KINDS = ("derivation", "prediction", "variant", "experiment", "implement")
THINKING = ("derivation", "prediction")     # at least two of these per chapter
PROFILES = ("quick", "gpu", "full")
OBJECTIVES = (3, 4)
RECAP_ITEMS = (3, 6)
EXERCISES = (4, 6)

# Statements the reproduction review flagged as saying more than is known (issue 24): each must go
# (rewritten to what is known). Matched with whitespace collapsed, case-sensitively.
FLAGGED: dict[str, list[str]] = {
    "contrastive_imbalance": [
        "for another $\\psi$ replace the logarithm by $\\psi$",
        "takes minutes to solve",
        "specialise it to **InfoNCE at temperature",
    ],
    "weighted_contrastive": [
        "is inconsistent unless the labels lie on a sphere",
        "inconsistent for any label set that is not on a sphere",
        "feasible when $d \\ge \\operatorname{rank}(G) + 1$",
        "when $\\operatorname{rank}(y) \\le d < N-1$",
    ],
    "seli": [
        "therefore converges to $Z_{5\\cdot 10^{-4}}$",
        "every margin constraint must bind at the optimum",
    ],
    "inverse_reweighting": [
        "only rescales the step",
        "a change of step size, not of direction",
        "learning rate 0.35",
    ],
    "mr2_margins": [
        "Figure 1(b) (ImageNet)",
    ],
    "intro": [
        "and the exact point of minority collapse",
        "with all its hypotheses and where in the paper it is",
        "the chapter runs the papers' full settings",
        "(the papers' settings",
        "about a minute a chapter",
    ],
    "reproduction": [
        "(the papers' settings)",
    ],
}
INTERNAL = ["the spec", "The spec"]   # development documents a reader cannot see

# Symbols the notation plan retires, per chapter ("*": every chapter): regexes on the page's
# mathematics ($...$ and $$ blocks), each with the symbol that replaces it.
RETIRED: dict[str, list[tuple[str, str]]] = {
    "*": [
        (r"\\lambda_\{?(?:c|1|i|j|y)\b\}?", "class probabilities are \\pi_c (\\pi_1 the majority's)"),
        (r"\\varepsilon", "\\epsilon is Soft SupCon's off-class weight; write e^{-2/\\tau} out"),
        (r"\\lambda_\{?\\min\}?", "\\operatorname{eig}_{\\min} for a smallest eigenvalue"),
        (r"\\sigma\(", "\\operatorname{sigmoid}( (\\sigma is a spread)"),
        (r"\bk_\{(?:maj|min)\}", "C_{\\mathrm{maj}}, C_{\\mathrm{min}}"),
    ],
    "seli": [
        (r"H\^\\top H", "code orientation: HH^\\top \\propto U\\Lambda U^\\top"),
        (r"\\sqrt\\mu|\\mu = \(", "\\chi for the eigenvalue (R C_min + C_maj)/C"),
        (r"h_\{(?:maj|min)\}", "\\mu_{\\mathrm{maj}}, \\mu_{\\mathrm{min}}"),
        (r"WH \\propto", "HW^\\top \\propto \\hat Z"),
    ],
    "contrastive_imbalance": [
        (r"\bS\(A\)|S_\\infty|\\partial S\b", "\\mathcal L(A), \\mathcal L_\\infty(A)"),
        (r"\\rho\b", "1 - \\pi_1 (\\rho is the loss imbalance)"),
        (r"\bN \\sim|\\tfrac\{N\}", "J \\sim \\mathrm{Bin}(k, 1 - \\pi_1)"),
        (r"Z = G \+", "\\Phi = \\nabla\\mathcal L(A) + \\operatorname{Diag}(\\varphi)"),
        (r"\bn = \(n_1", "\\nu = (\\nu_1, \\dots, \\nu_C)"),
    ],
    "weighted_contrastive": [
        (r"\bw_\{ij\}|\bw_\{ik\}|\\log W\b", "\\omega_{ij}, \\Omega"),
        (r"\bq_\{ij\}", "\\hat\\pi_{ij}"),
        (r"\\Omega_\{cc'\}|m_\{cc'\}", "\\bar\\omega_{cc'}, n_{cc'}"),
        (r"\bz_i\b|\bz_j\b", "h_i"),
        (r"K\(\\beta\)", "K(\\delta)"),
        (r"\\rho\b", "\\cos_\\epsilon"),
        (r"\bH\(p_i\)", "\\mathbb H(\\pi_i)"),
        (r"\bB\(\\delta\)|\bJ = I", "G_\\Delta(\\delta), P_n"),
    ],
    "inverse_reweighting": [
        (r"\bw\^\*|\bw_c\^\*|\bw\^\{\(0\)\}|\bw_c\^\{\(0\)\}|w\^\{\\text\{final\}\}", "u_c, u^\\star, u^{(0)}, u^{\\mathrm{final}}"),
        (r"\bh_c\b", "\\mu_c"),
        (r"c \\in P\b", "c \\in \\mathcal C_{\\mathcal B}"),
        (r"\\gamma", "\\kappa (the macro exponent)"),
    ],
    "mr2_margins": [
        (r"\bK\b", "C"),
        (r"\\phi|\\Phi", "h_i, H"),
        (r"\bs_k\b|\\bar s\b", "\\sigma_c^2, \\bar\\sigma^2"),
        (r"\\bar c\b", "\\bar\\gamma"),
        (r"\bB_k\b", "t_c^3"),
    ],
}
# the temperature written t: in mathematics ("/t", "t = 1", "temperature $t$") and in code strings
_TEMP_MATH = re.compile(r"(?<![\\\w])t(?![\w_])\s*(?:=|\\to|\\le|\\ge|>|<)|/\s*t(?![\w_])|\^\{[^}]*/t\}")
_TEMP_TEXT = re.compile(r"temperature \$?t\$?(?![\w])")

_LINK = re.compile(r"\{(?:doc|ref|prf:ref|numref|eq)\}`[^`]+`|\[[^\]]+\]\([^)]+\)|\{cite(?::\w)?\}`")
_GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]+`")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
_CHECK = re.compile(r"\b(check_(\w+)|run_cases)\s*\(")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_HTML_ONLY = re.compile(r"\b(?:this page|in this build|rocket|the HTML|where no kernel runs)\b", re.I)
_CHECKOUT = re.compile(r"(?<![\w.:/-])(?:\.\./|benchmarks/|results/|tools/|\.ci/|_toc\.yml)")
_URL = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
_FIGSIZE = re.compile(r"\bfigsize\s*=\s*\(\s*(\d+(?:\.\d*)?)")
_GLUE_CALL = re.compile(r"^[^#\n]*\b(?:glue|put)\(", re.M)
# progress turned off in a chapter's code: an argument, tqdm's own switch, or the environment variable
_NO_PROGRESS = re.compile(r"\bprogress\s*=\s*(?:False|0)\b|\bdisable\s*=\s*True\b|NCBOOK_PROGRESS")


@dataclass
class Result:
    page: str
    check: str
    ok: bool
    detail: str = ""


# --------------------------------------------------------------------------- reading a page
def _generator():
    spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "tools" / "student_notebooks.py")
    module = sys.modules.get("student_notebooks")
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["student_notebooks"] = module    # dataclasses look their module up
        spec.loader.exec_module(module)
    return module


@dataclass
class Page:
    path: Path
    root: Path
    markdown: list[str]          # the Markdown cells, in order
    code: list[str]              # the code cells, in order
    cells: list                  # jupytext cells

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def text(self) -> str:
        return "\n\n".join(self.markdown)


def read_page(path: Path, root: Path = ROOT) -> Page:
    text = path.read_text()
    if text.lstrip().startswith("---") and "jupytext:" in text.split("\n---", 1)[0]:
        cells = jupytext.reads(text, fmt="md:myst").cells
    else:
        cells = [type("Cell", (), {"cell_type": "markdown", "source": text, "metadata": {}})()]
    return Page(path, root, [c.source for c in cells if c.cell_type == "markdown"],
                [c.source for c in cells if c.cell_type == "code"], cells)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every ``##`` section, in order (code fences respected)."""
    out, head, body, fence = [], None, [], None
    for line in text.split("\n"):
        m = re.match(r"^(`{3,}|:{3,})", line)
        if m and fence is None:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        if fence is None and line.startswith("## "):
            if head is not None:
                out.append((head, "\n".join(body)))
            head, body = line[3:].strip(), []
        elif head is not None:
            body.append(line)
    if head is not None:
        out.append((head, "\n".join(body)))
    return out


def _labelled(body: str, label: str) -> str:
    """The part of ``body`` from ``**<label>`` to the next bold label at a line start (or the end)."""
    m = re.search(rf"^\*\*{re.escape(label)}", body, re.M)
    if not m:
        return ""
    rest = body[m.end():]
    nxt = re.search(r"^\*\*[A-Z]", rest, re.M)
    return rest[:nxt.start()] if nxt else rest


def _frame(page: Page) -> str | None:
    """The body of the ``In this chapter`` admonition, if it comes before the first ``##`` section."""
    gen = _generator()
    for source in page.markdown:
        for block in gen._blocks(source.split("\n")):
            if block[0] == "text" and any(line.startswith("## ") for line in block[1]):
                return None
            if block[0] == "directive" and block[1] == "admonition" and block[2].strip().lower() == "in this chapter":
                return "\n".join(block[4])
    return None


def _exercises(page: Page) -> list[dict]:
    """Each exercise: label, classes, prompt text and whether a check follows it (before the next one)."""
    gen = _generator()
    found, current = [], None
    for cell in page.cells:
        if cell.cell_type == "markdown":
            for name, arg, options in gen._walk_directives(cell.source):
                if name == "exercise":
                    current = {"label": options.get("label", "?"), "classes": options.get("class", "").split(),
                               "prompt": "", "checked": False, "checks": []}
                    found.append(current)
            if current is not None:
                m = re.search(r"^(`{3,}|:{3,})\{exercise\}[^\n]*\n(?P<body>.*?)^\1\s*$", cell.source, re.M | re.S)
                if m:
                    current["prompt"] += m.group("body")
        elif current is not None:
            for m in _CHECK.finditer(cell.source):
                current["checked"] = True
                if m.group(2):
                    current["checks"].append(m.group(2))
            current.setdefault("defines", []).extend(_defined(cell.source))
    return found


def _defined(source: str) -> list[str]:
    return re.findall(r"^(?:async\s+)?def\s+(\w+)", source, re.M)


def _stem_name(name: str) -> str:
    """A function's name without the decorations of a by-hand cell or an exercise (my_, _by_hand, _hand)."""
    return re.sub(r"^(?:my_)|(?:_by_hand|_hand)$", "", name)


def _next_page(page: Page) -> str | None:
    gen = _generator()
    order = [p.with_suffix("").name for p, _ in gen._toc_entries(page.root)]
    chapters = [p.stem for p in gen.toc_chapters(page.root)
                if re.search(r"^(`{3,}|:{3,})\{exercise\}", p.read_text(), re.M)]
    if page.stem not in chapters:
        return None
    i = chapters.index(page.stem)
    return chapters[i + 1] if i + 1 < len(chapters) else None if order else None


# --------------------------------------------------------------------------- the checks
def check_frame(page: Page) -> list[Result]:
    body = _frame(page)
    name = page.stem
    if body is None:
        return [Result(name, "frame: objectives", False, "no `{admonition} In this chapter` before the first ## section"),
                Result(name, "frame: prerequisites", False, "no frame"),
                Result(name, "frame: run time", False, "no frame")]
    out = []
    goals = _labelled(body, "You will be able to")
    items = [line for line in goals.split("\n") if _ITEM.match(line)]
    lo, hi = OBJECTIVES
    out.append(Result(name, "frame: objectives", bool(goals) and lo <= len(items) <= hi,
                      f"**You will be able to** with {len(items)} items (want {lo}-{hi})" if goals
                      else "no **You will be able to** list"))
    pre = _labelled(body, "Prerequisites")
    out.append(Result(name, "frame: prerequisites", bool(pre) and bool(_LINK.search(pre)),
                      "" if pre and _LINK.search(pre) else ("**Prerequisites.** has no link" if pre else
                                                            "no **Prerequisites.**")))
    run = _labelled(body, "Run time")
    missing = [p for p in PROFILES if not re.search(rf"\b{p}\b", run)]
    bare = re.search(r"\d", _GLUE.sub("", run)) and not _LINK.search(run)
    ok = bool(run) and not missing and not bare
    detail = ("no **Run time.**" if not run else f"profiles not named: {missing}" if missing
              else "a typed number without a source (glue it, or cite where it comes from)" if bare else "")
    out.append(Result(name, "frame: run time", ok, detail))
    return out


def check_recap(page: Page) -> list[Result]:
    sections = _sections(page.text)
    heads = [h for h, _ in sections]
    name = page.stem
    recap = next((b for h, b in sections if h.lower() == "recap"), None)
    items = [line for line in (recap or "").split("\n") if _ITEM.match(line)]
    lo, hi = RECAP_ITEMS
    out = [Result(name, "recap", recap is not None and lo <= len(items) <= hi,
                  "no ## Recap section" if recap is None else f"## Recap has {len(items)} items (want {lo}-{hi})")]
    where = next((b for h, b in sections if h.lower() == "where next"), None)
    nxt = _next_page(page)
    if where is None:
        out.append(Result(name, "where next", False, "no ## Where next section"))
    else:
        links = re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", where)
        linked = {Path(t).name for t in links}
        ok = (nxt in linked) if nxt else bool(links)
        out.append(Result(name, "where next", ok, "" if ok else f"## Where next does not link {{doc}}`{nxt or 'a page'}`"))
    order = [h.lower() for h in heads]
    if "recap" in order and "exercises" in order and order.index("recap") > order.index("exercises"):
        out[0] = Result(name, "recap", False, "## Recap comes after ## Exercises")
    return out


def check_exercises(page: Page) -> list[Result]:
    name = page.stem
    ex = _exercises(page)
    lo, hi = EXERCISES
    kinds = {e["label"]: [c for c in e["classes"] if c in KINDS] for e in ex}
    unkinded = [lab for lab, k in kinds.items() if len(k) != 1]
    thinking = sum(1 for k in kinds.values() if k and k[0] in THINKING)
    implement = sum(1 for k in kinds.values() if k == ["implement"])
    checked = sum(1 for e in ex if e["checked"])
    return [
        Result(name, "exercises: count", lo <= len(ex) <= hi, f"{len(ex)} exercises (want {lo}-{hi})"),
        Result(name, "exercises: kinds", bool(ex) and not unkinded,
               f"no single :class: kind ({'|'.join(KINDS)}) on {unkinded}" if unkinded else ""),
        Result(name, "exercises: derivation/prediction", thinking >= 2, f"{thinking} derivation/prediction (want >= 2)"),
        Result(name, "exercises: implement", implement <= 1, f"{implement} implement exercises (want <= 1)"),
        Result(name, "exercises: autograded", bool(ex) and 2 * checked >= len(ex),
               f"{checked} of {len(ex)} checked automatically (want at least half)"),
    ]


def check_answers(page: Page) -> list[Result]:
    """Listings of an object that an exercise names, printed without an ``answer-<label>`` marker."""
    gen = _generator()
    ex = _exercises(page)
    unmarked = []
    for source in page.markdown:
        for dname, arg, options in gen._walk_directives(source):
            if dname not in gen.LISTINGS or "pyobject" not in options:
                continue
            obj = options["pyobject"].split(".")[-1].lstrip("_")
            marked = set(gen._answer_labels(options.get("class", "").split()))
            for e in ex:
                named = obj in e["checks"] or re.search(rf"`[\w.]*\b_?{re.escape(obj)}\b", e["prompt"])
                if named and e["label"] not in marked:
                    unmarked.append(f"{options['pyobject']} ({e['label']})")
    # a cell of the chapter (before the exercises) defining the function an exercise asks for
    asked = {_stem_name(f): e["label"] for e in ex for f in e.get("defines", [])}
    before = []
    for cell in page.cells:
        if cell.cell_type == "markdown" and re.search(r"^(`{3,}|:{3,})\{exercise\}", cell.source, re.M):
            break
        if cell.cell_type == "code":
            marked = set(gen._answer_labels(cell.metadata.get("tags", [])))
            for f in _defined(cell.source):
                label = asked.get(_stem_name(f))
                if label and label not in marked:
                    before.append(f"{f} ({label})")
    return [Result(page.stem, "answers", not unmarked and not before,
                   "; ".join(([f"listings printed though an exercise asks for them (mark :class: answer-<label>): "
                               f"{unmarked}"] if unmarked else []) +
                             ([f"cells define what an exercise asks for (tag answer-<label>, alone in its cell): "
                               f"{before}"] if before else [])))]


def _math_spans(page: Page) -> list[str]:
    spans = []
    for source in page.markdown:
        spans += _MATH.findall(source)
    return spans


def check_notation(page: Page) -> list[Result]:
    name = page.stem
    spans = _math_spans(page)
    found = []
    for pattern, instead in RETIRED["*"] + RETIRED.get(name, []):
        hits = sorted({m.group(0) for s in spans for m in re.finditer(pattern, s)})
        if hits:
            found.append(f"{hits[:3]} -> {instead}")
    temps = [m.group(0) for s in spans for m in _TEMP_MATH.finditer(s)]
    temps += [m.group(0) for s in page.markdown for m in _TEMP_TEXT.finditer(s)]
    for code in page.code:
        for literal in re.findall(r"\"[^\"\n]*\"|'[^'\n]*'", code):
            temps += [m.group(0) for m in _TEMP_TEXT.finditer(literal)]
            temps += [literal for m in re.finditer(r"(?<![\w\\])t = \d", literal)]
    return [Result(name, "notation: retired symbols", not found, "; ".join(found)),
            Result(name, "notation: temperature tau", not temps,
                   f"the temperature written t: {sorted(set(temps))[:5]}" if temps else "")]


def check_statements(page: Page) -> list[Result]:
    text = _squash(page.path.read_text())
    flagged = [p for p in FLAGGED.get(page.stem, []) if _squash(p) in text]
    internal = [p for p in INTERNAL if p in text]
    return [Result(page.stem, "statements: flagged", not flagged, f"still there: {flagged}" if flagged else ""),
            Result(page.stem, "statements: internal references", not internal,
                   f"refers to {internal}" if internal else "")]


def check_glue_order(page: Page) -> list[Result]:
    moves = _generator().forward_glues(page.path, root=page.root)
    return [Result(page.stem, "glue order", not moves,
                   "quoted before computed (move the paragraph after the cell, or compute earlier): "
                   + "; ".join(f"{names} in {text[:50]!r}" for text, names in moves) if moves else "")]


def check_progress(page: Page) -> list[Result]:
    """No cell turns progress off: long calls (``ncbook.experiments``, ``train.fit``, ``run_parallel``,
    solvers over grids) show a bar in a notebook; the book build silences them all with
    ``NCBOOK_PROGRESS=0``. ``tools/notebook_timing.py`` measures which cells run long without one."""
    hits = [c.split("\n")[0][:50] for c in page.code if _NO_PROGRESS.search(c)]
    return [Result(page.stem, "progress", not hits, f"progress turned off (progress=False, tqdm disable=True or "
                   f"NCBOOK_PROGRESS) in cells starting {hits}" if hits else "")]


def check_notebook_text(page: Page) -> list[Result]:
    nb = _generator().colab_notebook(page.path, root=page.root)
    found = []
    for cell in nb.cells:
        meta = cell.metadata.get("ncbook", {})
        if cell.cell_type == "markdown":
            text = cell.source
        elif meta.get("role") == "glue":
            text = cell.source.split('r"""', 1)[1]
        else:
            continue
        plain = _URL.sub("", text)
        found += [m.group(0) for m in _HTML_ONLY.finditer(plain)] + [m.group(0) for m in _CHECKOUT.finditer(plain)]
    return [Result(page.stem, "notebook text", not found,
                   f"text for the HTML page or the checkout in the notebook: {sorted(set(found))}" if found else "")]


def check_notebook_glue(page: Page) -> list[Result]:
    """No ``glue``/``put`` call in a code cell the Colab notebook shows: the generator moves the glue lines
    of a computing cell to a hidden cell of their own; those it cannot move (inside a loop that computes,
    reading a name the rest of the cell changes later, a timer) must go to a cell of their own."""
    gen = _generator()
    nb = gen.colab_notebook(page.path, root=page.root)
    found = [cell.source.strip().split("\n")[0][:50] for cell in nb.cells
             if cell.cell_type == "code" and not gen.is_hidden(cell) and _GLUE_CALL.search(cell.source)]
    return [Result(page.stem, "notebook: glue cells", not found,
                   "glue/put lines the notebook cannot move out of a computing cell (put them in a cell of "
                   f"their own, tagged remove-cell), in cells starting {found}" if found else "")]


def _max_figure_width(root: Path) -> float:
    """``ncbook.plotting.MAX_FIGURE_WIDTH``, read from its source (the check imports nothing of the package)."""
    source = root / "ncbook" / "plotting" / "_core.py"
    if not source.exists():
        source = ROOT / "ncbook" / "plotting" / "_core.py"
    m = re.search(r"^MAX_FIGURE_WIDTH\s*=\s*([\d.]+)", source.read_text(), re.M)
    return float(m.group(1)) if m else 12.0


def check_figures(page: Page) -> list[Result]:
    """Figures no wider than ``ncbook.plotting.MAX_FIGURE_WIDTH``: wider ones are scaled down on the page
    until their tick labels are under 9 px."""
    limit = _max_figure_width(page.root)
    wide = sorted({float(m.group(1)) for c in page.code for m in _FIGSIZE.finditer(c) if float(m.group(1)) > limit})
    return [Result(page.stem, "figures: width", not wide,
                   f"figsize widths {wide} in over {limit:g} in (ncbook.plotting.MAX_FIGURE_WIDTH): fewer panels a "
                   "row, or two rows" if wide else "")]


def check_chapter(page: Page) -> list[Result]:
    out = []
    for check in (check_frame, check_recap, check_exercises, check_answers, check_notation, check_statements,
                  check_glue_order, check_progress, check_notebook_text, check_notebook_glue, check_figures):
        out += check(page)
    return out


def check_intro(page: Page) -> list[Result]:
    gen = _generator()
    name = page.stem
    code = "\n".join(page.code)
    text = page.text
    chapters = [p.stem for p in gen.toc_chapters(page.root) if p.stem != name
                and re.search(r"^(`{3,}|:{3,})\{exercise\}", p.read_text(), re.M)]
    linked = {Path(t).name for t in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`", text)}
    unlinked = [c for c in chapters if c not in linked]
    squashed = _squash(text).lower()
    cross = {"two minority collapses": "minority collapse" in squashed and "different" in squashed,
             "SCL next to SupCon": "scl" in squashed and "supcon" in squashed,
             "SELI: equal losses, not an ETF": "equal" in squashed and "not an etf" in squashed}
    runs = next((b for h, b in _sections(text) if "run" in h.lower()), "")
    missing = [p for p in PROFILES if not re.search(rf"\b{p}\b", runs)]
    out = [Result(name, "course map", "course_map(" in code, "" if "course_map(" in code else
                  "no code cell drawing the course map (plotting.course_map)"),
           Result(name, "links to every chapter", not unlinked, f"no {{doc}} link to {unlinked}" if unlinked else ""),
           Result(name, "cross-links", all(cross.values()), f"missing: {[k for k, v in cross.items() if not v]}"
                  if not all(cross.values()) else ""),
           Result(name, "run times per profile", bool(runs) and not missing,
                  "no section on running it" if not runs else f"profiles not named: {missing}" if missing else "")]
    out += check_statements(page)
    if page.code:
        out += check_notebook_text(page)
    return out


def check_page(path: Path, root: Path = ROOT) -> list[Result]:
    """Every check that applies to the page at ``path`` (a chapter, the root page or the reproduction page)."""
    page = read_page(path, root)
    gen = _generator()
    toc = gen._toc(root)
    if path.with_suffix("").relative_to(root).as_posix() == toc["root"]:
        return check_intro(page)
    if re.search(r"^(`{3,}|:{3,})\{exercise\}", path.read_text(), re.M):
        return check_chapter(page)
    return check_statements(page)


def pages(root: Path = ROOT) -> list[Path]:
    """The pages the checklist reads: the root page, the chapters with exercises, the reproduction page."""
    gen = _generator()
    out = []
    for path, _ in gen._toc_entries(root):
        if not path.exists():
            continue
        text = path.read_text()
        if path == root / f"{gen._toc(root)['root']}.md" or re.search(r"^(`{3,}|:{3,})\{exercise\}", text, re.M) \
                or path.stem in FLAGGED:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="page stems (default: every page the checklist reads)")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    chosen = pages(root)
    if args.pages:
        by_stem = {p.stem: p for p in chosen}
        unknown = [s for s in args.pages if s not in by_stem]
        if unknown:
            parser.error(f"no such page: {unknown} (known: {sorted(by_stem)})")
        chosen = [by_stem[s] for s in args.pages]
    results = [r for path in chosen for r in check_page(path, root)]
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=1))
    else:
        for path in chosen:
            rows = [r for r in results if r.page == path.stem]
            bad = [r for r in rows if not r.ok]
            print(f"{path.stem}: {len(rows) - len(bad)}/{len(rows)} checks pass")
            for r in rows:
                print(f"  [{'ok' if r.ok else '--'}] {r.check}" + (f": {r.detail}" if r.detail and not r.ok else ""))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
