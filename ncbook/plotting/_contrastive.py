"""Figures of the contrastive-imbalance chapter: class means on the circle, collapse curves, risk profiles.

Letters: ``C`` classes, ``n`` points on a curve's x axis.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ._core import LEGEND_FONTSIZE, _np, legend_outside, new_axes

__all__ = ["class_means_circle", "collapse_curves", "risk_profiles"]


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

    Raises
    ------
    ValueError
        If ``means`` is not of shape (C, 2).

    Examples
    --------
    >>> import numpy as np
    >>> ax = class_means_circle(np.array([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]]), class_probs=[0.6, 0.2, 0.2])
    >>> ax.get_aspect()
    1.0
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
                    logx: bool = False, title: str | None = None, markers: bool = True,
                    points: Mapping[str, tuple] | None = None):
    """Curves against ``x`` with labelled horizontal (e.g. the paper's thresholds) and vertical lines.

    The legend sits to the right of the axes, off the data.

    Parameters
    ----------
    x : array-like of shape (n,)
    curves : mapping label -> array-like of shape (n,)
    hlines, vlines : mapping label -> float, optional
        Dashed reference lines.
    xlabel, ylabel, title : str
    logx : bool
    markers : bool
        Mark each point of the curves.
    points : mapping label -> (xs, ys), optional
        Measurements drawn as large markers without lines (e.g. trained networks beside the optimum's curves);
        a label that is also a curve's takes that curve's colour.

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        If a curve does not have one value per entry of ``x``, or a point set's ``xs`` and ``ys`` differ in length.

    Examples
    --------
    >>> ax = collapse_curves([1, 2, 4], {"UCL": [0.81, 0.84, 0.87]}, hlines={"bound": 0.93})
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['UCL', 'bound']
    >>> ax = collapse_curves([0.5, 0.9], {"UCL": [0.1, 1.0]}, points={"UCL": ([0.9], [0.98])})
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['UCL', 'UCL (trained)']
    """
    ax = new_axes(ax, figsize=(6.4, 3.6))
    xs = _np(x)
    colours = {}
    for i, (name, ys) in enumerate(curves.items()):
        values = _np(ys)
        if values.shape != xs.shape:
            raise ValueError(f"curve {name!r} has {values.size} values; x has {xs.size}. Give one value per x.")
        colours[name] = f"C{i}"
        ax.plot(xs, values, marker="o" if markers else None, ms=3, color=colours[name], label=name)
    for j, (name, (px, py)) in enumerate((points or {}).items()):
        px, py = np.atleast_1d(_np(px)), np.atleast_1d(_np(py))
        if px.shape != py.shape:
            raise ValueError(f"points {name!r} have {px.size} x values and {py.size} y values; give one y per x.")
        colour = colours.get(name, f"C{len(curves) + j}")
        ax.plot(px, py, ls="none", marker="D", ms=8, mfc="none", mew=2, color=colour,
                label=f"{name} (trained)" if name in colours else name)
    offset = len(curves) + len([n for n in (points or {}) if n not in colours])
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
    legend_outside(ax)
    return ax


def risk_profiles(x, curves: Mapping[str, Sequence[float]], ax=None, *, xlabel: str = "angle",
                  ylabel: str = "risk", title: str | None = None):
    """Curves against ``x`` (e.g. a risk against one angle), each with its smallest value marked.

    Parameters
    ----------
    x : array-like of shape (n,)
    curves : mapping label -> array-like of shape (n,)
    xlabel, ylabel, title : str

    Returns
    -------
    Axes

    Raises
    ------
    ValueError
        If a curve does not have one value per entry of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 11)
    >>> ax = risk_profiles(x, {"interior": (x - 0.4) ** 2, "at 0": x})
    >>> [round(float(m.get_xdata()[0]), 1) for m in ax.lines if m.get_marker() == "o"]
    [0.4, 0.0]
    """
    xs = _np(x)
    values = {}
    for name, ys in curves.items():
        v = _np(ys)
        if v.shape != xs.shape:
            raise ValueError(f"curve {name!r} has {v.size} values; x has {xs.size}. Give one value per x.")
        values[name] = v
    ax = new_axes(ax, figsize=(6.4, 3.6))
    for i, (name, v) in enumerate(values.items()):
        ax.plot(xs, v, color=f"C{i}", label=name)
        j = int(np.argmin(v))
        ax.plot([xs[j]], [v[j]], marker="o", ms=6, color=f"C{i}", ls="none")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    legend_outside(ax, title="dots: minima")
    return ax
