"""The primer's figure: every drawn point inside the axes, the legend outside them, the baseline at x = 0."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ncbook.plotting import nc_curves  # noqa: E402

HISTORY = {"epoch": [9, 19, 29], "nc1": [0.3, 0.02, 0.004], "nc2_w": [0.5, None, 0.04], "nc4": [0.2, 0.0, 0.0],
           "train_acc": [0.9, 1.0, 1.0]}


def _points(ax):
    return np.concatenate([line.get_xydata() for line in ax.get_lines() if len(line.get_xydata())])


@pytest.mark.parametrize("logy", [True, False])
def test_every_point_inside_the_axes_and_the_legend_outside(logy):
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    keys = ["nc1", "nc2_w", "nc4"] if logy else ["train_acc"]
    initial = {"nc1": 2.6, "nc2_w": 0.56, "nc4": 0.9} if logy else {"train_acc": 0.1}
    nc_curves(HISTORY, keys, ax, initial=initial, threshold=(0.1, "threshold 0.1") if logy else None, logy=logy)
    fig.canvas.draw()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    pts = _points(ax)
    pts = pts[np.isfinite(pts).all(1)]
    assert ((pts[:, 0] >= x0) & (pts[:, 0] <= x1) & (pts[:, 1] >= y0) & (pts[:, 1] <= y1)).all()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1 - 1          # to the right of the data area
    assert 0 in pts[:, 0]                                       # the value at initialisation, at x = 0
    assert set(pts[:, 0]) - {0} >= {10, 20, 30}                 # epoch e drawn after e + 1 passes
    plt.close(fig)


def test_zeros_are_not_drawn_on_a_log_axis_and_labels_are_readable():
    ax = nc_curves(HISTORY, ["nc4", "nc1"], logy=True)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["NC4", "NC1"]
    nc4 = ax.get_lines()[0].get_xydata()
    assert (nc4[:, 1] > 0).all() and len(nc4) == 1               # the two zeros are skipped
    plt.close(ax.figure)


def test_missing_key_raises():
    with pytest.raises(KeyError):
        nc_curves({"epoch": [0]}, ["nc1"])
    plt.close("all")
