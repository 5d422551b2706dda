"""tools/check_offline_render.py: what counts as typeset math and a rendered widget (no browser needed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
cor = load_tool("tools/check_offline_render.py")

# What a page holds before its scripts run: raw TeX and the saved widget state, which mentions
# "@jupyter-widgets" and "widget-slider"-like names only inside script text.
UNRENDERED = """
<html><head><style>mjx-container { display: inline }</style></head><body>
<p>\\(a^2\\) and $$b$$</p>
<script type="application/vnd.jupyter.widget-state+json">
{"state": {"x": {"model_module": "@jupyter-widgets/controls", "model_name": "IntSliderModel",
 "state": {"_dom_classes": ["jupyter-widgets", "widget-slider"]}}}}
</script>
<div class="cell_output"><script type="application/vnd.jupyter.widget-view+json">{"model_id": "x"}</script></div>
</body></html>
"""

RENDERED = """
<html><body>
<p><mjx-container class="MathJax CtxtMenu_Attached_0" jax="CHTML"><mjx-math>a</mjx-math></mjx-container></p>
<p><mjx-container jax="CHTML" display="true"><mjx-math>b</mjx-math></mjx-container></p>
<div class="lm-Widget jupyter-widgets widget-inline-hbox widget-slider widget-hslider"><div class="widget-label">k</div></div>
<script src="present.js"></script><script src="missing.js?v=1"></script>
<link rel="stylesheet" href="gone.css"><img src="data:image/png;base64,AAAA"><script src="https://example.org/x.js"></script>
</body></html>
"""


def _scan(text: str):
    scan = cor._DomScan()
    scan.feed(text)
    return scan


def test_unrendered_page_has_no_math_and_no_widget():
    scan = _scan(UNRENDERED)
    assert scan.math == 0                 # a CSS selector naming mjx-container is not an element
    assert scan.widgets == 0              # class names inside the saved state are script text


def test_rendered_page_counts_math_and_widgets():
    scan = _scan(RENDERED)
    assert scan.math == 2
    assert scan.widgets == 2 and {"jupyter-widgets", "widget-slider", "widget-label"} <= scan.widget_classes


def test_missing_local_files_ignore_remote_and_data_urls(tmp_path):
    (tmp_path / "present.js").write_text("")
    page = tmp_path / "page.html"
    scan = _scan(RENDERED)
    missing = cor.missing_local_files(page, scan.resources)
    assert missing == sorted([str((tmp_path / "gone.css").resolve()), str((tmp_path / "missing.js").resolve())])


def test_missing_page_is_reported(tmp_path, capsys):
    assert cor.main([str(tmp_path / "nope.html")]) == 1
    assert "does not exist: build the book first" in capsys.readouterr().err


EXPLORER = """<div id="e" class="ncbook-seli-explorer" data-frames="2"{ready}>
<div class="ncbook-seli-controls"></div>
<img class="ncbook-seli-frame" data-r="0" data-f="0"{h0} src="data:,">
<img class="ncbook-seli-frame" data-r="1" data-f="0"{h1} src="data:,"></div>"""


def test_explorer_checks():
    ok = _scan(EXPLORER.format(ready=' data-ready="1" data-shown="1,0"', h0=" hidden", h1=""))
    assert cor.explorer_problems(Path("p.html"), ok.explorers) == []
    stale = _scan(EXPLORER.format(ready=' data-ready="1" data-shown="0,0"', h0=" hidden", h1=""))
    assert "sliders select 0,0" in " ".join(cor.explorer_problems(Path("p.html"), stale.explorers))
    dead = _scan(EXPLORER.format(ready="", h0="", h1=""))
    problems = " ".join(cor.explorer_problems(Path("p.html"), dead.explorers))
    assert "did not run" in problems and "2 frames visible" in problems
    assert "no precomputed-frames explorer" in cor.explorer_problems(Path("p.html"), _scan(RENDERED).explorers)[0]


def test_console_errors_are_read_from_the_browser_log():
    log = "\n".join([
        '[1:1:1130/200823.57:INFO:CONSOLE:1] "plain log", source: file:///p.html (1)',
        f'[1:1:1130/200823.57:INFO:CONSOLE:1] "{cor.CONSOLE_MARK}: boom", source: file:///p.html (1)',
        "[1:1:1130/200823.58:INFO:CONSOLE(2)] \"Uncaught TypeError: Cannot read properties of undefined "
        "(reading 'Hub')\", source: file:///p.html (2)",
        "[1:1:1130/200823.59:WARNING:some_component.cc(12)] not a console line",
    ])
    errors = cor.console_errors(log)
    assert len(errors) == 2 and errors[0].startswith('"boom"') and "reading 'Hub'" in errors[1]
    assert cor.with_console_probe("<html><head><title>t</title></head></html>").index(cor.CONSOLE_MARK) < \
        "<html><head><title>t</title></head></html>".index("<title>") + len(cor.CONSOLE_PROBE)


@pytest.mark.skipif(not any(shutil.which(b) for b in cor.BROWSERS), reason="needs headless Chromium")
def test_page_that_throws_fails_the_check(tmp_path):
    page = tmp_path / "throws.html"
    page.write_text("<html><head></head><body><p>x</p><script>console.error('from console.error');</script>"
                    "<script>window.MathJax = {}; MathJax.Hub.Queue(['Typeset']);</script></body></html>")
    problems = cor.check(page, widget=False, min_math=0, screenshot=tmp_path / "s.png", budget_ms=2000, timeout=120)
    text = "\n".join(problems)
    assert "console error" in text and "from console.error" in text and "reading 'Queue'" in text, text
    assert "throws.html" in text and "console-check" not in text
    assert not list(tmp_path.glob(".*console-check*"))   # the probed copy is gone
    assert cor.check(page, widget=False, min_math=0, screenshot=tmp_path / "s.png", budget_ms=2000, timeout=120,
                     strict_console=True)   # strictness adds failures, never removes them
    theme = tmp_path / "theme.html"   # the known theme-stack error passes, unless strict
    theme.write_text("<html><head></head><body><script>const THEBE_JS_URL = 1;</script>"
                     "<script>const THEBE_JS_URL = 1;</script></body></html>")
    assert cor.check(theme, widget=False, min_math=0, screenshot=tmp_path / "t.png", budget_ms=2000, timeout=120) == []
    strict = cor.check(theme, widget=False, min_math=0, screenshot=tmp_path / "t.png", budget_ms=2000, timeout=120,
                       strict_console=True)
    assert len(strict) == 1 and "THEBE_JS_URL" in strict[0]
    clean = tmp_path / "clean.html"
    clean.write_text("<html><head></head><body><p>x</p><script>console.log('fine');</script></body></html>")
    assert cor.check(clean, widget=False, min_math=0, screenshot=tmp_path / "c.png", budget_ms=2000, timeout=120) == []
