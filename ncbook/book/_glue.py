"""Small helpers for the chapters themselves (not for the maths).

``glue`` stores a computed number under a name. In the HTML book, myst-nb pastes it into the
prose (``{glue:text}`name:.3f```); in the reader notebooks (Colab, Jupyter, student versions)
the paragraphs that quote glued numbers are code cells calling ``show``, which fills the
paragraph with the values of the reader's own run and displays it as Markdown.

One formatting of numbers on both routes. myst-nb stores a glued value's plain-text form
(IPython's ``text/plain``: the ``repr`` of a number or a string) and formats
``{glue:text}`name:spec``` by reading that text back with :func:`ast.literal_eval` and converting
it by the spec's last character: ``s`` (and no spec) to ``str``, ``b c d o x X`` to ``int``,
``e E f F g G n %`` to ``float``; any other spec (``>8``) formats the value read back as it is
(``myst_nb.core.variables.format_plain_text``, myst-nb 1.x). :func:`fill` (and so :func:`show`)
applies the same rule to the same plain text, so ``12406`` glued and quoted as ``,d`` reads
``12,406`` in the HTML page and in the notebook alike, and a ``.3f`` of ``7`` reads ``7.000`` in
both (``tests/test_glue_format.py`` compares the two over every spec the chapters use). A value
that cannot be formatted with its spec is an error on both routes (a warning that ``-W`` makes
fatal in the book, a ``ValueError`` here). ``glue`` stores plain Python numbers: a
``np.float64(...)`` or ``tensor(...)`` repr would not read back as a number.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

__all__ = ["fill", "format_glued", "glue", "glued", "show"]

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

        _display({"text/plain": format_glued(value)}, raw=True)


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


def _plain_text(value: Any) -> str:
    """The ``text/plain`` form myst-nb stores for ``value``: this kernel's IPython formatter (a ``repr``
    for numbers and strings), or IPython's default one outside a kernel."""
    try:
        from IPython import get_ipython
        from IPython.core.formatters import PlainTextFormatter
    except ImportError:  # pragma: no cover - IPython ships with Jupyter
        return repr(value)
    shell = get_ipython()
    formatter = shell.display_formatter.formatters["text/plain"] if shell is not None else PlainTextFormatter()
    text = formatter(value)
    return repr(value) if text is None else text


def format_glued(value: Any, spec: str = "") -> str:
    """``value`` formatted with ``spec`` exactly as myst-nb's ``{glue:text}`name:spec``` formats it.

    The plain-text form (:func:`_plain_text`) is read back with :func:`ast.literal_eval` (the text
    itself where that fails: ``nan``, ``inf``, an object's repr), converted by the spec's last
    character (``s`` or no spec: ``str``; ``b c d o x X``: ``int``; ``e E f F g G n %``: ``float``;
    anything else: as read back) and passed to :func:`format`. A Markdown object (``{glue:md}``)
    gives its Markdown text, unformatted.

    Parameters
    ----------
    value : number, str or any object
        A glued value (as :func:`glue` stores it: plain Python numbers).
    spec : str
        A Python format spec (``".3f"``, ``",d"``, ``">8"``, ``".1%"``), or ``""``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``spec`` does not apply to the value (``".3f"`` of a word): the book build fails on the
        same value with myst-nb's "Failed to format text/plain data" warning.

    Examples
    --------
    >>> format_glued(12406, ",d"), format_glued(12406, ">8"), format_glued(7, ".3f"), format_glued(0.25, ".1%")
    ('12,406', '   12406', '7.000', '25.0%')
    """
    data = getattr(value, "data", None)  # IPython.display.Markdown and friends ({glue:md})
    if isinstance(data, str) and not isinstance(value, str):
        return data
    text = _plain_text(value)
    try:
        read = ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        read = text
    kind = (spec or "s")[-1]
    try:
        if kind == "s":
            read = str(read)
        elif kind in "bcdoxX":
            read = int(read)
        elif kind in "eEfFgGn%":
            read = float(read)
        return format(read, spec or "s")
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"spec {spec!r} does not apply to the glued value {text} ({exc}); the book build "
                         "fails on it too (myst-nb: 'Failed to format text/plain data').") from None


def fill(template: str) -> str:
    """``template`` with every ``{{name}}`` / ``{{name:spec}}`` replaced by the glued value, formatted
    as the book formats ``{glue:text}`name:spec``` (:func:`format_glued`).

    Raises
    ------
    KeyError
        If a placeholder names a value not glued yet.
    ValueError
        If a placeholder's spec does not apply to its value (named in the message).

    Examples
    --------
    >>> glue("nc1_demo", 0.012345)
    >>> fill("NC1 is {{nc1_demo:.3f}}.")
    'NC1 is 0.012.'
    """
    return _PLACEHOLDER.sub(lambda m: _fill_one(m.group(1), m.group(2) or ""), template)


def _fill_one(name: str, spec: str) -> str:
    try:
        return format_glued(glued(name), spec)
    except ValueError as exc:
        raise ValueError(f"{{{{{name}{':' + spec if spec else ''}}}}}: {exc}") from None


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
