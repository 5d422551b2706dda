"""Execute every chapter (jupytext MyST source) and check its pairing with the committed .ipynb.

Quick profile on a CPU: ``pytest tests/test_notebooks.py``. Full profile on a GPU:
``NCBOOK_PROFILE=full pytest -m gpu tests/test_notebooks.py`` (skipped without CUDA).
A failing cell raises ``CellExecutionError`` with the cell's traceback.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jupytext
import pytest
import yaml
from notebook_run import execute

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def _toc_files() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return [ROOT / f"{f}.md" for f in files]


CHAPTERS = [p for p in _toc_files() if "jupytext" in p.read_text()]


# Seconds per cell. Quick cells take at most a few minutes on 2 CPU cores, so a stuck cell fails
# fast (nbclient names it) instead of sitting out a long default; full-profile cells train for long.
CELL_TIMEOUT = {"quick": 300, "full": 1800}


def _execute(path: Path, profile: str):
    return execute(path, {"NCBOOK_PROFILE": profile}, timeout=CELL_TIMEOUT[profile])


def _assert_ran_clean(nb, name: str) -> None:
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") is not None for c in code), f"{name}: not every code cell ran"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{name}: a cell produced an error output: {errors[0].get('ename')}"


def test_every_toc_chapter_is_found():
    assert CHAPTERS, "no jupytext chapter in _toc.yml"
    for path in _toc_files():
        assert path.exists(), f"{path.name} is listed in _toc.yml but missing"


@pytest.mark.notebook
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_executes_quick(path):
    _assert_ran_clean(_execute(path, "quick"), path.name)


@pytest.mark.gpu
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_executes_full(path):
    _assert_ran_clean(_execute(path, "full"), path.name)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_pairing(path):
    """The committed .ipynb (what the rocket button opens in Colab) is the chapter's generated reader
    notebook: output-free, its code cells those of the .md, and the .md no longer jupytext-paired
    with it (``jupytext --sync`` would overwrite it with raw MyST)."""
    ipynb = path.with_suffix(".ipynb")
    hint = "run `python3 tools/student_notebooks.py`"
    assert ipynb.exists(), f"{ipynb.name} is missing: {hint}"
    assert "formats: ipynb" not in path.read_text().split("\n---", 1)[0], \
        f"{path.name} is jupytext-paired with {ipynb.name}: remove `formats:` from its header ({ipynb.name} is generated)"
    nb = json.loads(ipynb.read_text())
    assert nb["metadata"].get("ncbook", {}).get("generated_by") == "tools/student_notebooks.py", f"{ipynb.name}: {hint}"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{ipynb.name} has stored outputs: {hint}"
            assert cell.get("execution_count") is None, f"{ipynb.name} has execution counts: {hint}"
    generated = {_unhidden(_without_glue("".join(c["source"]))) for c in nb["cells"] if c["cell_type"] == "code"}
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code" and not re.search(r"\brecord_claims?\(", cell.source) \
                and "NCBOOK_PIP_TARGET" not in cell.source:
            if _only_glue(cell.source):
                continue  # bookkeeping: dropped from the notebook when no sentence quotes its values
            assert _unhidden(_without_glue(cell.source)) in generated, \
                f"{ipynb.name} lacks a code cell of {path.name}: {hint}"


def _unhidden(source: str) -> str:
    """A code cell's source without what the generator adds to a hidden cell: a Colab ``# @title`` line
    and the ``;`` that silences its last expression."""
    lines = source.strip().split("\n")
    if lines and re.match(r"#\s*@title", lines[0]):
        lines = lines[1:]
    if lines:
        lines[-1] = re.sub(r";(\s*(#.*)?)$", r"\1", lines[-1])
    return "\n".join(lines).strip()


def _is_glue(node) -> bool:
    if isinstance(node, ast.For):
        return bool(node.body) and not node.orelse and all(_is_glue(b) for b in node.body)
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
        and getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) in ("glue", "put")


def _without_glue(source: str) -> str:
    """A cell's source without its top-level glue/put lines (the generator moves them to a hidden cell of
    their own when the cell also computes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    if all(_is_glue(n) for n in tree.body):
        return source
    drop = {k for n in tree.body if _is_glue(n) for k in range(n.lineno - 1, n.end_lineno)}
    return "\n".join(line for k, line in enumerate(source.split("\n")) if k not in drop)


def _only_glue(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and all(
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
        and getattr(n.value.func, "id", getattr(n.value.func, "attr", None)) in ("glue", "put") for n in tree.body)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_code_cell_swallowed_by_markdown(path):
    """An unclosed fence (e.g. backticks in a directive's title line) turns later code cells into text."""
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown":
            assert "{code-cell}" not in cell.source, f"{path.name}: a code cell is inside markdown near: {cell.source[:120]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_one_parameters_cell(path):
    cells = jupytext.read(path).cells
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name} must have exactly one cell tagged 'parameters'; it has {len(tagged)}"
    # the sizes follow the profile: read in the cell (ncbook.profile()) or by the chapter's experiment setting
    # (SETTING = experiments.<chapter>_setting(), which reads ncbook.profiles.PLANS at the active profile)
    assert "profile()" in tagged[0].source or re.search(r"SETTING\s*=\s*experiments\.\w+_setting\(", tagged[0].source), \
        f"{path.name}: the parameters cell must derive sizes from ncbook.profile() or an experiments setting"
