"""The page fixes of book/_ext/ncbook_pages.py: one copy of each inline head script, a colour mode."""

from pathlib import Path

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
pages = load_tool("book/_ext/ncbook_pages.py")

SETTINGS = '<script>const THEBE_JS_URL = "x";</script>'


def test_repeated_inline_head_script_is_kept_once():
    html = f"<head>\n  {SETTINGS}\n  <script src=\"a.js\"></script>\n  {SETTINGS}\n</head>\n<body>{SETTINGS}</body>"
    fixed = pages.one_copy_of_each_inline_script(html)
    head, body = fixed.split("</head>")
    assert head.count(SETTINGS) == 1 and 'src="a.js"' in head  # first copy and other scripts kept
    assert body == f"\n<body>{SETTINGS}</body>"                # the body is left alone


def test_distinct_scripts_and_pages_without_head_are_unchanged():
    html = "<head>\n<script>var a = 1;</script>\n<script>var b = 2;</script>\n</head>"
    assert pages.one_copy_of_each_inline_script(html) == html
    assert pages.one_copy_of_each_inline_script("<p>no head</p>") == "<p>no head</p>"


def test_colour_mode_is_set_only_when_missing():
    ctx = {"default_mode": ""}
    pages.default_colour_mode(None, "p", "page.html", ctx, None)
    assert ctx["default_mode"] == "auto"
    ctx = {"default_mode": "dark"}
    pages.default_colour_mode(None, "p", "page.html", ctx, None)
    assert ctx["default_mode"] == "dark"
