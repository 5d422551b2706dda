"""Core figures: Gram heatmaps, metric curves, per-class bars, 2-D geometry.

Every function draws on ``ax`` when given (else a new figure) and returns the Axes
(or the Figure for multi-panel plots), so chapters can compose and test them.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

#: colour-blind-safe qualitative palette (Paul Tol's "muted" scheme, then dark grey): one colour per
#: method, distinct for up to 10 methods in one chart
PALETTE = ("#332288", "#CC6677", "#117733", "#DDCC77", "#88CCEE", "#882255", "#44AA99", "#999933",
           "#AA4499", "#555555")
#: hatches that tell methods apart beyond len(PALETTE)
HATCHES = ("", "//", "..", "xx")
#: smallest legend and annotation font size, in points (the smallest text of a figure)
LEGEND_FONTSIZE = 9.5
#: tick label size, in points
TICK_FONTSIZE = 10
#: resolution of the figures, in dots per inch (the notebooks' and the book's PNGs)
FIGURE_DPI = 100
#: widest figure the book draws, in inches: 1200 px at :data:`FIGURE_DPI`. On a 1280-px-wide window the
#: book's text column is 676 px and a wider figure may use 136 % of it (919 px, ``book/_ext/static/ncbook.css``),
#: so a figure this wide is shown at 0.77 of its size and its smallest text (:data:`LEGEND_FONTSIZE`) at 10 px
MAX_FIGURE_WIDTH = 12.0
#: width the book's wide figures are shown at, in pixels, on a 1280-px-wide window (measured in headless
#: Chromium, sphinx-book-theme 1.3 with book/_ext/static/ncbook.css)
SHOWN_WIDTH_PX = 919


def method_colors(n: int) -> list[str]:
    """``n`` colours from :data:`PALETTE` (cycled beyond 10; pair with :data:`HATCHES` there)."""
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def legend_outside(ax, **kwargs):
    """A legend to the right of ``ax``, outside the data area, at :data:`LEGEND_FONTSIZE`."""
    kwargs.setdefault("fontsize", LEGEND_FONTSIZE)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False, **kwargs)


def shown_text_px(points: float, width: float, *, shown_width_px: float = SHOWN_WIDTH_PX,
                  dpi: float = FIGURE_DPI) -> float:
    """Height in screen pixels of text of ``points`` in a figure ``width`` inches wide, as the book shows it.

    The figure's PNG is ``width * dpi`` pixels wide; the page shows it at that size, or scaled down to
    ``shown_width_px`` when wider.

    Examples
    --------
    >>> round(shown_text_px(LEGEND_FONTSIZE, MAX_FIGURE_WIDTH), 1)   # the smallest text of the widest figure
    10.1
    >>> round(shown_text_px(9, 11, shown_width_px=676), 1)           # the primer's figure in the bare column
    7.7
    """
    natural = width * dpi
    return points * dpi / 72 * min(1.0, shown_width_px / natural)


def _apply_style() -> None:
    """Readable defaults for every figure of the book: the palette above, and text sizes that stay at
    least 9 px on the page for figures up to :data:`MAX_FIGURE_WIDTH` wide (:func:`shown_text_px`)."""
    from cycler import cycler

    plt.rcParams.update({"legend.fontsize": LEGEND_FONTSIZE, "legend.title_fontsize": LEGEND_FONTSIZE,
                         "axes.prop_cycle": cycler(color=list(PALETTE)), "font.size": 10.5,
                         "axes.titlesize": 11, "axes.labelsize": 10.5, "figure.titlesize": 11,
                         "xtick.labelsize": TICK_FONTSIZE, "ytick.labelsize": TICK_FONTSIZE,
                         "figure.dpi": FIGURE_DPI, "savefig.dpi": "figure"})


_apply_style()

__all__ = ["gram_heatmap", "gram_panels", "metric_curves", "per_class_bars", "geometry_2d", "new_axes", "shown_text_px",
           "MAX_FIGURE_WIDTH"]


def new_axes(ax=None, figsize=(4.5, 3.6)):
    """Return ``ax`` or a fresh Axes on a new figure."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _np(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def gram_heatmap(g, ax=None, *, title: str | None = None, vmin: float = -1.0, vmax: float = 1.0,
                 labels: Sequence[str] | None = None, annotate: bool | None = None, cmap: str = "RdBu_r"):
    """Heatmap of a (C, C) Gram or cosine matrix, annotated when C <= 10."""
    g = _np(g)
    ax = new_axes(ax)
    im = ax.imshow(g, cmap=cmap, vmin=vmin, vmax=vmax)
    c = g.shape[0]
    if annotate or (annotate is None and c <= 10):
        for i in range(c):
            for j in range(c):
                ax.text(j, i, f"{g[i, j]:.2f}", ha="center", va="center", fontsize=LEGEND_FONTSIZE,
                        color="white" if abs(g[i, j]) > 0.6 * max(abs(vmin), abs(vmax)) else "black")
    ticks = range(c) if c <= 20 else []
    ax.set_xticks(list(ticks))
    ax.set_yticks(list(ticks))
    if labels is not None:
        ax.set_xticklabels(labels, rotation=90)
        ax.set_yticklabels(labels)
    if title:
        ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    return ax


def gram_panels(grams: Sequence, titles: Sequence[str], *, vmin: float = -1.0, vmax: float = 1.0, size: float = 3.4):
    """Side-by-side heatmaps of several Gram matrices, ``size`` inches a panel (less when the figure would
    be wider than :data:`MAX_FIGURE_WIDTH`); returns the Figure."""
    size = min(size, MAX_FIGURE_WIDTH / max(len(grams), 1))
    fig, axes = plt.subplots(1, len(grams), figsize=(size * len(grams), size * 0.85), layout="constrained")
    for ax, g, t in zip(np.atleast_1d(axes), grams, titles):
        gram_heatmap(g, ax, title=t, vmin=vmin, vmax=vmax)
    return fig


def metric_curves(history, keys: Sequence[str], ax=None, *, x: str = "epoch", logy: bool = True,
                  labels: Sequence[str] | None = None, title: str | None = None, xlabel: str | None = None):
    """Curves of ``history[key]`` against ``history[x]`` (a :class:`ncbook.train.History` or a dict of lists).

    Epochs where a key is missing (``None``) are skipped.
    """
    ax = new_axes(ax)
    xs_all = list(history[x])
    for i, key in enumerate(keys):
        pairs = [(a, b) for a, b in zip(xs_all, history[key]) if b is not None]
        if not pairs:
            continue
        xs, ys = zip(*pairs)
        ax.plot(xs, ys, label=labels[i] if labels else key)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel or x)
    ax.legend(fontsize=LEGEND_FONTSIZE)
    if title:
        ax.set_title(title)
    return ax


def per_class_bars(values, ax=None, *, labels: Sequence[str] | None = None, title: str | None = None,
                   ylabel: str | None = None, color=None):
    """Bar chart of one value per class (accuracy, norm, loss)."""
    v = _np(values)
    ax = new_axes(ax)
    ax.bar(np.arange(len(v)), v, color=color)
    ax.set_xticks(np.arange(len(v)))
    if labels is not None:
        ax.set_xticklabels(labels)
    ax.set_xlabel("class")
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def geometry_2d(points, ax=None, *, labels: Sequence[str] | None = None, arrows: bool = True, title: str | None = None,
                others=None, other_label: str | None = None):
    """Rows of a (C, 2) array as arrows from the origin (class means or classifiers).

    Higher-dimensional inputs are projected on their top two principal directions
    (uncentred SVD, so the origin stays the origin). ``others`` draws a second set
    dashed (e.g. classifiers beside class means).
    """
    p = _np(points)
    sets = [p] + ([_np(others)] if others is not None else [])
    if p.shape[1] > 2:
        _, _, vt = np.linalg.svd(np.vstack(sets), full_matrices=False)
        sets = [s @ vt[:2].T for s in sets]
    ax = new_axes(ax, figsize=(4, 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, s in enumerate(sets):
        s = s / np.abs(np.vstack(sets)).max()
        for i, (a, b) in enumerate(s):
            col = colors[i % len(colors)]
            if arrows:
                ax.annotate("", (a, b), (0, 0), arrowprops=dict(arrowstyle="->", color=col, ls="-" if k == 0 else "--"))
            if k == 0:
                ax.text(a * 1.08, b * 1.08, labels[i] if labels else str(i), color=col, ha="center", va="center")
    ax.set_xlim(-1.25, 1.25)
    ax.set_ylim(-1.25, 1.25)
    ax.set_aspect("equal")
    ax.axhline(0, color="0.85", lw=0.5)
    ax.axvline(0, color="0.85", lw=0.5)
    if title:
        ax.set_title(title)
    if other_label and others is not None:
        ax.plot([], [], "k--", label=other_label)
        ax.legend(fontsize=LEGEND_FONTSIZE, loc="lower right")
    return ax
