"""ncbook.plotting's style: figures the book can show at 100 % zoom: at most MAX_FIGURE_WIDTH wide, and no
text shown under 9 px on a 1280-px-wide window (shown_text_px, with the widths measured in the built page)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from ncbook import plotting  # noqa: E402
from ncbook.plotting import _core  # noqa: E402

TEXT_SIZES = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
              "legend.fontsize", "legend.title_fontsize", "figure.titlesize")


def test_text_sizes_of_the_style_are_at_least_the_smallest_size():
    sizes = {k: matplotlib.font_manager.FontProperties(size=plt.rcParams[k]).get_size_in_points() for k in TEXT_SIZES}
    assert min(sizes.values()) >= _core.LEGEND_FONTSIZE, sizes
    assert plt.rcParams["figure.dpi"] == _core.FIGURE_DPI


def test_the_widest_figure_shows_its_smallest_text_at_9_px_or_more():
    assert _core.shown_text_px(_core.LEGEND_FONTSIZE, plotting.MAX_FIGURE_WIDTH) >= 9.0
    # the scale before the stylesheet (a 1100-px figure in the 676-px column): what the issue saw
    assert _core.shown_text_px(9, 11, shown_width_px=676) < 9.0
    assert _core.shown_text_px(_core.LEGEND_FONTSIZE, 4.0) == pytest.approx(_core.LEGEND_FONTSIZE * 100 / 72)


FIGURES = {
    "gram_panels (6 panels)": lambda: plotting.gram_panels([np.eye(3) - 1 / 3] * 6, [f"G{i}" for i in range(6)]),
    "seli_explorer": lambda: plotting.seli_explorer(10.0, 0.5, 4),
    "seli_closed_form_figure": lambda: plotting.seli_closed_form_figure([1.0, 10.0, 100.0], class_numbers=(4,)),
    "course_map": lambda: plotting.course_map(
        [dict(key=k, title=f"{i + 1}  {k}", note="a note", pos=(5.6 * (i % 3), 3.0 * (i // 3))) for i, k in enumerate("abcd")],
        [("a", "b", "hands on\nthe ETF"), ("b", "c", "x")], [("d", "a", "a cross-link")]).figure,
}


@pytest.mark.parametrize("name", FIGURES)
def test_the_package_figures_fit_and_their_text_is_readable(name):
    fig = FIGURES[name]()
    fig = getattr(fig, "figure", fig)
    try:
        fig.canvas.draw()
        width = fig.get_size_inches()[0]
        assert width <= plotting.MAX_FIGURE_WIDTH + 1e-9, f"{name}: {width} in wide"
        sizes = {t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()}
        shown = min(_core.shown_text_px(size, width) for size in sizes)
        assert shown >= 9.0, f"{name}: its smallest text ({min(sizes)} pt) is shown at {shown:.1f} px"
    finally:
        plt.close(fig)
