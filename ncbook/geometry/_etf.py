"""Simplex ETF and Gram-matrix utilities.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` rows.

Non-finite inputs: :func:`gram` and :func:`cosine_matrix` do not check for NaN or infinity (they run
on any device without waiting for it): such an entry gives NaN or infinite entries of the result.
A zero row has cosine 0 with every row.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.spatial import procrustes

from .._validation import _numeric, as_float64, check_array, check_int, check_matrix, check_positive, unit_rows

__all__ = ["simplex_etf", "etf_gram", "gram", "cosine_matrix", "frobenius_distance", "procrustes_align", "procrustes_r2"]


def etf_gram(num_classes: int) -> np.ndarray:
    r"""The Gram matrix of the unit-norm simplex ETF, :math:`\frac{C}{C-1}(I - \frac{1}{C}11^\top)`.

    Parameters
    ----------
    num_classes : int
        ``C >= 2``.

    Returns
    -------
    ndarray of shape (C, C), float64: ones on the diagonal, ``-1/(C-1)`` elsewhere.

    Raises
    ------
    ValueError
        If ``num_classes < 2``.

    References
    ----------
    Papyan, Han, Donoho, "Prevalence of neural collapse ...", PNAS 2020, Definition 1.

    Examples
    --------
    >>> etf_gram(3).round(4).tolist()
    [[1.0, -0.5, -0.5], [-0.5, 1.0, -0.5], [-0.5, -0.5, 1.0]]
    """
    c = check_int("num_classes", num_classes, 2)
    return (np.eye(c) - np.ones((c, c)) / c) * c / (c - 1)


def simplex_etf(num_classes: int, dim: int | None = None, *, seed: int | None = None) -> np.ndarray:
    r"""Rows of a unit-norm simplex equiangular tight frame.

    Every row has norm 1 and every pair has cosine :math:`-1/(C-1)`.

    Parameters
    ----------
    num_classes : int
        ``C >= 2``.
    dim : int, optional
        Ambient dimension ``d >= C - 1``; defaults to ``C - 1``.
    seed : int, optional
        If given, the frame is rotated by a random orthogonal matrix drawn with
        this seed; otherwise a fixed, deterministic orientation is returned.

    Returns
    -------
    ndarray of shape (C, d), float64.

    Raises
    ------
    ValueError
        If ``C < 2`` or ``d < C - 1`` (a simplex ETF needs ``C - 1`` dimensions).

    Examples
    --------
    >>> M = simplex_etf(3)
    >>> M.shape
    (3, 2)
    >>> bool(np.allclose(M @ M.T, etf_gram(3)))
    True
    """
    g = etf_gram(num_classes)
    c = g.shape[0]
    seed = check_int("seed", seed, 0, allow_none=True)
    d = c - 1 if dim is None else dim
    d = check_int("dim", d, c - 1, what=f"num_classes - 1 = {c - 1}")
    vals, vecs = np.linalg.eigh(g)
    top = vecs[:, 1:] * np.sqrt(np.clip(vals[1:], 0, None))  # (C, C-1): drop the zero eigenvalue
    out = np.zeros((c, int(d)))
    out[:, : c - 1] = top
    if seed is not None:
        q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((int(d), int(d))))
        out = out @ (q * np.sign(np.diag(r)))
    return out


def gram(x):
    """Gram matrix ``x @ x.T`` of the rows of ``x``.

    Parameters
    ----------
    x : Tensor or ndarray of shape (n, d)

    Returns
    -------
    Same type as ``x``, shape (n, n).

    Examples
    --------
    >>> gram(np.array([[1.0, 2.0], [0.0, 1.0]])).tolist()
    [[5.0, 2.0], [2.0, 1.0]]
    """
    check_matrix("x", x)
    x = _promoted(x)
    return x @ x.T


def _promoted(x):
    """Floats keep their dtype; integers and bools become the default float dtype (tensors) or float64."""
    if isinstance(x, torch.Tensor):
        if x.is_complex():
            raise TypeError(f"x must be real; got dtype {x.dtype}.")
        return x if x.is_floating_point() else x.to(torch.get_default_dtype())
    _numeric("x", x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def cosine_matrix(x, eps: float | None = None):
    """Pairwise cosine similarities of the rows of ``x``.

    Parameters
    ----------
    x : Tensor or ndarray of shape (n, d)
        Integer inputs are promoted to the default float dtype (tensors) or float64 (arrays).
    eps : float, optional
        Floor on the row norms (a zero row gives cosines of 0). Defaults to the smallest
        normal number of ``x``'s dtype, which never rounds to 0 (a fixed ``1e-12`` does in
        float16).

    Returns
    -------
    Same type as ``x``, shape (n, n), same float dtype.

    Examples
    --------
    >>> cosine_matrix(torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=torch.float16))
    tensor([[0., 0.],
            [0., 1.]], dtype=torch.float16)
    """
    check_matrix("x", x)
    eps = None if eps is None else check_positive("eps", eps)
    x = _promoted(x)
    if isinstance(x, torch.Tensor):
        u = unit_rows(x, dim=1) if eps is None else x / x.norm(dim=1, keepdim=True).clamp_min(eps)
    else:
        floor = np.finfo(x.dtype).tiny if eps is None else eps
        u = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), floor)
    return u @ u.T


def frobenius_distance(a, b):
    r"""Scale-free Frobenius distance :math:`\| A/\|A\|_F - B/\|B\|_F \|_F`.

    Parameters
    ----------
    a, b : Tensor or ndarray of the same shape

    Returns
    -------
    float in ``[0, 2]`` (a 0-d tensor when ``a`` is a tensor, so autograd survives).

    Raises
    ------
    ValueError
        If the shapes differ or either matrix is zero.

    Examples
    --------
    >>> round(frobenius_distance(np.eye(2), 3 * np.eye(2)), 12)  # scale-free
    0.0
    """
    return _frobenius_distance(a, b, "a", "b")


def _frobenius_distance(a, b, a_name: str, b_name: str):
    """:func:`frobenius_distance` with the caller's argument names in its messages."""
    if isinstance(a, torch.Tensor) and not a.is_complex():
        a = a if a.is_floating_point() else a.to(torch.get_default_dtype())
        b = b if isinstance(b, torch.Tensor) and not b.is_complex() else torch.as_tensor(_numeric(b_name, b))
        b = b.to(device=a.device, dtype=a.dtype)
    else:
        a, b = as_float64(a, a_name), as_float64(b, b_name)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{a_name} and {b_name} must have the same shape; got {tuple(a.shape)} and {tuple(b.shape)}.")
    norms = (a.norm(), b.norm()) if isinstance(a, torch.Tensor) else (np.linalg.norm(a), np.linalg.norm(b))
    for name, norm in zip((a_name, b_name), norms):
        if float(norm) == 0:  # exactly zero only for a zero matrix: a direction is all the distance compares
            raise ValueError(f"{name} must be a non-zero matrix (the distance compares directions; a zero matrix has none).")
    if isinstance(a, torch.Tensor):
        return (a / norms[0] - b / norms[1]).norm()
    return float(np.linalg.norm(a / norms[0] - b / norms[1]))


def procrustes_align(x, y) -> tuple[np.ndarray, np.ndarray, float]:
    """Align ``y`` onto ``x`` by Procrustes analysis (scipy), padding the narrower one with zeros.

    Both are centred and scaled to unit Frobenius norm; ``y`` is then rotated or reflected
    to best match ``x``.

    Parameters
    ----------
    x : array-like of shape (n, d1)
    y : array-like of shape (n, d2)

    Returns
    -------
    x_std : ndarray of shape (n, max(d1, d2)), the standardised ``x``
    y_aligned : ndarray of the same shape, ``y`` standardised and aligned
    disparity : float in ``[0, 1]``, the remaining sum of squared differences

    Raises
    ------
    ValueError
        If the arrays are not 2-D with the same number of rows.

    References
    ----------
    Gower, "Generalized Procrustes analysis", Psychometrika 1975;
    :func:`scipy.spatial.procrustes`.

    Examples
    --------
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> _, _, disparity = procrustes_align(x, x[:, ::-1])  # a reflection aligns exactly
    >>> round(disparity, 12)
    0.0
    """
    return _procrustes(x, y, "x", "y")


def _procrustes(x, y, x_name, y_name):
    x, y = check_array(x_name, x, ndim=2, min_rows=2), check_array(y_name, y, ndim=2, min_rows=2)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{x_name} and {y_name} must have the same number of rows; got {x.shape} and {y.shape}.")
    for name, v in ((x_name, x), (y_name, y)):
        if np.linalg.norm(v - v.mean(0)) <= 4.0 * np.sqrt(v.size) * np.finfo(np.float64).eps * np.abs(v).max():
            raise ValueError(f"{name} must hold at least 2 distinct points (rows): all its rows are equal, so it has no "
                             "shape to align (e.g. all-zero features).")
    width = max(x.shape[1], y.shape[1])
    x = np.pad(x, ((0, 0), (0, width - x.shape[1])))
    y = np.pad(y, ((0, 0), (0, width - y.shape[1])))
    x_std, y_aligned, disparity = procrustes(x, y)
    return x_std, y_aligned, float(disparity)


def procrustes_r2(z, reference) -> float:
    """Procrustes agreement ``1 - disparity`` of a point cloud ``z`` with a ``reference`` (scipy).

    Both are centred, scaled to unit Frobenius norm, and ``z`` is rotated or reflected
    onto ``reference``; the narrower one is padded with zero columns. The same argument
    order as :func:`ncbook.metrics.r2_procrustes` (the value is symmetric anyway).

    Parameters
    ----------
    z : array-like of shape (n, d1)
    reference : array-like of shape (n, d2)

    Returns
    -------
    float in ``[0, 1]``; 1 when ``z`` is a similarity transform of ``reference``.

    Raises
    ------
    ValueError
        If the arrays are not 2-D with the same number of rows.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> round(procrustes_r2(3 * x[:, ::-1] + 1, x), 12)
    1.0

    References
    ----------
    Gower, "Generalized Procrustes analysis", Psychometrika 1975;
    :func:`scipy.spatial.procrustes`.
    """
    return 1.0 - _procrustes(reference, z, "reference", "z")[2]
