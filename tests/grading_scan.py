#!/usr/bin/env python3
"""Looks for the answers inside a sandbox (run there as its runner by ``tests/test_grading_edition.py``).

Reads one JSON object from stdin: ``lines`` (distinctive source lines of the reference implementations and of
the checks) and ``digests`` (sha256 of their code objects without file, name and lines: ``grading.edition.code_digest``). The
patterns arrive through a pipe, never as a file, so the scan cannot find itself. It then reports, as one JSON
line on stdout:

* ``files``: ``[path, [lines it holds]]`` for every readable regular file under ``/`` (``/proc``, ``/sys``
  and ``/dev`` excepted; binary files and files of more than 64 MiB skipped: shared libraries hold no Python
  source, compiled code is what ``code`` checks) that holds one of the lines (``grep -FI``), and every zip
  archive (wheels, eggs) that holds an ``ncbook`` entry;
* ``code``: every module of ``sys.modules`` after importing every module of the ``ncbook`` it finds, whose
  functions (methods and nested code objects included) have one of the digests;
* ``checked``: how many files and code objects were looked at (a scan that saw nothing proves nothing).
"""

import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import zipfile


def canonical(value):
    """As ``grading.edition._canonical`` (kept in step with it): a code object without its file, name and lines."""
    if inspect.iscode(value):
        fields = (value.co_argcount, value.co_posonlyargcount, value.co_kwonlyargcount, value.co_flags,
                  value.co_code.hex(), value.co_names, value.co_varnames, value.co_freevars, value.co_cellvars)
        return repr(fields) + "[" + ",".join(canonical(c) for c in value.co_consts) + "]"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(canonical(v) for v in value)) + ")"
    if isinstance(value, tuple):
        return "(" + ",".join(canonical(v) for v in value) + ")"
    return repr(value)


def codes_of(value, seen):
    if id(value) in seen:
        return
    seen.add(id(value))
    target = value.fget if isinstance(value, property) else value
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    if inspect.iscode(code):
        stack = [code]
        while stack:
            c = stack.pop()
            yield c
            stack += [k for k in c.co_consts if inspect.iscode(k)]
    if inspect.isclass(value):
        for member in list(vars(value).values()):
            yield from codes_of(member, seen)


def main():
    job = json.loads(sys.stdin.read())
    patterns = "\n".join(job["lines"]) + "\n"
    files, zips, checked = [], [], 0
    listing = subprocess.run(["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path",
                              "/dev", ")", "-prune", "-o", "-type", "f", "-readable", "-size", "-64M", "-print0"],
                             capture_output=True).stdout
    paths = [p for p in listing.split(b"\0") if p]
    checked = len(paths)
    for i in range(0, len(paths), 2000):
        chunk = paths[i:i + 2000]
        found = subprocess.run(["grep", "-lFI", "--no-messages", "-f", "/dev/stdin", "--"] + [p.decode(
            "utf-8", "surrogateescape") for p in chunk], input=patterns.encode(), capture_output=True).stdout
        for hit in found.decode("utf-8", "surrogateescape").splitlines():
            try:
                with open(hit, "rb") as f:
                    text = f.read()
            except OSError:
                continue
            files.append((hit, sorted(line for line in job["lines"] if line.encode() in text)))
    for path in paths:
        if path.endswith((b".whl", b".zip", b".egg")):
            try:
                with zipfile.ZipFile(path.decode("utf-8", "surrogateescape")) as z:
                    if any("ncbook" in n for n in z.namelist()):
                        zips.append((path.decode("utf-8", "replace"), ["an ncbook entry"]))
            except (zipfile.BadZipFile, OSError, ValueError):
                pass
    import ncbook

    for module in pkgutil.walk_packages(ncbook.__path__, "ncbook."):
        try:
            importlib.import_module(module.name)
        except Exception:  # noqa: BLE001 - a module that does not import holds nothing importable
            pass
    digests, hits, seen, n_codes = set(job["digests"]), [], set(), 0
    for name, module in list(sys.modules.items()):
        if not (name == "ncbook" or name.startswith("ncbook.")):
            continue
        for value in list(vars(module).values()):
            for code in codes_of(value, seen):
                n_codes += 1
                if hashlib.sha256(canonical(code).encode()).hexdigest() in digests:
                    hits.append(f"{name}: {code.co_qualname}")
    print(json.dumps({"files": files + zips, "code": sorted(set(hits)), "checked": {"files": checked,
                                                                                   "code": n_codes},
                      "ncbook": os.path.dirname(ncbook.__file__)}))


if __name__ == "__main__":
    main()
