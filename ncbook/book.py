"""Small helpers for the chapters themselves (not for the maths).

``glue`` stores a computed number for ``{glue:text}`` in the chapter's prose. myst-nb formats
``{glue:text}`name:.3f``` by reading the value's plain-text form back as a float, which fails
for ``np.float64(...)`` and ``tensor(...)`` reprs; this wrapper stores plain Python numbers.
Outside a book build (e.g. on Colab without myst-nb) it does nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["glue"]


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    return value


def glue(name: str, value: Any, display: bool = False) -> Any:
    """Store ``value`` under ``name`` for ``{glue:text}`` / ``{glue}`` and return it.

    Parameters
    ----------
    name : str
        The glue key used in the chapter's text.
    value : number, 0-d array or tensor, or any object
        0-d numpy arrays, numpy scalars and 0-d tensors are stored as Python numbers.
    display : bool
        Also display the value in the cell's output.

    Returns
    -------
    The stored value (so ``x = glue("x", compute())`` works).
    """
    value = _plain(value)
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # not building the book: nothing to store
        return value
    _myst_glue(name, value, display=display)
    return value
