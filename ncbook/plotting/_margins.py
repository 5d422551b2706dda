"""Figures for the MR2 chapter: variability vs accuracy, easy/medium/hard bars."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ._core import LEGEND_FONTSIZE, _np, legend_outside, method_colors, new_axes

__all__ = ["group_accuracy_bars", "margin_rule_plot", "variability_scatter"]


def variability_scatter(variability, accuracy, ax=None, *, labels: Sequence[str] | None = None,
                        xlabel: str = "per-class feature variability", ylabel: str = "per-class test accuracy",
                        title: str | None = None):
    """Scatter one point per class, annotated with its label, and the Pearson correlation.

    Parameters
    ----------
    variability, accuracy : array-like of shape (C,)
    ax : matplotlib Axes, optional
    labels : sequence of str, optional
        Point labels (default: class indices).

    Returns
    -------
    matplotlib Axes (its title ends with ``r = ...``).
    """
    v, a = _np(variability).ravel(), _np(accuracy).ravel()
    if v.shape != a.shape:
        raise ValueError(f"variability and accuracy must have the same shape; got {v.shape} and {a.shape}.")
    ax = new_axes(ax)
    ax.scatter(v, a, s=30, color="C0")
    names = [str(i) for i in range(v.size)] if labels is None else list(labels)
    for x, y, name in zip(v, a, names):
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=LEGEND_FONTSIZE)
    r = float(np.corrcoef(v, a)[0, 1]) if v.size > 1 else float("nan")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title + ': ' if title else ''}r = {r:.2f}")
    return ax


def group_accuracy_bars(table: Mapping[str, Mapping[str, float]], ax=None, *,
                        errors: Mapping[str, Mapping[str, float]] | None = None, title: str | None = None,
                        ylim: tuple[float, float] | None = None, zoom: bool = False):
    """Grouped bars: one group of bars per difficulty group, one bar per method.

    Parameters
    ----------
    table : mapping method -> mapping group -> accuracy
        Every method must have the same groups (e.g. easy, medium, hard, all).
    errors : same layout, optional
        Error-bar half widths (e.g. standard deviations over seeds).
    ylim : (float, float), optional
        The vertical axis' limits.
    zoom : bool
        Without ``ylim``: start the vertical axis 0.1 below the lowest bar (less its error bar, at least 0)
        and end it 0.02 above the highest error bar (at most 1.05), so that small differences show.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> ax = group_accuracy_bars({"CE": {"easy": 0.9, "hard": 0.7}, "MR2": {"easy": 0.91, "hard": 0.72}}, zoom=True)
    >>> [round(float(v), 2) for v in ax.get_ylim()]
    [0.6, 0.93]
    """
    methods = list(table)
    if not methods:
        raise ValueError("table must hold at least one method.")
    groups = list(table[methods[0]])
    ax = new_axes(ax, figsize=(6.5, 3.6))
    width = 0.8 / len(methods)
    x = np.arange(len(groups))
    colors = method_colors(len(methods))
    for i, m in enumerate(methods):
        vals = [table[m][g] for g in groups]
        err = None if errors is None else [errors[m][g] for g in groups]
        ax.bar(x + (i - (len(methods) - 1) / 2) * width, vals, width, yerr=err, label=m, capsize=2, color=colors[i])
    ax.set_xticks(x, groups)
    ax.set_ylabel("mean per-class accuracy")
    if ylim is None and zoom:
        err = {m: {g: (0.0 if errors is None else float(errors[m][g])) for g in groups} for m in methods}
        low = min(float(table[m][g]) - err[m][g] for m in methods for g in groups)
        high = max(float(table[m][g]) + err[m][g] for m in methods for g in groups)
        ylim = (max(0.0, low - 0.1), min(1.05, high + 0.02))
    if ylim is not None:
        ax.set_ylim(*ylim)
    legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax


def margin_rule_plot(spread, sampled, population, ax=None, *, xlabel: str = r"class spread $\sigma_c$",
                     ylabel: str = r"$\gamma_c$", sampled_label: str = "MR2 margins from samples",
                     population_label: str = r"from $\|\mu\|^2 = 9$ and $\sigma_c^2$", mean_margin: float = 1.0):
    """Margins against a per-class spread: those from sample statistics and those from the population's.

    Parameters
    ----------
    spread : array-like of shape (C,)
        The x-axis, one value per class (e.g. the spread ``sigma_c``).
    sampled, population : array-like of shape (C,)
        Margins from the sample statistics and from the population statistics.
    ax : matplotlib Axes, optional
    mean_margin : float
        Drawn as a grey horizontal line (the margins' mean).

    Returns
    -------
    matplotlib Axes (legend outside the data area).

    Raises
    ------
    ValueError
        If the three arrays do not have the same shape.

    Examples
    --------
    >>> ax = margin_rule_plot([0.5, 1.0, 2.0], [0.8, 1.0, 1.2], [0.81, 0.99, 1.2])
    >>> len(ax.lines), ax.get_legend() is not None
    (3, True)
    """
    x, s, p = _np(spread).ravel(), _np(sampled).ravel(), _np(population).ravel()
    if not (x.shape == s.shape == p.shape):
        raise ValueError(f"spread, sampled and population must have the same shape; got {x.shape}, {s.shape} "
                         f"and {p.shape}.")
    ax = new_axes(ax)
    ax.plot(x, s, "o-", label=sampled_label)
    ax.plot(x, p, "x--", label=population_label)
    ax.axhline(float(mean_margin), color="grey", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    legend_outside(ax)
    return ax
