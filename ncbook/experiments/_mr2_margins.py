"""The MR2 chapter's experiments: hard classes under cross-entropy, then MR2 against its baselines.

Zhu, Zhao, Cui, Sun, Zhou, Yang and Zhang, "Reducing Class-Wise Performance Disparity via Margin
Regularization" (MR2), ICLR 2026, arXiv:2602.00205.

Letters (the book's notation): ``C`` classes, ``n`` training samples, ``d`` the feature dimension,
``sigma_c^2`` the spread of class ``c`` (mean squared distance of its features from their mean),
``||mu_c||^2`` its squared mean norm, ``gamma_c`` its MR2 margin, ``gamma_bar`` their mean (the paper's
and the code's ``c_bar``), ``lambda_rep`` the weight of the representation loss.

Two calls, in the order the chapter needs them:

* :func:`mr2_baseline` trains cross-entropy (CE) over the seeds of the profile (and, on digits, one
  more run without the pixel noise) and measures, on the test features of the first seed, how each
  class's spread relates to its accuracy. It fixes the easy/medium/hard split of the classes.
* :func:`compare_mr2` trains the methods against that baseline -- LDAM-style fixed additive margins and
  MR2 with the logit margins only, the representation loss only and both -- over the same seeds,
  then the ablations of the mean margin and of the EMA decay (one seed each) and a cosine head with
  CE and with MR2 in the 3-norm (one seed each).

The sizes per profile are :data:`ncbook.profiles.PLANS` ``["mr2_margins"]`` (:func:`mr2_setting`). Each call
measures a few steps of its model before training and prints the estimate (:class:`ncbook.train.ChapterCost`,
written to ``<results>/costs/<profile>/mr2_margins.json``), spreads its runs over worker processes
(:func:`ncbook.experiments.run_jobs`; under ``torchrun`` every rank takes part in each run), shows a
progress bar over the runs and, at the gpu and full profiles, checkpoints every run under
:func:`ncbook.checkpoint_dir` so that a rerun resumes it.

Every judgement the chapter prints and records reads one rule of :mod:`ncbook.experiments._verdicts`:
a correlation against the level that ``C`` independent pairs exceed by chance 5% of the time
(:func:`~ncbook.experiments.exceeds`), a difference of methods against twice the largest seed standard
deviation of the methods compared (:func:`~ncbook.experiments.compare_means`), the range of the single-seed
ablation runs against the range that as many runs differing only in their seed exceed by chance
(:func:`~ncbook.experiments.range_noise`). With a single seed there is no seed spread, and the comparisons
are recorded as not testable; so is the cosine head's, which trains one seed per method.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats

from .. import data, losses, margins, metrics, models, profiles, train
from .._validation import check_bool, check_callable, check_in, check_int, check_nonnegative, check_positive
from ..margins import class_feature_statistics, mr2_margins
from ._core import Claim, ExperimentResult, Setting, Stopwatch, _in_torchrun, run_jobs
from ._verdicts import Verdict, compare_means, exceeds, range_noise, seed_noise

__all__ = ["MR2Baseline", "MR2Comparison", "compare_mr2", "mr2_baseline", "mr2_setting"]

CHAPTER = "mr2_margins"
METHODS = ("CE", "fixed margins", "MR2 logit", "MR2 rep.", "MR2 both")
GROUPS = ("easy", "medium", "hard", "all")
COS_P = 3.0                 # norm of MR2's statistics with the cosine head (the paper's example)
LP_RANGE = 1e-3             # a range of margins above this (a tenth of a percent of gamma_bar = 1) is class-dependent
DIGITS_TEST_PER_CLASS = 80  # digits: test images a class (the rest, 99-100 a class, train)
PAPER = "Zhu et al. 2026"
ONE_SEED = ("one seed gives no seed spread to judge a difference of methods against; run at least two seeds "
            "(the quick and full profiles run three)")
COSINE_ONE_SEED = ("the cosine head trains one seed per method, and a difference of single runs has no seed spread "
                   "to be judged against (the chapter prints it beside the linear head's seed noise, for scale)")

# ----------------------------------------------------------------------------- the setting


def _describe(sizes: dict) -> str:
    net = "MLP 64-256-256-32" if sizes["DATASET"] == "digits" else "ResNet-32"
    noise = f" with pixel noise {sizes['NOISE']:g}" if sizes["NOISE"] else ""
    subset = f" ({sizes['SUBSET']} subset)" if sizes["SUBSET"] else ""
    return (f"{sizes['DATASET']}{subset}{noise}, balanced, {net}, {sizes['STEPS']} steps of {sizes['BATCH']}, "
            f"{sizes['SEEDS']} seed{'s' if sizes['SEEDS'] > 1 else ''}")


def _smoke(sizes: dict) -> dict:
    """The smoke scale: every code path of the gpu or full profile, tiny sizes (a test, not a result)."""
    return sizes | dict(STEPS=8, BATCH=64, SEEDS=1)


def _check_sizes(sizes: dict) -> dict:
    """The sizes, each checked (a clear message naming the size, what was expected and what arrived)."""
    out = dict(sizes)
    check_in("DATASET", out["DATASET"], ("digits", "cifar10", "cifar100"))
    check_in("SUBSET", out["SUBSET"], (None,) + data.SUBSETS)
    for key, low in (("STEPS", 1), ("BATCH", 2), ("SEEDS", 1), ("WARMUP", 0), ("NUM_CLASSES", 3)):
        out[key] = check_int(key, out[key], low)
    out["LR"], out["WD"] = check_positive("LR", out["LR"]), check_nonnegative("WD", out["WD"])
    out["FIXED_MARGIN"] = check_nonnegative("FIXED_MARGIN", out["FIXED_MARGIN"])
    out["LAMBDA_REP"] = check_nonnegative("LAMBDA_REP", out["LAMBDA_REP"])
    out["COS_SCALE"] = check_positive("COS_SCALE", out["COS_SCALE"])
    out["NOISE"] = check_nonnegative("NOISE", out["NOISE"])
    out["AMP"] = check_bool("AMP", out["AMP"])
    for key in ("EMA", "EMAS", "C_BARS"):
        values = out[key] if key != "EMA" else (out[key],)
        if not isinstance(values, (tuple, list)):
            raise TypeError(f"{key} must be a tuple of numbers; got {type(values).__name__} {values!r}.")
        for v in values:
            check_positive(key, v) if key == "C_BARS" else check_nonnegative(key, v)
            if key != "C_BARS" and v >= 1:
                raise ValueError(f"{key} must hold EMA decays in [0, 1); got {v!r}.")
    out["C_BARS"], out["EMAS"] = tuple(out["C_BARS"]), tuple(out["EMAS"])
    return out


def mr2_setting(*, profile: str | None = None, scale: str | None = None, **changes) -> Setting:
    """The profile, scale and sizes of the MR2 chapter's experiments (from :data:`ncbook.profiles.PLANS`).

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile` (``NCBOOK_PROFILE``; ``"gpu"`` on a CUDA device, else ``"quick"``).
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`. The smoke scale shrinks the gpu and full profiles to 8 steps of 64,
        one seed (every code path kept); the quick profile ignores it.
    **changes
        Sizes to change, by their plan name in lower or upper case: ``steps`` (optimiser steps a run),
        ``batch``, ``seeds``, ``lr``, ``wd``, ``warmup`` (epochs), ``noise`` (digits' pixel noise, in
        standardised pixel units), ``ema`` (the EMA decay of the main table), ``c_bars`` and ``emas``
        (the ablations), ``amp`` (bf16 autocast where the device has it, see :func:`ncbook.train.fit`;
        the quick profile trains in float32 on every CPU), ``fixed_margin`` (the LDAM-style baseline's
        additive margin, logit units), ``lambda_rep`` (the weight of MR2's representation loss; the official
        code's 0.1), ``cos_scale`` (the cosine head's logit scale), ``dataset``, ``subset``, ``num_classes``.

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
    >>> s = mr2_setting(profile="quick", steps=100)
    >>> s.sizes["STEPS"], s.sizes["SEEDS"], s.text
    (100, 3, 'digits with pixel noise 1, balanced, MLP 64-256-256-32, 100 steps of 64, 3 seeds')
    """
    setting = Setting.active(profiles.PLANS[CHAPTER].params, _describe, profile=profile, scale=scale, smoke=_smoke)
    return setting.changed(changes, what="the MR2 experiments", check=_check_sizes, text=_describe)


# ----------------------------------------------------------------------------- data, models, losses
class PixelNoise:
    """Fresh Gaussian pixel noise of standard deviation ``noise`` on every training batch (``fit``'s augment)."""

    def __init__(self, noise: float):
        self.noise = float(noise)

    def __call__(self, xb: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return xb + self.noise * torch.randn(xb.shape, generator=gen, device=xb.device)

    def __repr__(self) -> str:   # the checkpoint fingerprint reads it
        return f"PixelNoise({self.noise!r})"


def _digits_mlp(num_classes: int) -> models.MLP:
    return models.MLP(64, (256, 256), 32, num_classes)


def _resnet(num_classes: int) -> models.ResNetCIFAR:
    return models.resnet32(num_classes)


def _cosine(build: Callable, num_classes: int, scale: float):
    """The network of ``build`` with its linear head replaced by a cosine head (built after it, same seed)."""
    net = build()
    net.classifier = models.CosineClassifier(net.classifier.in_features, num_classes, scale=scale)
    return net


@dataclass(frozen=True)
class _Data:
    """Training and test tensors, the model factory, the training augmentation and (digits) the clean test set."""

    train: tuple
    test: tuple
    clean_test: tuple | None
    augment: Callable | None
    model: Callable
    num_classes: int

    @property
    def counts(self) -> torch.Tensor:
        return torch.bincount(self.train[1], minlength=self.num_classes)


def _load(sizes: dict, seed: int, model: Callable | None) -> _Data:
    c = sizes["NUM_CLASSES"]
    if sizes["DATASET"] == "digits":
        split = data.load_digits(test_per_class=DIGITS_TEST_PER_CLASS, seed=seed)
        g = torch.Generator().manual_seed(seed + 1000)          # one fixed draw of the test noise
        x_test = split.x_test + sizes["NOISE"] * torch.randn(split.x_test.shape, generator=g)
        build = model or functools.partial(_digits_mlp, c)
        augment = PixelNoise(sizes["NOISE"]) if sizes["NOISE"] else None
        return _Data((split.x_train, split.y_train), (x_test, split.y_test), (split.x_test, split.y_test),
                     augment, build, c)
    root = profiles.data_root()
    train_set = data.cifar_tensors(sizes["DATASET"], root, train=True, download=True, subset=sizes["SUBSET"])
    test_set = data.cifar_tensors(sizes["DATASET"], root, train=False, download=True, subset=sizes["SUBSET"])
    return _Data(train_set, test_set, None, data.cifar_augment, model or functools.partial(_resnet, c), c)


def _make_loss(method: str, num_classes: int, counts, sizes: dict, **options):
    """A fresh loss of ``method`` (one of :data:`METHODS`) with the setting's ``EMA``, ``LAMBDA_REP`` and
    ``FIXED_MARGIN``; ``options`` change MR2Loss's settings."""
    if method == "CE":
        return F.cross_entropy
    if method == "fixed margins":
        return losses.FixedMarginLoss(margins.ldam_margins(counts, max_margin=sizes["FIXED_MARGIN"]))
    lam, ema = sizes["LAMBDA_REP"], sizes["EMA"]
    settings = {"MR2 logit": dict(lam=0.0), "MR2 rep.": dict(lam=lam, logit_margins=False),
                "MR2 both": dict(lam=lam)}[method]
    return losses.MR2Loss(num_classes, **({"ema": ema} | settings | options))


# ----------------------------------------------------------------------------- one run
def _epochs(sizes: dict, n: int) -> int:
    return max(1, round(sizes["STEPS"] * sizes["BATCH"] / n))


def _job(*, model, loss, train_set, seed, fit_options, test, features_on=None, keep_margins=False, checkpoint=None):
    """One run (in a worker, or on every rank under torchrun): train, then keep only what the result reads."""
    out = train.fit_run(model, loss, train_set, seed=seed, test=test, return_loss=keep_margins,
                        evaluate_on=None if features_on is None else {"features": features_on},
                        checkpoint_dir=checkpoint, **fit_options)
    hist = out["history"]
    kept = {"class_acc": [float(a) for a in hist.final["class_acc"]], "history": hist}
    if features_on is not None:
        ev = out["evaluations"]["features"]
        kept |= {"features": ev["features"], "labels": ev["labels"], "eval_class_acc": ev["class_acc"]}
    if keep_margins:
        kept["margins"] = out["loss"].margins().cpu().double().numpy()
    return kept


@dataclass(frozen=True)
class _Run:
    """One row of a table before it is trained: which part, method and settings, and the job's config."""

    part: str
    method: str
    seed: int
    config: dict
    head: str = "linear"
    c_bar: float = 1.0
    ema: float = float("nan")
    noise: float = float("nan")


def _configs(runs, sizes, dataset: _Data, profile: str) -> list:
    """The jobs' keyword arguments; a checkpoint folder per run at the gpu and full profiles."""
    epochs = _epochs(sizes, len(dataset.train[1]))
    shared = dict(epochs=epochs, batch_size=sizes["BATCH"], lr=sizes["LR"], weight_decay=sizes["WD"],
                  warmup_epochs=sizes["WARMUP"], nc_every=0, eval_every=0, amp=sizes["AMP"],
                  progress=_in_torchrun() and profiles.show_progress())
    out = []
    for r in runs:
        cfg = dict(r.config)
        options = shared | {"augment": cfg.pop("augment", dataset.augment)}
        folder = None
        if profile != "quick":
            tag = f"{r.part}-{r.method}-c_bar{r.c_bar:g}-ema{r.ema:g}-{r.head}-seed{r.seed}".replace(" ", "_")
            folder = os.path.join(profiles.checkpoint_dir(CHAPTER), tag)
        out.append(dict(train_set=dataset.train, seed=r.seed, fit_options=options, test=cfg.pop("test", dataset.test),
                        checkpoint=folder, **cfg))
    return out


def _probe(dataset: _Data, sizes: dict, loss, parallel_runs: int) -> train.Throughput:
    """A few timed steps of the model with ``loss``; 16 of them for the digits MLP (a millisecond each, so that one
    pause of a shared CPU does not dominate), 4 for a ResNet."""
    steps = (4, 20) if sizes["DATASET"] == "digits" else (2, 6)
    return train.measure_fit(dataset.model, loss, dataset.train, batch_size=sizes["BATCH"], lr=sizes["LR"],
                             weight_decay=sizes["WD"], warmup_epochs=sizes["WARMUP"], augment=dataset.augment,
                             amp=sizes["AMP"], steps=steps, parallel_runs=1 if _in_torchrun() else parallel_runs)


def _estimate(parts, dataset: _Data, sizes: dict) -> float:
    """Seconds of the runs ``parts`` = ``[(throughput, runs), ...]`` side by side in the worker processes."""
    n, n_test = len(dataset.train[1]), len(dataset.test[1])
    one_after_another = sum(train.fit_seconds(tp, n=n, epochs=_epochs(sizes, n), batch_size=sizes["BATCH"],
                                              n_eval=n + n_test, evals=1, runs=k) for tp, k in parts if k)
    return train.in_parallel(one_after_another, sum(k for _, k in parts), parts[-1][0])


def _timed_runs(cost: train.ChapterCost | None, name: str, configs: list, progress: bool | None):
    """Announce the estimate of ``name``, run its jobs, record how long they took."""
    if cost is not None:
        if train.is_main_process():
            cost.announce(name, time_next_cell=False)   # the call times its own runs
    clock = Stopwatch()
    outs = run_jobs(_job, configs, progress=progress)
    if cost is not None:
        cost.record(name, clock.seconds)
    return outs


# ----------------------------------------------------------------------------- correlations and verdict records
def _corr(a, b) -> float:
    """Pearson correlation of two per-class arrays (float64)."""
    return float(np.corrcoef(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))[0, 1])


def chance_correlation(num_classes: int, level: float = 0.05) -> float:
    """The ``|r|`` that the Pearson correlation of ``num_classes`` independent Gaussian pairs exceeds with
    probability ``level`` (two-sided): ``t / sqrt(C - 2 + t^2)`` with ``t`` the Student-t quantile, ``C - 2``
    degrees of freedom.

    Examples
    --------
    >>> round(chance_correlation(10), 4)
    0.6319
    """
    c = check_int("num_classes", num_classes, 3)
    t = stats.t.ppf(1 - level / 2, c - 2)
    return float(t / math.sqrt(c - 2 + t * t))


def _group_rows(class_acc, groups: dict) -> dict:
    """Easy/medium/hard/all accuracies of one run's per-class test accuracies."""
    return metrics.group_accuracy(class_acc, groups) | {"all": float(np.mean(class_acc))}


def _not_below(v: Verdict) -> dict:
    """The record of "a is not below b" (compare_means' outcome "above" or "level"): ``-noise <= gap``."""
    return {"ours": v.value, "tolerance": {"between": [-v.threshold, 100.0]}}   # gaps in points are at most 100


# ----------------------------------------------------------------------------- the baseline
class MR2Baseline(ExperimentResult):
    """CE on balanced data: per-class accuracy, the spread behind it, and the easy/medium/hard split.

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row per CE run: ``method`` ("CE"), ``seed``, ``noise`` (pixel noise of its training and test
        images), ``easy``, ``medium``, ``hard``, ``all`` (mean per-class test accuracy of each group).
    class_accuracy : pandas.DataFrame
        The per-class test accuracies of the noisy CE runs, one row per seed, one column per class.
    groups : dict
        ``{"easy", "medium", "hard"}`` -> class indices, from the CE runs' mean per-class accuracy.
    statistics : pandas.DataFrame
        Per class, on the test features of each seed's CE model, averaged over the seeds: ``accuracy``,
        ``mean_sq_norm`` (``||mu_c||^2``), ``spread`` (``sigma_c^2``), ``relative_spread`` (their ratio).
        (One seed's correlation of spread and accuracy moves by about 0.1 from seed to seed; the mean over
        the seeds is the steadier measurement.)
    features, labels : torch.Tensor
        The test features ``(n_test, d)`` of the first seed's CE model, and their labels.
    correlations : dict
        Pearson correlation with per-class accuracy of ``spread``, ``relative_spread``, ``mean_sq_norm``,
        ``sum`` (``||mu_c||^2 + sigma_c^2``, MR2's statistic), all from :attr:`statistics`, and
        ``spread_clean`` (on the run without pixel noise).
    chance : float
        The correlation that ``C`` independent pairs exceed by chance 5% of the time.
    """

    @property
    def groups(self) -> dict:
        return self.extras["groups"]

    @property
    def class_accuracy(self):
        return self.extras["class_accuracy"]

    @property
    def statistics(self):
        return self.extras["statistics"]

    @property
    def features(self) -> torch.Tensor:
        return self.extras["features"]

    @property
    def labels(self) -> torch.Tensor:
        return self.extras["labels"]

    @property
    def correlations(self) -> dict:
        return self.extras["correlations"]

    @property
    def chance(self) -> float:
        return self.extras["chance"]

    @property
    def epochs(self) -> int:
        return self.extras["epochs"]

    @property
    def norm_share(self) -> float:
        """Mean over classes of ``||mu_c||^2 / (||mu_c||^2 + sigma_c^2)``: how much of MR2's statistic is the mean norm."""
        s = self.statistics
        return float((s["mean_sq_norm"] / (s["mean_sq_norm"] + s["spread"])).mean())

    @property
    def premise(self) -> Verdict:
        """Hard classes have the more variable features: minus the spread's correlation with accuracy above chance."""
        return exceeds(-self.correlations["spread"], self.chance)

    def lp_margins(self, p: float) -> np.ndarray:
        """MR2's margins (``gamma_bar = 1``) from the ``p``-norm statistics of the L2-normalised test features."""
        unit = F.normalize(self.features, dim=1)
        norms, devs, _ = class_feature_statistics(unit, self.labels, self.statistics.shape[0], p=p)
        return mr2_margins(norms, devs).numpy()

    @property
    def lp_range(self) -> Verdict:
        """The range of the 3-norm margins on unit features against :data:`LP_RANGE` (class-dependent or not)."""
        m = self.lp_margins(COS_P)
        return exceeds(float(m.max() - m.min()), LP_RANGE)

    def claims(self) -> list[Claim]:
        run = f"{self.setting.text}, {self.epochs} epochs"
        premise, lp = self.premise, self.lp_range
        return [
            Claim("paper", "Hard classes have more variable features: minus the Pearson correlation of the per-class "
                  "spread sigma_c^2 (mean squared deviation from the class mean) with CE test accuracy, both averaged "
                  "over the seeds, against the level C independent pairs exceed by chance 5% of the time",
                  paper="hard (low-accuracy) classes have larger feature variability",
                  source=f"{PAPER}, introduction (the observation of Cui et al. 2024 that MR2 builds on)",
                  ours=premise.tolerance()["ours"], tolerance=premise.tolerance()["tolerance"],
                  setting=f"{run}, CE, test features, mean over the seeds"),
            Claim("paper", "For L2-normalised features statistics in a p-norm with p = 3 restore class-dependent margins "
                  "(with p = 2 they are all equal): range of the p = 3 margins on the unit test features of the CE "
                  "model, against a tenth of a percent of the mean margin",
                  paper="for cosine classifiers use an L_p norm (e.g. p = 3) so that the margins stay class-dependent",
                  source=f"{PAPER}, the section extending MR2 to cosine classifiers (statistics in an L_p norm)",
                  ours=lp.tolerance()["ours"], tolerance=lp.tolerance()["tolerance"],
                  setting=f"{run}, CE, first seed, unit test features"),
        ]


def _ce_runs(sizes: dict, seed: int, dataset: _Data) -> list:
    ce = functools.partial(_make_loss, "CE", dataset.num_classes, dataset.counts, sizes)
    runs = [_Run("CE", "CE", seed + s, dict(model=dataset.model, loss=ce, features_on=dataset.test), noise=sizes["NOISE"])
            for s in range(sizes["SEEDS"])]
    if dataset.clean_test is not None and sizes["NOISE"]:   # the same network without the noise
        runs.append(_Run("CE", "CE", seed, dict(model=dataset.model, loss=ce, augment=None, test=dataset.clean_test,
                                                features_on=dataset.clean_test), noise=0.0))
    return runs


def _comparison_runs(sizes: dict, seed: int, dataset: _Data) -> list:
    c, counts, ema = dataset.num_classes, dataset.counts, sizes["EMA"]
    loss = functools.partial(_make_loss, num_classes=c, counts=counts, sizes=sizes)
    runs = [_Run("main", m, seed + s, dict(model=dataset.model, loss=functools.partial(loss, m),
                                            keep_margins=m == "MR2 both" and s == 0), ema=ema if "MR2" in m else math.nan)
            for m in METHODS[1:] for s in range(sizes["SEEDS"])]
    runs += [_Run("ablation", "MR2 both", seed, dict(model=dataset.model, loss=functools.partial(loss, "MR2 both", c_bar=v)),
                  c_bar=v, ema=ema) for v in sizes["C_BARS"]]
    runs += [_Run("ablation", "MR2 both", seed, dict(model=dataset.model, loss=functools.partial(loss, "MR2 both", ema=v)),
                  ema=v) for v in sizes["EMAS"]]
    cosine = functools.partial(_cosine, dataset.model, c, sizes["COS_SCALE"])
    mr2_p = functools.partial(loss, "MR2 both", p=COS_P, normalize_features=True)
    runs += [_Run("cosine head", "CE", seed, dict(model=cosine, loss=functools.partial(loss, "CE")), head="cosine"),
             _Run("cosine head", "MR2 both", seed, dict(model=cosine, loss=mr2_p), head="cosine", ema=ema)]
    return runs


def _check_call(seed, model, progress) -> int:
    check_callable("model", model, allow_none=True)
    check_bool("progress", progress, allow_none=True)
    return check_int("seed", seed, 0)


def mr2_baseline(setting: Setting | None = None, *, seed: int = 0, model: Callable | None = None,
                 progress: bool | None = None, results: str | None = None) -> MR2Baseline:
    """Train CE on the chapter's balanced data over the profile's seeds; measure spread against accuracy.

    Parameters
    ----------
    setting : Setting, optional
        Default :func:`mr2_setting` (the active profile and scale).
    seed : int, >= 0
        The first seed (runs use ``seed, seed + 1, ...``); on digits it also draws the test split and its noise.
    model : callable, optional
        A zero-argument factory of the network (:mod:`ncbook.models` protocol, a linear ``classifier``);
        default the profile's: an MLP 64-256-256-32 on digits, a ResNet-32 on CIFAR.
    progress : bool, optional
        A bar over the runs; default :func:`ncbook.show_progress`.
    results : path, optional
        Where the cost record goes; default :func:`ncbook.results_dir`.

    Returns
    -------
    MR2Baseline

    Raises
    ------
    TypeError, ValueError
        For a setting that is not a :class:`~ncbook.experiments.Setting` of this chapter, a negative or
        non-integer seed, or a model that is not callable.

    Examples
    --------
    Skipped as doctests: they start worker processes and train networks (``tests/test_experiments_mr2_margins.py``
    runs the same calls).

    >>> import tempfile
    >>> tiny = mr2_setting(profile="quick", steps=5, seeds=2, c_bars=(), emas=())   # doctest: +SKIP
    >>> base = mr2_baseline(tiny, progress=False, results=tempfile.mkdtemp())      # doctest: +SKIP
    Cost at the quick profile on cpu (1 thread) (float32): this model trains ...
    >>> list(base.table.columns), base.table["noise"].tolist()                     # doctest: +SKIP
    (['method', 'seed', 'noise', 'easy', 'medium', 'hard', 'all'], [1.0, 1.0, 0.0])
    """
    setting = _check_setting(setting)
    seed = _check_call(seed, model, progress)
    clock, sizes = Stopwatch(), setting.sizes
    dataset = _load(sizes, seed, model)
    runs, later = _ce_runs(sizes, seed, dataset), _comparison_runs(sizes, seed, dataset)
    tp_ce = _probe(dataset, sizes, F.cross_entropy, len(later))        # also starts and warms the worker processes
    tp_mr2 = replace(_probe(dataset, sizes, _make_loss("MR2 both", dataset.num_classes, dataset.counts, sizes), 1),
                     workers=tp_ce.workers, parallel_slowdown=tp_ce.parallel_slowdown)   # MR2 steps cost more than CE's
    cost = train.ChapterCost(CHAPTER, results=(results or profiles.results_dir()) if train.is_main_process() else None,
                             checkpoints=None if setting.profile == "quick" else profiles.checkpoint_dir(CHAPTER))
    with_mr2 = sum(isinstance(r.config["loss"](), losses.MR2Loss) for r in later)   # the others cost about CE's
    cost.add("CE", _estimate([(tp_ce, len(runs))], dataset, sizes), tp_ce)
    cost.add("comparison", _estimate([(tp_ce, len(later) - with_mr2), (tp_mr2, with_mr2)], dataset, sizes), tp_mr2)
    outs = _timed_runs(cost, "CE", _configs(runs, sizes, dataset, setting.profile), progress)
    return _baseline_result(setting, sizes, dataset, runs, outs, clock, cost)


def _check_setting(setting) -> Setting:
    if setting is None:
        return mr2_setting()
    if not isinstance(setting, Setting) or "C_BARS" not in setting.sizes:
        raise TypeError(f"setting must be a Setting of the MR2 chapter, as mr2_setting() returns; got "
                        f"{type(setting).__name__}.")
    return Setting(setting.profile, setting.scale, _check_sizes(setting.sizes), setting.text)


def _mean_statistics(outs, num_classes: int):
    """Per class, the mean over the runs of test accuracy, ``||mu_c||^2``, ``sigma_c^2`` and their ratio."""
    import pandas as pd

    frames = []
    for o in outs:
        norms, devs, _ = class_feature_statistics(o["features"], o["labels"], num_classes)
        norms, devs = norms.double().numpy(), devs.double().numpy()
        frames.append(pd.DataFrame({"accuracy": np.asarray(o["eval_class_acc"], dtype=np.float64),
                                    "mean_sq_norm": norms, "spread": devs, "relative_spread": devs / norms}))
    mean = sum(frames) / len(frames)
    mean.index.name = "class"
    return mean


def _baseline_result(setting, sizes, dataset, runs, outs, clock, cost) -> MR2Baseline:
    import pandas as pd

    noisy = [o["class_acc"] for r, o in zip(runs, outs) if r.noise == sizes["NOISE"]]
    class_acc = np.array(noisy)                                          # (SEEDS, C)
    groups = metrics.difficulty_groups(class_acc.mean(0))
    table = pd.DataFrame([{"method": "CE", "seed": r.seed, "noise": r.noise} | _group_rows(o["class_acc"], groups)
                          for r, o in zip(runs, outs)])
    first = outs[0]
    statistics = _mean_statistics(outs[:len(noisy)], dataset.num_classes)   # per class, mean over the seeds
    acc, norms, devs = (statistics[k].to_numpy() for k in ("accuracy", "mean_sq_norm", "spread"))
    clean = outs[-1] if len(outs) > sizes["SEEDS"] else first
    _, clean_devs, _ = class_feature_statistics(clean["features"], clean["labels"], dataset.num_classes)
    correlations = {"spread": _corr(devs, acc), "relative_spread": _corr(statistics["relative_spread"], acc),
                    "mean_sq_norm": _corr(norms, acc), "sum": _corr(norms + devs, acc),
                    "spread_clean": _corr(clean_devs, clean["eval_class_acc"])}
    extras = dict(groups=groups, class_accuracy=pd.DataFrame(class_acc, index=pd.Index([r.seed for r in runs[:len(noisy)]],
                                                                                          name="seed")),
                  statistics=statistics, features=first["features"], labels=first["labels"], correlations=correlations,
                  features_by_seed=[(o["features"], o["labels"]) for o in outs[:len(noisy)]],
                  chance=chance_correlation(dataset.num_classes), epochs=_epochs(sizes, len(dataset.train[1])),
                  clean_accuracy=np.asarray(clean["class_acc"]), data=dataset, cost=cost,
                  train_per_class=(int(dataset.counts.min()), int(dataset.counts.max())),
                  test_per_class=len(dataset.test[1]) // dataset.num_classes)
    histories = {(r.part, r.method, r.seed, r.noise): o["history"] for r, o in zip(runs, outs)}
    return MR2Baseline(CHAPTER, setting, table, histories, clock.seconds, extras)


# ----------------------------------------------------------------------------- the comparison
class MR2Comparison(ExperimentResult):
    """CE, fixed margins and three versions of MR2 over seeds; the ablations; the cosine head.

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row per run: ``part`` ("main", "ablation", "cosine head"), ``method`` (one of :data:`METHODS`),
        ``seed``, ``head`` ("linear" or "cosine"), ``c_bar`` (``gamma_bar``), ``ema`` (the EMA decay of
        MR2's statistics; NaN without them), ``easy``, ``medium``, ``hard``, ``all`` (mean per-class test
        accuracy of each group of the baseline's split). The main part holds the baseline's CE runs.
    baseline : MR2Baseline
        The CE runs the comparison is read against (their split into easy, medium and hard classes).
    final_margins : numpy.ndarray of shape (C,)
        MR2's margins at the end of training (both losses, first seed).

    Every verdict (:meth:`verdicts`) compares accuracies in points (hundredths): a difference of two
    methods is resolved when it exceeds twice the largest seed standard deviation of the methods compared;
    the range of the single-seed ablation runs when it exceeds :func:`~ncbook.experiments.range_noise`.
    The cosine head's difference (:meth:`cosine_gap`, one run each) is reported, not judged.
    """

    @property
    def baseline(self) -> MR2Baseline:
        return self.extras["baseline"]

    @property
    def final_margins(self) -> np.ndarray:
        return self.extras["final_margins"]

    @property
    def seeds(self) -> int:
        return self.setting.sizes["SEEDS"]

    def part(self, name: str):
        """The rows of one part of the table ("main", "ablation" or "cosine head")."""
        check_in("name", name, ("main", "ablation", "cosine head"))
        return self.table[self.table["part"] == name].reset_index(drop=True)

    def group_summary(self):
        """Mean and standard deviation over seeds (``ddof=0``) of each group's accuracy, one row per method."""
        main = self.part("main")
        out = main.groupby("method", sort=False)[list(GROUPS)].agg(["mean", lambda s: float(s.std(ddof=0))])
        return out.rename(columns={"<lambda_0>": "std"}, level=1).reindex(list(METHODS))

    def formatted(self, part: str = "main"):
        """A display table: ``mean ± std`` per method (main), or one row per run (ablation, cosine head)."""
        import pandas as pd

        if part == "main":
            s = self.group_summary()
            return pd.DataFrame({g: [f"{s.loc[m, (g, 'mean')]:.3f} ± {s.loc[m, (g, 'std')]:.3f}" for m in s.index]
                                 for g in GROUPS}, index=s.index)
        rows = self.part(part)
        if part == "ablation":
            first = self.part("main").query("method == 'MR2 both'").iloc[[0]]
            rows = pd.concat([rows, first], ignore_index=True)
            label = [f"c_bar = {c:g}, EMA decay = {e:g}" for c, e in zip(rows["c_bar"], rows["ema"])]
        else:
            label = [f"{m} (cosine head)" for m in rows["method"]]
        return rows[list(GROUPS)].set_axis(pd.Index(label, name="setting")).round(3)

    def per_seed(self, method: str, group: str) -> np.ndarray:
        """``method``'s accuracy on ``group`` in each seed of the main table, in points, in seed order."""
        check_in("method", method, METHODS)
        check_in("group", group, GROUPS)
        rows = self.part("main").query("method == @method").sort_values("seed")
        return 100.0 * rows[group].to_numpy(dtype=np.float64)

    def noise(self, methods, group: str) -> float:
        """Twice the largest seed standard deviation (``ddof=0``, points) of ``group`` among ``methods``."""
        return seed_noise([float(np.std(self.per_seed(m, group))) for m in methods])

    def compare(self, a: str, b: str, group: str, *, among=None) -> Verdict:
        """``a`` against ``b`` on ``group`` over the seeds, resolved against :meth:`noise` of ``among`` (default a, b).

        With a single seed the outcome is ``"undefined"`` (no seed spread; the chapter says so).
        """
        gap_a, gap_b = self.per_seed(a, group), self.per_seed(b, group)
        if self.seeds < 2:
            return Verdict("compare_means", "undefined", float(gap_a.mean() - gap_b.mean()), math.nan)
        return compare_means(gap_a, gap_b, noise=self.noise(among or (a, b), group))

    @property
    def margin_correlation(self) -> float:
        """Correlation of :attr:`final_margins` with the CE runs' mean per-class accuracy."""
        return _corr(self.final_margins, self.baseline.class_accuracy.to_numpy().mean(0))

    @property
    def margins_direction(self) -> Verdict:
        """MR2's margins larger for the hard classes: minus :attr:`margin_correlation` above chance."""
        return exceeds(-self.margin_correlation, self.baseline.chance)

    def cosine_gap(self) -> float:
        """MR2 (3-norm) minus CE with the cosine head on the hard classes, in points (one run each).

        A difference of single runs is not judged (the book's rule records single-seed comparisons as not
        testable): the chapter reads it against :meth:`noise` of the same pair with the linear head, for scale.
        """
        rows = self.part("cosine head")
        hard = {m: 100.0 * float(rows.loc[rows["method"] == m, "hard"].iloc[0]) for m in ("CE", "MR2 both")}
        return hard["MR2 both"] - hard["CE"]

    def ablation_range(self) -> Verdict:
        """Range of the overall accuracy (points) over the ablation settings and the main setting's first seed
        (single runs), against :func:`~ncbook.experiments.range_noise`: the range that as many runs differing
        only in their seed exceed by chance 5% of the time, for the largest seed standard deviation of the
        overall accuracy among the main table's methods."""
        overall = 100.0 * self.formatted("ablation")["all"].to_numpy(dtype=np.float64)
        spread = float(overall.max() - overall.min())
        if self.seeds < 2:
            return Verdict("exceeds", "undefined", spread, math.nan)
        spreads = [float(np.std(self.per_seed(m, "all"))) for m in METHODS]
        return exceeds(spread, range_noise(spreads, len(overall)))

    def verdicts(self) -> dict:
        """Every judgement the chapter prints and records, by name."""
        mr2 = ("MR2 logit", "MR2 rep.", "MR2 both")
        return {"margins_direction": self.margins_direction,
                "hard_gain": self.compare("MR2 both", "CE", "hard"),
                "easy_change": self.compare("MR2 both", "CE", "easy"),
                "overall_gain": self.compare("MR2 both", "CE", "all"),
                "ablation_logit": self.compare("MR2 both", "MR2 logit", "hard", among=mr2),
                "ablation_rep": self.compare("MR2 both", "MR2 rep.", "hard", among=mr2),
                "ablation_range": self.ablation_range()}

    def say(self, name: str, words) -> str:
        """The word for verdict ``name`` (see :meth:`Verdict.word`); with one seed, the reason it cannot be judged."""
        v = self.verdicts()[name]
        if v.outcome == "undefined" and self.seeds < 2:
            return "cannot be judged with one seed (no seed spread)"
        return v.word(words)

    def _ranking(self, group: str, methods) -> list:
        s = self.group_summary()
        return sorted(((m, round(100 * float(s.loc[m, (group, "mean")]), 1)) for m in methods), key=lambda mv: -mv[1])

    def claims(self) -> list[Claim]:
        run = f"{self.setting.text}, {self.baseline.epochs} epochs"
        where = run + ("" if self.setting.sizes["DATASET"] == "digits"
                       else "; the paper's numbers come from WRN-28-10, 300 epochs, AutoAugment")
        v = self.verdicts()
        one_seed = ONE_SEED if self.seeds < 2 else None

        def rec(name, tolerance=None):        # (ours, tolerance) of a verdict, or nothing when it cannot be judged
            if one_seed and v[name].rule == "compare_means":
                return None, None
            r = tolerance(v[name]) if tolerance else v[name].tolerance()
            return r["ours"], r["tolerance"]

        margins, hard, easy, overall = (rec("margins_direction"), rec("hard_gain"), rec("easy_change", _not_below),
                                        rec("overall_gain"))
        ablation = (None, None) if one_seed else ([v["ablation_logit"].value, v["ablation_rep"].value],
                                                  {"above": v["ablation_logit"].threshold})
        return [
            Claim("paper", "MR2 assigns larger logit margins to hard classes: minus the Pearson correlation of the final "
                  "MR2 margins (both losses, first seed) with CE per-class test accuracy, against the level C "
                  "independent pairs exceed by chance 5% of the time",
                  paper="the adaptive margins assign larger margins to hard classes (those with larger feature variability)",
                  source=f"{PAPER}, Corollary 1 and the logit margin rule",
                  ours=margins[0], tolerance=margins[1], setting=f"{run}, MR2 both losses, first seed"),
            Claim("paper", "MR2 (both losses) raises hard-class test accuracy over CE: difference of the mean over seeds, "
                  "in points, against twice the largest seed standard deviation of the two (ranking by hard-class "
                  "accuracy below)",
                  paper="significantly boosts hard class performance",
                  source=f"{PAPER}, abstract (seven datasets including ImageNet)",
                  ours=hard[0], tolerance=hard[1], not_testable=one_seed, ranking=self._ranking("hard", METHODS),
                  setting=where),
            Claim("paper", "MR2 (both losses) does not trade off the easy classes: difference of easy-class test accuracy "
                  "over CE, in points, which must not fall below minus twice the largest seed standard deviation "
                  "of the two",
                  paper="without trading off easy classes", source=f"{PAPER}, abstract",
                  ours=easy[0], tolerance=easy[1], not_testable=one_seed, setting=where),
            Claim("paper", "MR2 (both losses) raises overall test accuracy over CE: difference of the mean over seeds, "
                  "in points, against twice the largest seed standard deviation of the two (ranking by overall "
                  "accuracy below)",
                  paper="improves overall accuracy", source=f"{PAPER}, abstract (seven datasets including ImageNet)",
                  ours=overall[0], tolerance=overall[1], not_testable=one_seed, ranking=self._ranking("all", METHODS),
                  setting=where),
            Claim("paper", "Ablation: both the logit margins and the representation margin are needed: hard-class "
                  "accuracy of MR2 with both losses minus that with the logit margins only, then minus that with the "
                  "representation loss only (uniform logit margins), in points, each against twice the largest "
                  "seed standard deviation of the three",
                  paper="both the class-dependent logit margins and the representation margin are needed; uniform "
                        "margins or removing the representation loss lower performance",
                  source=f"{PAPER}, experiments section (ablation studies)",
                  ours=ablation[0], tolerance=ablation[1], not_testable=one_seed,
                  ranking=self._ranking("hard", ("MR2 both", "MR2 logit", "MR2 rep.")), setting=where),
            Claim("paper", "With a cosine classifier, MR2 with p = 3 raises hard-class test accuracy over CE: difference "
                  "in points of the hard-class accuracy with the cosine head",
                  paper="MR2 applies to cosine classifiers (e.g. CLIP) through the L_p statistics",
                  source=f"{PAPER}, the section extending MR2 to cosine classifiers (statistics in an L_p norm)",
                  ours=None, not_testable=COSINE_ONE_SEED,
                  setting=f"{run}, cosine head with scale {self.setting.sizes['COS_SCALE']:g}, first seed"),
        ]


def compare_mr2(baseline: MR2Baseline | None = None, *, setting: Setting | None = None, seed: int = 0,
                model: Callable | None = None, progress: bool | None = None,
                results: str | None = None) -> MR2Comparison:
    """Train fixed margins and MR2 (logit margins, representation loss, both) against the CE baseline; then the
    ablations of the mean margin and of the EMA decay, and a cosine head with CE and with MR2 in the 3-norm.

    Parameters
    ----------
    baseline : MR2Baseline, optional
        The CE runs to compare against (their setting, seed, data and easy/medium/hard split are used).
        Without one, :func:`mr2_baseline` runs first with ``setting``, ``seed``, ``model`` and ``results``.
    setting, seed, model, progress, results
        As for :func:`mr2_baseline` (``setting``, ``seed`` and ``model`` only without a baseline).

    Returns
    -------
    MR2Comparison

    Raises
    ------
    TypeError, ValueError
        For a baseline that is not an :class:`MR2Baseline`, a setting or seed given beside one, or the
        arguments :func:`mr2_baseline` refuses.

    Examples
    --------
    Skipped as doctests: they start worker processes and train networks (``tests/test_experiments_mr2_margins.py``
    runs the same calls).

    >>> import tempfile
    >>> tiny = mr2_setting(profile="quick", steps=5, seeds=2, c_bars=(), emas=())           # doctest: +SKIP
    >>> comparison = compare_mr2(setting=tiny, progress=False, results=tempfile.mkdtemp())  # doctest: +SKIP
    >>> comparison.table.groupby("part").size().to_dict()                                  # doctest: +SKIP
    {'cosine head': 2, 'main': 10}
    >>> comparison.say("hard_gain", ("beats", "is level with", "trails"))                   # doctest: +SKIP
    'is level with'
    """
    if baseline is None:
        baseline = mr2_baseline(setting, seed=seed, model=model, progress=progress, results=results)
    elif not isinstance(baseline, MR2Baseline):
        raise TypeError(f"baseline must be an MR2Baseline, as mr2_baseline() returns; got {type(baseline).__name__}.")
    elif setting is not None or seed != 0 or model is not None:
        raise ValueError("setting, seed and model come from the baseline when one is given; pass them to "
                         "mr2_baseline() instead.")
    check_bool("progress", progress, allow_none=True)
    clock, setting, sizes = Stopwatch(), baseline.setting, baseline.setting.sizes
    dataset, first = baseline.extras["data"], int(baseline.table["seed"].min())
    runs = _comparison_runs(sizes, first, dataset)
    outs = _timed_runs(baseline.extras["cost"], "comparison", _configs(runs, sizes, dataset, setting.profile), progress)
    result = _comparison_result(baseline, runs, outs, clock)
    if setting.profile == "full" and train.is_main_process():   # the method table, for the reproduction page
        _save_table(result, results or profiles.results_dir(), first)
    return result


def _save_table(result: "MR2Comparison", folder, seed: int) -> None:
    from ..book import save_result

    sizes = result.setting.sizes
    summary = result.group_summary()
    metrics = {m: {"mean": {g: float(summary.loc[m, (g, "mean")]) for g in GROUPS},
                   "std": {g: float(summary.loc[m, (g, "std")]) for g in GROUPS}} for m in summary.index}
    config = dict(sizes, epochs=result.baseline.epochs, model="ResNet-32", augment="crop+flip",
                  schedule="cosine", scale=result.setting.scale,
                  paper_recipe="WRN-28-10, 300 epochs, AutoAugment (not run here)")
    save_result(folder, chapter=CHAPTER, setting=f"{sizes['DATASET']}-methods", seed=seed,
                metrics=metrics | {"groups": {g: c.tolist() for g, c in result.baseline.groups.items()}},
                wall_seconds=result.seconds + result.baseline.seconds, config=config)


def _comparison_result(baseline: MR2Baseline, runs, outs, clock) -> MR2Comparison:
    import pandas as pd

    groups, noise = baseline.groups, baseline.setting.sizes["NOISE"]
    ce = [{"part": "main", "method": "CE", "seed": int(r["seed"]), "head": "linear", "c_bar": 1.0, "ema": math.nan}
          | {g: r[g] for g in GROUPS} for _, r in baseline.table[baseline.table["noise"] == noise].iterrows()]
    rows = ce + [{"part": r.part, "method": r.method, "seed": r.seed, "head": r.head, "c_bar": r.c_bar, "ema": r.ema}
                 | _group_rows(o["class_acc"], groups) for r, o in zip(runs, outs)]
    table = pd.DataFrame(rows)
    final = next(o["margins"] for o in outs if "margins" in o)
    histories = {(r.part, r.method, r.seed, r.head, r.c_bar, r.ema): o["history"] for r, o in zip(runs, outs)}
    return MR2Comparison(CHAPTER, baseline.setting, table, histories, clock.seconds,
                         {"baseline": baseline, "final_margins": final})
