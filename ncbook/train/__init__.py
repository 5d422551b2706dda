"""The training loop shared by every chapter: loss protocol, schedules, evaluation, checkpoints."""

from ._checkpoint import load_checkpoint
from ._contrastive import ContrastiveFit
from ._contrastive import class_mean_cosines
from ._contrastive import fit_contrastive
from ._checkpoint import save_checkpoint
from ._checkpoint import seed_everything
from ._distributed import init_distributed
from ._distributed import is_main_process
from ._loop import History
from ._loop import evaluate
from ._loop import fit
from ._loop import lr_lambda
from ._loop import mittag_leffler_alpha
from ._parallel import fit_run
from ._parallel import run_parallel
from ._results import device_name
from ._results import load_claims
from ._results import load_results
from ._results import record_claim
from ._results import save_result
from ._weighted import ContrastiveRun
from ._weighted import embed
from ._weighted import fit_weighted_contrastive

__all__ = [
    "ContrastiveFit",
    "ContrastiveRun",
    "class_mean_cosines",
    "History",
    "init_distributed",
    "is_main_process",
    "device_name",
    "embed",
    "evaluate",
    "fit",
    "fit_contrastive",
    "fit_run",
    "fit_weighted_contrastive",
    "load_checkpoint",
    "load_claims",
    "load_results",
    "lr_lambda",
    "mittag_leffler_alpha",
    "record_claim",
    "run_parallel",
    "save_result",
    "save_checkpoint",
    "seed_everything",
]
