"""The full profile at the smoke scale, against the CIFAR stand-in, one test per chapter.

``python -m pytest -m full_smoke`` executes every chapter with ``NCBOOK_PROFILE=full NCBOOK_SCALE=smoke``
(ResNet-32, on-device augmentation, checkpoints, ``save_result`` and claims, tiny epochs and sizes) on
stand-in CIFAR files in torchvision's own format written into a temporary folder. Each test prints its
seconds and the results files the chapter wrote. They run only when selected with ``-m full_smoke`` (a plain
``pytest -m "not notebook"`` skips them with that reason); the stand-in's own tests run with the unit tests.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest
import torch

from notebook_run import execute

from ncbook import data

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting", "mr2_margins"]


def test_standin_is_read_by_torchvision_and_carries_the_class(tmp_path):
    import torchvision

    root = data.write_cifar_standin(tmp_path, train_per_class=20, test_per_class=10)
    files = sorted(p.name for p in (tmp_path / "cifar-10-batches-py").iterdir())
    assert files == ["batches.meta", "data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                     "data_batch_5", "ncbook-standin.json", "test_batch"]
    assert sorted(p.name for p in (tmp_path / "cifar-100-python").iterdir()) == ["meta", "ncbook-standin.json",
                                                                                  "test", "train"]
    ds = data.load_cifar("cifar10", root, train=True)
    assert isinstance(ds, torchvision.datasets.CIFAR10) and ds.data.shape == (200, 32, 32, 3) and len(ds.classes) == 10
    ds100 = data.load_cifar("cifar100", root, train=False)
    assert ds100.data.shape == (200, 32, 32, 3) and len(ds100.classes) == 100
    # the class shows: nearest class mean (fitted on train) classifies the test split far above chance
    for name, chance in (("cifar10", 0.1), ("cifar100", 0.01)):
        x_tr, y_tr = data.cifar_tensors(name, root, train=True)
        x_te, y_te = data.cifar_tensors(name, root, train=False)
        c = int(y_tr.max()) + 1
        means = torch.stack([x_tr[y_tr == k].flatten(1).mean(0) for k in range(c)])
        acc = (torch.cdist(x_te.flatten(1), means).argmin(1) == y_te).double().mean().item()
        assert acc > max(0.5, 5 * chance), (name, acc)


def test_standin_integrity_is_still_checked(tmp_path):
    root = data.write_cifar_standin(tmp_path, train_per_class=2, test_per_class=1)
    import torchvision

    with pytest.raises(RuntimeError, match="not found or corrupted"):  # torchvision's own check, real checksums
        torchvision.datasets.CIFAR10(str(root), download=False)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_3"
    batch.write_bytes(batch.read_bytes()[:-1] + b"\x00")  # a corrupted stand-in file is refused too
    with pytest.raises(data.DatasetUnavailableError, match="cifar10 is not available"):
        data.load_cifar("cifar10", root)


def test_standin_bad_sizes(tmp_path):
    with pytest.raises(ValueError, match="train_per_class must be a positive integer; got 0"):
        data.write_cifar_standin(tmp_path, train_per_class=0)


def test_smoke_scale_writes_the_standin_on_demand(tmp_path, monkeypatch):
    monkeypatch.setenv("NCBOOK_SCALE", "smoke")
    x, y = data.cifar_tensors("cifar100", tmp_path / "fresh", train=False)
    assert x.shape[1:] == (3, 32, 32) and int(y.max()) == 99
    monkeypatch.setenv("NCBOOK_SCALE", "paper")
    with pytest.raises(data.DatasetUnavailableError):
        data.cifar_tensors("cifar10", tmp_path / "empty", train=False)




@pytest.mark.full_smoke
@pytest.mark.parametrize("stem", CHAPTERS)
def test_full_profile_smoke(stem, tmp_path, capsys, request):
    if "full_smoke" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("minutes per chapter: run with -m full_smoke")
    data_dir, results = tmp_path / "data", tmp_path / "results"
    data.write_cifar_standin(data_dir)
    env = {"NCBOOK_PROFILE": "full", "NCBOOK_SCALE": "smoke", "NCBOOK_DATA": str(data_dir),
           "NCBOOK_RESULTS": str(results), "NCBOOK_CHECKPOINTS": str(tmp_path / "checkpoints"), "PYTHONPATH": os.pathsep.join(
               [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    nb = execute(ROOT / "book" / f"{stem}.md", env, timeout=1200)  # a failing cell raises CellExecutionError
    seconds, cpu1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)  # the kernel's CPU time, once reaped
    written = sorted(str(p.relative_to(results)) for p in results.rglob("*.json"))
    with capsys.disabled():
        print(f"\n[full_smoke] {stem}: {seconds:.0f} s wall, {cpu:.0f} s CPU of the kernel; "
              f"results written under NCBOOK_RESULTS: {written}")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert f"claims/full/{stem}.json" in written, f"{stem} recorded no full-profile claims"
    assert any(not w.startswith("claims/") for w in written), f"{stem} saved no result with save_result"


def test_pack_data_round_trip(tmp_path):
    """tools/pack_data.py on a stand-in: the chapters' long-tailed subset comes back from the pack, same order."""
    from tool_loader import load_tool

    tool = load_tool("tools/pack_data.py")
    src = data.write_cifar_standin(tmp_path / "download", train_per_class=20, test_per_class=4)
    archive = tool.pack(str(src), "cifar10", "lt:5", str(tmp_path / "gpu"), test_per_class=2)
    assert archive.name == "ncbook-cifar10.tar.xz" and archive.stat().st_size < 60 * 2**20
    x_full, y_full = data.cifar_tensors("cifar10", src, train=True)
    counts = data.long_tailed_counts(20, 10, 5)
    keep = data.make_imbalanced(y_full, counts, seed=0)
    x_pack, y_pack = data.cifar_tensors("cifar10", tmp_path / "gpu", train=True)  # unpacks on first use
    assert torch.equal(torch.bincount(y_pack), torch.as_tensor(counts))
    assert int(torch.bincount(y_pack).max()) == 20  # the largest class is whole: n_max survives the packing
    again = data.make_imbalanced(y_pack, counts, seed=0)  # what a chapter does on the packed set: every row
    assert torch.equal(x_pack[again], x_full[keep]) and torch.equal(y_pack[again], y_full[keep])
    x_te, y_te = data.cifar_tensors("cifar10", tmp_path / "gpu", train=False)
    assert torch.bincount(y_te).tolist() == [2] * 10
    with pytest.raises(SystemExit, match="above 0.0001 MiB"):
        tool.pack(str(src), "cifar10", "all", str(tmp_path / "big"), max_mib=1e-4)
