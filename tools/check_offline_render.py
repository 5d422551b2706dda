#!/usr/bin/env python3
"""Check that a built HTML page renders its math (and widgets) with no network.

Loads the page in headless Chromium with networking disabled, lets its scripts run, and
inspects the resulting DOM:

* math: at least ``--min-math`` MathJax output elements (``mjx-container``) — raw ``$...$``
  would mean MathJax never loaded;
* ``--widget``: at least one rendered ipywidgets element (an element whose class list holds
  ``jupyter-widgets`` or a ``widget-*`` class such as ``widget-slider``). The widget *state*
  saved in the page also mentions ``@jupyter-widgets``, so only class attributes of real
  elements count, never script text.

* ``--explorer``: at least one precomputed-frames explorer (``plotting.seli_widget`` on a static
  page) whose script ran (``data-ready``), with more than one frame, exactly one frame shown,
  and the shown frame the one its sliders select;
* the console: no uncaught exception, unhandled promise rejection or ``console.error`` call
  (e.g. ``MathJax.Hub.Queue`` from a widget script written for MathJax 2). Chromium logs every
  console message at the same level, so the page is loaded through a copy (next to it, removed
  afterwards) whose first script marks ``console.error`` calls and uncaught errors. Two errors
  that every Jupyter Book 1 page logs from its theme stack (``KNOWN_CONSOLE_ERRORS``) are printed
  but not failed on unless ``--strict-console``.

It also saves a screenshot (default ``_build/screenshots/<page>.png``) for people to look at,
and fails if the rendered page points at a local script, stylesheet or image that does not
exist (e.g. a TeX extension MathJax autoloads).

Networking is disabled twice: the browser runs in a fresh network namespace when the
system allows it (``unshare -n``), and in any case with every host name resolving to nothing
and an unreachable proxy. Usage::

    python3 tools/check_offline_render.py _build/html/book/nc_primer.html
    python3 tools/check_offline_render.py _build/html/book/seli.html --explorer
"""

from __future__ import annotations

import argparse
import html.parser
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDGET_CLASS = re.compile(r"^(jupyter-widgets|widget-[a-z-]+)$")


class _DomScan(html.parser.HTMLParser):
    """Counts MathJax containers and rendered widget elements (by tag and class, not text)."""

    def __init__(self):
        super().__init__()
        self.math = 0
        self.widgets = 0
        self.widget_classes: set[str] = set()
        self.resources: list[str] = []
        self.explorers: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "mjx-container":
            self.math += 1
        if tag in ("script", "img") and attrs.get("src"):
            self.resources.append(attrs["src"])
        if tag == "link" and attrs.get("href") and "stylesheet" in (attrs.get("rel") or ""):
            self.resources.append(attrs["href"])
        classes = (attrs.get("class") or "").split()
        if "ncbook-seli-explorer" in classes:
            self.explorers.append({"ready": attrs.get("data-ready") == "1", "shown": attrs.get("data-shown"),
                                   "frames": [], "visible": []})
        if "ncbook-seli-frame" in classes and self.explorers:
            key = f"{attrs.get('data-r')},{attrs.get('data-f')}"
            self.explorers[-1]["frames"].append(key)
            if "hidden" not in attrs:
                self.explorers[-1]["visible"].append(key)
        hits = [c for c in classes if WIDGET_CLASS.match(c)]
        if hits:
            self.widgets += 1
            self.widget_classes.update(hits)


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no headless browser found: install Debian's `chromium` package (apt-get install chromium)")


def _offline_prefix() -> list[str]:
    """``unshare -n`` when this process may create a network namespace, else nothing."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []


def run_browser(url: str, mode: list[str], *, budget_ms: int, timeout: float, user_dir: Path) -> subprocess.CompletedProcess:
    cmd = _offline_prefix() + [
        _browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--allow-file-access-from-files",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
        f"--user-data-dir={user_dir}", f"--virtual-time-budget={budget_ms}", "--window-size=1280,2000",
        "--enable-logging=stderr", "--v=0", *mode, url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


CONSOLE_MARK = "NCBOOK-CONSOLE-ERROR"
# First script of the page copy: console.error calls are logged with a mark (Chromium's log gives
# every console message the same level); uncaught errors and rejections Chromium logs as "Uncaught".
CONSOLE_PROBE = f"""<script>(function () {{
  var mark = "{CONSOLE_MARK}: ", error = console.error.bind(console), log = console.log.bind(console);
  console.error = function () {{ log(mark + Array.prototype.join.call(arguments, " ")); error.apply(null, arguments); }};
}})();</script>"""
CONSOLE_LINE = re.compile(r":CONSOLE[:(]\d*\)?\] (.*)$")


# Errors every Jupyter Book 1 page logs today, from the theme stack rather than the book's content.
# Listed (and printed) rather than failed on, until the configuration removes them; --strict-console
# fails on them too. Each: (pattern, where it comes from).
KNOWN_CONSOLE_ERRORS = [
    (re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),
     "the sphinx-thebe settings script is written twice into every page (thebe itself is not used)"),
    (re.compile(r"Got invalid theme mode: \. Resetting to auto"),
     "pydata-sphinx-theme: no default colour mode set (theme option default_mode)"),
]


def known_console_error(text: str) -> str | None:
    """Where a known theme-stack console error comes from, or None for any other message."""
    for pattern, why in KNOWN_CONSOLE_ERRORS:
        if pattern.search(text):
            return why
    return None


def with_console_probe(html: str) -> str:
    """``html`` with :data:`CONSOLE_PROBE` as the first thing the browser runs."""
    m = re.search(r"<head[^>]*>", html, flags=re.I)
    if m:
        return html[:m.end()] + CONSOLE_PROBE + html[m.end():]
    return CONSOLE_PROBE + html


def console_errors(browser_log: str) -> list[str]:
    """Console errors in Chromium's log: marked by the probe, or Chromium's own "Uncaught ..."."""
    errors = []
    for line in browser_log.splitlines():
        m = CONSOLE_LINE.search(line)
        if not m:
            continue
        text = m.group(1)
        if CONSOLE_MARK in text or text.startswith('"Uncaught'):
            errors.append(text.replace(CONSOLE_MARK + ": ", ""))
    return errors


def missing_local_files(page: Path, resources: list[str]) -> list[str]:
    """Scripts, stylesheets and images the rendered page points at on disk that do not exist."""
    missing = []
    for ref in resources:
        ref = re.sub(r"[?#].*$", "", ref)
        if ref.startswith("file://"):
            path = Path(urllib.parse.unquote(ref[len("file://"):]))
        elif re.match(r"^[a-z][a-z0-9+.-]*:", ref) or ref.startswith("//") or not ref:
            continue  # http(s), data: ...: not a local file
        else:
            path = page.parent / urllib.parse.unquote(ref)
        if not path.exists():
            missing.append(str(path.resolve()))
    return sorted(set(missing))


def check(page: Path, *, widget: bool, min_math: int, screenshot: Path, budget_ms: int, timeout: float,
          explorer: bool = False, strict_console: bool = False) -> list[str]:
    """Problems found on ``page`` (empty list when it renders)."""
    url = page.resolve().as_uri()
    problems = []
    # the same folder, so that relative links resolve; removed at once
    probed = page.with_name(f".{page.stem}.console-check{page.suffix}")
    with tempfile.TemporaryDirectory(prefix="offline-render-") as tmp:
        probed.write_text(with_console_probe(page.read_text(encoding="utf-8")), encoding="utf-8")
        try:
            dom_run = run_browser(probed.resolve().as_uri(), ["--dump-dom"], budget_ms=budget_ms, timeout=timeout,
                                  user_dir=Path(tmp) / "a")
        finally:
            probed.unlink(missing_ok=True)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        shot_run = run_browser(url, [f"--screenshot={screenshot.resolve()}"], budget_ms=budget_ms, timeout=timeout,
                               user_dir=Path(tmp) / "b")
    if dom_run.returncode != 0 or not dom_run.stdout.strip():
        return [f"the browser failed on {page} (exit {dom_run.returncode}): {dom_run.stderr[-2000:]}"]
    scan = _DomScan()
    scan.feed(dom_run.stdout)
    print(f"{page}: {scan.math} typeset math elements (mjx-container), {scan.widgets} rendered widget elements"
          + (f" ({', '.join(sorted(scan.widget_classes)[:6])})" if scan.widgets else "")
          + f", {len(scan.explorers)} precomputed-frames explorers"
          + (f" ({', '.join(str(len(e['frames'])) + ' frames' for e in scan.explorers)})" if scan.explorers else ""))
    if scan.math < min_math:
        problems.append(f"{page}: expected at least {min_math} typeset math elements (mjx-container), found "
                        f"{scan.math}: MathJax did not load or run offline (check mathjax_path and book/_vendor)")
    if widget and scan.widgets == 0:
        problems.append(f"{page}: no rendered widget element (class jupyter-widgets / widget-*): the embed script or "
                        "require.js did not load offline, or the page saved no widget state")
    if explorer:
        problems += explorer_problems(page, scan.explorers)
    errors = [e.replace(probed.name, page.name) for e in console_errors(dom_run.stderr)]
    known = [(e, known_console_error(e)) for e in errors if known_console_error(e) and not strict_console]
    print(f"{page}: {len(errors)} console errors ({len(known)} known from the theme stack, not failed on)")
    for e, why in known:
        print(f"  known console error: {e} [{why}]")
    for e in errors:
        if strict_console or not known_console_error(e):
            problems.append(f"{page}: console error: {e}")
    for path in missing_local_files(page, scan.resources):
        problems.append(f"{page}: requested a local file that does not exist: {path}")
    if shot_run.returncode != 0 or not screenshot.exists():
        problems.append(f"{page}: no screenshot written (exit {shot_run.returncode})")
    else:
        print(f"screenshot: {screenshot}")
    return problems


def explorer_problems(page: Path, explorers: list[dict]) -> list[str]:
    """What is wrong with the precomputed-frames explorers found in the rendered DOM."""
    if not explorers:
        return [f"{page}: no precomputed-frames explorer (class ncbook-seli-explorer) on the page"]
    problems = []
    for i, ex in enumerate(explorers, 1):
        name = f"{page}: explorer {i}"
        if len(ex["frames"]) < 2:
            problems.append(f"{name}: {len(ex['frames'])} frames: its sliders could change nothing")
        if len(set(ex["frames"])) != len(ex["frames"]):
            problems.append(f"{name}: two frames share slider positions")
        if not ex["ready"]:
            problems.append(f"{name}: its script did not run (no data-ready): the sliders stay hidden")
        if len(ex["visible"]) != 1:
            problems.append(f"{name}: {len(ex['visible'])} frames visible, expected exactly one")
        elif ex["ready"] and ex["visible"][0] != ex["shown"]:
            problems.append(f"{name}: shows frame {ex['visible'][0]} but its sliders select {ex['shown']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="a built HTML page, e.g. _build/html/book/nc_primer.html")
    parser.add_argument("--widget", action="store_true", help="also require a rendered ipywidgets widget")
    parser.add_argument("--explorer", action="store_true",
                        help="also require a working precomputed-frames explorer (plotting.seli_widget)")
    parser.add_argument("--strict-console", action="store_true",
                        help="fail on the known theme-stack console errors too (KNOWN_CONSOLE_ERRORS)")
    parser.add_argument("--min-math", type=int, default=1, help="least number of typeset math elements (default 1)")
    parser.add_argument("--screenshot", type=Path, default=None,
                        help="PNG to write (default: _build/screenshots/<page stem>.png)")
    parser.add_argument("--budget-ms", type=int, default=15000, help="virtual time the page's scripts get")
    parser.add_argument("--timeout", type=float, default=180, help="seconds before the browser is killed")
    args = parser.parse_args(argv)
    if not args.page.exists():
        print(f"{args.page} does not exist: build the book first (jupyter-book build .)", file=sys.stderr)
        return 1
    screenshot = args.screenshot or ROOT / "_build" / "screenshots" / f"{args.page.stem}.png"
    problems = check(args.page, widget=args.widget, explorer=args.explorer, strict_console=args.strict_console,
                     min_math=args.min_math, screenshot=screenshot,
                     budget_ms=args.budget_ms, timeout=args.timeout)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
