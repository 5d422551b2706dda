"""Figures of the primer: neural-collapse curves read against their scales.

A metric is read against a baseline: its value at initialisation (drawn at ``x = 0``), and a
threshold (the one the reproduction page tests). The legend sits outside the axes, so it never
covers a curve, and the limits include every drawn point.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ._core import LEGEND_FONTSIZE, legend_outside, new_axes

__all__ = ["nc_curves"]

#: readable names of the history keys of :func:`ncbook.train.fit` and :func:`ncbook.ufm.train_ufm`
NAMES = {"nc1": "NC1", "nc2_m": r"NC2($\bar M$)", "nc2_w": "NC2($W$)", "nc3": "NC3", "nc3_zhu": "NC3 (zhu)",
         "nc4": "NC4", "train_acc": "train accuracy", "test_acc": "test accuracy",
         "w_etf": r"dist($G_W$, $P$)", "m_etf": r"dist($G_M$, $P$)"}


def nc_curves(history, keys: Sequence[str], ax=None, *, labels: Sequence[str] | None = None, x: str = "epoch",
              initial: Mapping[str, float] | None = None, threshold: tuple[float, str] | None = None,
              logy: bool = True, title: str | None = None, ylabel: str | None = None):
    """Curves of ``history[key]`` over training, with the values at initialisation and a threshold.

    Parameters
    ----------
    history : ncbook.train.History or dict of sequences
        ``history[x]`` and ``history[key]`` (entries ``None`` are skipped).
    keys : sequence of str
        The curves; labels default to :data:`NAMES` (the key itself when unknown).
    ax : matplotlib Axes, optional
    labels : sequence of str, optional
        One label per key.
    x : str
        The x key. ``"epoch"``: :func:`ncbook.train.fit` records epoch ``e`` after ``e + 1`` passes, so
        the curves are drawn at ``e + 1`` ("epochs trained") and 0 is the start.
    initial : dict, optional
        ``{key: value at initialisation}``, drawn as a hollow marker at ``x = 0`` in the curve's colour
        and joined to the curve by a dotted line.
    threshold : (float, str), optional
        A horizontal dashed grey line and its legend label.
    logy : bool
        Logarithmic y axis (non-positive values are then not drawn).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    KeyError
        If ``history`` has no ``x`` or no ``key``.

    Examples
    --------
    >>> ax = nc_curves({"step": [0, 1, 2], "nc1": [1.0, 0.1, 0.01]}, ["nc1"], x="step", threshold=(0.1, "0.1"))
    >>> [line.get_label() for line in ax.get_lines()][:2]
    ['NC1', '0.1']
    """
    ax = new_axes(ax)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    shift = 1 if x == "epoch" else 0
    xs_all = [None if v is None else v + shift for v in history[x]]
    drawn_x, drawn_y = [], []
    for i, key in enumerate(keys):
        label = labels[i] if labels else NAMES.get(key, key)
        pairs = [(a, b) for a, b in zip(xs_all, history[key]) if a is not None and b is not None
                 and np.isfinite(b) and (b > 0 or not logy)]
        color = colors[i % len(colors)]
        if pairs:
            xs, ys = zip(*pairs)
            ax.plot(xs, ys, color=color, label=label)
            drawn_x += list(xs)
            drawn_y += list(ys)
        if initial is not None and key in initial and np.isfinite(initial[key]) and (initial[key] > 0 or not logy):
            ax.plot([0], [initial[key]], "o", mfc="none", color=color)
            if pairs:
                ax.plot([0, pairs[0][0]], [initial[key], pairs[0][1]], ":", color=color, lw=1)
            drawn_x.append(0)
            drawn_y.append(initial[key])
    if threshold is not None:
        ax.axhline(threshold[0], color="0.45", ls="--", lw=1, label=threshold[1])
        drawn_y.append(threshold[0])
    if logy:
        ax.set_yscale("log")
    if drawn_y:
        lo, hi = min(drawn_y), max(drawn_y)
        ax.set_ylim(*((lo / 2, hi * 2) if logy else (lo - 0.05 * (hi - lo + 1e-12), hi + 0.05 * (hi - lo + 1e-12))))
    if drawn_x:
        span = max(drawn_x) - min(drawn_x) or 1
        ax.set_xlim(min(drawn_x) - 0.03 * span, max(drawn_x) + 0.03 * span)
    ax.set_xlabel("epochs trained" if x == "epoch" else x)
    if ylabel:
        ax.set_ylabel(ylabel)
    if initial is not None:
        ax.plot([], [], "o", mfc="none", color="0.3", label="at initialisation")
    legend_outside(ax, fontsize=LEGEND_FONTSIZE)
    if title:
        ax.set_title(title)
    return ax
