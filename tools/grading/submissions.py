"""Reading a folder of submissions as data: every entry gets a row, whatever it is; nothing is run here.

An entry of the submissions folder is listed without following it (``lstat``): a symbolic link is refused
and never opened, read or followed; a folder, a FIFO, a device or a file whose name does not end in
``.ipynb`` is refused with a sentence. A notebook file is opened with ``O_NOFOLLOW | O_NONBLOCK``, checked to
be a regular file of at most :data:`MAX_NOTEBOOK_BYTES`, decoded as UTF-8 and parsed as JSON (a 5000-digit
integer, a nesting bomb or a wrong type anywhere is a :class:`NotebookError` naming the cause), and only
its cells' sources and our own cell metadata are kept (outputs, attachments and other metadata are
dropped), each field checked for its type. Output file names are unique per entry (:func:`slug`: a
readable stem and 128 bits of a hash of the exact name), so ``carol smith.ipynb`` and ``carol_smith.ipynb``
never write the same files; an entry whose stem is already used in the folder (a hash collision someone
searched for) is refused (:func:`entries`), and the grader creates every output file with ``O_EXCL``.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import nbformat

MAX_NOTEBOOK_BYTES = 50 << 20
MAX_CELLS = 5_000
MAX_CELL_CHARS = 1_000_000
MAX_SOURCE_CHARS = 4_000_000
MAX_ANSWER_CHARS = 20_000
SLUG_HEX = 32  # hex digits of the name's hash in an output stem: 128 bits
_PROMPT = re.compile(r"^\s*\*\*Your answer \((?P<title>[^)]+)\)\.\*\*\s*(Write it here\.)?")


class NotebookError(ValueError):
    """A submission that is not a readable notebook (the message names the cause)."""


@dataclass(frozen=True)
class Entry:
    """One entry of the submissions folder, as listed (never followed).

    ``name``: the name as shown (printable; undecodable bytes replaced); ``raw``: its exact bytes;
    ``kind``: "file", "symlink", "folder", "other" or "collision" (its stem is another entry's); ``slug``: the
    unique stem of its output files.
    """

    name: str
    raw: bytes
    path: Path
    kind: str
    slug: str


def display_name(raw: bytes, limit: int = 200) -> str:
    """A file name as one printable line: undecodable bytes replaced, control characters as spaces."""
    text = raw.decode("utf-8", "replace")
    text = "".join(" " if unicodedata.category(ch).startswith("C") else ch for ch in text)
    return text.strip()[:limit] or "(no name)"


def slug(raw: bytes) -> str:
    """A unique, portable stem for an entry's output files: readable letters of its name, then the first
    :data:`SLUG_HEX` hex digits (128 bits) of the sha256 of the exact name: ``carol smith`` and
    ``carol_smith`` differ there, and no one can search out another name with the same stem (32 bits took
    one CPU 16 minutes; 128 bits are out of reach).

    Parameters
    ----------
    raw : bytes
        The entry's exact file name.

    Returns
    -------
    str
        ``<readable>-<32 hex digits>``; only ``[A-Za-z0-9._-]``, never starting with ``.``, ``_`` or ``-``.

    Examples
    --------
    >>> slug(b"carol smith.ipynb") != slug(b"carol_smith.ipynb")
    True
    >>> s = slug(b"carol smith.ipynb")
    >>> s.startswith("carol_smith-"), len(s.rsplit("-", 1)[1])
    (True, 32)
    """
    stem = raw.decode("utf-8", "replace")
    stem = stem[:-6] if stem.lower().endswith(".ipynb") else stem
    readable = re.sub(r"[^A-Za-z0-9.-]+", "_", unicodedata.normalize("NFKD", stem)).strip("._-")[:60]
    return f"{readable or 'submission'}-{hashlib.sha256(raw).hexdigest()[:SLUG_HEX]}"


def entries(folder: Path, stem=None) -> list[Entry]:
    """Every entry of ``folder`` (hidden ones too), sorted by exact name; none is followed or opened.

    An entry whose output stem (``stem``, default :func:`slug`) another entry already has (in sorted order)
    gets ``kind = "collision"`` (:func:`refusal` refuses it) and the stem ``<stem>-refused-<n>``, which no
    :func:`slug` can equal: no two entries ever write the same files.
    """
    stem = stem or slug
    found = []
    with os.scandir(os.fsencode(folder)) as it:
        for item in it:
            raw = item.name
            try:
                mode = item.stat(follow_symlinks=False).st_mode
            except OSError:
                mode = 0
            kind = "symlink" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else \
                "file" if stat.S_ISREG(mode) else "other"
            found.append(Entry(display_name(raw), raw, Path(os.fsdecode(item.path)), kind, stem(raw)))
    out, used = [], {}
    for e in sorted(found, key=lambda e: e.raw):
        if e.slug in used:
            used[e.slug] += 1
            e = Entry(e.name, e.raw, e.path, "collision", f"{e.slug}-refused-{used[e.slug]}")
        else:
            used[e.slug] = 0
        out.append(e)
    return out


def refusal(entry: Entry) -> str | None:
    """Why an entry is not graded as a notebook (None for a regular ``.ipynb`` file)."""
    if entry.kind == "symlink":
        return "a symbolic link: refused (links are never followed or read)"
    if entry.kind == "collision":
        return ("its output name would be another entry's (the same readable stem and 128-bit hash): refused, so "
                "that no submission writes another's feedback, executed notebook or written points")
    if entry.kind == "folder":
        return "a folder, not a notebook file"
    if entry.kind != "file":
        return "not a regular file (a FIFO, a socket or a device)"
    if not entry.raw.lower().endswith(b".ipynb"):
        return "not a notebook file (a name ending in .ipynb was expected)"
    return None


def read_bytes(entry: Entry, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a regular file entry, opened without following a link; refused past ``limit`` bytes."""
    why = refusal(entry)
    if why:
        raise NotebookError(why)
    try:
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise NotebookError(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotebookError("not a regular file")
        if info.st_size > limit:
            raise NotebookError(f"{info.st_size >> 20} MiB: larger than the {limit >> 20} MiB a notebook may have "
                                "(clear its outputs)")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotebookError(f"larger than the {limit >> 20} MiB a notebook may have (clear its outputs)")
    return data


def _ours(meta) -> dict:
    """Our cell metadata, type-checked: {"ncbook": {"exercise": str, "role": str}} or {}."""
    ours = meta.get("ncbook") if isinstance(meta, dict) else None
    if not isinstance(ours, dict):
        return {}
    kept = {k: ours[k] for k in ("exercise", "role") if isinstance(ours.get(k), str) and len(ours[k]) <= 200}
    return {"ncbook": kept} if kept else {}


def parse_notebook(data: bytes) -> nbformat.NotebookNode:
    """The cells of a notebook file's bytes as a clean v4 notebook (sources and our cell metadata only).

    Raises
    ------
    NotebookError
        Not UTF-8 JSON (a truncated file, a huge integer, too deep a nesting), no list of cells, a cell of
        the wrong shape, or more cells or source than the limits allow.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno} "
                            f"({exc.msg}; a truncated file?)") from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise NotebookError(f"not a notebook: {str(exc)[:120]}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (no list of cells; nbformat 4 expected)")
    if len(raw["cells"]) > MAX_CELLS:
        raise NotebookError(f"{len(raw['cells'])} cells: more than the {MAX_CELLS} a notebook may have")
    cells, total = [], 0
    for i, cell in enumerate(raw["cells"]):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {i} is not a JSON object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise NotebookError(f"cell {i}: its source is neither text nor a list of lines")
        if len(source) > MAX_CELL_CHARS:
            raise NotebookError(f"cell {i}: {len(source) >> 10} KiB of source, more than the "
                                f"{MAX_CELL_CHARS >> 10} KiB a cell may have")
        total += len(source)
        if total > MAX_SOURCE_CHARS:
            raise NotebookError(f"more than {MAX_SOURCE_CHARS >> 20} MiB of source in all")
        kind = cell.get("cell_type")
        if kind == "code":
            cells.append(nbformat.v4.new_code_cell(source, metadata=_ours(cell.get("metadata"))))
        elif kind == "markdown":
            cells.append(nbformat.v4.new_markdown_cell(source, metadata=_ours(cell.get("metadata"))))
        elif kind == "raw":
            cells.append(nbformat.v4.new_raw_cell(source, metadata=_ours(cell.get("metadata"))))
        else:
            raise NotebookError(f"cell {i}: unknown cell type {str(kind)[:40]!r}")
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


def read_submission(path: Path) -> nbformat.NotebookNode:
    """:func:`parse_notebook` of the file at ``path`` (not followed if it is a link); never executes it."""
    path = Path(path)
    entry = Entry(path.name, os.fsencode(path.name), path, _kind(path), slug(os.fsencode(path.name)))
    return parse_notebook(read_bytes(entry))


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "other"
    return "symlink" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else \
        "file" if stat.S_ISREG(mode) else "other"


def clean(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` printable characters, safe in a spreadsheet (no leading = + - @).

    >>> clean("=HYPERLINK(1)\\nmore")
    "'=HYPERLINK(1) more"
    """
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip()[:limit]
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def student_identity(nb) -> str | None:
    """The value of the first non-empty ``STUDENT = "..."`` of a code cell (read with ``ast``, not run)."""
    for cell in nb.cells:
        if cell.cell_type != "code" or "STUDENT" not in cell.source:
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "STUDENT" for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                    and node.value.value.strip()):
                return clean(node.value.value, 100)
    return None


def meta(cell) -> dict:
    return cell.metadata.get("ncbook", {}) if isinstance(cell.metadata.get("ncbook"), dict) else {}


def norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def written_answers(nb, handed, questions) -> dict[str, str]:
    """Each written question's answer: its prompt cells' text and the cells the student added after them, each
    answer cut to :data:`MAX_ANSWER_CHARS` characters (every answers CSV reads back with Python's ``csv``).

    Prompts are found by their metadata, or by their text in a notebook that lost it (cells pasted
    into a new notebook); a cell counts as added when the handed-out notebook has no cell like it.
    """
    wanted = {q.label for q in questions if q.written}
    by_title = {q.title: q.label for q in questions if q.written}
    original = {norm(c.source) for c in handed.cells}
    functions = {p.function for q in questions for p in q.auto} | {
        m.group(1) for c in handed.cells if meta(c).get("role") == "stub"
        for m in re.finditer(r"^\s*def\s+(\w+)", c.source, re.M)}  # the stubs' functions: not an answer
    parts: dict[str, list[str]] = {label: [] for label in wanted}
    current, pending = None, []  # pending: added cells just before a prompt (an answer's code, pasted)
    for cell in nb.cells:
        m = meta(cell)
        prompt = _PROMPT.match(cell.source) if cell.cell_type == "markdown" else None
        label = m.get("exercise") if m.get("role") == "answer" else None
        if label is None and prompt:
            label = by_title.get(prompt.group("title"))
        defines = cell.cell_type == "code" and any(re.search(rf"^\s*def\s+{re.escape(f)}\b", cell.source, re.M)
                                                   for f in functions)
        added = norm(cell.source) not in original and bool(cell.source.strip())
        text = cell.source.strip() if cell.cell_type == "markdown" else f"```python\n{cell.source.strip()}\n```"
        if label in wanted:
            if label != current:
                parts[label] += pending
            current, pending = label, []
            if not added:
                continue
            if prompt and cell.cell_type == "markdown":
                text = cell.source[prompt.end():].strip()
            if text:
                parts[label].append(text)
        elif added and not m.get("role") and not defines:
            (parts[current] if current else pending).append(text)
        else:
            current, pending = None, []
    out = {}
    for label, p in parts.items():
        text = "\n\n".join(p)
        if len(text) > MAX_ANSWER_CHARS:
            text = text[:MAX_ANSWER_CHARS] + f"\n[... cut by the grader: {len(text)} characters in all ...]"
        out[label] = text
    return out
