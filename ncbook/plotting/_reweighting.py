"""Figures of the inverse-reweighting chapter: per-class loss curves, loss-imbalance curves, weight paths,
grouped accuracy bars.

Letters: ``C`` classes, ``T`` epochs (or batches), ``A`` values of ``alpha``, ``M`` methods; ``u_c`` a class
weight (the chapter's letter; the paper writes ``w_c``). Every legend sits outside the data area.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..metrics import loss_imbalance
from ._core import HATCHES, LEGEND_FONTSIZE, PALETTE, legend_outside, method_colors, new_axes

__all__ = ["class_loss_curves", "grouped_bars", "loss_imbalance_curves", "weight_paths"]


def _class_colors(c: int):
    return plt.cm.viridis(np.linspace(0.0, 0.9, c))


def class_loss_curves(class_losses, ax=None, *, x=None, counts: Sequence[int] | None = None, logy: bool = True,
                      title: str | None = None, xlabel: str = "epoch", ylabel: str = "mean train CE",
                      legend: bool = True):
    """One curve per class of a ``(T, C)`` array of per-class losses, coloured head (dark) to tail (light).

    Parameters
    ----------
    class_losses : array-like of shape (T, C)
    ax : Axes, optional
    x : array-like of shape (T,), optional
        Abscissae (``0..T-1`` by default).
    counts : sequence of int, optional
        Training counts, shown in the legend.
    legend : bool, default True
        Draw the legend (to the right of the axes); pass False on all but one panel of a row.

    Raises
    ------
    ValueError
        If ``class_losses`` is not 2-D.
    """
    y = np.asarray(class_losses, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"class_losses must have shape (T, C); got {y.shape}.")
    ax = new_axes(ax)
    xs = np.arange(y.shape[0]) if x is None else np.asarray(x)
    for c, color in enumerate(_class_colors(y.shape[1])):
        label = f"{c}" if counts is None else f"{c} (n={counts[c]})"
        ax.plot(xs, y[:, c], color=color, label=label, lw=1.2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if legend:
        legend_outside(ax, title="class", title_fontsize=LEGEND_FONTSIZE)
    if title:
        ax.set_title(title)
    return ax


def loss_imbalance_curves(curves: Mapping[str, Sequence], ax=None, *, x=None, switch: float | None = None,
                          title: str | None = None, xlabel: str = "epoch"):
    r"""The loss imbalance :math:`\rho = \operatorname{std}_c L_c / \operatorname{mean}_c L_c` of each method against time.

    Parameters
    ----------
    curves : mapping method -> array-like of shape (T, C)
        Per-class (training) losses per epoch, as :func:`class_loss_curves` takes them.
    ax : Axes, optional
    x : array-like of shape (T,), optional
        Abscissae shared by every curve (``0..T-1`` by default), e.g. the epochs a run evaluated.
    switch : float, optional
        Epoch drawn as a dotted vertical line (e.g. where reweighting starts).

    Returns
    -------
    Axes, with a log y axis and the legend to the right of the data area.

    Raises
    ------
    ValueError
        If a curve is not of shape (T, C), or ``x`` does not have one entry per row of every curve.
    """
    ax = new_axes(ax, figsize=(6.5, 3.2))
    for name, color in zip(curves, method_colors(len(curves))):
        y = np.asarray(curves[name], dtype=float)
        if y.ndim != 2:
            raise ValueError(f"curves[{name!r}] must have shape (T, C); got {y.shape}.")
        xs = np.arange(y.shape[0]) if x is None else np.asarray(x, dtype=float)
        if xs.shape != (y.shape[0],):
            raise ValueError(f"x must have one entry per row of curves[{name!r}] ({y.shape[0]}); got shape {xs.shape}.")
        ax.plot(xs, loss_imbalance(y).numpy(), color=color, label=name, lw=1.4)
    if switch is not None:
        ax.axvline(switch, color="k", ls=":", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"loss imbalance $\rho$ (train)")
    legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax


def weight_paths(alphas, weights, ax=None, *, prior=None, title: str | None = None):
    """Closed-form weights ``u*_c(alpha)`` against ``alpha`` (log axis), one line per class.

    Parameters
    ----------
    alphas : array-like of shape (A,), positive
    weights : array-like of shape (A, C)
    prior : array-like of shape (C,), optional
        Drawn as dotted levels (the ``alpha -> inf`` limit).
    """
    a, w = np.asarray(alphas, dtype=float), np.asarray(weights, dtype=float)
    if w.shape[0] != a.shape[0]:
        raise ValueError(f"weights must have one row per alpha ({a.shape[0]}); got shape {w.shape}.")
    ax = new_axes(ax)
    for c, color in enumerate(_class_colors(w.shape[1])):
        ax.plot(a, w[:, c], color=color, label=f"class {c}")
        if prior is not None:
            ax.axhline(float(np.asarray(prior)[c]), color=color, ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$u_c^\star$")
    legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax


def grouped_bars(values: Mapping[str, Sequence[float]], groups: Sequence[str], ax=None, *,
                 errors: Mapping[str, Sequence[float]] | None = None, ylabel: str = "accuracy",
                 title: str | None = None):
    """Grouped bar chart: for each group (e.g. overall/many/medium/few), one bar per method.

    Parameters
    ----------
    values : mapping method -> sequence of len(groups)
    groups : sequence of str
    errors : mapping method -> sequence of len(groups), optional
        Half-heights of error bars (e.g. the standard deviation over seeds).
    """
    names = list(values)
    ax = new_axes(ax, figsize=(8, 3.6))
    width = 0.8 / max(len(names), 1)
    colors = method_colors(len(names))
    base = np.arange(len(groups))
    for i, name in enumerate(names):
        v = np.asarray(values[name], dtype=float)
        if v.shape != (len(groups),):
            raise ValueError(f"values[{name!r}] must have {len(groups)} entries; got {v.shape}.")
        err = None if errors is None else np.asarray(errors[name], dtype=float)
        ax.bar(base + (i - (len(names) - 1) / 2) * width, v, width, yerr=err, label=name, color=colors[i],
               hatch=HATCHES[(i // len(PALETTE)) % len(HATCHES)], capsize=1.5, error_kw={"lw": 0.6})
    ax.set_xticks(base)
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax
