"""The course map of the intro: chapters as boxes, what each hands to the next, and cross-links."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ._core import LEGEND_FONTSIZE

__all__ = ["course_map"]

_BOX_W, _BOX_H = 3.0, 1.0
_NODE_COLOURS = ("#332288", "#CC6677", "#117733", "#44AA99", "#999933", "#882255")
_LINK_COLOUR = "#555555"
_RAD = -0.35   # dashed links bulge to the left of their direction (arc3 control point mid + rad (dy, -dx))


def _check_nodes(nodes) -> dict[str, dict]:
    by_key: dict[str, dict] = {}
    for i, node in enumerate(nodes):
        missing = {"key", "title", "pos"} - set(node)
        if missing:
            raise ValueError(f"nodes[{i}] needs the keys 'key', 'title' and 'pos'; it lacks {sorted(missing)}")
        if node["key"] in by_key:
            raise ValueError(f"nodes: the key {node['key']!r} appears twice; each chapter is one node")
        if len(node["pos"]) != 2:
            raise ValueError(f"nodes[{i}]['pos'] must be an (x, y) pair; got {node['pos']!r}")
        by_key[node["key"]] = node
    if not by_key:
        raise ValueError("nodes must hold at least one chapter; got none")
    return by_key


def _check_edges(edges, by_key, name: str) -> None:
    for i, edge in enumerate(edges):
        if len(edge) != 3:
            raise ValueError(f"{name}[{i}] must be (from, to, label); got {edge!r}")
        for end in edge[:2]:
            if end not in by_key:
                raise ValueError(f"{name}[{i}] names the node {end!r}, which is not in nodes "
                                 f"(known: {sorted(by_key)})")


def course_map(nodes: Sequence[dict], edges: Sequence[tuple] = (), links: Sequence[tuple] = (), ax=None, *,
               figsize=(11.0, 5.6), title: str | None = None):
    """Draw the course as a graph: chapters, what each hands to the next, and cross-links.

    Parameters
    ----------
    nodes : sequence of dict
        One per chapter: ``key`` (str), ``title`` (str), ``pos`` ((x, y) centre in data units;
        boxes are 3.0 x 1.0, so centres about 5.6 apart leave room for the labels) and optionally
        ``note`` (a smaller second line).
    edges : sequence of (str, str, str)
        ``(from, to, label)``: solid arrows, the reading order, labelled with what ``from`` hands on.
    links : sequence of (str, str, str)
        ``(a, b, label)``: dashed, curved cross-links; each bulges to the left of the direction
        from ``a`` to ``b`` (choose the order that puts it outside the map).
    ax : matplotlib Axes, optional
        Drawn on when given; else a new figure of size ``figsize``.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        With one box patch per node, then one arrow patch per edge and per link, in that order.

    Raises
    ------
    ValueError
        If a node lacks ``key``, ``title`` or ``pos``, a key repeats, or an edge or link names a
        node that is not in ``nodes``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = course_map([{"key": "a", "title": "A", "pos": (0, 0)}, {"key": "b", "title": "B", "pos": (3, 0)}],
    ...                 [("a", "b", "the ETF")])
    >>> len(ax.patches)   # two boxes, one arrow
    3
    """
    by_key = _check_nodes(nodes)
    _check_edges(edges, by_key, "edges")
    _check_edges(links, by_key, "links")
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    for i, node in enumerate(nodes):
        x, y = node["pos"]
        colour = _NODE_COLOURS[i % len(_NODE_COLOURS)]
        ax.add_patch(FancyBboxPatch((x - _BOX_W / 2, y - _BOX_H / 2), _BOX_W, _BOX_H,
                                    boxstyle="round,pad=0.02,rounding_size=0.15", linewidth=1.4,
                                    edgecolor=colour, facecolor="white", zorder=2))
        ax.text(x, y + (0.12 if node.get("note") else 0.0), node["title"], ha="center", va="center",
                fontsize=9.5, fontweight="bold", color=colour, zorder=3)
        if node.get("note"):
            ax.text(x, y - 0.3, node["note"], ha="center", va="center", fontsize=LEGEND_FONTSIZE - 1,
                    color="#333333", zorder=3)

    def border(centre, direction):
        """Where the ray from a box's centre along ``direction`` leaves the box."""
        (x, y), (dx, dy) = centre, direction
        t = min((_BOX_W / 2) / abs(dx) if dx else float("inf"), (_BOX_H / 2) / abs(dy) if dy else float("inf"))
        return x + t * dx, y + t * dy

    def arrow(a, b, label, dashed):
        (x0, y0), (x1, y1) = by_key[a]["pos"], by_key[b]["pos"]
        dx, dy = x1 - x0, y1 - y0
        start, end = border((x0, y0), (dx, dy)), border((x1, y1), (-dx, -dy))
        if dashed:   # from the middle of the sides that face the bulge, so the arc clears the solid arrows
            nx, ny = _RAD * dy, -_RAD * dx
            nx, ny = (1.0 if nx > 0 else -1.0, 0.0) if abs(nx) >= abs(ny) else (0.0, 1.0 if ny > 0 else -1.0)
            start = (x0 + nx * _BOX_W / 2, y0 + ny * _BOX_H / 2)
            end = (x1 + nx * _BOX_W / 2, y1 + ny * _BOX_H / 2)
            patch = FancyArrowPatch(start, end, arrowstyle="<|-|>", mutation_scale=11, linewidth=1.0,
                                    linestyle=(0, (4, 3)), color=_LINK_COLOUR, connectionstyle=f"arc3,rad={_RAD}",
                                    shrinkA=2, shrinkB=2, zorder=1)
            # the label sits on the arc's apex: the midpoint moved by rad / 2 (dy, -dx)
            mx, my = (start[0] + end[0]) / 2 + _RAD / 2 * dy, (start[1] + end[1]) / 2 - _RAD / 2 * dx
            style = dict(color=_LINK_COLOUR, style="italic", ha="center")
        else:
            patch = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, linewidth=1.3, color="#222222",
                                    shrinkA=2, shrinkB=2, zorder=1)
            mx, my = (x0 + x1) / 2, (y0 + y1) / 2
            vertical = abs(dy) > abs(dx)
            style = dict(color="#222222", style="normal", ha="right" if vertical else "center")
            if vertical:
                mx -= 0.15
        ax.add_patch(patch)
        ax.text(mx, my, label, va="center", fontsize=LEGEND_FONTSIZE - 1, zorder=4,
                bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.9), **style)

    for a, b, label in edges:
        arrow(a, b, label, dashed=False)
    for a, b, label in links:
        arrow(a, b, label, dashed=True)
    xs = [n["pos"][0] for n in nodes]
    ys = [n["pos"][1] for n in nodes]
    ax.set_xlim(min(xs) - 0.8 * _BOX_W, max(xs) + 0.9 * _BOX_W)
    ax.set_ylim(min(ys) - 0.8 * _BOX_H, max(ys) + 1.5 * _BOX_H)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax
