"""The student edition of ``ncbook``: the package a graded submission runs against, with the answers absent.

A graded exercise's answer lives in the package in three places: its reference implementation (and the
private helpers it is made of), the ``forbid`` functions it asks the student to write, and the check
itself (``ncbook/exercises``: references, case generators, comparisons). The student edition is a copy of
the package without them:

* every ``ncbook`` function a graded exercise's reference executes (found by running it on its public cases
  and on the hidden cases of a few secrets and students under ``sys.setprofile``), every function statically
  reachable from those within the private modules they belong to (:func:`reachable`: a branch the cases
  never took, such as ``ncbook.contrastive._solvers._solve_cvxpy`` beside the Newton route, serves the answer
  as well), every ``forbid`` function and the other functions of each ``forbid`` function's private module is
  rewritten with :mod:`ast` into a stub that raises "``ncbook.geometry.seli_geometry`` is not available while
  this assignment is graded" (its code, docstring and comments gone; the rest of the module as before);
* ``ncbook/exercises`` is replaced by a small module with the same public names whose ``check_*``
  functions only say that the check runs in the grader, and by ``_harvest.py`` (the calls and the
  packing of their numbers; no reference, no case generator, no comparison, no expected value);
* no ``__pycache__``, nothing else changed.

Infrastructure that holds no answer is never removed (:data:`KEEP_MODULES`: argument checks, solver
statuses, profiles). Where the chapter's own solution of one question calls a function that is another
question's answer (the contrastive chapter's ``one_angle_cosine`` calls ``cl_risk``, the answer of
``multiset_risk``), the two questions are judged in different sandboxes, each with its own edition
(:func:`groups`). ``build`` writes one edition per group into the assignment's folder and checks that
the chapter's solutions still pass there; ``grade`` binds it over every place the sandbox's Python could
import ``ncbook`` from.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

PACKAGE = "ncbook"
KEEP_MODULES = frozenset({"ncbook", "ncbook._validation", "ncbook._status", "ncbook.profiles"})
"""Modules whose functions are never removed: argument checks, solver statuses, profiles (no answer in them)."""
PROFILE_SECRETS = (b"edition-profile-secret",)
PROFILE_STUDENTS = ("student-a", "student-b")
MESSAGE = ("{name} is not available while this assignment is graded: it computes (part of) the answer to an "
           "exercise of this assignment. Compute it in your own code.")

Owner = tuple  # (module, qualname): one function of the package, methods as "Class.method"


def package_root() -> Path:
    """The folder of the ``ncbook`` package this process imports."""
    import ncbook

    return Path(ncbook.__file__).resolve().parent


def public_name(module: str, qualname: str) -> str:
    """``ncbook.geometry._seli``, ``seli_geometry`` -> ``ncbook.geometry.seli_geometry`` (private parts dropped)."""
    parts = [p for p in module.split(".") if not p.startswith("_")]
    return ".".join(parts + [qualname])


def _module_of(path: str, root: Path) -> str | None:
    try:
        rel = Path(path).resolve().relative_to(root.parent)
    except (ValueError, OSError):
        return None
    if rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def owner_of(code, root: Path) -> Owner | None:
    """The package function a code object belongs to (nested functions and comprehensions: their outermost
    function), or None outside the package or at module level."""
    module = _module_of(code.co_filename, root)
    if module is None or not module.startswith(PACKAGE):
        return None
    qualname = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
    if qualname.startswith("<"):
        return None
    return module, qualname


def _removable(owner: Owner) -> bool:
    module = owner[0]
    return module not in KEEP_MODULES and not module.startswith(f"{PACKAGE}.exercises")


def calls(run: Callable[[], object], root: Path | None = None) -> set[Owner]:
    """Every package function (by owner) that runs while ``run()`` runs, in this thread or threads it starts.

    Exceptions of ``run`` are swallowed: what ran before them counts.
    """
    root = root or package_root()
    seen: set[Owner] = set()
    cache: dict[int, tuple] = {}

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        known = cache.get(id(code))
        if known is None or known[0] is not code:
            known = cache[id(code)] = (code, owner_of(code, root))
        if known[1] is not None:
            seen.add(known[1])

    previous = sys.getprofile()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    except Exception:  # noqa: BLE001 - what ran before the error is what we want
        pass
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)
    return seen


def _functions_of_module(module_name: str) -> set[Owner]:
    """Every function written in the module's file, methods included (not those a decorator generated, such as a
    dataclass's ``__init__``: their code is not in the file)."""
    module = importlib.import_module(module_name)
    file = os.path.realpath(module.__file__)
    found: set[Owner] = set()
    for name, value in vars(module).items():
        members = [(name, value)]
        if inspect.isclass(value) and value.__module__ == module_name:
            members += [(f"{name}.{k}", v) for k, v in vars(value).items()]
        for qual, member in members:
            target = member.fget if isinstance(member, property) else member
            target = target.__func__ if isinstance(target, (staticmethod, classmethod)) else target
            if inspect.isfunction(target) and target.__module__ == module_name and \
                    os.path.realpath(target.__code__.co_filename) == file:
                found.add((module_name, qual))
    return found


def _owner_of_function(fn: Callable) -> Owner | None:
    fn = inspect.unwrap(fn)
    module = getattr(fn, "__module__", "") or ""
    if not module.startswith(PACKAGE + ".") or not inspect.isfunction(fn):
        return None
    return module, fn.__qualname__.split(".<locals>")[0]


_REMOVED: dict[tuple[str, int], frozenset] = {}


def removed_for(spec) -> set[Owner]:
    """What the edition removes for one exercise spec: what its reference executes on its public cases and on
    the hidden cases of :data:`PROFILE_SECRETS` x :data:`PROFILE_STUDENTS`, its ``forbid`` functions and the
    other functions of each ``forbid`` function's private module (``ncbook.<package>._<module>``). Worked out
    once per spec and process."""
    key = (spec.name, id(spec))
    if key not in _REMOVED:
        _REMOVED[key] = frozenset(_removed_for(spec))
    return set(_REMOVED[key])


def _removed_for(spec) -> set[Owner]:
    root = package_root()
    found: set[Owner] = set()
    if spec.reference is not None:
        cases = list(spec.public_cases())
        for secret in PROFILE_SECRETS:
            for student in PROFILE_STUDENTS:
                cases += spec.hidden_cases(secret, student)
        for case in cases:
            found |= calls(lambda case=case: spec.expected(case), root)
        found |= reachable({o for o in found if _removable(o)}, root)
    for fn in spec.forbid:
        owner = _owner_of_function(fn)
        if owner is None:
            continue
        found.add(owner)
        if "._" in owner[0]:
            found |= _functions_of_module(owner[0])
    return {o for o in found if _removable(o)}


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def _module_source(module: str, root: Path) -> str:
    rel = Path(*module.split(".")[1:])
    path = root / (rel / "__init__.py" if (root / rel).is_dir() else rel.with_suffix(".py"))
    return path.read_text()


def _resolve_import(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of ``from <node.module> import ...`` written in ``module`` (a ``.py`` module)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")[:-node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _references(node) -> tuple[set[str], set[str]]:
    """(names read, attribute names used) anywhere inside ``node``."""
    names, attrs = set(), set()
    for x in ast.walk(node):
        if isinstance(x, ast.Name):
            names.add(x.id)
        elif isinstance(x, ast.Attribute):
            attrs.add(x.attr)
    return names, attrs


def reachable(start: set[Owner], root: Path | None = None) -> set[Owner]:
    """Every function statically reachable from the functions ``start`` within the private modules they belong
    to (``ncbook.<package>._<module>``), ``start`` included.

    From a function: the functions and classes (every method of a class) of its module it names, what a
    module-level assignment it names refers to (a dispatch table ``_ROUTES = {"cvxpy": _solve_cvxpy}``), the
    functions of those modules it imports by name, and every function or method of those modules named like
    an attribute it uses (``risk.grad``, ``_solvers.run_solver``): a generous closure, since what it removes is
    only kept again where the chapter's own solution needs it. Functions of other modules are not followed.

    Examples
    --------
    >>> found = reachable({("ncbook.contrastive._solvers", "run_solver")})
    >>> ("ncbook.contrastive._solvers", "_solve_cvxpy") in found
    True
    """
    root = Path(root or package_root())
    modules = {m for m, _ in start if _private(m) and m not in KEEP_MODULES and not m.startswith(f"{PACKAGE}.exercises")}
    if not modules:
        return set(start)
    funcs: dict[Owner, ast.AST] = {}              # every function and method of those modules
    classes: dict[tuple[str, str], list[Owner]] = {}
    assigned: dict[tuple[str, str], ast.AST] = {}  # module-level assignments
    imported: dict[tuple[str, str], tuple[str, str]] = {}
    by_name: dict[str, set[Owner]] = {}
    for module in modules:
        try:
            tree = ast.parse(_module_source(module, root))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs[(module, node.name)] = node
                by_name.setdefault(node.name, set()).add((module, node.name))
            elif isinstance(node, ast.ClassDef):
                methods = []
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        owner = (module, f"{node.name}.{item.name}")
                        funcs[owner] = item
                        methods.append(owner)
                        by_name.setdefault(item.name, set()).add(owner)
                classes[(module, node.name)] = methods
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in (x for x in ast.walk(t) if isinstance(x, ast.Name)):
                        assigned[(module, n.id)] = node.value
            elif isinstance(node, ast.ImportFrom):
                source = _resolve_import(module, node)
                for a in node.names:
                    imported[(module, a.asname or a.name)] = (source, a.name)

    def targets_of(module: str, node) -> set[Owner]:
        out: set[Owner] = set()
        names, attrs = _references(node)
        for attr in attrs:
            out |= by_name.get(attr, set())
        seen: set[tuple[str, str]] = set()
        todo = [(module, n) for n in names]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            if key in funcs:
                out.add(key)
            if key in classes:
                out.update(classes[key])
            if key in assigned:  # a table of functions: what its value names
                more, more_attrs = _references(assigned[key])
                todo += [(key[0], n) for n in more]
                for attr in more_attrs:
                    out |= by_name.get(attr, set())
            if key in imported and imported[key][0] in modules:
                todo.append(imported[key])
        return out

    found, todo = set(start), [o for o in start if o in funcs]
    while todo:
        owner = todo.pop()
        for target in targets_of(owner[0], funcs[owner]):
            if target not in found:
                found.add(target)
                todo.append(target)
    return found


def reference_owners(spec) -> set[Owner]:
    """The exercise-module functions that compute ``spec``'s expected values: its reference (where it is a
    function written in ``ncbook/exercises``) and the exercise-module functions it executes on its public cases
    (the public repository holds them: a copy pasted into a submission is compared as the package's code is).
    The checks' own machinery (``_core``, ``_harvest``) is not among them."""
    root = package_root()
    found: set[Owner] = set()
    owner = _owner_of_function(spec.reference) if spec.reference is not None else None
    if owner is not None and owner[0].startswith(f"{PACKAGE}.exercises") and "<lambda>" not in owner[1]:
        found.add(owner)
    if spec.reference is not None:
        for case in spec.public_cases():
            found |= {o for o in calls(lambda case=case: spec.expected(case), root)
                      if o[0].startswith(f"{PACKAGE}.exercises.") and
                      o[0] not in (f"{PACKAGE}.exercises._core", f"{PACKAGE}.exercises._harvest")}
    return {o for o in found if "<lambda>" not in o[1]}


def external_forbidden(spec) -> list[str]:
    """``module.qualname`` of each ``forbid`` function outside the package (e.g. ``torch.autograd.grad``): the
    edition cannot remove them, the judge's watcher still refuses a call of them (a signal, not a defence)."""
    out = []
    for fn in spec.forbid:
        if _owner_of_function(fn) is None:
            fn = inspect.unwrap(fn)
            out.append(f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', ''))}")
    return out


@dataclass(frozen=True)
class Group:
    """Questions judged together, in one sandbox with one edition."""

    exercises: tuple[str, ...]
    removed: frozenset

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(sorted(map(list, self.removed))).encode()).hexdigest()[:10]


def groups(removed: dict[str, set[Owner]], used: dict[str, set[Owner]]) -> list[Group]:
    """Questions in as few groups as possible such that no question's solution uses what a group-mate removes.

    ``removed[e]`` is what exercise ``e``'s edition removes, ``used[e]`` the package functions its chapter
    solution calls. Greedy, in order: each exercise joins the first group it does not conflict with.
    """
    out: list[list[str]] = []
    for name in removed:
        for members in out:
            clash = any(used.get(name, set()) & removed[m] or used.get(m, set()) & removed[name] for m in members)
            if not clash:
                members.append(name)
                break
        else:
            out.append([name])
    return [Group(tuple(m), frozenset(o for e in m for o in removed[e])) for m in out]


# --------------------------------------------------------------------------- writing the edition
_KEPT_DECORATORS = {"property", "staticmethod", "classmethod"}


def _kept_decorator(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in _KEPT_DECORATORS) or \
        (isinstance(node, ast.Attribute) and node.attr in ("setter", "getter", "deleter"))


def _stub(node, message: str):
    args = ast.arguments(posonlyargs=[], args=[], vararg=ast.arg("args"), kwonlyargs=[], kw_defaults=[],
                         kwarg=ast.arg("kwargs"), defaults=[])
    body = [ast.Raise(exc=ast.Call(func=ast.Name("RuntimeError", ast.Load()), args=[ast.Constant(message)],
                                   keywords=[]), cause=None)]
    kind = ast.AsyncFunctionDef if isinstance(node, ast.AsyncFunctionDef) else ast.FunctionDef
    extra = {"type_params": []} if "type_params" in kind._fields else {}  # Python 3.12+
    return kind(name=node.name, args=args, body=body, returns=None,
                decorator_list=[d for d in node.decorator_list if _kept_decorator(d)], **extra)


def strip_module(source: str, module: str, qualnames: Iterable[str]) -> str:
    """``source`` with each function of ``qualnames`` (top-level ``f`` or method ``Class.f``) replaced by a stub
    that raises :data:`MESSAGE`; unparsed with :func:`ast.unparse` (no comment of the module survives).

    Raises
    ------
    ValueError
        If a qualname is not a function of the module's top level or of one of its top-level classes.
    """
    wanted = set(qualnames)
    tree = ast.parse(source)
    done = set()

    def replace(body: list, prefix: str) -> None:
        for i, node in enumerate(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + node.name
                if qual in wanted:
                    body[i] = _stub(node, MESSAGE.format(name=public_name(module, qual)))
                    done.add(qual)
            elif isinstance(node, ast.ClassDef) and not prefix:
                replace(node.body, node.name + ".")

    replace(tree.body, "")
    missing = wanted - done
    if missing:
        raise ValueError(f"{module}: cannot find {sorted(missing)} at the top level or in a top-level class")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _exercises_stub(names: list[str]) -> str:
    checks = [n for n in names if n.startswith("check_")]
    lines = [
        '"""ncbook.exercises as a graded submission sees it: the checks run in the grader, not here.',
        "",
        "This is the student edition of the package, used while an assignment is graded. The checks' references,",
        "case generators and comparisons are not in it; each ``check_<name>`` returns a failed result saying that",
        "the grader runs it. ``_harvest`` (calling a function on cases, packing the numbers) is the only part kept.",
        '"""',
        "",
        "from ._harvest import Outcome, collect  # noqa: F401",
        "",
        "_MESSAGE = ('this check runs in the grader, not in this notebook, while the assignment is graded: '",
        "            'the grader calls your function on the public cases and on hidden cases of its own')",
        "",
        "",
        "class CheckResult:",
        '    """What a check says: its name, whether it passed, a message."""',
        "",
        "    def __init__(self, name, passed, message):",
        "        self.name, self.passed, self.message = name, bool(passed), str(message)",
        "",
        "    def __bool__(self):",
        "        return self.passed",
        "",
        "    def assert_passed(self):",
        "        if not self.passed:",
        "            raise AssertionError(f'{self.name} failed: {self.message}')",
        "",
        "    def __repr__(self):",
        "        return f\"[{'PASSED' if self.passed else 'NOT RUN'}] {self.name}: {self.message}\"",
        "",
        "",
        "def _graded(name):",
        "    def check(student, *args, **kwargs):",
        "        return CheckResult(name, False, _MESSAGE)",
        "",
        "    check.__name__ = check.__qualname__ = 'check_' + name",
        "    return check",
        "",
        "",
        "def run_cases(*args, **kwargs):",
        "    raise RuntimeError('ncbook.exercises.run_cases is not available while this assignment is graded')",
        "",
        "",
        "class Exercise:",
        "    def __init__(self, *args, **kwargs):",
        "        raise RuntimeError('ncbook.exercises.Exercise is not available while this assignment is graded')",
        "",
        "",
        "EXERCISES = {}",
        "",
    ]
    lines += [f"{c} = _graded({c.removeprefix('check_')!r})" for c in checks]
    lines += ["", f"__all__ = {sorted(set(names) | {'CheckResult', 'EXERCISES', 'Exercise', 'run_cases'})!r}", ""]
    return "\n".join(lines)


def write_edition(out: Path, removed: Iterable[Owner], *, root: Path | None = None) -> Path:
    """Write the student edition into ``out/ncbook`` (``out`` is replaced); return the package folder.

    ``removed``: the ``(module, qualname)`` of every function to replace by a stub.
    """
    import ncbook.exercises

    root = Path(root or package_root())
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    target = out / PACKAGE
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*"))
    shutil.rmtree(target / "exercises")
    (target / "exercises").mkdir()
    shutil.copyfile(root / "exercises" / "_harvest.py", target / "exercises" / "_harvest.py")
    (target / "exercises" / "__init__.py").write_text(_exercises_stub(list(ncbook.exercises.__all__)))
    by_module: dict[str, set[str]] = {}
    for module, qual in removed:
        by_module.setdefault(module, set()).add(qual)
    for module, quals in sorted(by_module.items()):
        rel = Path(*module.split(".")[1:])
        path = target / (rel / "__init__.py" if (root / rel).is_dir() else rel.with_suffix(".py"))
        path.write_text(strip_module(path.read_text(), module, quals))
    (out / "REMOVED.json").write_text(json.dumps(sorted(map(list, removed)), indent=1) + "\n")
    return target


# --------------------------------------------------------------------------- what absence means, as data
def _function(owner: Owner):
    obj = importlib.import_module(owner[0])
    for part in owner[1].split("."):
        obj = vars(obj)[part] if part in vars(obj) else getattr(obj, part)
    obj = obj.fget if isinstance(obj, property) else obj
    return obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj


def _canonical(value) -> str:
    if inspect.iscode(value):
        fields = (value.co_argcount, value.co_posonlyargcount, value.co_kwonlyargcount, value.co_flags,
                  value.co_code.hex(), value.co_names, value.co_varnames, value.co_freevars, value.co_cellvars)
        return repr(fields) + "[" + ",".join(_canonical(c) for c in value.co_consts) + "]"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(_canonical(v) for v in value)) + ")"
    if isinstance(value, tuple):
        return "(" + ",".join(_canonical(v) for v in value) + ")"
    return repr(value)


def code_digest(code) -> str:
    """sha256 of a code object without where it was written (file, name, lines): a moved copy has the same, and
    so does the same code in another process (no ``marshal``, whose reference flags vary)."""
    return hashlib.sha256(_canonical(code).encode()).hexdigest()


def _source_of(owner: Owner, root: Path) -> str:
    module = owner[0]
    rel = Path(*module.split(".")[1:])
    path = root / (rel / "__init__.py" if (root / rel).is_dir() else rel.with_suffix(".py"))
    text = path.read_text()
    tree = ast.parse(text)
    body, parts = tree.body, owner[1].split(".")
    node = None
    for part in parts:
        node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and n.name == part)
        body = node.body
    lines = text.splitlines()
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return "\n".join(lines[start - 1:node.end_lineno])


def fingerprints(removed: Iterable[Owner], edition: Path, *, root: Path | None = None, min_length: int = 30
                 ) -> tuple[list[str], list[str]]:
    """(distinctive source lines, code digests) of the answers: the removed functions and the real
    ``ncbook/exercises`` (but ``_harvest.py``). A line is distinctive when it has ``min_length`` characters or
    more (stripped), ten letters or digits, and is part of no file of the edition ``edition`` (the package
    folder written by :func:`write_edition`): finding one anywhere a submission can read means an answer is
    there."""
    root = Path(root or package_root())
    sources = [_source_of(o, root) for o in sorted(removed)]
    digests: set[str] = set()
    for owner in removed:
        fn = _function(owner)
        if getattr(fn, "__code__", None) is not None:
            digests.add(code_digest(fn.__code__))
    for path in sorted((root / "exercises").glob("*.py")):
        if path.name in ("_harvest.py",):
            continue
        sources.append(path.read_text())
        module = importlib.import_module(f"{PACKAGE}.exercises.{path.stem}" if path.stem != "__init__"
                                         else f"{PACKAGE}.exercises")
        for value in vars(module).values():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                digests.add(code_digest(value.__code__))
    kept = "\n".join(p.read_text(errors="replace") for p in Path(edition).rglob("*.py"))
    candidates = {line.strip() for src in sources for line in src.splitlines()}
    lines = sorted(line for line in candidates if len(line) >= min_length and sum(ch.isalnum() for ch in line) >= 10
                   and line not in kept)  # a substring of no file of the edition
    return lines, sorted(digests)


def import_check(package_dir: Path, modules: Iterable[str] | None = None, python: str = sys.executable,
                 timeout: float = 300) -> str | None:
    """Import ``modules`` (default: every module) of the edition at ``package_dir`` in a fresh interpreter, and
    ``ncbook.exercises``; None, or what failed."""
    import subprocess

    names = json.dumps(sorted(set(modules or ()) | {"ncbook.exercises"}) if modules is not None else None)
    code = ("import importlib, json, pkgutil, sys\nimport ncbook\nassert ncbook.__file__.startswith(sys.argv[1]), "
            f"ncbook.__file__\nnames = json.loads({names!r}) or [m.name for m in "
            "pkgutil.walk_packages(ncbook.__path__, 'ncbook.')]\nbad = []\nfor name in names:\n"
            "    try:\n        importlib.import_module(name)\n    except Exception as exc:\n"
            "        bad.append(f'{name}: {type(exc).__name__}: {exc}')\nprint('\\n'.join(bad))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(package_dir).parent), "PYTHONDONTWRITEBYTECODE": "1",
           "MPLBACKEND": "Agg"}
    proc = subprocess.run([python, "-c", code, str(Path(package_dir).parent)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(Path(package_dir).parent))
    problems = (proc.stdout.strip() + ("\n" + proc.stderr.strip()[-2000:] if proc.returncode else "")).strip()
    return problems or None
