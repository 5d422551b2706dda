"""Import a script of the repository (``tools/*.py``, ``book/_ext/*.py``) as a module, once per test session.

The scripts are not a package; the tests load them by path. The module is registered in ``sys.modules`` under
its name before it runs (dataclasses look their module up there) and later calls return the same module.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_tool(relative: str, name: str | None = None) -> ModuleType:
    """The module of the script at ``ROOT / relative`` (e.g. ``"tools/assignments.py"``), imported once.

    ``name`` defaults to the file's stem; ``tools/assignments.py`` is registered as ``assignments_tool``.
    """
    path = ROOT / relative
    name = name or {"assignments": "assignments_tool"}.get(path.stem, path.stem)
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]
