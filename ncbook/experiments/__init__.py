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
from ._mr2_margins import MR2Baseline
from ._mr2_margins import MR2Comparison
from ._mr2_margins import compare_mr2
from ._mr2_margins import mr2_baseline
from ._mr2_margins import mr2_setting
from ._verdicts import Verdict
from ._verdicts import compare_means
from ._verdicts import exceeds
from ._verdicts import matches
from ._verdicts import seed_noise

__all__ = [
    "Claim",
    "ExperimentResult",
    "MR2Baseline",
    "MR2Comparison",
    "Setting",
    "Verdict",
    "compare_means",
    "compare_mr2",
    "exceeds",
    "markdown_table",
    "matches",
    "mr2_baseline",
    "mr2_setting",
    "record_claims",
    "run_jobs",
    "seed_noise",
]
