"""The contrastive-imbalance chapter's experiments (ncbook.experiments): sizes, tables, claims, workers, resume.

The network runs here are tiny (seconds); ``-m torchrun`` launches the smoke scale of the full profile under
``torchrun`` with 2 gloo processes and compares its table with one process's.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import ncbook
import ncbook.data
import ncbook.plotting
from ncbook import experiments, profiles
from torchrun_launch import load, run_worker

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(N_MAJ=30, NET_STEPS=12, NET_BATCH=32, K_GAP=8, N_GAP=30)
COLUMNS = ["role", "setting", "k", "temperature", "n", "pi1", "net_a", "net_b", "opt_a", "opt_b", "init_b", "point",
           "predicted", "spread", "init_spread", "excess", "loss_sd", "seconds"]


# --------------------------------------------------------------------------- the plan and the setting
def test_the_setting_is_the_plan():
    for profile in profiles.PROFILES:      # one test, not one per profile: a test id "gpu" would be skipped without CUDA
        setting = experiments.contrastive_setting(profile, "paper")
        assert setting.sizes == profiles.PLANS["contrastive_imbalance"].params[profile]
        assert (setting.profile, setting.scale) == (profile, "paper")
        assert f"{setting.sizes['NET_STEPS']} SGD steps" in setting.text


def test_smoke_shrinks_the_gpu_and_full_sizes_only():
    for profile in ("gpu", "full"):
        smoke = experiments.contrastive_setting(profile, "smoke").sizes
        paper = experiments.contrastive_setting(profile, "paper").sizes
        assert smoke["NET_STEPS"] < paper["NET_STEPS"] and smoke["N_MAJ"] < paper["N_MAJ"]
        assert smoke["DATASET"] == paper["DATASET"] == "cifar10" and smoke["K_NET"] == paper["K_NET"]
    assert experiments.contrastive_setting("quick", "smoke").sizes == profiles.PLANS["contrastive_imbalance"].params["quick"]


def test_a_cuda_device_without_a_choice_runs_the_gpu_plan(monkeypatch):
    monkeypatch.delenv("NCBOOK_PROFILE", raising=False)
    monkeypatch.delenv("NCBOOK_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert experiments.contrastive_setting().sizes == profiles.PLANS["contrastive_imbalance"].params["gpu"]


def test_bad_sizes_are_refused_with_their_name():
    with pytest.raises(TypeError, match=r"overrides must be sizes of the plan .*got \['STEPS'\]"):
        experiments.contrastive_setting("quick", STEPS=10)
    with pytest.raises(ValueError, match=r"each entry of PI_NET must lie in \(1/3, 1\).*got 0.2"):
        experiments.contrastive_setting("quick", PI_NET=(0.2,))
    with pytest.raises(ValueError, match="NET_STEPS must be an integer >= 1; got 0"):
        experiments.contrastive_setting("quick", NET_STEPS=0)
    with pytest.raises(ValueError, match=r"DATASET must be one of \['digits', 'cifar10'\]; got 'mnist'"):
        experiments.contrastive_setting("quick", DATASET="mnist")
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.contrastive_setting("laptop")


# --------------------------------------------------------------------------- exact collapse points
@pytest.fixture(scope="module")
def points():
    return experiments.collapse_points(ks=(1, 2, 4, 6, 64), temperatures=(0.5, 1.0, 2.0), classes=(3, 5),
                                       temperature_ks=(1, 4))


def test_collapse_points_table_and_known_values(points):
    assert list(points.table.columns) == ["curve", "setting", "num_classes", "k", "temperature", "point"]
    # k = 1: 1 / (1 + 2 sigmoid(-2)) (UCL, derived in the chapter); the spec's values for SCL
    assert points.point(1) == pytest.approx(1 / (1 + 2 / (1 + math.exp(2))), rel=1e-12)
    assert points.point(1, "scl", 3) == pytest.approx(0.691540, abs=5e-7)
    assert points.point(1, "scl", 5) == pytest.approx(0.682607, abs=5e-7)
    assert points.point(math.inf) == pytest.approx(0.924020, abs=5e-7)
    k, p = points.curve("ucl")
    assert list(k) == [1, 2, 4, 6, 64] and np.all(np.diff(p) > 0)          # the UCL point grows with k
    tau, p = points.curve("ucl", by="temperature", k=1)
    assert list(tau) == [0.5, 1.0, 2.0] and np.all(np.diff(p) < 0)         # and falls with tau
    with pytest.raises(ValueError, match="no point at k = 3"):
        points.point(3)


def test_collapse_points_claims_and_planted_numbers(points):
    verdicts = {c.claim[:40]: c.verdict for c in points.claims()}
    assert set(verdicts.values()) == {"reproduced", "passed"}
    assert points.claim("exp above infonce k=1").verdict == "passed"     # sigmoid(2) passed from k = 6 on (tau = 1)
    planted = replace(points, table=points.table.assign(point=points.table.point.where(points.table.k != 4, 0.95)))
    assert planted.claim("ucl points below").verdict == "not reproduced"  # one point above 0.9292
    planted = replace(points, extras={**points.extras, "at_threshold": {"ucl": 0.99, "scl": 1.0}})
    assert planted.claim("ucl threshold collapses").verdict == "not reproduced"
    ex = points.extras["exp_vs_infonce"]
    planted = replace(points, extras={**points.extras, "exp_vs_infonce": {**ex, "k6": -ex["k6"]}})
    assert planted.claim("exp above infonce k=1").verdict == "failed"    # InfoNCE would not pass it at k = 6
    with pytest.raises(ValueError, match=r"key must be one of \["):
        points.claim("ucl sharp")


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(ks=()), ValueError, "ks must hold at least one integer >= 1; got an empty sequence"),
    (dict(ks="4"), TypeError, "ks must be a sequence of integers >= 1; got str '4'"),
    (dict(ks=(1, 0)), ValueError, "each entry of ks must be an integer >= 1; got 0"),
    (dict(classes=(2,)), ValueError, "each entry of classes must be an integer >= 3; got 2"),
    (dict(temperatures=(1.0, -1.0)), ValueError, "each entry of temperatures must be a positive finite number"),
])
def test_collapse_points_refuses_bad_grids(kwargs, error, match):
    with pytest.raises(error, match=match):
        experiments.collapse_points(**kwargs)


# --------------------------------------------------------------------------- batch-size negatives
@pytest.fixture(scope="module")
def batch():
    return experiments.batch_negatives(0.9, ks=(4, 64, 255), temperatures=(1.0, 2.0))


def test_batch_negatives_table_and_numbers(batch):
    assert list(batch.table.columns) == ["setting", "temperature", "k", "point", "collapses", "cos23"]
    assert len(batch.table) == 2 * 2 * 3
    assert bool(batch.row("ucl", 1.0, 4).collapses) and not bool(batch.row("ucl", 1.0, 255).collapses)
    assert batch.row("ucl", 1.0, 4).cos23 == 1.0                       # collapsed: 1 by the proposition, no solve
    assert 0.8 < batch.row("ucl", 1.0, 255).cos23 < 0.85
    assert batch.extras["k_last"] == 12                                 # the spec: 0.8995 at k = 12, 0.9010 at k = 13
    assert batch.extras["tau_cross"] == pytest.approx(1.134, abs=1e-3)
    assert ncbook.contrastive.collapse_threshold(255, temperature=batch.extras["tau_cross"]) == pytest.approx(0.9, abs=1e-7)
    collapsed, etf = batch.extras["flat"]
    assert 0 < collapsed < 0.05 * etf


def test_batch_negatives_claims_flip_on_planted_numbers(batch):
    assert [c.verdict for c in batch.claims()] == ["passed", "passed"]
    t = batch.table
    planted = replace(batch, table=t.assign(cos23=t.cos23.where(~((t.setting == "ucl") & (t.k == 255)), 0.97)))
    assert planted.claim("batch-size optimum apart").verdict == "failed"
    planted = replace(batch, extras={**batch.extras, "flat": (0.01, 0.1)})
    assert planted.claim("risk is flat").verdict == "failed"


@pytest.mark.parametrize("kwargs, match", [
    (dict(pi1=0.2), r"pi1 \(the majority's probability of three classes\) must lie in \(1/3, 1\); got 0.2"),
    (dict(temperatures=(0.5, 2.0)), r"temperatures must include 1.0 \(the claims are at tau = 1\)"),
    (dict(flat_k=0), "flat_k must be an integer >= 1; got 0"),
])
def test_batch_negatives_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        experiments.batch_negatives(**kwargs)


# --------------------------------------------------------------------------- the networks, tiny
@pytest.fixture(scope="module")
def tiny_nets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nets")
    os.environ["NCBOOK_WORKERS"] = "1"
    try:
        nets = experiments.contrastive_networks(experiments.contrastive_setting("quick", **TINY), progress=False,
                                                results=folder)
    finally:
        os.environ.pop("NCBOOK_WORKERS")
    return nets, folder


def test_network_table_histories_and_cost_record(tiny_nets):
    nets, folder = tiny_nets
    assert list(nets.table.columns) == COLUMNS
    assert list(nets.table.role) == ["comparison"] * 4 + ["gap test"]
    assert list(nets.table.setting) == ["ucl", "scl", "ucl", "scl", "ucl"] and list(nets.table.k) == [4, 4, 4, 4, 8]
    assert len(nets.comparison) == 4 and nets.gap_run.k == 8
    assert all(len(h) == TINY["NET_STEPS"] for h in nets.histories.values()) and len(nets.histories) == 5
    for row in nets.table.itertuples():        # the optimum and the prediction follow from the run's proportions
        assert row.predicted == (row.pi1 >= row.point)
        assert -1 - 1e-9 <= row.net_a <= 1 + 1e-9 and row.spread >= -1e-12
    record = json.loads((folder / "costs" / "quick" / "contrastive_imbalance.json").read_text())
    cell = record["cells"]["contrastive networks"]
    assert cell["estimate_s"] > 0 and cell["measured_s"] > 0
    opt = nets.extras["optimum"]
    assert set(opt) == {"pi1", "UCL, k = 4", "SCL, k = 4"} and opt["UCL, k = 4"][-1] == 1.0


def test_network_claims_flip_on_planted_numbers(tiny_nets):
    nets, _ = tiny_nets
    assert list(nets._claims()) == ["within-class collapse", "gram matches", "collapse at 0.9",
                                    "training stops short"]
    t = nets.table
    collapsed = t.assign(net_a=t.opt_a, net_b=t.opt_b, spread=0.001)                  # a network exactly at the optimum
    good = replace(nets, table=collapsed)
    assert good.claim("gram matches").verdict == "reproduced"
    assert good.claim("within-class collapse").verdict == "reproduced"
    off = replace(nets, table=collapsed.assign(net_b=collapsed.net_b.where(collapsed.index != 1, collapsed.net_b + 0.06)))
    assert off.claim("gram matches").verdict == "not reproduced"
    apart = replace(nets, table=collapsed.assign(net_b=collapsed.net_b.where(collapsed.role != "gap test", 0.9)))
    # the gap network is an explanation tested here (a check), not the paper's claim: its optimum is not collapsed
    assert not apart.looks_collapsed() and apart.claim("training stops short").verdict == "failed"
    assert apart.claim("training stops short").kind == "check"
    gap = collapsed.role == "gap test"
    merged = replace(nets, table=collapsed.assign(net_b=collapsed.net_b.where(~gap, 0.99),
                                                  net_a=collapsed.net_a.where(~gap, -0.99)))
    assert merged.looks_collapsed() and merged.claim("training stops short").verdict == (
        "passed" if merged.gap_run.opt_b < 0.95 else "failed")
    half = replace(nets, table=merged.table.assign(net_a=merged.table.net_a.where(~gap, -0.5)))
    assert not half.looks_collapsed() and half.claim("training stops short").verdict == "failed"
    spread = replace(nets, table=collapsed.assign(spread=0.2))
    assert spread.claim("within-class collapse").verdict == "not reproduced"


def test_runs_do_not_depend_on_the_workers(tiny_nets, tmp_path):
    nets, _ = tiny_nets
    two = experiments.contrastive_networks(experiments.contrastive_setting("quick", **TINY), progress=False,
                                           results=tmp_path, workers=2)
    numeric = [c for c in COLUMNS if c not in ("role", "setting", "predicted", "seconds")]
    np.testing.assert_allclose(two.table[numeric].to_numpy(float), nets.table[numeric].to_numpy(float), rtol=0,
                               atol=1e-9)


def test_finished_runs_are_read_back_and_a_changed_run_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("NCBOOK_WORKERS", "1")
    setting = experiments.contrastive_setting("quick", **{**TINY, "NET_STEPS": 4})
    first = experiments.contrastive_networks(setting, progress=False, results=tmp_path, checkpoints=tmp_path / "ckpt")
    assert len(list((tmp_path / "ckpt").glob("*.pt"))) == 5
    import ncbook.train as train

    def refuse(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(train, "fit_contrastive", refuse)
    monkeypatch.setattr(train, "measure_contrastive", lambda *a, **k: first_probe)
    first_probe = train.Throughput(0.01, 0.1, 1e-5, 64, "cpu (1 thread)", "float32", 4)
    again = experiments.contrastive_networks(setting, progress=False, results=tmp_path, checkpoints=tmp_path / "ckpt")
    np.testing.assert_allclose(again.table.net_b.to_numpy(), first.table.net_b.to_numpy(), rtol=0, atol=1e-12)
    longer = experiments.contrastive_setting("quick", **{**TINY, "NET_STEPS": 5})
    with pytest.raises(AssertionError, match="trained again"):
        experiments.contrastive_networks(longer, progress=False, results=tmp_path, checkpoints=tmp_path / "ckpt")


def test_network_arguments_are_checked():
    setting = experiments.contrastive_setting("quick", **TINY)
    with pytest.raises(TypeError, match="setting must be"):
        experiments.contrastive_networks({"N_MAJ": 30})
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got -1"):
        experiments.contrastive_networks(setting, seed=-1)
    with pytest.raises(ValueError, match="temperature must be a positive finite number; got 0.0"):
        experiments.contrastive_networks(setting, temperature=0.0)
    with pytest.raises(TypeError, match="results must be a path"):
        experiments.contrastive_networks(setting, results=3)
    with pytest.raises(ValueError, match="workers must be an integer >= 1 or None; got 0"):
        experiments.contrastive_networks(setting, workers=0)


# --------------------------------------------------------------------------- the figure's points
def test_collapse_curves_draws_trained_points_in_their_curves_colour():
    import matplotlib.pyplot as plt

    ax = ncbook.plotting.collapse_curves([0.5, 0.9], {"UCL": [0.1, 1.0], "SCL": [0.5, 1.0]},
                                         points={"SCL": ([0.9], [0.99]), "other": ([0.6], [0.2])})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["UCL", "SCL", "SCL (trained)", "other"]
    scl, scl_points = ax.lines[1], ax.lines[2]
    assert scl_points.get_color() == scl.get_color() and scl_points.get_linestyle() == "None"
    with pytest.raises(ValueError, match="points 'x' have 2 x values and 1 y values"):
        ncbook.plotting.collapse_curves([0.5, 0.9], {"UCL": [0.1, 1.0]}, points={"x": ([0.5, 0.6], [0.1])})
    with pytest.raises(ValueError, match="curve 'UCL' has 1 values; x has 2"):
        ncbook.plotting.collapse_curves([0.5, 0.9], {"UCL": [0.1]})
    plt.close("all")


# --------------------------------------------------------------------------- torchrun, smoke scale
WORKER = '''
import pickle, sys
import torch
from ncbook import experiments, train
train.init_distributed()
torch.set_num_threads(1)
nets = experiments.contrastive_networks(experiments.contrastive_setting("full", "smoke"), progress=False,
                                        results=sys.argv[2], checkpoints=None if sys.argv[3] == "-" else sys.argv[3])
if train.is_main_process():
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    with open(sys.argv[1], "wb") as f:
        pickle.dump({"table": nets.table, "world": world, "claims": [c.verdict for c in nets.claims()]}, f)
'''


def _launch(tmp_path, nproc: int, name: str, data_dir: Path):
    out, results = tmp_path / f"{name}.pkl", tmp_path / f"results-{name}"
    run_worker(tmp_path, WORKER, [out, results, "-"], nproc=nproc, profile="full", data_dir=data_dir,
               checkpoints=tmp_path / f"ckpt-{name}")
    return load(out), results


@pytest.mark.torchrun
def test_smoke_scale_under_torchrun_gives_the_table_of_one_process(tmp_path):
    """The full profile's code path at the smoke scale (ResNet-32 on the CIFAR stand-in): 2 gloo processes, then 1."""
    data_dir = tmp_path / "data"
    ncbook.data.write_cifar_standin(data_dir)
    two, results_two = _launch(tmp_path, 2, "two", data_dir)
    one, _ = _launch(tmp_path, 1, "one", data_dir)
    assert (one["world"], two["world"]) == (1, 2)
    numeric = [c for c in COLUMNS if c not in ("role", "setting", "predicted", "seconds")]
    np.testing.assert_allclose(two["table"][numeric].to_numpy(float), one["table"][numeric].to_numpy(float),
                               rtol=0, atol=1e-9)
    assert list(two["table"].role) == list(one["table"].role) and two["claims"] == one["claims"]
    saved = sorted(p.name for p in (results_two / "contrastive_imbalance").glob("*.json"))
    assert len(saved) == 5                                   # the full profile saves each run, from rank 0 only
    costs = json.loads((results_two / "costs" / "full" / "contrastive_imbalance.json").read_text())
    assert costs["cells"]["contrastive networks"]["measured_s"] > 0
