"""Sphinx directive ``listing``: a function of the package as its rendered docstring, then its code.

A chapter that prints a package function with ``literalinclude`` shows its numpydoc docstring as raw
reStructuredText (``:math:``, double backticks) beside the page's rendered mathematics. ``listing``
takes the same argument and options as ``literalinclude`` and shows, in one block, the docstring
rendered as on the API page (autodoc with napoleon, under the object's public name), then the code
without the docstring::

    ```{listing} ../ncbook/geometry/_etf.py
    :pyobject: simplex_etf
    ```

Options: ``pyobject`` (required: a function, a class or ``Class.method``), ``class`` (classes of the
block; ``answer-<label>`` marks the answer of an exercise, which the student notebooks withhold, as for
``literalinclude``), ``caption``, ``emphasize-lines``. With ``start-at``, ``end-at``, ``start-after``,
``end-before`` or ``lines`` the block is a fragment: the code alone, as ``literalinclude`` prints it.

``tools/student_notebooks.py`` converts the same directive for the notebooks with
:func:`docstring_markdown` (the docstring as Markdown) and :func:`object_listing` (the code), so the HTML
page and the notebooks show the same two parts. The helpers here need neither Sphinx nor the package
imported, except the directive itself.

Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

FRAGMENT_OPTIONS = ("start-at", "end-at", "start-after", "end-before", "lines")
# numpydoc sections whose entries are "name : type" lines with an indented description
_ITEM_SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Receives", "Raises",
                  "Warns")


# --------------------------------------------------------------------------- reading the object
def object_source(path: Path | str, pyobject: str, options: dict | None = None) -> str:
    """The lines of ``pyobject`` in the Python file ``path``, read as ``literalinclude`` reads them.

    Raises
    ------
    ValueError
        If the file has no such object (the message of Sphinx's reader).
    """
    from sphinx.directives.code import LiteralIncludeReader

    opts = {k: v for k, v in (options or {}).items() if k in ("pyobject", *FRAGMENT_OPTIONS)}
    opts["pyobject"] = pyobject
    reader = LiteralIncludeReader(str(path), opts, SimpleNamespace(source_encoding="utf-8"))
    text, _ = reader.read()
    return text


def split_docstring(listing: str) -> tuple[str | None, str]:
    """``(docstring, code)`` of a function or class listing: the cleaned docstring (``None`` if it has
    none) and the code with the docstring's lines (and a blank line after them) removed.

    Examples
    --------
    >>> doc, code = split_docstring("def f(x):\\n    'Twice x.'\\n    return 2 * x\\n")
    >>> doc, code
    ('Twice x.', 'def f(x):\\n    return 2 * x\\n')
    """
    dedented = textwrap.dedent(listing)
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return None, listing
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not defs or not defs[0].body:
        return None, listing
    first = defs[0].body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return None, listing
    doc = ast.get_docstring(defs[0], clean=True)
    lines = listing.split("\n")
    start, end = first.lineno - 1, first.end_lineno
    if end < len(lines) and not lines[end].strip() and len(defs[0].body) > 1:
        end += 1
    if len(defs[0].body) == 1:     # a body that is only a docstring keeps a statement
        indent = re.match(r"\s*", lines[start]).group(0)
        return doc, "\n".join(lines[:start] + [f"{indent}..."] + lines[end:])
    return doc, "\n".join(lines[:start] + lines[end:])


def module_name(path: Path | str) -> str:
    """The dotted module of a Python file: its folders up to the last one holding ``__init__.py``.

    Examples
    --------
    >>> module_name(Path(__file__))       # a file outside any package
    'ncbook_listing'
    """
    path = Path(path).resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def public_name(path: Path | str, pyobject: str) -> str:
    """The shortest dotted name of ``pyobject`` of file ``path``: a package above the module whose
    ``__init__.py`` imports it, else the module itself (read statically: nothing is imported)."""
    path = Path(path).resolve()
    module = module_name(path)
    head = pyobject.split(".")[0]
    parts = module.split(".")
    folder = path.parent
    packages = []
    for i in range(len(parts) - (0 if path.name == "__init__.py" else 1), 0, -1):
        packages.append((".".join(parts[:i]), folder / "__init__.py"))
        folder = folder.parent
    for package, init in reversed(packages):          # shortest first
        if init.exists() and re.search(rf"^from\s+\S+\s+import\s+[^\n]*\b{re.escape(head)}\b", init.read_text(), re.M):
            return f"{package}.{pyobject}"
    return f"{module}.{pyobject}"


# --------------------------------------------------------------------------- numpydoc as Markdown
_ROLE = re.compile(r":(?:py:)?(?P<role>[\w]+):`(?P<content>[^`]+)`")
_LINK = re.compile(r"`(?P<text>[^`<]+?)\s*<(?P<url>[^`>]+)>`__?")


def rst_inline_markdown(text: str) -> str:
    """Inline reStructuredText of a docstring as Markdown: ``:math:`x``` becomes ``$x$``, double backticks
    single ones, ``:func:`~a.b``` becomes `` `b()` ``, a link `` `t <url>`_ `` becomes ``[t](url)``.

    Examples
    --------
    >>> rst_inline_markdown("cosine :math:`-1/(C-1)` for ``C >= 2``; see :func:`~ncbook.geometry.etf_gram`.")
    'cosine $-1/(C-1)$ for `C >= 2`; see `etf_gram()`.'
    """
    def role(m):
        kind, content = m.group("role"), m.group("content")
        if kind == "math":
            return f"${content}$"
        explicit = re.match(r"^(?P<text>.+?)\s*<(?P<target>[^<>]+)>$", content)
        if explicit:
            return f"`{explicit.group('text')}`" if kind != "cite" else explicit.group("text")
        shown = content.lstrip("!")
        if shown.startswith("~"):
            shown = shown[1:].rsplit(".", 1)[-1]
        if kind in ("func", "meth") and not shown.endswith(")"):
            shown += "()"
        return shown if kind in ("cite", "term", "ref", "doc") else f"`{shown}`"

    out = _ROLE.sub(role, text)
    out = _LINK.sub(lambda m: f"[{m.group('text')}]({m.group('url')})", out)
    return re.sub(r"``(.+?)``", r"`\1`", out)


def _sections(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """(section title or None for the summary, lines) of a cleaned numpydoc docstring."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not line.startswith(" ") and re.fullmatch(r"-{3,}", nxt.strip()):
            out.append((line.strip(), []))
            i += 2
            continue
        out[-1][1].append(line)
        i += 1
    return out


def _blocks(lines: list[str]) -> list[str]:
    """Free reStructuredText (paragraphs, ``.. math::``, doctest and literal blocks) as Markdown lines."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith(".. math::"):
            body, i = _indented(lines, i + 1)
            inline = stripped[len(".. math::"):].strip()
            out += ["", "$$", *([inline] if inline else []), *textwrap.dedent("\n".join(body)).strip("\n").split("\n"),
                    "$$", ""]
            continue
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["", "```python", *textwrap.dedent("\n".join(block)).split("\n"), "```", ""]
            continue
        m = re.match(r"^\.\. \[(?P<key>[^\]]+)\]\s*(?P<text>.*)$", stripped)
        if m:
            body, i = _indented(lines, i + 1)
            text = " ".join([m.group("text"), *(b.strip() for b in body)]).strip()
            out.append(f"- [{m.group('key')}] {rst_inline_markdown(text)}")
            continue
        m = re.match(r"^\.\. (?P<name>[\w-]+)::\s*(?P<arg>.*)$", stripped)
        if m:    # another directive (note, warning, versionadded...): its title in bold, then its text
            body, i = _indented(lines, i + 1)
            head = m.group("name").replace("-", " ").capitalize()
            out += ["", f"**{head}.** {rst_inline_markdown(m.group('arg'))}".rstrip(),
                    *_blocks(textwrap.dedent("\n".join(body)).split("\n")), ""]
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            out.append(rst_inline_markdown(line.rstrip()[:-1].rstrip(":") + (":" if stripped != "::" else "")))
            body, i = _indented(lines, i + 1)
            out += ["", "```", *textwrap.dedent("\n".join(body)).strip("\n").split("\n"), "```", ""]
            continue
        out.append(rst_inline_markdown(line))
        i += 1
    return out


def _indented(lines: list[str], i: int) -> tuple[list[str], int]:
    """The indented block starting at line ``i`` (blank lines inside it included), and the line after it."""
    body = []
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
        body.append(lines[i])
        i += 1
    while body and not body[-1].strip():
        body.pop()
        i -= 1
    return body, i


def _items(lines: list[str], title: str) -> list[str]:
    """The entries of a Parameters-like section as a Markdown list."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        head = lines[i]
        if not head.strip():
            i += 1
            continue
        body, i = _indented(lines, i + 1)
        desc = " ".join(_blocks(textwrap.dedent("\n".join(body)).split("\n"))).strip() if body else ""
        desc = re.sub(r"\s+", " ", desc)
        name, _, kind = head.partition(" : ")
        name, kind = name.strip(), kind.strip()
        if not kind and title in ("Returns", "Yields", "Receives") and not re.fullmatch(r"\w+", name):
            name, kind = "", name              # "Returns" with the type alone
        if title in ("Raises", "Warns"):
            entry = f"**{name}**"
        elif name and kind:
            entry = f"**{rst_inline_markdown(name)}** ({rst_inline_markdown(kind)})"
        else:
            entry = f"**{rst_inline_markdown(name)}**" if name else rst_inline_markdown(kind)
        out.append(f"- {entry}" + (f": {desc}" if desc else ""))
    return out


def docstring_markdown(doc: str) -> str:
    """A numpydoc docstring as Markdown: the summary and text with ``$...$`` mathematics, each section
    (Parameters, Returns, Raises...) as a bold title and a list, examples as a code block.

    Examples
    --------
    >>> print(docstring_markdown('''Cosine :math:`-1/(C-1)`.
    ...
    ... Parameters
    ... ----------
    ... num_classes : int
    ...     ``C >= 2``.
    ... '''))
    Cosine $-1/(C-1)$.
    <BLANKLINE>
    **Parameters**
    <BLANKLINE>
    - **num_classes** (int): `C >= 2`.
    """
    lines = textwrap.dedent(doc).strip("\n").split("\n")
    out: list[str] = []
    for title, body in _sections(lines):
        if title is None:
            out += _blocks(body)
            continue
        out += ["", f"**{title}**", ""]
        if title in _ITEM_SECTIONS:
            out += _items(body, title)
        elif title == "See Also":
            out += [rst_inline_markdown(" ".join(b.strip() for b in body if b.strip()))]
        else:
            out += _blocks(body)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def object_listing(path: Path | str, pyobject: str, options: dict | None = None) -> tuple[str | None, str, str]:
    """``(docstring, code, public name)`` of ``pyobject`` in the file ``path``: what ``listing`` shows.

    A fragment (``start-at``, ``lines``... in ``options``) has no docstring part: ``(None, code, name)``.
    """
    text = object_source(path, pyobject, options)
    name = public_name(path, pyobject)
    if any(k in (options or {}) for k in FRAGMENT_OPTIONS):
        return None, text, name
    doc, code = split_docstring(text)
    return doc, code, name


# --------------------------------------------------------------------------- the directive
def _directive():
    from docutils import nodes
    from docutils.parsers.rst import Parser, directives
    from docutils.utils import new_document
    from sphinx.util.docutils import SphinxDirective

    class Listing(SphinxDirective):
        """```{listing} <python file>`` with ``:pyobject:``: rendered docstring, then the code without it."""

        required_arguments = 1
        has_content = False
        option_spec = {"pyobject": directives.unchanged_required, "class": directives.class_option,
                       "caption": directives.unchanged, "emphasize-lines": directives.unchanged,
                       **{k: directives.unchanged_required for k in FRAGMENT_OPTIONS}}

        def run(self):
            if "pyobject" not in self.options:
                raise self.error("listing needs :pyobject: (the function, class or Class.method to show)")
            rel, path = self.env.relfn2path(self.arguments[0])
            self.env.note_dependency(rel)
            try:
                doc, code, name = object_listing(path, self.options["pyobject"], self.options)
            except (OSError, ValueError) as err:
                raise self.error(f"listing {self.arguments[0]}: {err}") from err
            box = nodes.container(classes=["ncbook-listing", *self.options.get("class", [])])
            if doc is not None:
                box += self._rendered_docstring(path, name)
            block = nodes.literal_block(code, code, language="python", classes=["ncbook-listing-code"])
            if "emphasize-lines" in self.options:
                from sphinx.util import parselinenos

                lines = parselinenos(self.options["emphasize-lines"], code.count("\n") + 1)
                block["highlight_args"] = {"hl_lines": [n + 1 for n in lines]}
            self.set_source_info(block)
            if self.options.get("caption"):
                caption = nodes.caption(self.options["caption"], self.options["caption"])
                wrapper = nodes.container("", caption, block, literal_block=True)
                box += wrapper
            else:
                box += block
            return [box]

        def _rendered_docstring(self, path, name):
            """autodoc (with napoleon) of ``name``, parsed as reStructuredText in a page of any parser."""
            obj = self.options["pyobject"]
            kind = "automethod" if "." in obj else "autoclass" if _is_class(path, obj) else "autofunction"
            source = f".. {kind}:: {name}\n   :no-index:\n"
            settings = self.state.document.settings
            sub = new_document(self.state.document["source"], settings)
            sub.reporter = self.state.document.reporter
            Parser().parse(source, sub)
            return list(sub.children)

    return Listing


def _is_class(path, pyobject: str) -> bool:
    tree = ast.parse(Path(path).read_text())
    return any(isinstance(n, ast.ClassDef) and n.name == pyobject for n in tree.body)


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.add_directive("listing", _directive())
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
