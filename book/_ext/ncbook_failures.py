"""What a chapter that fails in the book build says, and how long its cells may run.

Used by ``ncbook_cache`` (which executes the chapters); plain functions, no Sphinx state.

**Time limits.** A cell of a chapter may run :func:`cell_limit` seconds: ``NCBOOK_CELL_TIMEOUT`` if set
(seconds, every cell of every page), else ``NCBOOK_CELL_TIMEOUT_FACTOR`` (default
:data:`DEFAULT_FACTOR`) times the chapter's estimate on an idle machine, and never less than the floor
(``execute: timeout`` of ``_config.yml``). The estimate is the chapter's own: at the quick profile its
plan's measured run time (``ncbook.profiles.PLANS[stem].quick_seconds``, the whole chapter on an idle
2-core machine); at the gpu and full profiles the plan's network time on a T4 plus that; and if the
cost record the chapter wrote in an earlier run (``<results>/costs/<profile>/<stem>.json``) holds a
longer cell, that cell's time. A page without a plan (the introduction, the reproduction page) gets
the floor.

**Failures.** A chapter fails when a cell raises (a failed self-check of a solution raises
``CheckFailedError`` in the build: ``NCBOOK_STRICT_CHECKS=1``), a cell passes its time limit, the
kernel dies, or its page reads a glue key that no cell set. :class:`Failure` holds one line naming
the chapter, the cell (its number among the code cells, its line in the ``.md`` file and its first
source line) and the cause; for a time-out, how long the cell ran against the chapter's estimate and
how to raise the limit. :func:`failed_page` turns the page into one that says it failed: a banner
under its title, execution off, and every glued number it quotes marked "not computed" (no cascade of
"No key ... found in glue data" warnings burying the cause).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT_ENV = "NCBOOK_CELL_TIMEOUT"
FACTOR_ENV = "NCBOOK_CELL_TIMEOUT_FACTOR"
DEFAULT_FACTOR = 5.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# {glue}`key`, {glue:}`key`, {glue:any}`key`, {glue:text}`key:spec`, {glue:md}`key:format`
GLUE_ROLE = re.compile(r"\{glue(?::(?P<kind>any|text|md)?)?\}`(?P<content>[^`]*)`")
COST_LINE = re.compile(r"Next cell, (?P<name>[^:\n]+): about (?P<time>[^\n]+?)\. The chapter")


# --------------------------------------------------------------------------- time limits
def _positive(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number; got {text!r}.")
    return value


def timeout_factor() -> float:
    """``$NCBOOK_CELL_TIMEOUT_FACTOR`` (a positive number), else :data:`DEFAULT_FACTOR`."""
    text = os.environ.get(FACTOR_ENV, "").strip()
    return _positive(FACTOR_ENV, text) if text else DEFAULT_FACTOR


def fixed_timeout() -> int | None:
    """``$NCBOOK_CELL_TIMEOUT`` in whole seconds (a positive number), else None."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    return math.ceil(_positive(TIMEOUT_ENV, text)) if text else None


def _recorded_cell_seconds(results: Path | None, profile: str, stem: str) -> tuple[float, str] | None:
    """The longest cell of the chapter's cost record (estimate or measurement), with its name."""
    if results is None:
        return None
    path = Path(results) / "costs" / profile / f"{stem}.json"
    try:
        cells = json.loads(path.read_text())["cells"]
        times = [(max(float(c.get("estimate_s") or 0), float(c.get("measured_s") or 0)), name)
                 for name, c in cells.items()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    times = [t for t in times if math.isfinite(t[0])]
    return max(times) if times else None


def chapter_estimate(stem: str, profile: str, scale: str, results: Path | None = None) -> tuple[float | None, str]:
    """Seconds the chapter takes on an idle machine, and where that number comes from (None: no plan)."""
    from ncbook import profiles

    plan = profiles.PLANS.get(stem)
    if plan is None:
        return None, "no run-time plan"
    seconds = plan.quick_seconds
    basis = f"the whole chapter at the quick profile on an idle 2-core machine (ncbook.profiles.PLANS[{stem!r}])"
    if profile in ("gpu", "full") and scale == "paper":
        seconds += profiles.planned_seconds(stem, profile, "T4")
        basis = f"the chapter's plan at the {profile} profile on a T4 (ncbook.profiles.planned_seconds)"
    recorded = _recorded_cell_seconds(results, profile, stem)
    if recorded is not None and recorded[0] > seconds:
        seconds = recorded[0]
        basis = f"its cell {recorded[1]!r} in the cost record of an earlier run (results/costs/{profile}/{stem}.json)"
    return seconds, basis


@dataclass(frozen=True)
class CellLimit:
    """How long one cell of a chapter may run, and why."""

    seconds: int
    estimate_s: float | None
    basis: str
    factor: float
    floor: int
    chosen: bool  # NCBOOK_CELL_TIMEOUT set

    def text(self) -> str:
        """``"815 s"``, or ``"without limit"``."""
        return f"{self.seconds} s" if self.seconds > 0 else "without limit"

    def explain(self) -> str:
        """One sentence: where the limit comes from."""
        if self.seconds <= 0:
            return "none (execute: timeout in _config.yml is not positive)"
        if self.chosen:
            return f"NCBOOK_CELL_TIMEOUT={self.seconds}"
        if self.estimate_s is None:
            return f"the floor, execute: timeout in _config.yml ({self.floor} s; {self.basis})"
        return (f"{self.factor:g} x {self.estimate_s:.0f} s, {self.basis}; at least {self.floor} s "
                f"(execute: timeout in _config.yml)")

    def how_to_raise(self) -> str:
        """What to set for a longer limit."""
        return (f"a busy machine runs slower: raise the limit with {FACTOR_ENV}={2 * self.factor:g} "
                f"(now {self.factor:g}) or {TIMEOUT_ENV}=<seconds a cell> (see the README)")


def cell_limit(stem: str, *, floor: int | None, profile: str, scale: str, results: Path | None = None) -> CellLimit:
    """The time limit of each cell of chapter ``stem`` (see the module docstring); ``seconds`` is ``-1`` (no
    limit, as nbclient reads it) when ``floor`` is None or not positive and ``NCBOOK_CELL_TIMEOUT`` is unset.

    Raises
    ------
    ValueError
        If ``NCBOOK_CELL_TIMEOUT`` or ``NCBOOK_CELL_TIMEOUT_FACTOR`` is set to anything but a positive number.
    """
    factor = timeout_factor()
    estimate, basis = chapter_estimate(stem, profile, scale, results)
    fixed = fixed_timeout()
    floor = int(floor) if isinstance(floor, (int, float)) and floor > 0 else -1
    if fixed is not None:
        return CellLimit(fixed, estimate, basis, factor, floor, True)
    if floor <= 0:
        return CellLimit(-1, estimate, basis, factor, floor, False)
    seconds = floor if estimate is None else max(floor, math.ceil(factor * estimate))
    return CellLimit(seconds, estimate, basis, factor, floor, False)


# --------------------------------------------------------------------------- glue keys
FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*)$")


def _without_literal_blocks(text: str) -> str:
    """``text`` with the lines of literal blocks blanked (code cells, code blocks, a fence whose info string is not
    a ``{directive}``: no role is read there), line numbers kept."""
    lines, out, stack = text.split("\n"), [], []  # stack of (fence char, length, literal)
    for line in lines:
        m = FENCE.match(line)
        literal = bool(stack) and stack[-1][2]
        if m:
            fence, info = m.group("fence"), m.group("info").strip()
            if stack and fence[0] == stack[-1][0] and len(fence) >= stack[-1][1] and not info:
                stack.pop()
                out.append("")
                continue
            if not literal:
                code = info.startswith(("{code-cell}", "{raw-cell}", "{code-block}", "{code}", "{literalinclude}"))
                stack.append((fence[0], len(fence), fence[0] != ":" and (code or not info.startswith("{"))))
                out.append(line if not stack[-1][2] else "")
                continue
        out.append("" if literal else line)
    return "\n".join(out)


def glue_keys_read(text: str) -> list[tuple[str, int]]:
    """The glue keys a page's text reads (``{glue:text}`key:spec```, ``{glue:md}`` ...) with their lines;
    keys of another document (``doc::key``) and roles inside literal code blocks are left out."""
    found = []
    text = _without_literal_blocks(text)
    for m in GLUE_ROLE.finditer(text):
        content = m.group("content")
        key = content.rsplit(":", 1)[0] if m.group("kind") in ("text", "md") and ":" in content else content
        if "::" not in key:
            found.append((key.strip(), text.count("\n", 0, m.start()) + 1))
    return found


def glue_keys_set(notebook) -> set[str]:
    """The glue keys an executed notebook's outputs hold (what myst-nb can paste); the notebook is left as it
    is (myst-nb's own extraction moves the records out of the outputs)."""
    keys = set()
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            name = (output.get("metadata") or {}).get("scrapbook", {}).get("name")
            if name:
                keys.add(name)
    return keys


# --------------------------------------------------------------------------- failures
@dataclass
class Failure:
    """One failed chapter: the line that says what failed, the details, where in the page."""

    doc: str
    kind: str  # "error", "check", "timeout", "kernel" or "glue"
    summary: str  # chapter, cell and cause in one line
    details: str = ""
    line: int | None = None  # in the page's source
    missing_keys: tuple[str, ...] = ()  # for a glue failure


def _code_cell(notebook, index: int | None, source_path: str) -> tuple[str, int | None]:
    """``"code cell 7 (book/seli.md:123: `first line`)"`` for the notebook cell at ``index``, and its line."""
    if index is None or not 0 <= index < len(notebook.cells):
        return "before its first cell", None
    cell = notebook.cells[index]
    number = sum(1 for c in notebook.cells[: index + 1] if c.cell_type == "code")
    source_map = notebook.metadata.get("source_map") or []
    line = source_map[index] if index < len(source_map) else None
    first = next((s.strip() for s in cell.source.splitlines() if s.strip() and not s.lstrip().startswith("#")), "")
    first = first if len(first) <= 70 else first[:67] + "..."
    where = f"{source_path}:{line}" if line else source_path
    return f"code cell {number} ({where}: `{first}`)", line


def _cost_estimate(notebook, index: int | None) -> str:
    """What the chapter's cost cell printed for the cell at ``index`` (the previous code cells' output)."""
    if index is None:
        return ""
    for cell in reversed(notebook.cells[:index]):
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        m = COST_LINE.search(text)
        return f"; its cost cell estimated about {m.group('time')} on this machine" if m else ""
    return ""


def _error_output(notebook, index: int | None) -> dict | None:
    if index is None or not 0 <= index < len(notebook.cells):
        return None
    return next((o for o in notebook.cells[index].get("outputs", []) if o.get("output_type") == "error"), None)


def describe_failure(doc: str, source_path: str, notebook, err: BaseException | None, *, cell_index: int | None,
                     ran_s: float | None, limit: CellLimit) -> Failure:
    """The :class:`Failure` of an execution that raised ``err`` while cell ``cell_index`` ran for ``ran_s`` s."""
    where, line = _code_cell(notebook, cell_index, source_path)
    stem = doc.rsplit("/", 1)[-1]
    name = type(err).__name__ if err is not None else "Error"
    if name == "CellTimeoutError":
        ran = f"stopped after {ran_s:.0f} s" if ran_s is not None else "stopped"
        idle = (f"the chapter's estimate on an idle machine is {limit.estimate_s:.0f} s ({limit.basis})"
                if limit.estimate_s is not None else "it has no run-time estimate")
        summary = (f"{stem}: {where} passed its time limit of {limit.seconds} s ({ran}); {idle}"
                   f"{_cost_estimate(notebook, cell_index)}; the limit is {limit.explain()}; {limit.how_to_raise()}")
        return Failure(doc, "timeout", summary, "", line)
    output = _error_output(notebook, cell_index)
    if output is not None:
        ename, evalue = output.get("ename", name), ANSI.sub("", str(output.get("evalue", ""))).strip()
        first = " ".join(evalue.split())  # one line: a check's message spans several
        first = first if len(first) <= 400 else first[:397] + "..."
        kind = "check" if ename == "CheckFailedError" else "error"
        details = ANSI.sub("", "\n".join(output.get("traceback", []))).strip()
        return Failure(doc, kind, f"{stem}: {where} raised {ename}: {first}", details, line)
    text = ANSI.sub("", str(err or "")).strip()
    last = text.splitlines()[-1] if text else ""
    return Failure(doc, "kernel", f"{stem}: {where}: the execution stopped with {name}: {last[:300]}", text, line)


def glue_failure(doc: str, source_path: str, text: str, notebook) -> Failure | None:
    """A :class:`Failure` naming the page and the first glue key it reads that no cell of ``notebook`` set."""
    have = glue_keys_set(notebook)
    missing: dict[str, int] = {}
    for key, line in glue_keys_read(text):
        if key not in have and key not in missing:
            missing[key] = line
    if not missing:
        return None
    (key, line), rest = next(iter(missing.items())), list(missing)[1:]
    more = f" (and {len(rest)} more: {', '.join(rest[:8])}{' ...' if len(rest) > 8 else ''})" if rest else ""
    summary = (f"{doc.rsplit('/', 1)[-1]}: the page reads glue key {key!r} ({source_path}:{line}) that no cell "
               f"set{more}; glue it in a code cell or mend the name")
    return Failure(doc, "glue", summary, "", line, tuple(missing))


# --------------------------------------------------------------------------- the page of a failed chapter
def set_file_options(text: str, **options: Any) -> str:
    """``text`` with ``mystnb:`` options in its front matter (myst-nb's file-level settings)."""
    if not text.startswith("---\n"):
        return text
    head, sep, body = text[4:].partition("\n---")
    lines = [f"  {key}: {json.dumps(value)}" for key, value in options.items()]
    kept = [ln for ln in head.split("\n") if not any(ln.startswith(f"  {key}:") for key in options)]
    if "mystnb:" in [ln.rstrip() for ln in kept]:
        at = [ln.rstrip() for ln in kept].index("mystnb:") + 1
        kept[at:at] = lines
    else:
        kept = ["mystnb:", *lines, *kept]
    return "---\n" + "\n".join(kept) + sep + body


def failed_page(text: str, failure: Failure) -> str:
    """The page of a failed chapter: a banner saying what failed under its title, no execution, and
    its glued numbers marked "not computed" (only the missing ones for a glue failure)."""
    def mark(m: re.Match) -> str:
        content = m.group("content")
        key = content.rsplit(":", 1)[0] if m.group("kind") in ("text", "md") and ":" in content else content
        if failure.kind == "glue" and key.strip() not in failure.missing_keys:
            return m.group(0)
        return f"**[{key.strip()}: not computed]**"

    if failure.kind != "glue":
        text = set_file_options(text, execution_mode="off")
    prose = _without_literal_blocks(text).split("\n")  # roles in code cells and code blocks stay as they are
    text = "\n".join(GLUE_ROLE.sub(mark, line) if line == kept else line
                     for line, kept in zip(text.split("\n"), prose))
    banner = ("\n`````{error}\nThis page did not build: its chapter failed, so its outputs and numbers are missing "
              "or marked *not computed*. The build log says more.\n\n````text\n"
              + failure.summary.replace("````", "'''") + "\n````\n`````\n")
    lines = text.split("\n")
    start = lines.index("---", 1) + 1 if lines[0] == "---" and "---" in lines[1:] else 0
    for i in range(start, len(lines)):
        if lines[i].startswith("# "):
            lines.insert(i + 1, banner)
            break
    else:
        lines.insert(start, banner)
    return "\n".join(lines)
