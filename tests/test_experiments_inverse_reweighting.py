"""The reweighting chapter's experiment: ``experiments.compare_reweighting`` and its result.

A tiny comparison (seconds) gives the table, curves and claims the chapter reads; planted numbers flip each
verdict; bad arguments are refused with messages that name them; the sizes come from the plan; and under
``torchrun`` (2 gloo processes, the smoke scale of the gpu profile) the table is the one of one process.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import jupytext
import numpy as np
import pandas as pd
import pytest
import torch

from ncbook import data, experiments, losses, models, profiles, reweighting
from ncbook.experiments._inverse_reweighting import METRICS, PAPER_BASELINES, PAPER_METHOD
from torchrun_launch import load, run_worker

ROOT = Path(__file__).resolve().parents[1]
TINY = {"N_MAX": 40, "IMBALANCE": 5, "STEPS": 12, "REPEAT": 1, "WIDTH": 8, "EVAL_EVERY": 2, "MANY": 20, "FEW": 10,
        "AMP": False}


def methods(counts, epochs):
    """The chapter's ten methods."""
    late, mid, c = int(0.8 * epochs), int(0.5 * epochs), len(counts)
    return {
        "CE": lambda: torch.nn.CrossEntropyLoss(),
        "Inv-Freq": lambda: losses.WeightedCrossEntropy(reweighting.inverse_frequency_weights(counts)),
        "CB": lambda: losses.WeightedCrossEntropy(reweighting.effective_number_weights(counts, 0.9999)),
        "Focal": lambda: losses.FocalLoss(gamma=1.0),
        "LDAM-DRW": experiments.Method(lambda: losses.LDAMLoss(counts, drw_epoch=late), head="cosine"),
        "LA (loss)": lambda: losses.LogitAdjustedLoss(counts, tau=1.0),
        "IB": lambda: losses.IBLoss(counts, start_epoch=mid),
        "inverse": lambda: losses.InverseReweightedCE(c, gamma=0.0, switch_epoch=late),
        "inverse + macro": lambda: losses.InverseReweightedCE(c, gamma=1.0, switch_epoch=late),
        "inverse + macro, detached": lambda: losses.InverseReweightedCE(c, gamma=1.0, switch_epoch=late, detach=True),
    }


@pytest.fixture
def one_process(monkeypatch):
    """Runs in this process (no worker start-up), no progress bars: a test of seconds."""
    monkeypatch.setenv("NCBOOK_WORKERS", "1")
    monkeypatch.setenv("NCBOOK_PROGRESS", "0")
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("NCBOOK_WORKERS", "NCBOOK_PROGRESS")}
    os.environ.update(NCBOOK_WORKERS="1", NCBOOK_PROGRESS="0")
    torch.set_num_threads(1)
    try:
        return experiments.compare_reweighting(methods, seeds=[0, 1], sizes=TINY, progress=False,
                                               setting=experiments.reweighting_setting(profile="quick"),
                                               results=tmp_path_factory.mktemp("results"))
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


# --------------------------------------------------------------------------- the tiny run
def test_tiny_comparison_gives_the_table_curves_and_claims(tiny):
    t = tiny.table
    assert list(t.columns) == ["dataset", "method", "seed", *METRICS]
    names = list(methods(np.array([2, 1]), 10)) + ["CE + post-hoc LA"]
    assert sorted(t["method"].unique()) == sorted(names)
    assert len(t) == 2 * len(names) and set(t["seed"]) == {0, 1} and set(t["dataset"]) == {"digits"}
    acc = t[["overall", "many", "medium", "few"]].to_numpy()
    assert np.all((acc >= 0) & (acc <= 1))
    # post-hoc LA is CE's network: the same training metrics, other test logits
    ce, la = t[t["method"] == "CE"], t[t["method"] == "CE + post-hoc LA"]
    np.testing.assert_allclose(ce[["nc1", "nc3", "rho"]].to_numpy(), la[["nc1", "nc3", "rho"]].to_numpy())
    # the first seed's curves: one (epochs, losses) per method, evaluated every EVAL_EVERY epochs and at the end
    epochs = tiny.extras["epochs"]["digits"]
    x, y = tiny.curves()["CE"]
    assert len(tiny.curves()) == 10 and y.shape == (len(x), 10) and x[-1] == epochs
    assert list(x[:-1]) == list(range(2, epochs + 1, 2))[: len(x) - 1]
    assert tiny.extras["counts"]["digits"] == data.long_tailed_counts(40, 10, 5).tolist()
    assert set(tiny.extras["init"]["digits"]) == {"nc1", "nc2_w", "nc2_m", "nc3", "rho"}
    claims = tiny.claims()
    assert len(claims) == 7 and {c.kind for c in claims} == {"paper"}
    assert all(c.verdict in ("reproduced", "not reproduced", "not testable") for c in claims)
    assert sum(c.verdict == "not testable" for c in claims) == 1
    assert "CE" in tiny.formatted().index and " ± " in tiny.formatted().loc["CE", "overall"]
    assert "inverse + macro" in tiny._repr_markdown_() and "quick profile" in tiny._repr_markdown_()


def test_tiny_comparison_prints_its_cost_and_records_it(one_process, tmp_path, capsys):
    res = experiments.compare_reweighting(lambda counts, epochs: {"CE": lambda: torch.nn.CrossEntropyLoss()},
                                          seeds=[3], sizes=TINY, setting=experiments.reweighting_setting(profile="quick"),
                                          results=tmp_path, name="one run")
    out = capsys.readouterr().out
    assert "Next cell, one run: about" in out and "of it from here on." in out
    record = (tmp_path / "costs" / "quick" / "inverse_reweighting.json").read_text()
    assert '"one run"' in record and '"measured_s": null' not in record
    assert list(res.table["method"]) == ["CE", "CE + post-hoc LA"] and list(res.table["seed"]) == [3, 3]
    none = experiments.compare_reweighting(lambda counts, epochs: {"CE": lambda: torch.nn.CrossEntropyLoss()},
                                           seeds=[3], sizes=TINY, post_hoc=None, results=tmp_path,
                                           setting=experiments.reweighting_setting(profile="quick"))
    assert list(none.table["method"]) == ["CE"]
    # the same run gives the same numbers (the cost probe leaves every random state alone)
    pd.testing.assert_frame_equal(none.table, res.table.iloc[:1])


def test_the_run_is_the_run_of_train_fit_run(one_process, tmp_path):
    """The table's CE row is what ncbook.train.fit_run gives for the same model, data, recipe and seed."""
    from ncbook import metrics, train

    res = experiments.compare_reweighting(lambda counts, epochs: {"CE": lambda: torch.nn.CrossEntropyLoss()},
                                          seeds=[1], sizes=TINY, post_hoc=None, results=tmp_path,
                                          setting=experiments.reweighting_setting(profile="quick"))
    sp = data.load_digits(test_per_class=50, seed=0)
    counts = data.long_tailed_counts(40, 10, 5)
    keep = data.make_imbalanced(sp.y_train, counts, seed=0)
    epochs = max(1, 12 // max(1, int(counts.sum()) // 128))          # STEPS // steps per epoch
    out = train.fit_run(lambda: models.MLP(hidden=(8, 8)), lambda: torch.nn.CrossEntropyLoss(),
                        (sp.x_train[keep], sp.y_train[keep]), seed=1, epochs=epochs, batch_size=128, lr=0.05,
                        weight_decay=5e-3, nc_every=epochs, eval_every=0, evaluate_on={"test": (sp.x_test, sp.y_test)})
    acc = metrics.shot_accuracy(out["evaluations"]["test"]["logits"], sp.y_test, counts, many=20, few=10)
    assert res.table.loc[0, "overall"] == pytest.approx(acc["overall"], rel=1e-12)
    assert res.table.loc[0, "nc1"] == pytest.approx(out["history"].final["nc1"], rel=1e-9)


# --------------------------------------------------------------------------- verdicts from planted numbers
def _planted(values: dict, metric_values: dict | None = None, seeds=(0, 1, 2)) -> experiments.ReweightingComparison:
    """A result whose overall accuracy of each method is ``values[method] + small seed offsets``."""
    rows = []
    offsets = [-0.01, 0.0, 0.01]
    for m, v in values.items():
        for s, off in zip(seeds, offsets):
            geo = (metric_values or {}).get(m, 0.5)
            rows.append({"dataset": "digits", "method": m, "seed": s, "overall": v + off, "many": v, "medium": v,
                         "few": v, "nc1": geo, "nc2_w": geo, "nc2_m": geo + off / 10, "nc3": geo + off / 10,
                         "rho": geo + off / 10})
    setting = experiments.Setting("quick", "paper", {"SEEDS": list(seeds)}, "planted")
    return experiments.ReweightingComparison("inverse_reweighting", setting, pd.DataFrame(rows))


BASE = {"CE": 0.70, "CE + post-hoc LA": 0.80, "Inv-Freq": 0.78, "CB": 0.78, "Focal": 0.72, "LDAM-DRW": 0.80,
        "LA (loss)": 0.81, "IB": 0.77, "inverse": 0.79, "inverse + macro": 0.79, "inverse + macro, detached": 0.65}


def _verdicts(res):
    return {c.claim.split(":")[0][:40]: c.verdict for c in res.claims()}


def test_planted_numbers_flip_each_verdict():
    res = _planted(BASE)
    claims = res.claims()
    assert res.noise() == pytest.approx(2 * np.std([-0.01, 0.0, 0.01]))
    assert claims[0].verdict == "reproduced"                    # 0.09 above CE, noise 0.016
    assert claims[1].verdict == "not reproduced"                # level with Inv-Freq, CB
    assert claims[-1].verdict == "not reproduced"               # the ablation: level with "inverse"
    # the sentence and the record read one verdict
    assert res.verdict(PAPER_METHOD, "CE").word(("beats", "ties with", "trails")) == "beats"
    assert claims[0].ours == pytest.approx(res.verdict(PAPER_METHOD, "CE").value)
    flipped = _planted({**BASE, "CE": 0.785})                    # CE within the noise of the method
    assert flipped.claims()[0].verdict == "not reproduced"
    assert flipped.verdict(PAPER_METHOD, "CE").word(("beats", "ties with", "trails")) == "ties with"
    best = _planted({**BASE, "inverse + macro": 0.90})          # above every baseline and the ablation
    assert [c.verdict for c in best.claims()[:2]] == ["reproduced", "reproduced"]
    assert best.claims()[-1].verdict == "reproduced"


def test_planted_geometry_flips_the_nc_claims():
    lower = _planted(BASE, {"inverse + macro": 0.1})            # the method's NC2, NC3, rho far below every baseline
    nc = [c for c in lower.claims() if "than every baseline" in c.claim or "lowest loss imbalance" in c.claim]
    assert len(nc) == 3 and all(c.verdict == "reproduced" for c in nc) and nc == lower.claims()[3:6]
    assert all(len(c.ours) == len(lower.baselines()) for c in nc)
    assert lower.verdict(PAPER_METHOD, "CE", "nc3").outcome == "above"        # lower is better for NC metrics
    assert lower.ranking("rho")[0][0] == PAPER_METHOD
    one_lower = _planted(BASE, {"inverse + macro": 0.1, "Focal": 0.1})   # one baseline as low: not every one
    assert [c.verdict for c in one_lower.claims()[3:6]] == ["not reproduced"] * 3


def test_an_unstable_method_widens_only_its_own_comparisons():
    """Each comparison reads the seed spread of its own two methods: one unstable baseline (IB) does not raise
    the threshold of the others, nor of CE against the method."""
    res = _planted(BASE, {"inverse + macro": 0.1})
    table = res.table.copy()
    ib = table["method"] == "IB"
    table.loc[ib, "rho"] = [0.5 - 1.0, 0.5, 0.5 + 1.0]          # seed sd 0.82 instead of 0.008
    table.loc[ib, "overall"] = [0.77 - 0.2, 0.77, 0.77 + 0.2]
    unstable = experiments.ReweightingComparison("inverse_reweighting", res.setting, table)
    calm = 2 * np.std([-0.001, 0.0, 0.001])
    assert unstable.verdict(PAPER_METHOD, "CE", "rho").threshold == pytest.approx(calm)
    assert unstable.verdict(PAPER_METHOD, "IB", "rho").threshold == pytest.approx(2 * np.std([-1.0, 0.0, 1.0]))
    assert unstable.noise("rho") == pytest.approx(2 * np.std([-1.0, 0.0, 1.0]))   # every method: the widest
    rho = next(c for c in unstable.claims() if "lowest loss imbalance" in c.claim)
    bounds = dict(zip(unstable.baselines(), rho.tolerance["above"]))
    assert bounds["CE"] == pytest.approx(calm) and bounds["IB"] > 100 * calm
    assert rho.verdict == "not reproduced"                      # 0.4 below IB's mean, within IB's own spread
    table.loc[ib, "rho"] = [0.5 - 0.1, 0.5, 0.5 + 0.1]          # IB spread 0.08: the 0.4 gap is resolved
    steadier = experiments.ReweightingComparison("inverse_reweighting", res.setting, table)
    assert next(c for c in steadier.claims() if "lowest loss imbalance" in c.claim).verdict == "reproduced"
    assert unstable.claims()[0].verdict == "reproduced"         # against CE: IB's spread plays no part


def test_a_non_finite_metric_is_not_reproduced():
    res = _planted({**BASE, "CE": math.nan})
    assert res.verdict(PAPER_METHOD, "CE").outcome == "undefined"
    assert res.claims()[0].verdict == "not reproduced"


def test_checks_pass_on_the_chapters_values_and_fail_on_planted_ones():
    L = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    by_hand = {a: (L.mean() * L + a) / (L ** 2 + a) for a in (0.0, 1.0)}
    etf = torch.full((10,), 0.0497, dtype=torch.float64)
    good = experiments.inverse_reweighting_checks(etf_class_losses=etf, class_losses=L, weights_by_hand=by_hand,
                                                  gradient_gap=0.92)
    assert [c.verdict for c in good] == ["reproduced", "passed", "passed", "passed", "passed"]
    assert good[1].derived == pytest.approx([3.75, 1.875, 0.9375, 0.46875])
    bad = experiments.inverse_reweighting_checks(
        etf_class_losses=etf + torch.linspace(0, 1e-3, 10, dtype=torch.float64), class_losses=L,
        weights_by_hand={0.0: by_hand[0.0] * (1 + 1e-9)}, gradient_gap=1e-4)
    assert [c.verdict for c in bad] == ["not reproduced", "failed", "passed", "failed"]
    with pytest.raises(ValueError, match="gradient_gap must be a finite number"):
        experiments.inverse_reweighting_checks(etf_class_losses=etf, class_losses=L, weights_by_hand={},
                                               gradient_gap=float("nan"))


def test_quoted_results_fill_ours_from_a_saved_full_run(tmp_path):
    res = _planted(BASE)
    res.setting = experiments.Setting("full", "paper", {"SEEDS": [0, 1, 2]}, "planted")
    res.table = res.table.assign(dataset="cifar10")
    paths = res._save(tmp_path)
    assert len(paths) == 1
    table = experiments.quoted_reweighting_results(tmp_path)
    row = table[(table["data set"] == "CIFAR-10-LT IF 100") & (table["method"] == "LDAM-DRW")].iloc[0]
    assert row["ours"] == "80.00 ± 0.82" and row["quoted top-1 %"] == 77.03
    assert (table[table["recipe"] == "Wang et al."]["ours"] == "—").all()   # another recipe: never filled
    other = _planted({**BASE, "LDAM-DRW": 0.5})
    other.setting, other.table = res.setting, other.table.assign(dataset="cifar10")
    assert other._save(tmp_path, "alpha = 1 variant")[0].name == "cifar10-alpha1variant-summary-seed0.json"
    again = experiments.quoted_reweighting_results(tmp_path)      # another call's summary does not replace it
    assert again[again["method"] == "LDAM-DRW"]["ours"].iloc[0] == "80.00 ± 0.82"


# --------------------------------------------------------------------------- bad arguments
def test_bad_arguments_are_refused_with_their_names(one_process, tmp_path):
    quick = experiments.reweighting_setting(profile="quick")
    kw = dict(setting=quick, sizes=TINY, results=tmp_path)
    with pytest.raises(TypeError, match="methods must be callable"):
        experiments.compare_reweighting({"CE": None}, **kw)
    with pytest.raises(TypeError, match=r"methods\(counts, epochs\) must return a non-empty dict"):
        experiments.compare_reweighting(lambda counts, epochs: [], **kw)
    with pytest.raises(TypeError, match=r"methods\['CE'\] must be callable"):
        experiments.compare_reweighting(lambda counts, epochs: {"CE": 3}, **kw)
    with pytest.raises(ValueError, match="reserved for the post-hoc"):
        experiments.compare_reweighting(lambda counts, epochs: {"CE + post-hoc LA": torch.nn.CrossEntropyLoss}, **kw)
    with pytest.raises(ValueError, match="unknown key 'STEP'"):
        experiments.compare_reweighting(methods, setting=quick, sizes={"STEP": 3}, results=tmp_path)
    with pytest.raises(ValueError, match="seeds must be distinct"):
        experiments.compare_reweighting(methods, seeds=[0, 0], **kw)
    with pytest.raises(ValueError, match="seeds must hold at least one seed"):
        experiments.compare_reweighting(methods, seeds=[], **kw)
    with pytest.raises(ValueError, match="each seed"):
        experiments.compare_reweighting(methods, seeds=[-1], **kw)
    with pytest.raises(TypeError, match="setting must be an experiments.Setting"):
        experiments.compare_reweighting(methods, setting={"quick": 1})
    with pytest.raises(ValueError, match="head must be one of"):
        experiments.Method(torch.nn.CrossEntropyLoss, head="round")
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.reweighting_setting(profile="slow")


def test_result_views_refuse_unknown_names():
    res = _planted(BASE)
    with pytest.raises(ValueError, match="method must be one of"):
        res.verdict(PAPER_METHOD, "SGD")
    with pytest.raises(ValueError, match="metric must be one of"):
        res.values("CE", "loss")
    with pytest.raises(ValueError, match="dataset must be one of"):
        res.summary("cifar10")
    partial = _planted({k: v for k, v in BASE.items() if k not in PAPER_BASELINES})
    with pytest.raises(ValueError, match=r"the claims compare methods this result lacks: \['Inv-Freq'"):
        partial.claims()


# --------------------------------------------------------------------------- sizes come from the plan
@pytest.mark.parametrize("profile", profiles.PROFILES, ids=lambda p: f"{p}_plan")  # a bare "gpu" id marks a GPU test
def test_the_setting_is_the_plan(profile):
    s = experiments.reweighting_setting(profile=profile, scale="paper")
    assert s.sizes == profiles.PLANS["inverse_reweighting"].params[profile]
    smoke = experiments.reweighting_setting(profile=profile, scale="smoke")
    if profile == "quick":
        assert smoke.sizes == s.sizes                           # the quick profile ignores the smoke scale
    else:
        assert smoke.sizes["EPOCHS"] == 2 and smoke.sizes["SEEDS"] == [0] and smoke.sizes["DATASETS"] == s.sizes["DATASETS"]


def test_the_chapters_parameters_cell_reads_the_plan(monkeypatch):
    """Run as a reader's kernel runs it on a CUDA device: the gpu plan; with NCBOOK_PROFILE=full: the full plan."""
    cell = [c for c in jupytext.read(ROOT / "book" / "inverse_reweighting.md").cells
            if "parameters" in c.metadata.get("tags", [])][0]
    monkeypatch.delenv("NCBOOK_PROFILE", raising=False)
    monkeypatch.delenv("NCBOOK_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for profile in ("gpu", "full"):
        ns: dict = {}
        exec(compile(cell.source, "parameters", "exec"), ns)  # noqa: S102 - our own chapter
        assert ns["SETTING"].profile == profile and ns["SETTING"].sizes == profiles.PLANS["inverse_reweighting"].params[profile]
        monkeypatch.setenv("NCBOOK_PROFILE", "full")
    assert "if PROFILE" not in cell.source                      # no profile branches on the page


# --------------------------------------------------------------------------- torchrun
WORKER = '''
import pickle, sys, torch
from torch import nn
sys.path.insert(0, sys.argv[2])
from test_experiments_inverse_reweighting import methods
from ncbook import experiments, models, train
train.init_distributed()
torch.set_num_threads(1)

def small(dataset, num_classes):   # no BatchNorm: per-rank batch statistics would differ from one process's
    body = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.ReLU(), nn.Linear(32, 16))
    return models.FeatureClassifier(body, 16, num_classes)

# batches of 32 from the 96 stand-in images: 3 steps an epoch, 18 steps a run, every switch epoch passed; float32
# (bf16 autocast rounds a half batch's products differently from the whole batch's: bf16 keeps about 3 digits)
res = experiments.compare_reweighting(methods, model=small, sizes={"BATCH": 32, "EPOCHS": 6, "AMP": False},
                                      progress=False, results=sys.argv[3])
if train.is_main_process():
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    with open(sys.argv[1], "wb") as f:
        pickle.dump({"table": res.table, "world": world, "setting": res.setting.text}, f)
'''


def _launch(tmp_path, nproc: int, out: Path, data_dir: Path) -> dict:
    run_worker(tmp_path, WORKER, [out, ROOT / "tests", tmp_path / f"results{nproc}"], nproc=nproc, profile="gpu",
               data_dir=data_dir, checkpoints=tmp_path / f"checkpoints{nproc}", timeout=600)
    return load(out)


@pytest.mark.torchrun
def test_comparison_under_torchrun_gives_the_table_of_one_process(tmp_path):
    """The gpu profile's smoke scale (CIFAR stand-in, every method, 18 steps) with 2 gloo processes, each run on
    both ranks: the same rows and accuracies, and the training metrics equal to one process's up to float32
    round-off as the metrics amplify it.

    The two launches sum each global batch's gradient in a different order (two half-batches, then an all-reduce),
    so the parameters differ by float32 round-off, which the metrics amplify (NC1 through a pseudo-inverse, IB
    through its weights 1 / (influence + 1e-3)): up to 2e-5 here. The NC metrics and rho are of order 1 (their
    values at initialisation), so 1e-3 is a tolerance on their scale. With bf16 products (which round a half
    batch's products differently from the whole batch's) the same launches ended up to 0.5 apart in accuracy."""
    data_dir = tmp_path / "data"
    data.write_cifar_standin(data_dir)
    one = _launch(tmp_path, 1, tmp_path / "one.pt", data_dir)
    two = _launch(tmp_path, 2, tmp_path / "two.pt", data_dir)
    assert (one["world"], two["world"]) == (1, 2) and one["setting"] == two["setting"]
    a, b = one["table"], two["table"]
    assert len(a) == 11 and list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a[["dataset", "method", "seed"]], b[["dataset", "method", "seed"]])
    accuracy = ["overall", "many", "medium", "few"]
    np.testing.assert_allclose(b[accuracy].to_numpy(dtype=float), a[accuracy].to_numpy(dtype=float), rtol=0, atol=1e-12)
    geometry = ["nc1", "nc2_w", "nc2_m", "nc3", "rho"]
    diff = (b[geometry] - a[geometry]).abs()
    print("largest |2 processes - 1 process| per metric:", diff.max().round(6).to_dict())
    np.testing.assert_allclose(b[geometry].to_numpy(dtype=float), a[geometry].to_numpy(dtype=float), rtol=0, atol=1e-3)
