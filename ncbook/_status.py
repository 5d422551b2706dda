"""One status vocabulary for every solver in ncbook (cvxpy's discipline).

A solver returns a small frozen result whose ``status`` is one of:

- ``"optimal"``: the solver's certificate holds (a duality gap, a KKT residual or a gradient norm
  below the tolerance the docstring states);
- ``"inaccurate"``: a usable solution whose certificate does not hold; returned with an
  :class:`InaccurateSolutionWarning`;
- no usable solution: :class:`SolverError` is raised, never returned.
"""

from __future__ import annotations

import warnings
from typing import Literal

__all__ = ["OPTIMAL", "INACCURATE", "STATUSES", "Status", "SolverError", "InaccurateSolutionWarning", "settle_status"]

OPTIMAL = "optimal"
INACCURATE = "inaccurate"
STATUSES = (OPTIMAL, INACCURATE)
Status = Literal["optimal", "inaccurate"]


class SolverError(RuntimeError):
    """Raised when a solver returns no usable solution (diverged, infeasible, non-finite)."""


class InaccurateSolutionWarning(UserWarning):
    """Warned when a solver returns a solution whose optimality certificate does not hold."""


def settle_status(certified: bool, *, solver: str, detail: str, stacklevel: int = 3) -> Status:
    """Return ``"optimal"`` if ``certified``, else warn :class:`InaccurateSolutionWarning` and return ``"inaccurate"``.

    ``solver`` names the routine and ``detail`` says what the certificate measured, e.g.
    ``"duality gap 3.4e-08 > 1e-09"``.
    """
    if certified:
        return OPTIMAL
    warnings.warn(f"{solver}: solution inaccurate ({detail}); it is returned with status 'inaccurate'.",
                  InaccurateSolutionWarning, stacklevel=stacklevel)
    return INACCURATE
