"""Pages with a clean browser console: two fixes to the Jupyter Book 1 theme stack.

- Inline settings scripts of sphinx-thebe (``const THEBE_JS_URL = ...``) and sphinx-togglebutton
  reach each page's ``<head>`` twice (their extensions are set up by both Jupyter Book and the
  book theme), and the second ``const`` throws "Identifier 'THEBE_JS_URL' has already been
  declared". After the build, each page keeps the first copy of every identical inline script line
  in its ``<head>``.
- pydata-sphinx-theme logs "Got invalid theme mode" when its page template gets no colour mode:
  each page gets ``default_mode = "auto"`` (the reader's system setting) unless one is given.

Registered in ``_config.yml`` under ``sphinx: local_extensions``; ``tools/check_offline_render.py``
fails on any console error.
"""

from __future__ import annotations

from pathlib import Path


def one_copy_of_each_inline_script(html: str) -> str:
    """``html`` with repeated identical one-line inline ``<script>`` elements removed from its ``<head>``."""
    head_end = html.find("</head>")
    if head_end < 0:
        return html
    seen, kept = set(), []
    for line in html[:head_end].split("\n"):
        text = line.strip()
        if text.startswith("<script>") and text.endswith("</script>"):
            if text in seen:
                continue
            seen.add(text)
        kept.append(line)
    return "\n".join(kept) + html[head_end:]


def dedupe_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = one_copy_of_each_inline_script(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def default_colour_mode(app, pagename, templatename, context, doctree) -> None:
    """Give the theme's page template a colour mode (``default_mode``) when none is set."""
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def setup(app):
    app.connect("html-page-context", default_colour_mode)
    app.connect("build-finished", dedupe_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
