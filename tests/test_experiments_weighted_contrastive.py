"""The weighted-contrastive chapter's experiments at tiny sizes: tables, claims, planted mistakes, bad arguments.

``supervised_prototypes`` and ``continuous_label_fits`` run small free fits (seconds); ``weighted_networks`` runs
with the quick plan shrunk to a few steps on the digits. The ``torchrun`` test launches the gpu profile at the
smoke scale (ResNet-32 on the CIFAR stand-in) in one process and in two gloo processes and compares the tables
(run alone with ``python -m pytest -m torchrun tests/test_experiments_weighted_contrastive.py``).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from ncbook import data, experiments, profiles
from ncbook.book import claim_verdict
from torchrun_launch import run_worker
TINY = dict(DATASET="digits", SUBSET=None, NET_COUNTS=[12] * 5 + [3] * 5, NET_STEPS=6, NET_BATCH=16, REG_STEPS=6,
            REG_BATCH=32)


def _records_agree(result) -> None:
    """Each claim's record gives the verdict its Verdict gives (the prose and the record read the same rule)."""
    verdicts = list(result.verdicts().values())
    claims = result.claims()
    assert len(claims) == len(verdicts)
    for claim, verdict in zip(claims, verdicts):
        recorded = claim_verdict(claim.ours, claim.tolerance, paper=claim.paper, derived=claim.derived)
        assert (recorded == "reproduced") == verdict.holds, (claim.claim, recorded, verdict)


# --------------------------------------------------------------------------- free prototypes
@pytest.fixture(scope="module")
def prototypes():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NCBOOK_WORKERS", "1")     # the fits in this process (workers give the same numbers: run_parallel)
        return experiments.supervised_prototypes(num_classes=3, dim=3, majority=6, minority=2,
                                                 epsilon_factors=(10.0, 0.1), progress=False)


def test_the_fit_claims_are_recorded(prototypes, continuous, tmp_path):
    """record_claim accepts every claim (a paper's source names the place, a check quotes no paper)."""
    out = experiments.record_claims("weighted_contrastive", prototypes, continuous, folder=tmp_path)
    assert out.verdict.tolist() == ["reproduced"] * 9 + ["passed"]
    records = json.loads((tmp_path / "claims" / prototypes.setting.profile / "weighted_contrastive.json").read_text())
    assert len(records) == 10 and all(r["verdict"] in ("reproduced", "passed") for r in records)


def test_prototype_table_and_claims(prototypes):
    t = prototypes.table
    assert list(t.columns) == ["loss", "classes", "epsilon_factor", "cos_eps", "status", "gap", "etf_deviation",
                               "cos_maj_min", "cos_min_min", "seconds"]
    assert len(t) == 6 and t.loss.tolist() == ["SupCon"] * 2 + ["Soft SupCon"] * 4
    assert t.status.tolist() == ["inconsistent", "inconsistent", "feasible", "feasible", "feasible", "inconsistent"]
    assert [c.verdict for c in prototypes.claims()] == ["reproduced"] * 4
    _records_agree(prototypes)
    eps_star = prototypes.extras["epsilon_star"]
    assert eps_star == pytest.approx(math.exp(-3 / (2 * 0.1)), rel=1e-12)
    # Soft SupCon at eps*: the common cosine is the simplex's -1/(C - 1)
    assert prototypes.row("Soft SupCon", "imbalanced").cos_eps == pytest.approx(-0.5, rel=1e-12)
    assert prototypes.row("Soft SupCon", "imbalanced", 0.1).status == "inconsistent"
    with pytest.raises(ValueError, match="no fit of loss='Soft SupCon'"):
        prototypes.row("Soft SupCon", "imbalanced", 3.0)


def test_planted_prototype_mistakes_flip_the_verdicts(prototypes):
    grams = dict(prototypes.extras["grams"])
    bad = grams["Soft SupCon", "imbalanced"].copy()
    bad[0, 1] = bad[1, 0] = bad[0, 1] + 1e-3                 # a Gram 10x the tolerance away from the simplex
    grams["Soft SupCon", "imbalanced"] = bad
    planted = replace(prototypes, extras={**prototypes.extras, "grams": grams})
    assert [c.verdict for c in planted.claims()][3] == "not reproduced"
    table = prototypes.table.copy()
    table.loc[(table.loss == "SupCon") & (table.classes == "imbalanced"), ["etf_deviation", "cos_min_min"]] = [0.005, -0.5]
    planted = replace(prototypes, table=table)
    assert [c.verdict for c in planted.claims()][1:3] == ["not reproduced", "not reproduced"]
    _records_agree(planted)


def test_prototype_arguments_are_refused():
    with pytest.raises(ValueError, match=r"num_classes must be an integer >= 3"):
        experiments.supervised_prototypes(num_classes=2)
    with pytest.raises(ValueError, match=r"dim must be an integer >= 4 \(the prototypes' dimension d"):
        experiments.supervised_prototypes(num_classes=4, dim=3)
    with pytest.raises(ValueError, match=r"majority must be an integer >= 11 \(samples of the majority class"):
        experiments.supervised_prototypes(majority=10, minority=10)
    with pytest.raises(ValueError, match="temperature must be a positive finite number; got -0.1"):
        experiments.supervised_prototypes(temperature=-0.1)
    with pytest.raises(ValueError, match="epsilon_factors must be a positive finite number; got 0"):
        experiments.supervised_prototypes(epsilon_factors=(0,))
    with pytest.raises(TypeError, match="epsilon_factors must be a sequence of positive numbers; got float"):
        experiments.supervised_prototypes(epsilon_factors=0.1)
    with pytest.raises(TypeError, match="seed must be an integer >= 0; got float 0.5"):
        experiments.supervised_prototypes(seed=0.5)
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.supervised_prototypes(profile="fast")


# --------------------------------------------------------------------------- continuous labels
@pytest.fixture(scope="module")
def continuous():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NCBOOK_WORKERS", "1")
        return experiments.continuous_label_fits(n=12, dim=4, starts=2, progress=False)


def test_continuous_table_and_claims(continuous):
    t = continuous.table
    assert list(t.columns) == ["objective", "embedding", "start", "status", "gap", "r2_ssim", "r2_proc", "gram_error",
                               "seconds"]
    assert len(t) == 3 * 3 and sorted(set(t.objective)) == ["Euclid-Euclid", "X-CLR", "y-Aware"]
    assert continuous.rows("Euclid-Euclid").start.tolist() == [0, 1]
    assert continuous.rows("y-Aware").gram_error.isna().all()          # no unique solution to compare with
    assert [c.verdict for c in continuous.claims()] == ["reproduced"] * 5 + ["passed"]
    _records_agree(continuous)
    assert continuous.rows("Euclid-Euclid", "random").r2_proc.iloc[0] < 0.9   # the baseline is far from the fit


def test_planted_continuous_mistakes_flip_the_verdicts(continuous):
    table = continuous.table.copy()
    fit = table.embedding == "fit"
    table.loc[fit & (table.objective == "Euclid-Euclid") & (table.start == 1), "gram_error"] = 0.3   # another optimum
    table.loc[fit & (table.objective == "X-CLR") & (table.start == 0), "gap"] = 2e-6                 # above the bound
    table.loc[fit & (table.objective == "y-Aware") & (table.start == 1), "gap"] = 1e-6               # it closes
    planted = replace(continuous, table=table)
    assert [c.verdict for c in planted.claims()] == ["not reproduced", "reproduced", "not reproduced",
                                                     "not reproduced", "reproduced", "passed"]
    _records_agree(planted)


def test_continuous_arguments_are_refused():
    with pytest.raises(ValueError, match=r"dim must be below n - 1 = 11 .* got 11"):
        experiments.continuous_label_fits(n=12, dim=11)
    with pytest.raises(ValueError, match=r"dim must be an integer >= 4 \(the embedding dimension d"):
        experiments.continuous_label_fits(dim=3)
    with pytest.raises(ValueError, match=r"starts must be an integer >= 2 \(random starts per objective\); got 1"):
        experiments.continuous_label_fits(starts=1)
    with pytest.raises(ValueError, match="sigma must be a positive finite number; got nan"):
        experiments.continuous_label_fits(sigma=float("nan"))
    with pytest.raises(TypeError, match="progress must be True or False or None"):
        experiments.continuous_label_fits(progress="yes")


# --------------------------------------------------------------------------- networks
@pytest.fixture
def tiny_plan(monkeypatch, tmp_path):
    plan = profiles.PLANS["weighted_contrastive"]
    monkeypatch.setitem(profiles.PLANS, "weighted_contrastive", replace(plan, params={**plan.params, "quick": TINY}))
    monkeypatch.setenv("NCBOOK_WORKERS", "1")
    monkeypatch.setenv("NCBOOK_PROGRESS", "0")
    return tmp_path


def test_network_setting_is_the_plan():
    plan = profiles.PLANS["weighted_contrastive"].params
    for name in ("quick", "gpu", "full"):
        assert experiments.weighted_network_setting(name, "paper").sizes == plan[name]
    smoke = experiments.weighted_network_setting("gpu", "smoke").sizes
    assert smoke["NET_STEPS"] == 12 and smoke["DATASET"] == "cifar10" and smoke["SUBSET"] == "gpu"
    assert experiments.weighted_network_setting("quick", "smoke").sizes == plan["quick"]   # quick ignores the scale
    with pytest.raises(ValueError, match="scale must be one of"):
        experiments.weighted_network_setting("gpu", "huge")


def test_networks_table_claims_and_cost_record(tiny_plan, capsys):
    res = experiments.weighted_networks(profile="quick", results=tiny_plan, progress=False)
    t = res.table
    assert t.method.tolist() == ["SupCon", "Soft SupCon", "Euclid-Euclid", "y-Aware"]
    assert t.task.tolist() == ["classes"] * 2 + ["regression"] * 2
    assert list(t.columns) == ["task", "method", "seed", "gap", "r2_ssim", "r2_proc", "r2_proc_etf", "etf_deviation",
                               "cos_maj_maj", "cos_maj_min", "cos_min_min", "seconds"]
    assert np.isnan(res.row("SupCon").r2_ssim)                    # SupCon's positive weights are all 1
    assert set(res.histories) == set(t.method) and all(len(h) >= 1 for h in res.histories.values())
    assert res.extras["grams"]["SupCon optimum"].shape == (10, 10) and res.extras["dim"] == 16
    assert len(res.claims()) == 5 and all(c.verdict in ("reproduced", "not reproduced") for c in res.claims())
    _records_agree(res)
    out = capsys.readouterr().out
    assert "of it from here on." in out and "Next cell, networks" in out
    assert "Training at the quick profile: digits, MLP, 6 steps (batch 16) for the classes" in out
    cost = json.loads((tiny_plan / "costs" / "quick" / "weighted_contrastive.json").read_text())
    assert cost["cells"]["networks"]["measured_s"] > 0
    claims = experiments.record_claims("weighted_contrastive", res, folder=tiny_plan)
    assert len(claims) == 5 and (tiny_plan / "claims" / "quick" / "weighted_contrastive.json").exists()
    with pytest.raises(ValueError, match="method must be one of"):
        res.row("InfoNCE")
    # a planted number flips its verdict: the regression network far from the paper's 0.96
    table = t.copy()
    table.loc[table.method == "Euclid-Euclid", "r2_proc"] = 0.5
    table.loc[table.method == "y-Aware", "r2_proc"] = 0.6
    planted = replace(res, table=table)
    assert [c.verdict for c in planted.claims()][3:] == ["not reproduced", "not reproduced"]
    grams = {**res.extras["grams"], "Soft SupCon": res.extras["grams"]["SupCon optimum"]}   # as distorted as SupCon
    assert replace(res, extras={**res.extras, "grams": grams}).claims()[1].verdict == "not reproduced"


def test_finished_runs_are_read_back_from_their_checkpoints(tiny_plan, monkeypatch):
    plan = profiles.PLANS["weighted_contrastive"]
    monkeypatch.setitem(profiles.PLANS, "weighted_contrastive", replace(plan, params={**plan.params, "gpu": TINY}))
    monkeypatch.setenv("NCBOOK_CHECKPOINTS", str(tiny_plan / "ckpt"))
    first = experiments.weighted_networks(profile="gpu", scale="paper", results=tiny_plan, progress=False)
    files = sorted(p.name for p in (tiny_plan / "ckpt" / "gpu" / "weighted_contrastive").iterdir())
    assert files == ["Euclid-Euclid-seed0.pt", "SoftSupCon-seed0.pt", "SupCon-seed0.pt", "y-Aware-seed0.pt"]
    again = experiments.weighted_networks(profile="gpu", scale="paper", results=tiny_plan, progress=False)
    pd.testing.assert_frame_equal(first.table, again.table)          # read back: the very same runs (and seconds)
    other = experiments.weighted_networks(profile="gpu", scale="paper", results=tiny_plan, progress=False, seed=1)
    assert not np.allclose(other.table.r2_proc, first.table.r2_proc)  # another seed is another run, not a read-back


def test_network_arguments_are_refused(tiny_plan):
    with pytest.raises(TypeError, match="seed must be an integer >= 0; got str"):
        experiments.weighted_networks(seed="0")
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.weighted_networks(profile="cpu")
    with pytest.raises(TypeError, match="results must be a path"):
        experiments.weighted_networks(profile="quick", results=3)


# --------------------------------------------------------------------------- torchrun
WORKER = '''
import sys, torch
from ncbook import experiments, train
train.init_distributed()
torch.set_num_threads(1)
res = experiments.weighted_networks(progress=False, results=sys.argv[2])
if train.is_main_process():
    res.table.to_pickle(sys.argv[1])
'''


def _launch(tmp_path, nproc: int, name: str):
    out = tmp_path / f"{name}.pkl"
    done = run_worker(tmp_path, WORKER, [out, tmp_path / f"results-{name}"], nproc=nproc, profile="gpu",
                      data_dir=tmp_path / "data", checkpoints=tmp_path / f"ckpt-{name}", workers="2")
    return pd.read_pickle(out), done.stdout


@pytest.mark.torchrun
def test_two_processes_give_the_table_of_one(tmp_path):
    """The gpu profile at the smoke scale (ResNet-32, CIFAR stand-in): two gloo ranks share the four runs and give
    the table of one process (whose runs train side by side in worker processes)."""
    data.write_cifar_standin(tmp_path / "data")
    one, _ = _launch(tmp_path, 1, "one")
    two, printed = _launch(tmp_path, 2, "two")
    assert printed.count("of it from here on.") == 1        # one rank announces the cost
    numbers = [c for c in one.columns if c not in ("task", "method", "seed", "seconds")]
    assert one[["task", "method", "seed"]].equals(two[["task", "method", "seed"]])
    a, b = one[numbers].to_numpy(dtype=float), two[numbers].to_numpy(dtype=float)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    scale = np.nanmax(np.abs(a), axis=0)
    assert np.nanmax(np.abs(a - b) / scale) < 1e-6, (one, two)
    for name in ("one", "two"):
        files = sorted(p.name for p in (tmp_path / f"ckpt-{name}" / "gpu" / "weighted_contrastive").iterdir())
        assert len(files) == 4                                      # every run checkpointed, by the rank that trained it
