"""Argument checks shared by every public function of :mod:`ncbook`.

Each helper validates one kind of argument at the public boundary and raises a
``ValueError`` or ``TypeError`` whose message names the argument, the allowed
range and the value received. Private helpers trust their inputs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import torch

__all__ = [
    "as_float64",
    "check_array",
    "check_batch",
    "check_bool",
    "check_callable",
    "check_path",
    "check_class_vector",
    "check_counts",
    "check_device",
    "check_features",
    "check_finite",
    "check_in",
    "check_instance",
    "check_int",
    "check_labels",
    "check_logits",
    "check_logits_labels",
    "check_matrix",
    "check_positive",
    "check_nonnegative",
    "check_probabilities",
    "check_psd",
    "check_reduction",
    "check_same_length",
    "check_square",
    "check_symmetric",
    "check_text",
    "reduce",
    "safe_eps",
    "unit_rows",
]

REDUCTIONS = ("none", "mean", "sum")


def _short(value: Any, limit: int = 80) -> str:
    text = np.array2string(np.asarray(value), threshold=12) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()  # numpy has no bfloat16
    try:
        return np.asarray(x)
    except ValueError:  # ragged nested sequences
        return np.asarray(x, dtype=object)


def _numeric(name: str, x: Any) -> np.ndarray:
    """``x`` as a numpy array of real numbers (bool, integer or float dtype), else ``TypeError`` naming it."""
    arr = _to_numpy(x)
    if arr.dtype.kind not in "biuf":
        what = "None" if x is None else f"{type(x).__name__} of dtype {arr.dtype}" if hasattr(x, "dtype") or \
            isinstance(x, (list, tuple)) else f"{type(x).__name__} {_short(x)}"
        raise TypeError(f"{name} must hold real numbers; got {what}.")
    return arr


def check_in(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``; else raise ``ValueError``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}.")
    return value


def _is_int(value: Any) -> bool:
    """A Python or numpy integer, or a 0-d integer tensor/array; never a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 0:
        kind = value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool \
            if isinstance(value, torch.Tensor) else value.dtype.kind not in "iu"
        return not kind
    return False


def check_int(name: str, value: Any, minimum: int, maximum: int | None = None, *, allow_none: bool = False,
              what: str = "") -> int | None:
    """Return ``value`` as an ``int`` if it is an integer in ``[minimum, maximum]``; else raise.

    Python ints, numpy integers and 0-d integer tensors pass; bools and floats do not
    (like scikit-learn's ``check_scalar``). ``what`` is a short gloss added to the message,
    e.g. ``"the embedding dimension d"``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (the message names its type).
    ValueError
        If it lies outside the range.

    Examples
    --------
    >>> import numpy as np
    >>> check_int("num_classes", np.int64(10), 2)
    10
    >>> check_int("num_classes", 1, 2)
    Traceback (most recent call last):
    ...
    ValueError: num_classes must be an integer >= 2; got 1.
    """
    if value is None and allow_none:
        return None
    gloss = f" ({what})" if what else ""
    bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer {bound}{' or None' if allow_none else ''}{gloss}; "
                        f"got {type(value).__name__} {value!r}.")
    if int(value) < minimum or (maximum is not None and int(value) > maximum):
        raise ValueError(f"{name} must be an integer {bound}{' or None' if allow_none else ''}{gloss}; got {int(value)}.")
    return int(value)


def check_bool(name: str, value: Any, *, allow_none: bool = False) -> bool | None:
    """Return ``value`` as a ``bool`` if it is one (Python or numpy bool, or a 0-d bool tensor); else raise.

    A string such as ``"no"`` would be truthy: it is refused, not read as True.

    Examples
    --------
    >>> check_bool("normalize", True)
    True
    >>> check_bool("normalize", "no")
    Traceback (most recent call last):
    ...
    TypeError: normalize must be True or False; got str 'no'.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, torch.Tensor) and value.ndim == 0 and value.dtype == torch.bool:
        return bool(value)
    raise TypeError(f"{name} must be True or False{' or None' if allow_none else ''}; got {type(value).__name__} {value!r}.")


def check_callable(name: str, value: Any, *, allow_none: bool = False) -> Any:
    """Return ``value`` if it is callable (or None with ``allow_none``); else raise ``TypeError``."""
    if (value is None and allow_none) or callable(value):
        return value
    raise TypeError(f"{name} must be callable{' or None' if allow_none else ''}; got {type(value).__name__} {value!r}.")


def check_path(name: str, value: Any, *, allow_none: bool = False) -> Any:
    """Return ``value`` if it is a path (``str`` or ``os.PathLike``, not empty); else raise ``TypeError``/``ValueError``."""
    import os

    if value is None and allow_none:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path){' or None' if allow_none else ''}; "
                        f"got {type(value).__name__} {value!r}.")
    if not str(value):
        raise ValueError(f"{name} must not be an empty path.")
    return value


def check_text(name: str, value: Any, *, allow_none: bool = False) -> str | None:
    """Return ``value`` if it is a non-empty string (a name or a label); else raise ``TypeError``/``ValueError``.

    Examples
    --------
    >>> check_text("chapter", "seli")
    'seli'
    >>> check_text("chapter", 3)
    Traceback (most recent call last):
    ...
    TypeError: chapter must be a string; got int 3.
    """
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string{' or None' if allow_none else ''}; got {type(value).__name__} {value!r}.")
    if not value:
        raise ValueError(f"{name} must not be an empty string.")
    return value


def check_instance(name: str, value: Any, cls: type, *, allow_none: bool = False, what: str = "") -> Any:
    """Return ``value`` if it is an instance of ``cls`` (or None with ``allow_none``); else raise ``TypeError``.

    ``what`` says where such an object comes from, e.g. ``"as measure_fit returns"``.

    Examples
    --------
    >>> check_instance("seconds", 2.5, float)
    2.5
    >>> check_instance("seconds", "2.5", float)
    Traceback (most recent call last):
    ...
    TypeError: seconds must be a float; got str '2.5'.
    """
    if (value is None and allow_none) or isinstance(value, cls):
        return value
    gloss = f" ({what})" if what else ""
    raise TypeError(f"{name} must be a {cls.__name__}{gloss}{' or None' if allow_none else ''}; "
                    f"got {type(value).__name__} {_short(value) if not isinstance(value, str) else repr(value)}.")


def check_device(name: str, value: Any, *, allow_none: bool = False) -> torch.device | None:
    """Return ``value`` as a ``torch.device`` (a device, a string such as ``"cuda:0"`` or an index).

    Raises
    ------
    TypeError
        If ``value`` is not a device, a string or an integer.
    ValueError
        If the string names no device type torch knows.

    Examples
    --------
    >>> check_device("device", "cpu")
    device(type='cpu')
    >>> check_device("device", "warp-drive")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device must name a device such as 'cpu', 'cuda' or 'cuda:0'; got 'warp-drive' ...
    """
    if value is None and allow_none:
        return None
    if isinstance(value, torch.device):
        return value
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a torch.device, a string such as 'cpu' or 'cuda:0', or an index"
                        f"{' or None' if allow_none else ''}; got {type(value).__name__} {value!r}.")
    try:
        return torch.device(value)
    except RuntimeError as err:
        raise ValueError(f"{name} must name a device such as 'cpu', 'cuda' or 'cuda:0'; got {value!r} ({err}).") from None


def safe_eps(dtype: torch.dtype) -> float:
    """The smallest positive normal number of a float ``dtype``: a floor that never rounds to 0.

    A fixed ``1e-12`` is 0 in float16, so ``x / max(|x|, 1e-12)`` is ``0 / 0`` for a zero row.

    Examples
    --------
    >>> safe_eps(torch.float16) > 0, safe_eps(torch.float64) < 1e-300
    (True, True)
    """
    return torch.finfo(dtype).tiny


def unit_rows(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``x`` divided by its norm along ``dim``; a zero row stays 0, with a zero gradient.

    The same values and gradients as ``F.normalize(x, dim=dim, eps=safe_eps(x.dtype))`` wherever the norm
    is a normal number; at a zero row ``F.normalize`` returns 0 too, but its gradient is the upstream
    gradient divided by the floor (about 1e308 in float64: one dead feature row would blow up an SGD step).
    Numerical helper shared by every cosine of the package.

    Examples
    --------
    >>> x = torch.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    >>> unit_rows(x).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    >>> torch.autograd.grad(unit_rows(x).sum(), x)[0][1].tolist()
    [0.0, 0.0]
    """
    norm = torch.linalg.vector_norm(x, dim=dim, keepdim=True)
    zero = norm <= torch.finfo(x.dtype).tiny  # False for a NaN norm: NaN and infinity are carried, not zeroed
    return torch.where(zero, torch.zeros_like(x), x / torch.where(zero, torch.ones_like(norm), norm))


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


def check_sequence(name: str, values: Any, check: Callable[[str, Any], Any], *, what: str = "numbers",
                   one: str = "number", allow_empty: bool = False) -> tuple:
    """Check ``values`` is a sequence (not a string) and each entry passes ``check("each entry of <name>", v)``.

    ``what`` names the entries in the plural for the ``TypeError`` and ``one`` in the singular for the
    ``ValueError`` of an empty sequence (refused unless ``allow_empty``). Returns the checked entries as a tuple.

    >>> check_sequence("ratios", [10, 100], lambda n, v: check_int(n, v, 1), what="integers >= 1", one="integer >= 1")
    (10, 100)
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of {what}; got {type(values).__name__} {values!r}.")
    out = tuple(check(f"each entry of {name}", v) for v in values)
    if not out and not allow_empty:
        raise ValueError(f"{name} must hold at least one {one}; got an empty sequence.")
    return out


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


def check_probabilities(p: Any, name: str = "class_probs", *, atol: float | None = None,
                        strictly_positive: bool = True) -> np.ndarray:
    """Return a probability vector as float64, checking it lies on the simplex.

    The sum must be 1 within ``atol``; by default the tolerance follows the input's
    precision, ``max(1e-8, 4 C eps)`` with ``eps`` the machine epsilon of its float dtype
    (float64 for lists), so a vector normalised in float32 passes.

    Raises
    ------
    ValueError
        If ``p`` is not 1-D, has a negative (or, with ``strictly_positive``, zero)
        entry, or does not sum to 1 within the tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.array([5000, 2997, 1796, 1077, 645, 387, 232, 139, 83, 50], dtype=np.float32)
    >>> check_probabilities(counts / counts.sum()).shape
    (10,)
    """
    raw = _numeric(name, p)
    if atol is None:
        eps = np.finfo(raw.dtype).eps if raw.dtype.kind == "f" else np.finfo(np.float64).eps
        atol = max(1e-8, 4.0 * max(raw.size, 1) * float(eps))
    arr = raw.astype(np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {_short(arr)}.")
    if strictly_positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be strictly positive (every class present); got {_short(arr)}.")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative; got {_short(arr)}.")
    if abs(arr.sum() - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1 (within {atol:.2g}); got sum {arr.sum():.10g}. Normalise it first.")
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


def check_psd(name: str, x: Any, *, rtol: float = 1e-6) -> np.ndarray:
    """Check a symmetric matrix is positive semidefinite; return its eigenvalues (ascending, float64).

    The smallest eigenvalue may fall below 0 by round-off: ``rtol`` times ``max(1, largest eigenvalue)``
    (a solver's answer, or cosines computed in float32, pass; a matrix no set of vectors has does not).

    Examples
    --------
    >>> check_psd("gram", np.array([[1.0, -0.9, -0.9], [-0.9, 1.0, -0.9], [-0.9, -0.9, 1.0]]))
    Traceback (most recent call last):
    ...
    ValueError: gram must be positive semidefinite (a Gram matrix of vectors); smallest eigenvalue -0.8.
    """
    a = _to_numpy(x).astype(np.float64)
    vals = np.linalg.eigvalsh((a + a.T) / 2) if a.size else np.zeros(0)
    if vals.size and vals[0] < -rtol * max(1.0, float(vals[-1])):
        raise ValueError(f"{name} must be positive semidefinite (a Gram matrix of vectors); smallest eigenvalue "
                         f"{vals[0]:.3g}.")
    return vals


def check_labels(labels: Any, num_classes: int | None = None, name: str = "labels", *,
                 n: int | None = None, rows_of: str | None = None) -> torch.Tensor:
    """Return integer labels as a 1-D ``int64`` tensor in ``[0, num_classes)``.

    Any integer dtype passes (torch ``int8``...``int64``, ``uint8``, numpy integers, lists of
    ints); floats, complex numbers and bools are refused with the dtype named. ``n``, when
    given, is the required length.

    Examples
    --------
    >>> check_labels(torch.tensor([0, 2, 1], dtype=torch.int32), 3).dtype
    torch.int64
    >>> check_labels(torch.tensor([0.0, 1.0]))
    Traceback (most recent call last):
    ...
    TypeError: labels must hold integers (any integer dtype); got dtype torch.float32.
    """
    if isinstance(labels, torch.Tensor):
        t = labels
    else:
        arr = np.asarray(labels)
        if arr.dtype.kind not in "iub" and arr.size:
            raise TypeError(f"{name} must hold integers (any integer dtype); got dtype {arr.dtype}.")
        if arr.dtype.kind == "u" and arr.dtype.itemsize > 1:
            arr = arr.astype(np.int64)  # torch has no uint16/32/64 tensors everywhere
        t = torch.as_tensor(arr if arr.size else arr.astype(np.int64))
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers (any integer dtype); got dtype {t.dtype}.")
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n,); got shape {tuple(t.shape)} (dtype {t.dtype}).")
    if n is not None and t.shape[0] != n:
        of = f" of {rows_of}" if rows_of else ""
        raise ValueError(f"{name} must have length {n} (one label per row{of}); got {t.shape[0]}.")
    t = t.long()
    if t.numel():
        lo, hi = int(t.min()), int(t.max())
        if lo < 0 or (num_classes is not None and hi >= num_classes):
            allowed = f"lie in [0, {num_classes}) (num_classes = {num_classes})" if num_classes is not None else "be >= 0"
            raise ValueError(f"{name} must {allowed}; got range [{lo}, {hi}].")
    return t


def _as_float_tensor(name: str, x: Any) -> torch.Tensor:
    """A floating tensor: floats keep their dtype; integers and bools are promoted to the
    default float dtype (exactly, never truncated); anything else is refused."""
    if isinstance(x, np.ndarray):
        x = torch.as_tensor(x)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}.")
    if x.is_complex():
        raise TypeError(f"{name} must be real; got dtype {x.dtype}.")
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    return x


def check_logits(logits: Any, name: str = "logits", *, num_classes: int | None = None) -> torch.Tensor:
    """Return ``logits`` as a 2-D floating tensor ``(n, C)``.

    Floating tensors keep their dtype (float16, bfloat16, float32, float64); integer or bool
    tensors are promoted to ``torch.get_default_dtype()`` so a loss never truncates its
    float results to integers. ``num_classes``, when given, must equal ``C``.

    Examples
    --------
    >>> check_logits(torch.tensor([[6, 0]])).dtype
    torch.float32
    """
    t = _as_float_tensor(name, logits)
    if t.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor of shape (n, C); got shape {tuple(t.shape)}.")
    if num_classes is not None and t.shape[1] != num_classes:
        raise ValueError(f"{name} must have num_classes = {num_classes} columns; got shape {tuple(t.shape)}.")
    return t


def check_features(features: Any, name: str = "features", *, n: int | None = None) -> torch.Tensor:
    """Return ``features`` as a 2-D floating tensor ``(n, d)`` (integers promoted, as :func:`check_logits`)."""
    t = _as_float_tensor(name, features)
    if t.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor of shape (n, d); got shape {tuple(t.shape)}.")
    if n is not None and t.shape[0] != n:
        raise ValueError(f"{name} must have {n} rows (one per label); got shape {tuple(t.shape)}.")
    return t


def check_logits_labels(logits: Any, labels: Any, num_classes: int | None = None, *,
                        reduction: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Check a loss's inputs and return them as ``(logits, labels)``.

    ``logits``: a 2-D tensor ``(n, C)`` (integers promoted, see :func:`check_logits`);
    ``labels``: ``(n,)`` of any integer dtype in ``[0, C)``, returned as int64.
    ``num_classes``, when given, must equal ``C``. With ``reduction="mean"`` an empty batch is
    refused: its mean loss is 0/0 (``"sum"`` gives 0 and ``"none"`` the empty tensor, their values).

    Examples
    --------
    >>> z, y = check_logits_labels(torch.tensor([[0, 0]]), torch.tensor([0], dtype=torch.int32))
    >>> z.dtype, y.dtype
    (torch.float32, torch.int64)
    >>> check_logits_labels(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long), reduction="mean")
    Traceback (most recent call last):
    ...
    ValueError: logits must hold at least one row: the mean loss of an empty batch is undefined (0/0); got shape (0, 3).
    """
    t = check_logits(logits, num_classes=num_classes)
    n, c = t.shape
    y = check_labels(labels, c, n=n)
    check_batch("logits", t, reduction)
    return t, y


def check_batch(name: str, x: Any, reduction: str | None = "mean") -> Any:
    """Refuse an empty batch (no rows) when its mean is asked for (``reduction="mean"``); return ``x``.

    The check reads the shape only, so it never waits for a device.
    """
    if reduction == "mean" and len(x) == 0:
        raise ValueError(f"{name} must hold at least one row: the mean loss of an empty batch is undefined (0/0); "
                         f"got shape {tuple(x.shape)}.")
    return x


def check_class_vector(name: str, x: Any, num_classes: int | None = None, *, positive: bool = False,
                       signed: bool = False) -> torch.Tensor:
    """Return a per-class vector (weights, margins, factors) as a float64 tensor of shape ``(C,)``.

    Entries must be finite and ``>= 0`` (``> 0`` with ``positive``, any sign with ``signed``);
    ``num_classes``, when given, is the required length.

    Examples
    --------
    >>> check_class_vector("weight", [1, 2], 2).tolist()
    [1.0, 2.0]
    """
    t = x.detach().to(torch.float64) if isinstance(x, torch.Tensor) and not x.is_complex() \
        else torch.as_tensor(_numeric(name, x).astype(np.float64))
    if t.ndim != 1 or t.numel() == 0 or (num_classes is not None and t.numel() != num_classes):
        raise ValueError(f"{name} must have shape ({num_classes if num_classes is not None else 'C'},) "
                         f"(one entry per class); got shape {tuple(t.shape)}.")
    bad = ~torch.isfinite(t) | (torch.zeros_like(t, dtype=torch.bool) if signed else (t <= 0) if positive else (t < 0))
    if bad.any():
        rule = "" if signed else " and > 0" if positive else " and >= 0"
        raise ValueError(f"{name} must be finite{rule}; got {_short(t.cpu().numpy())}.")
    return t


def check_same_length(**arrays: Any) -> int:
    """Check every keyword array has the same first dimension; return it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"arguments must have the same number of rows; {desc}.")
    return next(iter(lengths.values()))


def as_float64(x: Any, name: str = "input") -> np.ndarray:
    """A float64 numpy copy of a tensor or array-like of real numbers (for geometry and solvers).

    Raises ``TypeError`` naming ``name`` for strings, None, complex or object arrays.
    """
    return _numeric(name, x).astype(np.float64)


def check_array(name: str, x: Any, *, ndim: int | tuple | None = None, shape: tuple | None = None,
                finite: bool = True, min_rows: int = 1) -> np.ndarray:
    """Return an array-like of real numbers (list, numpy array or tensor of any real dtype) as float64 numpy.

    ``ndim`` (an int or a tuple of allowed ones) and ``shape`` (``None`` entries free) are checked,
    as are at least ``min_rows`` rows and, with ``finite``, the absence of NaN and infinity.

    Examples
    --------
    >>> check_array("x", torch.ones(2, 3, dtype=torch.bfloat16), ndim=2).dtype
    dtype('float64')
    >>> check_array("x", [[1.0, float("nan")]], ndim=2)
    Traceback (most recent call last):
    ...
    ValueError: x must be finite; it holds NaN or infinite values.
    """
    arr = as_float64(x, name)
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if allowed is not None and arr.ndim not in allowed:
        want = " or ".join(str(d) for d in allowed)
        raise ValueError(f"{name} must have {want} dimensions; got shape {arr.shape}.")
    if shape is not None:
        check_matrix(name, arr, ndim=len(shape), shape=shape)
    if arr.ndim and arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} row{'s' if min_rows > 1 else ''}; got shape {arr.shape}.")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; it holds NaN or infinite values.")
    return arr
