"""book/_ext/ncbook_solutions.py: a term's build of the book drops the solutions; the readers' build keeps them.

A tiny page with an exercise, a hint in a dropdown, a gated solution (text and a code cell) and a code cell
tagged ``solution`` outside it is built twice with Sphinx, myst-nb and sphinx-exercise (as the book is,
without executing cells): with ``NCBOOK_HIDE_SOLUTIONS=1`` no solution text or code is in the HTML and no
page source is copied; without it everything is there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PAGE = '''---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{exercise}
:label: ex-tiny-1

Compute the TASKTEXT.
```

:::{admonition} Hint
:class: dropdown
HINTTEXT: start from the definition.
:::

````{solution-start} ex-tiny-1
:class: dropdown
````

SOLUTIONTEXT is the answer.

```{code-cell} ipython3
:tags: [solution]

answer = "SOLUTIONCODE"
```

```{solution-end}
```

```{code-cell} ipython3
:tags: [solution]

extra = "LOOSESOLUTIONCELL"
```

```{code-cell} ipython3
kept = "READERCODE"
```
'''

CONF = f'''import sys
sys.path.insert(0, {str(ROOT / "book" / "_ext")!r})
extensions = ["myst_nb", "sphinx_exercise", "ncbook_solutions"]
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "dollarmath"]
exclude_patterns = ["_build"]
html_theme = "basic"
'''


def _build(tmp_path: Path, hide: bool) -> tuple[str, Path]:
    src = tmp_path / ("hidden" if hide else "shown")
    src.mkdir()
    (src / "conf.py").write_text(CONF)
    (src / "index.md").write_text(PAGE)
    out = src / "_build"
    env = {k: v for k, v in os.environ.items() if k != "NCBOOK_HIDE_SOLUTIONS"}
    if hide:
        env["NCBOOK_HIDE_SOLUTIONS"] = "1"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (out / "index.html").read_text(), out


def test_a_term_build_drops_every_solution_and_a_readers_build_keeps_them(tmp_path):
    shown, shown_out = _build(tmp_path, hide=False)
    for text in ("TASKTEXT", "HINTTEXT", "SOLUTIONTEXT", "SOLUTIONCODE", "LOOSESOLUTIONCELL", "READERCODE"):
        assert text in shown, text
    assert (shown_out / "_sources").exists()
    hidden, hidden_out = _build(tmp_path, hide=True)
    for text in ("TASKTEXT", "HINTTEXT", "READERCODE"):
        assert text in hidden, text
    for text in ("SOLUTIONTEXT", "SOLUTIONCODE", "LOOSESOLUTIONCELL"):
        assert text not in hidden, text
    assert not (hidden_out / "_sources").exists() or not any((hidden_out / "_sources").rglob("*.md*"))
