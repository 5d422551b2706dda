"""One way to execute a chapter in the tests: its MyST source, in a kernel that inherits ``env``.

Shared by the notebook tests (``test_notebooks.py``) and the stand-in runs of the full and gpu profiles
(``test_full_smoke.py``, ``test_gpu_smoke.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import jupytext
import nbclient


def execute(path: Path, env: dict, *, timeout: int):
    """Execute the jupytext source ``path`` in its own folder with ``env`` set for the kernel, ``timeout``
    seconds a cell; return the executed notebook. A failing cell raises ``CellExecutionError`` with its
    traceback; the environment of the test process is restored afterwards. As in the book build, a failed
    self-check of the chapter's own solution raises (``NCBOOK_STRICT_CHECKS=1`` unless ``env`` says otherwise)."""
    env = {"NCBOOK_STRICT_CHECKS": "1", **env}
    nb = jupytext.read(path)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits the environment
    try:
        nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb
