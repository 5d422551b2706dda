"""Reading a submission's code without running it: which cells its functions need, and what to review.

* :func:`names` and :func:`needed_cells`: the name closure over a notebook's code cells (the cells that
  bind, or change, what the graded functions read), which is all the judge sandbox runs;
* :func:`review_flags`: what in the submission's own code (code cells, raw cells, code blocks in Markdown)
  reaches into the grading or the interpreter, and literal tables of numbers;
* :class:`Similarity`: a graded function (with the helpers it calls) that matches the chapter's published
  solution, the package's reference code, or another submission's, after normalising names, docstrings,
  comments and formatting (:func:`canonical_tokens`; a ratio of :class:`difflib.SequenceMatcher`).

These are signals for the instructor (the ``review`` column), never a defence: the defence is that no answer
is in the sandbox where a submission's functions are judged.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import re
import textwrap
from dataclasses import dataclass, field

_BUILTINS = set(dir(builtins))
_MAGIC = re.compile(r"^\s*[%!]")


_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun")


def _python(source: str) -> str:
    """The source with IPython magic and shell lines blanked; a cell magic that runs its body as Python
    (``%%time``, ``%%capture``...) keeps its body, any other (``%%bash``...) leaves no Python at all."""
    lines = source.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        if not lines[first].lstrip().startswith(_PYTHON_CELL_MAGICS):
            return ""
        lines = [""] * (first + 1) + lines[first + 1:]
    return "\n".join("" if _MAGIC.match(line) else line for line in lines)


def _root(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def names(source: str) -> tuple[set[str], set[str]]:
    """(free names a cell reads or changes, names it binds at top level); names bound inside functions stay local.

    A cell *changes* ``x`` when it assigns to ``x[...]`` or ``x.attr``, augments ``x``, or calls a method of
    ``x`` as a statement (``x.append(...)``, ``torch.manual_seed(0)``): such a cell counts as reading ``x`` and
    is kept wherever ``x`` is needed.
    """
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(), set()
    loads, top, inner, updated = set(), set(), set(), set()

    def bind(node, scope):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            scope.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            scope.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            updated.add(node.target.id)  # x += ... reads x

    def visit(node, scope):
        bind(node, scope)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.add(node.id)
        nested = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                                   ast.DictComp, ast.GeneratorExp))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
            for d in getattr(node, "decorator_list", []) + node.args.defaults + node.args.kw_defaults:
                if d is not None:
                    visit(d, scope)
            body = node.body if isinstance(node.body, list) else [node.body]
            for child in body:
                visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, inner if nested else scope)

    for stmt in tree.body:
        visit(stmt, top)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target):
                updated.add(_root(target))
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                isinstance(stmt.value.func, ast.Attribute) and _root(stmt.value.func):
            updated.add(_root(stmt.value.func))
    return ((loads - inner - top) | updated) - _BUILTINS, top


def needed_cells(sources: list[str], functions) -> list[int]:
    """Indices of the code cells (given as their sources, in order) that define the ``functions`` or bind or
    change a name they read, transitively: the name closure, computed from the last cell back."""
    needed = set(functions)
    keep = []
    for i in range(len(sources) - 1, -1, -1):
        loads, stores = names(sources[i])
        if (stores | (loads & _changed(sources[i]))) & needed:
            keep.append(i)
            needed = (needed - stores) | loads
    return sorted(keep)


def _changed(source: str) -> set[str]:
    """The names a cell changes without binding them (see :func:`names`)."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    out = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target):
                out.add(_root(target))
            elif isinstance(stmt, ast.AugAssign) and isinstance(target, ast.Name):
                out.add(target.id)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                isinstance(stmt.value.func, ast.Attribute) and _root(stmt.value.func):
            out.add(_root(stmt.value.func))
    return out


# --------------------------------------------------------------------------- static flags
# attributes of the grading machinery, the references, the profiler hook, frames and code objects; names of
# dynamic code; modules that start threads or processes or reach into the interpreter
REVIEW_ATTRIBUTES = {"EXERCISES", "reference", "expected", "harvest", "collect", "watched", "setprofile",
                     "getprofile", "settrace", "gettrace", "_getframe", "f_locals", "f_globals", "f_back", "__code__",
                     "co_code", "get_objects", "getsource", "getsourcelines", "modules", "__globals__", "__closure__",
                     "__del__", "__file__", "__getattribute__", "attrgetter", "__dict__"}
REVIEW_NAMES = {"EXERCISES", "exec", "eval", "compile", "__import__", "__builtins__", "setattr", "delattr", "globals",
                "vars", "open", "attrgetter"}
REVIEW_MODULES = {"importlib", "ctypes", "gc", "threading", "_thread", "multiprocessing", "subprocess", "signal",
                  "concurrent", "pickle", "marshal", "inspect", "queue", "nbformat"}
TABLE_NUMBERS = 20  # a literal with this many constants is a table of answers to look at
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(python|py|ipython3?)?\s*$")


def _code_blocks(markdown: str) -> list[str]:
    out, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i].strip())
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != m.group(1):
                j += 1
            out.append("\n".join(lines[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


LONG_HEX = 64        # hex digits in one string literal: a table of numbers or answers packed as text
LONG_BASE64 = 80     # base64-like characters (no spaces) in one string literal
LONG_BYTES = 64      # bytes in one bytes literal
LONG_STRING = 1000   # characters in one string literal (a docstring excepted)
_HEX = re.compile(r"[0-9A-Fa-f]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_CONTAINERS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


def _docstrings(tree) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and \
                isinstance(node.body[0].value.value, str):
            out.add(id(node.body[0].value))
    return out


def _folded(node) -> str | bytes | None:
    """The value of a string literal, or of ``"a" + "b" + ...`` made only of string literals; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        if left is not None and right is not None and type(left) is type(right):
            return left + right
    return None


def _literal(value, where: str) -> str | None:
    """What a long string or bytes literal looks like, or None for an ordinary one."""
    if isinstance(value, bytes):
        return f"a bytes literal of {len(value)} bytes {where}" if len(value) >= LONG_BYTES else None
    if len(value) >= LONG_HEX and _HEX.fullmatch(value):
        return f"a hex string literal of {len(value)} characters {where} (a table packed as text?)"
    if len(value) >= LONG_BASE64 and _BASE64.fullmatch(value) and any(c.isdigit() for c in value) and \
            any(c.isupper() for c in value) and any(c.islower() for c in value):
        return f"a base64-like string literal of {len(value)} characters {where} (a table packed as text?)"
    if len(value) >= LONG_STRING:
        return f"a string literal of {len(value)} characters {where}"
    return None


def _tables(tree) -> list[str]:
    """Large constant tables: literal containers of :data:`TABLE_NUMBERS` constants or more (numbers, strings,
    bytes; outermost ones only), long hex, base64-like or bytes literals (a table packed as text, e.g. the
    answers of the public cases keyed by a hash), and string literals of :data:`LONG_STRING` characters or
    more (docstrings excepted), each with where it is."""
    found: list[str] = []
    docs = _docstrings(tree)

    def visit(node, where: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = f"in {node.name}"
        if isinstance(node, _CONTAINERS):
            constants = [c for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value is not None
                         and not isinstance(c.value, bool) and id(c) not in docs]
            if len(constants) >= TABLE_NUMBERS:
                numbers = all(isinstance(c.value, (int, float, complex)) for c in constants)
                found.append(f"a literal table of {len(constants)} {'numbers' if numbers else 'constants'} {where}")
                for c in constants:  # its strings may be long too: say so as well
                    if isinstance(c.value, (str, bytes)) and (what := _literal(c.value, where)):
                        found.append(what)
                return
        value = _folded(node) if id(node) not in docs else None
        if value is not None:
            if what := _literal(value, where):
                found.append(what)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, "at top level")
    return list(dict.fromkeys(found))


_ATTR_FUNCTIONS = ("getattr", "setattr", "delattr", "hasattr")


def _dynamic_attributes(tree) -> list[str]:
    """``getattr``/``setattr``/``delattr``/``hasattr`` with a computed attribute name (``"_sol" + "vers"``, a
    variable) or a private one (``"_solve_cvxpy"``): how a name the review looks for is hidden."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTR_FUNCTIONS \
                and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                found.append(f"uses {node.func.id} with a computed attribute name")
            elif name.value.startswith("_"):
                found.append(f"uses {node.func.id} of the private name {name.value[:60]!r}")
    return found


def _flags_of(tree) -> list[str]:
    modules: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add((a.asname or a.name).split(".")[0])
                if any(part.startswith("_") for part in a.name.split(".")) or a.name.split(".")[0] in REVIEW_MODULES:
                    found.append(f"imports {a.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if any(part.startswith("_") for part in mod.split(".")) or mod.split(".")[0] in REVIEW_MODULES or \
                    any(a.name.startswith("_") or a.name in REVIEW_ATTRIBUTES for a in node.names):
                found.append(f"imports from {mod}: {', '.join(a.name for a in node.names)}")
            modules.update(a.asname or a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = _root(node) or ""
            if node.attr in REVIEW_ATTRIBUTES:
                found.append(f"uses .{node.attr}")
            elif base in modules and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"uses the private attribute {node.attr} of {base}")
            if isinstance(node.ctx, (ast.Store, ast.Del)) and base in modules:
                found.append(f"assigns to an attribute of the module {base} (.{node.attr})")
        elif isinstance(node, ast.Name) and node.id in REVIEW_NAMES:
            found.append(f"uses {node.id}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__del__", "__array__",
                                                                                          "__float__", "__index__"):
            found.append(f"defines {node.name}")
    return found + _dynamic_attributes(tree) + _tables(tree)


def review_flags(nb, handed=None) -> list[str]:
    """What in a submission's own cells (not the handed-out ones) an instructor should read: statically,
    never run. Code cells, raw cells and Python code blocks in Markdown cells are read alike (code kept in
    a raw cell can be run by another cell). Flagged: a private module or attribute of an imported package,
    an assignment to an attribute of an imported module, one of :data:`REVIEW_ATTRIBUTES`,
    :data:`REVIEW_NAMES` and :data:`REVIEW_MODULES`, ``getattr``-like calls with a computed or private name,
    ``__del__`` and conversion hooks, large constant tables (a literal of :data:`TABLE_NUMBERS` constants or
    more; long hex, base64-like, bytes or string literals), a shell or magic line, a code cell that does not
    parse. One line each (cell index and what), in the order found.
    """
    own = {_norm(c.source) for c in (handed.cells if handed is not None else [])}
    flags: list[str] = []
    for index, cell in enumerate(nb.cells):
        if not cell.source.strip() or _norm(cell.source) in own:
            continue
        if cell.cell_type == "code":
            sources, where = [cell.source], f"cell {index}"
        elif cell.cell_type == "raw":
            sources, where = [cell.source], f"cell {index} (raw)"
        else:
            sources, where = _code_blocks(cell.source), f"cell {index} (a code block in Markdown)"
        for source in sources:
            if cell.cell_type == "code" and any(_MAGIC.match(line) for line in source.splitlines()):
                flags.append(f"{where}: a shell or magic line")
            try:
                tree = ast.parse(_python(source))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                if cell.cell_type == "code":
                    flags.append(f"{where}: does not parse")
                continue
            found = _flags_of(tree)
            if cell.cell_type != "code" and any(isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))
                                                for n in ast.walk(tree)):
                found.insert(0, "holds Python code")
            flags += [f"{where}: {what}" for what in dict.fromkeys(found)]
    return flags


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


# --------------------------------------------------------------------------- similarity
class _Canon(ast.NodeTransformer):
    """Docstrings dropped; every identifier the code binds or reads renamed by order of first appearance
    (builtins and attribute names kept); annotations dropped."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name in _BUILTINS:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        node.name = self._name(node.name)
        node.returns = None
        node.decorator_list = []
        self._body(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self._name(node.name)
        self._body(node)
        self.generic_visit(node)
        return node

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        return node

    def visit_Name(self, node):
        node.id = self._name(node.id)
        return node

    def visit_alias(self, node):
        if node.asname:
            node.asname = self._name(node.asname)
        return node

    def visit_Expr(self, node):  # a bare string statement is a comment
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        self.generic_visit(node)
        return node


def canonical_tokens(nodes) -> list[str]:
    """Tokens of ``nodes`` (AST statements, e.g. function definitions) after :class:`_Canon`, unparsed: the same
    list for two copies that differ only in names, docstrings, comments and formatting."""
    module = ast.Module(body=[ast.parse(ast.unparse(n)).body[0] for n in nodes], type_ignores=[])
    canon = _Canon().visit(module)
    text = ast.unparse(ast.fix_missing_locations(canon))
    return re.findall(r"\w+|[^\w\s]", text)


def ratio(a: list[str], b: list[str]) -> float:
    """How alike two token lists are (0 to 1), :class:`difflib.SequenceMatcher` without its junk heuristic.

    Its cost grows faster than the square of the length on repetitive lists (2000 tokens of one repeated
    statement: 10 s): the review calls it through :func:`alike`, on lists of at most :data:`MAX_UNIT_TOKENS`.
    """
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


MAX_UNIT_TOKENS = 1000
"""Canonical tokens of one compared unit at most (the chapters' solutions have at most ~200 with their helpers):
a graded function larger than this with its helpers is flagged "too large to compare as a whole" and compared
definition by definition only; a larger single definition is flagged and skipped. No submission can stall the
review (two 2000-token units of one repeated statement take 10 s to compare; two of 1000, about 1 s)."""
MAX_PARTS = 50
"""Definitions of one graded function's closure compared one by one with the package's code, at most."""
REVIEW_BUDGET_S = 120.0
"""Seconds the similarity review of a whole batch may take; past them the rest is skipped and named."""


def alike(a: list[str], b: list[str], threshold: float) -> float:
    """:func:`ratio` of ``a`` and ``b`` when it can reach ``threshold``, else 0.0.

    Two linear-time upper bounds first (:meth:`difflib.SequenceMatcher.real_quick_ratio`, from the lengths,
    and :meth:`~difflib.SequenceMatcher.quick_ratio`, from the token counts): a pair that cannot reach the
    threshold never pays for the full comparison. Exact: the result is 0.0 only where ``ratio < threshold``.

    >>> alike(list("abcd"), list("abce"), 0.7), alike(list("abcd"), list("wxyz"), 0.5)
    (0.75, 0.0)
    """
    la, lb = len(a), len(b)
    if not la or not lb or 2.0 * min(la, lb) / (la + lb) < threshold:
        return 0.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.quick_ratio() < threshold:
        return 0.0
    return matcher.ratio()


class Budget:
    """A time budget shared by every comparison of one review: ``ok()`` is False once it is spent, and
    ``skipped`` counts what was left out then."""

    def __init__(self, seconds: float = REVIEW_BUDGET_S):
        import time

        self.seconds, self._clock = seconds, time.monotonic
        self.deadline = self._clock() + seconds
        self.skipped = 0

    def ok(self) -> bool:
        if self._clock() < self.deadline:
            return True
        self.skipped += 1
        return False

    @property
    def note(self) -> str:
        return (f"not compared with every published solution, reference or classmate: the similarity review's "
                f"time budget ({self.seconds:.0f} s) ran out")


_COMPOUND = (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)
if hasattr(ast, "TryStar"):
    _COMPOUND += (ast.TryStar,)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _alias_target(value) -> ast.AST | None:
    """What an assignment binds when it only names another function: a name, a lambda, or the function of a
    ``functools.partial(f, ...)``; None for anything else (a call's result, a subscript, getattr, ...)."""
    if isinstance(value, (ast.Name, ast.Lambda)):
        return value
    if isinstance(value, ast.Call) and value.args and (
            (isinstance(value.func, ast.Name) and value.func.id == "partial") or
            (isinstance(value.func, ast.Attribute) and value.func.attr == "partial")):
        return _alias_target(value.args[0])
    return None


def _top_statements(body):
    """Top-level statements, in order, with those inside top-level ``if``/``try``/``with``/loops (they bind
    global names too)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, _COMPOUND):
            for field_name in ("body", "orelse", "finalbody"):
                yield from _top_statements(getattr(stmt, field_name, []) or [])
            for handler in getattr(stmt, "handlers", []) or []:
                yield from _top_statements(handler.body)


class Definitions(dict):
    """name -> last top-level binding (see :func:`definitions`); ``trees``: each cell's parsed tree (or None)."""

    trees: list


def definitions(sources: list[str]) -> Definitions:
    """The last top-level binding of every name of some code (cells in order): a function or class definition,
    an assignment (``f = g``, ``f = lambda ...``, ``f = functools.partial(g, ...)`` or any other value), an
    import. Only definitions and those aliases are compared (:func:`comparable`); the others end a chain."""
    out = Definitions()
    out.trees = []
    for source in sources:
        try:
            tree = ast.parse(_python(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            out.trees.append(None)
            continue
        out.trees.append(tree)
        for node in _top_statements(tree.body):
            if isinstance(node, _DEFS):
                out[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in (t for t in ast.walk(target) if isinstance(t, ast.Name)):
                        out[name.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    out[(a.asname or a.name).split(".")[0]] = node
    return out


def comparable(node) -> bool:
    """A definition, a lambda, or an assignment that only names another function (:func:`_alias_target`)."""
    if isinstance(node, _DEFS + (ast.Lambda,)):
        return True
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return _alias_target(node.value) is not None
    return False


def closure(name: str, defs: dict[str, ast.AST], start: ast.AST | None = None) -> list[ast.AST]:
    """The binding of ``name`` (or ``start``) and every other comparable binding it reaches by name, in reaching
    order, each once (linear in the code's size)."""
    from collections import deque

    order, seen, done = [], set(), set()
    todo = deque([start] if start is not None else [defs.get(name)])
    while todo:
        node = todo.popleft()
        if node is None or id(node) in done or not comparable(node):
            continue
        done.add(id(node))
        order.append(node)
        for x in ast.walk(node):
            if isinstance(x, ast.Name) and x.id in defs and x.id not in seen:
                seen.add(x.id)
                todo.append(defs[x.id])
    return order


def resolve(name: str, defs: dict[str, ast.AST]) -> ast.AST | None:
    """The definition (or lambda) the top-level binding of ``name`` finally names, following ``f = g``,
    ``f = functools.partial(g, ...)`` and ``f = lambda ...``; None when the chain ends in anything else (an
    import, a call's result, a name the cells never bind)."""
    node, seen = defs.get(name), set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, _DEFS):
            return node
        if not comparable(node):
            return None
        target = _alias_target(node.value)
        if isinstance(target, ast.Lambda):
            return target
        node = defs.get(target.id)
    return None


def node_at(tree: ast.AST | None, line: int, name: str) -> ast.AST | None:
    """The function (or lambda) of a cell's tree whose code object starts at ``line`` with ``co_name`` ``name``
    (``co_firstlineno``: the first decorator's line for a decorated function), nested ones included."""
    if tree is None or not isinstance(line, int) or not isinstance(name, str):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and \
                line in {node.lineno, *(d.lineno for d in node.decorator_list)}:
            return node
        if isinstance(node, ast.Lambda) and name == "<lambda>" and node.lineno == line:
            return node
    return None


@dataclass
class Unit:
    """What the review compares of one graded function: the canonical tokens of its definition with the helpers
    it reaches (``tokens``; None when too large or unknown), of each definition alone (``parts``), and notes
    for the review column."""

    tokens: list[str] | None = None
    parts: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Similarity:
    """Compares graded functions with published code and with each other.

    ``functions``: exercise -> the student's function name; ``published``: exercise -> source cells of the
    chapter's solution; ``package``: exercise -> [(qualified name, source)] of the package code its
    reference runs (and the reference itself, with the exercise module's helpers it calls). Thresholds: a
    ratio of at least ``published_ratio`` / ``package_ratio`` / ``peer_ratio`` over at least ``min_tokens`` /
    ``min_tokens`` / ``peer_tokens`` canonical tokens; units above ``max_tokens`` are not compared.

    What is compared is the function actually bound to the graded name: the judge reports where the code
    object bound there was written (:meth:`units`' ``bound``), and the review follows ``f = g``,
    ``functools.partial`` and lambdas from the cells; a binding that neither resolves is flagged "graded
    function bound indirectly".
    """

    functions: dict[str, str]
    published: dict[str, list[str]] = field(default_factory=dict)
    package: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    published_ratio: float = 0.9
    package_ratio: float = 0.85
    peer_ratio: float = 0.92
    min_tokens: int = 25
    peer_tokens: int = 60
    max_tokens: int = MAX_UNIT_TOKENS

    def __post_init__(self):
        self._published = {}
        for ex, sources in self.published.items():
            defs = definitions(sources)
            fn = self.functions.get(ex)
            if fn in defs:
                tokens = canonical_tokens(closure(fn, defs))
                if len(tokens) <= self.max_tokens:
                    self._published[ex] = tokens
        self._package = {}
        for ex, items in self.package.items():
            kept = []
            for name, source in items:
                try:
                    tokens = canonical_tokens(ast.parse(textwrap.dedent(source)).body)
                except (SyntaxError, ValueError, RecursionError):
                    continue
                if self.min_tokens <= len(tokens) <= self.max_tokens:
                    kept.append((name, tokens))
            self._package[ex] = kept

    def units(self, sources: list[str], bound: dict | None = None) -> dict[str, Unit]:
        """exercise -> :class:`Unit` of the student's function, from the code cells' ``sources``.

        ``bound``: function name -> ``(code cell index or None, co_firstlineno, co_name)`` of the code object
        the judge found bound to the name (None where the judge did not report it). Where it names a
        definition of the cells, that definition is compared; the names the cells bind are followed too, and
        a disagreement, or a function neither resolves, is a note.
        """
        defs = definitions(sources)
        bound = bound or {}
        out: dict[str, Unit] = {}
        for ex, fn in self.functions.items():
            unit = Unit()
            static = resolve(fn, defs)
            report = bound.get(fn)
            ran = None
            if report is not None:
                cell, line, code_name = report
                if isinstance(cell, int) and 0 <= cell < len(defs.trees):
                    ran = node_at(defs.trees[cell], line, code_name)
            start = ran if ran is not None else static
            indirect = f"graded function bound indirectly: {fn}"
            if report is not None and ran is None:
                unit.notes.append(f"{indirect} was made by code the review cannot read (exec, a cell magic, another "
                                  "module)")
            elif report is not None and static is None:
                unit.notes.append(f"{indirect} is bound to something the cells do not define directly (its code: "
                                  f"code cell {report[0]}, line {report[1]})")
            elif report is not None and ran is not static:
                unit.notes.append(f"{indirect} runs the definition at code cell {report[0]}, line {report[1]}, not "
                                  "the one the cells bind to the name")
            elif report is None and fn in defs and static is None:
                unit.notes.append(f"graded function bound indirectly: {fn} is bound to something the review cannot "
                                  "follow (not a def, a lambda, functools.partial or another function's name)")
            if start is None:
                out[ex] = unit
                continue
            try:
                nodes = closure(fn, defs, start=start)
                whole = canonical_tokens(nodes)
                parts = [canonical_tokens([n]) for n in nodes]
            except (RecursionError, ValueError, SyntaxError, MemoryError):
                unit.notes.append(f"{fn}: too deeply nested to compare")
                out[ex] = unit
                continue
            if len(whole) > self.max_tokens:  # compared definition by definition only
                unit.notes.append(f"{fn}: too large to compare as a whole ({len(whole)} canonical tokens with its "
                                  f"helpers; the review compares up to {self.max_tokens})")
            else:
                unit.tokens = whole
            unit.parts = [p for p in parts if len(p) <= self.max_tokens][:MAX_PARTS]
            if any(len(p) > self.max_tokens for p in parts):
                unit.notes.append(f"{fn}: a definition too large to compare ({max(map(len, parts))} canonical tokens; "
                                  f"the review compares up to {self.max_tokens})")
            if len(parts) > MAX_PARTS:
                unit.notes.append(f"{fn}: reaches {len(parts)} definitions; the review compares the first {MAX_PARTS} "
                                  "with the package's code")
            out[ex] = unit
        return out

    def flags(self, units: dict[str, Unit], budget: Budget | None = None) -> list[str]:
        """The units' notes, then matches with the package's reference code, then with the published solution
        (one line each)."""
        budget = budget or Budget()
        package, published, notes = [], [], []
        for ex, unit in units.items():
            notes += unit.notes
            fn = self.functions[ex]
            pub = self._published.get(ex)
            if unit.tokens and pub and len(pub) >= self.min_tokens and budget.ok() and \
                    (r := alike(unit.tokens, pub, self.published_ratio)) >= self.published_ratio:
                published.append(f"{fn} ({r:.2f})")
            for name, ref in self._package.get(ex, []):
                best = 0.0
                for part in unit.parts:
                    if not budget.ok():
                        break
                    best = max(best, alike(part, ref, self.package_ratio))
                if best >= self.package_ratio:
                    package.append(f"{name} in {fn} ({best:.2f})")
        found = list(notes)
        if package:
            found.append("contains a copy of the package's " + ", ".join(package))
        if published:
            found.append("matches the chapter's published solution: " + ", ".join(published))
        return found

    def peers(self, all_units: dict[str, dict[str, Unit]], budget: Budget | None = None) -> dict[str, list[str]]:
        """submission -> matches of its graded functions with another submission's."""
        budget = budget or Budget()
        out: dict[str, list[str]] = {k: [] for k in all_units}
        keys = sorted(all_units)
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                for ex, ua in all_units[a].items():
                    ub = all_units[b].get(ex)
                    ta, tb = ua.tokens, ub.tokens if ub is not None else None
                    if not ta or not tb or min(len(ta), len(tb)) < self.peer_tokens:
                        continue
                    if not budget.ok():
                        continue
                    if (r := alike(ta, tb, self.peer_ratio)) >= self.peer_ratio:
                        fn = self.functions[ex]
                        out[a].append(f"{fn} matches {b}'s (similarity {r:.2f})")
                        out[b].append(f"{fn} matches {a}'s (similarity {r:.2f})")
        return out

    def review(self, submissions: dict[str, tuple[list[str], dict]], seconds: float = REVIEW_BUDGET_S
               ) -> dict[str, list[str]]:
        """submission -> its similarity flags (its own notes, copies of published or package code, classmates
        alike), from ``{submission: (code cell sources, bound reports)}``; within ``seconds`` in all (what is
        left out then is named in every row it concerns)."""
        budget = Budget(seconds)
        units = {}
        for name, (sources, bound) in submissions.items():
            try:
                units[name] = self.units(sources, bound)
            except (RecursionError, MemoryError):
                units[name] = {}
        out = {name: self.flags(u, budget) for name, u in units.items()}
        for name, found in self.peers(units, budget).items():
            out[name] += found
        if budget.skipped:
            for name in out:
                out[name].append(budget.note)
        return out

