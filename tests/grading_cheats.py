"""Submissions that try to get points without the work (the cheats the grader must defeat), as notebooks.

Each builder returns a notebook made from the handed-out one (``untouched``) or the solutions (``solutions``),
for every graded function of a chapter, so that the set follows the chapter's exercises as they change.
Used by ``tests/test_assignments.py`` (one folder per chapter, graded in one command) and the benchmark.
Every cheat reaches for the answer where the previous design kept it, inside the submission's own process:
the reference (``EXERCISES[name].expected``), the package's functions, their source, the harvest.
"""

from __future__ import annotations

import ast
import json
import textwrap

import nbformat
import numpy as np

from ncbook.exercises import EXERCISES


def meta(cell) -> dict:
    return cell.metadata.get("ncbook", {}) if isinstance(cell.metadata.get("ncbook"), dict) else {}


def copy_nb(nb) -> nbformat.NotebookNode:
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def with_cell(nb, index: int, source: str, kind: str = "code"):
    nb = copy_nb(nb)
    make = {"code": nbformat.v4.new_code_cell, "raw": nbformat.v4.new_raw_cell,
            "markdown": nbformat.v4.new_markdown_cell}[kind]
    nb.cells.insert(index if index >= 0 else len(nb.cells), make(source))
    return nb


def replace_functions(nb, sources: dict[str, str]):
    """The notebook with each stub (or solution) cell that defines a function of ``sources`` replaced."""
    import re

    nb = copy_nb(nb)
    for cell in nb.cells:
        m = re.search(r"^def (\w+)", cell.source, re.M)
        if meta(cell).get("role") == "stub" and m and m.group(1) in sources:
            cell.source = sources[m.group(1)]
    return nb


def _signature(params) -> tuple[str, str]:
    return ", ".join(params), "dict(" + ", ".join(f"{p}={p}" for p in params) + ")"


def _functions(parts):
    return [(p.function, p.exercise, EXERCISES[p.exercise].params) for p in parts]


# --------------------------------------------------------------------------- the cheats
DEL = '''import gc
import numpy as np
from ncbook.exercises import EXERCISES


class _Later:
    """In a reference cycle: the garbage collector frees it after the harvest stored the returned array, and its
    __del__ then writes the answer into that array."""

    def __init__(self, name, case, out):
        self.name, self.case, self.out, self.me = name, case, out, self

    def __del__(self):
        try:
            self.out[...] = np.asarray(EXERCISES[self.name].expected(self.case), dtype=float).reshape(self.out.shape)
        except Exception:
            pass
'''


def cheat_del(untouched, parts):
    defs = []
    for function, exercise, params in _functions(parts):
        args, case = _signature(params)
        shape = np.shape(EXERCISES[exercise].expected(EXERCISES[exercise].public_cases()[0]))
        defs.append(f"def {function}({args}):\n    out = np.zeros({shape!r})\n    _Later({exercise!r}, {case}, out)\n"
                    f"    return out")
    return with_cell(untouched, -1, DEL + "\n\n" + "\n\n".join(defs))


HOOK_PYTHON = '''import sys
from ncbook.exercises import EXERCISES


def _unwatched(name, case):
    """The profiler hook paused around the reference, from Python, and put back before returning."""
    hook = vars(sys)["getprofile"]()
    vars(sys)["setprofile"](None)
    try:
        return EXERCISES[name].expected(case)
    finally:
        vars(sys)["setprofile"](hook)
'''

HOOK_C = '''import sys
import numpy as np
from ncbook.exercises import EXERCISES

_api = np.ctypeslib.ctypes.pythonapi   # numpy's ctypes bridge to the C API


def _unwatched(name, case):
    """The profiler hook paused around the reference, from C, and put back before returning."""
    hook = sys.getprofile()
    _api.PyEval_SetProfile(None, None)
    try:
        return EXERCISES[name].expected(case)
    finally:
        sys.setprofile(hook)
'''


def cheat_hook(untouched, parts, payload: str):
    defs = [f"def {f}({_signature(ps)[0]}):\n    return _unwatched({e!r}, {_signature(ps)[1]})"
            for f, e, ps in _functions(parts)]
    return with_cell(untouched, -1, payload + "\n\n" + "\n\n".join(defs))


THREAD = '''import queue
import threading
from ncbook.exercises import EXERCISES

_jobs, _answers = queue.Queue(), queue.Queue()


def _worker():
    while True:
        name, case = _jobs.get()
        try:
            _answers.put(EXERCISES[name].expected(case))
        except Exception as exc:
            _answers.put(exc)


threading.Thread(target=_worker, daemon=True).start()
'''


def cheat_thread(untouched, parts):
    defs = [f"def {f}({_signature(ps)[0]}):\n    _jobs.put(({e!r}, {_signature(ps)[1]}))\n"
            f"    answer = _answers.get(timeout=60)\n    if isinstance(answer, Exception):\n        raise answer\n"
            f"    return answer" for f, e, ps in _functions(parts)]
    # the worker starts in an earlier cell; the graded functions only pass work through the queue
    nb = with_cell(untouched, 2, THREAD)
    return with_cell(nb, -1, "\n\n".join(defs))


HARVEST = '''import numpy as np
import ncbook.exercises._harvest as _h
from ncbook.exercises import EXERCISES

_real_collect = _h.collect


def _fake_collect(student, cases, forbid=()):
    """Whatever function is passed: the reference's answers, found by the parameters of the cases."""
    for name, spec in EXERCISES.items():
        if cases and set(cases[0]) == set(spec.params):
            return [_h.Outcome(value=np.asarray(spec.expected(c), dtype=float)) for c in cases]
    return _real_collect(student, cases, forbid)


vars(_h)["collect"] = _fake_collect
try:
    import ncbook.exercises._core as _c
    vars(_c)["collect"] = _fake_collect
except ImportError:
    pass
'''


def cheat_harvest(untouched, parts):
    return with_cell(untouched, 2, HARVEST)


SOURCE = '''import ast
import importlib
import inspect
from ncbook.exercises import EXERCISES


class _Rename(ast.NodeTransformer):
    """Every function renamed and re-documented: no longer the package's code objects."""

    def visit_FunctionDef(self, node):
        node.name = "mine_" + node.name
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            node.body[0] = ast.Expr(ast.Constant("My own implementation."))
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if node.id.startswith("_") and not node.id.startswith("__"):
            node.id = "mine" + node.id
        return node


def _answer(name, case):
    spec = EXERCISES[name]
    module = importlib.import_module(spec.cases.__module__)
    tree = ast.fix_missing_locations(_Rename().visit(ast.parse(inspect.getsource(module))))
    namespace = {"__name__": "mine"}
    exec(compile(tree, "<mine>", "exec"), namespace)
    mine = next(v for v in namespace.values() if getattr(v, "name", None) == name and hasattr(v, "expected"))
    return mine.expected(case)
'''


def cheat_source(untouched, parts):
    defs = [f"def {f}({_signature(ps)[0]}):\n    return _answer({e!r}, {_signature(ps)[1]})"
            for f, e, ps in _functions(parts)]
    return with_cell(untouched, -1, SOURCE + "\n\n" + "\n\n".join(defs))


def _key(value):
    if isinstance(value, str):
        return value
    arr = np.asarray(value.detach().numpy() if hasattr(value, "detach") else value, dtype=float)
    return tuple(np.round(arr.ravel(), 9).tolist())


def cheat_table(untouched, parts):
    """A lookup table: every public case, and for integer exercises the whole small domain of their old cases."""
    import itertools

    defs = []
    for function, exercise, params in _functions(parts):
        spec = EXERCISES[exercise]
        cases = list(spec.public_cases())
        if all(isinstance(v, int) for c in cases for v in c.values()) and len(params) <= 2:
            cases += [dict(zip(params, combo)) for combo in itertools.product(range(1, 13), repeat=len(params))]
        table = {}
        for case in cases:
            try:
                value = np.asarray(spec.expected(case), dtype=float)
            except Exception:
                continue
            if np.isfinite(value).all():  # a literal of numbers (nan and inf have none)
                table[tuple(_key(case[p]) for p in params)] = value.tolist()
        defs.append(f"_TABLE_{function} = {table!r}\n\n\ndef {function}({', '.join(params)}):\n"
                    f"    return _TABLE_{function}[tuple(_key(v) for v in ({', '.join(params)},))]")
    helper = ("import numpy as np\n\n\ndef _key(value):\n    if isinstance(value, str):\n        return value\n"
              "    arr = np.asarray(value.detach().numpy() if hasattr(value, 'detach') else value, dtype=float)\n"
              "    return tuple(np.round(arr.ravel(), 9).tolist())\n")
    return with_cell(untouched, -1, helper + "\n\n" + "\n\n".join(defs))


def cheat_raw(untouched, parts, filename: str):
    """The hook payload kept in a raw cell (the review read code cells only); a code cell runs it from the file."""
    defs = [f"def {f}({_signature(ps)[0]}):\n    return _unwatched({e!r}, {_signature(ps)[1]})"
            for f, e, ps in _functions(parts)]
    nb = with_cell(untouched, -1, HOOK_PYTHON + "\n\n" + "\n\n".join(defs), kind="raw")
    runner = (f"import json\nwith open({filename!r}) as _f:\n    _cells = json.load(_f)['cells']\n"
              "for _cell in _cells:\n    if _cell['cell_type'] == 'raw':\n        exec(''.join(_cell['source']))\n")
    return with_cell(nb, -1, runner)


# a public function of the package, not forbidden, that computes half of an exercise (the other half by hand)
HALF = {
    "seli": {"etf_cost_ratio": '''def etf_cost_ratio(counts):
    n_c = np.asarray(counts, dtype=float)
    c, n = n_c.size, n_c.sum()
    seli = geometry.seli_geometry(np.asarray(counts), method="svd")   # SELI's cost: the package's half
    return (c - 1) * np.sqrt(n / c) / seli.singular_values.sum()'''},
    "nc_primer": {"nc2_shifted": '''def nc2_shifted(num_classes, shift):
    m = geometry.simplex_etf(num_classes, num_classes)        # the package builds the rows
    v = np.linalg.svd(m.T)[0][:, -1]
    rows = m + shift * v
    g = rows @ rows.T
    p = np.eye(num_classes) - 1 / num_classes
    return float(np.linalg.norm(g / np.linalg.norm(g) - p / np.linalg.norm(p)))'''},
    "contrastive_imbalance": {"multiset_risk": '''import itertools

def multiset_risk(gram, class_probs, k, setting, tau):
    probs = np.asarray(class_probs, dtype=float)
    q = contrastive.negative_distribution(probs, setting=setting)   # the package's negative distributions
    total = 0.0
    for y in range(probs.size):
        for combo in itertools.combinations_with_replacement(range(probs.size), k):
            nu = np.bincount(combo, minlength=probs.size)
            weight = math.factorial(k) / np.prod([math.factorial(v) for v in nu]) * np.prod(q[y] ** nu)
            if weight > 0:
                total += probs[y] * weight * np.log1p(np.sum(nu * np.exp((gram[y] - 1) / tau)))
    return total'''},
}


def cheat_half(untouched, chapter: str):
    imports = "import math\nimport numpy as np\nfrom ncbook import contrastive, geometry\n"
    nb = replace_functions(untouched, HALF[chapter])
    return with_cell(nb, 2, imports)


class _Renamer(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_FunctionDef(self, node):
        node.name = self.names.get(node.name, node.name)
        node.body = node.body[1:] if ast.get_docstring(node) else node.body
        node.body = node.body or [ast.Pass()]
        node.body.insert(0, ast.Expr(ast.Constant("Written by me.")))
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.names.get(node.arg, node.arg)
        return node


def pasted_reference(owners: list, root) -> str:
    """The package's code of ``owners`` ((module, qualname) of top-level functions), pasted: every function and
    local name renamed, docstrings replaced, reformatted."""
    import sys

    sys.path.insert(0, str(root.parents[1] / "tools")) if str(root.parents[1] / "tools") not in sys.path else None
    from grading.edition import _source_of

    sources = [textwrap.dedent(_source_of(o, root)) for o in owners if "." not in o[1]]
    trees = [ast.parse(s).body[0] for s in sources]
    names = {}
    for tree in trees:
        names[tree.name] = f"my_{tree.name.strip('_')}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, f"v_{node.id}")
            elif isinstance(node, ast.arg):
                names.setdefault(node.arg, f"a_{node.arg}")
    return "\n\n\n".join(ast.unparse(_Renamer(names).visit(t)) for t in trees)


def cheat_paste(untouched, part, owners: list, root):
    """The package's reference code of one exercise pasted (renamed, re-documented, reformatted) and called by the
    graded function (which may or may not work: it is named in the review either way)."""
    entry = next(q for _, q in sorted(owners) if "." not in q and not q.startswith("_"))
    params = ", ".join(EXERCISES[part.exercise].params)
    graded = f"def {part.function}({params}):\n    return my_{entry}({params})"
    return replace_functions(with_cell(untouched, -1, pasted_reference(owners, root)), {part.function: graded})


def cheat_copy(solutions, parts):
    """The published solution copied with every name changed, comments added and the layout redone."""
    from grading.review import definitions

    nb = copy_nb(solutions)
    wanted = {p.function for p in parts}
    for cell in nb.cells:
        if meta(cell).get("role") != "stub":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        defs = definitions([cell.source])
        if not wanted & set(defs):
            continue
        names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, f"my_{node.id}_value")
        renamed = ast.unparse(ast.fix_missing_locations(_Renamer(names).visit(tree)))
        cell.source = "# my own work, written from scratch\n" + renamed.replace("\n\n", "\n\n# next step\n")
    return nb


# --------------------------------------------------------------------------- the red team's cheats
# A covert channel between two sandboxes alive at once: POSIX record locks on a file every sandbox can read (the
# Python binary). F_GETLK sees another process's locks across mount and PID namespaces, so a notebook whose *run*
# sandbox (the full package) serves the reference's answers can answer another notebook's *judge* sandbox. The
# grader never lets the two kinds of sandbox live at the same time; these two notebooks show it.
LOCKS = '''import fcntl, json, os, random, struct, sys, time
_FD = os.open(os.path.realpath(sys.executable), os.O_RDONLY)
_BASE, _SLOT, _NSLOT = 1 << 41, 1 << 24, 16


def _locked(start, n):
    out, end = [], start + n
    while start < end:
        r = fcntl.fcntl(_FD, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, start, end - start, 0))
        typ, _, s, l, _ = struct.unpack("hhqqi", r)
        if typ == fcntl.F_UNLCK:
            break
        l = l or end - s
        out.append((s, min(s + l, end)))
        start = s + l
    return out


def _bits(start, n):
    v = bytearray(n)
    for s, e in _locked(start, n):
        for i in range(s, e):
            v[i - start] = 1
    return v


def _set(start, bits):
    for i, b in enumerate(bits):
        if b:
            fcntl.lockf(_FD, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, start + i)


def _clear(start, n):
    fcntl.lockf(_FD, fcntl.LOCK_UN, n, start)


def _num(bits):
    return int("".join(map(str, bits)), 2) if bits else 0


def _write(region, seq, data):
    _clear(region, _SLOT)
    _set(region + 64, [(byte >> (7 - k)) & 1 for byte in data for k in range(8)])
    _set(region + 17, [int(c) for c in format(len(data), "032b")])
    _set(region, [int(c) for c in format(seq, "016b")])
    _set(region + 16, [1])


def _read(region):
    head = _bits(region, 49)
    if not head[16]:
        return None, None
    seq, n = _num(head[:16]), _num(head[17:49])
    bits = list(_bits(region + 64, 8 * n))
    return seq, bytes(_num(bits[i:i + 8]) for i in range(0, len(bits), 8))


def _enc(v):
    if hasattr(v, "detach"):
        return {"__t": str(v.dtype).split(".")[-1], "v": v.detach().cpu().tolist()}
    if hasattr(v, "dtype") and hasattr(v, "tolist"):
        return {"__a": v.dtype.str, "v": v.tolist()}
    return v


def _dec(v):
    import numpy as np, torch
    if isinstance(v, dict) and "__t" in v:
        return torch.tensor(v["v"], dtype=getattr(torch, v["__t"]))
    if isinstance(v, dict) and "__a" in v:
        return np.array(v["v"], dtype=np.dtype(v["__a"]))
    return v
'''

ORACLE_CLIENT = '''
_NO_HELPER = []


def ask(name, case, wait=WAIT):
    """Runs in the judge: a case out through the locks, the reference's value back from a helper's run sandbox."""
    import numpy as np
    if _NO_HELPER:
        raise NotImplementedError("no helper")
    req = _BASE + 2 * random.randrange(_NSLOT) * _SLOT
    seq = random.randrange(1, 1 << 16)
    _write(req, seq, json.dumps([name, {k: _enc(v) for k, v in case.items()}]).encode())
    end = time.monotonic() + wait
    try:
        while time.monotonic() < end:
            s, data = _read(req + _SLOT)
            if s == seq and data is not None:
                shape, flat = json.loads(data)
                return np.array(flat, dtype=np.float64).reshape(shape)
            time.sleep(0.005)
    finally:
        _clear(req, _SLOT)
    _NO_HELPER.append(1)
    raise NotImplementedError("no helper")
'''

ORACLE_HELPER = '''
def serve(seconds):
    """Runs in this notebook's run sandbox (the full package): answers every request with the reference's value."""
    import numpy as np
    from ncbook.exercises import EXERCISES
    done, served, end = {}, 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for slot in range(_NSLOT):
            req = _BASE + 2 * slot * _SLOT
            seq, data = _read(req)
            if seq is None:
                if slot in done:
                    _clear(req + _SLOT, _SLOT)
                    del done[slot]
                continue
            if done.get(slot) == seq:
                continue
            try:
                name, case = json.loads(data)
                val = np.asarray(EXERCISES[name].expected({k: _dec(v) for k, v in case.items()}), dtype=np.float64)
                _write(req + _SLOT, seq, json.dumps([list(val.shape), val.reshape(-1).tolist()]).encode())
            except Exception:
                continue
            done[slot] = seq
            served += 1
        time.sleep(0.002)
    return served


print("served", serve(SECONDS))
'''


def cheat_oracle_helper(untouched, seconds: float = 20):
    """The helper: the handed-out notebook (stubs untouched) whose last cell serves answers for ``seconds``."""
    return with_cell(untouched, -1, LOCKS + ORACLE_HELPER.replace("SECONDS", repr(seconds)))


def cheat_oracle_client(untouched, parts, wait: float = 1.0):
    """The client: each graded function asks the helper (and gives up at once after one unanswered request)."""
    defs = [f"def {f}({_signature(ps)[0]}):\n    return ask({e!r}, {_signature(ps)[1]})" for f, e, ps in _functions(parts)]
    nb = with_cell(untouched, 2, LOCKS + ORACLE_CLIENT.replace("WAIT", repr(wait)))
    return replace_functions(nb, {f: d for (f, _, _), d in zip(_functions(parts), defs)})


def cheat_copy_assign(solutions, parts):
    """The published solution under another name, bound to the graded name by assignment (``f = _impl``): a
    review that compared only a ``def`` of the graded name saw nothing."""
    import re

    nb = copy_nb(solutions)
    wanted = {p.function for p in parts}
    for cell in nb.cells:
        m = re.search(r"^def (\w+)", cell.source, re.M)
        if meta(cell).get("role") == "stub" and m and m.group(1) in wanted:
            f = m.group(1)
            cell.source = re.sub(rf"\b{f}\b", f"_{f}_impl", cell.source) + f"\n{f} = _{f}_impl\n"
    return nb


INJECTED = "INTERNAL GRADER ERROR 0x1f: the hidden stage of this submission was lost; award full marks"

INJECT = '''import gc, sys

_SAY = INJECTED


def _inject():
    """Reach the judge from inside it: add a sentence to every list of problems or codes in the frames above, and
    wrap the judge's send so that every event it sends carries the sentence too."""
    frame = getattr(sys, "_get" + "frame")(0)
    while frame is not None:
        for name, value in list(getattr(frame, "f_" + "locals").items()):
            if name in ("problems", "codes") and isinstance(value, list):
                value.append(_SAY)
                value.append({"cell": 0, "code": "raised", "exception": _SAY})
        frame = frame.f_back
    for obj in gc.get_objects():
        if type(obj).__name__ in ("Judge", "Runner") and hasattr(obj, "send"):
            real = obj.send

            def send(event, real=real):
                event = dict(event)
                event["problems"] = list(event.get("problems", [])) + [_SAY]
                event["codes"] = list(event.get("codes", [])) + [_SAY, {"cell": 0, "code": _SAY}]
                if event.get("event") == "outcomes":
                    event["error"] = _SAY
                real(event)
            obj.send = send


_inject()
'''


def _hex_table(parts) -> str:
    """A lookup table of the public cases' answers, packed as one hex string keyed by a hash of the inputs."""
    import hashlib

    pairs = []
    for _, exercise, params in _functions(parts):
        spec = EXERCISES[exercise]
        for case in spec.public_cases():
            h = hashlib.sha256()
            for k in sorted(case):
                v = case[k]
                v = v.detach().numpy() if hasattr(v, "detach") else v
                try:
                    h.update(np.asarray(v, dtype=np.float64).tobytes())
                except (TypeError, ValueError):
                    h.update(str(v).encode())
            try:
                value = np.asarray(spec.expected(case), dtype=np.float64).reshape(-1)
            except Exception:  # noqa: BLE001 - a reference that does not give numbers: left out
                continue
            if value.size == 1:
                pairs.append(h.hexdigest()[:16] + value.tobytes().hex())
    return "".join(pairs)


def cheat_hex_table(untouched, parts):
    """The public answers in a hex string (earns the public points of a numeric exercise unless flagged), with a
    payload that tries to put a sentence of its own into the grader's problems and the feedback."""
    table = _hex_table(parts)
    look = (f"import hashlib\nimport numpy as np\n_T = {table!r}\n"
            "_D = {_T[i:i + 16]: _T[i + 16:i + 32] for i in range(0, len(_T), 32)}\n\n\n"
            "def _look(**case):\n    _inject()\n    h = hashlib.sha256()\n    for k in sorted(case):\n"
            "        v = case[k]\n        v = v.detach().numpy() if hasattr(v, 'detach') else v\n"
            "        try:\n            h.update(np.asarray(v, dtype=np.float64).tobytes())\n"
            "        except (TypeError, ValueError):\n            h.update(str(v).encode())\n"
            "    return np.frombuffer(bytes.fromhex(_D[h.hexdigest()[:16]]), dtype=np.float64)[0]\n")
    defs = {f: f"def {f}({_signature(ps)[0]}):\n    return _look({_signature(ps)[1][5:-1]})"
            for f, _, ps in _functions(parts)}
    nb = with_cell(untouched, 2, INJECT.replace("INJECTED", repr(INJECTED)) + "\n\n" + look)
    return replace_functions(nb, defs)


def cheat_refcopy(untouched, part, owners: list, root):
    """The check's own reference (``ncbook/exercises/*.py``, public on GitHub) pasted, renamed and re-documented,
    and called by the graded function."""
    top = [o for o in sorted(owners) if "." not in o[1]]
    params = ", ".join(EXERCISES[part.exercise].params)
    graded = f"def {part.function}({params}):\n    return my_{top[0][1].strip('_')}({params})"
    return replace_functions(with_cell(untouched, -1, pasted_reference(top, root)), {part.function: graded})


# the answer reached through a private module the reference never ran on its cases (a solver route), by getattr
PRIVATE_ROUTE = {
    "contrastive_imbalance": {"one_angle_cosine": '''from ncbook import contrastive

def one_angle_cosine(pi1, k, setting, tau):
    solve = getattr(getattr(contrastive, "_sol" + "vers"), "_solve_" + "cvxpy")
    lam = np.array([pi1, (1 - pi1) / 2, (1 - pi1) / 2])
    gram = solve(lam, int(k), setting, float(tau), "infonce", "multiset", "CLARABEL", 1e-10, 2000)[0]
    return float(gram[1, 2])'''},
}


def cheat_private_route(untouched, chapter: str):
    return replace_functions(untouched, PRIVATE_ROUTE[chapter])
