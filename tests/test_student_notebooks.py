"""tools/student_notebooks.py: reader notebooks without MyST markup; solutions become stubs, text
solutions disappear, exercise cells are tagged, --check finds stale, missing and orphaned files."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "tools" / "student_notebooks.py")
sn = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("student_notebooks", sn)   # dataclasses look their module up
_spec.loader.exec_module(sn)

HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
    jupytext_version: 1.17.3
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

CHAPTER = HEADER + textwrap.dedent('''
    # A tiny chapter

    ```{code-cell} ipython3
    :tags: [parameters]

    PROFILE = "quick"
    ```

    ```{exercise}
    :label: ex-tiny-1

    Write `double(x)`.
    ```

    ````{solution-start} ex-tiny-1
    :class: dropdown
    ````

    ```{code-cell} ipython3
    :tags: [solution]

    import math

    def double(x, *, scale=2):
        """Return scale * x."""
        # hidden hint: multiply
        y = scale * x
        return y

    def triple(
        x,
        pair=(1, 2),
    ) -> float:
        # another hidden hint
        return 3 * x

    class Doubler:
        """Doubles."""
        factor = 2

        def __call__(self, x):
            return self.factor * x

    SECRET_CONSTANT = 41
    ```

    ```{code-cell} ipython3
    check_double(double)
    ```

    ```{solution-end}
    ```

    ```{code-cell} ipython3
    print(double(3))
    ```

    ```{exercise}
    :label: ex-tiny-2

    Why is the sky blue?
    ```

    ```{solution-start} ex-tiny-2
    :class: dropdown
    ```
    Rayleigh scattering goes as the inverse fourth power of the wavelength.

    ```{code-cell} ipython3
    hidden_answer = 1 / 450 ** 4
    ```

    Blue light scatters most, so the whole sky glows blue.
    ```{solution-end}
    ```

    After the exercises.

    ```{code-cell} ipython3
    :tags: [solution]

    total = sum(range(10))
    ```
    ''')


def _make_repo(tmp_path: Path, chapter: str = CHAPTER) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")          # not a jupytext chapter: skipped
    (tmp_path / "book" / "tiny.md").write_text(chapter)
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: Test\n    numbered: true\n    chapters:\n      - file: book/tiny\n")
    return tmp_path


def _cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text())
    return [{"type": c["cell_type"], "source": "".join(c["source"]), "tags": c["metadata"].get("tags", []),
             "outputs": c.get("outputs")} for c in nb["cells"]]


@pytest.fixture()
def repo(tmp_path):
    root = _make_repo(tmp_path)
    assert sn.main(["--root", str(root)]) == 0
    return root


def test_only_jupytext_chapters_from_the_toc(repo):
    assert [p.name for p in (repo / "student").iterdir()] == ["tiny.ipynb"]
    assert sorted(p.name for p in (repo / "book").glob("*.ipynb")) == ["tiny.ipynb"]   # the Colab notebook


def test_function_solution_keeps_signature_and_raises(repo):
    cells = _cells(repo / "student" / "tiny.ipynb")
    stub = next(c for c in cells if "def double" in c["source"])
    assert stub["tags"] == ["exercise"] and stub["outputs"] == []
    assert "def double(x, *, scale=2):" in stub["source"]
    assert '"""Return scale * x."""' in stub["source"]            # the docstring is the student's spec
    assert "import math" in stub["source"]
    for secret in ("y = scale * x", "SECRET_CONSTANT", "hidden hint", "3 * x", "self.factor * x", "factor = 2"):
        assert secret not in stub["source"], secret
    assert "    pair=(1, 2),\n) -> float:" in stub["source"]                  # a multi-line header stays whole
    assert 'class Doubler:\n    """Doubles."""' in stub["source"]
    namespace: dict = {}
    exec(stub["source"], namespace)
    for call in (lambda: namespace["double"](3), lambda: namespace["triple"](3), lambda: namespace["Doubler"]()(3)):
        with pytest.raises(NotImplementedError, match="exercise: ex-tiny-1"):
            call()


def test_autograder_calls_inside_a_solution_are_kept(repo):
    cells = _cells(repo / "student" / "tiny.ipynb")
    assert any(c["source"] == "check_double(double)" and c["type"] == "code" for c in cells)


def test_other_solution_cells_become_a_comment(repo):
    """Code that defines nothing cannot be checked: it becomes a comment, so Run-all never stops there."""
    sources = [c["source"] for c in _cells(repo / "student" / "tiny.ipynb")]
    comments = [s for s in sources if s.startswith("# Your code for")]
    assert len(comments) == 2                                   # untagged inside a solution; tagged outside one
    assert "Exercise 1.2" in comments[0]
    assert not any("hidden_answer" in s or "sum(range(10))" in s for s in sources)
    assert not any(s.startswith("raise") for s in sources)


def test_text_solutions_are_removed(repo):
    text = "\n".join(c["source"] for c in _cells(repo / "student" / "tiny.ipynb") if c["type"] == "markdown")
    assert "Rayleigh" not in text and "glows blue" not in text
    assert "solution-start" not in text and "solution-end" not in text
    assert sn.ANSWER_PROMPT.format(title="Exercise 1.2") in text
    assert sn.ANSWER_PROMPT.format(title="Exercise 1.1") not in text          # a code-only solution: no prompt
    assert "Why is the sky blue?" in text and "After the exercises." in text


def test_non_solution_cells_are_kept(repo):
    cells = _cells(repo / "student" / "tiny.ipynb")
    assert any(c["source"] == "print(double(3))" and c["tags"] == [] for c in cells)
    assert any(c["tags"] == ["parameters"] for c in cells)


def test_output_is_deterministic(repo, tmp_path_factory):
    other = _make_repo(tmp_path_factory.mktemp("again"))
    sn.main(["--root", str(other)])
    assert (other / "student" / "tiny.ipynb").read_text() == (repo / "student" / "tiny.ipynb").read_text()


def test_check_passes_when_fresh(repo, capsys):
    assert sn.main(["--check", "--root", str(repo)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_check_detects_a_stale_file(repo, capsys):
    (repo / "book" / "tiny.md").write_text(CHAPTER.replace("After the exercises.", "Changed text."))
    assert sn.main(["--check", "--root", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "student/tiny.ipynb" in err and "out of date" in err


def test_check_detects_missing_and_orphaned_files(repo, capsys):
    (repo / "student" / "tiny.ipynb").rename(repo / "student" / "gone.ipynb")
    assert sn.main(["--check", "--root", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "student/tiny.ipynb (missing" in err and "student/gone.ipynb (its chapter is not in _toc.yml)" in err


def test_check_detects_a_stale_colab_notebook(repo, capsys):
    (repo / "book" / "tiny.ipynb").write_text("{}")
    assert sn.main(["--check", "--root", str(repo)]) == 1
    assert "book/tiny.ipynb" in capsys.readouterr().err


def test_unclosed_solution_is_an_error(tmp_path):
    root = _make_repo(tmp_path, CHAPTER.replace("```{solution-end}\n```\n\nAfter", "After"))
    with pytest.raises(ValueError, match="ex-tiny-2 has no {solution-end}"):
        sn.main(["--root", str(root)])


def test_exercise_cells_carry_their_role(repo):
    nb = json.loads((repo / "student" / "tiny.ipynb").read_text())
    roles = [(c["metadata"]["ncbook"]["exercise"], c["metadata"]["ncbook"]["role"])
             for c in nb["cells"] if "exercise" in c["metadata"].get("ncbook", {})]
    assert ("ex-tiny-1", "stub") in roles and ("ex-tiny-1", "check") in roles and ("ex-tiny-2", "answer") in roles


def test_directives_become_numbered_markdown(repo):
    nb = sn.colab_notebook(repo / "book" / "tiny.md", root=repo)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "> **Exercise 1.1.**" in text and "> **Exercise 1.2.**" in text     # numbered chapter 1 (numbered part)
    assert "**Solution to Exercise 1.1.**" in text and "Rayleigh" in text       # the Colab version keeps solutions
    assert "{" not in text.replace("{{", "")


def test_glued_paragraph_becomes_a_show_cell(tmp_path):
    chapter = CHAPTER.replace("After the exercises.", "")
    chapter = chapter.replace("# A tiny chapter\n", """# A tiny chapter

The value is {glue:text}`v:.2f` and {cite:t}`k1` agrees {cite}`k1`.

```{code-cell} ipython3
glue("v", 1.0 / 3)
```
""")
    root = _make_repo(tmp_path, chapter)
    (root / "refs.bib").write_text("@article{k1, author = {Doe, Jane and Roe, Richard and Poe, Edgar}, "
                                   "title = {A {Title}}, journal = {J}, year = {2020}}\n")
    (root / "_config.yml").write_text("bibtex_bibfiles:\n  - refs.bib\n")
    nb = sn.colab_notebook(root / "book" / "tiny.md", root=root)
    show = [c for c in nb.cells if c.cell_type == "code" and "show(" in c.source]
    assert len(show) == 1 and "{{v:.2f}}" in show[0].source and "Doe et al. (2020)" in show[0].source
    assert "(Doe et al., 2020)" in show[0].source
    before = [c.source for c in nb.cells].index(show[0].source)
    assert 'glue("v"' in nb.cells[before - 1].source                          # moved after the cell that glues v
    from ncbook.book import fill, glue
    glue("v", 1.0 / 3)
    assert "The value is 0.33 and" in fill(show[0].source.split('r"""')[1].split('"""')[0])


# --------------------------------------------------------------------------- the committed notebooks
MYST = re.compile(r"\{glue|\{prf:|\{cite|\{eq\}|\{doc\}|\{ref\}|\{numref\}|^```+\{|:label:", re.M)
COMMITTED = sorted((ROOT / "student").glob("*.ipynb")) + [p.with_suffix(".ipynb") for p in sn.toc_chapters(ROOT)]


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_myst_markup_in_markdown_cells(path):
    nb = json.loads(path.read_text())
    found = [m.group(0) for c in nb["cells"] if c["cell_type"] == "markdown" for m in MYST.finditer("".join(c["source"]))]
    assert not found, f"{path.name}: raw MyST in Markdown cells: {found[:5]}"


def test_committed_reader_notebooks_are_fresh():
    fresh = sn.generate(ROOT)
    stale = [p.relative_to(ROOT).as_posix() for p, text in fresh.items() if not p.exists() or p.read_text() != text]
    assert not stale, f"stale reader notebooks {stale}: run python3 tools/student_notebooks.py"


@pytest.mark.parametrize("path", sorted((ROOT / "student").glob("*.ipynb")), ids=lambda p: p.stem)
def test_student_notebooks_hold_no_solution_and_check_every_stub(path):
    nb = json.loads(path.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "Solution to Exercise" not in text
    by_exercise: dict = {}
    for c in nb["cells"]:
        meta = c["metadata"].get("ncbook", {})
        if "exercise" in meta:
            by_exercise.setdefault(meta["exercise"], set()).add(meta["role"])
        if c["cell_type"] == "code" and meta.get("role") == "stub":
            assert "NotImplementedError" in "".join(c["source"])
    for label, roles in by_exercise.items():
        assert "check" in roles or "stub" not in roles, f"{path.name}: {label} has a stub but no check"


# --------------------------------------------------------------------------- ncbook.book
def test_glue_returns_nothing_and_show_fills_a_template(monkeypatch):
    """A cell ending with glue(...) leaves no stray value; show() displays Markdown with a text form."""
    import IPython.display

    from ncbook.book import _glue as book
    monkeypatch.setenv(book.READER_ENV, "reader")          # no myst-nb record outside a book build
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj))
    assert book.glue("acc_test", np.float64(0.91234)) is None
    assert shown == []
    book.show("Accuracy {{acc_test:.2f}} on $C = 10$ classes; {{acc_test}}")
    assert shown == [{"text/markdown": "Accuracy 0.91 on $C = 10$ classes; 0.91234",
                      "text/plain": "Accuracy 0.91 on $C = 10$ classes; 0.91234"}]
    with pytest.raises(KeyError, match="nothing glued under 'never_glued'"):
        book.fill("{{never_glued}}")
