"""ncbook: the geometry of neural collapse under class imbalance, as a tested package.

Subpackages follow the course: :mod:`ncbook.geometry` (simplex ETF, SELI),
:mod:`ncbook.metrics` (NC1-NC4, accuracies), :mod:`ncbook.losses`,
:mod:`ncbook.reweighting`, :mod:`ncbook.margins`, :mod:`ncbook.contrastive`,
:mod:`ncbook.dgp`, :mod:`ncbook.data`, :mod:`ncbook.models`, :mod:`ncbook.ufm`,
:mod:`ncbook.train`, :mod:`ncbook.plotting` and :mod:`ncbook.exercises`.
"""

from .profiles import checkpoint_dir
from ._status import InaccurateSolutionWarning
from ._status import SolverError
from .profiles import data_root
from .profiles import default_device
from .profiles import native_bf16
from .profiles import profile
from .profiles import results_dir
from .profiles import scale
from .profiles import show_progress
from .profiles import usable_cores

__version__ = "0.1.0"

__all__ = [
    "checkpoint_dir",
    "InaccurateSolutionWarning",
    "SolverError",
    "data_root",
    "default_device",
    "native_bf16",
    "profile",
    "results_dir",
    "scale",
    "show_progress",
    "usable_cores",
]
