"""Reference geometries: simplex ETF, Gram and cosine utilities, SEL/SELI, Procrustes.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples. Shapes follow
PyTorch: features ``(n, d)``, classifier ``(C, d)``.
"""

from ._etf import cosine_matrix
from ._etf import etf_gram
from ._etf import frobenius_distance
from ._etf import gram
from ._etf import procrustes_r2
from ._etf import simplex_etf

__all__ = [
    "cosine_matrix",
    "etf_gram",
    "frobenius_distance",
    "gram",
    "procrustes_r2",
    "simplex_etf",
]
