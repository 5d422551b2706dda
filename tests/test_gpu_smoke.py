"""The gpu profile: chosen by default on a CUDA device, planned, packed, costed before each long cell.

``python -m pytest -m gpu_smoke tests/test_gpu_smoke.py`` executes every chapter with
``NCBOOK_PROFILE=gpu NCBOOK_SCALE=smoke`` on the CIFAR stand-in (every code path of the gpu profile,
claims recorded under ``claims/gpu/``) and checks that each cost cell's estimate is within a factor of
two of the time the cell it announces then took. With a CUDA device, ``-m gpu`` runs each chapter's gpu
profile on the real CIFAR files (``tools/run_full_gpu.sh`` does this), recording claims and cell seconds
under ``results/``. The other tests here are fast and run with the unit tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import jupytext
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ncbook
from notebook_run import execute

from ncbook import data, models, profiles, train

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting", "mr2_margins"]


# chapters whose sizes live in their experiment call, which reads them from the plan: the function giving the sizes
# that call runs at (under the same environment as the chapter's kernel)
EXPERIMENT_SIZES = {"weighted_contrastive": "weighted_network_setting"}


def _sizes(stem: str, ns: dict) -> dict:
    """The sizes a chapter runs at: its parameters cell's values, or those of its experiment call."""
    if stem in EXPERIMENT_SIZES:
        from ncbook import experiments

        return getattr(experiments, EXPERIMENT_SIZES[stem])().sizes
    return {**ns, **ns["SETTING"].sizes} if "SETTING" in ns else ns   # SETTING = experiments.<chapter>_setting()


def _parameters(stem: str) -> dict:
    """The values the chapter's parameters cell sets; for a chapter whose experiments size themselves
    (``SETTING = experiments.<chapter>_setting()``), the profile and the sizes that setting holds."""
    cells = [c for c in jupytext.read(ROOT / "book" / f"{stem}.md").cells if "parameters" in c.metadata.get("tags", [])]
    ns: dict = {}
    exec(compile(cells[0].source, f"{stem}.md:parameters", "exec"), ns)  # noqa: S102 - our own chapter
    setting = ns.get("SETTING")   # a chapter whose experiment reads its sizes from the plan (an experiments.Setting)
    return {**ns, "PROFILE": setting.profile, **setting.sizes} if setting is not None else ns


# --------------------------------------------------------------------------- which profile
def test_cuda_without_a_choice_is_the_gpu_profile(monkeypatch):
    monkeypatch.delenv("NCBOOK_PROFILE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ncbook.profile() == "gpu"
    monkeypatch.setenv("NCBOOK_PROFILE", "full")  # the papers' schedules only when asked for
    assert ncbook.profile() == "full"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("NCBOOK_PROFILE")
    assert ncbook.profile() == "quick"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_chapters_pick_the_gpu_profile_on_a_mocked_cuda_device(stem, monkeypatch, capsys):
    """The parameters cell, run as a reader's kernel runs it on a CUDA device with no NCBOOK_PROFILE, takes the gpu
    branch (CIFAR-10, the gpu subset), and its values are the plan's (so the run times stated are this chapter's)."""
    monkeypatch.delenv("NCBOOK_PROFILE", raising=False)
    monkeypatch.delenv("NCBOOK_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    ns = _parameters(stem)
    assert ns["PROFILE"] == "gpu"
    sizes = _sizes(stem, ns)
    assert sizes["SUBSET"] in data.SUBSETS
    for key, value in profiles.PLANS[stem].params["gpu"].items():
        assert sizes[key] == value, (stem, key, sizes[key], value)
    # the first cells state the per-profile run times (the parameters cell or the cell right after it)
    code = [c.source for c in jupytext.read(ROOT / "book" / f"{stem}.md").cells if c.cell_type == "code"]
    first = next(i for i, src in enumerate(code) if "parameters" in src or "SETTING" in src or "PROFILE" in src)
    assert any(f'run_times("{stem}")' in src for src in code[first:first + 2]), stem
    monkeypatch.setenv("NCBOOK_PROFILE", "full")
    sizes = _sizes(stem, _parameters(stem))
    for key, value in profiles.PLANS[stem].params["full"].items():
        assert sizes[key] == value, (stem, key, sizes[key], value)


def test_each_profile_keeps_its_own_checkpoints(monkeypatch, tmp_path):
    monkeypatch.setenv("NCBOOK_CHECKPOINTS", str(tmp_path))
    monkeypatch.setenv("NCBOOK_PROFILE", "gpu")
    gpu = ncbook.checkpoint_dir("seli")
    monkeypatch.setenv("NCBOOK_PROFILE", "full")
    assert gpu == str(tmp_path / "gpu" / "seli") and ncbook.checkpoint_dir("seli") == str(tmp_path / "full" / "seli")


# --------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("stem", CHAPTERS)
def test_the_gpu_plan_fits_about_ten_minutes_on_a_t4(stem):
    assert 60 < profiles.planned_seconds(stem, "gpu", "T4") <= 600
    assert profiles.planned_seconds(stem, "full", "T4") > 5 * profiles.planned_seconds(stem, "gpu", "T4")


def test_plan_sizes_are_those_the_gpu_subset_gives():
    y = torch.arange(10).repeat_interleave(5000)
    y_test = torch.arange(10).repeat_interleave(1000)
    assert data.gpu_subset_indices(y).numel() == profiles._GPU_POOL
    assert data.gpu_subset_indices(y, balanced=True).numel() == profiles._GPU_BALANCED
    assert data.gpu_subset_indices(y_test, train=False).numel() == profiles._GPU_TEST
    counts = data.long_tailed_counts(5000, 10, 100)
    pool = torch.bincount(y[data.gpu_subset_indices(y)])
    assert bool((pool >= torch.as_tensor(counts)).all()) and int(pool[0]) == 5000   # CIFAR-10-LT drawn from it


def test_readme_states_the_plan():
    """The README's table of run times is the plan's (regenerate it with the printed rows when the plan moves)."""
    readme = (ROOT / "README.md").read_text()
    for stem in CHAPTERS:
        row = "| " + " | ".join([stem] + [profiles._minutes(profiles.planned_seconds(stem, p, d))
                                          for p, d in (("gpu", "T4"), ("gpu", "A100"), ("full", "T4"), ("full", "A100"))]
                                 + [profiles._minutes(profiles.PLANS[stem].quick_seconds)]) + " |"
        assert row in readme, f"README lacks the plan's row {row}"


def test_unknown_plan_arguments_are_refused():
    with pytest.raises(ValueError, match="chapter must be one of"):
        profiles.planned_seconds("intro", "gpu")
    with pytest.raises(ValueError, match="device must be one of"):
        profiles.planned_seconds("seli", "gpu", "K80")
    with pytest.raises(ValueError, match="profile_name must be 'gpu' or 'full'"):
        profiles.planned_work("seli", "quick")


# --------------------------------------------------------------------------- data and the pack
def test_gpu_pack_arithmetic_fits_the_carry():
    """19015 images of 3072 bytes; at the compression ratio of the CIFAR-10 python archive (163 MiB for
    186 MB of pickles: 0.92; xz does at least as well on these bytes) the pack is under 60 MiB, while the
    whole test set beside CIFAR-10-LT would not be."""
    ratio = 170_498_071 / (6 * 31_035_704)
    raw = (profiles._GPU_POOL + profiles._GPU_TEST) * 3072
    assert raw == 58_414_080 and raw * ratio < 60 * 2**20
    assert (12406 + 10000) * 3072 * ratio > 60 * 2**20


@pytest.fixture
def small_gpu_subset(monkeypatch):
    monkeypatch.setitem(data.GPU_SUBSETS, "cifar10", {"imbalance_ratio": 4.0, "per_class": 5, "test_per_class": 3})


def _pack_tool():
    from tool_loader import load_tool

    return load_tool("tools/pack_data.py")


def test_gpu_pack_gives_the_same_images_as_the_full_files(tmp_path, small_gpu_subset):
    src = data.write_cifar_standin(tmp_path / "download", train_per_class=20, test_per_class=6)
    archive = _pack_tool().pack(str(src), "cifar10", "gpu", str(tmp_path / "gpu"))
    assert archive.name == "ncbook-cifar10.tar.xz"
    for train_split in (True, False):
        for subset in data.SUBSETS:
            full = data.cifar_tensors("cifar10", src, train=train_split, subset=subset)
            packed = data.cifar_tensors("cifar10", tmp_path / "gpu", train=train_split, subset=subset)  # unpacks
            assert all(torch.equal(a, b) for a, b in zip(full, packed)), (train_split, subset)
    y_pool = data.cifar_tensors("cifar10", src, subset="gpu")[1]
    expected = np.maximum(data.long_tailed_counts(20, 10, 4), 5).tolist()       # max(long tail of ratio 4, 5)
    assert torch.bincount(y_pool).tolist() == expected == [20, 17, 14, 12, 10, 9, 7, 6, 5, 5]
    assert torch.bincount(data.cifar_tensors("cifar10", src, subset="gpu-balanced")[1]).tolist() == [5] * 10
    assert torch.bincount(data.cifar_tensors("cifar10", src, train=False, subset="gpu")[1]).tolist() == [3] * 10
    with pytest.raises(ValueError, match="holds the gpu profile's subset"):   # a full-profile run on a gpu pack
        data.cifar_tensors("cifar10", tmp_path / "gpu")
    with pytest.raises(ValueError, match="subset must be one of"):
        data.cifar_tensors("cifar10", src, subset="tiny")


def test_a_custom_pack_is_not_taken_for_the_gpu_subset(tmp_path):
    src = data.write_cifar_standin(tmp_path / "download", train_per_class=20, test_per_class=4)
    _pack_tool().pack(str(src), "cifar10", "lt:5", str(tmp_path / "lt"), test_per_class=2)
    assert len(data.cifar_tensors("cifar10", tmp_path / "lt")[1]) == int(data.long_tailed_counts(20, 10, 5).sum())
    with pytest.raises(ValueError, match="not of the gpu subset"):
        data.cifar_tensors("cifar10", tmp_path / "lt", subset="gpu")


def test_gpu_subset_refuses_other_data_sets():
    with pytest.raises(ValueError, match="name must be one of"):
        data.gpu_subset_indices(torch.arange(100), "cifar100")


# --------------------------------------------------------------------------- the cost before the run
def _state():
    return torch.get_rng_state().clone(), np.random.get_state()[1].copy()


def test_measuring_changes_no_random_state_and_estimates_a_fit_within_a_factor_of_two():
    torch.set_num_threads(1)
    x, y = torch.randn(512, 3, 32, 32), torch.arange(512) % 10
    make = lambda: models.resnet32(10)  # noqa: E731
    tries = []
    for _ in range(3):   # a busy machine can change speed between probe and fit: a biased estimate fails all three
        before = _state()
        tp = train.measure_fit(make, F.cross_entropy, (x, y), batch_size=64, augment=data.cifar_augment)
        after = _state()
        assert torch.equal(before[0], after[0]) and np.array_equal(before[1], after[1])
        estimate = train.fit_seconds(tp, n=len(y), epochs=2, batch_size=64, n_eval=len(y))
        t0 = time.perf_counter()
        train.fit(make(), F.cross_entropy, (x, y), epochs=2, batch_size=64, augment=data.cifar_augment,
                  progress=False, nc_every=0)
        tries.append((time.perf_counter() - t0, estimate))
        if 0.5 < tries[-1][0] / estimate < 2:
            break
    assert any(0.5 < measured / estimate < 2 for measured, estimate in tries), tries


def _files(folder: Path) -> dict:
    return {str(f.relative_to(folder)): (f.read_bytes(), f.stat().st_mtime_ns) for f in sorted(folder.rglob("*"))
            if f.is_file()}


def test_the_probe_leaves_the_callers_checkpoints_and_loss_alone_and_tracks_a_checkpointed_fit(tmp_path):
    """measure_fit given the options a chapter gives fit (its checkpoint folder, resume='must', a callback, a test
    set, its epochs) neither resumes from that folder nor writes into it, calls no callback, and leaves a stateful
    loss (MR2's EMAs) as it was; its estimate is within a factor of two of the checkpointed fit the cell then runs."""
    torch.set_num_threads(1)
    x, y = torch.randn(512, 3, 32, 32), torch.arange(512) % 10
    make = lambda: models.resnet32(10)  # noqa: E731
    folder = tmp_path / "caller"
    torch.manual_seed(1)
    train.fit(make(), F.cross_entropy, (x[:128], y[:128]), epochs=1, batch_size=64, checkpoint_dir=folder,
              progress=False, nc_every=0)  # another run's checkpoint: resuming it with this loss would be refused
    before = _files(folder)
    loss = ncbook.losses.MR2Loss(num_classes=10)
    state = {k: v.clone() for k, v in loss.state_dict().items()}

    def callback(*args):
        raise AssertionError("the probe called the cell's callback")

    options = dict(checkpoint_dir=folder, resume="must", callback=callback, test=(x[:64], y[:64]), epochs=2,
                   nc_every=1, eval_every=1, progress=True)
    tp = train.measure_fit(make, loss, (x, y), batch_size=64, augment=data.cifar_augment, **options)
    assert _files(folder) == before                                    # nothing read into the run, nothing written
    assert all(torch.equal(v, loss.state_dict()[k]) for k, v in state.items())
    estimate = train.fit_seconds(tp, n=len(y), epochs=2, batch_size=64, n_eval=len(y))
    t0 = time.perf_counter()
    train.fit(make(), loss, (x, y), epochs=2, batch_size=64, augment=data.cifar_augment, checkpoint_dir=tmp_path / "cell",
              progress=False, nc_every=0)
    measured = time.perf_counter() - t0
    assert (tmp_path / "cell" / "last.pt").exists()
    assert 0.5 < measured / estimate < 2, (measured, estimate, tp)


def test_bad_probe_lengths_are_refused():
    with pytest.raises(ValueError, match="steps must be two integers"):
        train.measure_fit(lambda: models.MLP(8, (8,), 4, 2), F.cross_entropy, (torch.randn(8, 8), torch.arange(8) % 2),
                          batch_size=4, steps=(3, 3))
    cost = train.ChapterCost("seli")
    with pytest.raises(ValueError, match="name must be a cell added with add"):
        cost.announce("network")


def test_an_unwritable_results_folder_warns_once_and_the_timer_disarms(tmp_path):
    """A read-only checkout (a grading sandbox) must not make every later cell raise."""
    blocked = tmp_path / "results"
    blocked.write_text("a file where the folder should be")
    cost = train.ChapterCost("seli", results=blocked)
    cost.add("network", 1.0, train.Throughput(0.05, 0.5, 1e-4, 128, "cpu (1 thread)", "float32", 4))
    cost._armed = "network"
    timer = train._cost._CellTimer()
    train._cost._CellTimer.active, timer.t0 = cost, time.perf_counter()
    with pytest.warns(RuntimeWarning, match="was not recorded in"):
        timer.post()
    assert cost._armed is None and cost.cells["network"]["measured_s"] is not None
    timer.pre()
    timer.post()                      # the next cell: nothing armed, nothing written, no warning
    train._cost._CellTimer.active = None


def test_run_full_gpu_dry_run_prints_every_chapters_model_and_the_plan():
    """tools/run_full_gpu.sh without a GPU (--dry-run): the benchmark runs on the CPU with tiny batches."""
    out = subprocess.run(["bash", str(ROOT / "tools" / "run_full_gpu.sh"), "--dry-run"], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout + out.stderr
    for stem in CHAPTERS:
        assert re.search(rf"{stem}\s+batch\s+\d+\s+float32\s+[\d,]+ images/s", text), stem
        assert re.search(rf"{stem}\s+gpu profile ~\s*[\d.]+ min .*plan on a T4: [\d.]+ min", text), stem
    assert "dry run: benchmark and plan printed" in text


# --------------------------------------------------------------------------- every chapter at the stand-in scale


def _check_costs(stem: str, results: Path) -> list[str]:
    record = json.loads((results / "costs" / "gpu" / f"{stem}.json").read_text())
    lines = []
    for name, cell in record["cells"].items():
        assert cell["measured_s"] is not None, f"{stem}: the cell after the announcement of {name!r} was not timed"
        ratio = cell["measured_s"] / cell["estimate_s"]
        lines.append(f"{name}: estimated {cell['estimate_s']:.1f} s, took {cell['measured_s']:.1f} s (x{ratio:.2f})")
        assert 0.5 <= ratio <= 2.0, f"{stem}, {name}: estimate {cell['estimate_s']:.2f} s, measured {cell['measured_s']:.2f} s"
    return lines


@pytest.mark.gpu_smoke
@pytest.mark.parametrize("stem", CHAPTERS)
def test_gpu_profile_smoke(stem, tmp_path, capsys, request):
    if "gpu_smoke" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a minute per chapter: run with -m gpu_smoke")
    data_dir, results = tmp_path / "data", tmp_path / "results"
    data.write_cifar_standin(data_dir)
    env = {"NCBOOK_PROFILE": "gpu", "NCBOOK_SCALE": "smoke", "NCBOOK_DATA": str(data_dir),
           "NCBOOK_RESULTS": str(results), "NCBOOK_CHECKPOINTS": str(tmp_path / "checkpoints"), "PYTHONPATH": os.pathsep.join(
               [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    t0 = time.perf_counter()
    nb = execute(ROOT / "book" / f"{stem}.md", env, timeout=1200)  # a failing cell raises CellExecutionError
    seconds = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    written = sorted(str(p.relative_to(results)) for p in results.rglob("*.json"))
    lines = _check_costs(stem, results)
    with capsys.disabled():
        print(f"\n[gpu_smoke] {stem}: {seconds:.0f} s; " + "; ".join(lines))
    assert f"claims/gpu/{stem}.json" in written, f"{stem} recorded no gpu-profile claims"
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")
    assert "of it from here on." in printed and "Run time" in printed


@pytest.mark.gpu
@pytest.mark.parametrize("stem", CHAPTERS)
def test_gpu_profile_on_real_data(stem, capsys):
    """On a CUDA device, with the real CIFAR-10 files (or the pack) under $NCBOOK_DATA: the chapter's gpu profile,
    its claims in results/claims/gpu/ and its cells' estimated and measured seconds in results/costs/gpu/."""
    results = ROOT / "results"
    env = {"NCBOOK_PROFILE": "gpu", "NCBOOK_SCALE": "paper", "NCBOOK_RESULTS": str(results),
           "PYTHONPATH": os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    t0 = time.perf_counter()
    nb = execute(ROOT / "book" / f"{stem}.md", env, timeout=1200)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    record = json.loads((results / "costs" / "gpu" / f"{stem}.json").read_text())
    with capsys.disabled():
        print(f"\n[gpu] {stem}: {time.perf_counter() - t0:.0f} s; " + "; ".join(
            f"{n}: estimated {c['estimate_s']:.0f} s, took {c['measured_s']:.0f} s, {c['train_images_per_s']:,.0f} images/s"
            for n, c in record["cells"].items()))


def test_chapter_cost_in_a_read_only_folder_warns_and_disarms(tmp_path):
    """A cost record that cannot be written (a grading sandbox) warns once; later cells are not timed or failed."""
    from ncbook.train._cost import Throughput, _CellTimer

    locked = tmp_path / "locked"
    locked.write_text("a file where the results folder should be")  # mkdir below it fails with an OSError
    cost = train.ChapterCost("seli", results=locked)
    tp = Throughput(0.05, 0.5, 1e-4, 128, "cpu (1 thread)", "float32", 4)
    cost.add("network", 1.0, tp)
    cost._armed, _CellTimer.active = "network", cost
    timer = _CellTimer()
    timer.pre()
    with pytest.warns(RuntimeWarning, match="was not recorded"):
        timer.post()
    assert cost._armed is None and cost.cells["network"]["measured_s"] is not None
    timer.pre()
    timer.post()  # nothing armed: nothing measured, nothing raised
    _CellTimer.active = None
