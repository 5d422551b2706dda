"""Every number the README states is the code's, or quoted with its source and date.

The run-time table of the profiles section is checked in ``tests/test_gpu_smoke.py``
(``test_readme_states_the_plan``); here: the usage example (run, its comments checked), the gpu
subset and the pack, the assumed device speeds and the date of the quick measurement, the full
profile's schedule, the grading limits, the notebook-test time limit, the run window of
``tools/run_full_gpu.sh`` and the Python versions. The measurements the README quotes
(the bf16 benchmark, the torchrun differences) carry their command and date: checked as such.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import torch

from ncbook import data, profiles

ROOT = Path(__file__).resolve().parents[1]
README = " ".join((ROOT / "README.md").read_text().split())  # whitespace normalised: phrases may wrap


def assert_readme_says(phrase: str) -> None:
    assert " ".join(phrase.split()) in README, f"README does not say {phrase!r}"


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_usage_example_runs_and_its_comments_hold():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Using the package\s+```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    torch.manual_seed(0)
    assert "epochs=20" in block
    code = block.replace("print(", "_printed = (").replace("epochs=20", "epochs=1")  # the comments hold at any length
    exec(compile(code, "README:usage", "exec"), ns)  # noqa: S102 - our README
    n = int(ns["counts"].sum())
    assert re.search(rf"IF 100: {n} samples", block), n
    cos = ns["etf"] @ ns["etf"].T
    assert ns["etf"].shape == (10, 9) and np.allclose(np.diag(cos), 1) and np.allclose(cos[0, 1], -1 / 9)
    assert "(C, C-1) rows with cosine -1/9" in block
    ev = ns["ev"]
    assert ev["features"].shape[1] == 32 and tuple(ns["model"].classifier.weight.shape) == (10, 32)
    assert "features (n, 32), classifier (10, 32)" in block
    assert set(ns["_printed"]) >= {"nc1", "nc4"}


def test_the_gpu_subset_and_the_pack():
    spec = data.GPU_SUBSETS["cifar10"]
    pool = int(data.gpu_subset_indices(torch.arange(10).repeat_interleave(5000)).numel())
    test = int(data.gpu_subset_indices(torch.arange(10).repeat_interleave(1000), train=False).numel())
    assert_readme_says(f"{pool} training images holding CIFAR-10-LT IF {spec['imbalance_ratio']:g} and {spec['per_class']} a class, "
          f"and {spec['test_per_class']} test images a class")
    raw = (pool + test) * 3072
    ratio = 170_498_071 / (6 * 31_035_704)  # the CIFAR-10 python archive over its pickles (as in test_gpu_smoke)
    assert_readme_says(f"({pool + test} images, {raw / 1e6:.1f} MB of pixels; about {raw * ratio / 2**20:.0f} MiB packed")
    pack = _module(ROOT / "tools" / "pack_data.py", "pack_data_readme")
    max_mib = pack.pack.__kwdefaults__["max_mib"]
    assert_readme_says(f"refuses a pack above `--max-mib`, {max_mib:g} by default")
    assert_readme_says(f"packs/ncbook-cifar10.tar.xz (refused above {max_mib:g} MiB)")


def test_the_plan_assumptions_and_the_quick_measurement():
    speeds = {d.device: d.train_images_per_s for d in profiles.DEVICE_SPEEDS}
    assert_readme_says(f"ResNet-32 training speed of {speeds['T4']:,.0f} images/s on a T4 (float32: a T4 has no native bf16) and "
          f"{speeds['A100']:,.0f} on an A100")
    sources = {p.quick_source for p in profiles.PLANS.values()}
    assert len(sources) == 1
    date = re.search(r"\d{4}-\d{2}-\d{2}", sources.pop()).group(0)
    assert_readme_says(f"on the 2 cores of an x86_64 machine of the kind CI runs on, on {date}, two chapters side by side")
    full = profiles.PLANS["inverse_reweighting"].params["full"]
    assert full["DATASETS"] == ["cifar10", "cifar100"]
    words = {1: "one", 2: "two", 3: "three"}
    assert_readme_says(f"CIFAR-10-LT and CIFAR-100-LT with a ResNet-32 for {full['EPOCHS']} epochs, {words[len(full['SEEDS'])]} seeds")
    window = re.search(r'WINDOW_S="\$\{WINDOW_S:-(\d+)\}"', (ROOT / "tools" / "run_full_gpu.sh").read_text()).group(1)
    assert_readme_says(f"a 10-minute window (`WINDOW_S`, {window} s by default)")


def test_the_grading_limits_are_the_graders_defaults():
    tool = _module(ROOT / "tools" / "assignments.py", "assignments_readme")
    limits = tool.Limits()
    assert_readme_says(f"(`--memory`, {limits.memory >> 20} MiB for all its processes together")
    assert_readme_says(f"(`--processes`, {limits.processes} processes and threads)")
    assert_readme_says(f"in-memory folders of {limits.folder >> 20} MiB each")
    assert_readme_says(f"The executed notebook kept is at most {limits.notebook_bytes >> 20} MiB")
    calibrated = tool.limits_from(tool.Calibration(seconds=15.0, run=10.0, judge=5.0), limits)
    assert (calibrated.notebook_timeout, calibrated.harvest_timeout) == (4 * 10 + 30, 2 * 5 + 10)
    assert tool.limits_from(tool.Calibration(1.0, 1.0, 0.0), limits).notebook_timeout == 60
    assert tool.limits_from(tool.Calibration(1.0, 1.0, 0.0), limits).harvest_timeout == 20
    assert_readme_says("a notebook's cells: four times the solutions' run plus 30 s, at least 60 s; a question's "
                       "cases: twice their judge time plus 10 s, at least 20 s")


def test_the_notebook_test_limit_and_the_python_versions():
    notebooks = (ROOT / "tests" / "test_notebooks.py").read_text()
    quick = re.search(r'CELL_TIMEOUT = \{"quick": (\d+)', notebooks).group(1)
    assert_readme_says(f"a cell stuck for {quick} s fails naming it")
    requires = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert_readme_says(f"Python {requires} or newer")
    pinned = re.search(r"install together on Python (\d+\.\d+)", (ROOT / "requirements.txt").read_text()).group(1)
    assert_readme_says(f"install together on Python {pinned}, the version CI uses")


def test_quoted_measurements_say_how_and_when():
    """Numbers no test can recompute here (timings, a 2-process run) are quoted with their command and date."""
    for sentence in (r"on \d{4}-\d{2}-\d{2}, on 2 cores with AVX512-BF16 shared with other jobs, "
                     r"`python benchmarks/bench_parallel_runs.py --seeds 1 --steps 300`",
                     r"at most [\d.]+e-\d+ in the run of \d{4}-\d{2}-\d{2}"):
        assert re.search(sentence, README), sentence
    assert not re.search(r"\b1\.8-2\.6 times faster", README)  # the unsourced figure it replaced


def test_the_book_builds_time_limits_install_route_and_failures():
    """The cell time limit (factor, floor, variables), the CPU-only install of the pinned torch and the
    failure mechanism are stated as the code has them."""
    import yaml

    failures = _module(ROOT / "book" / "_ext" / "ncbook_failures.py", "ncbook_failures_readme")
    floor = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]
    assert_readme_says(f"Each cell of a chapter may run {failures.DEFAULT_FACTOR:g} times the chapter's run time on an "
                       "idle machine")
    assert_readme_says(f"at least {floor} s (`execute: timeout` in `_config.yml`)")
    assert_readme_says(f"`{failures.FACTOR_ENV}=10` (10 times the estimate) or `{failures.TIMEOUT_ENV}=1800` (seconds, "
                       "one limit for every cell)")
    cache = (ROOT / "book" / "_ext" / "ncbook_cache.py").read_text()
    strict = re.search(r'STRICT_ENV = "(\w+)"', cache).group(1)
    from ncbook.exercises import _core

    assert strict == _core.STRICT_ENV
    assert_readme_says(f"the build's kernels run with `{strict}=1`, where a failed check raises")
    pins = dict(re.findall(r"^(torch|torchvision)==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M))
    assert_readme_says(f"pip install torch=={pins['torch']} torchvision=={pins['torchvision']} "
                       "--index-url https://download.pytorch.org/whl/cpu")
    assert_readme_says(f"(`{pins['torch']}+cpu` satisfies `torch=={pins['torch']}`)")
    assert re.search(r"took 6\.2 GB, 4\.1 GB of it CUDA libraries and triton \(measured on \d{4}-\d{2}-\d{2}\)", README)
