"""ncbook.plotting.course_map: one box per chapter, one arrow per hand-over and cross-link, every
label inside the axes, and clear errors for a map that names an unknown chapter."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from ncbook import plotting  # noqa: E402

NODES = [dict(key=k, title=f"{i + 1}  {k}", note="a note", pos=(5.6 * (i % 3), 3.0 * (i // 3)))
         for i, k in enumerate("abcdef")]
EDGES = [("a", "b", "hands on\nthe ETF"), ("b", "c", "x"), ("c", "f", "y"), ("f", "e", "z"), ("e", "d", "w")]
LINKS = [("b", "c", "two meanings"), ("d", "a", "a cross-link")]


def test_one_box_per_chapter_and_one_arrow_per_edge_and_link():
    ax = plotting.course_map(NODES, EDGES, LINKS)
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(boxes) == len(NODES) and len(arrows) == len(EDGES) + len(LINKS)
    solid, dashed = arrows[:len(EDGES)], arrows[len(EDGES):]
    assert all(a.get_linestyle() == "solid" for a in solid) and all(a.get_linestyle() != "solid" for a in dashed)
    texts = [t.get_text() for t in ax.texts]
    assert all(n["title"] in texts for n in NODES) and "two meanings" in texts and "hands on\nthe ETF" in texts


def test_every_label_and_box_lies_inside_the_axes():
    ax = plotting.course_map(NODES, EDGES, LINKS, figsize=(11, 5.6))
    fig = ax.figure
    fig.canvas.draw()
    frame = ax.get_window_extent()
    renderer = fig.canvas.get_renderer()
    for artist in list(ax.texts) + [p for p in ax.patches if isinstance(p, FancyBboxPatch)]:
        box = artist.get_window_extent(renderer)
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, artist
        assert frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1, artist


def test_arrows_start_and_end_on_box_borders():
    ax = plotting.course_map(NODES[:2], EDGES[:1])
    arrow = next(p for p in ax.patches if isinstance(p, FancyArrowPatch))
    (x0, y0), (x1, y1) = arrow._posA_posB
    assert (x0, y0) == pytest.approx((1.5, 0.0)) and (x1, y1) == pytest.approx((5.6 - 1.5, 0.0))


@pytest.mark.parametrize("nodes, edges, match", [
    ([{"key": "a", "title": "A"}], [], r"nodes\[0\] needs .* lacks \['pos'\]"),
    ([{"key": "a", "title": "A", "pos": (0, 0)}] * 2, [], "appears twice"),
    ([{"key": "a", "title": "A", "pos": (0, 0, 1)}], [], r"must be an \(x, y\) pair"),
    ([], [], "at least one chapter"),
    ([{"key": "a", "title": "A", "pos": (0, 0)}], [("a", "zz", "?")], r"edges\[0\] names the node 'zz'"),
    ([{"key": "a", "title": "A", "pos": (0, 0)}], [("a", "b")], r"must be \(from, to, label\)"),
])
def test_bad_maps_are_refused(nodes, edges, match):
    with pytest.raises(ValueError, match=match):
        plotting.course_map(nodes, edges)
