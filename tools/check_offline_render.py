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

It also saves a screenshot (default ``_build/screenshots/<page>.png``) for people to look at,
and fails if the rendered page points at a local script, stylesheet or image that does not
exist (e.g. a TeX extension MathJax autoloads).

Networking is disabled twice: the browser runs in a fresh network namespace when the
system allows it (``unshare -n``), and in any case with every host name resolving to nothing
and an unreachable proxy. Usage::

    python3 tools/check_offline_render.py _build/html/book/nc_primer.html
    python3 tools/check_offline_render.py _build/html/book/seli.html --widget
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

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "mjx-container":
            self.math += 1
        if tag in ("script", "img") and attrs.get("src"):
            self.resources.append(attrs["src"])
        if tag == "link" and attrs.get("href") and "stylesheet" in (attrs.get("rel") or ""):
            self.resources.append(attrs["href"])
        classes = (attrs.get("class") or "").split()
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


def check(page: Path, *, widget: bool, min_math: int, screenshot: Path, budget_ms: int, timeout: float) -> list[str]:
    """Problems found on ``page`` (empty list when it renders)."""
    url = page.resolve().as_uri()
    problems = []
    with tempfile.TemporaryDirectory(prefix="offline-render-") as tmp:
        dom_run = run_browser(url, ["--dump-dom"], budget_ms=budget_ms, timeout=timeout, user_dir=Path(tmp) / "a")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        shot_run = run_browser(url, [f"--screenshot={screenshot.resolve()}"], budget_ms=budget_ms, timeout=timeout,
                               user_dir=Path(tmp) / "b")
    if dom_run.returncode != 0 or not dom_run.stdout.strip():
        return [f"the browser failed on {page} (exit {dom_run.returncode}): {dom_run.stderr[-2000:]}"]
    scan = _DomScan()
    scan.feed(dom_run.stdout)
    print(f"{page}: {scan.math} typeset math elements (mjx-container), {scan.widgets} rendered widget elements"
          + (f" ({', '.join(sorted(scan.widget_classes)[:6])})" if scan.widgets else ""))
    if scan.math < min_math:
        problems.append(f"{page}: expected at least {min_math} typeset math elements (mjx-container), found "
                        f"{scan.math}: MathJax did not load or run offline (check mathjax_path and book/_vendor)")
    if widget and scan.widgets == 0:
        problems.append(f"{page}: no rendered widget element (class jupyter-widgets / widget-*): the embed script or "
                        "require.js did not load offline, or the page saved no widget state")
    for path in missing_local_files(page, scan.resources):
        problems.append(f"{page}: requested a local file that does not exist: {path}")
    if shot_run.returncode != 0 or not screenshot.exists():
        problems.append(f"{page}: no screenshot written (exit {shot_run.returncode})")
    else:
        print(f"screenshot: {screenshot}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="a built HTML page, e.g. _build/html/book/nc_primer.html")
    parser.add_argument("--widget", action="store_true", help="also require a rendered ipywidgets widget")
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
    problems = check(args.page, widget=args.widget, min_math=args.min_math, screenshot=screenshot,
                     budget_ms=args.budget_ms, timeout=args.timeout)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
