"""The primer's experiments (ncbook.experiments): the plan, the UFM fits, the network runs, their claims.

The network runs here are tiny (seconds); ``-m torchrun`` launches the smoke scale of the full profile under
``torchrun`` with 2 gloo processes and compares its tables with one process's.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import ncbook.data
from ncbook import experiments, profiles
from ncbook.experiments import _nc_primer as primer
from torchrun_launch import load, run_worker

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(epochs=4, width=16, nc_every=2, step_maj=40, step_min=8)
COLUMNS = ["run", "dataset", "n_train", "epochs", "steps", "train_acc", "test_acc", "nc1", "nc2_m", "nc2_w", "nc3",
           "nc4", "acc_majority", "acc_minority", "norm_ratio", "cos_majority", "cos_minority"]
UFM_COLUMNS = ["ridge", "seed", "lam", "nc1", "nc2_w", "nc2_m", "nc3", "norm_w", "objective", "grad_norm", "status"]


# --------------------------------------------------------------------------- the plan and the setting
def test_the_setting_is_the_plan():
    for profile in profiles.PROFILES:      # one test, not one per profile: a test id "gpu" would be skipped without CUDA
        setting = experiments.primer_setting(profile=profile, scale="paper")
        assert setting.sizes == profiles.PLANS["nc_primer"].params[profile]
        assert (setting.profile, setting.scale) == (profile, "paper")
        assert f"{setting.sizes['EPOCHS']} epochs" in setting.text


def test_smoke_shrinks_the_gpu_and_full_sizes_only():
    for profile in ("gpu", "full"):
        smoke = experiments.primer_setting(profile=profile, scale="smoke").sizes
        paper = experiments.primer_setting(profile=profile, scale="paper").sizes
        assert smoke["EPOCHS"] < paper["EPOCHS"] and smoke["STEP_MAJ"] < paper["STEP_MAJ"]
        assert smoke["DATASET"] == paper["DATASET"] == "cifar10" and smoke["AMP"] == paper["AMP"]
    assert experiments.primer_setting(profile="quick", scale="smoke").sizes == profiles.PLANS["nc_primer"].params["quick"]


def test_a_cuda_device_without_a_choice_runs_the_gpu_plan(monkeypatch):
    monkeypatch.delenv("NCBOOK_PROFILE", raising=False)
    monkeypatch.delenv("NCBOOK_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert experiments.primer_setting().sizes == profiles.PLANS["nc_primer"].params["gpu"]


def test_the_quick_plan_trains_in_float32_on_every_cpu():
    """bf16 autocast on CPUs that have it and float32 elsewhere would give two sets of quick-profile numbers."""
    assert profiles.PLANS["nc_primer"].params["quick"]["AMP"] is False


@pytest.mark.parametrize("changes, error, match", [
    (dict(steps=10), ValueError, r"'steps' is not a size of the primer's experiments; the sizes are \["),
    (dict(epochs=0), ValueError, "EPOCHS must be an integer >= 1; got 0"),
    (dict(epochs=2.5), TypeError, "EPOCHS must be an integer >= 1; got float 2.5"),
    (dict(step_min=120), ValueError, "STEP_MIN must be below STEP_MAJ"),
    (dict(dataset="mnist"), ValueError, r"DATASET must be one of \['digits', 'cifar10'\]; got 'mnist'"),
    (dict(lr=0.0), ValueError, "LR must be a positive finite number; got 0.0"),
    (dict(amp="yes"), TypeError, "AMP must be True or False; got str 'yes'"),
])
def test_bad_sizes_are_refused_with_their_name(changes, error, match):
    with pytest.raises(error, match=match):
        experiments.primer_setting(profile="quick", **changes)


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.primer_setting(profile="laptop")


def test_the_plan_counts_what_the_runs_evaluate():
    """The plan's evaluation work follows the runs: the balanced run every NC_EVERY epochs and at the last, the STEP
    run at the end, each with one more pass over its training set."""
    p = profiles.PLANS["nc_primer"].params["gpu"]
    [(_, bal_train, bal_eval), (_, step_train, step_eval)] = profiles.planned_work("nc_primer", "gpu")
    n, n_test = profiles._GPU_BALANCED, profiles._GPU_TEST
    evals = -(-p["EPOCHS"] // p["NC_EVERY"])
    assert bal_eval == evals * (n + n_test) + n and bal_train == p["EPOCHS"] * (n // p["BATCH"]) * p["BATCH"]
    n_step = 5 * p["STEP_MAJ"] + 5 * p["STEP_MIN"]
    assert step_eval == (n_step + n_test) + n_step
    assert step_train == (p["EPOCHS"] * n // n_step) * (n_step // p["BATCH"]) * p["BATCH"]


# --------------------------------------------------------------------------- the UFM fits
@pytest.fixture(scope="module")
def ufm():
    return experiments.primer_ufm(experiments.primer_setting(profile="quick", ufm_seeds=2))


def test_ufm_table_histories_and_claims(ufm):
    assert list(ufm.table.columns) == UFM_COLUMNS
    assert list(ufm.table.ridge) == ["small", "small", "large"] and list(ufm.table.seed) == [0, 1, 0]
    assert set(ufm.histories) == {0, 1} and ufm.first.W.shape == (4, 8)
    assert (ufm.table.status == "optimal").all()
    small = ufm.table[ufm.table.ridge == "small"]
    assert float(small[["nc1", "nc2_w", "nc2_m", "nc3"]].to_numpy().max()) < primer.UFM_SHAPE
    # every start reaches one value, that of the theorem's geometry at its optimal scale
    np.testing.assert_allclose(small.objective, small.objective.iloc[0], rtol=1e-9)
    assert ufm.table.norm_w.iloc[-1] < primer.UFM_ZERO and np.isnan(ufm.table.nc1.iloc[-1])
    assert [c.verdict for c in ufm.claims()] == ["reproduced", "passed", "passed"]
    assert {k: v.holds for k, v in ufm.verdicts().items()} == {"etf": True, "same_value": True, "zero": True}
    assert ufm.fit_options == {**primer.UFM_FIT, "steps": profiles.PLANS["nc_primer"].params["quick"]["UFM_STEPS"]}


def test_ufm_claims_flip_on_planted_numbers(ufm):
    t = ufm.table
    far = replace(ufm, table=t.assign(nc2_w=t.nc2_w.where(t.index != 1, 2e-3)))      # one start away from the ETF
    assert far.claims()[0].verdict == "not reproduced" and not far.verdicts()["etf"].holds
    stuck = replace(ufm, table=t.assign(grad_norm=t.grad_norm.where(t.index != 0, 1e-5)))   # not a critical point
    assert stuck.claims()[0].verdict == "not reproduced" and not stuck.verdicts()["etf"].holds
    apart = replace(ufm, table=t.assign(objective=t.objective.where(t.index != 1, t.objective * (1 + 1e-6))))
    assert apart.claims()[1].verdict == "failed" and not apart.verdicts()["same_value"].holds
    alive = replace(ufm, table=t.assign(norm_w=t.norm_w.where(t.ridge != "large", 1e-6)))
    assert alive.claims()[2].verdict == "failed" and not alive.verdicts()["zero"].holds


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(counts=[10, 10, 9]), ValueError, r"counts must be equal \(the theorem's balanced classes\); got \[10, 10, 9\]"),
    (dict(counts=[10, 0]), ValueError, "counts must be positive integers"),
    (dict(dim=2), ValueError, r"dim must be an integer >= 3 \(the feature dimension d >= C - 1\); got 2"),
    (dict(lam=0.0), ValueError, "lam must be a positive finite number; got 0.0"),
    (dict(large_lam=1e-3), ValueError, "large_lam must exceed lam; got large_lam 0.001 and lam 0.005"),
    (dict(seed=-1), ValueError, "seed must be an integer >= 0; got -1"),
    (dict(setting={"UFM_STEPS": 10}), TypeError, "setting must be"),
])
def test_ufm_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        experiments.primer_ufm(**kwargs)


# --------------------------------------------------------------------------- the network, tiny
@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nets")
    setting = experiments.primer_setting(profile="quick", **TINY)
    balanced = experiments.primer_network(setting, progress=False, results=folder)
    step = experiments.primer_network(setting, imbalance="step", reference=balanced, progress=False, results=folder)
    return balanced, step, folder


def test_network_tables_histories_and_cost_record(nets):
    balanced, step, folder = nets
    assert list(balanced.table.columns) == COLUMNS == list(step.table.columns)
    assert (balanced.run, step.run) == ("balanced", "STEP")
    assert balanced.final["n_train"] == 1297 and balanced.final["epochs"] == TINY["epochs"]
    assert step.final["n_train"] == 5 * 40 + 5 * 8 and step.extras["counts"] == [40] * 5 + [8] * 5
    n_bal, n_step = 1297, 240   # as many optimiser steps: epochs scaled by the sizes (batches of 128, last dropped)
    assert step.final["epochs"] == TINY["epochs"] * n_bal // n_step
    assert balanced.final["steps"] == TINY["epochs"] * (n_bal // 128)
    nc_epochs = [r["epoch"] for r in balanced.history.records if "nc1" in r]
    assert nc_epochs == [1, 3]                                    # every NC_EVERY epochs, the last included
    assert [r["epoch"] for r in step.history.records if "nc1" in r] == []   # measured at the end, from the features
    assert set(balanced.initial) == {"nc1", "nc2_m", "nc2_w", "nc3", "nc4", "acc"}
    assert balanced.extras["classifier"].shape == (10, 32) and balanced.extras["classifier"].dtype == torch.float64
    np.testing.assert_allclose(np.diag(balanced.cosines("means")), 1.0, rtol=1e-12)
    # the table's NC metrics are those of the final classifier and features
    assert balanced.final["nc2_w"] == pytest.approx(ncbook.metrics.nc2(balanced.extras["classifier"]), rel=1e-9)
    record = json.loads((folder / "costs" / "quick" / "nc_primer.json").read_text())
    for cell in ("balanced network", "STEP-imbalanced network"):
        assert record["cells"][cell]["estimate_s"] > 0 and record["cells"][cell]["measured_s"] > 0


def test_network_claims_read_the_verdicts_and_flip_on_planted_numbers(nets):
    balanced, step, _ = nets
    assert [c.kind for c in balanced.claims()] == ["paper"] * 4 and [c.kind for c in step.claims()] == ["check"]
    t = balanced.table
    collapsed = replace(balanced, table=t.assign(nc1=0.01, nc2_m=0.02, nc3=0.03, nc4=0.0))
    assert [c.verdict for c in collapsed.claims()] == ["reproduced"] * 4
    assert collapsed.verdict_text().startswith("all four pass")
    for key, bad in (("nc1", 0.2), ("nc2_m", 0.1), ("nc4", 0.01)):      # at the threshold is not below it
        planted = replace(collapsed, table=collapsed.table.assign(**{key: bad}))
        verdicts = {c.claim[:3]: c.verdict for c in planted.claims()}
        assert list(verdicts.values()).count("not reproduced") == 1
        assert not planted.verdicts()[key].holds
    two = replace(collapsed, table=collapsed.table.assign(nc1=0.5, nc3=0.5))
    assert two.missed == ["NC1", "NC3"] and "miss their thresholds" in two.verdict_text()
    ref = replace(balanced, table=t.assign(nc2_w=0.05))
    far = replace(step, table=step.table.assign(nc2_w=0.5), extras={**step.extras, "reference": ref})
    near = replace(step, table=step.table.assign(nc2_w=0.04), extras={**step.extras, "reference": ref})
    assert far.claims()[0].verdict == "passed" and near.claims()[0].verdict == "failed"
    assert far.verdicts()["away"].holds and not near.verdicts()["away"].holds
    assert far.moved()["the classifier's distance to the ETF"] == pytest.approx(10.0)


def test_a_step_run_without_reference_has_no_claims_and_says_why_it_cannot_compare(nets):
    _, step, _ = nets
    alone = replace(step, extras={**step.extras, "reference": None})
    assert alone.claims() == [] and alone.verdicts() == {}
    with pytest.raises(ValueError, match="moved\\(\\) compares a STEP run with its balanced reference"):
        alone.moved()


def test_runs_depend_on_their_seed_alone(nets, tmp_path):
    balanced, _, _ = nets
    again = experiments.primer_network(experiments.primer_setting(profile="quick", **TINY), progress=False,
                                       results=tmp_path)
    numeric = [c for c in COLUMNS if c not in ("run", "dataset")]
    np.testing.assert_allclose(again.table[numeric].to_numpy(float), balanced.table[numeric].to_numpy(float),
                               rtol=0, atol=1e-12)
    other = experiments.primer_network(experiments.primer_setting(profile="quick", **TINY), seed=1, progress=False,
                                       results=tmp_path)
    assert other.final["nc1"] != pytest.approx(balanced.final["nc1"], rel=1e-6)


def test_network_arguments_are_checked(nets):
    balanced, step, _ = nets
    setting = experiments.primer_setting(profile="quick", **TINY)
    with pytest.raises(TypeError, match="setting must be"):
        experiments.primer_network({"EPOCHS": 3})
    with pytest.raises(ValueError, match=r"imbalance must be one of \[None, 'step'\]; got 'lt'"):
        experiments.primer_network(setting, imbalance="lt")
    with pytest.raises(ValueError, match="reference must be the balanced run of the same setting"):
        experiments.primer_network(setting, reference=balanced)              # a reference for a balanced run
    with pytest.raises(ValueError, match="reference must be the balanced run of the same setting"):
        experiments.primer_network(setting, imbalance="step", reference=step)
    with pytest.raises(ValueError, match="reference must be the balanced run of the same setting"):
        experiments.primer_network(experiments.primer_setting(profile="quick", epochs=5), imbalance="step",
                                   reference=balanced)
    with pytest.raises(TypeError, match="reference must be"):
        experiments.primer_network(setting, imbalance="step", reference="balanced")
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got -1"):
        experiments.primer_network(setting, seed=-1)
    with pytest.raises(TypeError, match="model must be callable"):
        experiments.primer_network(setting, model="mlp")
    with pytest.raises(TypeError, match="results must be a path"):
        experiments.primer_network(setting, results=3)
    with pytest.raises(TypeError, match="progress must be True or False"):
        experiments.primer_network(setting, progress="no")


def test_the_model_is_the_profiles():
    quick = experiments.primer_model(experiments.primer_setting(profile="quick"))(10)
    assert type(quick).__name__ == "MLP" and quick.classifier.bias is None
    widths = [m.out_features for m in quick.modules() if isinstance(m, torch.nn.Linear)]
    assert widths == [256, 256, 32, 10]
    full = experiments.primer_model(experiments.primer_setting(profile="full", scale="paper"))(10)
    assert type(full).__name__ == "ResNetCIFAR"


# --------------------------------------------------------------------------- torchrun, smoke scale
WORKER = '''
import pickle, sys, torch
from torch import nn
from ncbook import experiments, models, train
train.init_distributed()
torch.set_num_threads(1)

def small(num_classes):   # no BatchNorm: per-rank batch statistics would differ from one process's
    body = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.ReLU(), nn.Linear(32, 16))
    return models.FeatureClassifier(body, 16, num_classes)

# float32 (bf16 autocast rounds a half batch's products differently from the whole batch's)
setting = experiments.primer_setting(profile="full", scale="smoke", amp=False)
balanced = experiments.primer_network(setting, model=small, progress=False, results=sys.argv[2])
step = experiments.primer_network(setting, imbalance="step", reference=balanced, model=small, progress=False,
                                  results=sys.argv[2])
if train.is_main_process():
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    with open(sys.argv[1], "wb") as f:
        pickle.dump({"balanced": balanced.table, "step": step.table, "world": world,
                     "claims": [c.verdict for c in balanced.claims() + step.claims()]}, f)
'''


def _launch(tmp_path, nproc: int, data_dir: Path):
    out, results = tmp_path / f"out-{nproc}.pkl", tmp_path / f"results-{nproc}"
    run_worker(tmp_path, WORKER, [out, results], nproc=nproc, profile="full", data_dir=data_dir,
               checkpoints=tmp_path / f"ckpt-{nproc}")
    return load(out), results


@pytest.mark.torchrun
def test_smoke_scale_under_torchrun_gives_the_tables_of_one_process(tmp_path):
    """The full profile's code path at the smoke scale (the CIFAR stand-in, checkpoints, saved runs): 2 gloo processes,
    then 1. Each global batch's gradient is summed in another order (two half-batches, then an all-reduce), so the
    parameters differ by float32 round-off, which NC1 amplifies through a pseudo-inverse: up to 7e-8 measured here.
    The metrics are of order 0.1 to 1 at this scale (a network trained for 8 steps), so 1e-6 is a tolerance on their
    scale (and far below the 1/n step of an accuracy)."""
    data_dir = tmp_path / "data"
    ncbook.data.write_cifar_standin(data_dir)
    two, results_two = _launch(tmp_path, 2, data_dir)
    one, _ = _launch(tmp_path, 1, data_dir)
    assert (one["world"], two["world"]) == (1, 2)
    numeric = [c for c in COLUMNS if c not in ("run", "dataset")]
    for run in ("balanced", "step"):
        np.testing.assert_allclose(two[run][numeric].to_numpy(float), one[run][numeric].to_numpy(float), rtol=0,
                                   atol=1e-6)
    assert two["claims"] == one["claims"]
    saved = sorted(p.name for p in (results_two / "nc_primer").glob("*.json"))
    assert len(saved) == 2                                   # the full profile saves each run, from rank 0 only
    costs = json.loads((results_two / "costs" / "full" / "nc_primer.json").read_text())
    assert all(cell["measured_s"] > 0 for cell in costs["cells"].values())
    assert len(list((tmp_path / "ckpt-2" / "full" / "nc_primer").glob("*/last.pt"))) == 2
