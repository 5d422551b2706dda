"""The weighted-contrastive chapter's experiments: free prototypes, free embeddings of continuous labels, networks.

Letters (the book's notation): ``n`` samples, ``C`` classes, ``d`` the embedding dimension, ``tau`` the
temperature (keyword ``temperature``), ``Omega`` the prior weights, ``epsilon`` Soft SupCon's off-class weight
and ``epsilon*`` the one that gives a regular simplex, ``sigma`` the width of the Gaussian kernel on the labels,
``tau_s`` X-CLR's label temperature. Class-mean and prototype Grams are ``(C, C)``, sample Grams ``(n, n)``.

Three calls, one per long experiment of the chapter:

- :func:`supervised_prototypes`: SupCon and Soft SupCon on free class prototypes, balanced and imbalanced,
  and Soft SupCon's off-class weight around ``epsilon*`` (seconds; the same in every profile);
- :func:`continuous_label_fits`: Euclid-Euclid, y-Aware and X-CLR on free embeddings of continuous labels,
  each from several random starts, against the distance-geometry solution (seconds; every profile);
- :func:`weighted_networks`: networks trained with SupCon and Soft SupCon on STEP-imbalanced classes and with
  Euclid-Euclid and y-Aware on a continuous target (the sizes of :data:`ncbook.profiles.PLANS`
  ``["weighted_contrastive"]``: digits and an MLP at the quick profile, CIFAR-10 and a ResNet-32 otherwise).

Each returns an :class:`~ncbook.experiments.ExperimentResult` whose ``claims()`` are the chapter's checks of
the paper's statements, each judged by one verdict rule (:mod:`ncbook.experiments._verdicts`) that the
chapter's prose reads as well.

References
----------
Vock, Duchesnay, Dufumier, "A Unified Geometric Framework for Weighted Contrastive Learning",
arXiv:2605.13943 (2026).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import data, dgp, geometry, losses, metrics, models, profiles, train, ufm
from .._validation import check_bool, check_int, check_path, check_positive, check_sequence
from ..book import save_result
from ..train._checkpoint import load_checkpoint, save_checkpoint
from ..train._fingerprint import tensor_digest
from ._core import Claim, ExperimentResult, Setting, Stopwatch, run_jobs
from ._verdicts import Verdict, exceeds, matches

__all__ = ["ContinuousLabelFits", "SupervisedPrototypes", "WeightedNetworks", "continuous_label_fits",
           "supervised_prototypes", "weighted_network_setting", "weighted_networks"]

CHAPTER = "weighted_contrastive"
PAPER = "Vock et al. 2026"

#: Tolerances of the claims, stated before any run: a prototype Gram "is" the simplex ETF's when no entry
#: differs by more than ``GRAM_ATOL`` (the fits converge to about 1e-5); it is "not the simplex" when an entry
#: differs by more than ``DISTORTED`` (a hundred times that); two embeddings are "the same up to a rigid motion"
#: when their Grams differ by at most ``SAME_RTOL`` of the larger Gram's largest entry (fits that reach the
#: bound to 1e-8 still differ by up to about 1e-3 in far-apart pairs, whose weights are tiny; two optima of a
#: degenerate family differ by tens of percent); a loss "reaches its bound" when the entropic gap is at most
#: ``BOUND_ATOL`` (the fits stop at a gradient of 1e-6, which leaves gaps of 1e-9 to 1e-8 at an attained bound,
#: against about 0.5 for a random embedding); a gap "stays open" above ``OPEN_GAP``.
GRAM_ATOL, DISTORTED, SAME_RTOL, BOUND_ATOL, OPEN_GAP = 1e-4, 1e-2, 1e-2, 1e-7, 1e-4


def _one_blas_thread(fn):
    """Run ``fn`` with one BLAS thread: its dense problems are small (at most 256 x 256), and threaded BLAS
    spins on a busy machine (an eigendecomposition of 256 x 256 ran 6x slower with 2 threads under load)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)
    return wrapper


def _claim(kind: str, text: str, verdict: Verdict, **fields) -> Claim:
    """A claim whose record carries exactly ``verdict`` (its value and tolerance)."""
    return Claim(kind, text, **verdict.tolerance(), **fields)


def _etf_deviation(gram: np.ndarray) -> float:
    """Largest entry of ``|G - G_ETF|`` for a ``(C, C)`` Gram of unit vectors."""
    return float(np.abs(gram - geometry.etf_gram(len(gram))).max())


def _block_means(gram: np.ndarray, majority: np.ndarray) -> dict:
    """Mean cosines majority-majority, majority-minority and minority-minority (off the diagonal)."""
    def mean(a, b):
        block = gram[np.ix_(a, b)]
        return float(block[~np.eye(len(block), dtype=bool)].mean()) if a is b else float(block.mean())
    minority = ~majority
    return {"cos_maj_maj": mean(majority, majority) if majority.sum() > 1 else math.nan,
            "cos_maj_min": mean(majority, minority), "cos_min_min": mean(minority, minority)}


# --------------------------------------------------------------------------- free prototypes: SupCon, Soft SupCon
@dataclass
class SupervisedPrototypes(ExperimentResult):
    """SupCon and Soft SupCon on free class prototypes (:func:`supervised_prototypes`).

    ``table`` has one row per fit: ``loss``, ``classes`` (``"balanced"``/``"imbalanced"``), ``epsilon_factor``
    (``epsilon / epsilon*``; NaN for SupCon), ``cos_eps`` (Soft SupCon's target cosine ``1 - tau log(1/epsilon)``),
    ``status`` (of the sample-level objective, :func:`ncbook.dgp.spherical_dgp`), ``gap`` (entropic),
    ``etf_deviation`` (largest ``|G - G_ETF|``), ``cos_maj_min`` and ``cos_min_min`` (mean prototype cosines;
    class 0 is the majority), ``seconds``. ``extras``: ``grams`` ((loss, classes) -> ``(C, C)`` Gram),
    ``epsilon_star``, ``random_gap`` (SupCon's gap at random unit prototypes, the scale of the gaps),
    ``collapse`` (a sample-level SupCon fit: ``within`` = 1 - the smallest within-class cosine,
    ``prototype_difference`` = largest difference of its class-mean Gram from the class-level fit's).
    """

    def row(self, loss: str, classes: str, epsilon_factor: float = 1.0):
        """The table's row of one fit (``epsilon_factor`` selects among Soft SupCon's fits; SupCon ignores it)."""
        t = self.table
        sel = (t.loss == loss) & (t.classes == classes)
        if loss != "SupCon":
            sel &= np.isclose(t.epsilon_factor, epsilon_factor, rtol=1e-9, atol=0.0)
        if not sel.any():
            raise ValueError(f"no fit of loss={loss!r}, classes={classes!r}, epsilon_factor={epsilon_factor!r}; the "
                             f"table has {t[['loss', 'classes', 'epsilon_factor']].values.tolist()}.")
        return t[sel].iloc[0]

    def grams(self) -> dict:
        """The four main fits' prototype Grams, keyed ``"SupCon, balanced"``..."""
        return {f"{loss}, {classes}": g for (loss, classes), g in self.extras["grams"].items()}

    def verdicts(self) -> dict:
        """One :class:`~ncbook.experiments.Verdict` per claim, keyed as :meth:`claims` orders them."""
        g, etf = self.extras["grams"], geometry.etf_gram(self.setting.sizes["num_classes"])
        imb = self.table[(self.table.loss == "SupCon") & (self.table.classes == "imbalanced")].iloc[0]
        soft = np.stack([g["Soft SupCon", "balanced"], g["Soft SupCon", "imbalanced"]])
        return {"supcon_balanced": matches(g["SupCon", "balanced"], etf, rtol=0.0, atol=GRAM_ATOL),
                "supcon_imbalanced": exceeds(imb.etf_deviation, DISTORTED),
                "minorities_denser": exceeds(imb.cos_min_min - etf[0, 1], DISTORTED),
                "soft_supcon": matches(soft, np.stack([etf, etf]), rtol=0.0, atol=GRAM_ATOL)}

    def claims(self) -> list[Claim]:
        s = self.setting
        v, counts = self.verdicts(), s.sizes["counts"]
        base = f"{s.text}, counts {counts['imbalanced']}"
        return [
            _claim("paper", "With balanced classes SupCon's prototypes form the regular simplex: largest deviation "
                   f"of the prototype Gram from the simplex ETF's, counts {counts['balanced']}", v["supcon_balanced"],
                   paper="in the balanced setting the learned embeddings converge to a regular simplex",
                   source=f"{PAPER}, experiments section (discrete classification)",
                   setting=f"{s.text}, counts {counts['balanced']}"),
            _claim("paper", "Under class imbalance SupCon's prototypes are not a regular simplex: largest deviation "
                   "of the prototype Gram from the simplex ETF's", v["supcon_imbalanced"],
                   paper="SupCon induces non-uniform inter-class similarities depending on class sizes",
                   source=f"{PAPER}, abstract", setting=base),
            _claim("paper", "Under SupCon the minority classes are grouped more densely: mean minority-minority "
                   "prototype cosine minus the simplex's -1/(C - 1)", v["minorities_denser"],
                   paper="under class imbalance SupCon groups the minority classes more densely",
                   source=f"{PAPER}, section on supervised classification", setting=base),
            _claim("paper", "Soft SupCon with the temperature-matched epsilon keeps the regular simplex whatever the "
                   "class sizes: largest deviation of the prototype Grams (balanced and imbalanced) from the simplex "
                   "ETF's", v["soft_supcon"],
                   paper="Soft SupCon preserves a regular simplex geometry regardless of class imbalance "
                         "(temperature set correctly)",
                   source=f"{PAPER}, abstract",
                   setting=f"{base}, epsilon* = exp(-C / ((C - 1) tau)) = {self.extras['epsilon_star']:.3g} "
                           "(the chapter's closed form)"),
        ]


def _class_weights(num_classes: int, epsilon: float | None) -> np.ndarray:
    """SupCon's class-level weights (``epsilon=None``: the identity) or Soft SupCon's (``epsilon`` off the diagonal)."""
    eye = np.eye(num_classes)
    return eye if epsilon is None else np.where(eye > 0, 1.0, epsilon)


def _fit_job(fit: str, problem: tuple, **options):
    """One free fit, here or in a worker process: ``fit_prototypes(counts, class_weights, ...)`` (``fit="prototypes"``)
    or ``fit_free_embeddings(weights, ...)`` (``fit="embeddings"``); both run on one thread, so a worker gives the
    numbers of this process."""
    fn = {"prototypes": ufm.fit_prototypes, "embeddings": ufm.fit_free_embeddings}[fit]
    return fn(*problem, **options)


def _run_fits(jobs: list, progress) -> list:
    """``[(fit, problem, options)]`` -> their :class:`ncbook.ufm.EmbeddingFit`, side by side in worker processes."""
    return run_jobs(_fit_job, [dict(fit=f, problem=p, **o) for f, p, o in jobs], progress=progress)


def _prototype_row(loss, classes, counts, epsilon, epsilon_star, sizes, fit):
    c, tau, dim = sizes["num_classes"], sizes["temperature"], sizes["dim"]
    gram = fit.solution @ fit.solution.T
    labels = np.repeat(np.arange(c), counts)
    weights = losses.supcon_weights(labels) if epsilon is None else losses.soft_supcon_weights(labels, epsilon)
    row = {"loss": loss, "classes": classes,
           "epsilon_factor": math.nan if epsilon is None else epsilon / epsilon_star,
           "cos_eps": math.nan if epsilon is None else 1 - tau * math.log(1 / epsilon),
           "status": dgp.spherical_dgp(weights, tau, dim).status, "gap": fit.gap, "etf_deviation": _etf_deviation(gram),
           **{k: v for k, v in _block_means(gram, np.arange(c) == 0).items() if k != "cos_maj_maj"},
           "seconds": fit.seconds}
    return row, gram


def _collapse_check(sizes, fit, prototypes) -> dict:
    """A sample-level SupCon fit: do the samples of a class coincide, at the class-level prototypes?"""
    labels = np.repeat(np.arange(sizes["num_classes"]), sizes["collapse_counts"])
    cos = fit.solution @ fit.solution.T
    means = np.stack([fit.solution[labels == k].mean(0) for k in range(sizes["num_classes"])])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    protos = prototypes.solution
    return {"within": float(1 - cos[labels[:, None] == labels[None, :]].min()),
            "prototype_difference": float(np.abs(means @ means.T - protos @ protos.T).max())}


def _random_gap(counts, sizes, seed) -> float:
    c, tau, dim = sizes["num_classes"], sizes["temperature"], sizes["dim"]
    start = np.random.default_rng(seed).standard_normal((c, dim))
    start = torch.as_tensor(start / np.linalg.norm(start, axis=1, keepdims=True))
    value = losses.prototype_w_info_nce(start, counts, torch.eye(c, dtype=torch.float64), temperature=tau)
    return float(value) - losses.prototype_entropic_lower_bound(counts, np.eye(c))


@_one_blas_thread
def supervised_prototypes(*, num_classes: int = 4, dim: int = 8, temperature: float = 0.1, majority: int = 40,
                          minority: int = 10, epsilon_factors=(10.0, 0.1), seed: int = 0,
                          profile: str | None = None, progress: bool | None = None) -> SupervisedPrototypes:
    """Fit SupCon and Soft SupCon prototypes, balanced and imbalanced, and Soft SupCon around ``epsilon*``.

    The class-level problem (:func:`ncbook.ufm.fit_prototypes`, Adam then L-BFGS in float64) with
    ``num_classes`` classes of ``minority`` samples each (balanced) or one class of ``majority`` samples and
    ``num_classes - 1`` of ``minority`` (imbalanced). Soft SupCon runs at ``epsilon* = exp(-C / ((C - 1) tau))``
    and, on the imbalanced classes, at ``epsilon* x`` each of ``epsilon_factors``. The sizes are the same in
    every profile (seconds on a CPU); the fits run side by side in worker processes
    (:func:`ncbook.experiments.run_jobs`), each on one thread, with the numbers of a run in this process.

    Parameters
    ----------
    num_classes : int, >= 3
    dim : int, >= num_classes
        The prototypes' dimension ``d``.
    temperature : float, > 0
    majority, minority : int, >= 2
        Class sizes; ``majority > minority``.
    epsilon_factors : sequence of float, > 0
        Extra Soft SupCon fits at ``epsilon* x factor`` (imbalanced classes).
    seed : int, >= 0
        Seed of the random starts.
    profile : str, optional
        The profile the records name (default :func:`ncbook.profile`).
    progress : bool, optional
        A progress bar over the fits (default :func:`ncbook.show_progress`).

    Returns
    -------
    SupervisedPrototypes

    Raises
    ------
    ValueError, TypeError
        For an argument outside its range (the message names it).

    Examples
    --------
    >>> res = supervised_prototypes(num_classes=3, dim=3, majority=6, minority=2, epsilon_factors=(), progress=False)
    >>> res.table[["loss", "classes", "status"]].values.tolist()[:2]
    [['SupCon', 'balanced', 'inconsistent'], ['SupCon', 'imbalanced', 'inconsistent']]
    >>> [c.verdict for c in res.claims()]
    ['reproduced', 'reproduced', 'reproduced', 'reproduced']
    """
    import pandas as pd

    c = check_int("num_classes", num_classes, 3)
    dim = check_int("dim", dim, c, what="the prototypes' dimension d (at least num_classes)")
    tau = check_positive("temperature", temperature)
    minority = check_int("minority", minority, 2, what="samples of each minority class")
    majority = check_int("majority", majority, minority + 1, what="samples of the majority class (more than minority)")
    factors = list(check_sequence("epsilon_factors", epsilon_factors, check_positive, what="positive numbers",
                                  allow_empty=True))
    seed = check_int("seed", seed, 0)
    progress = check_bool("progress", progress, allow_none=True)
    watch = Stopwatch()
    counts = {"balanced": [minority] * c, "imbalanced": [majority] + [minority] * (c - 1)}
    sizes = dict(num_classes=c, dim=dim, temperature=tau, counts=counts, collapse_counts=[6] + [2] * (c - 1))
    setting = Setting.active({p: sizes for p in profiles.PROFILES},
                             lambda z: f"free prototypes, C = {z['num_classes']}, d = {z['dim']}, tau = "
                                       f"{z['temperature']:g}, Adam then L-BFGS, float64", profile=profile)
    eps_star = math.exp(-c / ((c - 1) * tau))
    options = dict(temperature=tau, dim=dim, seed=seed)
    runs = [(loss, classes, eps) for loss, eps in (("SupCon", None), ("Soft SupCon", eps_star)) for classes in counts]
    runs += [("Soft SupCon", "imbalanced", eps_star * factor) for factor in factors]
    collapse = sizes["collapse_counts"]
    jobs = [("prototypes", (counts[classes], _class_weights(c, eps)), options) for _, classes, eps in runs]
    jobs += [("embeddings", (losses.supcon_weights(np.repeat(np.arange(c), collapse)),), options),
             ("prototypes", (collapse, np.eye(c)), options)]
    fits = _run_fits(jobs, progress)
    rows, grams = [], {}
    for (loss, classes, eps), fit in zip(runs, fits):
        row, gram = _prototype_row(loss, classes, counts[classes], eps, eps_star, sizes, fit)
        rows.append(row)
        grams.setdefault((loss, classes), gram)
    extras = {"grams": grams, "epsilon_star": eps_star, "random_gap": _random_gap(counts["imbalanced"], sizes, seed),
              "collapse": _collapse_check(sizes, *fits[-2:])}
    return SupervisedPrototypes(CHAPTER, setting, pd.DataFrame(rows), seconds=watch.seconds, extras=extras)


# --------------------------------------------------------------------------- free embeddings: continuous labels
@dataclass
class ContinuousLabelFits(ExperimentResult):
    """Euclid-Euclid, y-Aware and X-CLR on free embeddings of continuous labels (:func:`continuous_label_fits`).

    ``table`` has one row per embedding: ``objective``, ``embedding`` (``"fit"`` from a random start, or
    ``"random"``: a random embedding, each metric's baseline), ``start`` (the fit's seed), ``status`` (of the
    objective in ``d`` dimensions, :mod:`ncbook.dgp`), ``gap`` (entropic), ``r2_ssim`` (:math:`r^2_{s\\text{-sim}}`),
    ``r2_proc`` (:math:`r^2_{\\mathrm{Proc}}` with the labels, or the label embeddings for X-CLR),
    ``gram_error`` (largest difference of the fit's Gram, centred for the Euclidean latent, from the
    distance-geometry solution's, relative to the latter's largest entry; NaN where the objective has no
    unique solution) and ``seconds``. ``extras``: ``labels`` ``(n, 2)``, ``label_embeddings`` ``(n, 3)``,
    ``weights`` (objective -> ``(n, n)`` Omega), ``embeddings`` (objective -> the first start's fit),
    ``solutions`` (objective -> :class:`ncbook.dgp.DGPResult`), ``circle`` (y-Aware for labels on the unit
    circle: the distance-geometry Gram against the closed form, ``status`` and ``error``).
    """

    def rows(self, objective: str, embedding: str = "fit"):
        """The table's rows of one objective (``embedding="random"``: its baseline row)."""
        t = self.table
        return t[(t.objective == objective) & (t.embedding == embedding)]

    def verdicts(self) -> dict:
        """One :class:`~ncbook.experiments.Verdict` per claim, keyed as :meth:`claims` orders them."""
        ee, ya, xc = self.rows("Euclid-Euclid"), self.rows("y-Aware"), self.rows("X-CLR")
        return {"ee_unique": matches(ee.gram_error.to_numpy(), np.zeros(len(ee)), rtol=0.0, atol=SAME_RTOL),
                "ee_labels": exceeds(ee.r2_proc.min(), 0.999),
                "ya_open": exceeds(ya.gap.min(), OPEN_GAP),
                "xclr_bound": matches(xc.gap.to_numpy(), np.zeros(len(xc)), rtol=0.0, atol=BOUND_ATOL),
                "xclr_unique": matches(xc.gram_error.to_numpy(), np.zeros(len(xc)), rtol=0.0, atol=SAME_RTOL),
                "ya_sphere": matches(self.extras["circle"]["error"], 0.0, rtol=0.0, atol=1e-6)}

    def claims(self) -> list[Claim]:
        s, v = self.setting, self.verdicts()
        k = s.sizes["starts"]
        starts = f"{k} random starts"
        return [
            _claim("paper", f"Euclid-Euclid weighting has a unique optimal embedding: {starts} reach the same embedding "
                   "up to a rigid motion, the distance-geometry solution (largest difference of the centred Grams, "
                   "relative to the solution's largest entry)", v["ee_unique"],
                   paper="Euclidean-Euclidean weighting admits unique optimal embeddings",
                   source=f"{PAPER}, abstract", setting=s.text),
            _claim("paper", f"The Euclid-Euclid optimum recovers the labels up to a similarity transform: smallest "
                   f"r2_Proc of the fitted embeddings ({starts}) with the labels", v["ee_labels"],
                   paper="Euclidean-Euclidean weighting recovers the label geometry", source=f"{PAPER}, abstract",
                   setting=s.text),
            _claim("paper", f"y-Aware cannot reach its entropic bound for labels off a sphere (uniform on a square), "
                   f"d < n - 1: smallest entropic gap over {starts}", v["ya_open"],
                   paper="y-Aware CL generally cannot attain its entropic optimum unless the labels lie on a hypersphere",
                   source=f"{PAPER}, abstract", setting=s.text),
            _claim("paper", "X-CLR with tau < tau_s and (rank of the label embeddings) + 1 <= d < n - 1 reaches its "
                   f"entropic bound: largest entropic gap over {starts}", v["xclr_bound"],
                   paper="X-CLR admits unique optimal embeddings under label-dimension and temperature conditions",
                   source=f"{PAPER}, abstract", setting=f"{s.text}, rank-3 label embeddings, tau_s = 2 tau"),
            _claim("paper", f"The X-CLR optimum is unique: {starts} reach the same embedding up to a rotation, the "
                   "distance-geometry solution (largest difference of the Grams, relative to the solution's largest "
                   "entry)", v["xclr_unique"],
                   paper="X-CLR admits unique optimal embeddings under label-dimension and temperature conditions",
                   source=f"{PAPER}, abstract", setting=f"{s.text}, rank-3 label embeddings, tau_s = 2 tau"),
            _claim("check", "y-Aware on labels on the unit circle (sigma = 1): the distance-geometry solution is the "
                   "closed form h_i = (sqrt(tau) y_i, sqrt(1 - tau)) of the chapter's proposition (ii) (largest "
                   "difference of the Grams)", v["ya_sphere"], derived=0.0,
                   derived_how="closed form of proposition (ii), by hand", setting=f"{s.text}, labels on the unit circle"),
        ]


def _relative_gram_error(solution: np.ndarray, reference: np.ndarray | None) -> float:
    if reference is None:
        return math.nan
    gram = solution @ solution.T
    return float(np.abs(gram - reference).max() / np.abs(reference).max())


#: L-BFGS iterations of the feasible objectives' fits: they meet the gradient certificate (1e-6) well within 200
#: (the default 500 only polishes beyond it: gaps of 3e-9 either way); y-Aware, inconsistent, keeps the default
#: and needs it to certify its best embedding
LBFGS_STEPS = {"Euclid-Euclid": {"lbfgs_steps": 200}, "X-CLR": {"lbfgs_steps": 200}}


def _label_problems(sizes, seed):
    """Labels, label embeddings and the three objectives: name -> (Omega, latent, reference, solver)."""
    rng = np.random.default_rng(seed)
    n, sigma = sizes["n"], sizes["sigma"]
    y = rng.uniform(-1, 1, (n, 2))
    e = rng.standard_normal((n, sizes["label_dim"]))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    kernel = losses.gaussian_kernel_weights(y, sigma).numpy()
    xclr = losses.xclr_weights(e, sizes["label_temperature"]).numpy()
    problems = {"Euclid-Euclid": (kernel, "euclidean", y, dgp.euclidean_dgp),
                "y-Aware": (kernel, "cosine", y, dgp.spherical_dgp),
                "X-CLR": (xclr, "cosine", e, dgp.spherical_dgp)}
    return y, e, problems


def _fit_row(name, weights, latent, reference, status, unique_gram, sizes, start, fit):
    return {"objective": name, "embedding": "fit", "start": start, "status": status,
            **_metrics(fit.solution, weights, latent, reference, sizes),
            "gram_error": _relative_gram_error(fit.solution, unique_gram), "seconds": fit.seconds}


def _metrics(h, weights, latent, reference, sizes) -> dict:
    tau = sizes["temperature"]
    return {"gap": metrics.entropic_gap(h, weights, similarity=latent, temperature=tau),
            "r2_ssim": metrics.r2_similarity(h, weights, similarity=latent),
            "r2_proc": metrics.r2_procrustes(h, reference)}


def _circle_check(sizes, seed) -> dict:
    """y-Aware for labels on the unit circle (sigma = 1): the spherical solution against proposition (ii)."""
    tau, n = sizes["temperature"], sizes["n"]
    theta = np.random.default_rng(seed + 1).uniform(0, 2 * np.pi, n)
    y = np.c_[np.cos(theta), np.sin(theta)]
    res = dgp.spherical_dgp(losses.gaussian_kernel_weights(y, 1.0), tau, sizes["dim"])
    h = np.c_[np.sqrt(tau) * y, np.full(n, np.sqrt(1 - tau))]
    error = float(np.abs(res.gram - h @ h.T).max()) if res.gram is not None else math.nan
    return {"status": res.status, "rank": res.rank, "error": error}


@_one_blas_thread
def continuous_label_fits(*, n: int = 64, dim: int = 8, sigma: float = 0.5, temperature: float = 0.2, starts: int = 3,
                          seed: int = 0, profile: str | None = None, progress: bool | None = None) -> ContinuousLabelFits:
    """Fit Euclid-Euclid, y-Aware and X-CLR on free embeddings of continuous labels, from several starts.

    ``n`` labels uniform on the square ``[-1, 1]^2`` with Gaussian-kernel weights of width ``sigma``
    (Euclid-Euclid: Euclidean latent; y-Aware: cosine latent), and ``n`` unit label embeddings in general
    position in 3 dimensions with X-CLR weights at ``tau_s = 2 tau`` (cosine latent). Each objective is fitted
    (:func:`ncbook.ufm.fit_free_embeddings`) from ``starts`` random starts in ``dim`` dimensions, classified by
    :mod:`ncbook.dgp`, and compared with a random embedding. The same sizes in every profile (seconds); the fits run
    side by side in worker processes (:func:`ncbook.experiments.run_jobs`), with the numbers of a run here.

    Parameters
    ----------
    n : int, >= 8
        Labels.
    dim : int, 4 <= dim < n - 1
        The embedding dimension ``d`` (X-CLR's optimum needs ``rank(G_e) + 1 = 4`` dimensions).
    sigma, temperature : float, > 0
    starts : int, >= 2
        Random starts per objective (uniqueness is tested on them).
    seed : int, >= 0
        Seeds the labels, the label embeddings and the starts (``seed``, ``seed + 1``, ...).
    profile : str, optional
        The profile the records name (default :func:`ncbook.profile`).
    progress : bool, optional
        A progress bar over the fits (default :func:`ncbook.show_progress`).

    Returns
    -------
    ContinuousLabelFits

    Raises
    ------
    ValueError, TypeError
        For an argument outside its range (the message names it).

    Examples
    --------
    >>> res = continuous_label_fits(n=12, dim=4, starts=2, progress=False)
    >>> res.rows("Euclid-Euclid").status.tolist(), res.rows("y-Aware").status.tolist()[:1]
    (['feasible', 'feasible'], ['inconsistent'])
    >>> res.verdicts()["ee_unique"].holds
    True
    """
    import pandas as pd

    n = check_int("n", n, 8, what="the number of labels")
    dim = check_int("dim", dim, 4, what="the embedding dimension d (X-CLR needs rank(G_e) + 1 = 4)")
    if dim >= n - 1:
        raise ValueError(f"dim must be below n - 1 = {n - 1} (at d >= n - 1 every objective has a family of optima); "
                         f"got {dim}.")
    sigma, tau = check_positive("sigma", sigma), check_positive("temperature", temperature)
    starts, seed = check_int("starts", starts, 2, what="random starts per objective"), check_int("seed", seed, 0)
    progress = check_bool("progress", progress, allow_none=True)
    watch = Stopwatch()
    sizes = dict(n=n, dim=dim, sigma=sigma, temperature=tau, label_dim=3, label_temperature=2 * tau, starts=starts)
    setting = Setting.active({p: sizes for p in profiles.PROFILES},
                             lambda z: f"free embeddings, n = {z['n']}, d = {z['dim']}, sigma = {z['sigma']:g}, "
                                       f"tau = {z['temperature']:g}, labels uniform on a square", profile=profile)
    y, e, problems = _label_problems(sizes, seed)
    h_random = np.random.default_rng(seed + starts).standard_normal((n, dim))
    solutions = {name: solver(weights, tau, dim) for name, (weights, _, _, solver) in problems.items()}
    runs = [(name, start) for name in problems for start in range(seed, seed + starts)]
    fits = _run_fits([("embeddings", (problems[name][0],), dict(similarity=problems[name][1], temperature=tau, dim=dim,
                                                                seed=start, **LBFGS_STEPS.get(name, {})))
                      for name, start in runs], progress)
    rows, embeddings = [], {}
    for (name, start), fit in zip(runs, fits):
        weights, latent, reference, _ = problems[name]
        res = solutions[name]
        rows.append(_fit_row(name, weights, latent, reference, res.status,
                             res.gram if res.status == "feasible" else None, sizes, start, fit))
        embeddings.setdefault(name, fit.solution)
    for name, (weights, latent, reference, _) in problems.items():
        rows.append({"objective": name, "embedding": "random", "start": -1, "status": solutions[name].status,
                     **_metrics(h_random, weights, latent, reference, sizes), "gram_error": math.nan, "seconds": 0.0})
    extras = {"labels": y, "label_embeddings": e, "weights": {k: p[0] for k, p in problems.items()},
              "embeddings": embeddings, "solutions": solutions, "circle": _circle_check(sizes, seed)}
    return ContinuousLabelFits(CHAPTER, setting, pd.DataFrame(rows), seconds=watch.seconds, extras=extras)


# --------------------------------------------------------------------------- networks
NET_TEMPERATURE = 0.5     # supervised networks: at tau = 0.1 the cross-class forces ~ e^{-1/tau} barely move them
REG_TEMPERATURE, REG_SIGMA = 0.2, 0.5
FEATURES = 16             # the MLP's feature dimension (quick profile)
TASKS = {"SupCon": "classes", "Soft SupCon": "classes", "Euclid-Euclid": "regression", "y-Aware": "regression"}
METRIC_POINTS = 2000      # metrics on at most this many points (the n x n weights)


@dataclass
class WeightedNetworks(ExperimentResult):
    """Networks trained with weighted contrastive losses (:func:`weighted_networks`).

    ``table`` has one row per run: ``task`` (``"classes"``: STEP-imbalanced classes; ``"regression"``: a 2-D
    continuous target), ``method`` (SupCon, Soft SupCon; Euclid-Euclid, y-Aware), ``seed``, ``gap`` (entropic, on
    at most 2000 points: training points for the classes, test images for the target), ``r2_ssim``,
    ``r2_proc`` (class means against the SupCon optimum for these counts, or test embeddings against the
    target), ``r2_proc_etf`` and ``etf_deviation`` (class means against the simplex ETF), ``cos_maj_maj``,
    ``cos_maj_min``, ``cos_min_min`` (mean class-mean cosines) and ``seconds``. ``histories``: run name -> batch
    losses. ``extras``: ``grams`` (method -> class-mean Gram, and ``"SupCon optimum"``), ``embeddings``
    (regression method -> ``(test embeddings, targets)``), ``baselines`` (``opt_vs_etf``: r2_Proc of the SupCon
    optimum with the ETF; ``random_vs_etf``: of random unit vectors, mean of 20; ``random_reg``: of a random
    embedding with the target), ``batch_status`` (y-Aware on a batch of 256 targets in the network's
    dimension), ``dim``, ``dataset``, ``model``.
    """

    def row(self, method: str):
        """The table's row of one run (SupCon, Soft SupCon, Euclid-Euclid, y-Aware)."""
        rows = self.table[self.table.method == method]
        if rows.empty:
            raise ValueError(f"method must be one of {self.table.method.tolist()}; got {method!r}.")
        return rows.iloc[0]

    def verdicts(self) -> dict:
        """One :class:`~ncbook.experiments.Verdict` per claim, keyed as :meth:`claims` orders them."""
        t = self.table.set_index("method")
        grams = self.extras["grams"]
        etf = geometry.etf_gram(len(grams["SupCon optimum"]))
        sup, soft = t.loc["SupCon"], t.loc["Soft SupCon"]
        half = 0.5 * _etf_deviation(grams["SupCon optimum"])     # half the distortion the class sizes cause
        return {"supcon_sizes": exceeds(sup.r2_proc - sup.r2_proc_etf, 0.0),
                "soft_simplex": matches(grams["Soft SupCon"], etf, rtol=0.0, atol=half),
                "soft_vs_supcon": exceeds(soft.r2_proc_etf - sup.r2_proc_etf, 0.0),
                "ee_paper": matches(t.loc["Euclid-Euclid"].r2_proc, 0.96, rtol=0.0, atol=0.05),
                "ya_worse": exceeds(t.loc["Euclid-Euclid"].r2_proc - t.loc["y-Aware"].r2_proc, 0.0)}

    def claims(self) -> list[Claim]:
        v = self.verdicts()
        net = self.setting.text
        sup = f"{net}; classes: counts {list(self.setting.sizes['NET_COUNTS'])}, tau = {NET_TEMPERATURE}"
        reg = (f"{net}; target: the first two principal components of the image, sigma = {REG_SIGMA}, "
               f"tau = {REG_TEMPERATURE}, test set")
        paper_source = f"{PAPER}, experiments section (regression)"
        ee = float(self.table.set_index("method").loc["Euclid-Euclid"].r2_proc)
        return [
            _claim("paper", "A SupCon network on imbalanced data is distorted according to class size: Procrustes "
                   "agreement of its class means with the size-dependent SupCon optimum minus their agreement with "
                   "the simplex ETF (one seed)", v["supcon_sizes"],
                   paper="under imbalance the SupCon embeddings are distorted according to class size",
                   source=f"{PAPER}, experiments section (imbalanced MNIST)", setting=sup),
            _claim("paper", "A Soft SupCon network (epsilon = epsilon*) on the same data keeps the regular simplex: "
                   "largest deviation of its class-mean Gram from the simplex ETF's, within half the largest "
                   "deviation of the SupCon optimum for these counts (the distortion the class sizes cause; one seed)",
                   v["soft_simplex"],
                   paper="Soft SupCon maintains the regular simplex structure on imbalanced data",
                   source=f"{PAPER}, experiments section (imbalanced MNIST)", setting=sup),
            _claim("paper", "The Soft SupCon network is closer to the simplex than the SupCon network: Procrustes "
                   "agreement of its class means with the simplex ETF minus the SupCon network's (one seed)",
                   v["soft_vs_supcon"], paper="SupCon is distorted by the class sizes, Soft SupCon is not",
                   source=f"{PAPER}, experiments section (imbalanced MNIST)", setting=sup),
            Claim("paper", "A network trained with Euclid-Euclid weighting on a continuous target recovers its "
                  "geometry: r2_Proc of the test embeddings with the target (one seed)", ours=ee, paper=0.96,
                  tolerance={"abs": 0.05, "against": "paper"}, source=paper_source, setting=reg),
            _claim("paper", "y-Aware (Euclidean labels, cosine latent) recovers the target geometry less well than "
                   "Euclid-Euclid: r2_Proc of Euclid-Euclid minus r2_Proc of y-Aware, same network and target "
                   "(one seed)", v["ya_worse"],
                   paper="the inconsistent y-Aware setting fails to recover the correct geometry, the Euclid-Euclid "
                         "one succeeds", source=paper_source, setting=reg),
        ]


def weighted_network_setting(profile: str | None = None, scale: str | None = None) -> Setting:
    """The sizes :func:`weighted_networks` runs at: ``ncbook.profiles.PLANS["weighted_contrastive"]`` for the
    profile, shrunk at the smoke scale (gpu and full: every code path, tiny sizes on the CIFAR stand-in).

    Parameters
    ----------
    profile : {"quick", "gpu", "full"}, optional
        Default :func:`ncbook.profile`.
    scale : {"paper", "smoke"}, optional
        Default :func:`ncbook.scale`.

    Returns
    -------
    Setting
        ``sizes``: ``DATASET``, ``SUBSET``, ``NET_COUNTS``, ``NET_STEPS``, ``NET_BATCH`` (None: full batch),
        ``REG_STEPS``, ``REG_BATCH``.

    Raises
    ------
    ValueError
        For an unknown profile or scale.

    Examples
    --------
    >>> weighted_network_setting("gpu", "paper").sizes == profiles.PLANS["weighted_contrastive"].params["gpu"]
    True
    """
    def smoke(z):
        return {**z, "NET_COUNTS": [20] * 5 + [4] * 5, "NET_STEPS": 12, "NET_BATCH": 32, "REG_STEPS": 12, "REG_BATCH": 32}

    def text(z):
        model = "MLP" if z["DATASET"] == "digits" else "ResNet-32"
        batch = "full batch" if z["NET_BATCH"] is None else f"batch {z['NET_BATCH']}"
        return (f"{z['DATASET']}, {model}, {z['NET_STEPS']} steps ({batch}) for the classes, {z['REG_STEPS']} "
                f"steps (batch {z['REG_BATCH']}) for the target")

    return Setting.active(profiles.PLANS[CHAPTER].params, text, profile=profile, scale=scale, smoke=smoke)


def _make_model(dataset: str, normalize: bool):
    if dataset == "digits":
        return models.MLP(64, (256, 256), feat_dim=FEATURES, normalize=normalize)
    return models.resnet32(10, normalize=normalize)


def _network_job(*, key: str, dataset: str, normalize: bool, x, targets, weight_fn, similarity: str, temperature: float,
                 steps: int, batch_size, augment, seed: int, eval_x, checkpoint: str | None = None) -> dict:
    """One run: build the model after ``torch.manual_seed(seed)``, train it, embed ``eval_x``. With ``checkpoint``
    (a file), a finished run of the same ``key`` is read back instead of trained again, and a new one is saved."""
    if checkpoint is not None and Path(checkpoint).exists():
        saved = load_checkpoint(checkpoint)
        if saved.get("key") == key:
            return {k: saved[k] for k in ("z", "losses", "seconds")}
    torch.manual_seed(seed)
    run = train.fit_weighted_contrastive(_make_model(dataset, normalize), x, targets, weight_fn, similarity=similarity,
                                         temperature=temperature, steps=steps, batch_size=batch_size, augment=augment,
                                         seed=seed)
    out = {"z": train.embed(run.model, eval_x), "losses": list(run.losses), "seconds": float(run.seconds)}
    if checkpoint is not None:
        state = {k: v.detach().cpu() for k, v in run.model.state_dict().items()}
        save_checkpoint(checkpoint, {"key": key, "state": state, **out})
    return out


def _distributed_world() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _run_network_jobs(configs: list, progress) -> list:
    """The runs, side by side in worker processes; under ``torchrun`` each rank trains its share of the runs (rank
    ``r`` the runs ``r, r + W, ...``: :func:`ncbook.train.fit_weighted_contrastive` trains a run in one process) and
    every rank receives every result."""
    world = _distributed_world()
    if world == 1:
        return run_jobs(_network_job, configs, progress=progress)
    import torch.distributed as dist

    rank = dist.get_rank()
    mine = {i: _network_job(**c) for i, c in enumerate(configs) if i % world == rank}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)
    merged = {i: out for part in gathered for i, out in part.items()}
    return [merged[i] for i in range(len(configs))]


def _load_split(sizes, seed):
    """``(split, augment)`` of the profile's data set: digits (standardised) or CIFAR-10 (the plan's subset)."""
    if sizes["DATASET"] == "digits":
        return data.load_digits(seed=seed), None
    root, subset = profiles.data_root(), sizes["SUBSET"]
    x_tr, y_tr = data.cifar_tensors("cifar10", root, train=True, download=True, subset=subset)
    x_te, y_te = data.cifar_tensors("cifar10", root, train=False, download=True, subset=subset)
    return data.Split(x_tr, y_tr, x_te, y_te), data.cifar_augment


def _pca_targets(split):
    """The first two principal components of the images, scaled to [-1, 1] by the training set's range."""
    x_flat = split.x_train.reshape(len(split.x_train), -1).double()
    mean = x_flat.mean(0)
    _, _, vt = torch.linalg.svd(x_flat[:5000] - mean, full_matrices=False)

    def project(x):
        return (x.reshape(len(x), -1).double() - mean) @ vt[:2].T

    scale = project(split.x_train).abs().amax(0)
    return (project(split.x_train) / scale).float(), (project(split.x_test) / scale).double()


def _network_problem(sizes, seed) -> dict:
    """Everything the runs and their metrics need, built once in this process."""
    split, augment = _load_split(sizes, seed)
    counts = np.array(sizes["NET_COUNTS"])
    idx = data.make_imbalanced(split.y_train, counts, seed=seed)
    c = len(counts)
    t_train, t_test = _pca_targets(split)
    sub = torch.randperm(len(split.x_test), generator=torch.Generator().manual_seed(seed))[:METRIC_POINTS]
    batch = sizes["NET_BATCH"]
    batch_counts = counts if batch is None else np.maximum(1, np.round(counts * batch / counts.sum())).astype(int)
    return {"split": split, "augment": augment, "counts": counts, "x": split.x_train[idx], "y": split.y_train[idx],
            "t_train": t_train, "t_test": t_test[sub], "x_test": split.x_test[sub],
            "epsilon": math.exp(-c / ((c - 1) * NET_TEMPERATURE)), "batch_counts": batch_counts}


def _network_configs(sizes, problem, seed, checkpoints) -> list:
    """The four runs (name, config): SupCon and Soft SupCon on the classes, Euclid-Euclid and y-Aware on the target."""
    kernel = functools.partial(losses.gaussian_kernel_weights, sigma=REG_SIGMA)
    soft = functools.partial(losses.soft_supcon_weights, epsilon=problem["epsilon"])
    common = dict(dataset=sizes["DATASET"], augment=problem["augment"], seed=seed)
    classes = dict(x=problem["x"], targets=problem["y"], similarity="cosine", temperature=NET_TEMPERATURE,
                   steps=sizes["NET_STEPS"], batch_size=sizes["NET_BATCH"], eval_x=problem["x"], normalize=True)
    target = dict(x=problem["split"].x_train, targets=problem["t_train"], weight_fn=kernel, temperature=REG_TEMPERATURE,
                  steps=sizes["REG_STEPS"], batch_size=sizes["REG_BATCH"], eval_x=problem["x_test"])
    runs = {"SupCon": dict(classes, weight_fn=losses.supcon_weights),
            "Soft SupCon": dict(classes, weight_fn=soft),
            "Euclid-Euclid": dict(target, similarity="euclidean", normalize=False),
            "y-Aware": dict(target, similarity="cosine", normalize=True)}
    configs = []
    for name, cfg in runs.items():
        key = _run_key(name, sizes, seed, cfg)
        path = None if checkpoints is None else str(Path(checkpoints) / f"{name.replace(' ', '')}-seed{seed}.pt")
        configs.append((name, dict(common, **cfg, key=key, checkpoint=path)))
    return configs


def _run_key(name, sizes, seed, cfg) -> str:
    """What makes a finished run the same run: method, sizes, seed and the training data's digest."""
    return (f"{name}|{sizes}|seed {seed}|tau {cfg['temperature']}|x {tensor_digest(cfg['x'])}"
            f"|targets {tensor_digest(cfg['targets'])}")


def _checkpoint_folder(profile: str) -> str:
    """:func:`ncbook.checkpoint_dir` of this chapter for ``profile`` (the active profile's folder otherwise)."""
    folder = Path(profiles.checkpoint_dir(CHAPTER))
    return str(folder.parent.parent / profile / CHAPTER)


def _images(batch, n: int) -> int:
    return n if batch is None or batch >= n else batch


def _cost_estimate(problem, configs, parallel: int):
    """Probe a few steps of each kind of run on this device; return ``(seconds, throughput)`` of the four runs.

    Each kind's two runs cost ``steps_seconds(..., runs=2)`` one after another. On a CPU the four runs share
    the worker processes (``tp.workers`` of them), each kind's steps slower there by its measured
    ``parallel_slowdown``; on a GPU the workers share one device and the estimate assumes no overlap (as
    :func:`ncbook.train.in_parallel` does)."""
    cfg = dict(configs)
    total, tps = 0.0, []
    for name, eval_n in (("SupCon", len(problem["x"])), ("Euclid-Euclid", len(problem["x_test"]))):
        c = cfg[name]
        make = functools.partial(_make_model, c["dataset"], c["normalize"])
        tp = train.measure_steps(train.fit_weighted_contrastive, make, c["x"], c["targets"], c["weight_fn"],
                                 similarity=c["similarity"], temperature=c["temperature"], batch_size=c["batch_size"],
                                 augment=c["augment"], seed=c["seed"],
                                 images_per_step=_images(c["batch_size"], len(c["x"])),
                                 parallel_runs=parallel)
        serial = train.steps_seconds(tp, steps=c["steps"], eval_images=eval_n, runs=2)
        shared = tp.device_type == "cpu" and tp.workers > 1
        total += serial * tp.parallel_slowdown / tp.workers if shared else serial
        tps.append(tp)
    return total, tps[0]


def _class_metrics(z, y, weight_fn, counts, predicted, seed) -> dict:
    c = len(counts)
    means = torch.stack([z[y == k].mean(0) for k in range(c)])
    means = (means / means.norm(dim=1, keepdim=True)).numpy()
    sub = torch.randperm(len(z), generator=torch.Generator().manual_seed(seed))[:METRIC_POINTS]
    w = weight_fn(y[sub])
    gram = means @ means.T
    return {"gap": metrics.entropic_gap(z[sub], w, temperature=NET_TEMPERATURE),
            "r2_ssim": metrics.r2_similarity(z[sub], w), "r2_proc": metrics.r2_procrustes(means, predicted),
            "r2_proc_etf": metrics.r2_procrustes(means, geometry.simplex_etf(c)),
            "etf_deviation": _etf_deviation(gram), **_block_means(gram, counts == counts.max())}, gram


def _target_metrics(z, t, weight_fn, similarity) -> dict:
    w = weight_fn(t)
    return {"gap": metrics.entropic_gap(z, w, similarity=similarity, temperature=REG_TEMPERATURE),
            "r2_ssim": metrics.r2_similarity(z, w, similarity=similarity), "r2_proc": metrics.r2_procrustes(z, t)}


def _baselines(predicted, problem, dim, seed) -> dict:
    c = len(predicted)
    rng = np.random.default_rng(seed)
    units = [rng.standard_normal((c, predicted.shape[1])) for _ in range(20)]
    etf = geometry.simplex_etf(c)
    noise = torch.randn(len(problem["t_test"]), dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return {"opt_vs_etf": metrics.r2_procrustes(predicted, etf),
            "random_vs_etf": float(np.mean([metrics.r2_procrustes(u / np.linalg.norm(u, axis=1, keepdims=True), etf)
                                            for u in units])),
            "random_reg": metrics.r2_procrustes(noise, problem["t_test"])}


def _network_table(configs, outputs, problem, predicted, seed):
    import pandas as pd

    rows, grams, embeddings, histories = [], {}, {}, {}
    for (name, cfg), out in zip(configs, outputs):
        row = {"task": TASKS[name], "method": name, "seed": seed}
        if row["task"] == "classes":
            m, grams[name] = _class_metrics(out["z"], problem["y"], cfg["weight_fn"], problem["counts"], predicted, seed)
        else:
            m = _target_metrics(out["z"], problem["t_test"], cfg["weight_fn"], cfg["similarity"])
            embeddings[name] = (out["z"], problem["t_test"])
        rows.append({**row, **m, "seconds": out["seconds"]})
        histories[name] = out["losses"]
    return pd.DataFrame(rows), grams, embeddings, histories


def _save_full_results(setting, table, configs, results):
    """At the full profile: each run's numbers for the Reproduction page (``ncbook.book.save_result``)."""
    recipe = dict(model="ResNet-32", augment="crop+flip", scale=setting.scale, **setting.sizes)
    for row, (name, cfg) in zip(table.to_dict("records"), configs):
        kind = "step" if row["task"] == "classes" else "pca"
        save_result(results, chapter=CHAPTER, setting=f"{setting.sizes['DATASET']}-{kind}-{name.replace(' ', '')}",
                    seed=row["seed"], wall_seconds=row["seconds"],
                    metrics={k: v for k, v in row.items() if k not in ("task", "method", "seed", "seconds")},
                    config=dict(recipe, temperature=cfg["temperature"], steps=cfg["steps"], batch_size=cfg["batch_size"]))


@_one_blas_thread
def weighted_networks(*, seed: int = 0, profile: str | None = None, scale: str | None = None, results=None,
                      progress: bool | None = None) -> WeightedNetworks:
    """Train networks with SupCon and Soft SupCon on STEP-imbalanced classes, and with Euclid-Euclid and y-Aware
    on a continuous target; measure each against its predicted geometry.

    The classes: STEP imbalance (``NET_COUNTS``) at ``tau = 0.5``, Soft SupCon at ``epsilon*``; predicted
    geometry: the SupCon optimum of :func:`ncbook.ufm.fit_prototypes` for the (batch) counts, and the simplex
    ETF. The target: the first two principal components of each image (scaled to ``[-1, 1]``), Gaussian-kernel
    weights of width 0.5 at ``tau = 0.2``, measured on at most 2000 test images. The sizes are those of
    :func:`weighted_network_setting` (the plan of ``ncbook.profiles.PLANS``). Before training, a few steps of
    each kind of run are timed on this device and the estimate is printed (:class:`ncbook.train.ChapterCost`,
    its record under ``results``); the four runs then train side by side in worker processes
    (:func:`ncbook.experiments.run_jobs`, a progress bar over runs), or shared among the ranks under ``torchrun``.
    At the gpu and full profiles each finished run is checkpointed under :func:`ncbook.checkpoint_dir` and read
    back by a later call with the same sizes and data; at the full profile each run's numbers are also saved
    (:func:`ncbook.book.save_result`).

    Parameters
    ----------
    seed : int, >= 0
        Seeds the subset, the initialisations, the batches and the metric subsets.
    profile, scale : str, optional
        Default :func:`ncbook.profile` and :func:`ncbook.scale`.
    results : path, optional
        Where the cost record (and, at the full profile, the runs' results) go; default :func:`ncbook.results_dir`.
    progress : bool, optional
        A progress bar over the runs (default :func:`ncbook.show_progress`).

    Returns
    -------
    WeightedNetworks

    Raises
    ------
    ValueError, TypeError
        For a bad argument (named); :class:`ncbook.data.DatasetUnavailableError` when CIFAR-10 is missing
        offline at the gpu or full profile.

    Examples
    --------
    What the call runs at the quick profile (the call itself trains for seconds to minutes):

    >>> weighted_network_setting("quick", "paper").text
    'digits, MLP, 1000 steps (batch 128) for the classes, 1200 steps (batch 256) for the target'
    >>> res = weighted_networks(profile="quick")                          # doctest: +SKIP
    >>> res.table[["method", "r2_proc"]]                                  # doctest: +SKIP
    """
    seed = check_int("seed", seed, 0)
    progress = check_bool("progress", progress, allow_none=True)
    results = profiles.results_dir() if check_path("results", results, allow_none=True) is None else str(results)
    watch = Stopwatch()
    setting = weighted_network_setting(profile, scale)
    sizes = setting.sizes
    if train.is_main_process():
        print(f"Training at the {setting.profile} profile{' (stand-in scale)' if setting.scale == 'smoke' else ''}: "
              f"{setting.text}.")
    problem = _network_problem(sizes, seed)
    predicted = ufm.fit_prototypes(problem["batch_counts"], np.eye(len(problem["counts"])), temperature=NET_TEMPERATURE,
                                   dim=FEATURES, seed=seed).solution
    checkpoints = None if setting.profile == "quick" else _checkpoint_folder(setting.profile)
    configs = _network_configs(sizes, problem, seed, checkpoints)
    world = _distributed_world()
    parallel = 1 if world > 1 else len(configs)
    seconds, tp = _cost_estimate(problem, configs, parallel)
    cost = train.ChapterCost(CHAPTER, results=results, checkpoints=checkpoints)
    cost.profile, cost.scale = setting.profile, setting.scale      # the record names the setting's profile
    cost.add("networks", seconds * math.ceil(len(configs) / world) / len(configs), tp)
    if train.is_main_process():   # one announcement and one record under torchrun
        cost.announce("networks", time_next_cell=False)   # this call times its own runs
    trained = Stopwatch()
    outputs = _run_network_jobs([c for _, c in configs], progress)
    if train.is_main_process():
        cost.record("networks", trained.seconds)
    table, grams, embeddings, histories = _network_table(configs, outputs, problem, predicted, seed)
    grams["SupCon optimum"] = predicted @ predicted.T
    optimum = {"etf_deviation": _etf_deviation(grams["SupCon optimum"]),
               **_block_means(grams["SupCon optimum"], problem["counts"] == problem["counts"].max())}
    dim = int(outputs[-1]["z"].shape[1])
    batch_t = problem["t_test"][:256]
    extras = {"grams": grams, "embeddings": embeddings, "baselines": _baselines(predicted, problem, dim, seed),
              "batch_status": dgp.spherical_dgp(losses.gaussian_kernel_weights(batch_t, REG_SIGMA), REG_TEMPERATURE,
                                                dim).status,
              "dim": dim, "dataset": sizes["DATASET"], "model": "MLP" if sizes["DATASET"] == "digits" else "ResNet-32",
              "counts": problem["counts"], "optimum_cosines": optimum}
    if setting.profile == "full" and train.is_main_process():
        _save_full_results(setting, table, configs, results)
    return WeightedNetworks(CHAPTER, setting, table, histories=histories, seconds=watch.seconds, extras=extras)
