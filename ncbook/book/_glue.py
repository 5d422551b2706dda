"""Small helpers for the chapters themselves (not for the maths).

``glue`` stores a computed number under a name. In the HTML book, myst-nb pastes it into the
prose (``{glue:text}`name:.3f```); in the reader notebooks (Colab, Jupyter, student versions)
the paragraphs that quote glued numbers are code cells calling ``show``, which fills the
paragraph with the values of the reader's own run and displays it as Markdown.

myst-nb formats ``{glue:text}`name:.3f``` by reading the value's plain-text form back as a
float, which fails for ``np.float64(...)`` and ``tensor(...)`` reprs; ``glue`` stores plain
Python numbers.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["fill", "glue", "glued", "show"]

#: values glued in this kernel, by name (read by :func:`show`)
_GLUED: dict[str, Any] = {}

#: environment variable set by the reader notebooks' first cell: no myst-nb records there
READER_ENV = "NCBOOK_NOTEBOOK"

# a placeholder in a ``show`` template: {{name}} or {{name:format_spec}}
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*(?::([^{}]*))?\}\}")


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    return value


def _myst_records_wanted() -> bool:
    return os.environ.get(READER_ENV, "") != "reader"


def glue(name: str, value: Any, display: bool = False) -> None:
    """Store ``value`` under ``name`` for ``{glue:text}`` in the book and for :func:`show`.

    Parameters
    ----------
    name : str
        The glue key used in the chapter's text.
    value : number, 0-d array or tensor, str, or any object
        0-d numpy arrays, numpy scalars and 0-d tensors are stored as Python numbers.
    display : bool
        Also display the value in the cell's output (as its plain-text form).

    Returns
    -------
    None
        Nothing, so that a cell ending with a ``glue`` call leaves no stray output.

    Notes
    -----
    During a book build (myst-nb installed and the environment variable ``NCBOOK_NOTEBOOK`` not
    set to ``"reader"``) the value is also recorded for myst-nb, as an output that the book
    consumes and never shows. In the reader notebooks nothing is emitted unless ``display``.

    Examples
    --------
    >>> glue("answer", 42)
    >>> glued("answer")
    42
    """
    value = _plain(value)
    _GLUED[name] = value
    if _myst_records_wanted():
        try:
            from myst_nb import glue as _myst_glue
        except ImportError:  # not building the book: the kernel keeps the value for show()
            _myst_glue = None
        if _myst_glue is not None:
            _myst_glue(name, value, display=False)
    if display:
        from IPython.display import display as _display

        _display({"text/plain": _text(value)}, raw=True)


def glued(name: str) -> Any:
    """The value glued under ``name`` in this kernel.

    Raises
    ------
    KeyError
        If nothing was glued under ``name`` (run the cell that computes it first).
    """
    try:
        return _GLUED[name]
    except KeyError:
        raise KeyError(f"nothing glued under {name!r} yet: run the cell that computes it first "
                       f"(known: {sorted(_GLUED)})") from None


def _text(value: Any, spec: str = "") -> str:
    data = getattr(value, "data", None)  # IPython.display.Markdown and friends
    if isinstance(data, str):
        value = data
    if spec:
        try:
            return format(float(value) if not isinstance(value, str) else value, spec)
        except (TypeError, ValueError):
            return format(str(value), spec) if isinstance(value, str) else str(value)
    return str(value)


def fill(template: str) -> str:
    """``template`` with every ``{{name}}`` / ``{{name:spec}}`` replaced by the glued value.

    Examples
    --------
    >>> glue("nc1_demo", 0.012345)
    >>> fill("NC1 is {{nc1_demo:.3f}}.")
    'NC1 is 0.012.'
    """
    return _PLACEHOLDER.sub(lambda m: _text(glued(m.group(1)), m.group(2) or ""), template)


def show(template: str) -> None:
    """Display ``template`` as Markdown with the glued values of this run filled in.

    The reader notebooks call this where the book's prose quotes computed numbers, so that the
    sentence shows the numbers of the run the reader just made. The output carries both
    ``text/markdown`` and ``text/plain``.

    Parameters
    ----------
    template : str
        Markdown with placeholders ``{{name}}`` or ``{{name:format_spec}}`` (a Python format
        spec such as ``.3f``).

    Raises
    ------
    KeyError
        If a placeholder names a value not glued yet.
    """
    from IPython.display import display as _display

    text = fill(template)
    _display({"text/markdown": text, "text/plain": text}, raw=True)
