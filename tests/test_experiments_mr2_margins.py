"""The MR2 chapter's experiments (``ncbook.experiments.mr2_baseline`` and ``compare_mr2``).

A tiny run (a few seconds: 30 steps, two seeds, one ablation setting each) checks the tables, the
verdicts and the claims; planted numbers flip the verdicts the chapter and its records read; bad
arguments are refused with messages that name them. One ``torchrun`` test runs the gpu profile at the
smoke scale with 2 gloo processes and compares the table with one process (a network without
BatchNorm: on CPUs BatchNorm statistics stay per rank, see ``ncbook.train.fit``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ncbook import experiments, profiles
from ncbook.experiments import _mr2_margins as mr2
from torchrun_launch import load, run_worker

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["part", "method", "seed", "head", "c_bar", "ema", "easy", "medium", "hard", "all"]


# --------------------------------------------------------------------------- the setting
@pytest.mark.parametrize("profile", profiles.PROFILES, ids=["quick", "gpu-profile", "full-profile"])
def test_the_setting_is_the_plan(profile):
    setting = experiments.mr2_setting(profile=profile, scale="paper")
    assert setting.profile == profile and setting.sizes == profiles.PLANS["mr2_margins"].params[profile]
    assert f"{setting.sizes['STEPS']} steps of {setting.sizes['BATCH']}" in setting.text


def test_the_smoke_scale_shrinks_gpu_and_full_but_not_quick():
    for profile in ("gpu", "full"):
        sizes = experiments.mr2_setting(profile=profile, scale="smoke").sizes
        assert (sizes["STEPS"], sizes["SEEDS"]) == (8, 1) and sizes["DATASET"].startswith("cifar")
    assert experiments.mr2_setting(profile="quick", scale="smoke").sizes == profiles.PLANS["mr2_margins"].params["quick"]


def test_sizes_can_be_changed_by_name_and_bad_ones_are_refused():
    s = experiments.mr2_setting(profile="quick", steps=100, SEEDS=2, c_bars=[3.0])
    assert (s.sizes["STEPS"], s.sizes["SEEDS"], s.sizes["C_BARS"]) == (100, 2, (3.0,))
    with pytest.raises(ValueError, match="'widths' is not a size of the MR2 experiments; the sizes are"):
        experiments.mr2_setting(profile="quick", widths=(8,))
    with pytest.raises(ValueError, match="STEPS must be"):
        experiments.mr2_setting(profile="quick", steps=0)
    with pytest.raises(ValueError, match=r"EMAS must hold EMA decays in \[0, 1\); got 1.0"):
        experiments.mr2_setting(profile="quick", emas=(0.5, 1.0))
    with pytest.raises(TypeError, match="C_BARS must be a tuple of numbers"):
        experiments.mr2_setting(profile="quick", c_bars=2.0)
    with pytest.raises(ValueError, match="DATASET must be one of"):
        experiments.mr2_setting(profile="quick", dataset="mnist")
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.mr2_setting(profile="fast")


def test_chance_correlation_is_the_t_test_threshold():
    """|r| at the two-sided 5% level for C pairs: t / sqrt(C - 2 + t^2), t the Student-t quantile; checked by
    simulation of independent Gaussian pairs (5% of |r| beyond it, within sampling error)."""
    r_crit = mr2.chance_correlation(10)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 20000, 10))
    xc, yc = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
    r = (xc * yc).sum(1) / np.sqrt((xc ** 2).sum(1) * (yc ** 2).sum(1))
    assert abs(np.mean(np.abs(r) > r_crit) - 0.05) < 0.006
    with pytest.raises(ValueError, match="num_classes must be"):
        mr2.chance_correlation(2)


# --------------------------------------------------------------------------- a tiny run
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """30 steps, two seeds, one ablation setting of each kind, in this process (seconds)."""
    saved = os.environ.get("NCBOOK_WORKERS")
    os.environ["NCBOOK_WORKERS"] = "1"
    torch.set_num_threads(1)
    try:
        setting = experiments.mr2_setting(profile="quick", steps=30, seeds=2, c_bars=(2.0,), emas=(0.0,))
        folder = tmp_path_factory.mktemp("results")
        base = experiments.mr2_baseline(setting, seed=1, progress=False, results=str(folder))
        comp = experiments.compare_mr2(base, progress=False, results=str(folder))
    finally:
        if saved is None:
            os.environ.pop("NCBOOK_WORKERS", None)
        else:
            os.environ["NCBOOK_WORKERS"] = saved
    return base, comp, folder


def test_the_baseline_table_statistics_and_split(tiny):
    base, _, folder = tiny
    assert list(base.table.columns) == ["method", "seed", "noise", "easy", "medium", "hard", "all"]
    assert base.table["seed"].tolist() == [1, 2, 1] and base.table["noise"].tolist() == [1.0, 1.0, 0.0]
    assert base.class_accuracy.shape == (2, 10)
    assert sorted(np.concatenate(list(base.groups.values())).tolist()) == list(range(10))
    s = base.statistics
    assert list(s.columns) == ["accuracy", "mean_sq_norm", "spread", "relative_spread"] and len(s) == 10
    # the spread by hand on each seed's test features, then the mean over the seeds
    def spreads(h, y):
        h = h.double()
        return [float(((h[y == c] - h[y == c].mean(0)) ** 2).sum(1).mean()) for c in range(10)]

    by_seed = [spreads(h, y) for h, y in base.extras["features_by_seed"]]
    assert len(by_seed) == 2 and torch.equal(base.extras["features_by_seed"][0][0], base.features)
    np.testing.assert_allclose(s["spread"], np.mean(by_seed, axis=0), rtol=1e-4)
    np.testing.assert_allclose(s["accuracy"], base.class_accuracy.to_numpy().mean(0), rtol=1e-12)
    assert base.correlations["spread"] == pytest.approx(np.corrcoef(s["spread"], s["accuracy"])[0, 1], rel=1e-9)
    assert 0 < base.norm_share < 1 and base.epochs == max(1, round(30 * 64 / 997))
    cost = (folder / "costs" / "quick" / "mr2_margins.json").read_text()
    assert '"CE"' in cost and '"comparison"' in cost and '"measured_s": null' not in cost


def test_the_comparison_table(tiny):
    base, comp, _ = tiny
    t = comp.table
    assert list(t.columns) == COLUMNS
    assert t.groupby("part").size().to_dict() == {"main": 10, "ablation": 2, "cosine head": 2}
    assert comp.part("main").groupby("method").size().to_dict() == {m: 2 for m in mr2.METHODS}
    # the main table's CE rows are the baseline's noisy runs, row for row
    ce = comp.part("main").query("method == 'CE'")[["seed", "easy", "hard", "all"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(ce, base.table[base.table["noise"] == 1.0][["seed", "easy", "hard", "all"]]
                                  .reset_index(drop=True), check_exact=False, rtol=1e-12)
    assert ((t[list(mr2.GROUPS)] >= 0) & (t[list(mr2.GROUPS)] <= 1)).all().all()
    assert comp.final_margins.shape == (10,) and comp.final_margins.mean() == pytest.approx(1.0, rel=1e-6)
    assert list(comp.formatted().index) == list(mr2.METHODS)
    assert comp.formatted("ablation").index.tolist() == ["c_bar = 2, EMA decay = 0.9", "c_bar = 1, EMA decay = 0",
                                                         "c_bar = 1, EMA decay = 0.9"]
    assert set(comp.histories) and all(len(h) == base.epochs for h in comp.histories.values())


def test_verdicts_read_the_table(tiny):
    _, comp, _ = tiny
    v = comp.verdicts()
    hard_mr2, hard_ce = comp.per_seed("MR2 both", "hard"), comp.per_seed("CE", "hard")
    assert v["hard_gain"].value == pytest.approx(hard_mr2.mean() - hard_ce.mean(), abs=1e-9)
    assert v["hard_gain"].threshold == pytest.approx(2 * max(hard_mr2.std(), hard_ce.std()), abs=1e-9)
    assert v["ablation_logit"].threshold == v["ablation_rep"].threshold   # one noise for the three MR2 versions
    # the ablation's single runs (two settings and the main setting's first seed) against the chance range of 3 seeds
    overall = 100 * comp.formatted("ablation")["all"].to_numpy()
    spreads = [comp.per_seed(m, "all").std() for m in mr2.METHODS]
    assert v["ablation_range"].rule == "exceeds" and v["ablation_range"].value == pytest.approx(np.ptp(overall))
    assert v["ablation_range"].threshold == pytest.approx(experiments.range_noise(spreads, 3))
    assert v["ablation_range"].threshold > 3.3 * max(spreads)                # wider than twice the spread
    assert "cosine_gap" not in v and np.isfinite(comp.cosine_gap())
    assert comp.say("hard_gain", ("beats", "is level with", "trails")) in ("beats", "is level with", "trails")


def _claims(*results):
    return {c.claim.split(":")[0]: c for r in results for c in r.claims()}


def test_claims_and_their_records(tiny, tmp_path):
    base, comp, _ = tiny
    claims = _claims(base, comp)
    assert len(claims) == 8 and sum(c.kind == "paper" for c in claims.values()) == 8
    v = comp.verdicts()
    assert claims["MR2 (both losses) raises hard-class test accuracy over CE"].verdict == \
        ("reproduced" if v["hard_gain"].holds else "not reproduced")
    easy = claims["MR2 (both losses) does not trade off the easy classes"]
    assert easy.verdict == ("not reproduced" if v["easy_change"].outcome == "below" else "reproduced")
    out = experiments.record_claims("mr2_margins", base, comp, folder=tmp_path)
    assert len(out) == 8 and set(out["verdict"]) <= {"reproduced", "not reproduced", "not testable"}
    # a difference of single runs is never judged: the cosine head trains one seed per method
    cosine = claims["With a cosine classifier, MR2 with p = 3 raises hard-class test accuracy over CE"]
    assert cosine.verdict == "not testable" and "one seed per method" in cosine.not_testable
    assert list(out["verdict"]).count("not testable") == 1
    assert (tmp_path / "claims" / "quick" / "mr2_margins.json").exists()
    for c in claims.values():
        assert "not known" not in c.source and "worked from" not in c.source


def _planted(result, change):
    """A copy of ``result`` whose table (or extras) ``change`` edits in place, or replaces (its return value)."""
    table, extras = result.table.copy(), dict(result.extras)
    replaced = change(table, extras)
    table = table if replaced is None else replaced
    return type(result)(result.chapter, result.setting, table, result.histories, result.seconds, extras)


def test_a_planted_gain_flips_the_verdicts(tiny):
    _, comp, _ = tiny
    def plant(group, ce, mr2_both):      # the same accuracy on every seed: no seed spread, any gap is resolved
        def change(table, extras):
            main = table["part"] == "main"
            table.loc[main & (table["method"] == "CE"), group] = ce
            table.loc[main & (table["method"] == "MR2 both"), group] = mr2_both
        return change

    better = _planted(comp, plant("hard", 0.5, 0.6))
    assert better.verdicts()["hard_gain"].outcome == "above"
    assert better.say("hard_gain", ("beats", "is level with", "trails")) == "beats"
    assert _claims(better)["MR2 (both losses) raises hard-class test accuracy over CE"].verdict == "reproduced"
    assert _claims(_planted(comp, plant("hard", 0.6, 0.5)))[
        "MR2 (both losses) raises hard-class test accuracy over CE"].verdict == "not reproduced"

    worse = _planted(comp, plant("easy", 0.9, 0.8))
    assert worse.say("easy_change", ("gains on", "keeps", "trades off")) == "trades off"
    assert _claims(worse)["MR2 (both losses) does not trade off the easy classes"].verdict == "not reproduced"
    level = _planted(comp, plant("easy", 0.9, 0.9))
    assert level.verdicts()["easy_change"].outcome == "level"
    assert _claims(level)["MR2 (both losses) does not trade off the easy classes"].verdict == "reproduced"

    def flip_margins(table, extras):
        acc = extras["baseline"].class_accuracy.to_numpy().mean(0)
        extras["final_margins"] = 2.0 - acc            # larger where CE is worse: correlation -1
    flipped = _planted(comp, flip_margins)
    assert flipped.margin_correlation == pytest.approx(-1.0, abs=1e-9)
    assert _claims(flipped)["MR2 assigns larger logit margins to hard classes"].verdict == "reproduced"


def test_a_planted_correlation_flips_the_premise(tiny):
    base, _, _ = tiny
    def against(table, extras):
        extras["correlations"] = dict(extras["correlations"], spread=0.9)
    def beyond_chance(table, extras):
        extras["correlations"] = dict(extras["correlations"], spread=-0.95)
    assert _claims(_planted(base, against))["Hard classes have more variable features"].verdict == "not reproduced"
    assert _claims(_planted(base, beyond_chance))["Hard classes have more variable features"].verdict == "reproduced"
    assert _planted(base, against).premise.word(("holds", "does not hold")) == "does not hold"


def test_one_seed_cannot_judge_a_comparison(tiny):
    base, comp, _ = tiny
    sizes = dict(comp.setting.sizes, SEEDS=1)
    one = experiments.Setting("quick", "paper", sizes, "one seed")
    def first_seed(table, extras):
        return table[~((table["part"] == "main") & (table["seed"] != 1))]
    single = _planted(comp, first_seed)
    single = type(comp)(comp.chapter, one, single.table, {}, 0.0, single.extras)
    assert single.say("hard_gain", ("a", "b", "c")) == "cannot be judged with one seed (no seed spread)"
    claims = _claims(single)
    assert claims["MR2 (both losses) raises hard-class test accuracy over CE"].verdict == "not testable"
    assert claims["MR2 assigns larger logit margins to hard classes"].verdict in ("reproduced", "not reproduced")


def test_bad_arguments_are_refused(tiny):
    base, comp, _ = tiny
    with pytest.raises(TypeError, match="setting must be a Setting of the MR2 chapter"):
        experiments.mr2_baseline("quick")
    with pytest.raises(ValueError, match="seed must be"):
        experiments.mr2_baseline(base.setting, seed=-1)
    with pytest.raises(TypeError, match="model must be callable"):
        experiments.mr2_baseline(base.setting, model=3)
    with pytest.raises(TypeError, match="baseline must be an MR2Baseline"):
        experiments.compare_mr2(base.table)
    with pytest.raises(ValueError, match="come from the baseline"):
        experiments.compare_mr2(base, seed=3)
    with pytest.raises(ValueError, match="method must be one of"):
        comp.per_seed("SGD", "hard")
    with pytest.raises(ValueError, match="name must be one of"):
        comp.part("appendix")


def test_group_accuracy_bars_zoom_keeps_every_error_bar():
    from ncbook.plotting import group_accuracy_bars

    ax = group_accuracy_bars({"CE": {"easy": 0.95, "hard": 0.70}, "MR2": {"easy": 0.96, "hard": 0.74}},
                             errors={"CE": {"easy": 0.01, "hard": 0.05}, "MR2": {"easy": 0.02, "hard": 0.01}}, zoom=True)
    low, high = ax.get_ylim()
    assert low == pytest.approx(0.55) and high == pytest.approx(1.0)
    ax = group_accuracy_bars({"CE": {"easy": 0.95, "hard": 0.70}})
    assert ax.get_ylim()[0] == pytest.approx(0.0)       # without zoom: matplotlib's own limits


# --------------------------------------------------------------------------- torchrun
WORKER = '''
import pickle, sys, torch
from torch import nn
from ncbook import experiments, models, train
out, results = sys.argv[1], sys.argv[2]
train.init_distributed()
torch.set_num_threads(1)


def net():  # no BatchNorm: on CPUs its statistics would stay per rank
    return models.FeatureClassifier(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.ReLU(), nn.Linear(32, 16)),
                                    16, 10)


setting = experiments.mr2_setting(amp=False)   # float32: bf16 products of half batches round differently
base = experiments.mr2_baseline(setting, model=net, progress=False, results=results)
comp = experiments.compare_mr2(base, progress=False, results=results)
if train.is_main_process():
    with open(out, "wb") as f:
        pickle.dump({"table": comp.table, "margins": comp.final_margins, "statistics": base.statistics,
                     "claims": [c.verdict for c in base.claims() + comp.claims()]}, f)
'''


def _launch(tmp_path, nproc: int) -> dict:
    from ncbook import data

    if not (tmp_path / "data").exists():
        data.write_cifar_standin(tmp_path / "data")
    out = tmp_path / f"out-{nproc}.pkl"
    run_worker(tmp_path, WORKER, [out, tmp_path / f"results-{nproc}"], nproc=nproc, profile="gpu",
               data_dir=tmp_path / "data", checkpoints=tmp_path / f"checkpoints-{nproc}", timeout=600)
    return load(out)


@pytest.mark.torchrun
def test_two_gloo_processes_give_the_table_of_one(tmp_path):
    one, two = _launch(tmp_path, 1), _launch(tmp_path, 2)
    a, b = one["table"], two["table"]
    assert list(a.columns) == COLUMNS and len(a) == len(b) == 5 + 4 + 2   # one seed: 5 methods, 4 ablations, 2 heads
    pd.testing.assert_frame_equal(a[COLUMNS[:6]], b[COLUMNS[:6]])
    np.testing.assert_allclose(b[list(mr2.GROUPS)].to_numpy(), a[list(mr2.GROUPS)].to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(two["margins"], one["margins"], rtol=2e-5)                 # float32 round-off
    np.testing.assert_allclose(two["statistics"].to_numpy(), one["statistics"].to_numpy(), rtol=1e-4, atol=1e-6)
    assert one["claims"] == two["claims"]
