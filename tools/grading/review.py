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
                     "__del__", "__file__"}
REVIEW_NAMES = {"EXERCISES", "exec", "eval", "compile", "__import__", "__builtins__", "setattr", "globals", "vars",
                "open"}
REVIEW_MODULES = {"importlib", "ctypes", "gc", "threading", "_thread", "multiprocessing", "subprocess", "signal",
                  "concurrent", "pickle", "marshal", "inspect", "queue", "nbformat"}
TABLE_NUMBERS = 20  # a literal with this many numbers inside a function is a table of answers to look at
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


def _tables(tree) -> list[str]:
    """Literal containers of :data:`TABLE_NUMBERS` numbers or more (outermost ones only), where they are."""
    found, inside = [], set()
    for owner in ast.walk(tree):
        where = f"in {owner.name}" if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)) else "at top level"
        if not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        for node in ast.walk(owner):
            if id(node) in inside or not isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                continue
            count = sum(isinstance(c, ast.Constant) and isinstance(c.value, (int, float, complex))
                        and not isinstance(c.value, bool) for c in ast.walk(node))
            if count >= TABLE_NUMBERS:
                inside.update(id(n) for n in ast.walk(node))
                found.append(f"a literal table of {count} numbers {where}")
    return list(dict.fromkeys(found))


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
    return found + _tables(tree)


def review_flags(nb, handed=None) -> list[str]:
    """What in a submission's own cells (not the handed-out ones) an instructor should read: statically,
    never run. Code cells, raw cells and Python code blocks in Markdown cells are read alike (code kept in
    a raw cell can be run by another cell). Flagged: a private module or attribute of an imported package,
    an assignment to an attribute of an imported module, one of :data:`REVIEW_ATTRIBUTES`,
    :data:`REVIEW_NAMES` and :data:`REVIEW_MODULES`, ``__del__`` and conversion hooks, a literal table of
    :data:`TABLE_NUMBERS` numbers or more inside a function, a shell or magic line, a code cell that does not
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
    """How alike two token lists are (0 to 1), :class:`difflib.SequenceMatcher` without its junk heuristic."""
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def definitions(sources: list[str]) -> dict[str, ast.AST]:
    """Top-level function (and class) definitions of some code, by name; the last definition of a name wins."""
    out: dict[str, ast.AST] = {}
    for source in sources:
        try:
            tree = ast.parse(_python(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out[node.name] = node
    return out


def closure(name: str, defs: dict[str, ast.AST]) -> list[ast.AST]:
    """The definition of ``name`` and of every other definition it reaches by name, in reaching order."""
    order, todo = [], [name]
    while todo:
        n = todo.pop(0)
        if n in defs and defs[n] not in order:
            order.append(defs[n])
            todo += [x.id for x in ast.walk(defs[n]) if isinstance(x, ast.Name) and x.id in defs]
    return order


@dataclass
class Similarity:
    """Compares graded functions with published code and with each other.

    ``functions``: exercise -> the student's function name; ``published``: exercise -> source cells of the
    chapter's solution; ``package``: exercise -> [(qualified name, source)] of the package code its
    reference runs. Thresholds: a ratio of at least ``published_ratio`` / ``package_ratio`` /
    ``peer_ratio`` over at least ``min_tokens`` / ``min_tokens`` / ``peer_tokens`` canonical tokens.
    """

    functions: dict[str, str]
    published: dict[str, list[str]] = field(default_factory=dict)
    package: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    published_ratio: float = 0.9
    package_ratio: float = 0.85
    peer_ratio: float = 0.92
    min_tokens: int = 25
    peer_tokens: int = 60

    def __post_init__(self):
        self._published = {}
        for ex, sources in self.published.items():
            defs = definitions(sources)
            fn = self.functions.get(ex)
            if fn in defs:
                self._published[ex] = canonical_tokens(closure(fn, defs))
        self._package = {}
        for ex, items in self.package.items():
            kept = []
            for name, source in items:
                try:
                    kept.append((name, canonical_tokens(ast.parse(textwrap.dedent(source)).body)))
                except (SyntaxError, ValueError, RecursionError):
                    continue
            self._package[ex] = kept

    def units(self, sources: list[str]) -> dict[str, tuple[list[str], list[list[str]]]]:
        """exercise -> (tokens of the student's function with its helpers, tokens of each definition alone)."""
        defs = definitions(sources)
        out = {}
        for ex, fn in self.functions.items():
            if fn in defs:
                nodes = closure(fn, defs)
                out[ex] = (canonical_tokens(nodes), [canonical_tokens([n]) for n in nodes])
        return out

    def flags(self, units) -> list[str]:
        """Matches with the package's reference code, then with the published solution (one line each)."""
        package, published = [], []
        for ex, (whole, parts) in units.items():
            fn = self.functions[ex]
            pub = self._published.get(ex)
            if pub and len(pub) >= self.min_tokens and (r := ratio(whole, pub)) >= self.published_ratio:
                published.append(f"{fn} ({r:.2f})")
            for name, ref in self._package.get(ex, []):
                if len(ref) < self.min_tokens:
                    continue
                best = max((ratio(p, ref) for p in parts), default=0.0)
                if best >= self.package_ratio:
                    package.append(f"{name} in {fn} ({best:.2f})")
        found = []
        if package:
            found.append("contains a copy of the package's " + ", ".join(package))
        if published:
            found.append("matches the chapter's published solution: " + ", ".join(published))
        return found

    def peers(self, all_units: dict[str, dict]) -> dict[str, list[str]]:
        """submission -> matches of its graded functions with another submission's."""
        out: dict[str, list[str]] = {k: [] for k in all_units}
        keys = sorted(all_units)
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                for ex, (ta, _) in all_units[a].items():
                    tb = all_units[b].get(ex, (None,))[0]
                    if not tb or min(len(ta), len(tb)) < self.peer_tokens:
                        continue
                    if (r := ratio(ta, tb)) >= self.peer_ratio:
                        fn = self.functions[ex]
                        out[a].append(f"{fn} matches {b}'s (similarity {r:.2f})")
                        out[b].append(f"{fn} matches {a}'s (similarity {r:.2f})")
        return out
