"""The weighted chapter's figures: configurations equal up to a rigid motion are drawn on top of each other."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from ncbook import plotting  # noqa: E402


def _drawn(ax):
    return [np.c_[line.get_xdata(), line.get_ydata()] for line in ax.get_lines()]


def _rigid(x, angle, shift, flip=False):
    c, s = np.cos(angle), np.sin(angle)
    y = x @ np.array([[c, -s], [s, c]])
    return (y * np.array([1.0, -1.0]) if flip else y) + shift


def test_point_configurations_draws_congruent_triangles_identically():
    tri = np.array([[0.3, -0.2], [1.4, 0.5], [0.1, 1.1]])
    ax = plotting.point_configurations([tri, _rigid(tri, 1.3, [2.0, -5.0]), _rigid(tri, -0.4, [0.0, 1.0], flip=True)],
                                       labels=["a", "b", "c"])
    first, second, third = _drawn(ax)
    np.testing.assert_allclose(second, first, atol=1e-12)
    np.testing.assert_allclose(third, first, atol=1e-12)
    np.testing.assert_allclose(first[0], [0.0, 0.0], atol=1e-12)           # point 1 at the origin
    assert abs(first[1, 1]) < 1e-12 and first[1, 0] > 0 and first[2, 1] > 0  # point 2 on the x-axis, 3 above
    np.testing.assert_allclose(np.linalg.norm(first[1] - first[2]), np.linalg.norm(tri[1] - tri[2]))  # no scaling
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c"]


def test_point_configurations_on_the_circle_keeps_the_centre_and_pads_one_dimension():
    angles = np.array([0.4, 1.9, 4.0])
    unit = np.c_[np.cos(angles), np.sin(angles)]
    ax = plotting.point_configurations([unit, _rigid(unit, 2.2, 0.0)], circle=True)
    circle, first, second = _drawn(ax)
    np.testing.assert_allclose(np.hypot(*circle.T), 1.0)
    np.testing.assert_allclose(second, first, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0)     # still on the circle
    np.testing.assert_allclose(first[0], [1.0, 0.0], atol=1e-12)
    line = plotting.point_configurations([np.array([[0.0], [2.0], [-1.0]])])
    np.testing.assert_allclose(_drawn(line)[0][:, 1], 0.0, atol=1e-12)   # a 1-D configuration lies on the x-axis
