"""The experiments of the contrastive-imbalance chapter: exact collapse points, batch-size negatives, networks.

Letters (the book's notation): ``C`` classes, one majority (class 1 of the book, index 0 in code) with
probability ``pi_1`` and equal minorities; ``k`` negatives per anchor; ``tau`` the temperature (keyword
``temperature``); ``A`` the Gram matrix of the unit class means, ``A_12`` the majority-minority cosine and
``A_23`` the minority-minority cosine (code indices ``[0, 1]`` and ``[1, 2]``); ``pi_1^MC`` the exact collapse
point (:func:`ncbook.contrastive.collapse_threshold`).

Three calls, each returning an :class:`~ncbook.experiments.ExperimentResult` with the claims it supports:

- :func:`collapse_points`: the exact collapse points over ``k`` and ``tau`` (UCL for any ``C``, SCL for given
  ``C``) against the paper's sufficient thresholds;
- :func:`batch_negatives`: at ``pi_1 = 0.9``, which ``(setting, tau, k)`` collapse, the optimum's minority
  cosine where they do not, and how flat the risk is between collapse and the optimum;
- :func:`contrastive_networks`: networks trained with InfoNCE (UCL and SCL at each ``pi_1`` of the plan, and one
  UCL run with many negatives where the optimum does not collapse) against the convex optimum. Its sizes come
  from ``ncbook.profiles.PLANS["contrastive_imbalance"]`` (:func:`contrastive_setting`); it measures its cost
  and prints the estimate before training, and at the gpu and full profiles spreads the runs over worker
  processes (:func:`~ncbook.experiments.run_jobs`) and keeps each finished run in
  ``ncbook.checkpoint_dir("contrastive_imbalance")`` so that a rerun skips it.

References
----------
Nguyen, Aeron, Brown, Ishwar, "Optimal Representations for Generalized Contrastive Learning with Imbalanced
Datasets", arXiv:2605.11291 (2026): Lemma 1 and the convex program, Theorem 3, the minority-collapse theorem
(InfoNCE thresholds 0.9292 UCL, 0.9438 SCL), the experiments on a three-class CIFAR-10 subset. The exact collapse
condition and everything called "derived here" are this package's.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import brentq

from .. import profiles
from .._validation import check_device, check_in, check_instance, check_int, check_path, check_positive, \
    check_sequence
from ..contrastive import PAPER_THRESHOLDS, cl_risk, collapse_threshold, optimal_gram
from ..geometry import etf_gram
from ._core import Claim, ExperimentResult, Setting, Stopwatch, _in_torchrun, run_jobs, torch_threads

__all__ = ["CollapsePoints", "BatchNegatives", "ContrastiveNetworks", "collapse_points", "batch_negatives",
           "contrastive_setting", "contrastive_networks", "contrastive_model"]

CHAPTER = "contrastive_imbalance"

#: The k grid of the collapse curves and the temperature grid of the temperature curves.
KS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256)
TEMPERATURES = tuple(float(t) for t in np.linspace(0.3, 3.0, 28))

#: The Reproduction page's criterion for collapsed minorities: minority cosine >= 0.95 and majority-minority
#: cosine <= -0.95 (the same box for a network and for an optimum).
COLLAPSED = 0.95
#: The paper's imbalance for its collapse observation, and negatives of a batch of 256 (the others in it).
PI_GAP, K_BATCH = 0.9, 255
#: A network's class-mean cosines "match" the optimum within this (absolute, on cosines).
NET_MATCH = 0.05
#: A class "collapsed to its mean" when its spread 1 - |mean of the unit features| is below this.
SPREAD = 0.05

#: The probe's two lengths (steps), as :func:`ncbook.train.measure_steps` takes them.
PROBE_STEPS = (2, 8)

_SMOKE = {"N_MAJ": 20, "NET_STEPS": 3, "NET_BATCH": 16, "N_GAP": 20}
_MODELS = {"digits": "MLP 64-256-256-16 with BatchNorm", "cifar10": "ResNet-32"}


def _three(pi1: float) -> np.ndarray:
    return np.array([pi1, (1 - pi1) / 2, (1 - pi1) / 2])


def _minority_cosine(pi1: float, k, setting: str, *, c: int = 3, temperature: float = 1.0) -> float:
    """``A*_23`` of one majority and ``c - 1`` equal minorities; 1 without a solve at or above the exact point."""
    if pi1 >= collapse_threshold(k, setting=setting, num_classes=c, temperature=temperature):
        return 1.0
    probs = np.r_[pi1, np.full(c - 1, (1 - pi1) / (c - 1))]
    return float(optimal_gram(probs, k, setting=setting, temperature=temperature)[1, 2])


def _one_angle_gram(a12: float) -> np.ndarray:
    """A majority and two minorities at angles +-theta from its antipode: A_12 = -cos(theta), A_23 = 2 A_12^2 - 1."""
    a23 = 2 * a12 * a12 - 1
    return np.array([[1.0, a12, a12], [a12, 1.0, a23], [a12, a23, 1.0]])


class _Claims(ExperimentResult):
    """An experiment result whose claims can be looked up by key (the prose reads their verdicts)."""

    def _claims(self) -> dict[str, Claim]:  # pragma: no cover - every subclass defines it
        return {}

    def claims(self) -> list[Claim]:
        """The claims this result supports, in the order the chapter states them."""
        return list(self._claims().values())

    def claim(self, key: str) -> Claim:
        """One claim by its key (e.g. ``"gram matches"``); its ``verdict`` is what the record will say.

        Raises
        ------
        ValueError
            For a key this result has no claim for (the message lists the keys).

        Examples
        --------
        >>> batch_negatives(ks=(4, 255), temperatures=(1.0,)).claim("risk is flat").verdict
        'passed'
        """
        found = self._claims()
        if key not in found:
            raise ValueError(f"key must be one of {list(found)}; got {key!r}.")
        return found[key]


# ----------------------------------------------------------------------------- exact collapse points
@dataclass
class CollapsePoints(_Claims):
    """Exact collapse points (:func:`collapse_points`).

    ``table`` has one row per point: ``curve`` ("k" or "temperature"), ``setting``, ``num_classes`` (0 for UCL:
    the point does not depend on ``C``), ``k`` (``inf`` for the large-``k`` limit), ``temperature``, ``point``.
    ``extras`` holds ``"at_threshold"`` (the optimum's ``A*_23`` at the paper's two thresholds, ``C = 3``,
    ``k = 4``, ``tau = 1``) and ``"exp_vs_infonce"`` (the sum-of-exponentials point ``sigmoid(2 / tau)`` minus
    InfoNCE's ``k = 1`` UCL point on the temperature grid, and InfoNCE's UCL points at ``tau = 1`` against
    ``sigmoid(2)``).
    """

    def curve(self, setting: str, num_classes: int = 0, *, by: str = "k", k=None):
        """``(x, points)`` of one curve: over ``k`` (``by="k"``, finite ``k`` only) or over ``tau`` at ``k``.

        Parameters
        ----------
        setting : {"ucl", "scl"}
        num_classes : int
            ``C`` of an SCL curve; 0 for UCL (its point does not depend on ``C``).
        by : {"k", "temperature"}
        k : int, optional
            The ``k`` of a temperature curve.

        Returns
        -------
        (ndarray of shape (n,), ndarray of shape (n,))
            The grid and the exact points on it (empty arrays for a curve the table does not hold).

        Examples
        --------
        >>> ks, pts = collapse_points(ks=(1, 4), temperatures=(1.0,), classes=(3,)).curve("ucl")
        >>> ks.tolist(), [round(float(p), 4) for p in pts]
        ([1.0, 4.0], [0.8075, 0.8693])
        """
        check_in("setting", setting, ("ucl", "scl"))
        check_in("by", by, ("k", "temperature"))
        t = self.table
        rows = t[(t.curve == by) & (t.setting == setting) & (t.num_classes == num_classes)]
        if by == "k":
            rows = rows[np.isfinite(rows.k)]
            return rows.k.to_numpy(), rows.point.to_numpy()
        rows = rows[rows.k == k]
        return rows.temperature.to_numpy(), rows.point.to_numpy()

    def point(self, k, setting: str = "ucl", num_classes: int = 0) -> float:
        """The exact point at ``tau = 1`` of one ``(k, setting, C)`` of the ``k`` curves."""
        t = self.table
        rows = t[(t.curve == "k") & (t.setting == setting) & (t.num_classes == num_classes) & (t.k == k)]
        if rows.empty:
            raise ValueError(f"no point at k = {k!r}, setting {setting!r}, num_classes {num_classes}; the k curves "
                             f"hold k in {sorted(set(t[t.curve == 'k'].k))}.")
        return float(rows.point.iloc[0])

    def _claims(self) -> dict[str, Claim]:
        t = self.table
        ks = t[t.curve == "k"]
        ucl = ks[ks.setting == "ucl"]
        scl = ks[ks.setting == "scl"]
        k_text = f"k in {int(ucl.k[np.isfinite(ucl.k)].min())}..{int(ucl.k[np.isfinite(ucl.k)].max())}"
        at = self.extras["at_threshold"]
        ex = self.extras["exp_vs_infonce"]
        ucl_where = f"exact collapse points at τ = 1, any C, {k_text} and k -> infinity"
        scl_where = f"exact collapse points at τ = 1, C in {tuple(sorted(set(scl.num_classes)))}, {k_text}"
        out = {
            "ucl threshold collapses": Claim(
                "paper", "InfoNCE, UCL: π_1 >= 0.9292 suffices for minority collapse, whatever C and k (tested at "
                "τ = 1): "
                "minority cosine of the convex optimum at π_1 = 0.9292, C = 3, k = 4",
                ours=float(at["ucl"]), tolerance={"above": 1 - 1e-6},
                paper="a parameter-free threshold lambda_1 >= 0.9292 (UCL) guarantees minority collapse for any C "
                      "and k",
                source="Nguyen et al. 2026, minority-collapse theorem, InfoNCE case (UCL)",
                setting="convex program, certified Newton solver"),
            "ucl points below": Claim(
                "paper", "InfoNCE, UCL: π_1 >= 0.9292 suffices for minority collapse, whatever C and k (tested at "
                "τ = 1): "
                "the exact collapse points (derived here from the program's KKT conditions) lie below it",
                ours=[float(v) for v in ucl.point], tolerance={"below": PAPER_THRESHOLDS["ucl"]},
                paper="a parameter-free threshold lambda_1 >= 0.9292 (UCL) guarantees minority collapse for any C "
                      "and k",
                source="Nguyen et al. 2026, minority-collapse theorem, InfoNCE case (UCL)",
                setting=ucl_where),
            "scl threshold collapses": Claim(
                "paper", "InfoNCE, SCL: π_1 >= 0.9438 suffices for minority collapse, whatever C and k (tested at "
                "τ = 1): "
                "minority cosine of the convex optimum at π_1 = 0.9438, C = 3, k = 4",
                ours=float(at["scl"]), tolerance={"above": 1 - 1e-6},
                paper="a parameter-free threshold lambda_1 >= 0.9438 (SCL) guarantees minority collapse for any C "
                      "and k",
                source="Nguyen et al. 2026, minority-collapse theorem, InfoNCE case (SCL)",
                setting="convex program, certified Newton solver"),
            "scl points below": Claim(
                "paper", "InfoNCE, SCL: π_1 >= 0.9438 suffices for minority collapse, whatever C and k (tested at "
                "τ = 1): "
                "the exact collapse points (derived here from the program's KKT conditions) lie below it",
                ours=[float(v) for v in scl.point], tolerance={"below": PAPER_THRESHOLDS["scl"]},
                paper="a parameter-free threshold lambda_1 >= 0.9438 (SCL) guarantees minority collapse for any C "
                      "and k",
                source="Nguyen et al. 2026, minority-collapse theorem, InfoNCE case (SCL)",
                setting=scl_where),
        }
        out["exp above infonce k=1"] = Claim(
            "check", "The sum-of-exponentials loss collapses its minorities (UCL) from π_1 = sigmoid(2/τ) (derived "
            "here), above InfoNCE's k = 1 point at every τ of the grid; at τ = 1 InfoNCE's point passes sigmoid(2) "
            "from k = 6 on: smallest sigmoid(2/τ) minus InfoNCE's k = 1 point over τ, then InfoNCE's point minus "
            "sigmoid(2) at k = 5 and k = 6",
            ours=[float(ex["min_gap"]), float(ex["k5"]), float(ex["k6"])],
            tolerance={"between": [[0.0, -1.0, 0.0], [1.0, 0.0, 1.0]]},
            setting=f"exact collapse points, τ in [{min(ex['temperatures']):g}, {max(ex['temperatures']):g}] "
                    f"({len(ex['temperatures'])} values)")
        return out


def collapse_points(ks=KS, temperatures=TEMPERATURES, *, classes=(3, 10), temperature_ks=(1, 4, 32)) -> CollapsePoints:
    """The exact collapse points over ``k`` (``tau = 1``) and over ``tau``, and the claims they support.

    Parameters
    ----------
    ks : sequence of int, each >= 1
        The ``k`` grid of the curves at ``tau = 1`` (UCL also gets the large-``k`` limit).
    temperatures : sequence of float, each > 0
        The temperature grid (UCL, at each ``k`` of ``temperature_ks``).
    classes : sequence of int, each >= 3
        The numbers of classes of the SCL curves (the UCL point does not depend on ``C``).
    temperature_ks : sequence of int, each >= 1

    Returns
    -------
    CollapsePoints

    Raises
    ------
    TypeError, ValueError
        For a grid that is empty or holds a value out of its range (the message names it).

    Examples
    --------
    >>> pts = collapse_points(ks=(1, 4), temperatures=(0.5, 1.0), classes=(3,), temperature_ks=(1,))
    >>> round(pts.point(1), 6), round(pts.point(1, "scl", 3), 6)
    (0.80749, 0.69154)
    >>> [c.verdict for c in pts.claims()][:2]
    ['reproduced', 'reproduced']
    """
    watch = Stopwatch()
    ks = _int_grid("ks", ks, 1)
    temperature_ks = _int_grid("temperature_ks", temperature_ks, 1)
    classes = _int_grid("classes", classes, 3)
    temperatures = _float_grid("temperatures", temperatures)
    rows = [dict(curve="k", setting="ucl", num_classes=0, k=float(k), temperature=1.0,
                 point=collapse_threshold(k)) for k in ks]
    rows.append(dict(curve="k", setting="ucl", num_classes=0, k=math.inf, temperature=1.0,
                     point=collapse_threshold(math.inf)))
    rows += [dict(curve="k", setting="scl", num_classes=c, k=float(k), temperature=1.0,
                  point=collapse_threshold(k, setting="scl", num_classes=c)) for c in classes for k in ks]
    rows += [dict(curve="temperature", setting="ucl", num_classes=0, k=float(k), temperature=t,
                  point=collapse_threshold(k, temperature=t)) for k in temperature_ks for t in temperatures]
    import pandas as pd

    table = pd.DataFrame(rows, columns=["curve", "setting", "num_classes", "k", "temperature", "point"])
    at = {s: float(optimal_gram(_three(PAPER_THRESHOLDS[s]), 4, setting=s)[1, 2]) for s in ("ucl", "scl")}  # solved
    sig = lambda x: 1.0 / (1.0 + math.exp(-x))  # noqa: E731
    gaps = [sig(2 / t) - collapse_threshold(1, temperature=t) for t in temperatures]
    extras = {"at_threshold": at,
              "exp_vs_infonce": {"temperatures": list(temperatures), "min_gap": min(gaps),
                                 "k5": collapse_threshold(5) - sig(2.0), "k6": collapse_threshold(6) - sig(2.0)}}
    text = f"exact collapse points, k in {ks[0]}..{ks[-1]}, SCL with C in {classes}, {len(temperatures)} temperatures"
    setting = Setting(profiles.profile(), profiles.scale(), {}, text)
    return CollapsePoints(CHAPTER, setting, table, {}, watch.seconds, extras)


def _int_grid(name: str, values, minimum: int) -> tuple:
    return check_sequence(name, values, lambda n, v: check_int(n, v, minimum), what=f"integers >= {minimum}",
                          one=f"integer >= {minimum}")


def _float_grid(name: str, values) -> tuple:
    return check_sequence(name, values, check_positive, what="positive numbers", one="positive number")


# ----------------------------------------------------------------------------- batch-size negatives
@dataclass
class BatchNegatives(_Claims):
    """Which ``(setting, tau, k)`` collapse the minorities at one ``pi_1`` (:func:`batch_negatives`).

    ``table``: one row per ``(setting, temperature, k)`` with the exact ``point``, ``collapses``
    (``pi_1 >= point``) and ``cos23``, the optimum's minority cosine at ``pi_1`` (1 where it collapses).
    ``extras``: ``pi1``; ``tau_cross`` (UCL with the largest ``k`` collapses at ``pi_1`` exactly for
    ``tau >= tau_cross``); ``k_last`` (the largest ``k`` at which UCL collapses at ``pi_1``, ``tau = 1``);
    ``flat_k`` and ``flat`` (at ``pi_1``, UCL, ``k = flat_k``, ``tau = 1``: the extra risk of the collapsed Gram
    matrix and of the simplex ETF over the optimum); ``optimum_flat`` (the optimum's Gram matrix there).
    """

    def row(self, setting: str, temperature: float, k: int):
        """The table's row of one ``(setting, temperature, k)``.

        Raises
        ------
        ValueError
            For a combination the table does not hold.

        Examples
        --------
        >>> round(float(batch_negatives(ks=(4,), temperatures=(1.0,)).row("scl", 1.0, 4).point), 4)
        0.6951
        """
        t = self.table
        rows = t[(t.setting == setting) & np.isclose(t.temperature, temperature, rtol=1e-12, atol=0) & (t.k == k)]
        if rows.empty:
            raise ValueError(f"no row for setting {setting!r}, temperature {temperature!r}, k = {k!r}.")
        return rows.iloc[0]

    def _claims(self) -> dict[str, Claim]:
        e = self.extras
        k_big = int(self.table.k.max())
        big = self.row("ucl", 1.0, k_big)
        return {
            "batch-size optimum apart": Claim(
                "check", f"Our exact analysis (derived here): with batch-size negatives (UCL, k = {k_big}, τ = 1) the "
                f"optimum does not collapse at π_1 = {e['pi1']:g}: exact collapse point, then the optimum's minority "
                f"cosine A*_23 at {e['pi1']:g}",
                ours=[float(big.point), float(big.cos23)],
                tolerance={"between": [[e["pi1"], -1.0], [1.0, COLLAPSED]]},
                setting="convex program and the KKT margin, C = 3"),
            "risk is flat": Claim(
                "check", f"The risk barely separates collapse from the optimum (derived here): at π_1 = {e['pi1']:g}, "
                f"UCL, k = {e['flat_k']}, τ = 1, the extra risk of the collapsed Gram matrix over the optimum, as a "
                f"fraction of the ETF's",
                ours=float(e["flat"][0] / e["flat"][1]), tolerance={"below": 0.05},
                setting="convex program, certified Newton solver, C = 3"),
        }


def batch_negatives(pi1: float = PI_GAP, ks=(4, 64, K_BATCH), temperatures=(0.5, 1.0, 2.0), *,
                    flat_k: int = 64) -> BatchNegatives:
    """At majority probability ``pi1`` (three classes): the exact point and the optimum's minority cosine for each
    setting, temperature and ``k``; where UCL starts collapsing in ``tau`` and in ``k``; how flat the risk is.

    Parameters
    ----------
    pi1 : float in (1/3, 1)
        The majority's probability (the paper's observation: 0.9).
    ks : sequence of int, each >= 1
        Negatives per anchor; the largest also gives ``tau_cross``.
    temperatures : sequence of float, each > 0
        Must include 1 (the paper's thresholds and the network are at ``tau = 1``).
    flat_k : int, >= 1
        The ``k`` of the flatness numbers (UCL, ``tau = 1``).

    Returns
    -------
    BatchNegatives

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of its range (named in the message).

    Examples
    --------
    >>> b = batch_negatives(ks=(4, 64), temperatures=(1.0,))
    >>> bool(b.row("ucl", 1.0, 4).collapses), bool(b.row("ucl", 1.0, 64).collapses), b.extras["k_last"]
    (True, False, 12)
    """
    watch = Stopwatch()
    pi1 = check_positive("pi1", pi1)
    if not 1 / 3 < pi1 < 1:
        raise ValueError(f"pi1 (the majority's probability of three classes) must lie in (1/3, 1); got {pi1!r}.")
    ks = _int_grid("ks", ks, 1)
    temperatures = _float_grid("temperatures", temperatures)
    if not any(abs(t - 1.0) <= 1e-12 for t in temperatures):
        raise ValueError(f"temperatures must include 1.0 (the claims are at tau = 1); got {list(temperatures)}.")
    flat_k = check_int("flat_k", flat_k, 1)
    rows = []
    for setting in ("ucl", "scl"):
        for tau in temperatures:
            for k in ks:
                point = collapse_threshold(k, setting=setting, num_classes=3, temperature=tau)
                cos23 = _minority_cosine(pi1, k, setting, temperature=tau)
                rows.append(dict(setting=setting, temperature=tau, k=k, point=point, collapses=bool(pi1 >= point),
                                 cos23=cos23))
    import pandas as pd

    table = pd.DataFrame(rows, columns=["setting", "temperature", "k", "point", "collapses", "cos23"])
    k_big = max(ks)
    margin = lambda t: collapse_threshold(k_big, temperature=t) - pi1  # noqa: E731 - the point falls as tau grows
    lo, hi = 0.05, 50.0
    tau_cross = brentq(margin, lo, hi, xtol=1e-8) if margin(lo) > 0 > margin(hi) else math.nan
    k_last = _largest_collapsing_k(pi1)
    probs = _three(pi1)
    best = optimal_gram(probs, flat_k)
    risk = lambda g: cl_risk(g, probs, flat_k)  # noqa: E731
    flat = (risk(_one_angle_gram(-1.0)) - risk(best), risk(etf_gram(3)) - risk(best))
    extras = dict(pi1=pi1, tau_cross=tau_cross, k_last=k_last, flat_k=flat_k, flat=flat, optimum_flat=best)
    setting = Setting(profiles.profile(), profiles.scale(), {},
                      f"three classes at π_1 = {pi1:g}, k in {ks}, τ in {temperatures}")
    return BatchNegatives(CHAPTER, setting, table, {}, watch.seconds, extras)


def _largest_collapsing_k(pi1: float, limit: int = 1 << 20) -> int:
    """The largest ``k`` whose UCL point (``tau = 1``) is at most ``pi1`` (the point grows with ``k``); 0 if none."""
    if collapse_threshold(1) > pi1:
        return 0
    if collapse_threshold(math.inf) <= pi1:
        return limit
    lo, hi = 1, 2
    while collapse_threshold(hi) <= pi1:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if collapse_threshold(mid) <= pi1 else (lo, mid)
    return lo


# ----------------------------------------------------------------------------- the networks
def contrastive_setting(profile: str | None = None, scale: str | None = None, **overrides) -> Setting:
    """The sizes :func:`contrastive_networks` runs at a profile and scale: ``ncbook.profiles.PLANS``'s.

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile`.
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`; ``"smoke"`` shrinks the gpu and full sizes (every code path, tiny sizes).
    **overrides
        Sizes to change (tests, or a reader's experiment): ``N_MAJ`` (majority samples), ``NET_STEPS``,
        ``NET_BATCH`` (anchors per step), ``K_NET``, ``PI_NET`` (the majority probabilities of the UCL/SCL pairs),
        ``K_GAP`` and ``N_GAP`` (the UCL run at ``pi_1 = 0.9`` with many negatives), ``DATASET``, ``SUBSET``.

    Returns
    -------
    Setting

    Raises
    ------
    TypeError
        For an override that is not one of the plan's sizes.
    ValueError
        For an unknown profile or scale, or a size out of its range.

    Examples
    --------
    >>> s = contrastive_setting("quick", "paper")
    >>> s.sizes["DATASET"], s.sizes["K_NET"], s.sizes["PI_NET"]
    ('digits', 4, (0.6, 0.9))
    """
    plan = profiles.PLANS[CHAPTER].params
    unknown = sorted(set(overrides) - set(plan["quick"]))
    if unknown:
        raise TypeError(f"overrides must be sizes of the plan {sorted(plan['quick'])}; got {unknown}.")

    def smoke(sizes):
        return {**sizes, **_SMOKE}

    setting = Setting.active(plan, _describe, profile=profile, scale=scale, smoke=smoke)
    if not overrides:
        _check_sizes(setting.sizes)
        return setting
    sizes = {**setting.sizes, **overrides}
    _check_sizes(sizes)
    return Setting(setting.profile, setting.scale, sizes, _describe(sizes))


def _check_sizes(s: dict) -> None:
    check_in("DATASET", s["DATASET"], tuple(_MODELS))
    for name in ("N_MAJ", "NET_STEPS", "NET_BATCH", "K_NET", "K_GAP", "N_GAP"):
        check_int(name, s[name], 1)
    if isinstance(s["PI_NET"], (str, bytes)) or not hasattr(s["PI_NET"], "__iter__") or not len(s["PI_NET"]):
        raise TypeError(f"PI_NET must be a non-empty sequence of majority probabilities; got {s['PI_NET']!r}.")
    for p in s["PI_NET"]:
        if not 1 / 3 < check_positive("each entry of PI_NET", p) < 1:
            raise ValueError(f"each entry of PI_NET must lie in (1/3, 1) (a majority of three classes); got {p!r}.")


def _describe(s: dict) -> str:
    data = "digits classes 0/1/2" if s["DATASET"] == "digits" else \
        f"CIFAR-10 classes 0/1/2{' (the gpu subset)' if s.get('SUBSET') else ''}"
    pis = ", ".join(f"{p:g}" for p in s["PI_NET"])
    return (f"{data}, {_MODELS[s['DATASET']]}, {s['N_MAJ']} majority samples; UCL and SCL with k = {s['K_NET']} at "
            f"π_1 in ({pis}), and UCL with k = {s['K_GAP']} at π_1 = {PI_GAP:g} on {s['N_GAP']} majority samples; "
            f"{s['NET_STEPS']} SGD steps of {s['NET_BATCH']} anchors")


def contrastive_model(setting: Setting):
    """The zero-argument factory of the network a setting trains (a picklable ``functools.partial``).

    digits: ``MLP(64, (256, 256), 16, 3)`` with BatchNorm, features its 16 outputs; CIFAR-10: ``resnet32(3)``.

    Examples
    --------
    >>> contrastive_model(contrastive_setting("quick", "paper"))().features(torch.zeros(2, 64)).shape
    torch.Size([2, 16])
    """
    from .. import models

    check_instance("setting", setting, Setting, what="as contrastive_setting returns")
    if setting.sizes["DATASET"] == "digits":
        return functools.partial(models.MLP, 64, (256, 256), 16, 3)
    return functools.partial(models.resnet32, 3)


def _load(setting: Setting):
    from .. import data

    if setting.sizes["DATASET"] == "digits":
        split = data.load_digits()
        return torch.cat([split.x_train, split.x_test]), torch.cat([split.y_train, split.y_test]), None
    x, y = data.cifar_tensors("cifar10", profiles.data_root(), train=True, download=True,
                              subset=setting.sizes.get("SUBSET"))
    return x, y, data.cifar_augment


def _subset(x, y, pi1: float, n_maj: int):
    """``n_maj`` samples of class 0 and two equal minorities, so that the majority has probability about ``pi1``."""
    n_min = max(1, int(round(n_maj * (1 - pi1) / pi1 / 2)))
    idx = torch.cat([torch.nonzero(y == c).ravel()[:n] for c, n in [(0, n_maj), (1, n_min), (2, n_min)]])
    return x[idx], y[idx]


def _main_process() -> bool:
    """True outside ``torchrun`` and on its rank 0: the process that writes files."""
    return not _in_torchrun() or torch.distributed.get_rank() == 0


def _network_run(make_model, x, y, *, k: int, setting: str, temperature: float, steps: int, batch_size: int,
                 augment, seed: int, device: str, checkpoint: str | None = None, key: dict | None = None) -> dict:
    """One run: the class-mean cosines at initialisation and after :func:`ncbook.train.fit_contrastive`.

    On a CPU it runs on one thread (a worker process does anyway), so that its numbers do not depend on where
    it ran. With ``checkpoint``, a finished run with the same ``key`` is read back instead of trained again.
    """
    from ..train import class_mean_cosines, fit_contrastive, load_checkpoint, save_checkpoint

    if checkpoint is not None and Path(checkpoint).exists():
        saved = load_checkpoint(checkpoint)
        if saved.get("key") == key:
            return {name: (v.numpy() if isinstance(v, torch.Tensor) else v) for name, v in saved.items()
                    if name != "key"}
    with torch_threads(1 if torch.device(device).type == "cpu" else torch.get_numtorch_threads()):
        torch.manual_seed(seed)
        init_gram, init_spread = class_mean_cosines(make_model().to(device), x, y)
        torch.manual_seed(seed)
        fit = fit_contrastive(make_model(), x, y, k=k, setting=setting, temperature=temperature, steps=steps,
                              batch_size=batch_size, augment=augment, seed=seed, device=device)
    out = dict(init_gram=init_gram, init_spread=init_spread, class_gram=fit.class_gram, spread=fit.spread,
               losses=fit.losses, seconds=float(fit.seconds))
    if checkpoint is not None and _main_process():   # under torchrun every rank trains the run; rank 0 keeps it
        save_checkpoint(checkpoint, {"key": key, **{n: torch.as_tensor(v) if isinstance(v, np.ndarray) else v
                                                    for n, v in out.items()}})
    return out


@dataclass
class ContrastiveNetworks(_Claims):
    """Networks trained with InfoNCE against the convex optimum (:func:`contrastive_networks`).

    ``table``: one row per run: ``role`` ("comparison": UCL and SCL at each ``pi_1`` of the plan; "gap test": UCL
    with ``K_GAP`` negatives at ``pi_1 = 0.9``, where the optimum does not collapse), ``setting``, ``k``,
    ``temperature``, ``n`` (samples), ``pi1`` (the run's majority proportion), ``net_a``/``net_b`` (the trained
    network's ``A_12``/``A_23``), ``opt_a``/``opt_b`` (the convex optimum's at the run's proportions, ``k`` and
    ``tau``), ``init_b`` (``A_23`` at initialisation), ``point`` (the exact collapse point), ``predicted``
    (``pi1 >= point``), ``spread`` (largest ``1 - |class mean of the unit features|``), ``init_spread`` (the same at
    initialisation), ``excess`` (risk of the network's Gram matrix minus the optimum's), ``loss_sd`` (standard
    deviation of the training loss over the last eighth of the steps), ``seconds``.
    ``histories``: run name -> training loss per step. ``extras["optimum"]``: the optimum's ``A*_23`` against
    ``pi_1`` for each ``(setting, k)`` of the comparison (``{"pi1": grid, "<SETTING>, k = <k>": values}``).
    """

    @property
    def comparison(self):
        """The UCL/SCL comparison runs (the table's rows with role "comparison")."""
        return self.table[self.table.role == "comparison"].reset_index(drop=True)

    @property
    def gap_run(self):
        """The gap test's row (UCL with many negatives at ``pi_1 = 0.9``)."""
        return self.table[self.table.role == "gap test"].iloc[0]

    def looks_collapsed(self, row=None) -> bool:
        """Whether a run counts as collapsed by the Reproduction page's criterion (default: :attr:`gap_run`).

        Collapsed means minority cosine ``A_23 >= COLLAPSED`` and majority-minority cosine
        ``A_12 <= -COLLAPSED`` (``COLLAPSED = 0.95``), the box of the "collapse at 0.9" claim.
        """
        row = self.gap_run if row is None else row
        return bool(row.net_b >= COLLAPSED and row.net_a <= -COLLAPSED)

    def _claims(self) -> dict[str, Claim]:
        s = self.setting.sizes
        cmp = self.comparison
        gap = self.gap_run
        pis = sorted({round(float(p), 3) for p in cmp.pi1})
        temperature = float(cmp.temperature.iloc[0])
        where = (f"{self.setting.text.split(';')[0]}, π_1 in {pis}, UCL and SCL, k = {s['K_NET']}, τ = {temperature:g}, "
                 f"{s['NET_STEPS']} steps")
        hi = cmp[cmp.pi1 > 0.8]
        gap_where = (f"{self.setting.text.split(',')[0]}, {int(gap.n)} samples, π_1 = {gap.pi1:.3f}, UCL, "
                     f"k = {s['K_GAP']}, τ = {temperature:g}, {s['NET_STEPS']} steps")
        box = {"between": [[COLLAPSED, -1.0], [1.0, -COLLAPSED]]}
        out = {
            "within-class collapse": Claim(
                "paper", "A network trained with InfoNCE collapses each class to its mean: largest within-class spread "
                "1 - |class mean of the unit features| over the classes and runs",
                ours=float(cmp.spread.max()), tolerance={"below": SPREAD},
                paper="the trained network collapses the within-class variability to the class means",
                source="Nguyen et al. 2026, experiments section (imbalanced 3-class CIFAR-10 subset, ResNet-50)",
                setting=where),
            "gram matches": Claim(
                "paper", "The trained network's class-mean Gram matrix matches the convex optimum at the same k and τ: "
                f"the cosines A_12, A_23 of every run, each within {NET_MATCH:g} of the optimum's",
                ours=[float(v) for pair in zip(cmp.net_a, cmp.net_b) for v in pair],
                derived=[float(v) for pair in zip(cmp.opt_a, cmp.opt_b) for v in pair],
                derived_how="our certified Newton solve of the convex program at each run's class proportions",
                tolerance={"abs": NET_MATCH, "against": "derived"},
                paper="the Gram matrix of the trained network matches the one computed by convex optimisation (CVX)",
                source="Nguyen et al. 2026, experiments section (imbalanced 3-class CIFAR-10 subset, ResNet-50)",
                setting=where),
        }
        if len(hi):
            out["collapse at 0.9"] = Claim(
                "paper", "At π_1 = 0.9 a network trained with InfoNCE collapses its minorities to one vector opposite "
                "the majority: smallest minority-minority cosine A_23, then largest majority-minority cosine A_12, over "
                "UCL and SCL",
                ours=[float(hi.net_b.min()), float(hi.net_a.max())], tolerance=box,
                paper="at lambda_1 = 0.9 the minority means collapse to one vector opposite the majority",
                source="Nguyen et al. 2026, experiments section (imbalanced 3-class CIFAR-10 subset, ResNet-50)",
                setting=f"{where}; the runs at π_1 = {float(hi.pi1.iloc[0]):.3f}, where the exact points at this k and "
                        f"τ predict collapse in both settings" if bool(hi.predicted.all()) else
                        f"{where}; the runs at π_1 = {float(hi.pi1.iloc[0]):.3f}")
        out["training stops short"] = Claim(
            "check", f"Explanation of the gap (tested here): training stops short of a flat optimum. In the UCL, "
            f"k = {s['K_GAP']} run at π_1 = 0.9, whose optimum is not collapsed, the network counts as collapsed "
            f"(minority cosine A_23 >= {COLLAPSED:g}, majority-minority A_12 <= -{COLLAPSED:g}) while the optimum "
            f"does not: network A_23, network A_12, then optimum A*_23",
            ours=[float(gap.net_b), float(gap.net_a), float(gap.opt_b)],
            tolerance={"between": [[COLLAPSED, -1.0, -1.0], [1.0, -COLLAPSED, COLLAPSED]]},
            setting=gap_where)
        return out


def contrastive_networks(setting: Setting | None = None, *, seed: int = 0, temperature: float = 1.0, device=None,
                         results=None, checkpoints=None, workers: int | None = None,
                         progress: bool | None = None) -> ContrastiveNetworks:
    """Train the chapter's networks with InfoNCE and compare their class-mean cosines with the convex optimum.

    The runs: UCL and SCL with ``K_NET`` negatives at each majority probability of ``PI_NET``, and one UCL run
    with ``K_GAP`` negatives at ``pi_1 = 0.9`` on ``N_GAP`` majority samples (the gap test: there the optimum
    keeps the minorities apart). Each step draws ``NET_BATCH`` anchors, one positive per anchor from its class
    and ``k`` negatives per anchor (:func:`ncbook.train.fit_contrastive`; SGD, cosine schedule). Before training
    the call measures a few steps on this device and prints the estimate; the runs go to worker processes at the
    gpu and full profiles (:func:`~ncbook.experiments.run_jobs`; a bar counts finished runs), and each run's numbers
    do not depend on how many workers ran. At the full profile each run is also saved with :func:`ncbook.book.save_result`.

    Parameters
    ----------
    setting : Setting, optional
        From :func:`contrastive_setting` (default: the active profile's).
    seed : int, >= 0
        Seeds every run (initialisation and sampling).
    temperature : float, > 0
        The InfoNCE temperature ``tau`` of every run.
    device : str or torch.device, optional
        Default :func:`ncbook.default_device`.
    results : path, optional
        Where the cost record (and, at the full profile, the runs) go; default :func:`ncbook.results_dir`.
    checkpoints : path, optional
        Where finished runs are kept; default :func:`ncbook.checkpoint_dir` at the gpu and full profiles, none at
        the quick profile.
    workers : int, optional
        Worker processes for the runs (:func:`~ncbook.experiments.run_jobs`). Default: 1 at the quick profile
        (its runs take seconds, about what starting a worker process costs), else ``run_parallel``'s default.
    progress : bool, optional
        The bar over finished runs; default :func:`ncbook.profiles.show_progress`.

    Returns
    -------
    ContrastiveNetworks

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of its range (named in the message); a run whose loss is not
        finite raises the trainer's ``ValueError``.

    Examples
    --------
    >>> import tempfile
    >>> s = contrastive_setting("quick", N_MAJ=30, NET_STEPS=5, NET_BATCH=16, K_GAP=8, N_GAP=30)
    >>> nets = contrastive_networks(s, progress=False, results=tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Cost at the quick profile ...
    >>> nets.claim("within-class collapse").kind
    'paper'
    >>> list(nets.table.role)
    ['comparison', 'comparison', 'comparison', 'comparison', 'gap test']
    """
    from ..book import save_result

    watch = Stopwatch()
    setting = contrastive_setting() if setting is None else check_instance(
        "setting", setting, Setting, what="as contrastive_setting returns")
    _check_sizes(setting.sizes)
    s = setting.sizes
    seed = check_int("seed", seed, 0)
    temperature = check_positive("temperature", temperature)
    device = check_device("device", device, allow_none=True) or profiles.default_device()
    check_path("results", results, allow_none=True)
    check_path("checkpoints", checkpoints, allow_none=True)
    workers = check_int("workers", workers, 1, allow_none=True)
    if workers is None and setting.profile == "quick":
        workers = 1
    main = _main_process()
    if results is None and main:
        results = profiles.results_dir()
    if checkpoints is None and setting.profile != "quick":
        checkpoints = profiles.checkpoint_dir(CHAPTER)
    x_all, y_all, augment = _load(setting)
    make = contrastive_model(setting)
    runs = [(pi1, st, s["K_NET"], s["N_MAJ"], "comparison") for pi1 in s["PI_NET"] for st in ("ucl", "scl")]
    runs.append((PI_GAP, "ucl", s["K_GAP"], s["N_GAP"], "gap test"))
    subsets = {}
    configs = []
    for pi1, st, k, n_maj, role in runs:
        if (pi1, n_maj) not in subsets:
            subsets[(pi1, n_maj)] = _subset(x_all, y_all, pi1, n_maj)
        xs, ys = subsets[(pi1, n_maj)]
        name = f"{s['DATASET']}-pi{pi1:g}-n{n_maj}-{st}-k{k}-tau{temperature:g}-seed{seed}"
        key = dict(name=name, steps=s["NET_STEPS"], batch_size=s["NET_BATCH"], model=repr(make()),
                   x=_digest(xs), y=_digest(ys))
        configs.append(dict(make_model=make, x=xs, y=ys, k=k, setting=st, temperature=temperature,
                            steps=s["NET_STEPS"], batch_size=s["NET_BATCH"], augment=augment, seed=seed,
                            device=str(device), checkpoint=None if checkpoints is None else
                            str(Path(checkpoints) / f"{name}.pt"), key=key))
    order = sorted(range(len(configs)), key=lambda i: -configs[i]["k"] * len(configs[i]["y"]))  # longest first
    cost = _announce(configs, order, device, results, checkpoints, workers) if main else None
    t0 = time.perf_counter()
    done = run_jobs(_network_run, [configs[i] for i in order], progress=progress, workers=workers)
    outputs = [None] * len(configs)
    for i, out in zip(order, done):
        outputs[i] = out
    if cost is not None:
        cost.record("contrastive networks", time.perf_counter() - t0)
    table, histories = _network_table(runs, configs, outputs, temperature)
    extras = {"optimum": _optimum_curves(table, temperature)}
    if setting.profile == "full" and main:
        for row, cfg in zip(table.itertuples(index=False), configs):
            save_result(results, chapter=CHAPTER, setting=cfg["key"]["name"].removesuffix(f"-seed{seed}"), seed=seed,
                        wall_seconds=float(row.seconds),
                        metrics={c: getattr(row, c) for c in table.columns if c not in ("role", "setting")},
                        config=dict(k=int(row.k), temperature=temperature, steps=s["NET_STEPS"],
                                    batch_size=s["NET_BATCH"], n=int(row.n), model=_MODELS[s["DATASET"]],
                                    augment="crop+flip" if augment is not None else None, scale=setting.scale))
    return ContrastiveNetworks(CHAPTER, setting, table, histories, watch.seconds, extras)


def _digest(t: torch.Tensor) -> str:
    from ..train._fingerprint import tensor_digest

    return tensor_digest(t)


def _announce(configs, order, device, results, checkpoints, workers):
    """Measure a few steps of the largest run of each ``k``, print the estimate of all runs; return the cost record.

    The probe also runs in the worker processes the runs will use (which starts them). The record's measured
    time is set by the caller once the runs are done (in this cell, not in the cell after the announcement).
    """
    from ..train import ChapterCost, fit_contrastive, in_parallel, measure_contrastive, steps_seconds

    in_workers = 1 if _in_torchrun() or workers == 1 else len(configs)
    probes = {}
    for i in order:  # longest first: the largest subset of each k
        c = configs[i]
        if c["k"] in probes:
            continue
        with torch_threads(1 if device.type == "cpu" else torch.get_numtorch_threads()):  # as the runs will train
            probes[c["k"]] = measure_contrastive(
                fit_contrastive, c["make_model"], c["x"], c["y"], batch_size=c["batch_size"], k=c["k"],
                setting=c["setting"], temperature=c["temperature"], augment=c["augment"], seed=c["seed"], device=device,
                steps=PROBE_STEPS, parallel_runs=in_workers)
    serial = sum(steps_seconds(probes[c["k"]], steps=c["steps"], eval_images=2 * len(c["y"])) for c in configs)
    tp = probes[configs[order[0]]["k"]]
    cost = ChapterCost(CHAPTER, results=results, checkpoints=checkpoints)
    cost.add("contrastive networks", serial if in_workers == 1 else in_parallel(serial, len(configs), tp), tp)
    cost.announce("contrastive networks", time_next_cell=False)   # the call times its own runs
    return cost


def _network_table(runs, configs, outputs, temperature: float):
    import pandas as pd

    rows, histories = [], {}
    for (pi1_plan, st, k, _, role), cfg, out in zip(runs, configs, outputs):
        ys = cfg["y"]
        probs = np.bincount(ys.numpy(), minlength=3) / len(ys)
        star = optimal_gram(probs, k, setting=st, temperature=temperature)
        point = collapse_threshold(k, setting=st, num_classes=3, temperature=temperature)
        losses = np.asarray(out["losses"], dtype=np.float64)
        tail = losses[-max(1, len(losses) // 8):]
        gram = np.asarray(out["class_gram"], dtype=np.float64)
        excess = cl_risk(gram, probs, k, setting=st, temperature=temperature) - \
            cl_risk(star, probs, k, setting=st, temperature=temperature)
        rows.append(dict(role=role, setting=st, k=k, temperature=temperature, n=len(ys), pi1=float(probs[0]),
                         net_a=float(gram[0, 1]), net_b=float(gram[1, 2]), opt_a=float(star[0, 1]),
                         opt_b=float(star[1, 2]), init_b=float(np.asarray(out["init_gram"])[1, 2]),
                         point=float(point), predicted=bool(probs[0] >= point),
                         spread=float(np.max(out["spread"])), init_spread=float(np.max(out["init_spread"])),
                         excess=float(excess), loss_sd=float(tail.std()), seconds=float(out["seconds"])))
        histories[cfg["key"]["name"]] = losses
    return pd.DataFrame(rows), histories


def _optimum_curves(table, temperature: float, n: int = 25) -> dict:
    """The optimum's ``A*_23`` against ``pi_1`` for each ``(setting, k)`` of the comparison runs (1 at and above the
    exact point, where the proposition says the minorities collapse; solved below it)."""
    grid = np.linspace(0.34, 0.98, n)
    curves = {"pi1": grid}
    runs = table[table.role == "comparison"]
    for st, k in dict.fromkeys(zip(runs.setting, runs.k)):
        curves[f"{st.upper()}, k = {k}"] = np.array([_minority_cosine(p, int(k), st, temperature=temperature)
                                                     for p in grid])
    return curves
