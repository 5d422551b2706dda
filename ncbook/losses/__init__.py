"""Losses: functional forms and thin ``nn.Module`` wrappers.

Letters (the book's notation): ``n`` samples (or anchors), ``C`` classes, ``d`` feature dimension,
``k`` negatives per anchor, ``tau`` the temperature (keyword ``temperature``), ``u_c`` class weights.
Logits are ``(n, C)``, features ``(n, d)``.
Every loss takes ``reduction`` in ``"none" | "mean" | "sum"``.
"""

from ._contrastive import GeneralizedContrastiveLoss
from ._contrastive import contrastive_batch_indices
from ._contrastive import generalized_contrastive_loss
from ._contrastive import info_nce
from ._long_tail import FocalLoss
from ._long_tail import IBLoss
from ._long_tail import LDAMLoss
from ._long_tail import LogitAdjustedLoss
from ._long_tail import WeightedCrossEntropy
from ._long_tail import focal_loss
from ._long_tail import ib_loss
from ._long_tail import ldam_loss
from ._long_tail import logit_adjusted_loss
from ._long_tail import logit_adjustment
from ._long_tail import weighted_cross_entropy
from ._margin import FixedMarginLoss
from ._margin import MR2Loss
from ._margin import margin_cross_entropy
from ._margin import representation_margin_loss
from ._reweighted import InverseReweightedCE
from ._reweighted import inverse_reweighted_ce
from ._weighted import WInfoNCELoss
from ._weighted import column_normalized_w_info_nce
from ._weighted import entropic_lower_bound
from ._weighted import gaussian_kernel_weights
from ._weighted import latent_similarity
from ._weighted import prototype_entropic_lower_bound
from ._weighted import prototype_w_info_nce
from ._weighted import soft_supcon_weights
from ._weighted import supcon_weights
from ._weighted import w_info_nce
from ._weighted import xclr_weights

__all__ = [
    "FixedMarginLoss",
    "FocalLoss",
    "GeneralizedContrastiveLoss",
    "IBLoss",
    "InverseReweightedCE",
    "LDAMLoss",
    "LogitAdjustedLoss",
    "MR2Loss",
    "WInfoNCELoss",
    "WeightedCrossEntropy",
    "column_normalized_w_info_nce",
    "contrastive_batch_indices",
    "entropic_lower_bound",
    "focal_loss",
    "gaussian_kernel_weights",
    "generalized_contrastive_loss",
    "ib_loss",
    "info_nce",
    "inverse_reweighted_ce",
    "latent_similarity",
    "ldam_loss",
    "logit_adjusted_loss",
    "logit_adjustment",
    "margin_cross_entropy",
    "prototype_entropic_lower_bound",
    "prototype_w_info_nce",
    "representation_margin_loss",
    "soft_supcon_weights",
    "supcon_weights",
    "w_info_nce",
    "weighted_cross_entropy",
    "xclr_weights",
]
