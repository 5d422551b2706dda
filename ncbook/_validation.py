"""Argument checks shared by every public function of :mod:`ncbook`.

Each helper validates one kind of argument at the public boundary and raises a
``ValueError`` or ``TypeError`` whose message names the argument, the allowed
range and the value received. Private helpers trust their inputs.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

__all__ = [
    "as_float64",
    "check_counts",
    "check_finite",
    "check_in",
    "check_int",
    "check_labels",
    "check_logits_labels",
    "check_matrix",
    "check_positive",
    "check_nonnegative",
    "check_probabilities",
    "check_reduction",
    "check_same_length",
    "check_square",
    "check_symmetric",
    "reduce",
]

REDUCTIONS = ("none", "mean", "sum")


def _short(value: Any, limit: int = 80) -> str:
    text = np.array2string(np.asarray(value), threshold=12) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def check_in(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``; else raise ``ValueError``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}.")
    return value


def check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an ``int`` if it is an integer (not a bool) ``>= minimum``; else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_reduction(reduction: str) -> str:
    """Check the ``reduction`` argument of a loss (``"none"``, ``"mean"`` or ``"sum"``)."""
    return check_in("reduction", reduction, REDUCTIONS)


def reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
    """Apply the reduction contract to per-sample ``values`` of shape ``(n,)``."""
    check_reduction(reduction)
    if reduction == "none":
        return values
    if reduction == "sum":
        return values.sum()
    return values.mean()


def check_positive(name: str, value: float, *, allow_inf: bool = False) -> float:
    """Check a real scalar is ``> 0`` (and finite unless ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}.")
    value = float(value)
    if math.isnan(value) or value <= 0 or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}.")
    return value


def check_nonnegative(name: str, value: float) -> float:
    """Check a real scalar is ``>= 0`` and finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}.")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}.")
    return value


def check_counts(counts: Any, name: str = "counts", *, min_classes: int = 1) -> np.ndarray:
    """Return per-class sample counts as a 1-D ``int64`` array, all positive.

    Raises
    ------
    ValueError
        If ``counts`` is not 1-D, has fewer than ``min_classes`` entries, holds
        non-integers, or any entry is ``<= 0`` (an empty class).
    """
    arr = _to_numpy(counts)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of per-class counts; got shape {arr.shape}.")
    if arr.size < min_classes:
        raise ValueError(f"{name} must hold at least {min_classes} classes; got {arr.size}.")
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.all(np.isfinite(arr))):
        raise ValueError(f"{name} must be finite integers; got {_short(arr)}.")
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must be integers; got {_short(arr)}.")
    bad = np.flatnonzero(arr <= 0)
    if bad.size:
        raise ValueError(
            f"{name} must be positive integers; got {_short(arr)} (class {int(bad[0])} is "
            f"{'empty' if arr[bad[0]] == 0 else 'negative'}). Drop empty classes first."
        )
    return arr.astype(np.int64)


def check_probabilities(p: Any, name: str = "class_probs", *, atol: float = 1e-8, strictly_positive: bool = True) -> np.ndarray:
    """Return a probability vector as float64, checking it lies on the simplex.

    Raises
    ------
    ValueError
        If ``p`` is not 1-D, has a negative (or, with ``strictly_positive``, zero)
        entry, or does not sum to 1 within ``atol``.
    """
    arr = _to_numpy(p).astype(np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {_short(arr)}.")
    if strictly_positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be strictly positive (every class present); got {_short(arr)}.")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative; got {_short(arr)}.")
    if abs(arr.sum() - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1; got sum {arr.sum():.10g}. Normalise it first.")
    return arr


def check_finite(name: str, x: Any) -> Any:
    """Raise ``ValueError`` if ``x`` holds NaN or infinity; return ``x`` unchanged."""
    ok = torch.isfinite(x).all().item() if isinstance(x, torch.Tensor) else np.all(np.isfinite(np.asarray(x)))
    if not ok:
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values.")
    return x


def check_matrix(name: str, x: Any, *, ndim: int = 2, shape: tuple | None = None) -> Any:
    """Check a tensor/array has ``ndim`` dimensions and, where given, the ``shape``
    (``None`` entries are free). Returns ``x`` unchanged."""
    if not isinstance(x, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray; got {type(x).__name__}.")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {tuple(x.shape)}.")
    if shape is not None:
        for axis, (want, got) in enumerate(zip(shape, x.shape)):
            if want is not None and want != got:
                raise ValueError(f"{name} must have shape {shape} (axis {axis} = {want}); got {tuple(x.shape)}.")
    return x


def check_square(name: str, x: Any) -> Any:
    """Check ``x`` is a square 2-D matrix."""
    check_matrix(name, x)
    if x.shape[0] != x.shape[1]:
        raise ValueError(f"{name} must be square; got shape {tuple(x.shape)}.")
    return x


def check_symmetric(name: str, x: Any, *, atol: float = 1e-8) -> Any:
    """Check ``x`` is square and symmetric within ``atol``."""
    check_square(name, x)
    a = _to_numpy(x).astype(np.float64)
    if not np.allclose(a, a.T, atol=atol, rtol=0):
        raise ValueError(f"{name} must be symmetric; max |x - x^T| = {np.abs(a - a.T).max():.3g}.")
    return x


def check_labels(labels: Any, num_classes: int | None = None, name: str = "labels") -> torch.Tensor:
    """Return integer labels as a 1-D ``int64`` tensor in ``[0, num_classes)``."""
    t = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(np.asarray(labels))
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n,); got shape {tuple(t.shape)}.")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers; got dtype {t.dtype}.")
    t = t.long()
    if t.numel() and t.min().item() < 0:
        raise ValueError(f"{name} must be >= 0; got minimum {t.min().item()}.")
    if num_classes is not None and t.numel() and t.max().item() >= num_classes:
        raise ValueError(f"{name} must be < num_classes = {num_classes}; got maximum {t.max().item()}.")
    return t


def check_logits_labels(logits: Any, labels: Any, num_classes: int | None = None) -> tuple[int, int]:
    """Check a loss's inputs: ``logits`` a 2-D tensor ``(n, C)``, ``labels`` an int64 tensor ``(n,)`` in ``[0, C)``.

    ``num_classes``, when given, must equal ``C``. Returns ``(n, C)``.
    """
    if not isinstance(logits, torch.Tensor) or logits.ndim != 2:
        raise ValueError(f"logits must be a 2-D tensor of shape (n, C); got {getattr(logits, 'shape', type(logits))}.")
    n, c = logits.shape
    if num_classes is not None and c != num_classes:
        raise ValueError(f"logits must have num_classes = {num_classes} columns; got shape {tuple(logits.shape)}.")
    if not isinstance(labels, torch.Tensor) or labels.shape != (n,) or labels.dtype != torch.int64:
        raise ValueError(f"labels must be an int64 tensor of shape ({n},); got {getattr(labels, 'shape', type(labels))}.")
    if n and (int(labels.min()) < 0 or int(labels.max()) >= c):
        raise ValueError(f"labels must lie in [0, {c}); got range [{int(labels.min())}, {int(labels.max())}].")
    return n, c


def check_same_length(**arrays: Any) -> int:
    """Check every keyword array has the same first dimension; return it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"arguments must have the same number of rows; {desc}.")
    return next(iter(lengths.values()))


def as_float64(x: Any) -> np.ndarray:
    """A float64 numpy copy of a tensor or array-like (for geometry and solvers)."""
    return _to_numpy(x).astype(np.float64)
