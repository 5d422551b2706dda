"""Figures used by the chapters (matplotlib is imported here only)."""

from ._contrastive import class_means_circle
from ._contrastive import collapse_curves
from ._contrastive import risk_profiles
from ._core import geometry_2d
from ._core import gram_heatmap
from ._core import gram_panels
from ._core import metric_curves
from ._core import new_axes
from ._core import per_class_bars
from ._core import shown_text_px
from ._core import MAX_FIGURE_WIDTH
from ._dgp import lambda_min_curve
from ._intro import course_map
from ._dgp import point_configurations
from ._dgp import procrustes_scatter
from ._primer import nc_curves
from ._reweighting import class_loss_curves
from ._reweighting import grouped_bars
from ._reweighting import loss_imbalance_curves
from ._reweighting import weight_paths
from ._margins import group_accuracy_bars
from ._margins import margin_rule_plot
from ._margins import variability_scatter
from ._seli import curves
from ._seli import seli_closed_form_figure
from ._seli import seli_explorer
from ._seli import seli_network_figure
from ._seli import seli_norm_bars
from ._seli import seli_ridge_figure
from ._seli import seli_ufm_figure
from ._seli import seli_widget
from ._seli import step_counts

__all__ = [
    "class_means_circle",
    "collapse_curves",
    "course_map",
    "geometry_2d",
    "gram_heatmap",
    "gram_panels",
    "lambda_min_curve",
    "metric_curves",
    "nc_curves",
    "new_axes",
    "per_class_bars",
    "shown_text_px",
    "MAX_FIGURE_WIDTH",
    "point_configurations",
    "procrustes_scatter",
    "risk_profiles",
    "class_loss_curves",
    "grouped_bars",
    "loss_imbalance_curves",
    "weight_paths",
    "group_accuracy_bars",
    "margin_rule_plot",
    "variability_scatter",
    "curves",
    "seli_closed_form_figure",
    "seli_explorer",
    "seli_network_figure",
    "seli_norm_bars",
    "seli_ridge_figure",
    "seli_ufm_figure",
    "seli_widget",
    "step_counts",
]
