"""The training loop shared by every chapter: loss protocol, schedules, evaluation, checkpoints."""

from ._checkpoint import load_checkpoint
from ._checkpoint import save_checkpoint
from ._checkpoint import seed_everything
from ._loop import History
from ._loop import evaluate
from ._loop import fit
from ._loop import lr_lambda

__all__ = [
    "History",
    "evaluate",
    "fit",
    "load_checkpoint",
    "lr_lambda",
    "save_checkpoint",
    "seed_everything",
]
