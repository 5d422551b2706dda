"""Figures of the contrastive-imbalance chapter: class means on the circle, collapse curves."""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ._core import LEGEND_FONTSIZE, _np, new_axes

__all__ = ["class_means_circle", "collapse_curves"]


def class_means_circle(means, ax=None, *, class_probs=None, labels: Sequence[str] | None = None,
                       title: str | None = None):
    """Unit-norm class means in 2-D (e.g. ``C = 3``) on the unit circle, joined as a polygon.

    Parameters
    ----------
    means : array-like of shape (C, 2)
    class_probs : array-like of shape (C,), optional
        Marker areas scale with the class probabilities.
    labels : sequence of str, optional
    title : str, optional

    Returns
    -------
    Axes
    """
    m = _np(means)
    if m.ndim != 2 or m.shape[1] != 2:
        raise ValueError(f"means must have shape (C, 2); got {m.shape}. Use class_means_from_gram(gram, dim=2).")
    ax = new_axes(ax, figsize=(3.6, 3.6))
    th = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(th), np.sin(th), color="0.8", lw=1)
    poly = np.vstack([m, m[:1]])
    ax.plot(poly[:, 0], poly[:, 1], color="0.4", lw=1)
    sizes = 60 if class_probs is None else 60 + 900 * _np(class_probs)
    ax.scatter(m[:, 0], m[:, 1], s=sizes, c=[f"C{i}" for i in range(len(m))], zorder=3)
    names = labels if labels is not None else [f"class {i}" for i in range(len(m))]
    for (px, py), name in zip(m, names):
        ax.annotate(name, (px, py), textcoords="offset points", xytext=(8, 6), fontsize=LEGEND_FONTSIZE)
    ax.set_aspect("equal")
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.35, 1.35)
    if title:
        ax.set_title(title)
    return ax


def collapse_curves(x, curves: Mapping[str, Sequence[float]], ax=None, *, hlines: Mapping[str, float] | None = None,
                    vlines: Mapping[str, float] | None = None, xlabel: str = "k", ylabel: str = "collapse point",
                    logx: bool = False, title: str | None = None, markers: bool = True):
    """Curves against ``x`` with labelled horizontal (e.g. the paper's thresholds) and vertical lines.

    Parameters
    ----------
    x : array-like of shape (n,)
    curves : mapping label -> array-like of shape (n,)
    hlines, vlines : mapping label -> float, optional
        Dashed reference lines.
    xlabel, ylabel, title : str
    logx : bool

    Returns
    -------
    Axes
    """
    ax = new_axes(ax, figsize=(5.2, 3.6))
    xs = _np(x)
    for i, (name, ys) in enumerate(curves.items()):
        ax.plot(xs, _np(ys), marker="o" if markers else None, ms=3, color=f"C{i}", label=name)
    offset = len(curves)
    for i, (name, v) in enumerate((hlines or {}).items()):
        ax.axhline(v, ls="--", color=f"C{offset + i}", lw=1.2, label=name)
    offset += len(hlines or {})
    for i, (name, v) in enumerate((vlines or {}).items()):
        ax.axvline(v, ls=":", color=f"C{offset + i}", lw=1.2, label=name)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=LEGEND_FONTSIZE)
    return ax
