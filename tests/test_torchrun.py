"""``fit`` under ``torchrun`` (DistributedDataParallel, gloo on CPU) against one process with the same global batch.

Every training loss of :mod:`ncbook.losses` (the table in ``tests/loss_zoo.py``) is run in one launch
of 1 process and one of 2 processes; a checkpoint of 2 processes resumes in 1. The model is an MLP
without BatchNorm: per-rank batch statistics would differ from the global batch's (on GPUs
``fit(sync_batchnorm=True)`` converts BatchNorm to SyncBatchNorm, which needs CUDA).
Run alone with ``python -m pytest -k torchrun``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import loss_zoo

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


ZOO_WORKER = '''
import sys, time, torch, torch.nn.functional as F
sys.path.insert(0, sys.argv[2])
import loss_zoo
from ncbook import models, train
out = sys.argv[1]
device = train.init_distributed()
torch.set_num_threads(1)
world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
g = torch.Generator().manual_seed(0)
y = torch.cat([torch.full((n,), c) for c, n in enumerate(loss_zoo.COUNTS)])
x = torch.randn(len(y), 12, generator=g)
x[:, :loss_zoo.C] += 1.5 * F.one_hot(y, loss_zoo.C).float()
augment = lambda xb, gen: xb + 0.1 * torch.randn(xb.shape, generator=gen)
results, t0 = {}, time.perf_counter()
for name in list(loss_zoo.TRAINING_LOSSES) + ["plain function"]:
    torch.manual_seed(0)
    model = models.MLP(12, (32,), 8, loss_zoo.C, batchnorm=False)
    loss = F.cross_entropy if name == "plain function" else loss_zoo.make(name)
    hist = train.fit(model, loss, (x, y), epochs=3, batch_size=16, lr=0.05, momentum=0.9, weight_decay=5e-4, seed=3,
                     nc_every=0, eval_every=0, progress=False, device=device, augment=augment)
    results[name] = {"model": model.state_dict(), "losses": hist["train_loss"],
                     "loss_state": loss.state_dict() if isinstance(loss, torch.nn.Module) else {}}
refused = None
if world > 1:  # a loss that is not a function of the batch (here: of the rank) is refused
    rank_loss = lambda z, t: F.cross_entropy(z, t) * (1 + 0.01 * torch.distributed.get_rank())
    try:
        train.fit(models.MLP(12, (32,), 8, loss_zoo.C, batchnorm=False), rank_loss, (x, y), epochs=1, batch_size=16,
                  nc_every=0, progress=False, device=device)
    except ValueError as err:
        refused = str(err)
if train.is_main_process():
    torch.save({"results": results, "world": world, "refused": refused, "seconds": time.perf_counter() - t0}, out)
'''


def _run_zoo(tmp_path, nproc, out):
    script = tmp_path / "zoo_worker.py"
    script.write_text(ZOO_WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(script), str(out), str(ROOT / "tests")]
    if nproc > 1:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"] + cmd[1:]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return torch.load(out)


def test_every_loss_is_in_the_zoo():
    """Every public name of ncbook.losses is trained under torchrun below, or said not to be a training loss."""
    from ncbook import losses

    trained = {loss_zoo.base_name(n) for n in loss_zoo.TRAINING_LOSSES}
    assert not trained & set(loss_zoo.NOT_TRAINING_LOSSES)
    missing = set(losses.__all__) - trained - set(loss_zoo.NOT_TRAINING_LOSSES)
    assert not missing, f"add these to tests/loss_zoo.py (a fit loss, or why not one): {sorted(missing)}"
    assert not (trained | set(loss_zoo.NOT_TRAINING_LOSSES)) - set(losses.__all__)


@pytest.mark.torchrun
def test_every_loss_under_two_processes_equals_one(tmp_path):
    """One launch of each: every training loss of ncbook.losses with 1 process and with 2 gloo processes.

    The reported fault: LDAM-DRW's classifier ended 0.108 away from one process (each rank normalised
    by its own half-batch's weights); stateful losses (MR2's EMAs, IB's switch, the inverse weights'
    batch counts) saw half batches. Now every rank computes the loss of the gathered global batch.
    """
    one, two = _run_zoo(tmp_path, 1, tmp_path / "one.pt"), _run_zoo(tmp_path, 2, tmp_path / "two.pt")
    assert (one["world"], two["world"]) == (1, 2)
    worst = {}
    for name, a in one["results"].items():
        b = two["results"][name]
        diff = max(float((b["model"][k] - v).abs().max()) for k, v in a["model"].items())
        diff = max(diff, max(abs(p - q) for p, q in zip(a["losses"], b["losses"])))
        for k, v in a["loss_state"].items():
            assert torch.equal(v, b["loss_state"][k]) if not v.is_floating_point() else \
                float((v - b["loss_state"][k]).abs().max()) < 1e-5, f"{name}: loss buffer {k}"
        worst[name] = diff
    print("max |2 processes - 1 process| (parameters, losses):",
          ", ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items(), key=lambda kv: -kv[1])))
    print(f"seconds: 1 process {one['seconds']:.1f}, 2 processes {two['seconds']:.1f}")
    untrained = [k for k, r in one["results"].items() if not r["losses"][-1] < r["losses"][0]]
    assert not untrained, f"these runs did not train, so the comparison proves little: {untrained}"
    bad = {k: v for k, v in worst.items() if not v < 2e-5}
    assert not bad, f"differ from one process beyond float32 round-off: {bad}"
    assert two["refused"] is not None and "gave different values on the 2 ranks for the same global batch" in two["refused"]


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
