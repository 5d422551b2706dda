"""ncbook: the geometry of neural collapse under class imbalance, as a tested package.

Subpackages follow the course: :mod:`ncbook.geometry` (simplex ETF, SELI),
:mod:`ncbook.metrics` (NC1-NC4, accuracies), :mod:`ncbook.losses`,
:mod:`ncbook.reweighting`, :mod:`ncbook.margins`, :mod:`ncbook.contrastive`,
:mod:`ncbook.dgp`, :mod:`ncbook.data`, :mod:`ncbook.models`, :mod:`ncbook.ufm`,
:mod:`ncbook.train`, :mod:`ncbook.plotting` and :mod:`ncbook.exercises`.

Docstrings and messages use the book's notation (its Notation page): one letter per concept, e.g.
``tau`` the temperature (keyword ``temperature`` everywhere), ``pi_c`` the class probabilities,
``u_c`` the weight of class ``c`` in a weighted loss, ``sigma_c^2`` the spread of class ``c``, shapes in
PyTorch's orientation (features ``(n, d)``, classifier ``(C, d)``). Where a public keyword keeps a
paper's letter (``lambda_1``, ``c_bar``, ``sbar``, the macro exponent ``gamma``, the class-balanced
``beta``), its docstring names the book's symbol (``pi_1``, ``gamma_bar``, ``sigma_bar^2``, ``kappa``, ``zeta``).
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
