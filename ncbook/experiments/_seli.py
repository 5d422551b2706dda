"""The experiments of the SELI chapter: the UFM trained towards SELI, the ridge path, a real network.

Thrampoulidis, Kini, Vakilian and Behnia, "Imbalance Trouble: Revisiting Neural-Collapse Geometry",
NeurIPS 2022, arXiv:2208.05512.

Letters (the book's notation): ``C`` classes; STEP counts with ``C_maj`` majority classes of ``R n_min``
samples and ``C_min`` minority classes of ``n_min``; ``d`` the feature dimension; ``W`` the classifier
``(C, d)``, ``H`` the features ``(n, d)``, ``Z = H W^T`` the logits; the SEL matrix ``Z_hat = Y P``;
``lambda`` the ridge weight next to the *mean* loss; ``dist`` the scale-free Frobenius distance of
:func:`ncbook.geometry.frobenius_distance`.

Three calls, each returning an :class:`~ncbook.experiments.ExperimentResult` with the claims it supports:

* :func:`seli_ufm`: the sample-level cross-entropy UFM at ``lambda = 0``, trained by normalised gradient
  descent (NGD) and by plain gradient descent (GD) for every ratio ``R`` of the plan (``C = 4``, half
  minorities), with the distances of its logits to the SEL matrix and of its Grams to SELI and the ETF;
* :func:`seli_ridge_path`: the exact ridge optimum ``Z_lambda`` (:func:`ncbook.ufm.ridge_optimum`) along the
  plan's grid of ``lambda`` for STEP counts at ``R = 10``, and the balanced control;
* :func:`seli_network`: a network trained on STEP-imbalanced data (digits and an MLP at the quick profile,
  CIFAR-10 and a ResNet-32 at the gpu and full profiles), its classifier Gram and centred class means measured
  against SELI and the ETF as it trains.

The sizes of every profile are :data:`ncbook.profiles.PLANS` ``["seli"]`` (:func:`seli_setting`). The UFM
runs go to worker processes at the gpu and full profiles (:func:`~ncbook.experiments.run_jobs`) and show a bar
over finished runs; the network call measures a few training steps and prints its cost estimate before it
trains, shows a bar over epochs and, at the gpu and full profiles, checkpoints under
:func:`ncbook.checkpoint_dir` so that a rerun resumes. Every CPU run trains on one thread, so its numbers do not
depend on where it ran. Under ``torchrun`` every rank runs every UFM run and the network trains data-parallel
(:func:`ncbook.train.fit`); rank 0 writes the records.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from .. import data, geometry, metrics, models, profiles, train, ufm
from .._status import InaccurateSolutionWarning
from .._validation import check_bool, check_callable, check_in, check_instance, check_int, check_nonnegative, \
    check_path, check_positive, check_sequence
from ._core import Claim, ExperimentResult, Setting, Stopwatch, run_jobs, torch_threads
from ._verdicts import Verdict, exceeds, matches

__all__ = ["SeliNetwork", "SeliRidgePath", "SeliUFM", "seli_model", "seli_network", "seli_ridge_path", "seli_setting",
           "seli_ufm"]

CHAPTER = "seli"
PAPER = "Thrampoulidis et al. 2022"
#: The UFM's class split: two majority and two minority classes (C = 4, half minorities).
UFM_SPLIT = (2, 2)
#: NGD "approaches SELI" when its minority-minority classifier cosine is within this of SELI's (absolute).
COSINE_MATCH = 1e-2
#: The ridge weight of the check and of the balanced control, and the weight decay of the follow-up recipe.
RIDGE_CHECK, FOLLOW_UP_WD = 1e-2, 5e-4
#: Ridge "changes the geometry" when Z_lambda is further than this from SELI; the balanced control stays within
#: CONTROL_ZERO (solver precision).
RIDGE_MOVES, CONTROL_ZERO = 1e-2, 1e-6
#: A minority classifier row "vanished" when its norm is below this fraction of the largest row's; two minority
#: rows "coincide" when their cosine exceeds 1 - COINCIDE.
VANISHED, COINCIDE = 1e-9, 1e-6
_MODELS = {"digits": "MLP", "cifar10": "ResNet-32"}
_LIST_SIZES = ("RATIOS", "LAMBDAS")


# ----------------------------------------------------------------------------- the setting
def _describe(s: dict) -> str:
    ratios = ", ".join(f"{r:g}" for r in s["RATIOS"])
    net = f"MLP 64-{s['WIDTH']}-{s['WIDTH']}-32" if s["DATASET"] == "digits" else "ResNet-32"
    data_name = "digits" if s["DATASET"] == "digits" else \
        f"CIFAR-10{' (the gpu subset)' if s.get('SUBSET') else ''}"
    return (f"UFM with C = 4 (half minorities, n_min = {s['N_MIN']}, d = {s['UFM_DIM']}), R in ({ratios}), "
            f"NGD {s['NGD_STEPS']} steps of length {s['NGD_LR']:g} and GD {s['GD_STEPS']} steps of size "
            f"{s['GD_LR']:g}; ridge path over {len(s['LAMBDAS'])} values of "
            f"lambda; {data_name} STEP {s['STEP_MAJ']}/{s['STEP_MIN']}, {net}, {s['EPOCHS']} epochs of {s['BATCH']}")


def _smoke(sizes: dict) -> dict:
    """The smoke scale: every code path of the gpu or full profile, tiny sizes (a test, not a result)."""
    lambdas = tuple(sizes["LAMBDAS"])
    return {**sizes, "NGD_STEPS": 1000, "GD_STEPS": 1000, "RECORD": 20, "LAMBDAS": lambdas[::3] + lambdas[-1:],
            "EPOCHS": 2, "BATCH": 50, "EVAL_EVERY": 1, "STEP_MAJ": 20, "STEP_MIN": 4}



def _check_sizes(sizes: dict) -> dict:
    """The sizes, each checked (a clear message naming the size, what was expected and what arrived)."""
    s = dict(sizes)
    check_in("DATASET", s["DATASET"], tuple(_MODELS))
    check_in("SUBSET", s["SUBSET"], (None,) + data.SUBSETS)
    for key, low in (("UFM_DIM", 3), ("N_MIN", 1), ("NGD_STEPS", 1), ("GD_STEPS", 1), ("RECORD", 1), ("EPOCHS", 1),
                     ("BATCH", 2), ("EVAL_EVERY", 1), ("STEP_MAJ", 2), ("STEP_MIN", 1)):
        s[key] = check_int(key, s[key], low)
    if s["STEP_MIN"] >= s["STEP_MAJ"]:
        raise ValueError(f"STEP_MIN must be below STEP_MAJ (minorities are the smaller classes); got "
                         f"{s['STEP_MIN']} and {s['STEP_MAJ']}.")
    s["WIDTH"] = check_int("WIDTH", s["WIDTH"], 1, allow_none=s["DATASET"] != "digits")
    for key in ("LR", "NGD_LR", "GD_LR"):
        s[key] = check_positive(key, s[key])
    s["WD"] = check_nonnegative("WD", s["WD"])
    s["AMP"] = check_bool("AMP", s["AMP"])
    s["RATIOS"] = check_sequence("RATIOS", s["RATIOS"], lambda n, v: check_int(n, v, 1))
    s["LAMBDAS"] = check_sequence("LAMBDAS", s["LAMBDAS"], check_positive)
    return s


def seli_setting(*, profile: str | None = None, scale: str | None = None, **changes) -> Setting:
    """The profile, scale and sizes of the SELI chapter's experiments (from :data:`ncbook.profiles.PLANS`).

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile`.
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`. The smoke scale shrinks the gpu and full profiles (1000 UFM steps, every
        third ``lambda``, 2 epochs on a tiny STEP subset of the CIFAR stand-in); the quick profile ignores it.
    **changes
        Sizes to change, by their plan name in lower or upper case: the UFM's ``ufm_dim`` (``d``), ``n_min``,
        ``ratios`` (the ``R`` of the runs), ``ngd_steps`` and ``ngd_lr`` (normalised GD's steps and their
        length), ``gd_steps`` and ``gd_lr`` (plain GD's steps and step size), ``record`` (steps between history
        points); the ridge path's ``lambdas``; the network's ``dataset``, ``subset``, ``epochs``, ``batch``,
        ``lr``, ``wd``, ``eval_every`` (epochs between the SELI measurements), ``step_maj`` and ``step_min``
        (samples of a majority and of a minority class), ``width`` (the digits MLP's hidden width), ``amp``
        (bf16 autocast where the device has it, see :func:`ncbook.train.fit`).

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
    >>> s = seli_setting(profile="quick", epochs=5)
    >>> s.sizes["EPOCHS"], s.sizes["RATIOS"], s.sizes["DATASET"]
    (5, (1, 10, 100), 'digits')
    """
    setting = Setting.active(profiles.PLANS[CHAPTER].params, _describe, profile=profile, scale=scale, smoke=_smoke)
    return setting.changed(changes, what="the SELI experiments", check=_check_sizes, text=_describe)


def _check_setting(setting) -> Setting:
    if setting is None:
        return seli_setting()
    if not isinstance(setting, Setting) or "NGD_STEPS" not in setting.sizes:
        raise TypeError(f"setting must be a Setting of the SELI chapter, as seli_setting() returns; got "
                        f"{type(setting).__name__}.")
    return Setting(setting.profile, setting.scale, _check_sizes(setting.sizes), setting.text)


def _step_counts(ratio: int, n_min: int) -> list[int]:
    """STEP counts of the UFM: two majority classes of ``ratio * n_min`` samples, then two minorities of ``n_min``."""
    return [ratio * n_min] * UFM_SPLIT[0] + [n_min] * UFM_SPLIT[1]


def _with_claims_by_key(cls):
    """Give a result class ``claim(key)`` over its ``_claims()`` dict and ``claims()`` in the chapter's order."""
    def claims(self) -> list[Claim]:
        return list(self._claims().values())

    def claim(self, key: str) -> Claim:
        found = self._claims()
        if key not in found:
            raise ValueError(f"key must be one of {list(found)}; got {key!r}.")
        return found[key]

    claims.__doc__ = "The claims this result supports, in the order the chapter states them."
    claim.__doc__ = ("One claim by its key; its ``verdict`` is what the record will say.\n\n"
                     "Raises\n------\nValueError\n    For a key this result has no claim for (the message lists them).")
    cls.claims, cls.claim = claims, claim
    return cls


# ----------------------------------------------------------------------------- the UFM runs
def _ufm_run(*, counts, dim: int, optimizer: str, lr: float, steps: int, record_every: int, seed: int):
    """One UFM run (in a worker, or here): GD's "inaccurate" status is the finding, so its warning is silenced."""
    with torch_threads(1), warnings.catch_warnings():
        if optimizer == "gd":
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return ufm.train_ufm(counts, dim, optimizer=optimizer, lr=lr, steps=steps, record_every=record_every,
                             seed=seed)


@_with_claims_by_key
class SeliUFM(ExperimentResult):
    """The cross-entropy UFM at ``lambda = 0`` trained by NGD and by GD for each ``R`` (:func:`seli_ufm`).

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row per run: ``ratio`` (``R``), ``optimizer`` ("ngd" or "gd"), ``steps``, ``z_sel`` (distance of the
        logits to the SEL matrix at the end), ``z_sel_init`` (at initialisation), ``w_seli``, ``w_etf``,
        ``m_seli``, ``m_etf`` (Gram of ``W`` / of the class means to SELI / the ETF at the end), ``cos_min``
        (cosine of the two minority classifiers), ``seli_cos_min`` (SELI's, from the STEP closed form),
        ``status`` (the solver's: "inaccurate" when the gradient is still above its tolerance), ``seconds``.
    histories : dict
        ``(ratio, optimizer) -> history`` of :func:`ncbook.ufm.train_ufm` (arrays over the recorded steps).
    extras : dict
        ``"runs"``: ``(ratio, optimizer) -> CEUFMResult``.
    """

    def run(self, ratio: int, optimizer: str):
        """The :class:`~ncbook.ufm.CEUFMResult` of one run.

        Raises
        ------
        ValueError
            For a run the result does not hold.
        """
        runs = self.extras["runs"]
        if (ratio, optimizer) not in runs:
            raise ValueError(f"(ratio, optimizer) must be one of {sorted(runs)}; got {(ratio, optimizer)!r}.")
        return runs[ratio, optimizer]

    def row(self, ratio: int, optimizer: str):
        """The table's row of one run."""
        self.run(ratio, optimizer)
        t = self.table
        return t[(t.ratio == ratio) & (t.optimizer == optimizer)].iloc[0]

    @property
    def ratios(self) -> tuple:
        return tuple(self.setting.sizes["RATIOS"])

    @property
    def gd_ratio(self) -> float:
        """Plain GD's distance of the logits to SEL at the largest ``R`` over that at the smallest."""
        lo, hi = min(self.ratios), max(self.ratios)
        return float(self.row(hi, "gd").z_sel / self.row(lo, "gd").z_sel)

    def verdicts(self) -> dict[str, Verdict]:
        """``"approaches"``: NGD's minority cosine at the largest ``R`` against SELI's (within
        :data:`COSINE_MATCH`); ``"worsens"``: :attr:`gd_ratio` above 1."""
        top = self.row(max(self.ratios), "ngd")
        return {"approaches": matches(top.cos_min, top.seli_cos_min, atol=COSINE_MATCH, rtol=0.0),
                "worsens": exceeds(self.gd_ratio, 1.0)}

    def _claims(self) -> dict[str, Claim]:
        s = self.setting.sizes
        r_hi, r_lo = max(self.ratios), min(self.ratios)
        top = self.row(r_hi, "ngd")
        where = f"UFM, C = 4, half minorities, n_min = {s['N_MIN']}, d = {s['UFM_DIM']}"
        return {
            "approaches": Claim(
                "paper", f"Training the unregularised CE UFM approaches SELI: minority-minority classifier cosine at "
                f"R = {r_hi}",
                paper="experiments on synthetic and real data confirm convergence to SELI",
                source=f"{PAPER}, abstract (an experimental finding; the theorem covers the SVM and the ridge path)",
                derived=float(top.seli_cos_min), derived_how="our STEP closed form", ours=float(top.cos_min),
                setting=f"{where}, R = {r_hi}, normalised GD {s['NGD_STEPS']} steps of length {s['NGD_LR']:g}",
                tolerance={"abs": COSINE_MATCH, "against": "derived"}),
            "worsens": Claim(
                "paper", f"Convergence to SELI worsens with imbalance: plain GD's distance of the logits to SEL, "
                f"R = {r_hi} over R = {r_lo}",
                paper="convergence worsens with increasing imbalances", source=f"{PAPER}, abstract (experiments)",
                ours=self.gd_ratio, setting=f"{where}, plain GD {s['GD_STEPS']} steps of size {s['GD_LR']:g}, lambda = 0",
                tolerance={"above": 1.0}),
        }


def seli_ufm(setting: Setting | None = None, *, seed: int = 0, workers: int | None = None,
             progress: bool | None = None) -> SeliUFM:
    """Train the sample-level CE UFM at ``lambda = 0`` with NGD and with GD for every ``R`` of the setting.

    Each run starts from the same random features (``seed``) for counts ``(R n_min, R n_min, n_min, n_min)``
    and dimension ``UFM_DIM``: NGD takes ``NGD_STEPS`` steps of length ``NGD_LR`` along ``-grad log L``, GD
    ``GD_STEPS`` steps of size ``GD_LR`` (:func:`ncbook.ufm.train_ufm`, float64, one thread).

    Parameters
    ----------
    setting : Setting, optional
        From :func:`seli_setting` (default: the active profile's).
    seed : int, >= 0
        The initialisation of every run.
    workers : int, optional
        Worker processes (:func:`~ncbook.experiments.run_jobs`). Default: 1 at the quick profile (its runs take
        about a second, about what starting a worker costs), else ``run_parallel``'s default.
    progress : bool, optional
        A bar over finished runs; default :func:`ncbook.profiles.show_progress`.

    Returns
    -------
    SeliUFM

    Raises
    ------
    TypeError, ValueError
        For a setting that is not one of this chapter, a negative seed or a bad ``workers``.

    Examples
    --------
    >>> tiny = seli_setting(profile="quick", ratios=(1, 10), ngd_steps=50, gd_steps=50, record=25)
    >>> res = seli_ufm(tiny, progress=False)
    >>> res.table[["ratio", "optimizer", "steps"]].values.tolist()
    [[1, 'ngd', 50], [1, 'gd', 50], [10, 'ngd', 50], [10, 'gd', 50]]
    >>> res.claim("worsens").tolerance
    {'above': 1.0}
    """
    clock = Stopwatch()
    setting = _check_setting(setting)
    seed = check_int("seed", seed, 0)
    workers = check_int("workers", workers, 1, allow_none=True)
    check_bool("progress", progress, allow_none=True)
    if workers is None and setting.profile == "quick":
        workers = 1
    s = setting.sizes
    keys = [(r, opt) for r in s["RATIOS"] for opt in ("ngd", "gd")]
    configs = [dict(counts=_step_counts(r, s["N_MIN"]), dim=s["UFM_DIM"], optimizer=opt,
                    lr=s["NGD_LR"] if opt == "ngd" else s["GD_LR"], steps=s["NGD_STEPS"] if opt == "ngd" else s["GD_STEPS"],
                    record_every=s["RECORD"], seed=seed) for r, opt in keys]
    outs = run_jobs(_ufm_run, configs, progress=progress, workers=workers)
    import pandas as pd

    rows = []
    for (r, opt), res in zip(keys, outs):
        h = res.history
        rows.append(dict(ratio=r, optimizer=opt, steps=int(res.iterations), z_sel=float(h["z_sel"][-1]),
                         z_sel_init=float(h["z_sel"][0]), w_seli=float(h["w_seli"][-1]), w_etf=float(h["w_etf"][-1]),
                         m_seli=float(h["m_seli"][-1]), m_etf=float(h["m_etf"][-1]),
                         cos_min=float(geometry.cosine_matrix(res.W)[-2, -1]),
                         seli_cos_min=float(geometry.seli_step_closed_form(r, *UFM_SPLIT)["w_cos_min_min"]),
                         status=res.status, seconds=float(res.seconds)))
    table = pd.DataFrame(rows)
    return SeliUFM(CHAPTER, setting, table, {k: o.history for k, o in zip(keys, outs)}, clock.seconds,
                   {"runs": dict(zip(keys, outs))})


# ----------------------------------------------------------------------------- the ridge path
def _sci(x: float) -> str:
    """``1e-2`` for 0.01, ``5e-4`` for 0.0005 (a power of ten's multiple as the chapter writes it)."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _minority_state(classifiers: np.ndarray) -> tuple[float, float, bool]:
    """Minority over majority norm (mean of the last two rows over the first two), the minority cosine (NaN when a
    minority row vanished), and whether the minorities coincide (a row vanished or cosine above 1 - COINCIDE)."""
    norms = np.linalg.norm(classifiers, axis=1)
    vanished = norms[-2:].min() <= VANISHED * norms.max()
    ratio = float(norms[-2:].mean() / norms[:2].mean()) if norms[:2].mean() > 0 else math.nan
    cos = math.nan if vanished else float(geometry.cosine_matrix(classifiers)[-2, -1])
    return ratio, cos, bool(vanished or cos > 1 - COINCIDE)


@_with_claims_by_key
class SeliRidgePath(ExperimentResult):
    """The exact ridge optimum along a grid of ``lambda`` (:func:`seli_ridge_path`).

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row per ``lambda``: ``lam``, ``sel_distance`` (``dist`` of ``Z_lambda`` to the SEL matrix),
        ``w_norm_ratio`` (mean minority over mean majority classifier norm), ``cos_min`` (cosine of the two
        minority classifiers; NaN where one vanished), ``collapsed`` (the minority classifiers coincide or
        vanish), ``objective``, ``status``.
    extras : dict
        ``counts`` (the STEP counts), ``seli_w_norm_ratio`` (SELI's norm ratio, the ``lambda -> 0`` limit),
        ``check_lam`` and ``at_check`` (``lambda`` of the check and ``Z_lambda``'s distance there),
        ``control_counts`` and ``control`` (balanced counts with the same ``n``, and their distance at
        ``check_lam``), ``follow_up`` (the distance at the follow-up recipe's weight decay, 5e-4),
        ``optimum`` (the :class:`~ncbook.ufm.RidgeOptimum` at ``check_lam``).
    """

    @property
    def counts(self) -> np.ndarray:
        return self.extras["counts"]

    @property
    def collapse_lambda(self) -> float:
        """The smallest ``lambda`` of the grid at which the minority classifiers coincide (NaN if none)."""
        hit = self.table[self.table.collapsed]
        return float(hit.lam.min()) if len(hit) else math.nan

    def rate_products(self, first: int = 4) -> np.ndarray:
        """``dist(Z_lambda, SELI) * log(1 / lambda)`` over the ``first`` smallest ``lambda`` of the grid."""
        rows = self.table.sort_values("lam").head(check_int("first", first, 1))
        return rows.sel_distance.to_numpy() * np.log(1.0 / rows.lam.to_numpy())

    def verdicts(self) -> dict[str, Verdict]:
        """``"moves"``: ``Z_lambda`` at ``check_lam`` further than :data:`RIDGE_MOVES` from SELI; ``"control"``:
        the balanced control within :data:`CONTROL_ZERO` of it (solver precision)."""
        return {"moves": exceeds(self.extras["at_check"], RIDGE_MOVES),
                "control": matches(self.extras["control"], 0.0, atol=CONTROL_ZERO)}

    def _claims(self) -> dict[str, Claim]:
        e = self.extras
        return {"ridge": Claim(
            "paper", "Ridge regularisation changes the geometry with minorities, unlike the balanced case: distance of "
            f"the ridge optimum Z_lambda to SELI at lambda = {_sci(e['check_lam'])} (on the mean CE), with minorities, "
            "then for the balanced control",
            paper="unlike the balanced case, when minorities are present, ridge-regularization plays a critical role "
                  "in tweaking the geometry",
            source=f"{PAPER}, abstract (the paper's finite-regularisation analysis)",
            ours=[float(e["at_check"]), float(e["control"])],
            setting=f"exact class-level solves, counts {list(map(int, e['counts']))} and balanced "
                    f"{list(map(int, e['control_counts']))}",
            tolerance={"between": [[RIDGE_MOVES, 0.0], [2.0, CONTROL_ZERO]]})}


def seli_ridge_path(setting: Setting | None = None, *, ratio: int = 10, check_lam: float = RIDGE_CHECK) -> SeliRidgePath:
    """Solve the ridge UFM exactly along the setting's ``LAMBDAS`` for STEP counts at ``ratio``, and the control.

    The counts are ``(R n_min, R n_min, n_min, n_min)`` with the setting's ``N_MIN``; each ``lambda`` is one
    exact solve of the nuclear-norm problem (:func:`ncbook.ufm.ridge_optimum`, FISTA with its certificate).
    The balanced control has four classes of ``n / 4`` samples and the same ``lambda = check_lam``.

    Parameters
    ----------
    setting : Setting, optional
        From :func:`seli_setting` (default: the active profile's).
    ratio : int, >= 2
        ``R`` of the counts.
    check_lam : float, > 0
        The ``lambda`` of the claim and of the balanced control.

    Returns
    -------
    SeliRidgePath

    Raises
    ------
    TypeError, ValueError
        For a setting that is not one of this chapter, or a ratio or ``check_lam`` out of range.

    Examples
    --------
    >>> path = seli_ridge_path(seli_setting(profile="quick", lambdas=(1e-4, 1e-2, 5e-2)))
    >>> path.table.collapsed.tolist(), path.claim("ridge").verdict
    ([False, False, True], 'reproduced')
    """
    clock = Stopwatch()
    setting = _check_setting(setting)
    ratio = check_int("ratio", ratio, 2)
    check_lam = check_positive("check_lam", check_lam)
    s = setting.sizes
    counts = np.array(_step_counts(ratio, s["N_MIN"]))
    import pandas as pd

    rows = []
    for lam in s["LAMBDAS"]:
        opt = ufm.ridge_optimum(counts, lam)
        w_ratio, cos, collapsed = _minority_state(opt.classifiers)
        rows.append(dict(lam=float(lam), sel_distance=float(opt.sel_distance), w_norm_ratio=w_ratio, cos_min=cos,
                         collapsed=collapsed, objective=float(opt.objective), status=opt.status))
    at_check = ufm.ridge_optimum(counts, check_lam)
    control_counts = np.full(4, int(counts.sum()) // 4)
    extras = dict(counts=counts, seli_w_norm_ratio=float(geometry.seli_step_closed_form(ratio, *UFM_SPLIT)["w_norm_ratio"]),
                  check_lam=check_lam, at_check=float(at_check.sel_distance), optimum=at_check,
                  control_counts=control_counts, control=float(ufm.ridge_optimum(control_counts, check_lam).sel_distance),
                  follow_up=float(ufm.ridge_optimum(counts, FOLLOW_UP_WD).sel_distance))
    sub = Setting(setting.profile, setting.scale, {"LAMBDAS": s["LAMBDAS"], "N_MIN": s["N_MIN"]},
                  f"exact ridge optima, counts {counts.tolist()}, {len(s['LAMBDAS'])} values of lambda")
    return SeliRidgePath(CHAPTER, sub, pd.DataFrame(rows), {}, clock.seconds, extras)


# ----------------------------------------------------------------------------- the network
def _digits_mlp(width: int, num_classes: int) -> models.MLP:
    return models.MLP(64, (width, width), 32, num_classes)


def _resnet(num_classes: int) -> models.ResNetCIFAR:
    return models.resnet32(num_classes)


def seli_model(setting: Setting) -> Callable:
    """The zero-argument factory of the network a setting trains (a picklable ``functools.partial``).

    digits: ``MLP(64, (WIDTH, WIDTH), 32, 10)`` with BatchNorm and a bias-free linear head; CIFAR-10:
    ``resnet32(10)``.

    Examples
    --------
    >>> seli_model(seli_setting(profile="quick"))().classifier.weight.shape
    torch.Size([10, 32])
    """
    check_instance("setting", setting, Setting, what="as seli_setting returns")
    s = setting.sizes
    return functools.partial(_digits_mlp, s["WIDTH"], 10) if s["DATASET"] == "digits" else functools.partial(_resnet, 10)


def _load(s: dict, seed: int):
    """STEP-imbalanced training tensors, the balanced test set, the counts, and the augmentation."""
    if s["DATASET"] == "digits":
        split = data.load_digits(test_per_class=50, seed=seed)
        x_tr, y_tr, x_te, y_te, augment = split.x_train, split.y_train, split.x_test, split.y_test, None
    else:
        root = profiles.data_root()
        x_tr, y_tr = data.cifar_tensors("cifar10", root, train=True, download=True, subset=s["SUBSET"])
        x_te, y_te = data.cifar_tensors("cifar10", root, train=False, download=True, subset=s["SUBSET"])
        augment = data.cifar_augment
    counts = data.long_tailed_counts(s["STEP_MAJ"], 10, s["STEP_MAJ"] / s["STEP_MIN"], "step", minority_fraction=0.5)
    idx = data.make_imbalanced(y_tr, counts, seed=seed)
    return (x_tr[idx], y_tr[idx]), (x_te, y_te), np.asarray(counts), augment


def _distances(model, x, y, counts) -> dict:
    """Distances of the model's classifier and its centred class means (unweighted centre) to SELI and the ETF."""
    ev = train.evaluate(model, x, y)
    means = metrics.centered_means(ev["features"], ev["labels"], len(counts), global_mean="class")
    return geometry.seli_distances(model.classifier.weight.detach().cpu().double(), means.cpu(), counts)


def _norm_ratio(norms: np.ndarray, counts: np.ndarray) -> float:
    minority = counts < counts.max()
    return float(norms[minority].mean() / norms[~minority].mean())


@_with_claims_by_key
class SeliNetwork(ExperimentResult):
    """A network trained on STEP-imbalanced data, measured against SELI and the ETF (:func:`seli_network`).

    Attributes (besides :class:`~ncbook.experiments.ExperimentResult`'s)
    --------------------------------------------------------------------
    table : pandas.DataFrame
        One row for the run: ``dataset``, ``seed``, ``epochs``, ``train_acc``, ``test_acc``, the final
        ``w_seli``, ``w_etf``, ``m_seli``, ``m_etf`` (classifier Gram and centred class means to SELI and to the
        ETF), the same at initialisation (``init_w_seli``...), ``w_norm_ratio`` and ``m_norm_ratio`` (mean minority
        over mean majority norm of the classifier rows and of the centred class means) beside SELI's
        (``seli_w_norm_ratio``, ``seli_m_norm_ratio``), ``seconds`` (training).
    histories : dict
        ``"distances"``: a DataFrame with one row per measurement (``epoch``, ``w_seli``, ``w_etf``, ``m_seli``,
        ``m_etf``); ``"fit"``: the :class:`ncbook.train.History` of the run.
    extras : dict
        ``counts`` (the training counts), ``classifier`` (``W``, ``(C, d)`` float64), ``means`` (the centred class
        means), ``seli`` (:class:`~ncbook.geometry.SELIGeometry` of the counts), ``separation`` (SELI's distance to
        the ETF: ``{"w": ..., "m": ...}``), ``cost`` (the :class:`ncbook.train.ChapterCost`, or None off rank 0).
    """

    @property
    def final(self) -> dict:
        """The final distances ``{"w_seli", "w_etf", "m_seli", "m_etf"}``."""
        row = self.table.iloc[0]
        return {k: float(row[k]) for k in ("w_seli", "w_etf", "m_seli", "m_etf")}

    @property
    def counts(self) -> np.ndarray:
        return self.extras["counts"]

    def verdicts(self) -> dict[str, Verdict]:
        """``"closer"``: the classifier Gram's distance to the ETF minus that to SELI, above 0; ``"shorter"``: 1 minus
        the minority over majority classifier norm, above 0; ``"past"``: the classifier Gram's distance to the ETF
        above SELI's own (``separation["w"]``), i.e. the network went further from the ETF than SELI is, so part of
        its lead over the ETF is an overshoot past SELI rather than an approach to it."""
        row = self.table.iloc[0]
        return {"closer": exceeds(row.w_etf - row.w_seli, 0.0), "shorter": exceeds(1.0 - row.w_norm_ratio, 0.0),
                "past": exceeds(row.w_etf, self.extras["separation"]["w"])}

    def _claims(self) -> dict[str, Claim]:
        row = self.table.iloc[0]
        net = f"{row.dataset}, {_MODELS[row.dataset]}, STEP counts {int(self.counts[0])}/{int(self.counts[-1])}, " \
              f"{int(row.epochs)} epochs, seed {int(row.seed)}"
        return {
            "closer": Claim(
                "paper", "A network on STEP-imbalanced data ends closer to SELI than to the ETF: classifier Gram distance "
                "to the ETF minus distance to SELI (one seed)",
                paper="experiments on real datasets confirm convergence to SELI, worsening with imbalance",
                source=f"{PAPER}, abstract (experiments)",
                ours=float(row.w_etf - row.w_seli), tolerance={"above": 0.0},
                setting=f"{net}; the classifier Gram is {row.w_etf:.3f} from the ETF, SELI itself "
                        f"{self.extras['separation']['w']:.3f}" + (" (past SELI, seen from the ETF)"
                                                                    if self.verdicts()["past"].holds else "")),
            "shorter": Claim(
                "paper", "Minority classifiers have smaller norms than majority classifiers: mean minority over mean "
                "majority classifier norm of the trained network",
                paper="minority classifiers have smaller norms than majority classifiers",
                source=f"{PAPER}, section on the SELI geometry (its norms under STEP imbalance)",
                derived=float(row.seli_w_norm_ratio), derived_how="the SVD of the SEL matrix of the network's class counts",
                ours=float(row.w_norm_ratio), setting=net, tolerance={"below": 1.0}),
        }


def _probe(make, x, y, s: dict, augment) -> train.Throughput:
    steps = (4, 20) if s["DATASET"] == "digits" else (2, 6)
    return train.measure_fit(make, F.cross_entropy, (x, y), batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"],
                             augment=augment, amp=s["AMP"], steps=steps)


def seli_network(setting: Setting | None = None, *, seed: int = 0, model: Callable | None = None,
                 progress: bool | None = None, results=None, checkpoints=None) -> SeliNetwork:
    """Train a network on STEP-imbalanced data and measure its classifier and class means against SELI and the ETF.

    The data: ``STEP_MAJ`` samples of each of classes 0-4 and ``STEP_MIN`` of classes 5-9 (digits at the quick
    profile, CIFAR-10 at the gpu and full profiles), a balanced test set. The recipe: SGD with momentum 0.9,
    ``LR``, weight decay ``WD``, batches of ``BATCH``, a cosine schedule over ``EPOCHS`` epochs
    (:func:`ncbook.train.fit`, cross-entropy). Every ``EVAL_EVERY`` epochs (and at the last) the classifier Gram
    and the class means, centred at the unweighted mean of the class means, are measured against SELI of these
    counts and against the ETF. Before training the call times a few steps and prints its estimate.

    Parameters
    ----------
    setting : Setting, optional
        From :func:`seli_setting` (default: the active profile's).
    seed : int, >= 0
        Seeds the test split (digits), the subset, the initialisation and the batches.
    model : callable, optional
        A zero-argument factory of the network (:mod:`ncbook.models` protocol: ``features`` and a linear
        ``classifier`` of 10 rows); default :func:`seli_model`.
    progress : bool, optional
        A bar over epochs; default :func:`ncbook.profiles.show_progress`.
    results : path, optional
        Where the cost record (and, at the full profile, the run) go; default :func:`ncbook.results_dir`.
    checkpoints : path, optional
        Where the run is checkpointed; default ``ncbook.checkpoint_dir("seli")`` at the gpu and full profiles,
        none at the quick profile.

    Returns
    -------
    SeliNetwork

    Raises
    ------
    TypeError, ValueError
        For a setting that is not one of this chapter, a negative seed, a model that is not callable or a
        folder that is not a path; ``ncbook.data.DatasetUnavailableError`` when CIFAR-10 is neither on disk
        nor downloadable.

    Examples
    --------
    Skipped as a doctest: it trains a network (``tests/test_experiments_seli.py`` runs the same call).

    >>> net = seli_network(seli_setting(profile="quick", epochs=3), progress=False)   # doctest: +SKIP
    Cost at the quick profile on cpu (1 thread) ...
    >>> sorted(net.final)                                                              # doctest: +SKIP
    ['m_etf', 'm_seli', 'w_etf', 'w_seli']
    """
    from ..book import save_result

    clock = Stopwatch()
    setting = _check_setting(setting)
    seed = check_int("seed", seed, 0)
    check_callable("model", model, allow_none=True)
    check_bool("progress", progress, allow_none=True)
    check_path("results", results, allow_none=True)
    check_path("checkpoints", checkpoints, allow_none=True)
    s, main = setting.sizes, train.is_main_process()
    make = model or seli_model(setting)
    if results is None and main:
        results = profiles.results_dir()
    if checkpoints is None and setting.profile != "quick":
        checkpoints = profiles.checkpoint_dir(CHAPTER)
    (x, y), test, counts, augment = _load(s, seed)
    device = profiles.default_device()
    with torch_threads(1 if device.type == "cpu" else torch.get_numtorch_threads()):
        tp = _probe(make, x, y, s, augment)
        cost = train.ChapterCost(CHAPTER, results=results if main else None, checkpoints=checkpoints)
        n, evals = len(y), -(-s["EPOCHS"] // s["EVAL_EVERY"])
        cost.add("STEP-imbalanced network", train.fit_seconds(tp, n=n, epochs=s["EPOCHS"], batch_size=s["BATCH"],
                                                              n_eval=n + len(test[1]), evals=1) + evals * n * tp.eval_seconds,
                 tp)
        if main:
            cost.announce("STEP-imbalanced network", time_next_cell=False)   # the call times its own run
        torch.manual_seed(seed)
        net = make().to(device)
        at_init = _distances(net, x, y, counts)
        tracked = []

        def track(epoch, model, record):
            if (epoch + 1) % s["EVAL_EVERY"] == 0 or epoch + 1 == s["EPOCHS"]:
                tracked.append({"epoch": epoch + 1, **_distances(model, x, y, counts)})

        watch = Stopwatch()
        hist = train.fit(net, F.cross_entropy, (x, y), epochs=s["EPOCHS"], batch_size=s["BATCH"], lr=s["LR"],
                         weight_decay=s["WD"], test=test, nc_every=0, eval_every=0, seed=seed, augment=augment,
                         amp=s["AMP"], progress=progress, callback=track,
                         checkpoint_dir=None if checkpoints is None else f"{checkpoints}/step")
        seconds = watch.seconds
        ev = train.evaluate(net, x, y)
    cost.record("STEP-imbalanced network", seconds)
    result = _network_result(setting, seed, counts, net, ev, at_init, tracked, hist, seconds, clock, cost if main else None)
    if setting.profile == "full" and main:   # the network run itself, for the reproduction page
        row = result.table.iloc[0]
        save_result(results, chapter=CHAPTER, setting=f"{s['DATASET']}-step-r{s['STEP_MAJ'] // s['STEP_MIN']}", seed=seed,
                    wall_seconds=seconds, metrics={**result.final, "train_acc": float(row.train_acc),
                                                   "test_acc": float(row.test_acc)},
                    config=dict(epochs=s["EPOCHS"], batch_size=s["BATCH"], lr=s["LR"], weight_decay=s["WD"],
                                model=_MODELS[s["DATASET"]], augment="crop+flip" if augment is not None else None,
                                schedule="cosine", counts=counts, scale=setting.scale))
    return result


def _network_result(setting, seed, counts, net, ev, at_init, tracked, hist, seconds, clock, cost) -> SeliNetwork:
    import pandas as pd

    s = setting.sizes
    W = net.classifier.weight.detach().cpu().double()
    means = metrics.centered_means(ev["features"], ev["labels"], len(counts), global_mean="class").cpu()
    seli = geometry.seli_geometry(counts)
    etf = geometry.etf_gram(len(counts))
    seli_w = np.sqrt(np.diag(seli.classifier_gram))
    seli_m = np.sqrt(np.diag(seli.mean_gram))
    last = tracked[-1]
    row = dict(dataset=s["DATASET"], seed=seed, epochs=s["EPOCHS"], train_acc=float(hist.final["train_acc"]),
               test_acc=float(hist.final["test_acc"]), **{k: float(last[k]) for k in ("w_seli", "w_etf", "m_seli", "m_etf")},
               **{f"init_{k}": float(v) for k, v in at_init.items()},
               w_norm_ratio=_norm_ratio(W.norm(dim=1).numpy(), counts), seli_w_norm_ratio=_norm_ratio(seli_w, counts),
               m_norm_ratio=_norm_ratio(means.norm(dim=1).numpy(), counts), seli_m_norm_ratio=_norm_ratio(seli_m, counts),
               seconds=float(seconds))
    histories = {"distances": pd.DataFrame(tracked), "fit": hist}
    extras = dict(counts=counts, classifier=W, means=means, seli=seli, cost=cost,
                  separation={"w": float(geometry.frobenius_distance(seli.classifier_gram, etf)),
                              "m": float(geometry.frobenius_distance(seli.mean_gram, etf))})
    return SeliNetwork(CHAPTER, setting, pd.DataFrame([row]), histories, clock.seconds, extras)
