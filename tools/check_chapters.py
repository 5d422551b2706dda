#!/usr/bin/env python3
"""The chapter checklist: the rules of ``CONTRIBUTING.md`` that can be checked, held against every page.

Per chapter (a jupytext page of ``_toc.yml`` that has exercises), in the order a reader meets them:

``frame``
    An ``{admonition} In this chapter`` before the first ``##`` section, holding
    ``**You will be able to**`` with 3-4 list items, ``**Prerequisites.**`` with at least one link
    (``{doc}``, ``{ref}``, ``{prf:ref}`` or a Markdown link), ``**Run time.**`` naming the
    ``quick``, ``gpu`` and ``full`` profiles, each number in it glued or given with a source, and
    ``**Study time.** about N h: ...`` (hours; ``N h M min`` or ``N min`` also read).
``sources box``
    ``:::{admonition} Where the quotes come from`` with ``:class: sources`` before the first ``##``
    section: it cites the paper(s) and says what a reader should check in them.
``frame: exercise minutes``
    The study-time line gives the exercises' time as the duration just before ``for the ... exercises``
    (``2 h 15 min for the six exercises``): the sum of the exercises' label minutes. Its total (the first
    duration) is the sum of the parts it lists, to within a quarter of an hour.
``recap`` / ``where next``
    ``## Recap`` with 3-6 list items, then ``## Where next`` linking the next chapter of the TOC
    (the last chapter: any page), both before ``## Exercises``.
``exercises``
    4-6 exercises; each names its kind with ``:class:`` (one of :data:`KINDS`); at least two
    ``derivation`` or ``prediction`` exercises, at most one ``implement`` (a formula the package
    has); at least half of them checked automatically (a ``check_*`` or ``run_cases`` call).
``exercises: labels``
    Each exercise's first line is its label, ``*15 min · medium · derivation*``: minutes, a level of
    :data:`LEVELS`, a kind of :data:`LABEL_KINDS` that agrees with its ``:class:``.
``exercises: hints``
    Every derivation has ``:::{admonition} Hint`` with ``:class: dropdown`` before its solution.
``exercises: no re-typing``
    No solution defines a function whose name, ``my_`` stripped, is a public function of the package
    that the page shows (a listing, a call, its name in the text): exercises ask for derivations,
    predictions or variants.
``answers``
    No listing (``literalinclude``, ``listing``) of an object an exercise names (its prompt, or its
    check ``check_<name>``) unless the listing carries ``:class: answer-<label>`` (the student
    notebooks withhold those); no cell before the exercises defining what an exercise asks for.
``notation``
    None of the symbols the notation plan retires (:data:`RETIRED`: the renames that give every symbol
    one meaning) in the page's mathematics; the temperature written ``\\tau`` (never ``t``), in prose,
    mathematics and figure labels; every symbol of the page's mathematics listed on the notation page
    (:func:`math_symbols` reads them; :func:`notation_symbols` reads the page).
``glossary terms``
    Every ``{term}`` the page uses has an entry in the glossary.
``statements`` / ``working notes``
    None of the statements flagged in the reproduction review (:data:`FLAGGED`), no reference to the
    internal spec, and no sentence about what the authors did not have (:data:`WORKING_NOTES`) in the
    text, the code (claim records' ``source=``) or the chapter's ``ncbook/experiments`` module.
``headings: numbers``
    No heading numbered by hand (the book numbers them).
``predict prompts``
    Every ``##`` section that reveals a computed result (a cell that shows output, a glued number)
    has a ``Predict`` or ``Discuss`` admonition (``:class: predict`` / ``discuss``) before a result.
``figures: what to see``
    After every cell that draws, a paragraph starting ``**What to see.**`` before the next figure,
    heading or exercise.
``glue order``
    No paragraph quotes a glued number computed only by a later cell (the notebooks would move it).
``progress``
    No ``progress=False`` (nor tqdm's ``disable=True``, nor ``NCBOOK_PROGRESS``) left in the code: long
    cells show progress in a notebook; the book build silences them with ``NCBOOK_PROGRESS=0``.
    ``tools/notebook_timing.py`` measures the cells that still run long without a bar.
``notebook text``
    The generated Colab notebook has no text for the HTML page (``this page``, ``in this build``,
    the rocket button) and no path of the checkout.
``glue cells``
    No ``glue``/``put`` call in a cell a reader sees that also computes or draws: on the page (a cell
    that shows its code) and in the Colab notebook (the generator moves a computing cell's glue lines
    to a hidden cell when nothing can change; the rest must be a cell of their own).
``figures: width``
    No ``figsize`` wider than ``ncbook.plotting.MAX_FIGURE_WIDTH`` (12 in): the page shows a figure
    up to that width with its smallest text at 9 px or more.

The root page (the intro) must have a course map drawn by code (``plotting.course_map``) followed by
what to see in it, a link to every chapter, the cross-links (the two minority collapses, SCL next to
SupCon, SELI as an equal-loss geometry that is not an ETF), run times per profile, a study plan (a
table whose header starts with ``Day`` linking every chapter), each chapter's study time as its frame
states it, only symbols of the notation page's shared tables, glossary terms that exist, and none of
its flagged statements or working notes. Every other page of the TOC is
checked for flagged statements, working notes and numbered headings; the glossary for entries that
define and link their chapter; the notation page for symbols listed by two chapters but not in its
shared tables (one meaning per symbol).

Usage::

    python3 tools/check_chapters.py                  # every page; exit 1 if something is missing
    python3 tools/check_chapters.py seli intro       # some pages
    python3 tools/check_chapters.py --json           # machine-readable results

``tests/test_check_chapters.py`` makes each rule fail on a small bad page and keeps the book's pages
passing, with the pages still being rewritten listed there (``NOT_YET``) with the rules they fail.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
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
    "nc_primer": [
        (r"\\lambda_b\b|\bb\^\\star|\bb \\in \\mathbb R|Wh_i \+ b\b",
         "z_0, \\lambda_0 for the logit bias (b is the batch size)"),
        (r"w_c \+ v\b|m_c \+ v\b|\\\|v\\\||v \\perp|\\langle v, h_i\\rangle|1v\^\\top",
         "w_0 for the shift of the classifier rows (v is a unit eigenvector)"),
        (r"\be_1, \\dots, e_C\b", "the rows of I_C (e is Euler's number)"),
        (r"\\\|A - B\\\||\\langle A, B\\rangle", "G, G' (A is the contrastive Gram matrix, B_c a batch count)"),
        (r"r_\{\\mathrm\{flip\}\}", "\\pi_{\\mathrm{flip}} (r^2 is a fit)"),
        (r"^K$", "the paper's letter in words (K(\\delta) is the cosine target of weighted contrastive)"),
    ],
    "seli": [
        (r"\bu = \(|\bg = \(|uu\^\\top|gg\^\\top|PDP[ug]\b|\bD[ug] = ",
         "v_in, v_grp for the eigenvectors of PDP (u_c is a class weight, g_j a score gap)"),
        (r"\be_\{y_i\}", "row y_i of I_C (e is Euler's number)"),
        (r"\baP\b|\ba > 0|\ba\(C-1\)|/a\b|\ba = \\sqrt", "\\varsigma for the ETF scale (a_i: weighted contrastive)"),
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
        (r"^s$", "\\bar\\beta for a factor common to every batch (s is a similarity)"),
        (r"\\ell_1", "the 1-norm in words or \\lVert\\cdot\\rVert_1 (\\ell is a per-sample loss)"),
    ],
    "mr2_margins": [
        (r"\bK\b", "C"),
        (r"\\phi|\\Phi", "h_i, H"),
        (r"\bs_k\b|\\bar s\b", "\\sigma_c^2, \\bar\\sigma^2"),
        (r"\\bar c\b", "\\bar\\gamma"),
        (r"\bB_k\b", "t_c^3"),
        (r"\bS = \\sum|/S\b|\bS\^[23]", "C\\bar t, with \\bar t the mean of the t_c (S is the similarity matrix)"),
        (r"\\lVert X\\rVert|\\mathbb E X\b|\}X\b", "the identity written for \\hat\\mu_c (X is the primer's matrix)"),
    ],
}
# The label line every exercise starts with, e.g. ``*15 min · medium · derivation*``: its kinds and the
# ``:class:`` each stands for.
LEVELS = ("easy", "medium", "hard")
LABEL_KINDS = {"derivation": "derivation", "predict and run": "prediction", "variant": "variant",
               "experiment": "experiment", "implement": "implement"}
_LABEL_LINE = re.compile(r"^\*(?P<minutes>\d+) min · (?P<level>[a-z]+) · (?P<kind>[a-z ]+)\*$")
SOURCES_TITLE = "Where the quotes come from"     # the sources box: `:::{admonition} <title>` with `:class: sources`
PROMPT_CLASSES = ("predict", "discuss")          # `:::{admonition} Predict` / `Discuss` with `:class: predict|discuss`
UNPROMPTED_SECTIONS = ("recap", "where next", "exercises", "references")
WHAT_TO_SEE = re.compile(r"^\*\*What to see\.\*\*", re.M)
# a cell that draws: pyplot figures and axes methods, the package's figures, the course map
_DRAWS = re.compile(r"\bplt\.(?:subplots|figure|subplot|subplot_mosaic|plot|imshow|scatter|bar|hist)\(|"
                    r"\bplotting\.(?!shown_text_px\b|step_counts\b|MAX_FIGURE_WIDTH\b)\w+\(|"
                    r"\.(?:plot|scatter|imshow|matshow|bar|barh|hist|pcolormesh|contourf?)\(|\bcourse_map\(")
# Sentences that tell a reader what the authors did not have (issue 32): the sources box says once, in the
# reader's terms, what comes from where. Matched case-insensitively with whitespace collapsed, in the page's
# text, its code (the claim records' ``source=`` strings) and the chapter's experiment module.
WORKING_NOTES = (
    r"not known (?:to us|here)",
    r"(?:theorem|table|figure|section|equation|proposition|lemma|page) numbers? (?:is |are )?(?:not known|unknown)",
    r"as quoted in a summary",
    r"\bwe worked from\b",
    r"\bwe could not (?:confirm|check|verify|identify|find)\b",
    r"\bas we have it\b",
    r"\bwe have (?:it )?from a summary\b",
    r"\bwithout (?:its|the) (?:table|figure|theorem|section|equation) (?:or \w+ )?number\b",
    r"\bwe could identify\b",
    r"\bwe do not restate\b",
    r"\bnot at hand\b",
    r"\bwe did not have\b",
)
_WORKING_NOTES = [re.compile(p, re.I) for p in WORKING_NOTES]
# a heading numbered by hand ("## 1. Why", "### 2.3 The", "## IV. ..."): the book numbers its headings itself
_NUMBERED_HEADING = re.compile(r"^(#{1,6})\s+(?:\d+[.):]|\d+(?:\.\d+)+[.):]?|[IVX]+[.)])\s")
_TIME_HOURS = re.compile(r"(?P<value>\d+(?:\.\d+)?)\s*h\b")
_TERM = re.compile(r"\{term\}`(?:[^`<]*<)?(?P<term>[^`<>]+)>?`")

# the temperature written t: in mathematics ("/t", "t = 1", "temperature $t$") and in code strings
_TEMP_MATH = re.compile(r"(?<![\\\w])t(?![\w_])\s*(?:=|\\to|\\le|\\ge|>|<)|/\s*t(?![\w_])|\^\{[^}]*/t\}")
_TEMP_TEXT = re.compile(r"temperature \$?t\$?(?![\w])")

_LINK = re.compile(r"\{(?:doc|ref|prf:ref|numref|eq)\}`[^`]+`|\[[^\]]+\]\([^)]+\)|\{cite(?::\w)?\}`")
_GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]+`")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S")
_CHECK = re.compile(r"\b(check_(\w+)|run_cases)\s*\(")
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
    _cache: dict = field(default_factory=dict, repr=False)   # what several checks derive from the page

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


# --------------------------------------------------------------------------- the mathematics of a page
# Directives whose body is code or data, not Markdown: their text holds no mathematics of the page.
_CODE_DIRECTIVES = ("code-cell", "code-block", "code", "literalinclude", "listing", "glue", "glue:figure",
                    "glue:any", "bibliography", "raw", "csv-table")
_BARE_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,}|:{3,})\s*$")
_OPEN_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,}|:{3,})(?P<rest>.*)$")
_OPTION_LINE = re.compile(r"^\s*:[\w-]+:(?:\s|$)")
_INLINE_CODE = re.compile(r"(`+)(?!\s*$).+?\1", re.S)
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
# inline math may run over a line break (MyST's dollarmath), never over a blank line
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)((?:[^$\n\\]|\\.|\n(?![ \t]*\n))+?)(?<![\s\\])\$(?!\$)")


def _strip_code(markdown: str) -> str:
    """``markdown`` without its code: fenced code blocks, code directives, fences, options and inline code.

    A directive with Markdown inside (an admonition, a theorem, an exercise) keeps its body; a ``{math}``
    directive becomes a ``$$`` block.
    """
    out, lines, i = [], markdown.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if _BARE_FENCE.match(line) or _OPTION_LINE.match(line):
            out.append("")
            i += 1
            continue
        m = _OPEN_FENCE.match(line)
        if m is None:
            out.append(line)
            i += 1
            continue
        fence, rest = m.group("fence"), m.group("rest").strip()
        name = re.match(r"^\{([\w:.-]+)\}", rest)
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and set(lines[j].strip()) == {fence[0]}):
            j += 1
        if name is not None and name.group(1) == "math":
            body = [x for x in lines[i + 1:j] if not _OPTION_LINE.match(x)]
            out.append("$$" + "\n".join(body) + "$$")
            i = j + 1
        elif (name is None and fence[0] != ":") or (name is not None and name.group(1) in _CODE_DIRECTIVES):
            out.append("")
            i = j + 1
        else:
            out.append("")          # a directive holding Markdown: its body stays, its fence goes
            i += 1
    return _INLINE_CODE.sub(" ", "\n".join(out))


def math_spans(markdown: str) -> list[str]:
    """The mathematics of Markdown text: the content of every ``$$...$$`` block and ``$...$`` span."""
    spans: list[str] = []

    def keep(m: re.Match) -> str:
        spans.append(m.group(1))
        return " "

    text = _DISPLAY_MATH.sub(keep, _strip_code(markdown))
    _INLINE_MATH.sub(keep, text)
    return spans


GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi rho "
    "varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi "
    "Psi Omega ell".split())
_SKIP_ARGUMENT = frozenset("text mathrm operatorname textrm mbox textit textbf texttt label tag begin end mathsf "
                           "hbox".split())
_ALPHABETS = frozenset("mathcal mathbb mathscr mathfrak".split())
_DECORATIONS = frozenset("hat bar tilde widehat widetilde overline vec mathbf boldsymbol bm dot ddot check underline "
                         "breve mathring mathit".split())
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def _argument(s: str, i: int) -> tuple[str, int]:
    """The TeX argument that starts at ``s[i]`` (spaces skipped): a ``{...}`` group, a command or one character."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        depth = 0
        for j in range(i, len(s)):
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            if depth == 0:
                return s[i + 1:j], j + 1
        return s[i + 1:], len(s)
    if s[i] == "\\":
        m = _COMMAND.match(s, i)
        return m.group(0), m.end()
    return s[i], i + 1


def math_symbols(math: str) -> list[str]:
    """The symbols of a piece of TeX mathematics, in order: Latin letters, Greek letters (``\\alpha``) and
    letters of other alphabets (``\\mathcal L``, ``\\mathbb E``).

    Decorations are dropped (``\\hat Z`` is ``Z``, ``\\tilde y_i`` is ``y``); subscripts are labels and
    indices, not symbols, and are skipped (``\\lambda_W`` is ``\\lambda``, ``w_{\\mathrm{maj}}`` is ``w``);
    superscripts are read (``e^{g/\\tau}`` holds ``e``, ``g`` and ``\\tau``); text and operator names
    (``\\mathrm{CE}``, ``\\operatorname{dist}``) are not symbols. Adjacent letters are separate symbols
    (``WH`` is a product).
    """
    out: list[str] = []
    i = 0
    while i < len(math):
        ch = math[i]
        if ch == "\\":
            m = _COMMAND.match(math, i)
            name, i = m.group(1), m.end()
            if name in _SKIP_ARGUMENT:
                _, i = _argument(math, i)
            elif name in _ALPHABETS:
                arg, i = _argument(math, i)
                arg = arg.strip().lstrip("\\")
                if arg:
                    out.append(f"\\{name} {arg}")
            elif name in _DECORATIONS:
                arg, i = _argument(math, i)
                out += math_symbols(arg)
            elif name in GREEK:
                out.append("\\" + name)
        elif ch == "_":
            _, i = _argument(math, i + 1)
        elif ch.isascii() and ch.isalpha():
            out.append(ch)
            i += 1
        else:
            i += 1
    return out


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


@dataclass
class Event:
    """One step of a page in reading order: a heading, a paragraph block, a top-level directive or a code cell."""

    kind: str                    # "heading" | "text" | "directive" | "code"
    text: str                    # the heading's title, the text, the directive's body or the cell's source
    level: int = 0               # a heading's level
    name: str = ""               # a directive's name
    arg: str = ""                # a directive's argument
    options: dict = field(default_factory=dict)
    tags: tuple = ()             # a code cell's tags

    @property
    def classes(self) -> list[str]:
        return self.options.get("class", "").split()


def _events(page: Page) -> list[Event]:
    """The page in reading order (top-level directives only; their bodies stay whole)."""
    if "events" not in page._cache:
        page._cache["events"] = _read_events(page)
    return page._cache["events"]


def _read_events(page: Page) -> list[Event]:
    gen = _generator()
    out: list[Event] = []
    for cell in page.cells:
        if cell.cell_type == "code":
            out.append(Event("code", cell.source, tags=tuple(cell.metadata.get("tags", []))))
            continue
        for block in gen._blocks(cell.source.split("\n")):
            if block[0] == "directive":
                _, name, arg, options, body, _ = block
                out.append(Event("directive", "\n".join(body), name=name, arg=arg, options=options))
                continue
            para: list[str] = []
            for line in block[1]:
                m = re.match(r"^(#{1,6})\s+(.*)$", line)
                if m:
                    if para:
                        out.append(Event("text", "\n".join(para)))
                        para = []
                    out.append(Event("heading", m.group(2).strip(), level=len(m.group(1))))
                else:
                    para.append(line)
            if "".join(para).strip():
                out.append(Event("text", "\n".join(para)))
    return out


def _colab(page: Page):
    """The page's Colab notebook, generated once per page."""
    if "colab" not in page._cache:
        page._cache["colab"] = _generator().colab_notebook(page.path, root=page.root)
    return page._cache["colab"]


def _shows_output(event: Event) -> bool:
    """Whether a code cell shows a result on the page: it draws, prints or ends in a bare expression (and
    the book keeps its output)."""
    if event.kind != "code" or "remove-cell" in event.tags or "remove-output" in event.tags:
        return False
    if _DRAWS.search(event.text) or re.search(r"\b(?:print|display)\(", event.text):
        return True
    source = "\n".join(line for line in event.text.split("\n") if not line.lstrip().startswith(("%", "!")))
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return True
    return bool(body) and isinstance(body[-1], ast.Expr) and not source.rstrip().endswith(";")


def _draws(event: Event) -> bool:
    return event.kind == "code" and "remove-cell" not in event.tags and bool(_DRAWS.search(event.text))


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
                Result(name, "frame: run time", False, "no frame"),
                Result(name, "frame: study time", False, "no frame")]
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
    hours = study_hours(body)
    out.append(Result(name, "frame: study time", hours is not None,
                      "" if hours is not None else "no **Study time.** line with the hours (`**Study time.** about "
                      "N h: reading, running, exercises`)"))
    return out


def study_hours(frame: str) -> float | None:
    """The study time a frame's ``**Study time.**`` line states, in hours (``about 3.5 h``, ``about 1 h 30 min``,
    ``about 90 min``), or None without one."""
    line = _labelled(frame, "Study time")
    m = re.search(r"(?P<h>\d+(?:\.\d+)?)\s*h\b(?:\s*(?P<m>\d+)\s*min\b)?|(?P<only>\d+)\s*min\b", line)
    if not line or m is None:
        return None
    if m.group("only"):
        return int(m.group("only")) / 60
    return float(m.group("h")) + int(m.group("m") or 0) / 60


_DURATION = r"\d+(?:\.\d+)?\s*h\b(?:\s*\d+\s*min\b)?|\d+\s*min\b"
# the exercises' time on the study-time line: "2 h 15 min for the six exercises", "1 h for the exercises"
_EXERCISE_TIME = re.compile(rf"(?P<d>{_DURATION})\s+for\s+(?:the\s+)?(?:[\w-]+\s+)?exercises\b")


def _minutes(duration: str) -> float:
    """``"2 h 15 min"``, ``"2.5 h"`` or ``"90 min"`` in minutes."""
    m = re.fullmatch(r"(?:(?P<h>\d+(?:\.\d+)?)\s*h)?\s*(?:(?P<m>\d+)\s*min)?", duration.strip())
    return 60 * float(m.group("h") or 0) + int(m.group("m") or 0)


def check_study_minutes(page: Page) -> list[Result]:
    """The frame's study-time line and the exercises' labels agree: the time it gives the exercises (the duration
    before ``for the ... exercises``) is the sum of the label minutes, and its total is the sum of its parts to
    within a quarter of an hour. Skipped (the labels rule reports it) while an exercise has no readable label."""
    name = page.stem
    body = _frame(page)
    line = " ".join(_labelled(body, "Study time").split()) if body else ""
    labels = [exercise_label(event) for event, _ in _exercise_events(page)]
    if not line or not labels or None in labels:
        return [Result(name, "frame: exercise minutes", True, "")]
    total_labels = sum(int(p["minutes"]) for p in labels)
    m = _EXERCISE_TIME.search(line)
    if m is None:
        return [Result(name, "frame: exercise minutes", False, f"the study-time line gives no time `<N h M min> for "
                       f"the ... exercises` (their labels add up to {total_labels} min)")]
    stated = _minutes(m.group("d"))
    parts = [_minutes(d) for d in re.findall(_DURATION, line)]
    problems = []
    if abs(stated - total_labels) > 0.5:
        problems.append(f"the study-time line gives the exercises {m.group('d')} ({stated:g} min), their labels "
                        f"add up to {total_labels} min")
    if len(parts) > 1 and abs(parts[0] - sum(parts[1:])) > 15:
        problems.append(f"the study time ({parts[0]:g} min) is not the sum of its parts ({sum(parts[1:]):g} min)")
    return [Result(name, "frame: exercise minutes", not problems, "; ".join(problems))]


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
    return [span for source in page.markdown for span in math_spans(source)]


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


_DOC_ROLE = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _table_first_cells(body: str) -> list[str]:
    """The first cell of every body row of the Markdown tables in ``body`` (header and rule rows skipped)."""
    cells, header = [], True
    for line in body.split("\n"):
        if not line.lstrip().startswith("|"):
            header = True
            continue
        parts = _CELL_SPLIT.split(line.strip())
        if len(parts) < 3:
            continue
        if re.fullmatch(r"\s*:?-{3,}:?\s*", parts[1]):
            header = False
            continue
        if not header:
            cells.append(parts[1])
    return cells


@lru_cache(maxsize=4)
def notation_symbols(root: Path) -> tuple[frozenset[str], dict[str, frozenset[str]]] | None:
    """The symbols the notation page lists: those of its shared tables, and per chapter those of the section
    that links the chapter (``{doc}``) before its first table. A symbol is read from a table row's first
    cell with :func:`math_symbols`. None without a notation page."""
    path = _reference_page(root, "notation")
    if path is None:
        return None
    shared: set[str] = set()
    per: dict[str, set[str]] = {}
    for _, body in _sections(path.read_text()):
        first_table = re.search(r"^\s*\|", body, re.M)
        m = _DOC_ROLE.search(body[:first_table.start()] if first_table else body)
        listed = {sym for cell in _table_first_cells(body) for span in math_spans(cell) for sym in math_symbols(span)}
        if m is None:
            shared |= listed
        else:
            per.setdefault(Path(m.group(1)).name, set()).update(listed)
    return frozenset(shared), {k: frozenset(v) for k, v in per.items()}


def check_symbols(page: Page) -> list[Result]:
    """Every symbol of the page's mathematics is listed on the notation page, in its shared tables or in the
    chapter's own section (:func:`math_symbols` reads them: letters outside subscripts, decorations dropped)."""
    listed = notation_symbols(page.root)
    if listed is None:
        return [Result(page.stem, "notation: symbols listed", True, "no notation page")]
    shared, per = listed
    used = {sym for span in _math_spans(page) for sym in math_symbols(span)}
    missing = sorted(used - shared - per.get(page.stem, frozenset()))
    return [Result(page.stem, "notation: symbols listed", not missing,
                   f"symbols of the page's mathematics the notation page does not list for it: {missing} (list "
                   "each with its one meaning in the chapter's section of the notation page, or rename it)"
                   if missing else "")]


def check_notation_page(page: Page) -> list[Result]:
    """One meaning per symbol: a symbol listed in the sections of two chapters is listed in the shared
    tables too, where its one meaning is stated."""
    listed = notation_symbols(page.root)
    if listed is None:
        return []
    shared, per = listed
    seen: dict[str, list[str]] = {}
    for stem, symbols in per.items():
        for sym in symbols:
            seen.setdefault(sym, []).append(stem)
    twice = sorted(f"{sym} ({', '.join(sorted(stems))})" for sym, stems in seen.items()
                   if len(stems) > 1 and sym not in shared)
    return [Result(page.stem, "notation: one meaning", not twice,
                   f"symbols listed by two chapters and not in the shared tables: {twice}" if twice else "")]


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
    nb = _colab(page)
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


def _glue_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id in ("glue", "put"))
        or (isinstance(node.func, ast.Attribute) and node.func.attr in ("glue", "put")))


def mixes_glue(source: str) -> bool:
    """Whether a cell's code both glues (``glue(...)``/``put(...)``) and computes or draws: a glue call with
    any statement beside it other than imports and other glue calls, or inside a loop or a block."""
    lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
    try:
        body = ast.parse("\n".join(lines)).body
    except SyntaxError:
        return bool(_GLUE_CALL.search(source)) and len([x for x in lines if x.strip()]) > 1
    glues = computes = False
    for node in body:
        if isinstance(node, ast.Expr) and _glue_call(node.value):
            glues = True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        else:
            computes = True
            glues = glues or any(_glue_call(n) for n in ast.walk(node))
    return glues and computes


def glued_keys(source: str) -> set[str]:
    """The literal keys a cell's ``glue``/``put`` calls write (a key glued in two branches of one cell counts once)."""
    lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    return {node.args[0].value for node in ast.walk(tree)
            if _glue_call(node) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)}


def check_glue_keys(page: Page) -> list[Result]:
    """No glue key written by two cells: the book build keeps one of them (a warning under -W) and the
    sentences reading the key would quote whichever ran last."""
    seen: dict[str, int] = {}
    twice = set()
    for cell in page.code:
        for key in glued_keys(cell):
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                twice.add(key)
    return [Result(page.stem, "glue keys", not twice,
                   f"keys glued by two cells (rename one): {sorted(twice)}" if twice else "")]


def check_glue_cells(page: Page) -> list[Result]:
    """No ``glue``/``put`` call in a cell a reader sees that also computes or draws.

    On the page: a cell that shows its code (not tagged ``remove-cell``, ``remove-input``, ``hide-input`` or
    ``hide-cell``) glues in a cell of its own, or not at all. In the Colab notebook: no code cell left visible
    holds a ``glue``/``put`` call (the generator moves a computing cell's glue lines to a hidden cell when
    nothing can change; it cannot move those inside a loop that computes, reading a name the rest of the cell
    changes later, or a timer, and it shows a solution's glue cell)."""
    hidden_tags = set(_generator().BOOKKEEPING_TAGS)
    on_page = [e.text.strip().split("\n")[0][:50] for e in _events(page)
               if e.kind == "code" and not hidden_tags & set(e.tags) and mixes_glue(e.text)]
    gen = _generator()
    nb = _colab(page)
    in_notebook = [cell.source.strip().split("\n")[0][:50] for cell in nb.cells
                   if cell.cell_type == "code" and not gen.is_hidden(cell) and _GLUE_CALL.search(cell.source)]
    detail = []
    if on_page:
        detail.append(f"cells the page shows that glue and compute (glue in a cell of its own, tagged remove-cell; "
                      f"in a solution remove-input): {on_page}")
    if in_notebook:
        detail.append(f"glue/put lines the Colab notebook shows (in a cell of their own, tagged remove-cell): "
                      f"{in_notebook}")
    return [Result(page.stem, "glue cells", not detail, "; ".join(detail))]


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


def check_sources(page: Page) -> list[Result]:
    """The sources box after the frame: an admonition titled :data:`SOURCES_TITLE` with ``:class: sources``,
    before the first ``##`` section, citing the paper(s) and saying what a reader should check in them."""
    for event in _events(page):
        if event.kind == "heading" and event.level == 2:
            break
        if event.kind == "directive" and event.name == "admonition" \
                and event.arg.strip().lower() == SOURCES_TITLE.lower():
            missing = [what for what, ok in (
                (":class: sources", "sources" in event.classes),
                ("a citation ({cite}, {cite:t} or a link to the paper)",
                 "{cite" in event.text or re.search(r"\]\([^)\s]+\)", event.text)),
                ("what to check in the paper (the word 'check')", re.search(r"\bcheck", event.text, re.I)))
                if not ok]
            return [Result(page.stem, "sources box", not missing,
                           f"the sources box lacks {missing}" if missing else "")]
    return [Result(page.stem, "sources box", False,
                   f"no `:::{{admonition}} {SOURCES_TITLE}` (`:class: sources`) before the first ## section")]


def _exercise_events(page: Page) -> list[tuple[Event, list[Event]]]:
    """Each exercise directive with the events that follow it up to the next exercise (or the page's end)."""
    out: list[tuple[Event, list[Event]]] = []
    for event in _events(page):
        if event.kind == "directive" and event.name == "exercise":
            out.append((event, []))
        elif out:
            out[-1][1].append(event)
    return out


def exercise_label(event: Event) -> dict | None:
    """The label line of an exercise (its first line, ``*15 min · medium · derivation*``), parsed, or None."""
    first = next((line.strip() for line in event.text.split("\n") if line.strip()), "")
    m = _LABEL_LINE.match(first)
    return m.groupdict() if m else None


def check_exercise_labels(page: Page) -> list[Result]:
    """Every exercise starts with its label line: minutes, a level of :data:`LEVELS`, a kind of
    :data:`LABEL_KINDS` that agrees with its ``:class:``."""
    bad = []
    for event, _ in _exercise_events(page):
        label = event.options.get("label", "?")
        parsed = exercise_label(event)
        if parsed is None:
            bad.append(f"{label}: no label line `*N min · easy|medium|hard · kind*` first")
            continue
        if int(parsed["minutes"]) <= 0 or parsed["level"] not in LEVELS or parsed["kind"] not in LABEL_KINDS:
            bad.append(f"{label}: {parsed} (levels {LEVELS}, kinds {tuple(LABEL_KINDS)})")
            continue
        kinds = [c for c in event.classes if c in KINDS]
        if kinds and kinds[0] != LABEL_KINDS[parsed["kind"]]:
            bad.append(f"{label}: labelled '{parsed['kind']}' but `:class: {kinds[0]}`")
    return [Result(page.stem, "exercises: labels", not bad, "; ".join(bad))]


def _is_derivation(event: Event) -> bool:
    parsed = exercise_label(event)
    return "derivation" in event.classes or (parsed is not None and parsed["kind"] == "derivation")


def check_hints(page: Page) -> list[Result]:
    """Every derivation has a hint: an admonition titled ``Hint`` with ``:class: dropdown`` after the exercise
    and before its solution."""
    missing = []
    for event, after in _exercise_events(page):
        if not _is_derivation(event):
            continue
        hinted = False
        for nxt in after:
            if nxt.kind == "directive" and nxt.name in ("solution-start", "solution"):
                break
            if nxt.kind == "directive" and nxt.name == "admonition" and nxt.arg.strip().lower().startswith("hint") \
                    and "dropdown" in nxt.classes:
                hinted = True
                break
        if not hinted:
            missing.append(event.options.get("label", "?"))
    return [Result(page.stem, "exercises: hints", not missing,
                   f"derivations without a hint (`:::{{admonition}} Hint` with `:class: dropdown` before the "
                   f"solution): {missing}" if missing else "")]


def check_prompts(page: Page) -> list[Result]:
    """Every ``##`` section that reveals a computed result (a cell that shows output, a glued number) asks
    first: a ``Predict`` or ``Discuss`` admonition (``:class: predict|discuss``) before at least one of its
    results. Recap, Where next, Exercises and References reveal nothing new."""
    sections: list[dict] = []
    for event in _events(page):
        if event.kind == "heading" and event.level == 2:
            if event.text.lower() == "exercises":
                break
            sections.append({"title": event.text, "prompt": False, "reveals": False, "after": False})
            continue
        if not sections or sections[-1]["title"].lower() in UNPROMPTED_SECTIONS:
            continue
        here = sections[-1]
        if event.kind == "directive" and event.name == "admonition" and set(event.classes) & set(PROMPT_CLASSES):
            here["prompt"] = True
        reveals = _shows_output(event) or (event.kind == "text" and "{glue" in event.text)
        if reveals:
            here["reveals"] = True
            here["after"] = here["after"] or here["prompt"]
    silent = [s["title"] for s in sections if s["reveals"] and not s["after"]]
    return [Result(page.stem, "predict prompts", not silent,
                   f"sections that reveal a result without a Predict/Discuss prompt before it: {silent}"
                   if silent else "")]


def check_what_to_see(page: Page) -> list[Result]:
    """After every cell that draws a figure, a paragraph starting ``**What to see.**`` before the next figure,
    heading or exercise."""
    missing, pending = [], None
    for event in _events(page):
        closes = (event.kind == "heading" or _draws(event)
                  or (event.kind == "directive" and event.name in ("exercise", "solution-start", "solution-end")))
        if closes and pending is not None:
            missing.append(pending)
            pending = None
        if _draws(event):
            pending = event.text.strip().split("\n")[0][:50]
        elif event.kind == "text" and WHAT_TO_SEE.search(event.text):
            pending = None
    if pending is not None:
        missing.append(pending)
    return [Result(page.stem, "figures: what to see", not missing,
                   f"figures without a `**What to see.**` paragraph after them, in cells starting {missing}"
                   if missing else "")]


def _experiment_module(page: Page) -> Path | None:
    for root in (page.root, ROOT):
        path = root / "ncbook" / "experiments" / f"_{page.stem}.py"
        if path.exists():
            return path
    return None


def check_working_notes(page: Page) -> list[Result]:
    """No sentence that tells a reader what the authors did not have (:data:`WORKING_NOTES`): in the page's
    text, its code (``source=`` strings of claim records) and the chapter's experiment module."""
    places = {"the page": _squash("\n".join(page.markdown + page.code))}
    module = _experiment_module(page)
    if module is not None:
        places[f"ncbook/experiments/{module.name}"] = _squash(module.read_text())
    found = []
    for where, text in places.items():
        for pattern in _WORKING_NOTES:
            for m in pattern.finditer(text):
                found.append(f"{where}: ...{text[max(0, m.start() - 40):m.end() + 20]}...")
    return [Result(page.stem, "working notes", not found,
                   "sentences about what the authors did not have (say it once, in the sources box, in the "
                   f"reader's terms): {found[:4]}" if found else "")]


def check_headings(page: Page) -> list[Result]:
    """No heading numbered by hand: the book numbers chapters and sections itself (``5.1. 1. Why`` otherwise)."""
    numbered = [line.strip() for line in _strip_code("\n\n".join(page.markdown)).split("\n")
                if _NUMBERED_HEADING.match(line)]
    return [Result(page.stem, "headings: numbers", not numbered,
                   f"headings numbered by hand: {numbered}" if numbered else "")]


@lru_cache(maxsize=4)
def public_functions(root: Path) -> frozenset[str]:
    """The names in the ``__all__`` lists of the package (``ncbook.exercises`` left out), read with ``ast``."""
    names: set[str] = set()
    package = root / "ncbook" if (root / "ncbook").is_dir() else ROOT / "ncbook"
    for path in package.rglob("*.py"):
        if "exercises" in path.relative_to(package).parts:
            continue
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        for node in tree.body:
            exported = isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)) \
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            if exported:
                names.update(e.value for e in node.value.elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return frozenset(names)


def check_retyping(page: Page) -> list[Result]:
    """No exercise asks to re-type code the page shows: a solution that defines a function whose name,
    ``my_`` stripped, is a public function of the package that the page shows (a listing, a call, its name
    in the text) is copying, not thinking. Ask for a derivation, a prediction or a variant instead."""
    public = public_functions(page.root)
    events = _events(page)
    retyped = []
    for event, after in _exercise_events(page):
        own = [e.text for e in after if e.kind == "code"]
        elsewhere = "\n".join(" ".join([e.text, e.arg, *map(str, e.options.values())]) for e in events
                              if e.kind != "code" or e.text not in own)
        for source in own:
            for name in _defined(source):
                bare = re.sub(r"^my_", "", name)
                if bare in public and re.search(rf"(?<![\w.]){re.escape(bare)}\b|\.{re.escape(bare)}\b", elsewhere):
                    retyped.append(f"{event.options.get('label', '?')}: {name} re-types ncbook's {bare}")
    return [Result(page.stem, "exercises: no re-typing", not retyped, "; ".join(retyped))]


def check_terms(page: Page) -> list[Result]:
    """Every ``{term}`` the page uses is defined in the glossary."""
    used = sorted({m.group("term").strip() for m in _TERM.finditer(page.text)})
    if not used:
        return [Result(page.stem, "glossary terms", True)]
    terms = {t.lower() for t in glossary_terms(page.root)}
    unknown = [t for t in used if t.lower() not in terms]
    return [Result(page.stem, "glossary terms", not unknown,
                   f"{{term}} roles with no glossary entry: {unknown}" if unknown else "")]


def _reference_page(root: Path, stem: str) -> Path | None:
    for path, _ in _generator()._toc_entries(root):
        if path.stem == stem and path.exists():
            return path
    return None


def glossary_entries(root: Path) -> dict[str, str]:
    """The glossary page's entries (term -> definition), read from its ``{glossary}`` directive."""
    path = _reference_page(root, "glossary")
    if path is None:
        return {}
    entries: dict[str, str] = {}
    for name, _, body in _directive_bodies(path.read_text()):
        if name != "glossary":
            continue
        terms: list[str] = []
        for line in body:
            if line.strip() and not line.startswith((" ", "\t")):
                if terms and entries.get(terms[-1]):
                    terms = []
                terms.append(line.strip())
                entries.setdefault(terms[-1], "")
            elif terms:
                for t in terms:
                    entries[t] = (entries[t] + " " + line.strip()).strip()
    return entries


def glossary_terms(root: Path) -> list[str]:
    return list(glossary_entries(root))


def _directive_bodies(text: str):
    """(name, arg, body lines with options removed) of every directive in ``text``, nested ones included."""
    for block in _generator()._blocks(text.split("\n")):
        if block[0] == "directive":
            _, name, arg, options, body, _ = block
            yield name, arg, body
            yield from _directive_bodies("\n".join(body))


def check_glossary(page: Page) -> list[Result]:
    """The glossary page: every entry says in a sentence what the term is and links the chapter that
    defines it (``{doc}``)."""
    entries = glossary_entries(page.root)
    if not entries:
        return [Result(page.stem, "glossary entries", False, "no {glossary} directive with entries")]
    unlinked = [t for t, d in entries.items() if not re.search(r"\{doc\}`", d)]
    short = [t for t, d in entries.items() if len(_squash(re.sub(r"\{\w+(?::\w+)?\}`[^`]*`", "x", d))) < 30]
    return [Result(page.stem, "glossary entries", not unlinked and not short,
                   "; ".join(([f"entries without a {{doc}} link to the chapter that defines them: {unlinked}"]
                              if unlinked else []) + ([f"entries without a definition: {short}"] if short else [])))]


def check_chapter(page: Page) -> list[Result]:
    out = []
    for check in (check_frame, check_study_minutes, check_sources, check_recap, check_exercises, check_exercise_labels,
                  check_hints, check_retyping, check_answers, check_notation, check_symbols, check_terms,
                  check_statements, check_working_notes, check_headings, check_prompts, check_what_to_see,
                  check_glue_order, check_glue_keys, check_progress, check_notebook_text, check_glue_cells,
                  check_figures):
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
    out += check_study_plan(page, chapters)
    out += check_statements(page) + check_working_notes(page) + check_headings(page) + check_what_to_see(page)
    out += check_symbols(page) + check_terms(page)
    if page.code:
        out += check_notebook_text(page)
    return out


def _frame_of(path: Path, root: Path) -> str | None:
    return _frame(read_page(path, root))


def check_study_plan(page: Page, chapters: list[str]) -> list[Result]:
    """The root page plans the reader's week: a table whose header starts with ``Day`` and that links every
    chapter, and, for every chapter whose frame states its study time, the same hours in the row (of any
    table) that links the chapter and gives hours (``3.5 h``)."""
    text = page.text
    tables = re.findall(r"(?:^\|.*\n?)+", text, re.M)
    plan = next((t for t in tables if re.match(r"^\|\s*day\b", t, re.I)), None)
    unplanned = [c for c in chapters if plan is None or c not in {Path(x).name for x in _DOC_ROLE.findall(plan)}]
    out = [Result(page.stem, "one-week plan", plan is not None and not unplanned,
                  "no table whose header starts with `Day`" if plan is None
                  else f"the plan does not link {unplanned}" if unplanned else "")]
    wrong = []
    for stem in chapters:
        path = page.root / "book" / f"{stem}.md"
        frame = _frame_of(path, page.root) if path.exists() else None
        hours = study_hours(frame) if frame else None
        if hours is None:
            continue
        rows = [line for line in text.split("\n") if line.lstrip().startswith("|")
                and stem in {Path(x).name for x in _DOC_ROLE.findall(line)} and _TIME_HOURS.search(line)]
        stated = [float(m.group("value")) for row in rows for m in _TIME_HOURS.finditer(row)]
        if not any(abs(h - hours) <= 0.01 * max(hours, 1.0) for h in stated):
            wrong.append(f"{stem}: its frame says {hours:g} h, the intro {stated or 'nothing'}")
    out.append(Result(page.stem, "study times", not wrong,
                      "study times that differ from the chapters' frames: " + "; ".join(wrong) if wrong else ""))
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
    out = check_statements(page) + check_working_notes(page) + check_headings(page)
    if path.stem == "glossary":
        out += check_glossary(page)
    if path.stem == "notation":
        out += check_notation_page(page)
    if page.code:
        out += check_what_to_see(page) + check_glue_cells(page) + check_glue_keys(page) + check_notebook_text(page)
    return out


def pages(root: Path = ROOT) -> list[Path]:
    """The pages the checklist reads: every page of the TOC (the root page, the chapters, the reference pages)."""
    return [path for path, _ in _generator()._toc_entries(root) if path.exists()]


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
