"""A book build that survives a slow machine and says what failed (book/_ext/ncbook_failures.py, ncbook_cache.py).

Each failure is injected into a tiny book in a temporary folder: a cell past its time limit, a failed
self-check of a solution, a glue key that no cell set. Each must fail the build with a first line naming
the chapter, the cell and the cause, leave a page that says it failed (no cascade of glue warnings), and
end the build's output with the list of failed chapters. The cell time limit is sized from the chapter's
own estimate.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from jupyter_cache import get_cache

from ncbook import profiles
from ncbook.exercises import _core as exercise_core

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import ncbook_cache  # noqa: E402
import ncbook_failures  # noqa: E402

HEAD = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\nkernelspec:\n"
        "  name: python3\n  display_name: Python 3\n  language: python\n---\n\n")


def _page(path: Path, title: str, *cells_and_text: str) -> None:
    """A MyST notebook page: ``("code", source)`` becomes a code cell, a plain string a paragraph."""
    parts = [HEAD + f"# {title}\n"]
    for part in cells_and_text:
        parts.append(f"```{{code-cell}} ipython3\n{part[1]}\n```\n" if isinstance(part, tuple) else part + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))


def _code_cell_line(path: Path, number: int) -> int:
    lines = path.read_text().split("\n")
    return [i + 1 for i, line in enumerate(lines) if line.startswith("```{code-cell}")][number - 1]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    for name in ("NCBOOK_PROFILE", "NCBOOK_SCALE", "NCBOOK_RESULTS", "NCBOOK_EXECUTION_CACHE", "NCBOOK_CELL_TIMEOUT",
                 "NCBOOK_CELL_TIMEOUT_FACTOR", "NCBOOK_BUILD_WORKERS", "NCBOOK_STRICT_CHECKS", "NCBOOK_NOTEBOOK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NCBOOK_PROFILE", "quick")


# --------------------------------------------------------------------------- the time limit
def test_the_cell_limit_is_sized_from_the_chapters_estimate(tmp_path, monkeypatch):
    limit = lambda stem, **kw: ncbook_failures.cell_limit(  # noqa: E731
        stem, floor=kw.get("floor", 300), profile=kw.get("profile", "quick"), scale="paper", results=tmp_path)
    longest = max(profiles.PLANS, key=lambda s: profiles.PLANS[s].quick_seconds)
    shortest = min(profiles.PLANS, key=lambda s: profiles.PLANS[s].quick_seconds)
    estimate = profiles.PLANS[longest].quick_seconds
    assert limit(longest).seconds == max(300, math.ceil(5 * estimate))            # several times the estimate ...
    assert limit(shortest).seconds == max(300, math.ceil(5 * profiles.PLANS[shortest].quick_seconds))
    assert limit(shortest, floor=1).seconds == math.ceil(5 * profiles.PLANS[shortest].quick_seconds)
    assert limit("intro").seconds == 300 and limit("intro").estimate_s is None    # ... with a floor; no plan: the floor
    assert limit(longest).estimate_s == pytest.approx(estimate, rel=1e-12)
    monkeypatch.setenv("NCBOOK_CELL_TIMEOUT_FACTOR", "10")
    assert limit(longest, floor=1).seconds == math.ceil(10 * estimate)
    monkeypatch.setenv("NCBOOK_CELL_TIMEOUT", "42")
    assert (limit(longest).seconds, limit("intro").seconds, limit(longest).chosen) == (42, 42, True)
    monkeypatch.delenv("NCBOOK_CELL_TIMEOUT")
    monkeypatch.delenv("NCBOOK_CELL_TIMEOUT_FACTOR")
    gpu = limit("seli", profile="gpu", floor=1)                                    # gpu: the plan's network time too
    expected = 5 * (profiles.PLANS["seli"].quick_seconds + profiles.planned_seconds("seli", "gpu", "T4"))
    assert gpu.seconds == math.ceil(expected) and "planned_seconds" in gpu.basis
    record = tmp_path / "costs" / "quick" / f"{shortest}.json"                     # an earlier run recorded a longer cell
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"cells": {"network": {"estimate_s": 50.0, "measured_s": 400.0}}}))
    assert limit(shortest, floor=1).seconds == 2000 and "'network' in the cost record" in limit(shortest).basis
    assert limit("seli", floor=-1).seconds == -1                                   # no floor configured: no limit
    for name, bad in (("NCBOOK_CELL_TIMEOUT", "ten"), ("NCBOOK_CELL_TIMEOUT_FACTOR", "0"), ("NCBOOK_CELL_TIMEOUT", "nan")):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=f"{name} must be a positive number; got {bad!r}"):
            limit("seli")
        monkeypatch.delenv(name)


def test_pages_myst_nb_executes_get_their_chapters_limit(tmp_path, monkeypatch):
    """The reproduction page (executed at every read) and any page myst-nb executes itself run with the limit."""
    monkeypatch.setenv("NCBOOK_RESULTS", str(tmp_path))
    longest = max(profiles.PLANS, key=lambda s: profiles.PLANS[s].quick_seconds)
    app = SimpleNamespace(srcdir=str(tmp_path), config=SimpleNamespace(nb_execution_mode="auto", nb_execution_timeout=300))
    source = [HEAD + "# A chapter\n"]
    ncbook_cache.force_execution(app, f"book/{longest}", source)
    seconds = max(300, math.ceil(5 * profiles.PLANS[longest].quick_seconds))
    assert source[0].startswith(f"---\nmystnb:\n  execution_timeout: {seconds}\njupytext:")
    app.config.nb_execution_mode = "cache"
    source = [HEAD + "# Reproduction\n"]
    ncbook_cache.force_execution(app, "book/reproduction", source)
    assert source[0].startswith('---\nmystnb:\n  execution_mode: "force"\n  execution_timeout: 300\njupytext:')
    plain = ["# API\n\nNo code here.\n"]
    ncbook_cache.force_execution(app, "book/api", plain)
    assert plain == ["# API\n\nNo code here.\n"]


def test_a_failed_check_raises_only_in_the_build(monkeypatch):
    failed = exercise_core.CheckResult("demo", False, "expected 1.0, got 2.0.")  # a reader's notebook: shown, goes on
    assert not failed and "❌ failed" in failed._repr_markdown_()
    monkeypatch.setenv("NCBOOK_STRICT_CHECKS", "1")                                # what the build's kernels see
    assert exercise_core.CheckResult("demo", True, "ok.")
    with pytest.raises(exercise_core.CheckFailedError, match=r"demo failed: expected 1\.0, got 2\.0\."):
        exercise_core.CheckResult("demo", False, "expected 1.0, got 2.0.")
    monkeypatch.setenv("NCBOOK_STRICT_CHECKS", "0")
    ncbook_cache.strict_checks(None, None)                                        # the build sets it for its kernels
    assert os.environ["NCBOOK_STRICT_CHECKS"] == "1"
    registered = []
    ncbook_cache.setup(type("App", (), {"connect": lambda self, ev, fn: registered.append((ev, fn.__name__))})())
    assert ("config-inited", "strict_checks") in registered                        # before any kernel starts


def test_the_keys_a_page_reads_are_those_of_its_prose():
    """Roles in the prose and in directives are read (with their lines); code cells and literal blocks are not,
    and a failed page marks only the roles of its prose."""
    text = ("---\njupytext: {}\n---\n# T\n\nNC1 {glue:text}`nc1:.3f`, {glue:md}`verdict`, {glue}`fig`.\n"
            "```{code-cell} ipython3\nprint('{glue:text}`in_code`')\n```\n"
            "````{admonition} Box\n{glue:text}`boxed:,d`\n```text\n{glue:text}`literal`\n```\n````\n"
            ":::{note}\n{glue:text}`noted` and {glue:text}`other::remote:.2f`\n:::\n")
    assert ncbook_failures.glue_keys_read(text) == [("nc1", 6), ("verdict", 6), ("fig", 6), ("boxed", 11), ("noted", 17)]
    failure = ncbook_failures.Failure("t", "error", "t: code cell 1 (t.md:7: `print(...)`) raised ValueError: x")
    page = ncbook_failures.failed_page(text, failure)
    assert "print('{glue:text}`in_code`')" in page and "{glue:text}`literal`" in page
    assert "**[nc1: not computed]**" in page and "**[boxed: not computed]**" in page and "{glue:md}" not in page
    assert page.startswith('---\nmystnb:\n  execution_mode: "off"\njupytext: {}\n---\n# T\n')


# --------------------------------------------------------------------------- the extension's functions, one failure each
def _env(root: Path, floor: int = 120):
    from myst_nb.core.config import NbParserConfig
    from myst_parser.config.main import MdParserConfig

    config = NbParserConfig(execution_mode="cache", execution_cache_path=str(root / "cache"), execution_timeout=floor)
    env = SimpleNamespace(doc2path=lambda doc: str(root / f"{doc}.md"), myst_config=MdParserConfig(),
                          mystnb_config=config)
    app = SimpleNamespace(srcdir=str(root), config=SimpleNamespace(nb_execution_mode="cache", nb_execution_timeout=floor))
    return app, env


COST_PRINT = ("print(\"Next cell, network: about 1.0 s. The chapter's long cells: about 1.0 s (network 1.0 s), "
              "1.0 s of it from here on.\")")


def test_a_cell_past_its_limit_names_the_chapter_the_cell_and_how_to_raise_the_limit(tmp_path, monkeypatch, capsys):
    page = tmp_path / "book" / "seli.md"                        # a chapter with a plan: its estimate is quoted
    _page(page, "SELI", ("code", COST_PRINT), ("code", "# the long cell\nimport time\ntime.sleep(120)"),
          "It took {glue:text}`seli_seconds:.0f` s; NC1 is {glue:text}`nc1:.3f`.")
    monkeypatch.setenv("NCBOOK_CELL_TIMEOUT", "4")
    monkeypatch.setenv("NCBOOK_EXECUTION_CACHE", str(tmp_path / "base"))
    monkeypatch.setattr(ncbook_cache, "HEARTBEAT_S", 1.0)              # a line a second while it runs (a minute in a build)
    app, env = _env(tmp_path)
    ncbook_cache.execute_side_by_side(app, env, ["book/seli"])
    failure = app.ncbook_failures["book/seli"]
    line = _code_cell_line(page, 2)
    print(failure.summary)
    assert failure.kind == "timeout" and failure.line == line
    assert failure.summary.startswith(f"seli: code cell 2 (book/seli.md:{line}: `import time`) passed its time limit "
                                      "of 4 s (stopped after ")
    idle = f"{profiles.PLANS['seli'].quick_seconds:.0f} s"
    assert f"the chapter's estimate on an idle machine is {idle}" in failure.summary
    assert "its cost cell estimated about 1.0 s on this machine" in failure.summary
    assert "NCBOOK_CELL_TIMEOUT_FACTOR=10 (now 5) or NCBOOK_CELL_TIMEOUT=<seconds a cell>" in failure.summary
    out = capsys.readouterr().out
    assert "ncbook_cache: book/seli: started (a cell may run 4 s)" in out
    assert re.search(r"ncbook_cache: book/seli: FAILED after [\d.]+ s: seli: code cell 2", out)
    assert re.search(r"ncbook_cache: still running: book/seli \d+ s, code cell 2 for \d+ s", out)
    cache = get_cache(env.mystnb_config.execution_cache_path)
    assert [s.doc for s in ncbook_cache._stale_notebooks(env, ["book/seli"], cache)] == ["book/seli"]  # not cached
    # its page says so, executes nothing during the read, and quotes no number as if computed
    source = [page.read_text()]
    ncbook_cache.force_execution(app, "book/seli", source)
    assert 'execution_mode: "off"' in source[0].split("\n---", 1)[0]
    assert "This page did not build" in source[0] and failure.summary in source[0]
    assert "{glue" not in source[0] and "**[nc1: not computed]**" in source[0]
    assert source[0].index("# SELI") < source[0].index("This page did not build")


def test_a_failed_check_and_an_unset_glue_key_fail_their_chapters(tmp_path, monkeypatch, capsys):
    check = tmp_path / "check.md"
    _page(check, "Check", ("code", "import numpy as np\nfrom ncbook.exercises import run_cases"),
          ("code", "run_cases('double', lambda x: 3 * x, lambda x: 2 * x, [{'x': np.ones(2)}])"))
    glued = tmp_path / "glued.md"
    _page(glued, "Glued", ("code", "from ncbook.book import glue\nglue('n', 12406)"),
          "There are {glue:text}`n:,d` samples.", "", "Accuracy {glue:text}`acc:.2f`, {glue:md}`verdict`.")
    good = tmp_path / "good.md"
    _page(good, "Good", ("code", "from ncbook.book import glue\nglue('n', 12406)"), "There are {glue:text}`n:,d` samples.")
    monkeypatch.setenv("NCBOOK_STRICT_CHECKS", "1")                     # as strict_checks sets it in the build
    monkeypatch.setenv("NCBOOK_EXECUTION_CACHE", str(tmp_path / "base"))
    monkeypatch.setenv("NCBOOK_BUILD_WORKERS", "3")
    app, env = _env(tmp_path)
    ncbook_cache.execute_side_by_side(app, env, ["check", "glued", "good"])
    assert sorted(app.ncbook_failures) == ["check", "glued"]
    failure = app.ncbook_failures["check"]
    line = _code_cell_line(check, 2)
    assert failure.kind == "check" and failure.line == line
    assert failure.summary.startswith(f"check: code cell 2 (check.md:{line}: `run_cases('double', lambda x: 3 * x, "
                                      "lambda x: 2 * x, [{'x': np.one...`) raised CheckFailedError: double failed: "
                                      "on input x=[1. 1.]: 2 of 2 entries differ")
    assert "CheckFailedError" in failure.details                        # the traceback, for the log
    failure = app.ncbook_failures["glued"]
    acc_line = next(i + 1 for i, ln in enumerate(glued.read_text().split("\n")) if "acc:.2f" in ln)
    assert failure.kind == "glue" and failure.missing_keys == ("acc", "verdict")
    assert failure.summary.startswith(f"glued: the page reads glue key 'acc' (glued.md:{acc_line}) that no cell set "
                                      "(and 1 more: verdict)")
    out = capsys.readouterr().out
    assert re.search(r"ncbook_cache: good: executed in [\d.]+ s", out)
    cache = get_cache(env.mystnb_config.execution_cache_path)
    stale = [s.doc for s in ncbook_cache._stale_notebooks(env, ["check", "glued", "good"], cache)]
    assert stale == ["check"]                    # a failed cell executes again; the glued page's cells ran: cached
    # the glued page: only its missing numbers are marked, the others are pasted from the cache
    source = [glued.read_text()]
    ncbook_cache.force_execution(app, "glued", source)
    assert "{glue:text}`n:,d`" in source[0] and "**[acc: not computed]**" in source[0]
    assert "**[verdict: not computed]**" in source[0] and "execution_mode" not in source[0].split("\n---", 1)[0]
    # the build's end: the failed chapters listed, a failing status, the failed pages read again next time
    env.all_docs, env.found_docs = {"check": 0, "glued": 0, "good": 0}, {"check", "glued", "good"}
    app.env = env
    ncbook_cache.report_failures(app, None)
    out = capsys.readouterr().out.strip().split("\n")
    assert out[0] == "ncbook_cache: THE BOOK DID NOT BUILD: 2 chapters failed (their pages say so; the errors above " \
                     "give the tracebacks):"
    assert out[1].startswith("ncbook_cache:   check: code cell 2") and out[2].startswith("ncbook_cache:   glued: the page")
    assert app.statuscode == 1
    assert ncbook_cache.reread_uncached(app, env, set(), set(), set()) == ["check", "glued"]
    # a later build serves the glued page from the cache and still finds the unset keys
    app2, env2 = _env(tmp_path)
    ncbook_cache.execute_side_by_side(app2, env2, ["glued", "good"])
    assert list(app2.ncbook_failures) == ["glued"] and app2.ncbook_failures["glued"].kind == "glue"


# --------------------------------------------------------------------------- a whole build of a tiny book
def test_a_tiny_book_build_says_what_failed_in_its_first_and_last_lines(tmp_path):
    """jupyter-book itself: status 1 with -W --keep-going, one error line per failure naming the chapter, the
    cell and the cause, no glue warnings, the failed chapters in the last lines, pages that say they failed."""
    (tmp_path / "_config.yml").write_text(
        "title: tiny\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: cache\n  timeout: 120\n"
        f"sphinx:\n  local_extensions:\n    ncbook_cache: {ROOT / 'book' / '_ext'}\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: check\n  - file: good\n")
    (tmp_path / "intro.md").write_text("# Intro\n\nA tiny book.\n")
    _page(tmp_path / "check.md", "Check", ("code", "from ncbook.book import glue\nglue('k', 0.5)"),
          "The value is {glue:text}`k:.2f`.",
          ("code", "import numpy as np\nfrom ncbook.exercises import run_cases\n"
                   "run_cases('double', lambda x: 3 * x, lambda x: 2 * x, [{'x': np.ones(2)}])"))
    _page(tmp_path / "good.md", "Good", ("code", "from ncbook.book import glue\nglue('n', 12406)"),
          "There are {glue:text}`n:,d` samples, {glue:text}`typo:.1f` of them new.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCBOOK_")}
    env.update(NCBOOK_PROFILE="quick", NCBOOK_BUILD_WORKERS="2",
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    cli = "import sys; from jupyter_book.cli.main import main; sys.exit(main())"       # the jupyter-book command
    out = subprocess.run([sys.executable, "-c", cli, "build", str(tmp_path), "-W", "--keep-going"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=600)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout)                     # as a terminal shows it, in order
    print(text[-3000:])
    assert out.returncode == 1
    check_line = _code_cell_line(tmp_path / "check.md", 2)
    assert re.search(rf"check\.md:{check_line}: ERROR: check: code cell 2 \(check\.md:{check_line}: `import numpy as np`\) "
                     r"raised CheckFailedError: double failed: on input x=\[1\. 1\.\]", text)
    typo_line = next(i + 1 for i, ln in enumerate((tmp_path / "good.md").read_text().split("\n")) if "typo" in ln)
    assert f"good.md:{typo_line}: ERROR: good: the page reads glue key 'typo' (good.md:{typo_line}) that no cell set" in text
    assert "No key" not in text                                          # no cascade of glue warnings
    tail = "\n".join(text.strip().split("\n")[-12:])
    assert "ncbook_cache: THE BOOK DID NOT BUILD: 2 chapters failed" in tail
    html = (tmp_path / "_build" / "html" / "check.html").read_text()
    assert "This page did not build" in html and "[k: not computed]" in html
    good = (tmp_path / "_build" / "html" / "good.html").read_text()
    assert "12,406" in good and "[typo: not computed]" in good and "This page did not build" in good
