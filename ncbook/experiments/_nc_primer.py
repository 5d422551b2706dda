"""The primer's experiments: the balanced UFM fits, and the network whose last layer collapses (balanced, then STEP).

Letters (the book's notation): ``C`` classes, ``n`` training samples, ``n_c`` those of class ``c``, ``d`` the feature
dimension; ``W`` the classifier ``(C, d)`` with rows ``w_c``, ``M_bar`` the centred class means ``(C, d)`` (centred by
the plain mean of the class means); ``P = I_C - 11^T / C``; ``dist`` the scale-free Frobenius distance of two Grams;
``lambda`` the ridge weight of the UFM (``lambda_W = lambda_H``); ``R = n_max / n_min`` the imbalance ratio.

Two calls, each returning an :class:`~ncbook.experiments.ExperimentResult` with the claims it supports:

* :func:`primer_ufm` trains the regularised cross-entropy UFM of the chapter from several random starts at a small
  ridge weight, and once at a large one, by full-batch gradient descent (heavy-ball momentum) in float64, and
  tests what Zhu et al.'s Theorem 3.1 says of every global minimiser on them.
* :func:`primer_network` trains the profile's network with cross-entropy, SGD and weight decay on balanced data
  (the digits MLP at the quick profile, ResNet-32 on CIFAR-10 at the gpu and full ones) and measures NC1-NC4 along
  the way, against their values at initialisation; with ``imbalance="step"`` the same network and recipe on a
  STEP-imbalanced training set, for as many optimiser steps, compared with a balanced run.

The sizes per profile are ``ncbook.profiles.PLANS["nc_primer"]`` (:func:`primer_setting`). :func:`primer_network`
measures a few steps of its model before training and prints the estimate of both network runs
(:class:`ncbook.train.ChapterCost`, written to ``<results>/costs/<profile>/nc_primer.json``), trains through
:func:`~ncbook.experiments.run_jobs` (under ``torchrun`` every rank takes part in the run), shows a progress bar
over epochs and, at the gpu and full profiles, checkpoints every epoch under :func:`ncbook.checkpoint_dir` so that
a rerun resumes; the full profile also saves each run with :func:`ncbook.book.save_result`.

Every judgement the chapter prints and records reads one rule of :mod:`ncbook.experiments._verdicts`: a metric
against a threshold stated in advance (:func:`~ncbook.experiments.exceeds`: the threshold exceeds the metric).

References
----------
Papyan, Han, Donoho. Prevalence of neural collapse during the terminal phase of deep learning training. PNAS 2020,
arXiv:2008.08186 (NC1-NC4, abstract).
Zhu, Ding, Zhou, Li, You, Sulam, Qu. A geometric analysis of neural collapse with unconstrained features.
NeurIPS 2021, arXiv:2105.02375 (Theorem 3.1, and the strict saddles of the abstract).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from .. import data, geometry, metrics, models, profiles, train
from .._validation import (check_bool, check_callable, check_counts, check_in, check_instance, check_int,
                           check_nonnegative, check_path, check_positive)
from ._core import Claim, ExperimentResult, Setting, Stopwatch, run_jobs, torch_threads
from ._verdicts import exceeds

__all__ = ["PrimerNetwork", "PrimerUFM", "primer_model", "primer_network", "primer_setting", "primer_ufm"]

CHAPTER = "nc_primer"
#: The thresholds the Reproduction page tests the balanced network's NC metrics against. The paper states limits
#: (each metric tends to 0 as training goes on), not thresholds: these are this book's choice.
THRESHOLDS = {"nc1": 0.1, "nc2_m": 0.1, "nc3": 0.1, "nc4": 0.01}
#: The NC metrics a run's table holds (training set, the end of training).
NC_KEYS = ("nc1", "nc2_m", "nc2_w", "nc3", "nc4")
#: A UFM run counts as the theorem's geometry when NC1, NC2 (classifier and means) and NC3 are each below this.
UFM_SHAPE = 1e-3
#: The runs from several starts reach one objective value when their relative spread is below this.
UFM_SAME = 1e-9
#: ... and as the zero minimiser when the Frobenius norm of its classifier is below this.
UFM_ZERO = 1e-12
#: The UFM's optimiser: full-batch gradient descent with heavy-ball momentum, in float64.
UFM_FIT = {"optimizer": "gd", "lr": 0.5, "momentum": 0.9}
#: The stationarity certificate of a UFM run (gradient norm of the objective), as ``ncbook.ufm.train_ufm`` checks it.
UFM_TOL = 1e-6
#: Digits: test images per class (the rest, 1297 images, train).
DIGITS_TEST_PER_CLASS = 50
PAPYAN = "Papyan et al. 2020"
ZHU = "Zhu et al. 2021"
_SMOKE = {"EPOCHS": 2, "BATCH": 50, "STEP_MAJ": 20, "STEP_MIN": 4, "NC_EVERY": 1}
_RUN_NAMES = {None: "balanced network", "step": "STEP-imbalanced network"}


# ----------------------------------------------------------------------------- the setting
def _describe(s: dict) -> str:
    net = f"MLP 64-{s['WIDTH']}-{s['WIDTH']}-32" if s["DATASET"] == "digits" else "ResNet-32"
    subset = f" ({s['SUBSET']} subset)" if s.get("SUBSET") else ""
    return (f"{s['DATASET']}{subset}, {net}, {s['EPOCHS']} epochs of batches of {s['BATCH']} (balanced), SGD lr "
            f"{s['LR']:g}, weight decay {s['WD']:g}")


def _smoke(sizes: dict) -> dict:
    """The smoke scale: every code path of the gpu or full profile at tiny sizes (a test, not a result)."""
    return {**sizes, **_SMOKE}


def _check_sizes(sizes: dict) -> dict:
    """The sizes, each checked (the message names the size, what was expected and what arrived)."""
    s = dict(sizes)
    check_in("DATASET", s["DATASET"], ("digits", "cifar10"))
    check_in("SUBSET", s["SUBSET"], (None,) + data.SUBSETS)
    if s["DATASET"] == "digits":
        s["WIDTH"] = check_int("WIDTH", s.get("WIDTH", 512), 1)
    for key, low in (("EPOCHS", 1), ("BATCH", 2), ("NC_EVERY", 1), ("STEP_MAJ", 2), ("STEP_MIN", 1),
                     ("UFM_STEPS", 1), ("UFM_SEEDS", 1)):
        s[key] = check_int(key, s[key], low)
    if s["STEP_MIN"] >= s["STEP_MAJ"]:
        raise ValueError(f"STEP_MIN must be below STEP_MAJ (the minorities are the smaller classes); got STEP_MIN "
                         f"{s['STEP_MIN']} and STEP_MAJ {s['STEP_MAJ']}.")
    s["LR"], s["WD"] = check_positive("LR", s["LR"]), check_nonnegative("WD", s["WD"])
    s["AMP"] = check_bool("AMP", s["AMP"])
    return s


def primer_setting(*, profile: str | None = None, scale: str | None = None, **changes) -> Setting:
    """The profile, scale and sizes of the primer's experiments (from :data:`ncbook.profiles.PLANS`).

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile` (``NCBOOK_PROFILE``; ``"gpu"`` on a CUDA device, else ``"quick"``).
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`. The smoke scale shrinks the gpu and full profiles to 2 epochs of batches of 50
        and STEP classes of 20 and 4 images (every code path kept); the quick profile ignores it.
    **changes
        Sizes to change, by their plan name in lower or upper case: ``epochs`` (passes over the balanced training
        set), ``batch``, ``lr``, ``wd`` (weight decay), ``width`` (the digits MLP's hidden width), ``nc_every``
        (epochs between the NC measurements of the balanced run), ``amp`` (bf16 autocast where the device has it,
        see :func:`ncbook.train.fit`; the quick profile trains in float32 on every CPU), ``step_maj`` and
        ``step_min`` (the STEP run's class sizes), ``ufm_steps`` and ``ufm_seeds`` (the UFM fits), ``dataset``,
        ``subset``.

    Returns
    -------
    Setting
        ``sizes`` holds the plan's upper-case names; ``text`` one line for the records.

    Raises
    ------
    ValueError, TypeError
        For an unknown profile, scale or size name, or a size of the wrong type or out of its range.

    Examples
    --------
    >>> s = primer_setting(profile="quick", epochs=50)
    >>> s.sizes["EPOCHS"], s.sizes["STEP_MAJ"], s.text
    (50, 120, 'digits, MLP 64-256-256-32, 50 epochs of batches of 128 (balanced), SGD lr 0.05, weight decay 0.005')
    """
    setting = Setting.active(profiles.PLANS[CHAPTER].params, _describe, profile=profile, scale=scale, smoke=_smoke)
    also = ("WIDTH",) if setting.sizes["DATASET"] == "digits" else ()
    return setting.changed(changes, what="the primer's experiments", check=_check_sizes, text=_describe, also=also)


def _setting(setting) -> Setting:
    if setting is None:
        return primer_setting()
    check_instance("setting", setting, Setting, what="as primer_setting returns")
    return Setting(setting.profile, setting.scale, _check_sizes(setting.sizes), setting.text)


# ----------------------------------------------------------------------------- the UFM fits
class PrimerUFM(ExperimentResult):
    """The UFM fits of :func:`primer_ufm`.

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row per run: ``ridge`` ("small" or "large"), ``seed``, ``lam`` (``lambda_W = lambda_H``), the final
        ``nc1``, ``nc2_w``, ``nc2_m``, ``nc3`` (NaN for the zero minimiser, where they are undefined), ``norm_w``
        (``||W||_F``), ``objective``, ``grad_norm`` (the stationarity certificate) and ``status``.
    histories : dict
        ``seed -> history`` of the small-ridge runs (``step``, ``w_etf`` = dist(W W^T, P), ``m_etf`` = dist of the
        uncentred class means' Gram to ``P``, ``loss``...: :func:`ncbook.ufm.train_ufm`'s).
    extras : dict
        ``counts``, ``dim``, ``lam``, ``large_lam``, ``fit`` (the optimiser's keyword arguments, with ``steps``),
        ``first`` (the first small-ridge run, a :class:`ncbook.ufm.CEUFMResult`).
    """

    @property
    def first(self):
        """The first small-ridge run (:class:`ncbook.ufm.CEUFMResult`): its ``W``, ``H``, ``labels``, ``history``."""
        return self.extras["first"]

    @property
    def fit_options(self) -> dict:
        """The keyword arguments of :func:`ncbook.ufm.train_ufm` every run used (optimiser, step size, momentum, steps)."""
        return dict(self.extras["fit"])

    def _small(self):
        return self.table[self.table["ridge"] == "small"]

    def verdicts(self) -> dict:
        """``"etf"``: every small-ridge run is certified stationary and at the theorem's geometry (each of the largest
        gradient norm, NC1, NC2 of the classifier and of the means and NC3 over the runs below its bound; the
        outcome ``"above"`` of :func:`~ncbook.experiments.exceeds` applied to bound minus value reads "holds").
        ``"same_value"``: the small-ridge runs end at one objective value (largest minus smallest, relative to their
        mean, below :data:`UFM_SAME`). ``"zero"``: the large-ridge run ends at ``W = 0`` (``||W||_F`` below
        :data:`UFM_ZERO`)."""
        small = self._small()
        worst = [float(small[k].max()) for k in ("grad_norm", "nc1", "nc2_w", "nc2_m", "nc3")]
        bounds = [UFM_TOL] + [UFM_SHAPE] * 4
        margin = min(b - v for v, b in zip(worst, bounds))
        large = self.table[self.table["ridge"] == "large"]
        return {"etf": exceeds(margin, 0.0), "same_value": exceeds(UFM_SAME, self.objective_spread),
                "zero": exceeds(UFM_ZERO, float(large["norm_w"].max()))}

    @property
    def objective_spread(self) -> float:
        """Largest minus smallest final objective of the small-ridge runs, relative to their mean."""
        obj = self._small()["objective"]
        return float((obj.max() - obj.min()) / obj.mean())

    def claims(self) -> list[Claim]:
        small = self._small()
        c, n_c = len(self.extras["counts"]), int(self.extras["counts"][0])
        where = (f"UFM, C = {c}, {n_c} per class, d = {self.extras['dim']}, gradient descent with momentum "
                 f"{self.extras['fit']['momentum']:g}, {self.extras['fit']['steps']} steps, float64")
        worst = [float(small[k].max()) for k in ("grad_norm", "nc1", "nc2_w", "nc2_m", "nc3")]
        large = self.table[self.table["ridge"] == "large"]
        return [
            Claim("paper", f"Balanced regularised CE UFM with d >= C - 1 and small lambda: every global minimiser is a "
                  f"simplex ETF with self-dual classifier. From {len(small)} random starts, gradient descent ends at "
                  "certified critical points (gradient norm of the objective below 1e-6) whose NC1, classifier NC2, "
                  "class-mean NC2 and NC3 are each below 1e-3: the largest of each over the runs, in that order",
                  ours=worst, tolerance={"below": [UFM_TOL] + [UFM_SHAPE] * 4},
                  paper="the only global minimizers are the Simplex ETFs while all other critical points are strict "
                        "saddles",
                  source=f"{ZHU}, Theorem 3.1 (global optimality) and abstract",
                  setting=f"{where}, lambda = {self.extras['lam']:g}, seeds {sorted(int(s) for s in small['seed'])}"),
            Claim("check", "The same runs reach one objective value: largest minus smallest final objective over the "
                  "random starts, relative to their mean",
                  ours=self.objective_spread, tolerance={"below": UFM_SAME},
                  setting=f"{where}, lambda = {self.extras['lam']:g}"),
            Claim("check", "Above the ridge at which zero wins (derived in the chapter's fourth exercise), gradient "
                  "descent ends at the zero minimiser W = H = 0: ||W||_F at the end",
                  ours=float(large["norm_w"].max()), tolerance={"below": UFM_ZERO},
                  setting=f"{where}, lambda = {self.extras['large_lam']:g}"),
        ]


def primer_ufm(setting: Setting | None = None, *, counts=(10, 10, 10, 10), dim: int = 8, lam: float = 5e-3,
               large_lam: float = 0.5, seed: int = 0) -> PrimerUFM:
    """Train the balanced regularised cross-entropy UFM from ``UFM_SEEDS`` random starts at ``lam``, and once at
    ``large_lam``; test on them what Zhu et al.'s Theorem 3.1 says of every global minimiser.

    Each run is :func:`ncbook.ufm.train_ufm` with ``lambda_W = lambda_H``, full-batch gradient descent with heavy-ball
    momentum (:data:`UFM_FIT`) for ``UFM_STEPS`` steps in float64, from ``N(0, 0.1^2)`` entries drawn with its seed;
    its final NC1-NC3 come from :func:`ncbook.metrics.neural_collapse`. A run takes a fraction of a second.

    Parameters
    ----------
    setting : Setting, optional
        From :func:`primer_setting` (its ``UFM_STEPS`` and ``UFM_SEEDS``); default the active profile's.
    counts : sequence of int
        Samples per class ``n_c``, all equal (the theorem's balanced classes), ``C >= 2``.
    dim : int, >= C - 1
        The feature dimension ``d``.
    lam : float, > 0
        The small ridge weight.
    large_lam : float, > lam
        The large ridge weight (above the threshold at which ``W = H = 0`` wins).
    seed : int, >= 0
        The first seed; the runs use ``seed, seed + 1, ...``; the large-ridge run uses ``seed``.

    Returns
    -------
    PrimerUFM

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of its range (named in the message), unequal counts or
        ``dim < C - 1``.

    Examples
    --------
    >>> fits = primer_ufm(primer_setting(profile="quick", ufm_seeds=2))
    >>> list(fits.table["ridge"]), [c.verdict for c in fits.claims()]
    (['small', 'small', 'large'], ['reproduced', 'passed', 'passed'])
    """
    from ..ufm import train_ufm

    clock = Stopwatch()
    setting = _setting(setting)
    counts = check_counts(counts, min_classes=2)
    if np.any(counts != counts[0]):
        raise ValueError(f"counts must be equal (the theorem's balanced classes); got {counts.tolist()}.")
    dim = check_int("dim", dim, len(counts) - 1, what="the feature dimension d >= C - 1")
    lam, large_lam = check_positive("lam", lam), check_positive("large_lam", large_lam)
    if large_lam <= lam:
        raise ValueError(f"large_lam must exceed lam; got large_lam {large_lam!r} and lam {lam!r}.")
    seed = check_int("seed", seed, 0)
    steps = setting.sizes["UFM_STEPS"]
    fit = {**UFM_FIT, "steps": steps}
    rows, histories, first = [], {}, None
    runs = [("small", seed + k, lam) for k in range(setting.sizes["UFM_SEEDS"])] + [("large", seed, large_lam)]
    for ridge, s, lam_r in runs:
        res = train_ufm(counts, dim, lam_w=lam_r, lam_h=lam_r, record_every=max(steps // 100, 1), seed=s, tol=UFM_TOL,
                        **fit)
        norm_w = float(res.W.norm())
        if ridge == "small":
            nc = metrics.neural_collapse(res.H, res.labels, res.W)
            histories[s] = res.history
            first = first or res
        else:   # W = H = 0: the class means coincide and the NC metrics are undefined
            nc = dict.fromkeys(("nc1", "nc2_w", "nc2_m", "nc3"), math.nan)
        rows.append({"ridge": ridge, "seed": s, "lam": lam_r, **{k: float(nc[k]) for k in ("nc1", "nc2_w", "nc2_m", "nc3")},
                     "norm_w": norm_w, "objective": float(res.objective), "grad_norm": float(res.grad_norm),
                     "status": res.status})
    import pandas as pd

    table = pd.DataFrame(rows, columns=["ridge", "seed", "lam", "nc1", "nc2_w", "nc2_m", "nc3", "norm_w", "objective",
                                        "grad_norm", "status"])
    extras = {"counts": counts.tolist(), "dim": dim, "lam": lam, "large_lam": large_lam, "fit": fit, "first": first}
    return PrimerUFM(CHAPTER, setting, table, histories, clock.seconds, extras)


# ----------------------------------------------------------------------------- the network
def _digits_mlp(num_classes: int, width: int) -> models.MLP:
    return models.MLP(64, (width, width), 32, num_classes)


def _resnet(num_classes: int) -> models.ResNetCIFAR:
    return models.resnet32(num_classes)


def primer_model(setting: Setting | None = None) -> Callable[[int], torch.nn.Module]:
    """The profile's network as a factory ``model(num_classes) -> nn.Module``: the digits MLP 64-WIDTH-WIDTH-32 with
    BatchNorm and a bias-free linear head (quick), or ResNet-32 (gpu, full).

    Examples
    --------
    >>> net = primer_model(primer_setting(profile="quick"))(10)
    >>> type(net).__name__, net.classifier.weight.shape, net.classifier.bias
    ('MLP', torch.Size([10, 32]), None)
    """
    s = _setting(setting).sizes
    return functools.partial(_digits_mlp, width=s["WIDTH"]) if s["DATASET"] == "digits" else _resnet


@dataclass(frozen=True)
class _Data:
    train: tuple
    test: tuple
    augment: Callable | None


def _load(s: dict, seed: int) -> _Data:
    if s["DATASET"] == "digits":
        split = data.load_digits(test_per_class=DIGITS_TEST_PER_CLASS, seed=seed)
        return _Data((split.x_train, split.y_train), (split.x_test, split.y_test), None)
    root = profiles.data_root()
    tr = data.cifar_tensors("cifar10", root, train=True, download=True, subset=s["SUBSET"])   # offline: a clear error
    te = data.cifar_tensors("cifar10", root, train=False, download=True, subset=s["SUBSET"])
    return _Data(tr, te, data.cifar_augment)


def _step_counts(s: dict) -> np.ndarray:
    return data.long_tailed_counts(s["STEP_MAJ"], 10, s["STEP_MAJ"] / s["STEP_MIN"], "step", minority_fraction=0.5)


def _geometry(model, x, y, *, initial: bool = False) -> dict:
    """The NC metrics, accuracy, classifier and centred class means of ``model`` on ``(x, y)`` (float64 copies)."""
    ev = train.evaluate(model, x, y)
    w = model.classifier.weight.detach().cpu().double()
    bias = None if model.classifier.bias is None else model.classifier.bias.detach().cpu().double()
    nc = metrics.neural_collapse(ev["features"], ev["labels"], w, bias=bias)
    out = {k: float(nc[k]) for k in NC_KEYS} | {"acc": float(ev["acc"])}
    if not initial:
        out |= {"classifier": w, "centred_means": metrics.centered_means(ev["features"].double(), ev["labels"])}
    return out


def _job(*, model, train_set, test, seed: int, fit_options: dict, device: str, checkpoint=None) -> dict:
    """One run (in this process, a worker, or on every rank under torchrun): train, then keep what the result reads.

    On a CPU it runs on one thread (a worker process does anyway), so that its numbers do not depend on where it ran.
    """
    with torch_threads(1 if torch.device(device).type == "cpu" else torch.get_numtorch_threads()):
        torch.manual_seed(seed)
        net = model()
        history = train.fit(net, F.cross_entropy, train_set, seed=seed, test=test, device=device,
                            checkpoint_dir=checkpoint, **fit_options)
        final = _geometry(net, *train_set)
    return {"history": history, **final}


def _probe(make, d: _Data, s: dict, device) -> train.Throughput:
    """A few timed steps of the model (16 of them for the digits MLP, a few milliseconds each, so that one pause of a
    shared CPU does not dominate; 4 for a ResNet), on one thread on a CPU, as the run trains."""
    steps = (4, 20) if s["DATASET"] == "digits" else (2, 6)
    with torch_threads(1 if device.type == "cpu" else torch.get_numtorch_threads()):
        return train.measure_fit(make, F.cross_entropy, d.train, batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"],
                                 augment=d.augment, amp=s["AMP"], device=device, steps=steps)


def _evals(epochs: int, every: int) -> int:
    """Evaluations of a ``fit`` with ``nc_every=every`` and ``eval_every=every`` (every ``every`` epochs and the last)."""
    return -(-epochs // every)


def _plan_runs(s: dict, d: _Data, seed: int) -> dict:
    """The two runs' training sets and lengths: the balanced set for ``EPOCHS`` epochs, the STEP subset (drawn with
    ``seed``) for as many optimiser steps."""
    x, y = d.train
    n = len(y)
    counts = _step_counts(s)
    keep = data.make_imbalanced(y, counts, seed=seed)
    n_step = int(keep.numel())
    return {None: {"train": (x, y), "epochs": s["EPOCHS"], "nc_every": s["NC_EVERY"], "counts": [n // 10] * 10,
                   "evals": _evals(s["EPOCHS"], s["NC_EVERY"])},
            "step": {"train": (x[keep], y[keep]), "epochs": s["EPOCHS"] * n // n_step, "nc_every": 0,
                     "counts": [int(c) for c in counts], "evals": 1}}


_COSTS: dict = {}


def _chapter_cost(results, checkpoints, make, d: _Data, s: dict, plan: dict, device):
    """One ChapterCost per profile, scale, results folder and sizes in this process: the first call measures the model
    and adds both network runs' estimates, so that the announcement before the balanced run states the chapter's."""
    key = (profiles.profile(), profiles.scale(), None if results is None else str(results),
           tuple(sorted((k, repr(v)) for k, v in s.items())))
    if key not in _COSTS:
        tp = _probe(make, d, s, device)
        cost = train.ChapterCost(CHAPTER, results=results, checkpoints=checkpoints)
        n_test = len(d.test[1])
        for imbalance, run in plan.items():
            n = len(run["train"][1])
            seconds = train.fit_seconds(tp, n=n, epochs=run["epochs"], batch_size=s["BATCH"], n_eval=n + n_test,
                                        evals=run["evals"]) + n * tp.eval_seconds       # + the final train evaluation
            cost.add(_RUN_NAMES[imbalance], seconds, tp)
        _COSTS[key] = cost
    return _COSTS[key]


class PrimerNetwork(ExperimentResult):
    """One network run of :func:`primer_network` (balanced, or STEP-imbalanced against a balanced reference).

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row: ``run`` ("balanced" or "STEP"), ``dataset``, ``n_train``, ``epochs``, ``steps`` (optimiser steps),
        ``train_acc``, ``test_acc``, the final training-set ``nc1``, ``nc2_m``, ``nc2_w``, ``nc3``, ``nc4``,
        ``acc_majority`` and ``acc_minority`` (mean test accuracy of the first and the last five classes),
        ``norm_ratio`` (mean ``||w_c||`` of the last five classes over that of the first five), ``cos_majority`` and
        ``cos_minority`` (mean cosine of two classifier rows among the first five, among the last five classes).
    histories : dict
        ``{run: ncbook.train.History}``: per evaluated epoch ``train_acc``, ``test_acc`` and, on NC epochs,
        ``nc1`` ... ``nc4`` (the balanced run measures them every ``NC_EVERY`` epochs; the STEP run at the end only).
    extras : dict
        ``initial`` (the NC metrics and training accuracy ``acc`` at initialisation), ``classifier`` (``W``,
        float64, ``(C, d)``), ``centred_means`` (``M_bar``, float64, ``(C, d)``), ``class_acc`` (test, per class),
        ``counts`` (training samples per class), ``reference`` (the balanced run a STEP run is compared with).
    """

    @property
    def run(self) -> str:
        return str(self.table["run"].iloc[0])

    @property
    def history(self):
        """The run's :class:`ncbook.train.History`."""
        return self.histories[self.run]

    @property
    def final(self) -> dict:
        """The run's table row as a dict."""
        return self.table.iloc[0].to_dict()

    @property
    def initial(self) -> dict:
        """NC1-NC4 and the training accuracy ``acc`` of the network at initialisation (the scale of the metrics)."""
        return dict(self.extras["initial"])

    @property
    def reference(self) -> "PrimerNetwork | None":
        return self.extras.get("reference")

    def cosines(self, of: str = "classifier") -> np.ndarray:
        """The ``(C, C)`` cosine matrix of the classifier rows (``of="classifier"``) or of the centred class means
        (``"means"``)."""
        check_in("of", of, ("classifier", "means"))
        x = self.extras["classifier" if of == "classifier" else "centred_means"]
        return np.asarray(geometry.cosine_matrix(x), dtype=np.float64)

    def verdicts(self) -> dict:
        """Every judgement the chapter prints and records, by name.

        Balanced: ``"nc1"``, ``"nc2_m"``, ``"nc3"``, ``"nc4"``, each :func:`~ncbook.experiments.exceeds` of the
        threshold over the metric (outcome "above": the metric is below its threshold). STEP with a reference:
        ``"away"``, the classifier's distance to the ETF Gram (NC2 of ``W``) against the reference's ("above": farther).
        """
        row = self.final
        if self.run == "balanced":
            return {k: exceeds(t, row[k]) for k, t in THRESHOLDS.items()}
        if self.reference is None:
            return {}
        return {"away": exceeds(row["nc2_w"], self.reference.final["nc2_w"])}

    @property
    def missed(self) -> list:
        """The metrics of a balanced run that miss their threshold (in the order NC1, NC2 of the means, NC3, NC4)."""
        names = {"nc1": "NC1", "nc2_m": "NC2 of the means", "nc3": "NC3", "nc4": "NC4"}
        return [names[k] for k, v in self.verdicts().items() if k in names and not v.holds]

    def verdict_text(self) -> str:
        """A balanced run's verdict in words: all four pass, or which miss their thresholds."""
        missed = self.missed
        if not missed:
            return "all four pass: the paper's NC1-NC4 are reproduced at this scale"
        one = len(missed) == 1
        return (f"{', '.join(missed)} {'misses its threshold' if one else 'miss their thresholds'}: not reproduced for "
                f"{'it' if one else 'them'} at this scale")

    def moved(self) -> dict:
        """A STEP run against its balanced reference: by what factor (>= 1, either direction) each of the classifier's
        distance to the ETF, the centred means' distance and the last five classes' test accuracy changed."""
        ref = self.reference
        if ref is None:
            raise ValueError("moved() compares a STEP run with its balanced reference; call primer_network(..., "
                             "imbalance='step', reference=<the balanced result>).")
        a, b = self.final, ref.final
        ratios = {"the classifier's distance to the ETF": a["nc2_w"] / b["nc2_w"],
                  "the class means' distance to the ETF": a["nc2_m"] / b["nc2_m"],
                  "the test accuracy of the last five classes": b["acc_minority"] / max(a["acc_minority"], 1e-12)}
        return {k: max(v, 1 / v) for k, v in ratios.items()}

    def claims(self) -> list[Claim]:
        row, where = self.final, self.extras["where"]
        v = self.verdicts()
        if self.run == "balanced":
            source = f"{PAPYAN}, abstract"
            return [
                Claim("paper", "NC1: within-class variability collapses (NC1 = tr(Sigma_W Sigma_B^+) / C at the end of "
                      "training)",
                      paper="cross-example within-class variability of last-layer training activations collapses to zero",
                      source=f"{source}, statement (NC1)", ours=row["nc1"], tolerance={"below": v["nc1"].value},
                      setting=where),
                Claim("paper", "NC2: the centred class means approach a simplex ETF (scale-free Gram distance)",
                      paper="the class means collapse to the vertices of a simplex equiangular tight frame (ETF)",
                      source=f"{source}, statement (NC2)", ours=row["nc2_m"], tolerance={"below": v["nc2_m"].value},
                      setting=where),
                Claim("paper", "NC3: classifier and centred class means become self-dual (the 'papyan' variant: distance "
                      "between W and the centred means, each divided by its Frobenius norm)",
                      paper="up to rescaling, the last-layer classifiers collapse to the class means",
                      source=f"{source}, statement (NC3)", ours=row["nc3"], tolerance={"below": v["nc3"].value},
                      setting=where),
                Claim("paper", "NC4: the network agrees with the nearest-class-mean rule (fraction of training samples "
                      "that differ)",
                      paper="the classifier's decision collapses to choosing whichever class has the closest train class "
                            "mean (the nearest class center rule)",
                      source=f"{source}, statement (NC4)", ours=row["nc4"], tolerance={"below": v["nc4"].value},
                      setting=where),
            ]
        if "away" not in v:
            return []
        return [Claim("check", "STEP imbalance moves the classifier away from the simplex ETF: the classifier's "
                      "scale-free Gram distance to the ETF (NC2 of W) in the STEP-imbalanced run, above the balanced "
                      "run's with the same network and recipe",
                      ours=row["nc2_w"], tolerance={"above": v["away"].threshold}, setting=where)]


def primer_network(setting: Setting | None = None, *, imbalance: str | None = None,
                   reference: PrimerNetwork | None = None, seed: int = 0, model: Callable | None = None,
                   results=None, checkpoints="auto", progress: bool | None = None) -> PrimerNetwork:
    """Train the profile's network with cross-entropy, SGD and weight decay; measure its last layer against NC1-NC4.

    The balanced run trains on the whole training set for ``EPOCHS`` epochs and measures NC1-NC4 on the training
    set every ``NC_EVERY`` epochs (and the training and test accuracy then). With ``imbalance="step"`` the same network
    and recipe train on a STEP-imbalanced subset (five classes of ``STEP_MAJ`` images, five of ``STEP_MIN``, drawn with
    ``seed``) for as many optimiser steps as the balanced run, and are measured at the end. Both use SGD with momentum
    0.9, the cosine schedule and ``amp`` as the setting says; the network is built after ``torch.manual_seed(seed)``,
    so a run's numbers depend on its seed alone (on a CPU it trains on one thread).

    The first call in a process measures a few steps of the model on this device and adds both runs' estimates to the
    chapter's cost record; each call prints the estimate of its run before training and records what it took.

    Parameters
    ----------
    setting : Setting, optional
        From :func:`primer_setting` (default: the active profile's).
    imbalance : {None, "step"}
        ``None``: the balanced run; ``"step"``: the STEP-imbalanced one (imbalance ratio ``STEP_MAJ / STEP_MIN``).
    reference : PrimerNetwork, optional
        For a STEP run: the balanced result to compare with (its claims and :meth:`PrimerNetwork.moved` need it).
    seed : int, >= 0
        Seeds the digits test split, the STEP subset, the initialisation and the batch order.
    model : callable, optional
        ``model(num_classes) -> nn.Module`` (an :mod:`ncbook.models` classifier); default :func:`primer_model`.
    results : path, optional
        Where the cost record (and, at the full profile, the run) go; default :func:`ncbook.results_dir`.
    checkpoints : path, None or "auto"
        Folder of the run's checkpoints; ``"auto"``: ``ncbook.checkpoint_dir("nc_primer")`` at the gpu and full
        profiles (a rerun resumes there), none at the quick one.
    progress : bool, optional
        A bar over epochs; default :func:`ncbook.profiles.show_progress`.

    Returns
    -------
    PrimerNetwork

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of its range (named in the message), a reference that is not a
        balanced run of the same setting, or a loss that stops being finite (the trainer's message).
    ncbook.data.DatasetUnavailableError
        At the gpu or full profile without the CIFAR files (offline: the message says where to put them).

    Examples
    --------
    Skipped as doctests: they train networks (``tests/test_experiments_nc_primer.py`` runs the same calls).

    >>> import tempfile
    >>> tiny = primer_setting(profile="quick", epochs=3, width=16)                            # doctest: +SKIP
    >>> balanced = primer_network(tiny, progress=False, results=tempfile.mkdtemp())          # doctest: +SKIP
    >>> step = primer_network(tiny, imbalance="step", reference=balanced, progress=False)    # doctest: +SKIP
    >>> list(balanced.table["run"]), list(step.table["run"])                                 # doctest: +SKIP
    (['balanced'], ['STEP'])
    """
    clock = Stopwatch()
    setting = _setting(setting)
    s = setting.sizes
    check_in("imbalance", imbalance, (None, "step"))
    if reference is not None:
        check_instance("reference", reference, PrimerNetwork, what="the balanced result of primer_network")
        if imbalance != "step" or reference.run != "balanced" or reference.setting.sizes != s:
            raise ValueError("reference must be the balanced run of the same setting, given to a STEP run "
                             "(primer_network(setting, imbalance='step', reference=balanced)).")
    seed = check_int("seed", seed, 0)
    check_callable("model", model, allow_none=True)
    check_path("results", results, allow_none=True)
    progress = profiles.show_progress() if check_bool("progress", progress, allow_none=True) is None else progress
    if checkpoints == "auto":
        checkpoints = None if setting.profile == "quick" else profiles.checkpoint_dir(CHAPTER)
    check_path("checkpoints", checkpoints, allow_none=True)
    main = train.is_main_process()
    if results is None and main:
        results = profiles.results_dir()
    device = profiles.default_device()
    build = model or primer_model(setting)
    make = functools.partial(build, 10)
    d = _load(s, seed)
    plan = _plan_runs(s, d, seed)
    run = plan[imbalance]
    name = _RUN_NAMES[imbalance]

    with torch_threads(1 if device.type == "cpu" else torch.get_numtorch_threads()):
        torch.manual_seed(seed)
        initial = _geometry(make().to(device), *run["train"], initial=True) if imbalance is None else None
    # every rank measures (under torchrun the probe's fit is a distributed run too); rank 0 prints and records
    cost = _chapter_cost(results if main else None, checkpoints, make, d, s, plan, device)
    if main:
        cost.announce(name, time_next_cell=False)   # the call times its own run
    fit_options = dict(epochs=run["epochs"], batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"],
                       nc_every=run["nc_every"], eval_every=run["nc_every"], augment=d.augment, amp=s["AMP"],
                       progress=progress and main)
    folder = None if checkpoints is None else os.path.join(os.fspath(checkpoints), "balanced" if imbalance is None
                                                           else "step")
    training = Stopwatch()
    [out] = run_jobs(_job, [dict(model=make, train_set=run["train"], test=d.test, seed=seed, fit_options=fit_options,
                                 device=str(device), checkpoint=folder)], progress=False, workers=1)
    if main:
        cost.record(name, training.seconds)
    result = _network_result(setting, imbalance, run, out, d, initial, reference, clock)
    if setting.profile == "full" and main:
        _save(result, results, seed)
    return result


def _network_result(setting, imbalance, run, out, d: _Data, initial, reference, clock) -> PrimerNetwork:
    import pandas as pd

    hist = out["history"]
    w = out["classifier"]
    norms = w.norm(dim=1)
    cos = np.asarray(geometry.cosine_matrix(w), dtype=np.float64)
    pairs = lambda lo, hi: [cos[a, b] for a in range(lo, hi) for b in range(a + 1, hi)]  # noqa: E731
    class_acc = [float(a) for a in hist.final["class_acc"]]
    n = len(run["train"][1])
    steps = run["epochs"] * (n // setting.sizes["BATCH"] if n >= setting.sizes["BATCH"] else 1)
    label = "balanced" if imbalance is None else "STEP"
    row = {"run": label, "dataset": setting.sizes["DATASET"], "n_train": n, "epochs": run["epochs"], "steps": steps,
           "train_acc": float(out["acc"]), "test_acc": float(hist.final["test_acc"]),
           **{k: float(out[k]) for k in NC_KEYS},
           "acc_majority": float(np.nanmean(class_acc[:5])), "acc_minority": float(np.nanmean(class_acc[5:])),
           "norm_ratio": float(norms[5:].mean() / norms[:5].mean()),
           "cos_majority": float(np.mean(pairs(0, 5))), "cos_minority": float(np.mean(pairs(5, 10)))}
    table = pd.DataFrame([row])
    counts = run["counts"]
    where = (f"{setting.text}; " + ("balanced training set" if imbalance is None else
                                    f"STEP-imbalanced training set ({counts[0]} and {counts[-1]} per class, "
                                    f"{run['epochs']} epochs: as many steps)") + ", training-set metrics")
    extras = {"initial": initial, "classifier": w, "centred_means": out["centred_means"], "class_acc": class_acc,
              "counts": counts, "reference": reference, "where": where}
    return PrimerNetwork(CHAPTER, setting, table, {label: hist}, clock.seconds, extras)


def _save(result: PrimerNetwork, folder, seed: int) -> None:
    from ..book import save_result

    s = result.setting.sizes
    row = result.final
    tag = "balanced" if result.run == "balanced" else f"step-r{s['STEP_MAJ'] // s['STEP_MIN']}"
    config = dict(epochs=int(row["epochs"]), batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"],
                  model="ResNet-32" if s["DATASET"] != "digits" else f"MLP 64-{s['WIDTH']}-{s['WIDTH']}-32",
                  augment="crop+flip" if s["DATASET"] != "digits" else None, schedule="cosine",
                  scale=result.setting.scale)
    save_result(folder, chapter=CHAPTER, setting=f"{s['DATASET']}-{tag}", seed=seed,
                wall_seconds=float(sum(result.history["seconds"])),
                metrics={k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
                config=config)
