"""One way to launch a worker script under ``torchrun`` (or as one process) in the tests.

Shared by the experiment tests that compare a run of 2 gloo processes with a run of one. A launch that passes
its time limit is ended with every process it started (``torch.distributed.run`` and its workers: the whole
process group), so no orphaned worker keeps a core busy after a failed test.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_worker(tmp_path: Path, worker: str, args: list, *, nproc: int, profile: str, data_dir: Path,
               checkpoints: Path, workers: str = "1", timeout: int = 900) -> subprocess.CompletedProcess:
    """Write ``worker`` to ``tmp_path/worker.py`` and run it with ``args`` in ``nproc`` processes (``torchrun
    --standalone`` when ``nproc > 1``) at ``profile``'s smoke scale on the stand-in data in ``data_dir``; fail the
    test with the end of stderr unless it exits 0."""
    script = tmp_path / "worker.py"
    script.write_text(worker)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", NCBOOK_PROFILE=profile, NCBOOK_SCALE="smoke", NCBOOK_DATA=str(data_dir),
               NCBOOK_WORKERS=workers, NCBOOK_PROGRESS="0", NCBOOK_CHECKPOINTS=str(checkpoints))
    cmd = [sys.executable, str(script), *map(str, args)]
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"] + cmd[1:]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the launcher and every worker it started
        out, err = proc.communicate()
        pytest.fail(f"the launch of {nproc} process(es) passed {timeout} s: {err[-2000:]}")
    assert proc.returncode == 0, err[-3000:]
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def load(path: Path):
    """What a worker wrote with ``pickle.dump`` (tables, numbers: our own test's output)."""
    with open(path, "rb") as f:
        return pickle.load(f)
