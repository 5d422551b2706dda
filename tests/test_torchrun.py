"""``fit`` under ``torchrun`` (DistributedDataParallel, gloo on CPU) against one process with the same global batch.

The model is an MLP without BatchNorm: per-rank batch statistics would differ from the global batch's
(on GPUs ``fit(sync_batchnorm=True)`` converts BatchNorm to SyncBatchNorm, which needs CUDA).
Run alone with ``python -m pytest -k torchrun``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]

WORKER = '''
import sys, torch, torch.nn.functional as F
from ncbook import models, train
out, ckpt, stop_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
device = train.init_distributed()
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x = torch.randn(192, 12, generator=g)
y = torch.arange(192) % 4
x[:, :4] += 1.5 * F.one_hot(y, 4).float()
torch.manual_seed(0)
model = models.MLP(12, (32,), 8, 4, batchnorm=False)

def stop(epoch, model, record):
    if epoch == stop_after:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        sys.exit(0)  # an interruption after the checkpoint of this epoch

hist = train.fit(model, F.cross_entropy, (x, y), epochs=4, batch_size=32, lr=0.1, momentum=0.9, weight_decay=5e-4,
                 seed=3, nc_every=0, progress=False, device=device, augment=lambda xb, gen: xb + 0.1 * torch.randn(
                     xb.shape, generator=gen), checkpoint_dir=None if ckpt == "-" else ckpt, callback=stop)
if train.is_main_process():
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    torch.save({"model": model.state_dict(), "losses": hist["train_loss"], "world": world}, out)
'''


def _run(tmp_path, nproc, out, ckpt="-", stop_after=-1):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(script), str(out), str(ckpt), str(stop_after)]
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"] + cmd[1:]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.torchrun
def test_torchrun_two_processes_match_one(tmp_path):
    _run(tmp_path, 1, tmp_path / "one.pt")
    _run(tmp_path, 2, tmp_path / "two.pt")
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert (one["world"], two["world"]) == (1, 2)
    for key, a in one["model"].items():
        torch.testing.assert_close(two["model"][key], a, atol=1e-5, rtol=0, msg=key)
    assert max(abs(p - q) for p, q in zip(one["losses"], two["losses"])) < 1e-5
    assert one["model"]["classifier.weight"].abs().sum() > 0 and one["losses"][-1] < one["losses"][0]  # it trained


@pytest.mark.torchrun
def test_torchrun_checkpoint_of_two_processes_resumes_in_one(tmp_path):
    _run(tmp_path, 1, tmp_path / "one.pt")
    _run(tmp_path, 2, tmp_path / "unused.pt", ckpt=tmp_path / "ckpt", stop_after=1)  # 2 of 4 epochs, then stop
    assert (tmp_path / "ckpt" / "last.pt").exists() and not (tmp_path / "unused.pt").exists()
    _run(tmp_path, 1, tmp_path / "resumed.pt", ckpt=tmp_path / "ckpt")
    one, resumed = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "resumed.pt")
    for key, a in one["model"].items():
        torch.testing.assert_close(resumed["model"][key], a, atol=1e-5, rtol=0, msg=key)
    assert len(resumed["losses"]) == 4


def test_fit_refuses_a_batch_that_does_not_split(monkeypatch):
    from ncbook.train import _loop

    monkeypatch.setattr(_loop, "world_size", lambda: 3)
    with pytest.raises(ValueError, match="the batch of 32 samples does not split over 3 processes"):
        _loop._data_parallel(torch.nn.Linear(2, 2), 32, torch.device("cpu"), False)
