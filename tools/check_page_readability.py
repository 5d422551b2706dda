#!/usr/bin/env python3
"""Measure a built HTML page in headless Chromium: figure sizes as shown, wrapped code, raw reST.

For one page of a built book (``_build/html/<page>.html``) this loads the page in headless Chromium at a
given window width and reports:

* each cell-output image: its own width and the width it is shown at, and the size its smallest text
  is shown at (``ncbook.plotting.LEGEND_FONTSIZE`` points at ``FIGURE_DPI``, scaled as shown): at least
  9 px reads at 100 % zoom;
* whether code blocks wrap long lines (``white-space: pre-wrap``) rather than cut them off;
* raw reStructuredText in the page's text (``:math:``, double backticks): a docstring printed as written.

Usage::

    python3 tools/check_page_readability.py _build/html/book/nc_primer.html [--width 1280] [--screenshot out.png]

Exit status 1 when a figure's smallest text is shown under 9 px, a code block does not wrap, or raw
reST is found; 2 when Chromium is missing. Build one page or a tiny book for it, not the whole book.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

MIN_PX = 9.0
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=10000",
                  "--allow-file-access-from-files"]
PROBE = """<script>
window.addEventListener('load', function () { setTimeout(function () {
  var article = document.querySelector('article.bd-article') || document.body;
  var images = Array.from(document.querySelectorAll('div.cell_output img')).map(function (img) {
    return {natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
            wide: img.closest('div.cell_output').classList.contains('ncbook-wide-output')}; });
  var pre = Array.from(document.querySelectorAll('div.highlight pre')).map(function (p) {
    return getComputedStyle(p).whiteSpace; });
  var text = article.innerText;
  var el = document.createElement('pre'); el.id = 'ncbook-probe';
  el.textContent = JSON.stringify({column: article.getBoundingClientRect().width, images: images, pre: pre,
    raw_math: (text.match(/:math:`/g) || []).length, raw_literals: (text.match(/``[^`\\n]+``/g) || []).length});
  document.body.appendChild(el); }, 500); });
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def probe(page: Path, width: int) -> dict:
    """What the page shows at a window ``width`` px wide (see the module docstring)."""
    page = page.resolve()
    probed = page.with_name(f"_probe_{page.name}")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        dom = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--window-size={width},2000", "--dump-dom",
                              probed.as_uri()], capture_output=True, text=True, timeout=180).stdout
    finally:
        probed.unlink()
    m = re.search(r'<pre id="ncbook-probe">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError("the page did not report (did it load? is it a page of the book?)")
    return json.loads(html.unescape(m.group(1)))


def smallest_text_px(natural: float, shown: float) -> float:
    """The smallest text of a figure as shown: ncbook.plotting's smallest size at its resolution, scaled."""
    from ncbook.plotting._core import FIGURE_DPI, LEGEND_FONTSIZE

    return LEGEND_FONTSIZE * FIGURE_DPI / 72 * (shown / natural if natural else 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="a built HTML page")
    parser.add_argument("--width", type=int, default=1280, help="window width in px (default 1280)")
    parser.add_argument("--screenshot", type=Path, help="also save a screenshot of the page here")
    args = parser.parse_args(argv)
    if chromium() is None:
        print("no chromium on this machine (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    report = probe(args.page, args.width)
    bad = []
    print(f"{args.page} at {args.width} px: text column {report['column']:.0f} px")
    for i, img in enumerate(report["images"]):
        px = smallest_text_px(img["natural"], img["shown"])
        flag = "" if px >= MIN_PX else "  <- under 9 px"
        bad += [f"figure {i}"] if flag else []
        print(f"  figure {i}: {img['natural']} px shown at {img['shown']:.0f} px "
              f"({'beside the column' if img['wide'] else 'in the column'}), smallest text {px:.1f} px{flag}")
    unwrapped = sum(1 for w in report["pre"] if w not in ("pre-wrap", "break-spaces"))
    print(f"  code blocks: {len(report['pre'])}, not wrapping: {unwrapped}")
    print(f"  raw reST in the text: {report['raw_math']} :math:, {report['raw_literals']} double-backtick literals")
    bad += ["code that does not wrap"] * bool(unwrapped) + ["raw reST"] * bool(report["raw_math"] + report["raw_literals"])
    if args.screenshot:
        subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--window-size={args.width},3000",
                        f"--screenshot={args.screenshot.resolve()}", args.page.resolve().as_uri()],
                       capture_output=True, timeout=180)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
