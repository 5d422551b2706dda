"""The SELI widget: its cell never blocks the notebook client, and every slider it shows is real.

``pytest tests/test_seli_widget.py -k widget``. The execution test runs the chapter's widget cell
ten times in one kernel through the call the book build makes (myst-nb -> jupyter-cache's
``single_nb_execution`` -> ``nbclient.execute``), with only the cells it needs before it.

The stall it guards against (ipywidgets ``interactive`` + ``plt.show()``): output captured into an
``Output`` widget makes nbclient's Output mimic send ``comm_msg`` updates on the shell channel while
it is waiting on that channel for the ``execute_reply``; now and then the wake-up for the reply is
lost and the reply sits unread until the cell timeout, after which the client finds it and goes on
as if nothing happened. So a stall costs exactly one cell timeout and raises no error: the test
measures, per cell, the gap between the kernel's reply and the next request.
"""

from __future__ import annotations

import base64
import os
import re
import time
from datetime import datetime
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pytest
from jupyter_cache.executors.utils import single_nb_execution

from ncbook import plotting

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "seli.md"
RUNS = 10
CELL_TIMEOUT = 120   # a stall lasts this long; normal widget cells take seconds
MAX_GAP = 30         # seconds between a cell's reply and the next request (normally milliseconds)


def _chapter_cells():
    """(cells the widget needs: parameters + imports, the widget cell) from the chapter source."""
    cells = [c for c in jupytext.read(CHAPTER).cells if c.cell_type == "code"]
    params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    imports = [c for c in cells if "from ncbook import" in c.source and "plotting" in c.source]
    widget = [c for c in cells if "seli_widget(" in c.source]
    assert len(params) == 1 and imports and len(widget) == 1, "the SELI chapter's widget cell or its setup moved"
    return [params[0], imports[0]], widget[0]


def _ts(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_widget_cell_executes_ten_times_without_blocking_the_client():
    setup, widget = _chapter_cells()
    nb = nbformat.v4.new_notebook(metadata=jupytext.read(CHAPTER).metadata)
    nb.cells = [nbformat.v4.new_code_cell(c.source) for c in setup]
    nb.cells += [nbformat.v4.new_code_cell(widget.source) for _ in range(RUNS)]
    nb.cells.append(nbformat.v4.new_code_cell("'done'"))
    env_before = os.environ.get("NCBOOK_PROFILE")
    os.environ["NCBOOK_PROFILE"] = "quick"
    start = time.perf_counter()
    try:
        result = single_nb_execution(nb, cwd=str(CHAPTER.parent), timeout=CELL_TIMEOUT, allow_errors=False,
                                     record_timing=True)
    finally:
        if env_before is None:
            os.environ.pop("NCBOOK_PROFILE", None)
        else:
            os.environ["NCBOOK_PROFILE"] = env_before
    elapsed = time.perf_counter() - start
    assert result.err is None, f"executing the widget cell failed:\n{result.exc_string}"

    runs = nb.cells[len(setup):len(setup) + RUNS]
    for i, (cell, nxt) in enumerate(zip(runs, nb.cells[len(setup) + 1:])):
        timing = cell.metadata["execution"]
        took = _ts(timing["shell.execute_reply"]) - _ts(timing["iopub.execute_input"])
        gap = _ts(nxt.metadata["execution"]["iopub.execute_input"]) - _ts(timing["shell.execute_reply"])
        assert took < CELL_TIMEOUT / 2, f"widget run {i + 1}: the cell itself took {took:.1f} s"
        assert gap < MAX_GAP, (f"widget run {i + 1}: the client picked up the kernel's reply {gap:.1f} s late "
                               f"(the cell timeout is {CELL_TIMEOUT} s): the notebook client blocked")
        bundle = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
        assert len(bundle) == 1, f"widget run {i + 1}: expected one output, got {[o.output_type for o in cell.outputs]}"
        data = bundle[0]["data"]
        assert {"image/png", "text/html"} <= set(data), sorted(data)
        assert "application/vnd.jupyter.widget-view+json" in data, "a kernel ran: the live widget must be offered"
    assert nb.cells[-1].outputs[0]["data"]["text/plain"] == "'done'"
    print(f"{RUNS} widget cells (plus setup and kernel start) in {elapsed:.1f} s")


def test_book_never_renders_a_live_widget_view():
    """The HTML build must pick the precomputed frames, not the ipywidgets view (live only).

    myst-nb selects output forms in a Sphinx post-transform from the global
    ``nb_mime_priority_overrides`` (a notebook's own ``mystnb`` metadata is not read there).
    """
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    overrides = [list(o) for o in config.get("nb_mime_priority_overrides", [])]
    assert ["*", "application/vnd.jupyter.widget-view+json", None] in overrides


@pytest.fixture(scope="module")
def small_widget():
    return plotting.seli_widget(10.0, 0.5, 4, ratios=(1.0, 10.0, 100.0), minority_fractions=(0.25, 0.75), dpi=30)


def test_widget_static_frames_are_the_explorer_at_each_grid_point(small_widget):
    frames = small_widget.frames()
    assert sorted(frames) == [(r, f) for r in (1.0, 10.0, 100.0) for f in (0.25, 0.75)]
    # a slider position shows a different figure: every state is distinct
    assert len(set(frames.values())) == len(frames)
    # ... and it is the figure the explorer draws for those values (not a relabelled default)
    import matplotlib.pyplot as plt
    import io
    fig = plotting.seli_explorer(100.0, 0.75, 4)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=30)
    plt.close(fig)
    assert frames[(100.0, 0.75)] == buf.getvalue()


def test_widget_html_shows_one_frame_and_no_slider_without_javascript(small_widget):
    html = small_widget.to_html()
    imgs = re.findall(r"<img [^>]*>", html)
    assert len(imgs) == 6
    visible = [i for i in imgs if " hidden" not in i]
    assert len(visible) == 1 and 'data-r="1"' in visible[0]           # the initial R = 10 (index 1)
    assert re.search(r'class="ncbook-seli-controls" hidden', html)    # sliders appear only when the script runs
    shown = base64.b64decode(re.search(r'base64,([^"]+)"', visible[0]).group(1))
    assert shown == small_widget.png(10.0, 0.25) or shown == small_widget.png(10.0, 0.75)
    assert "$" not in html and "\\(" not in html                      # nothing for MathJax to touch


def test_widget_live_sliders_redraw_the_figure(small_widget):
    pytest.importorskip("ipywidgets")
    box = small_widget.live()
    sliders, out = box.children[0].children, box.children[1]
    png = lambda: base64.b64decode(out.outputs[-1]["data"]["image/png"]) if isinstance(
        out.outputs[-1]["data"]["image/png"], str) else out.outputs[-1]["data"]["image/png"]
    assert len(out.outputs) == 1 and png() == small_widget.png(10.0, 0.5)
    sliders[0].value = 10 ** 1.5
    assert len(out.outputs) == 1, "each redraw replaces the figure"
    assert png() == small_widget.png(float(sliders[0].value), 0.5) != small_widget.png(10.0, 0.5)
    sliders[2].value = 6
    assert png() == small_widget.png(float(sliders[0].value), 0.5, 6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ratio=0.5), "ratio"),
    (dict(minority_fraction=1.5), "minority_fraction"),
    (dict(ratios=()), "ratios"),
    (dict(dpi=0), "dpi"),
])
def test_widget_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.seli_widget(**kwargs)


def test_widget_grid_is_log_spaced_in_half_decades():
    assert np.allclose(np.diff(np.log10(plotting._seli.WIDGET_RATIOS)), 0.5)
