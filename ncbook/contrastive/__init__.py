"""Contrastive learning on imbalanced data: the convex program over class-mean Gram matrices.

Letters (the book's notation): ``C`` classes, ``k`` negatives per anchor, ``tau`` the temperature (keyword
``temperature``), ``pi = (pi_1, ..., pi_C)`` the class probabilities (keyword ``class_probs``; the paper writes
``lambda``), ``pi_1`` the majority's. ``A`` (C, C) is the Gram matrix of unit-norm class means (a correlation
matrix) and ``L(A)`` the contrastive risk (the paper writes ``S(A)``).

References
----------
Nguyen, Aeron, Brown, Ishwar, "Optimal Representations for Generalized Contrastive Learning
with Imbalanced Datasets", arXiv:2605.11291 (2026).
"""

from ._collapse import PAPER_THRESHOLDS
from ._collapse import class_means_from_gram
from ._collapse import collapse_margin
from ._collapse import collapse_threshold
from ._multisets import negative_distribution
from ._multisets import negative_multisets
from ._multisets import num_multiset_terms
from ._program import optimal_gram
from ._program import solve_gram
from ._risk import cl_risk
from ._risk import cl_risk_gradient
from ._solvers import GramResult
from ._solvers import gap_certificate

__all__ = [
    "GramResult",
    "PAPER_THRESHOLDS",
    "class_means_from_gram",
    "cl_risk",
    "cl_risk_gradient",
    "collapse_margin",
    "collapse_threshold",
    "gap_certificate",
    "negative_distribution",
    "negative_multisets",
    "num_multiset_terms",
    "optimal_gram",
    "solve_gram",
]
