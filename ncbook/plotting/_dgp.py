"""Figures of the weighted-contrastive chapter: small configurations of points, the spherical
feasibility curve and embeddings aligned to their labels.

Letters: ``n`` points; ``delta`` the shift of a distance-geometry target; ``eig_min`` the smallest
eigenvalue.
"""

from __future__ import annotations

import numpy as np

from ..geometry import procrustes_align
from ._core import LEGEND_FONTSIZE, PALETTE, _np, new_axes

__all__ = ["lambda_min_curve", "point_configurations", "procrustes_scatter"]


def _planar(x: np.ndarray) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, max(0, 2 - x.shape[1]))))[:, :2]


def _pose(x: np.ndarray, on_circle: bool) -> np.ndarray:
    """Point 1 at the origin and point 2 on the positive x-axis (on the circle: point 1 at ``(1, 0)``),
    point 3 above the x-axis: configurations equal up to a rigid motion coincide."""
    if not on_circle:
        x = x - x[0]
    ref = x[0] if on_circle else x[1]
    angle = np.arctan2(ref[1], ref[0]) if np.linalg.norm(ref) > 1e-12 else 0.0
    c, s = np.cos(angle), np.sin(angle)
    x = x @ np.array([[c, -s], [s, c]])
    k = 1 if on_circle else 2
    if x.shape[0] > k and x[k, 1] < -1e-12:
        x = x * np.array([1.0, -1.0])
    return x


def point_configurations(configurations, ax=None, *, labels=None, circle: bool = False, title: str | None = None):
    """Draw small configurations of points in the plane, each as a closed polygon with numbered vertices.

    Parameters
    ----------
    configurations : sequence of array-like of shape (n, 1) or (n, 2)
        Point sets (rows are points, numbered from 1); 1-D ones are drawn on the x-axis. Each is
        moved so that point 1 is at the origin and point 2 on the positive x-axis (with ``circle``:
        point 1 at ``(1, 0)``), point 3 above the axis: configurations equal up to a rigid motion
        coincide.
    ax : Axes, optional
    labels : sequence of str, optional
        One legend entry per configuration.
    circle : bool
        Draw the unit circle (for unit embeddings, cosine latent) and keep the centre fixed.
    title : str, optional

    Returns
    -------
    Axes
    """
    ax = new_axes(ax)
    if circle:
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(t), np.sin(t), color="0.75", lw=0.8, zorder=0)
    for k, conf in enumerate(configurations):
        x = _pose(_planar(_np(conf).reshape(len(conf), -1)), circle)
        color = PALETTE[k % len(PALETTE)]
        closed = np.vstack([x, x[:1]])
        ax.plot(closed[:, 0], closed[:, 1], color=color, lw=1.2, marker="o", ms=4,
                label=None if labels is None else labels[k])
        for i, p in enumerate(x):
            ax.annotate(str(i + 1), p, textcoords="offset points", xytext=(3, 4), fontsize=LEGEND_FONTSIZE,
                        color=color)
    ax.set_aspect("equal", adjustable="datalim")
    ax.margins(0.15)
    if labels is not None:
        ax.legend(fontsize=LEGEND_FONTSIZE, loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False,
                  ncol=min(len(labels), 2))
    if title:
        ax.set_title(title)
    return ax


def lambda_min_curve(betas, values, ax=None, *, label: str | None = None, title: str | None = None):
    """Plot ``eig_min(K(delta))`` against the shift ``delta``, with the zero line.

    Parameters
    ----------
    betas, values : array-like of shape (m,)
        The shifts ``delta`` and the smallest eigenvalue of the cosine target ``K(delta)`` at each.
    ax : Axes, optional
    label, title : str, optional

    Returns
    -------
    Axes. The objective is realisable on the sphere where the curve is ``>= 0``.
    """
    ax = new_axes(ax)
    ax.plot(_np(betas), _np(values), label=label)
    ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
    ax.set_xlabel(r"shift $\delta$")
    ax.set_ylabel(r"$\operatorname{eig}_{\min}(K(\delta))$")
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
    ax.legend(fontsize=LEGEND_FONTSIZE, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    if title:
        ax.set_title(title)
    return ax
