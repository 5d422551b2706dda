"""tools/check_offline_render.py: what counts as typeset math and a rendered widget (no browser needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_offline_render", ROOT / "tools" / "check_offline_render.py")
cor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cor)

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
