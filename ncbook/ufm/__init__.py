"""Unconstrained features models (UFM): free classifiers and features, and their optimisers.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples. ``W`` is ``(C, d)``,
``H`` is ``(n, d)`` (papers write ``H`` as ``d x n``).
"""

from ._ce import CEUFMResult
from ._contrastive import ContrastiveUFMResult
from ._contrastive import contrastive_ufm_risk
from ._contrastive import fit_contrastive_ufm
from ._ce import ce_margins
from ._ce import log_mean_ce
from ._ce import train_ufm
from ._ce import ufm_objective
from ._ridge import RidgeOptimum
from ._ridge import ridge_optimum
from ._ridge import sel_distance
from ._weighted import EmbeddingFit
from ._weighted import fit_free_embeddings
from ._weighted import fit_prototypes

__all__: list[str] = [
    "CEUFMResult",
    "ContrastiveUFMResult",
    "contrastive_ufm_risk",
    "fit_contrastive_ufm",
    "EmbeddingFit",
    "ce_margins",
    "fit_free_embeddings",
    "fit_prototypes",
    "log_mean_ce",
    "train_ufm",
    "ufm_objective",
    "RidgeOptimum",
    "ridge_optimum",
    "sel_distance",
]
