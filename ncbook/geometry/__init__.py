"""Reference geometries: simplex ETF, Gram and cosine utilities, SEL/SELI, Procrustes.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples. Shapes follow
PyTorch: features ``(n, d)``, classifier ``(C, d)``.
"""

from ._etf import cosine_matrix
from ._etf import etf_gram
from ._etf import frobenius_distance
from ._etf import gram
from ._etf import procrustes_align
from ._etf import procrustes_r2
from ._etf import simplex_etf
from ._seli import SELIGeometry
from ._seli import sel_matrix
from ._seli import seli_distances
from ._seli import seli_geometry
from ._seli import seli_step_closed_form
from ._seli import seli_step_limits

__all__ = [
    "cosine_matrix",
    "etf_gram",
    "frobenius_distance",
    "gram",
    "procrustes_align",
    "procrustes_r2",
    "simplex_etf",
    "SELIGeometry",
    "sel_matrix",
    "seli_distances",
    "seli_geometry",
    "seli_step_closed_form",
    "seli_step_limits",
]
