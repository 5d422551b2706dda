"""Every name of ``ncbook.losses``, as a loss ``fit`` can train with, or the reason it is not one.

Shared by the distributed registry test (``tests/test_torchrun.py``, which runs every training
loss under 2 ``torchrun`` processes against 1 process) and read by its worker script. A new name
in ``ncbook.losses.__all__`` that is in neither table fails ``test_every_loss_is_in_the_zoo``.

Functional losses that take features, or anchors/positives/negatives, are wrapped in a small
callable that builds their arguments from the global batch (so they run under ``fit``, whose
gather makes any function of the batch exact under ``torchrun``).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ncbook import losses
from ncbook.margins import ldam_margins

C = 4
COUNTS = [40, 24, 14, 8]
SWITCH = 1  # epoch of the DRW / IB / inverse-weight switches: both regimes are trained
WEIGHT = [1.0, 2.0, 3.0, 5.0]


class FeatureFn(torch.nn.Module):
    """``fn(logits, labels, features)`` for the loop's feature protocol (a Module: its settings are fingerprinted)."""

    needs_features = True

    def __init__(self, fn, name):
        super().__init__()
        self.fn, self.name = fn, name

    def forward(self, logits, labels, features):
        return self.fn(logits, labels, features)


def _same_class_partner(labels):
    """For every sample the next sample of its class in the batch (itself if alone): a deterministic positive."""
    idx = torch.arange(len(labels))
    partner = idx.clone()
    for c in labels.unique():
        members = idx[labels == c]
        partner[members] = members.roll(-1)
    return partner


def _contrastive_args(feats, labels):
    return feats, feats[_same_class_partner(labels)], torch.stack([feats.roll(1, 0), feats.roll(3, 0)], 1)


def _prototype_loss(logits, labels, feats):
    present = labels.unique()
    means = torch.stack([feats[labels == c].mean(0) for c in present])
    counts = torch.stack([(labels == c).sum() for c in present])
    omega = 0.1 + 0.9 * torch.eye(len(present), dtype=torch.float64)
    return losses.prototype_w_info_nce(means, counts, omega, temperature=0.5)


# name -> zero-argument factory of a fit loss (a name may appear with several variants: "name:variant")
TRAINING_LOSSES = {
    "WeightedCrossEntropy": lambda: losses.WeightedCrossEntropy(WEIGHT),
    "WeightedCrossEntropy:batch": lambda: losses.WeightedCrossEntropy(WEIGHT, normalizer="batch"),
    "weighted_cross_entropy": lambda: functools.partial(losses.weighted_cross_entropy, weight=WEIGHT),
    "weighted_cross_entropy:sum": lambda: functools.partial(
        losses.weighted_cross_entropy, weight=[w / 16 for w in WEIGHT], reduction="sum"),  # a sum over the batch of 16
    "FocalLoss": lambda: losses.FocalLoss(gamma=2.0, weight=WEIGHT),
    "focal_loss": lambda: functools.partial(losses.focal_loss, gamma=1.0),
    "LDAMLoss": lambda: losses.LDAMLoss(COUNTS, scale=5.0, drw_epoch=SWITCH),
    "ldam_loss": lambda: functools.partial(losses.ldam_loss, margins=ldam_margins(COUNTS), scale=5.0, weight=WEIGHT),
    "LogitAdjustedLoss": lambda: losses.LogitAdjustedLoss(COUNTS),
    "logit_adjusted_loss": lambda: functools.partial(losses.logit_adjusted_loss, counts=COUNTS, tau=1.5),
    "IBLoss": lambda: losses.IBLoss(COUNTS, alpha=10.0, start_epoch=SWITCH),
    "ib_loss": lambda: FeatureFn(functools.partial(losses.ib_loss, alpha=10.0, weight=WEIGHT), "ib_loss"),
    "InverseReweightedCE": lambda: losses.InverseReweightedCE(C, gamma=1.0, switch_epoch=SWITCH),
    "InverseReweightedCE:detached": lambda: losses.InverseReweightedCE(
        C, gamma=1.0, switch_epoch=SWITCH, detach=True, prior="inv_freq", counts=COUNTS),
    "inverse_reweighted_ce": lambda: functools.partial(losses.inverse_reweighted_ce, alpha=0.1, clamp=None),
    "MR2Loss": lambda: losses.MR2Loss(C, lam=0.1),
    "MR2Loss:code": lambda: losses.MR2Loss(C, lam=0.1, mode="code"),
    "margin_cross_entropy": lambda: functools.partial(losses.margin_cross_entropy, margins=[0.8, 1.0, 1.2, 1.5]),
    "representation_margin_loss": lambda: FeatureFn(
        lambda z, y, h: F.cross_entropy(z, y) + losses.representation_margin_loss(h, y, 0.3), "representation_margin_loss"),
    "FixedMarginLoss": lambda: losses.FixedMarginLoss(ldam_margins(COUNTS), scale=2.0),
    "WInfoNCELoss": lambda: losses.WInfoNCELoss(losses.supcon_weights, temperature=0.5),
    "w_info_nce": lambda: FeatureFn(lambda z, y, h: losses.w_info_nce(
        h, losses.soft_supcon_weights(y, 0.1), similarity="euclidean", temperature=0.5), "w_info_nce"),
    "column_normalized_w_info_nce": lambda: FeatureFn(lambda z, y, h: losses.column_normalized_w_info_nce(
        h, losses.soft_supcon_weights(y, 0.1), temperature=0.5), "column_normalized_w_info_nce"),
    "prototype_w_info_nce": lambda: FeatureFn(_prototype_loss, "prototype_w_info_nce"),
    "info_nce": lambda: FeatureFn(lambda z, y, h: losses.info_nce(*_contrastive_args(h, y), temperature=0.5), "info_nce"),
    "generalized_contrastive_loss": lambda: FeatureFn(lambda z, y, h: losses.generalized_contrastive_loss(
        *_contrastive_args(h, y), psi="exp"), "generalized_contrastive_loss"),
    "GeneralizedContrastiveLoss": lambda: FeatureFn(
        lambda z, y, h: losses.GeneralizedContrastiveLoss(temperature=0.5)(*_contrastive_args(h, y)),
        "GeneralizedContrastiveLoss"),
}

# names of ncbook.losses that are not a training objective, with the reason
NOT_TRAINING_LOSSES = {
    "contrastive_batch_indices": "a sampler of anchors, positives and negatives (fit_contrastive runs in one process)",
    "entropic_lower_bound": "a number of the weights (the bound), no gradient",
    "prototype_entropic_lower_bound": "a number of the weights (the bound), no gradient",
    "gaussian_kernel_weights": "a weight builder (of continuous labels), not a loss",
    "soft_supcon_weights": "a weight builder; trained through the w_info_nce entries",
    "supcon_weights": "a weight builder; trained through WInfoNCELoss",
    "xclr_weights": "a weight builder (of label embeddings), not a loss",
    "latent_similarity": "the similarity matrix inside w_info_nce, not a loss",
    "logit_adjustment": "post-hoc logit adjustment at prediction time, not a training loss",
}


def make(name):
    return TRAINING_LOSSES[name]()


def base_name(name):
    return name.split(":")[0]
