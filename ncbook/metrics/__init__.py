"""Neural-collapse metrics (NC1-NC4), accuracies and geometry-fit metrics.

Letters: ``n`` samples, ``C`` classes, ``d`` feature dimension. Features are
``(n, d)``, classifier weights ``(C, d)``. Metrics take tensors or arrays, so
they work on any model's features; they never import models, losses or training code.
"""

from ._accuracy import difficulty_groups
from ._accuracy import group_accuracy
from ._accuracy import per_class_accuracy
from ._accuracy import shot_accuracy
from ._dgp import entropic_gap
from ._dgp import r2_procrustes
from ._dgp import r2_similarity
from ._loss import loss_imbalance
from ._nc import NCAccumulator
from ._nc import centered_means
from ._nc import class_means
from ._nc import nc1
from ._nc import nc2
from ._nc import nc3
from ._nc import nc4
from ._nc import neural_collapse

__all__ = [
    "NCAccumulator",
    "centered_means",
    "class_means",
    "difficulty_groups",
    "entropic_gap",
    "group_accuracy",
    "loss_imbalance",
    "nc1",
    "nc2",
    "nc3",
    "nc4",
    "neural_collapse",
    "per_class_accuracy",
    "r2_procrustes",
    "r2_similarity",
    "shot_accuracy",
]
