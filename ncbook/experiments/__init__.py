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
from ._inverse_reweighting import Method
from ._inverse_reweighting import ReweightingComparison
from ._inverse_reweighting import compare_reweighting
from ._inverse_reweighting import inverse_reweighting_checks
from ._inverse_reweighting import quoted_reweighting_results
from ._inverse_reweighting import reweighting_setting
from ._mr2_margins import MR2Baseline
from ._mr2_margins import MR2Comparison
from ._mr2_margins import compare_mr2
from ._mr2_margins import mr2_baseline
from ._mr2_margins import mr2_setting
from ._nc_primer import PrimerNetwork
from ._nc_primer import PrimerUFM
from ._nc_primer import primer_model
from ._nc_primer import primer_network
from ._nc_primer import primer_setting
from ._nc_primer import primer_ufm
from ._seli import SeliNetwork
from ._seli import SeliRidgePath
from ._seli import SeliUFM
from ._seli import seli_model
from ._seli import seli_network
from ._seli import seli_ridge_path
from ._seli import seli_setting
from ._seli import seli_ufm
from ._verdicts import Verdict
from ._verdicts import compare_means
from ._verdicts import exceeds
from ._verdicts import matches
from ._verdicts import range_noise
from ._verdicts import seed_noise
from ._weighted_contrastive import ContinuousLabelFits
from ._weighted_contrastive import SupervisedPrototypes
from ._weighted_contrastive import WeightedNetworks
from ._weighted_contrastive import continuous_label_fits
from ._weighted_contrastive import supervised_prototypes
from ._weighted_contrastive import weighted_network_setting
from ._weighted_contrastive import weighted_networks

__all__ = [
    "batch_negatives",
    "BatchNegatives",
    "Claim",
    "collapse_points",
    "CollapsePoints",
    "compare_means",
    "compare_mr2",
    "compare_reweighting",
    "continuous_label_fits",
    "ContinuousLabelFits",
    "contrastive_model",
    "contrastive_networks",
    "contrastive_setting",
    "ContrastiveNetworks",
    "exceeds",
    "ExperimentResult",
    "inverse_reweighting_checks",
    "markdown_table",
    "matches",
    "Method",
    "mr2_baseline",
    "mr2_setting",
    "MR2Baseline",
    "MR2Comparison",
    "primer_model",
    "primer_network",
    "primer_setting",
    "primer_ufm",
    "PrimerNetwork",
    "PrimerUFM",
    "quoted_reweighting_results",
    "range_noise",
    "record_claims",
    "reweighting_setting",
    "ReweightingComparison",
    "run_jobs",
    "seed_noise",
    "seli_model",
    "seli_network",
    "seli_ridge_path",
    "seli_setting",
    "seli_ufm",
    "SeliNetwork",
    "SeliRidgePath",
    "SeliUFM",
    "Setting",
    "supervised_prototypes",
    "SupervisedPrototypes",
    "Verdict",
    "weighted_network_setting",
    "weighted_networks",
    "WeightedNetworks",
]
