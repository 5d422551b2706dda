"""The SELI chapter's experiments (ncbook.experiments): sizes, tables, claims, bad arguments, torchrun.

The UFM runs, the ridge path and the network here are tiny (seconds). A planted wrong number flips each claim.
``-m torchrun`` launches the gpu profile's code path at the smoke scale (the CIFAR stand-in) under ``torchrun``
with 2 gloo processes and compares the tables with one process's (a network without BatchNorm: on CPUs its
statistics would stay per rank, see ``ncbook.train.fit``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncbook.data
from ncbook import experiments, geometry, profiles
from torchrun_launch import load, run_worker

ROOT = Path(__file__).resolve().parents[1]
UFM_COLUMNS = ["ratio", "optimizer", "steps", "z_sel", "z_sel_init", "w_seli", "w_etf", "m_seli", "m_etf", "cos_min",
               "seli_cos_min", "status", "seconds"]
RIDGE_COLUMNS = ["lam", "sel_distance", "w_norm_ratio", "cos_min", "collapsed", "objective", "status"]
NET_COLUMNS = ["dataset", "seed", "epochs", "train_acc", "test_acc", "w_seli", "w_etf", "m_seli", "m_etf",
               "init_w_seli", "init_w_etf", "init_m_seli", "init_m_etf", "w_norm_ratio", "seli_w_norm_ratio",
               "m_norm_ratio", "seli_m_norm_ratio", "seconds"]


def _tiny(**changes):
    sizes = dict(ratios=(1, 100), ngd_steps=300, gd_steps=100, record=50, lambdas=(1e-4, 1e-2, 5e-2), epochs=6,
                 width=32, eval_every=2)
    return experiments.seli_setting(profile="quick", **{**sizes, **changes})


# --------------------------------------------------------------------------- the plan and the setting
def test_the_setting_is_the_plan():
    for profile in profiles.PROFILES:      # one test, not one per profile: a test id "gpu" would be skipped without CUDA
        setting = experiments.seli_setting(profile=profile, scale="paper")
        assert setting.sizes == profiles.PLANS["seli"].params[profile]
        assert (setting.profile, setting.scale) == (profile, "paper")
        assert f"{setting.sizes['EPOCHS']} epochs of {setting.sizes['BATCH']}" in setting.text


def test_smoke_shrinks_the_gpu_and_full_sizes_only():
    for profile in ("gpu", "full"):
        smoke = experiments.seli_setting(profile=profile, scale="smoke").sizes
        paper = experiments.seli_setting(profile=profile, scale="paper").sizes
        assert smoke["EPOCHS"] < paper["EPOCHS"] and smoke["STEP_MAJ"] < paper["STEP_MAJ"]
        assert smoke["NGD_STEPS"] < paper["NGD_STEPS"] and len(smoke["LAMBDAS"]) < len(paper["LAMBDAS"])
        assert smoke["DATASET"] == paper["DATASET"] == "cifar10" and smoke["NGD_LR"] == paper["NGD_LR"]
    assert experiments.seli_setting(profile="quick", scale="smoke").sizes == profiles.PLANS["seli"].params["quick"]


def test_the_gpu_and_full_network_sizes_are_the_ones_the_plan_times():
    for profile in ("gpu", "full"):
        sizes = experiments.seli_setting(profile=profile, scale="paper").sizes
        n = 5 * sizes["STEP_MAJ"] + 5 * sizes["STEP_MIN"]
        [(name, train_images, _)] = profiles.planned_work("seli", profile)
        assert name == "STEP-imbalanced network" and train_images == sizes["EPOCHS"] * (n // sizes["BATCH"]) * sizes["BATCH"]


def test_sizes_change_by_name_and_bad_ones_are_refused():
    s = experiments.seli_setting(profile="quick", EPOCHS=7, ratios=[1, 5])
    assert s.sizes["EPOCHS"] == 7 and s.sizes["RATIOS"] == (1, 5) and "7 epochs" in s.text
    with pytest.raises(ValueError, match=r"'steps' is not a size of the SELI experiments; the sizes are \["):
        experiments.seli_setting(profile="quick", steps=10)
    with pytest.raises(ValueError, match="NGD_STEPS must be an integer >= 1; got 0"):
        experiments.seli_setting(profile="quick", ngd_steps=0)
    with pytest.raises(ValueError, match="STEP_MIN must be below STEP_MAJ"):
        experiments.seli_setting(profile="quick", step_min=120)
    with pytest.raises(TypeError, match="LAMBDAS must be a sequence of numbers; got float 0.01"):
        experiments.seli_setting(profile="quick", lambdas=0.01)
    with pytest.raises(ValueError, match="LAMBDAS must hold at least one number; got an empty sequence"):
        experiments.seli_setting(profile="quick", lambdas=())
    with pytest.raises(ValueError, match=r"DATASET must be one of \['digits', 'cifar10'\]; got 'mnist'"):
        experiments.seli_setting(profile="quick", dataset="mnist")
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.seli_setting(profile="laptop")


# --------------------------------------------------------------------------- the UFM runs
@pytest.fixture(scope="module")
def ufm_runs():
    return experiments.seli_ufm(_tiny(), progress=False)


def test_ufm_table_histories_and_known_values(ufm_runs):
    t = ufm_runs.table
    assert list(t.columns) == UFM_COLUMNS
    assert list(zip(t.ratio, t.optimizer)) == [(1, "ngd"), (1, "gd"), (100, "ngd"), (100, "gd")]
    assert list(t.steps) == [300, 100, 300, 100] and set(ufm_runs.histories) == set(zip(t.ratio, t.optimizer))
    h = ufm_runs.histories[100, "ngd"]
    assert list(h["step"]) == [0, 50, 100, 150, 200, 250, 300] and h["z_sel"][-1] < h["z_sel"][0]
    # SELI's minority cosine from the closed form; at R = 1 SELI is the ETF (-1/3 with four classes)
    assert ufm_runs.row(1, "ngd").seli_cos_min == pytest.approx(-1 / 3, abs=1e-12)
    assert ufm_runs.row(100, "ngd").seli_cos_min == pytest.approx(
        geometry.seli_step_closed_form(100, 2, 2)["w_cos_min_min"], rel=1e-12)
    run = ufm_runs.run(100, "ngd")
    assert run.W.shape == (4, 8) and run.H.shape == (1010, 8) and list(run.counts) == [500, 500, 5, 5]
    assert ufm_runs.gd_ratio == pytest.approx(t.z_sel[3] / t.z_sel[1], rel=1e-12)
    with pytest.raises(ValueError, match=r"\(ratio, optimizer\) must be one of"):
        ufm_runs.run(10, "ngd")


def test_ufm_claims_follow_their_verdicts_and_planted_numbers_flip_them(ufm_runs):
    assert [c.verdict for c in ufm_runs.claims()] == ["reproduced", "reproduced"]
    assert {k: v.holds for k, v in ufm_runs.verdicts().items()} == {"approaches": True, "worsens": True}
    t = ufm_runs.table
    far = replace(ufm_runs, table=t.assign(cos_min=t.cos_min.where(t.optimizer != "ngd", t.seli_cos_min + 0.02)))
    assert far.claim("approaches").verdict == "not reproduced" and not far.verdicts()["approaches"].holds
    flat = replace(ufm_runs, table=t.assign(z_sel=t.z_sel.where(t.optimizer != "gd", 0.1)))   # no worse with R
    assert flat.claim("worsens").verdict == "not reproduced" and flat.gd_ratio == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"key must be one of \['approaches', 'worsens'\]"):
        ufm_runs.claim("converges")


def test_ufm_runs_in_worker_processes_give_the_same_table(ufm_runs):
    small = _tiny(ratios=(1, 100), ngd_steps=100, gd_steps=50)
    here = experiments.seli_ufm(small, progress=False, workers=1).table
    there = experiments.seli_ufm(small, progress=False, workers=2).table
    cols = [c for c in UFM_COLUMNS if c not in ("seconds",)]
    pd.testing.assert_frame_equal(here[cols], there[cols])


# --------------------------------------------------------------------------- the ridge path
@pytest.fixture(scope="module")
def path():
    return experiments.seli_ridge_path(_tiny())


def test_ridge_path_table_and_control(path):
    t = path.table
    assert list(t.columns) == RIDGE_COLUMNS and list(t.lam) == [1e-4, 1e-2, 5e-2]
    assert list(t.collapsed) == [False, False, True] and path.collapse_lambda == 5e-2
    assert list(path.counts) == [50, 50, 5, 5] and list(path.extras["control_counts"]) == [27] * 4
    assert path.extras["at_check"] == pytest.approx(float(t.sel_distance[1]), rel=1e-9)   # lambda = 1e-2 is on the grid
    assert path.extras["control"] < 1e-6 < 1e-2 < path.extras["at_check"]
    assert t.w_norm_ratio[0] < path.extras["seli_w_norm_ratio"]      # below SELI's ratio, creeping up as lambda -> 0
    products = path.rate_products(2)
    assert products == pytest.approx(t.sel_distance[:2] * np.log(1 / t.lam[:2]), rel=1e-12)


def test_ridge_claim_and_planted_numbers(path):
    [claim] = path.claims()
    assert claim.verdict == "reproduced" and claim.ours == [path.extras["at_check"], path.extras["control"]]
    assert "lambda = 1e-2" in claim.claim
    moved = replace(path, extras={**path.extras, "control": 1e-3})       # the balanced control moved too
    assert moved.claim("ridge").verdict == "not reproduced" and not moved.verdicts()["control"].holds
    still = replace(path, extras={**path.extras, "at_check": 1e-3})      # minorities changed nothing
    assert still.claim("ridge").verdict == "not reproduced" and not still.verdicts()["moves"].holds


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(ratio=1), ValueError, "ratio must be an integer >= 2; got 1"),
    (dict(check_lam=0.0), ValueError, "check_lam must be a positive finite number"),
    (dict(setting="quick"), TypeError, "setting must be a Setting of the SELI chapter, as seli_setting"),
])
def test_ridge_path_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        experiments.seli_ridge_path(**({"setting": _tiny()} | kwargs))


# --------------------------------------------------------------------------- the network
@pytest.fixture(scope="module")
def net(tmp_path_factory):
    return experiments.seli_network(_tiny(epochs=30, width=64, eval_every=10), progress=False,
                                    results=str(tmp_path_factory.mktemp("results")))


def test_network_table_histories_and_cost_record(net):
    assert list(net.table.columns) == NET_COLUMNS and len(net.table) == 1
    d = net.histories["distances"]
    assert list(d.epoch) == [10, 20, 30] and list(d.columns) == ["epoch", "w_seli", "w_etf", "m_seli", "m_etf"]
    assert net.final == {k: pytest.approx(float(d[k].iloc[-1])) for k in ("w_seli", "w_etf", "m_seli", "m_etf")}
    assert list(net.counts) == [120] * 5 + [12] * 5
    assert net.extras["classifier"].shape == (10, 32) and net.extras["means"].shape == (10, 32)
    seli_w = np.sqrt(np.diag(net.extras["seli"].classifier_gram))
    assert net.table.seli_w_norm_ratio[0] == pytest.approx(seli_w[5:].mean() / seli_w[:5].mean(), rel=1e-12)
    assert net.extras["separation"]["w"] == pytest.approx(
        geometry.frobenius_distance(net.extras["seli"].classifier_gram, geometry.etf_gram(10)), rel=1e-12)
    record = net.extras["cost"].cells["STEP-imbalanced network"]
    assert record["estimate_s"] > 0 and record["measured_s"] > 0


def test_network_claims_and_planted_numbers(net):
    assert [c.verdict for c in net.claims()] == ["reproduced", "reproduced"]    # 30 epochs suffice on digits
    t = net.table
    at_etf = replace(net, table=t.assign(w_seli=t.w_etf + 0.01))
    assert at_etf.claim("closer").verdict == "not reproduced" and not at_etf.verdicts()["closer"].holds
    longer = replace(net, table=t.assign(w_norm_ratio=1.05))
    assert longer.claim("shorter").verdict == "not reproduced" and not longer.verdicts()["shorter"].holds
    assert net.claim("shorter").derived == pytest.approx(float(t.seli_w_norm_ratio[0]))
    # past SELI: further from the ETF than SELI is; the verdict and the record's setting say so
    sep = net.extras["separation"]["w"]
    beyond = replace(net, table=t.assign(w_etf=sep + 0.1, w_seli=0.2))
    assert beyond.verdicts()["past"].holds and beyond.claim("closer").verdict == "reproduced"
    assert "past SELI" in beyond.claim("closer").setting
    short = replace(net, table=t.assign(w_etf=sep - 0.1, w_seli=0.05))
    assert not short.verdicts()["past"].holds and "past SELI" not in short.claim("closer").setting


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(seed=-1), ValueError, "seed must be an integer >= 0; got -1"),
    (dict(model="mlp"), TypeError, "model must be callable"),
    (dict(progress="yes"), TypeError, "progress must be"),
    (dict(results=3), TypeError, "results must be"),
    (dict(setting=experiments.Setting("quick", "paper", {"STEPS": 1}, "x")), TypeError,
     "setting must be a Setting of the SELI chapter"),
])
def test_network_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        experiments.seli_network(**({"setting": _tiny()} | kwargs))


def test_ufm_refuses_bad_arguments():
    with pytest.raises(ValueError, match="workers must be an integer >= 1 or None; got 0"):
        experiments.seli_ufm(_tiny(), workers=0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got -2"):
        experiments.seli_ufm(_tiny(), seed=-2)


def test_the_chapter_records_the_claims_of_its_three_results(tmp_path, ufm_runs, path, net):
    recorded = experiments.record_claims("seli", ufm_runs, path, net, folder=tmp_path)
    assert list(recorded.verdict) == ["reproduced"] * 5
    saved = json.loads((tmp_path / "claims" / "quick" / "seli.json").read_text())
    assert len(saved) == 5 and all(r["source"].startswith("Thrampoulidis et al. 2022, ") for r in saved)
    working_notes = ("summary", "not known", "could not", "worked from", "we quote")
    assert not [r["source"] for r in saved if any(w in r["source"] for w in working_notes)]


# --------------------------------------------------------------------------- torchrun, smoke scale
WORKER = '''
import pickle, sys
import torch
from torch import nn
from ncbook import experiments, models, train
train.init_distributed()
torch.set_num_threads(1)


def net():  # no BatchNorm: on CPUs its statistics would stay per rank
    return models.FeatureClassifier(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.ReLU(), nn.Linear(32, 16)),
                                    16, 10)


setting = experiments.seli_setting(amp=False, ngd_steps=200, gd_steps=100)   # float32: bf16 half batches round apart
ufm_runs = experiments.seli_ufm(setting, progress=False)
network = experiments.seli_network(setting, model=net, progress=False, results=sys.argv[2])
if train.is_main_process():
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    with open(sys.argv[1], "wb") as f:
        pickle.dump({"ufm": ufm_runs.table, "net": network.table, "curves": network.histories["distances"],
                     "world": world, "claims": [c.verdict for c in ufm_runs.claims() + network.claims()]}, f)
'''


def _launch(tmp_path, nproc: int, data_dir: Path) -> tuple[dict, Path]:
    out, results = tmp_path / f"out-{nproc}.pkl", tmp_path / f"results-{nproc}"
    run_worker(tmp_path, WORKER, [out, results], nproc=nproc, profile="gpu", data_dir=data_dir,
               checkpoints=tmp_path / f"checkpoints-{nproc}")
    return load(out), results


@pytest.mark.torchrun
def test_two_gloo_processes_give_the_tables_of_one(tmp_path):
    data_dir = tmp_path / "data"
    ncbook.data.write_cifar_standin(data_dir)
    one, _ = _launch(tmp_path, 1, data_dir)
    two, results_two = _launch(tmp_path, 2, data_dir)
    assert (one["world"], two["world"]) == (1, 2)
    cols = [c for c in UFM_COLUMNS if c != "seconds"]
    pd.testing.assert_frame_equal(one["ufm"][cols], two["ufm"][cols])          # every rank runs every UFM run
    numeric = [c for c in NET_COLUMNS if c not in ("dataset", "seconds")]
    np.testing.assert_allclose(two["net"][numeric].to_numpy(float), one["net"][numeric].to_numpy(float),
                               rtol=1e-4, atol=1e-6)                           # float32 sums of half batches
    np.testing.assert_allclose(two["curves"].to_numpy(float), one["curves"].to_numpy(float), rtol=1e-4, atol=1e-6)
    assert one["claims"] == two["claims"]
    costs = json.loads((results_two / "costs" / "gpu" / "seli.json").read_text())   # written by rank 0
    assert costs["cells"]["STEP-imbalanced network"]["measured_s"] > 0
    assert (tmp_path / "checkpoints-2" / "gpu" / "seli" / "step" / "last.pt").is_file()
