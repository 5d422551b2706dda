"""Figures of the weighted-contrastive chapter: the spherical feasibility curve and
embeddings aligned to their labels."""

from __future__ import annotations

from ..geometry import procrustes_align
from ._core import LEGEND_FONTSIZE, _np, new_axes

__all__ = ["lambda_min_curve", "procrustes_scatter"]


def lambda_min_curve(betas, values, ax=None, *, label: str | None = None, title: str | None = None):
    """Plot ``lambda_min(K(beta))`` against the shift ``beta``, with the zero line.

    Parameters
    ----------
    betas, values : array-like of shape (m,)
    ax : Axes, optional
    label, title : str, optional

    Returns
    -------
    Axes. The objective is realisable on the sphere where the curve is ``>= 0``.
    """
    ax = new_axes(ax)
    ax.plot(_np(betas), _np(values), label=label)
    ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
    ax.set_xlabel(r"shift $\beta$")
    ax.set_ylabel(r"$\lambda_{\min}(K(\beta))$")
    if label:
        ax.legend(fontsize=LEGEND_FONTSIZE)
    if title:
        ax.set_title(title)
    return ax


def procrustes_scatter(z, y, ax=None, *, color=None, title: str | None = None):
    """Scatter the labels ``y`` and the embeddings ``z`` after Procrustes alignment onto ``y``.

    Parameters
    ----------
    z : array-like of shape (N, d)
    y : array-like of shape (N, p), ``p <= d`` (the first two coordinates are drawn)
    ax : Axes, optional
    color : array-like of shape (N,), optional
        Colours the points (e.g. by the first label coordinate).
    title : str, optional

    Returns
    -------
    Axes, with grey segments joining each label to its aligned embedding.
    """
    z, y = _np(z), _np(y)
    ys, zs, _ = procrustes_align(y, z)
    ax = new_axes(ax)
    for a, b in zip(ys, zs):
        ax.plot([a[0], b[0]], [a[1], b[1]], color="0.75", lw=0.6, zorder=1)
    c = y[:, 0] if color is None else _np(color)
    ax.scatter(ys[:, 0], ys[:, 1], c=c, marker="o", s=14, cmap="viridis", label="labels", zorder=2)
    ax.scatter(zs[:, 0], zs[:, 1], c=c, marker="x", s=14, cmap="viridis", label="embedding", zorder=3)
    ax.set_aspect("equal")
    ax.legend(fontsize=LEGEND_FONTSIZE, loc="lower right")
    if title:
        ax.set_title(title)
    return ax
