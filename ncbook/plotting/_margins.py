"""Figures for the MR2 chapter: variability vs accuracy, easy/medium/hard bars."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ._core import LEGEND_FONTSIZE, _np, legend_outside, method_colors, new_axes

__all__ = ["group_accuracy_bars", "variability_scatter"]


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
                        ylim: tuple[float, float] | None = None):
    """Grouped bars: one group of bars per difficulty group, one bar per method.

    Parameters
    ----------
    table : mapping method -> mapping group -> accuracy
        Every method must have the same groups (e.g. easy, medium, hard, all).
    errors : same layout, optional
        Error-bar half widths (e.g. standard deviations over seeds).

    Returns
    -------
    matplotlib Axes
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
    if ylim is not None:
        ax.set_ylim(*ylim)
    legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax
