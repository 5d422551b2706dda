"""Figures used by the chapters (matplotlib is imported here only)."""

from ._core import geometry_2d
from ._core import gram_heatmap
from ._core import gram_panels
from ._core import metric_curves
from ._core import new_axes
from ._core import per_class_bars

__all__ = [
    "geometry_2d",
    "gram_heatmap",
    "gram_panels",
    "metric_curves",
    "new_axes",
    "per_class_bars",
]
