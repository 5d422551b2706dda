"""Readable pages: wrapped code lines, multi-panel figures beside the column, the listing block's style.

Adds ``static/ncbook.css`` to every page (its folder joins ``html_static_path``; the folder holds no
``.js``, which Jupyter Book 1 would load on every page by itself) and one small inline script: it marks
each cell output whose image is wider than the text column, so that the stylesheet lets it use the
page's width beside the column (as the theme's ``full-width`` cells do, on screens at least 1200 px
wide). A figure is then shown at its own size up to 136 % of the column, instead of being scaled down
until its tick labels are 6-7 px; :mod:`ncbook.plotting` sets font sizes for that width (its
``MAX_FIGURE_WIDTH``).

Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
CSS = "ncbook.css"

#: marks outputs whose image is wider than the column (read by the stylesheet's .ncbook-wide-output)
WIDE_FIGURES_JS = """
(function () {
  function mark(img) {
    var out = img.closest("div.cell_output");
    if (out && img.naturalWidth > out.clientWidth + 1) { out.classList.add("ncbook-wide-output"); }
  }
  function scan() {
    document.querySelectorAll("div.cell_output img").forEach(function (img) {
      if (img.complete) { mark(img); } else { img.addEventListener("load", function () { mark(img); }); }
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", scan); } else { scan(); }
})();
"""


def add_static_folder(app, config) -> None:
    folder = str(STATIC)
    if folder not in config.html_static_path:
        config.html_static_path.append(folder)


def setup(app):
    app.connect("config-inited", add_static_folder)
    app.add_css_file(CSS)
    app.add_js_file(None, body=WIDE_FIGURES_JS)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
