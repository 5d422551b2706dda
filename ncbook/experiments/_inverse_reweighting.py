"""The long-tailed comparison of the inverse-reweighting chapter, as one call.

:func:`compare_reweighting` trains every method a chapter names, for every seed, on the active profile's
long-tailed benchmark under one recipe, and returns a :class:`ReweightingComparison`: a tidy table (one
row per data set, method and seed: test accuracy overall and by shot group, the final neural-collapse
metrics and the loss imbalance of the training losses), the per-class training-loss curves of the first
seed, and the paper claims the run supports (:meth:`ReweightingComparison.claims`).

The sizes of each profile live in ``ncbook.profiles.PLANS["inverse_reweighting"]`` (so the plan, the
README and the run agree): quick trains an MLP on long-tailed digits on a CPU, gpu and full a ResNet-32
on CIFAR-10-LT (and CIFAR-100-LT) with the recipe of Cao et al. (2019). The smoke scale of gpu and full
keeps every code path at tiny sizes on the CIFAR stand-in.

Letters, as in the chapter: ``C`` classes, ``n_c`` the training samples of class ``c``; ``L_c`` the mean
cross-entropy of class ``c``; ``rho = std_c L_c / mean_c L_c`` the loss imbalance (population standard
deviation over classes). Accuracies are fractions of the (balanced) test set.

References
----------
Wang, Tong, Xie, Gao. Rethinking loss reweighting for imbalance learning as an inverse problem: a neural
collapse point of view. ICML 2026, arXiv:2605.10047.
Cao, Wei, Gaidon, Arechiga, Ma. Learning imbalanced datasets with label-distribution-aware margin loss.
NeurIPS 2019 (the CIFAR-LT recipe and Table 2).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import data, losses, metrics, models, profiles, reweighting, train
from .._validation import check_bool, check_callable, check_in, check_int, check_path
from ..book import load_results, save_result
from ._core import Claim, ExperimentResult, Setting, Stopwatch, _in_torchrun, run_jobs
from ._verdicts import Verdict, compare_means, exceeds, matches, seed_noise

__all__ = ["Method", "ReweightingComparison", "compare_reweighting", "inverse_reweighting_checks",
           "quoted_reweighting_results", "reweighting_setting"]

CHAPTER = "inverse_reweighting"
#: the paper's method (the official code's loss, weights carrying gradient, macro exponent 1)
PAPER_METHOD = "inverse + macro"
#: the reweighting methods the paper compares its method with, besides CE
PAPER_BASELINES = ("Inv-Freq", "CB", "Focal", "IB")
#: the table's metric columns: test accuracy (overall, many/medium/few-shot), final training NC metrics, rho
METRICS = ("overall", "many", "medium", "few", "nc1", "nc2_w", "nc2_m", "nc3", "rho")
ACCURACY = METRICS[:4]
GEOMETRY = METRICS[4:]
HEADS = ("linear", "cosine")
_SOURCE = "Wang et al. 2026"


# --------------------------------------------------------------------------- setting
def _smoke(sizes: dict) -> dict:
    """The smoke scale: every code path of the profile (all methods, every data set), 2 epochs (the DRW, IB and
    inverse switches still fire), one seed, a mild imbalance that the stand-in's small classes can hold."""
    return {**sizes, "IMBALANCE": 5, "SEEDS": [0], "EPOCHS": 2, "MANY": 15, "FEW": 5}


def _text(s: dict) -> str:
    seeds = f"{len(s['SEEDS'])} seed{'s' if len(s['SEEDS']) != 1 else ''}"
    if s["DATASETS"] == ["digits"]:
        return (f"long-tailed digits (IF {s['IMBALANCE']:g}), MLP 64-{s['WIDTH']}-{s['WIDTH']}-32, {s['STEPS']} SGD "
                f"steps, {seeds}")
    names = " and ".join(f"{'CIFAR-10' if d == 'cifar10' else 'CIFAR-100'}-LT" for d in s["DATASETS"])
    return f"{names} (IF {s['IMBALANCE']:g}), ResNet-32, {s['EPOCHS']} epochs ({s['SCHEDULE']} schedule), {seeds}"


def reweighting_setting(*, profile: str | None = None, scale: str | None = None) -> Setting:
    """The comparison's setting at the active (or given) profile and scale, with its sizes from the plan.

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile`.
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`.

    Returns
    -------
    Setting
        ``sizes`` are ``ncbook.profiles.PLANS["inverse_reweighting"].params[profile]`` (shrunk at the smoke
        scale of gpu and full): ``DATASETS``, ``IMBALANCE``, ``SEEDS``, ``BATCH``, ``LR``, ``WD``, ``MANY``,
        ``FEW`` (shot thresholds), ``EVAL_EVERY`` (epochs between the first seed's curve points), ``AMP``, and
        per kind of data ``N_MAX``, ``STEPS``, ``REPEAT``, ``WIDTH`` (digits) or ``SUBSET``, ``EPOCHS``,
        ``SCHEDULE``, ``WARMUP``, ``MILESTONES`` (CIFAR).

    Raises
    ------
    ValueError
        For an unknown profile or scale.

    Examples
    --------
    >>> s = reweighting_setting(profile="quick")
    >>> s.sizes["DATASETS"], s.sizes["IMBALANCE"]
    (['digits'], 50)
    """
    return Setting.active(profiles.PLANS[CHAPTER].params, _text, profile=profile, scale=scale, smoke=_smoke)


# --------------------------------------------------------------------------- methods and models
@dataclass(frozen=True)
class Method:
    """A method of the comparison: a zero-argument factory of its training loss, and the head it trains.

    Parameters
    ----------
    loss : callable
        ``loss() -> loss_fn``, called in the worker for every run (fresh state: batch counts, EMAs, switches).
    head : {"linear", "cosine"}
        ``"cosine"``: unit-norm features and classifier rows (LDAM's normalised linear layer; the loss scales
        the logits).

    Raises
    ------
    TypeError, ValueError
        For a loss that is not callable or an unknown head.

    Examples
    --------
    >>> Method(lambda: torch.nn.CrossEntropyLoss(), head="cosine").head
    'cosine'
    """

    loss: Callable
    head: str = "linear"

    def __post_init__(self):
        check_callable("loss", self.loss)
        check_in("head", self.head, HEADS)


class _UnitRows(nn.Module):
    def forward(self, w):
        return F.normalize(w, dim=1)


def _cosine_head(model: nn.Module) -> nn.Module:
    """Unit-norm features and unit-norm classifier rows (LDAM's normalised linear layer)."""
    nn.utils.parametrize.register_parametrization(model.classifier, "weight", _UnitRows())
    model.normalize = True
    return model


def _default_model(dataset: str, num_classes: int, *, width: int = 512) -> nn.Module:
    """The profile's network: the digits MLP 64-width-width-32 with BatchNorm, or ResNet-32 on CIFAR."""
    return models.MLP(hidden=(width, width), num_classes=num_classes) if dataset == "digits" else models.resnet32(num_classes)


def _build_model(model: Callable, dataset: str, num_classes: int, head: str) -> nn.Module:
    net = model(dataset, num_classes)
    return _cosine_head(net) if head == "cosine" else net


# --------------------------------------------------------------------------- the benchmark
@dataclass(frozen=True)
class _Benchmark:
    dataset: str
    train: tuple          # what fit trains on (the long-tailed set, REPEAT times in a row for digits)
    train_set: tuple      # the long-tailed set itself
    test: tuple           # balanced; evaluated whenever fit evaluates, and at the end (evaluate_on)
    counts: np.ndarray
    num_classes: int
    epochs: int
    options: dict         # fit options every method shares


def _load(dataset: str, s: dict) -> tuple[tuple, tuple, np.ndarray]:
    """The long-tailed training set (its subset drawn with seed 0), the balanced test set, the counts."""
    if dataset == "digits":
        sp = data.load_digits(test_per_class=50, seed=0)
        counts = data.long_tailed_counts(s["N_MAX"], 10, s["IMBALANCE"])
        keep = data.make_imbalanced(sp.y_train, counts, seed=0)
        return (sp.x_train[keep], sp.y_train[keep]), (sp.x_test, sp.y_test), counts
    root = profiles.data_root()
    x_tr, y_tr = data.cifar_tensors(dataset, root, train=True, download=True, subset=s["SUBSET"])  # offline: a clear error
    test = data.cifar_tensors(dataset, root, train=False, download=True, subset=s["SUBSET"])
    c = int(y_tr.max()) + 1
    counts = data.long_tailed_counts(int(torch.bincount(y_tr).max()), c, s["IMBALANCE"])  # n_max, also on a packed subset
    keep = data.make_imbalanced(y_tr, counts, seed=0)
    return (x_tr[keep], y_tr[keep]), test, counts


def _benchmark(dataset: str, s: dict) -> _Benchmark:
    (x, y), test, counts = _load(dataset, s)
    opts = dict(batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"], amp=s["AMP"])
    if dataset == "digits":
        repeat = s["REPEAT"]
        fit_set = (x.repeat(repeat, *([1] * (x.ndim - 1))), y.repeat(repeat))   # one epoch = REPEAT passes
        epochs = max(1, s["STEPS"] // max(1, len(fit_set[1]) // s["BATCH"]))
    else:
        fit_set, epochs = (x, y), s["EPOCHS"]
        opts.update(schedule=s["SCHEDULE"], warmup_epochs=s["WARMUP"], milestones=tuple(s["MILESTONES"]), gamma=0.01,
                    augment=data.cifar_augment)
        if s["SCHEDULE"] == "mittag_leffler":   # the official code's E_alpha(-z) decay, alpha from the class entropy
            opts.update(milestones=(int(0.8 * epochs),), schedule_alpha=train.mittag_leffler_alpha(counts))
    opts.update(epochs=epochs, nc_every=epochs, test=test)
    return _Benchmark(dataset, fit_set, (x, y), test, counts, len(counts), epochs, opts)


def _evaluations(epochs: int, every: int) -> int:
    """How many times ``fit`` evaluates the training set with ``eval_every=every`` (NC at the last epoch)."""
    return 1 if every <= 0 else epochs // every + (epochs % every != 0)


def _folder(root, dataset: str, name: str, seed: int) -> str | None:
    return None if root is None else f"{root}/{dataset}-{''.join(ch for ch in name if ch.isalnum())}-seed{seed}"


def _job(bench: _Benchmark, name: str, method: Method, seed: int, *, model: Callable, eval_every: int,
         checkpoints, sync_batchnorm: bool) -> dict:
    """The keyword arguments of ``train.fit_run`` for one method and seed (it resumes from its checkpoint)."""
    make = functools.partial(_build_model, model, bench.dataset, bench.num_classes, method.head)
    return dict(model=make, loss=method.loss, train=bench.train, seed=seed, evaluate_on={"test": bench.test},
                eval_every=eval_every, checkpoint_dir=_folder(checkpoints, bench.dataset, name, seed),
                sync_batchnorm=sync_batchnorm, **bench.options)


def _rows(out: dict, bench: _Benchmark, name: str, seed: int, post_hoc: str | None, many: int, few: int) -> list[dict]:
    """The table rows of one run: test accuracies by shot group, final NC metrics and rho (and post-hoc LA)."""
    fin, logits = out["history"].final, out["evaluations"]["test"]["logits"]
    geometry = {k: float(fin[k]) for k in ("nc1", "nc2_w", "nc2_m", "nc3")}
    geometry["rho"] = float(metrics.loss_imbalance(torch.as_tensor(fin["class_loss"], dtype=torch.float64)))
    runs = [(name, logits)]
    if name == post_hoc:   # the same network, its test logits minus log pi_c
        runs.append((f"{name} + post-hoc LA", losses.logit_adjustment(logits, bench.counts)))
    return [{"dataset": bench.dataset, "method": label, "seed": seed,
             **metrics.shot_accuracy(z, bench.test[1], bench.counts, many=many, few=few), **geometry}
            for label, z in runs]


def _curve(history) -> tuple[np.ndarray, np.ndarray]:
    """(epochs, per-class training losses) of the epochs a run evaluated."""
    recs = [r for r in history.records if r.get("class_loss") is not None]
    return np.array([r["epoch"] + 1 for r in recs]), np.array([r["class_loss"] for r in recs], dtype=float)


@torch.no_grad()
def _at_init(bench: _Benchmark, model: Callable, seed: int) -> dict:
    """NC metrics and rho of the network before any step (the scale of the geometry metrics)."""
    torch.manual_seed(seed)
    net = _build_model(model, bench.dataset, bench.num_classes, "linear")
    device = "cuda" if torch.cuda.is_available() and bench.dataset != "digits" else "cpu"
    ev = train.evaluate(net.to(device), *bench.train_set)
    out = metrics.neural_collapse(ev["features"], ev["labels"], net.classifier.weight.detach().cpu())
    res = {k: float(out[k]) for k in ("nc1", "nc2_w", "nc2_m", "nc3")}
    res["rho"] = float(metrics.loss_imbalance(torch.as_tensor(ev["class_loss"], dtype=torch.float64)))
    return res


# --------------------------------------------------------------------------- cost before the run
_COSTS: dict = {}


def _chapter_cost(results, checkpoints) -> "train.ChapterCost":
    """One ChapterCost per chapter, profile and results folder in this process, so that every call's cells go into
    one record."""
    key = (profiles.profile(), profiles.scale(), None if results is None else str(results))
    if key not in _COSTS:
        _COSTS[key] = train.ChapterCost(CHAPTER, results=results, checkpoints=checkpoints)
    return _COSTS[key]


def _estimate(benches: list, jobs: list, model: Callable, s: dict, workers_runs: int) -> tuple:
    """Measure a few steps of the first benchmark's model and batch; estimate every job, side by side."""
    first = benches[0]
    probe_opts = {k: v for k, v in first.options.items() if k not in ("batch_size", "amp")}
    tp = train.measure_fit(functools.partial(_build_model, model, first.dataset, first.num_classes, "linear"),
                           torch.nn.CrossEntropyLoss(), first.train, batch_size=s["BATCH"], amp=s["AMP"],
                           parallel_runs=workers_runs, **probe_opts)
    by_name = {b.dataset: b for b in benches}
    one_by_one = 0.0
    for job, dataset in jobs:
        b = by_name[dataset]
        one_by_one += train.fit_seconds(tp, n=len(b.train[1]), epochs=b.epochs, batch_size=s["BATCH"],
                                        n_eval=len(b.train[1]) + len(b.test[1]),
                                        evals=_evaluations(b.epochs, job["eval_every"]))
        one_by_one += len(b.test[1]) * tp.eval_seconds
    return tp, train.in_parallel(one_by_one, max(1, workers_runs), tp)


def _announce(cost, name: str, seconds: float, tp) -> None:
    cost.add(name, seconds, tp)
    cost.announce(name, time_next_cell=False)   # the estimate before training; the call times its own training


# --------------------------------------------------------------------------- the call
def _check_methods(methods, counts, epochs: int) -> dict[str, Method]:
    named = methods(counts, epochs)
    if not isinstance(named, Mapping) or not named:
        raise TypeError(f"methods(counts, epochs) must return a non-empty dict of name -> loss factory or Method; "
                        f"got {type(named).__name__}.")
    out = {}
    for name, m in named.items():
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"methods(counts, epochs) must name each method with a non-empty string; got {name!r}.")
        if name.endswith("post-hoc LA"):
            raise ValueError(f"the method name {name!r} is reserved for the post-hoc logit adjustment rows; rename it.")
        out[name] = m if isinstance(m, Method) else Method(check_callable(f"methods[{name!r}]", m))
    return out


def _sizes(setting: Setting, sizes: dict | None, seeds) -> dict:
    s = dict(setting.sizes)
    for key, value in (sizes or {}).items():
        if key not in s:
            raise ValueError(f"sizes may only override the setting's sizes {sorted(s)}; got unknown key {key!r}.")
        s[key] = value
    if seeds is not None:
        if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
            raise TypeError(f"seeds must be a sequence of non-negative integers; got {type(seeds).__name__}.")
        s["SEEDS"] = [check_int("seeds", v, 0, what="each seed") for v in seeds]
    if not s["SEEDS"]:
        raise ValueError("seeds must hold at least one seed; got none.")
    if len(set(s["SEEDS"])) != len(s["SEEDS"]):
        raise ValueError(f"seeds must be distinct; got {s['SEEDS']}.")
    return s


def compare_reweighting(methods: Callable, *, seeds: Sequence[int] | None = None, setting: Setting | None = None,
                        sizes: dict | None = None, model: Callable | None = None, post_hoc: str | None = "CE",
                        checkpoints="auto", results=None, progress: bool | None = None,
                        name: str = "comparison") -> "ReweightingComparison":
    """Train every method for every seed on the profile's long-tailed benchmark; return the comparison.

    Every run uses one recipe (the setting's), builds its network after ``torch.manual_seed(seed)``, and is
    independent of the others: they run side by side in worker processes (:func:`run_jobs`; under ``torchrun``
    each run uses every rank), each giving the numbers it gives alone. Before training, a few steps of the model
    are timed and the estimate is printed; a progress bar counts finished runs. At the gpu and full profiles each
    run checkpoints every epoch and a rerun resumes (``ncbook.checkpoint_dir``); the full profile also saves the
    summary with :func:`ncbook.book.save_result`.

    Parameters
    ----------
    methods : callable
        ``methods(counts, epochs) -> {name: loss factory or Method}``: the methods, given the training counts
        ``n_c`` (ndarray of shape (C,), int64) and the run length in epochs (for the switch epochs of DRW, IB
        and the inverse method). A plain factory trains the linear head.
    seeds : sequence of int, optional
        Default the setting's ``SEEDS``. The first seed's runs also record the per-class training losses every
        ``EVAL_EVERY`` epochs (the curves).
    setting : Setting, optional
        Default :func:`reweighting_setting` (the active profile and scale).
    sizes : dict, optional
        Overrides of the setting's sizes (e.g. ``{"STEPS": 20}`` for a test); unknown keys are refused.
    model : callable, optional
        ``model(dataset, num_classes) -> nn.Module`` (an :mod:`ncbook.models` classifier); default the digits MLP
        64-WIDTH-WIDTH-32 with BatchNorm, or ResNet-32 on CIFAR.
    post_hoc : str or None
        The method whose network also gets post-hoc logit adjustment (a row ``"<name> + post-hoc LA"``, the same
        network's test logits minus ``log pi_c``); ``None``: none. Ignored when no method has that name.
    checkpoints : path, None or "auto"
        Folder of the runs' checkpoints; ``"auto"``: ``ncbook.checkpoint_dir("inverse_reweighting")`` at the gpu
        and full profiles, none at the quick one.
    results : path, optional
        Where the cost record (and, at the full profile, the summary) goes; default :func:`ncbook.results_dir`.
    progress : bool, optional
        A bar over finished runs; default :func:`ncbook.show_progress`.
    name : str
        The cell's name in the printed estimate and the cost record.

    Returns
    -------
    ReweightingComparison

    Raises
    ------
    TypeError, ValueError
        For a bad argument (named), an unknown size, duplicate seeds, or a method name ending in "post-hoc LA".
    ncbook.data.DatasetUnavailableError
        At the gpu or full profile without the CIFAR files (offline: the message says where to put them).

    Examples
    --------
    One method, one seed, a few steps (one run trains in this process):

    >>> import tempfile
    >>> def methods(counts, epochs):
    ...     return {"CE": lambda: torch.nn.CrossEntropyLoss()}
    >>> res = compare_reweighting(methods, seeds=[0], setting=reweighting_setting(profile="quick"),
    ...                           sizes={"STEPS": 4, "REPEAT": 1, "WIDTH": 8}, progress=False,
    ...                           results=tempfile.mkdtemp())   # doctest: +ELLIPSIS
    Cost at the quick profile on cpu ...
    Next cell, comparison: about ... of it from here on.
    >>> list(res.table["method"]), res.table.shape
    (['CE', 'CE + post-hoc LA'], (2, 12))
    """
    clock = Stopwatch()
    check_callable("methods", methods)
    setting = reweighting_setting() if setting is None else setting
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be an experiments.Setting (reweighting_setting()); got {type(setting).__name__}.")
    s = _sizes(setting, sizes, seeds)
    setting = Setting(setting.profile, setting.scale, s, _text(s))
    model = functools.partial(_default_model, width=s.get("WIDTH", 512)) if model is None else check_callable("model", model)
    progress = profiles.show_progress() if check_bool("progress", progress, allow_none=True) is None else progress
    if checkpoints == "auto":
        checkpoints = None if setting.profile == "quick" else profiles.checkpoint_dir(CHAPTER)
    check_path("checkpoints", checkpoints, allow_none=True)
    results = profiles.results_dir() if results is None else check_path("results", results)
    main = train.is_main_process()

    benches = [_benchmark(ds, s) for ds in s["DATASETS"]]
    named = {b.dataset: _check_methods(methods, b.counts, b.epochs) for b in benches}
    sync_bn = _in_torchrun() and torch.cuda.is_available()
    jobs, keys = [], []
    for b in benches:
        for seed in s["SEEDS"]:
            for label, method in named[b.dataset].items():
                every = s["EVAL_EVERY"] if seed == s["SEEDS"][0] else 0
                jobs.append((_job(b, label, method, seed, model=model, eval_every=every, checkpoints=checkpoints,
                                  sync_batchnorm=sync_bn), b.dataset))
                keys.append((b.dataset, label, seed))

    cost = _chapter_cost(results, checkpoints) if main else None
    tp, estimate = _estimate(benches, jobs, model, s, 1 if _in_torchrun() else len(jobs))
    if main:
        _announce(cost, name, estimate, tp)
    training = Stopwatch()
    outs = run_jobs(train.fit_run, [j for j, _ in jobs], progress=progress and main)
    if main:
        cost.record(name, training.seconds)

    by_name = {b.dataset: b for b in benches}
    rows, curves = [], {}
    for (dataset, label, seed), out in zip(keys, outs):
        rows += _rows(out, by_name[dataset], label, seed, post_hoc, s["MANY"], s["FEW"])
        if seed == s["SEEDS"][0]:
            curves[(dataset, label)] = _curve(out["history"])
    import pandas as pd

    table = pd.DataFrame(rows, columns=["dataset", "method", "seed", *METRICS])
    extras = {"counts": {b.dataset: [int(n) for n in b.counts] for b in benches},
              "epochs": {b.dataset: b.epochs for b in benches},
              "switch": {b.dataset: int(0.8 * b.epochs) for b in benches},
              "init": {b.dataset: _at_init(b, model, s["SEEDS"][0]) for b in benches},
              "training_seconds": training.seconds, "estimate_seconds": estimate}
    result = ReweightingComparison(CHAPTER, setting, table, curves, clock.seconds, extras)
    if setting.profile == "full" and main:
        result._save(results, name)
    return result


# --------------------------------------------------------------------------- the result
class ReweightingComparison(ExperimentResult):
    """The result of :func:`compare_reweighting`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per data set, method and seed: ``dataset``, ``method``, ``seed``, the test accuracies
        ``overall``, ``many``, ``medium``, ``few`` (fractions; NaN for an empty shot group) and the final
        training metrics ``nc1``, ``nc2_w``, ``nc2_m``, ``nc3``, ``rho``. A post-hoc LA row repeats its
        network's training metrics.
    histories : dict
        ``(dataset, method) -> (epochs, losses)``: the first seed's per-class training losses, ``epochs`` of
        shape (T,) (1-based, the end of each evaluated epoch) and ``losses`` of shape (T, C).
    extras : dict
        ``counts`` (dataset -> n_c), ``epochs`` (dataset -> run length), ``switch`` (dataset -> the epoch at
        80 % of training, where DRW and the inverse method start), ``init`` (dataset -> NC metrics and rho of
        the first seed's network before training), ``training_seconds``, ``estimate_seconds``.

    Verdicts (:meth:`verdict`) follow the book's rule for comparisons over seeds: a difference of means of
    two methods is resolved when it exceeds twice the larger seed standard deviation of that metric of
    the two (:meth:`noise` of the pair), so an unstable method widens only its own comparisons. The prose
    and :meth:`claims` read the same verdicts.
    """

    # ----------------------------------------------------------------- views
    @property
    def datasets(self) -> list[str]:
        """The data sets, in the order they ran (the first is the one the chapter reads)."""
        return list(dict.fromkeys(self.table["dataset"]))

    def _dataset(self, dataset: str | None) -> str:
        return self.datasets[0] if dataset is None else check_in("dataset", dataset, self.datasets)

    def _rows_of(self, dataset: str | None):
        return self.table[self.table["dataset"] == self._dataset(dataset)]

    def methods(self, dataset: str | None = None, *, trained: bool = False) -> list[str]:
        """The methods of a data set's rows, in table order; ``trained=True`` leaves the post-hoc rows out."""
        names = list(dict.fromkeys(self._rows_of(dataset)["method"]))
        return [m for m in names if not (trained and m.endswith("post-hoc LA"))]

    def _check_method(self, name: str, dataset: str | None) -> str:
        known = self.methods(dataset)
        if name not in known:
            raise ValueError(f"method must be one of {known}; got {name!r}.")
        return name

    def values(self, method: str, metric: str = "overall", *, dataset: str | None = None) -> np.ndarray:
        """The metric of every seed of one method (float64, in seed order)."""
        self._check_method(method, dataset)
        check_in("metric", metric, METRICS)
        rows = self._rows_of(dataset)
        return rows[rows["method"] == method][metric].to_numpy(dtype=np.float64)

    def summary(self, dataset: str | None = None, metrics: Sequence[str] = METRICS):
        """Mean and standard deviation over seeds (``ddof=0``) of each metric, one row per method of a data set.

        Returns a DataFrame indexed by method with a two-level column index ``(metric, "mean" | "std")``.
        """
        for m in metrics:
            check_in("metrics", m, METRICS)
        rows = self._rows_of(dataset)
        grouped = rows.groupby("method", sort=False)[list(metrics)]
        return grouped.agg(["mean", lambda v: float(v.std(ddof=0))]).rename(columns={"<lambda_0>": "std"}, level=1)

    def formatted(self, metrics: Sequence[str] = ACCURACY, *, dataset: str | None = None, digits: int = 3):
        """The summary as text, ``"mean ± std"`` over seeds, one row per method (a table for the page).

        Examples
        --------
        >>> _example().formatted(["overall"]).loc["CE", "overall"]
        '0.780 ± 0.008'
        """
        import pandas as pd

        summ = self.summary(dataset, metrics)
        return pd.DataFrame({m: [f"{summ.loc[i, (m, 'mean')]:.{digits}f} ± {summ.loc[i, (m, 'std')]:.{digits}f}"
                                 for i in summ.index] for m in metrics}, index=summ.index)

    def mean(self, method: str, metric: str = "overall", *, dataset: str | None = None) -> float:
        """The mean over seeds of one method's metric."""
        return float(np.mean(self.values(method, metric, dataset=dataset)))

    def noise(self, metric: str = "overall", *, dataset: str | None = None,
              methods: Sequence[str] | None = None) -> float:
        """Twice the largest seed standard deviation of ``metric`` among ``methods`` (:func:`seed_noise`).

        ``methods`` are the methods a comparison compares (:meth:`verdict` passes its two); without them,
        every method of the data set. A method whose runs vary a lot from seed to seed thus widens only
        the comparisons it takes part in.

        Examples
        --------
        >>> round(_example().noise(methods=["CE", "inverse + macro"]), 4)
        0.0163
        """
        check_in("metric", metric, METRICS)
        names = self.methods(dataset) if methods is None else [self._check_method(m, dataset) for m in methods]
        spreads = [float(np.std(self.values(m, metric, dataset=dataset))) for m in names]
        finite = [v for v in spreads if math.isfinite(v)]   # a method with a NaN metric (an empty shot group) has none
        return seed_noise(finite) if finite else math.nan

    def verdict(self, a: str, b: str, metric: str = "overall", *, dataset: str | None = None,
                lower_is_better: bool | None = None) -> Verdict:
        """Method ``a`` against ``b`` on ``metric`` over seeds, resolved at the :meth:`noise` of the two
        (:func:`compare_means`): twice the larger of their two seed standard deviations.

        ``"above"`` means ``a`` is *better*: higher for the accuracies, lower for the NC metrics and rho
        (``lower_is_better`` defaults to True for those); ``value`` is the gap in that direction.

        Examples
        --------
        >>> res = _example()      # CE about 0.78, inverse + macro about 0.83, seed spread 0.008
        >>> v = res.verdict("inverse + macro", "CE")
        >>> v.word(("beats", "ties with", "trails")), round(v.value, 3), round(v.threshold, 3)
        ('beats', 0.05, 0.016)
        """
        lower = metric in GEOMETRY if lower_is_better is None else check_bool("lower_is_better", lower_is_better)
        sign = -1.0 if lower else 1.0
        va, vb = sign * self.values(a, metric, dataset=dataset), sign * self.values(b, metric, dataset=dataset)
        noise = self.noise(metric, dataset=dataset, methods=(a, b))
        if not math.isfinite(noise):
            return Verdict("compare_means", "undefined", float(np.mean(va) - np.mean(vb)), noise)
        return compare_means(va, vb, noise=noise)

    def ranking(self, metric: str = "overall", methods: Sequence[str] | None = None, *, dataset: str | None = None,
                digits: int | None = None) -> list[tuple[str, float]]:
        """``(method, mean)`` from best to worst: highest accuracy first, lowest NC metric or rho first.

        Accuracies in percent rounded to 0.1 (``digits`` decimals otherwise: 3 for the geometry metrics).
        """
        names = self.methods(dataset) if methods is None else [self._check_method(m, dataset) for m in methods]
        scale, dig = (100.0, 1) if metric in ACCURACY else (1.0, 3)
        dig = dig if digits is None else digits
        rows = [(m, round(scale * self.mean(m, metric, dataset=dataset), dig)) for m in names]
        return sorted(rows, key=lambda mv: mv[1] if metric in GEOMETRY else -mv[1])

    def curves(self, dataset: str | None = None) -> dict:
        """``method -> (epochs, per-class training losses (T, C))`` of the first seed, for one data set."""
        ds = self._dataset(dataset)
        return {m: v for (d, m), v in self.histories.items() if d == ds}

    def _repr_markdown_(self) -> str:
        from ._core import markdown_table

        summ = self.summary(metrics=ACCURACY)
        frame = summ.copy()
        frame.columns = [f"{m} {k}" for m, k in frame.columns]
        head = (f"**{type(self).__name__}** ({self.setting.profile} profile: {self.setting.text}; "
                f"{self.seconds:.0f} s), test accuracy on {self.datasets[0]}, mean and std over seeds\n\n")
        return head + markdown_table(frame.reset_index(), digits=3)

    # ----------------------------------------------------------------- claims
    def baselines(self, dataset: str | None = None) -> list[str]:
        """The trained methods that are not a variant of the inverse method (the NC claims' baselines)."""
        return [m for m in self.methods(dataset, trained=True) if not m.startswith("inverse")]

    def claims(self) -> list[Claim]:
        """The paper's claims this comparison tests, on its first data set, by the rule of comparisons over seeds.

        Raises
        ------
        ValueError
            If a method the claims compare (CE, inverse, inverse + macro, Inv-Freq, CB, Focal, IB) was not run.
        """
        need = ["CE", "inverse", PAPER_METHOD, *PAPER_BASELINES]
        missing = [m for m in need if m not in self.methods()]
        if missing:
            raise ValueError(f"the claims compare methods this result lacks: {missing}; run compare_reweighting with "
                             f"all of {need}.")
        run, base = self.setting.text, self.baselines()
        setting_nc = f"{run}; baselines {', '.join(base)}"
        ours, tol = _gaps([self.verdict(PAPER_METHOD, "CE")])
        beats_ce = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=run, ranking=self.ranking("overall"),
            claim="Inverse reweighting (+ macro factor) improves top-1 accuracy over CE by more than twice the larger "
                  "seed standard deviation of the two: gain in mean accuracy, as a fraction of the test set "
                  "(ranking of all methods below, in %)",
            paper="CE 41.62 -> inverse reweighting 47.88 (top-1 %)",
            source=f"{_SOURCE}, experiments section: CIFAR-100-LT IF 100 comparison of reweighting methods, its own "
                   "recipe (cosine classifier, AutoAugment + Cutout, 200 epochs)")
        ours, tol = _gaps([self.verdict(PAPER_METHOD, b) for b in PAPER_BASELINES])
        beats_all = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=run,
            ranking=self.ranking("overall", [PAPER_METHOD, *PAPER_BASELINES]),
            claim="Inverse reweighting (+ macro factor) also beats the other reweighting methods, each by more than twice "
                  "the larger seed standard deviation of the pair: gain in mean accuracy over Inv-Freq, CB, Focal "
                  "and IB",
            paper="inverse reweighting outperforms CE and the reweighting strategies Inv-Freq, CB, Focal and IB",
            source=f"{_SOURCE}, experiments section: CIFAR-100-LT IF 100 comparison of reweighting methods")
        quoted = Claim(
            kind="paper", ours=None, setting=run,
            claim="The quoted top-1 accuracies themselves: CE 41.62 %, inverse reweighting 47.88 % on CIFAR-100-LT IF 100",
            paper="CE 41.62 -> inverse reweighting 47.88 (top-1 %)",
            source=f"{_SOURCE}, experiments section: CIFAR-100-LT IF 100 comparison of reweighting methods, its own "
                   "recipe",
            not_testable="the numbers belong to the paper's own recipe (cosine classifier, AutoAugment + Cutout); this "
                         "book runs Cao et al.'s recipe (and, in the quick profile, digits), so its accuracies are not "
                         "comparable with them")
        ours, tol = _gaps([self.verdict(PAPER_METHOD, b, "nc2_m") for b in base])
        nc2 = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=setting_nc,
            ranking=self.ranking("nc2_m", [PAPER_METHOD, *base]),
            claim="Inverse reweighting (+ macro factor) ends with a lower NC2 than every baseline, each by more than twice "
                  "the larger seed standard deviation of the pair: each baseline's NC2 (distance of the centred "
                  "class means to the simplex ETF, training features) minus the method's",
            paper="lower NC2 (distance to the simplex ETF) than the baselines",
            source=f"{_SOURCE}, experiments section: neural-collapse metrics of the methods")
        ours, tol = _gaps([self.verdict(PAPER_METHOD, b, "nc3") for b in base])
        nc3 = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=setting_nc,
            ranking=self.ranking("nc3", [PAPER_METHOD, *base]),
            claim="Inverse reweighting (+ macro factor) ends with a lower NC3 than every baseline, each by more than twice "
                  "the larger seed standard deviation of the pair: each baseline's NC3 (distance of the "
                  "classifier to the centred class means) minus the method's",
            paper="lower NC3 (distance to self-duality) than the baselines",
            source=f"{_SOURCE}, experiments section: neural-collapse metrics of the methods")
        ours, tol = _gaps([self.verdict(PAPER_METHOD, b, "rho") for b in base])
        rho = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=setting_nc,
            ranking=self.ranking("rho", [PAPER_METHOD, *base]),
            claim="Inverse reweighting (+ macro factor) reaches the lowest loss imbalance, below every baseline, each by "
                  "more than twice the larger seed standard deviation of the pair: each baseline's rho (this "
                  "book's definition, final per-class training losses) minus the method's",
            paper="the lowest class-wise loss imbalance coefficient rho",
            source=f"{_SOURCE}, experiments section: loss imbalance of the methods")
        ours, tol = _gaps([self.verdict(PAPER_METHOD, "inverse")])
        ablation = Claim(
            kind="paper", ours=ours, tolerance=tol, setting=run,
            ranking=self.ranking("overall", [PAPER_METHOD, "inverse", "CE"]),
            claim="Ablation: the batch-wise inverse weights and the macro factor are complementary, both together best: "
                  "gain in mean top-1 accuracy of inverse + macro over the batch-wise weights alone, above twice the "
                  "larger seed standard deviation of the two (the macro factor alone is not run here)",
            paper="the batch-wise inverse component and the macro-level compensation are complementary; combining "
                  "both gives the best results",
            source=f"{_SOURCE}, experiments section: ablation study")
        return [beats_ce, beats_all, quoted, nc2, nc3, rho, ablation]

    # ----------------------------------------------------------------- saving
    def _save(self, folder, name: str = "comparison") -> list:
        """Save each data set's summary with :func:`ncbook.book.save_result` (setting ``<dataset>-summary`` for the
        chapter's comparison, ``<dataset>-<name>-summary`` for another call, so that it never replaces it)."""
        paths = []
        tag = "" if name == "comparison" else "-" + "".join(ch for ch in name if ch.isalnum())
        for ds in self.datasets:
            summ = self.summary(ds)
            metrics_ = {m: {k: (float(summ.loc[m, (k, "mean")]), float(summ.loc[m, (k, "std")])) for k in METRICS}
                        for m in summ.index}
            paths.append(save_result(folder, chapter=CHAPTER, setting=f"{ds}{tag}-summary",
                                     seed=self.setting.sizes["SEEDS"][0], metrics=metrics_, wall_seconds=self.seconds,
                                     config={"recipe": "Cao et al. 2019 (ResNet-32)", "setting": self.setting.text,
                                             "seeds": list(self.setting.sizes["SEEDS"])}))
        return paths


def _example() -> ReweightingComparison:
    """A made-up two-method result of three seeds (the docstrings' examples)."""
    import pandas as pd

    table = pd.DataFrame({"dataset": "digits", "method": ["CE"] * 3 + [PAPER_METHOD] * 3, "seed": [0, 1, 2] * 2,
                          "overall": [0.77, 0.78, 0.79, 0.82, 0.83, 0.84]})
    return ReweightingComparison(CHAPTER, Setting("quick", "paper", {"SEEDS": [0, 1, 2]}, "made up"), table)


def _gaps(verdicts: list[Verdict]) -> tuple:
    """``(ours, tolerance)`` of a claim decided by ``compare_means`` verdicts: every gap above its noise (the prose's
    rule); one verdict gives one number, several a list."""
    gaps, noises = [v.value for v in verdicts], [v.threshold for v in verdicts]
    bound = noises[0] if len(set(noises)) == 1 else noises
    return (gaps[0] if len(gaps) == 1 else gaps), {"above": bound}


# --------------------------------------------------------------------------- the chapter's other checks
def inverse_reweighting_checks(*, etf_class_losses, class_losses, weights_by_hand: Mapping[float, object],
                               gradient_gap: float) -> list[Claim]:
    """The chapter's closed-form checks and its one paper claim that needs no training, as claims to record.

    Parameters
    ----------
    etf_class_losses : array-like of shape (C,)
        The cross-entropy of every class at a scaled simplex ETF (collapsed features, self-dual classifier).
    class_losses : array-like of shape (C',)
        The class losses the closed form was evaluated on by hand.
    weights_by_hand : mapping alpha -> array-like of shape (C',)
        ``u*_c = (Lbar L_c + alpha) / (L_c^2 + alpha)`` by hand (uniform prior), per Tikhonov strength.
    gradient_gap : float
        ``max |g_official - g_detached| / max |g_official|`` on one batch (alpha = 0, no clamp).

    Returns
    -------
    list of Claim
        The paper's equal-loss statement (rho within 1e-12 of 0), the closed form against
        :func:`ncbook.reweighting.inverse_weights` (relative 1e-12), the largest inverse-frequency weight of
        CIFAR-10-LT IF 100 against its formula, and the gradient gap above 1e-3.

    Raises
    ------
    ValueError
        For a non-finite or negative class loss, or a gradient gap that is not a finite number.

    Examples
    --------
    >>> L = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    >>> checks = inverse_reweighting_checks(etf_class_losses=torch.full((10,), 0.2), class_losses=L,
    ...     weights_by_hand={0.0: L.mean() / L}, gradient_gap=0.9)
    >>> [c.verdict for c in checks]
    ['reproduced', 'passed', 'passed', 'passed']
    """
    etf = torch.as_tensor(etf_class_losses, dtype=torch.float64)
    L = torch.as_tensor(class_losses, dtype=torch.float64)
    gap = float(gradient_gap)
    if not math.isfinite(gap):
        raise ValueError(f"gradient_gap must be a finite number; got {gradient_gap!r}.")
    rho = float(metrics.loss_imbalance(etf))
    v = matches(rho, 0.0, atol=1e-12)
    out = [Claim(
        kind="paper", ours=rho, derived=0.0, derived_how="rho = 0 when every class has the same loss",
        tolerance={"abs": v.threshold, "against": "derived"}, setting=f"C = {etf.numel()}, collapsed features and "
        "classifier rows at a scaled simplex ETF",
        claim="Under neural collapse (collapsed features, self-dual simplex ETF classifier, no bias) every class has "
              "the same mean cross-entropy: loss imbalance rho of the class losses",
        paper="under NC1-NC3 all classes share the same mean loss; a non-zero loss imbalance rules out the ETF",
        source=f"{_SOURCE}, the neural-collapse analysis of the method section (the equal-loss statement)")]
    for alpha, by_hand in weights_by_hand.items():
        ours = reweighting.inverse_weights(L, alpha=float(alpha), eps=0.0)
        ref = torch.as_tensor(by_hand, dtype=torch.float64)
        v = matches(ours, ref, rtol=1e-12)
        out.append(Claim(
            kind="check", ours=ours.tolist(), derived=ref.tolist(), derived_how="the closed form evaluated by hand",
            tolerance={"abs": v.threshold, "against": "derived"}, setting="ncbook.reweighting.inverse_weights",
            claim=f"ncbook.reweighting.inverse_weights evaluates the closed form u_c* = (Lbar L_c + alpha u0_c) / "
                  f"(L_c^2 + alpha) of the inverse problem: L = {tuple(round(float(x), 6) for x in L)}, uniform "
                  f"prior, alpha = {float(alpha):g}"))
    counts = data.long_tailed_counts(5000, 10, 100)
    hand = float(len(counts) / counts.min() / (1.0 / counts).sum())
    ours = float(reweighting.inverse_frequency_weights(counts).max())
    v = matches(ours, hand, rtol=1e-12)
    out.append(Claim(
        kind="check", ours=ours, derived=hand, derived_how="C (1/n_min) / sum_k (1/n_k) from the class counts",
        tolerance={"abs": v.threshold, "against": "derived"},
        setting="ncbook.reweighting.inverse_frequency_weights, class counts only",
        claim="Largest inverse-frequency baseline weight on CIFAR-10-LT IF 100 (weights normalised to sum C)"))
    v = exceeds(gap, 1e-3)
    out.append(Claim(
        kind="check", ours=gap, tolerance={"above": v.threshold}, setting="one batch of 128 from long-tailed digits",
        claim="Detaching the weights changes the gradient of the official loss (alpha = 0, no clamp): largest "
              "difference of the two gradients on one batch, relative to the largest entry (this book's analysis of "
              "the official code)"))
    return out


# --------------------------------------------------------------------------- the paper's numbers
#: (data set, method, top-1 %, recipe, source): quoted from the papers, never computed here
QUOTED = (
    ("CIFAR-10-LT IF 100", "LDAM-DRW", 77.03, "Cao et al.", "Cao et al. 2019, Table 2: top-1 error 22.97 (ResNet-32)"),
    ("CIFAR-100-LT IF 100", "LDAM-DRW", 42.04, "Cao et al.", "Cao et al. 2019, Table 2: top-1 error 57.96 (ResNet-32)"),
    ("CIFAR-100-LT IF 100", "CE", 41.62, "Wang et al.",
     "Wang et al. 2026, experiments: comparison with the reweighting baselines, their recipe"),
    ("CIFAR-100-LT IF 100", "inverse + macro", 47.88, "Wang et al.", "Wang et al. 2026, the same comparison"),
)


def quoted_reweighting_results(results=None):
    """The papers' CIFAR-LT accuracies beside this book's full-profile runs of the same recipe, where saved.

    Parameters
    ----------
    results : path, optional
        The folder a full-profile run saved its summaries in (default :func:`ncbook.results_dir`).

    Returns
    -------
    pandas.DataFrame
        Columns ``data set``, ``method``, ``quoted top-1 %``, ``recipe``, ``source``, ``ours`` (mean ± std over
        seeds in percent, filled only for rows of Cao et al.'s recipe that a full-profile run saved; "—" else).

    Examples
    --------
    >>> quoted_reweighting_results("/nonexistent")["quoted top-1 %"].tolist()
    [77.03, 42.04, 41.62, 47.88]
    """
    import pandas as pd

    folder = profiles.results_dir() if results is None else check_path("results", results)
    ours = {rec["setting"].removesuffix("-summary"): rec["metrics"] for rec in load_results(Path(folder), CHAPTER)
            if rec["setting"].endswith("-summary")}
    rows = []
    for name, method, value, recipe, source in QUOTED:
        key = "cifar10" if name.startswith("CIFAR-10-") else "cifar100"
        mine = ours.get(key, {}).get(method)
        cell = f"{100 * mine['overall'][0]:.2f} ± {100 * mine['overall'][1]:.2f}" if mine and recipe == "Cao et al." else "—"
        rows.append({"data set": name, "method": method, "quoted top-1 %": value, "recipe": recipe, "source": source,
                     "ours": cell})
    return pd.DataFrame(rows)
