"""One call per long experiment of a chapter, and the verdict rules its prose and records share.

Layer 6 (the top): an experiment may use every lower layer. Each chapter's experiments live in
``experiments/_<chapter>.py`` and return an :class:`ExperimentResult` (a tidy ``pandas`` table, the
histories, the claims it supports); profiles, sizes, cost probes, checkpoints, worker processes and
claim records stay inside. See :mod:`ncbook.experiments._core` and :mod:`ncbook.experiments._verdicts`.
"""

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
from ._weighted_contrastive import ContinuousLabelFits
from ._weighted_contrastive import SupervisedPrototypes
from ._weighted_contrastive import WeightedNetworks
from ._weighted_contrastive import continuous_label_fits
from ._weighted_contrastive import supervised_prototypes
from ._weighted_contrastive import weighted_network_setting
from ._weighted_contrastive import weighted_networks

__all__ = [
    "Claim",
    "ContinuousLabelFits",
    "ExperimentResult",
    "Setting",
    "SupervisedPrototypes",
    "Verdict",
    "WeightedNetworks",
    "compare_means",
    "continuous_label_fits",
    "exceeds",
    "markdown_table",
    "matches",
    "record_claims",
    "run_jobs",
    "seed_noise",
    "supervised_prototypes",
    "weighted_network_setting",
    "weighted_networks",
]
