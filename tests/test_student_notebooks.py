"""tools/student_notebooks.py: solutions become stubs, text solutions disappear, --check finds stale files."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "tools" / "student_notebooks.py")
sn = importlib.util.module_from_spec(_spec)
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
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: Test\n    chapters:\n      - file: book/tiny\n")
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


def test_other_solution_cells_become_a_single_raise(repo):
    sources = [c["source"] for c in _cells(repo / "student" / "tiny.ipynb")]
    assert 'raise NotImplementedError("exercise: ex-tiny-2")' in sources      # untagged code inside a solution
    assert 'raise NotImplementedError("exercise: solution")' in sources       # tagged, outside any solution
    assert not any("hidden_answer" in s or "sum(range(10))" in s for s in sources)


def test_text_solutions_are_removed(repo):
    text = "\n".join(c["source"] for c in _cells(repo / "student" / "tiny.ipynb") if c["type"] == "markdown")
    assert "Rayleigh" not in text and "glows blue" not in text
    assert "solution-start" not in text and "solution-end" not in text
    assert sn.ANSWER_PROMPT.format(label="ex-tiny-2") in text
    assert sn.ANSWER_PROMPT.format(label="ex-tiny-1") not in text             # a code-only solution: no prompt
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


def test_unclosed_solution_is_an_error(tmp_path):
    root = _make_repo(tmp_path, CHAPTER.replace("```{solution-end}\n```\n\nAfter", "After"))
    with pytest.raises(ValueError, match="ex-tiny-2 has no {solution-end}"):
        sn.main(["--root", str(root)])
