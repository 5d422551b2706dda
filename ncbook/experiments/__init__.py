"""One call per long experiment of a chapter, and the verdict rules its prose and records share.

Layer 6 (the top): an experiment may use every lower layer. Each chapter's experiments live in
``experiments/_<chapter>.py`` and return an :class:`ExperimentResult` (a tidy ``pandas`` table, the
histories, the claims it supports); profiles, sizes, cost probes, checkpoints, worker processes and
claim records stay inside. See :mod:`ncbook.experiments._core` and :mod:`ncbook.experiments._verdicts`.
"""

from ._contrastive_imbalance import BatchNegatives
from ._contrastive_imbalance import CollapsePoints
from ._contrastive_imbalance import ContrastiveNetworks
from ._contrastive_imbalance import batch_negatives
from ._contrastive_imbalance import collapse_points
from ._contrastive_imbalance import contrastive_model
from ._contrastive_imbalance import contrastive_networks
from ._contrastive_imbalance import contrastive_setting
from ._core import Claim
from ._core import ExperimentResult
from ._core import Setting
from ._core import markdown_table
from ._core import record_claims
from ._core import run_jobs
from ._verdicts import Verdict
from ._verdicts import compare_means
from ._verdicts import exceeds
from ._verdicts import matches
from ._verdicts import seed_noise

__all__ = [
    "BatchNegatives",
    "Claim",
    "CollapsePoints",
    "ContrastiveNetworks",
    "ExperimentResult",
    "Setting",
    "Verdict",
    "batch_negatives",
    "collapse_points",
    "compare_means",
    "contrastive_model",
    "contrastive_networks",
    "contrastive_setting",
    "exceeds",
    "markdown_table",
    "matches",
    "record_claims",
    "run_jobs",
    "seed_noise",
]
