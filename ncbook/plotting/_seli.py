"""Figures of the SELI chapter: norm bars, closed forms against ``R``, the SELI explorer.

Letters: ``C`` classes, ``R`` the STEP imbalance ratio, ``k_min`` minority classes.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .._validation import check_positive
from ..geometry import cosine_matrix, etf_gram, seli_geometry, seli_step_closed_form, seli_step_limits
from ._core import gram_heatmap, new_axes

__all__ = ["seli_norm_bars", "seli_closed_form_figure", "curves", "seli_explorer", "seli_widget", "step_counts"]


def step_counts(ratio: float, minority_fraction: float, num_classes: int, n_min: int = 1) -> np.ndarray:
    """STEP counts: ``C - k`` majorities (``k = floor(minority_fraction C + 1/2)`` clipped to ``[1, C - 1]``) of ``round(R n_min)``, then minorities of ``n_min``.

    At least one class of each kind is kept. Raises ``ValueError`` for ``ratio < 1``,
    ``minority_fraction`` outside ``(0, 1)`` or ``num_classes < 2``.
    """
    ratio = check_positive("ratio", ratio)
    if ratio < 1:
        raise ValueError(f"ratio must be >= 1; got {ratio!r}.")
    if not 0 < float(minority_fraction) < 1:
        raise ValueError(f"minority_fraction must lie in (0, 1); got {minority_fraction!r}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2; got {num_classes!r}.")
    k_min = int(np.clip(np.floor(minority_fraction * num_classes + 0.5), 1, num_classes - 1))  # as data.long_tailed_counts, clipped for sliders
    k_maj = num_classes - k_min
    return np.array([max(int(round(ratio * n_min)), 1)] * k_maj + [n_min] * k_min)


def seli_norm_bars(classifiers, means, ax=None, *, counts=None, title: str | None = None):
    """Side-by-side bars of classifier and class-mean norms per class, each divided by its largest.

    Parameters
    ----------
    classifiers, means : array-like of shape (C, d)
    ax : Axes, optional
    counts : array-like of shape (C,), optional
        Shown as tick labels ``c (n_c)``.
    """
    w = np.linalg.norm(np.asarray(classifiers, dtype=float), axis=1)
    h = np.linalg.norm(np.asarray(means, dtype=float), axis=1)
    ax = new_axes(ax)
    x = np.arange(w.size)
    ax.bar(x - 0.2, w / w.max(), width=0.4, label=r"$\|w_c\|$")
    ax.bar(x + 0.2, h / h.max(), width=0.4, label=r"$\|h_c\|$")
    ax.set_xticks(x)
    if counts is not None:
        ax.set_xticklabels([f"{i}\n({int(n)})" for i, n in enumerate(counts)], fontsize=9)
    ax.set_xlabel("class (count)" if counts is not None else "class")
    ax.set_ylabel("norm / largest")
    ax.set_ylim(0, 1.35)
    ax.legend(fontsize=9, loc="upper center", ncol=2)
    if title:
        ax.set_title(title)
    return ax


def curves(x, ys: Mapping[str, Sequence[float]], ax=None, *, logx: bool = False, logy: bool = False,
           hlines: Mapping[str, float] | None = None, xlabel: str | None = None, ylabel: str | None = None,
           title: str | None = None, styles: Mapping[str, str] | None = None):
    """Several labelled curves over a shared ``x``, with optional dashed horizontal asymptotes."""
    ax = new_axes(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, y) in enumerate(ys.items()):
        ax.plot(x, y, (styles or {}).get(label, "-"), color=colors[i % len(colors)], label=label)
        if hlines and label in hlines and np.isfinite(hlines[label]):
            ax.axhline(hlines[label], color=colors[i % len(colors)], ls="--", lw=0.8)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=9)
    return ax


def seli_closed_form_figure(ratios, class_numbers: Sequence[int] = (4, 10, 20), minority_fraction: float = 0.5):
    """Closed-form SELI quantities against ``R`` (log axis) for several ``C``, with large-``R`` limits.

    Three panels: classifier norm ratio ``||w_min|| / ||w_maj||`` (dashed: its limit),
    cosine between two minority classifiers (dashed: 1), and the embedding norm ratio
    divided by ``R^{1/4}`` (dashed: the limiting constant). Returns the Figure.
    """
    ratios = np.asarray(ratios, dtype=float)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained")
    panels = [("w_norm_ratio", r"$\|w_{min}\| / \|w_{maj}\|$", "w_norm_ratio"),
              ("w_cos_min_min", r"$\cos(w_{min}, w_{min}')$", "w_cos_min_min"),
              ("h_norm_ratio", r"$\|h_{min}\| / \|h_{maj}\|$ $/ R^{1/4}$", "h_norm_ratio_rate")]
    for ax, (key, ylabel, limit_key) in zip(axes, panels):
        ys, lines = {}, {}
        for c in class_numbers:
            k_min = int(np.clip(np.floor(minority_fraction * c + 0.5), 1, c - 1))
            vals = np.array([seli_step_closed_form(r, c - k_min, k_min)[key] for r in ratios])
            if key == "h_norm_ratio":
                vals = vals / ratios ** 0.25
            ys[f"C = {c}"] = vals
            lines[f"C = {c}"] = seli_step_limits(c - k_min, k_min)[limit_key]
        curves(ratios, ys, ax, logx=True, hlines=lines, xlabel="R", ylabel=ylabel)
    fig.suptitle(f"SELI under STEP imbalance (minority fraction {minority_fraction:g}); dashed: R -> inf", fontsize=10)
    return fig


def seli_explorer(ratio: float = 10.0, minority_fraction: float = 0.5, num_classes: int = 4):
    """The SELI geometry of STEP counts, drawn as one static Figure.

    Panels: cosines of the SELI classifiers, cosines of the SELI class means, the
    simplex-ETF cosines for reference, and the norm bars. Works as a plain call (the
    built book shows the returned Figure) and as the function behind :func:`seli_widget`.

    Parameters
    ----------
    ratio : float
        ``R >= 1``.
    minority_fraction : float
        Share of classes that are minorities, in ``(0, 1)``.
    num_classes : int
        ``C >= 2``.

    Returns
    -------
    matplotlib Figure
    """
    counts = step_counts(ratio, minority_fraction, num_classes, n_min=1)
    geo = seli_geometry(counts)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4), layout="constrained")
    gram_heatmap(cosine_matrix(geo.classifiers), axes[0], title="SELI classifiers (cosine)")
    gram_heatmap(cosine_matrix(geo.means), axes[1], title="SELI class means (cosine)")
    gram_heatmap(etf_gram(counts.size), axes[2], title="simplex ETF (cosine)")
    seli_norm_bars(geo.classifiers, geo.means, axes[3], counts=counts, title="norms")
    fig.suptitle(f"R = {ratio:g}, minority fraction = {minority_fraction:g}, C = {counts.size}", fontsize=10)
    return fig


def seli_widget(ratio: float = 10.0, minority_fraction: float = 0.5, num_classes: int = 4):
    """Sliders for ``R`` (log scale), minority fraction and ``C`` that redraw :func:`seli_explorer`.

    Returns
    -------
    ipywidgets.interactive
        Display it in a notebook; the static figure of its initial values is
        ``seli_explorer(ratio, minority_fraction, num_classes)``.

    Raises
    ------
    ImportError
        If ipywidgets is not installed (``pip install ipywidgets``); call
        :func:`seli_explorer` for a static figure instead.
    """
    import ipywidgets as widgets

    def _draw(ratio, minority_fraction, num_classes):
        seli_explorer(ratio, minority_fraction, num_classes)
        plt.show()

    return widgets.interactive(
        _draw,
        ratio=widgets.FloatLogSlider(value=ratio, base=10, min=0, max=3, step=0.05, description="R"),
        minority_fraction=widgets.FloatSlider(value=minority_fraction, min=0.05, max=0.95, step=0.05,
                                              description="minority fraction"),
        num_classes=widgets.IntSlider(value=num_classes, min=2, max=12, description="C"),
    )
