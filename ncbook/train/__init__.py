"""The training loop shared by every chapter: loss protocol, schedules, evaluation, checkpoints, cost estimates."""

from ._checkpoint import load_checkpoint
from ._cost import ChapterCost
from ._cost import Throughput
from ._cost import fit_seconds
from ._cost import format_seconds
from ._cost import in_parallel
from ._cost import measure_contrastive
from ._cost import measure_fit
from ._cost import measure_steps
from ._cost import steps_seconds
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
from ._schedule import lr_lambda
from ._schedule import mittag_leffler_alpha
from ._parallel import fit_run
from ._parallel import run_parallel
from ._weighted import ContrastiveRun
from ._weighted import embed
from ._weighted import fit_weighted_contrastive

__all__ = [
    "ChapterCost",
    "ContrastiveFit",
    "ContrastiveRun",
    "class_mean_cosines",
    "History",
    "init_distributed",
    "is_main_process",
    "embed",
    "evaluate",
    "fit",
    "fit_contrastive",
    "fit_seconds",
    "format_seconds",
    "in_parallel",
    "fit_run",
    "fit_weighted_contrastive",
    "load_checkpoint",
    "lr_lambda",
    "measure_contrastive",
    "measure_fit",
    "measure_steps",
    "mittag_leffler_alpha",
    "run_parallel",
    "save_checkpoint",
    "seed_everything",
    "steps_seconds",
    "Throughput",
]
