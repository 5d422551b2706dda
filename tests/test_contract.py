"""The input contract as a mechanism: every public callable, every parameter, the bad inputs of its kind.

``SPECS`` below is a table: for each public function and class of the package (enumerated from the
``__all__`` of every subpackage) a valid call and the kind of each parameter. For every parameter
the sweep feeds the inputs of its kind that are outside the domain or of another type: empty,
NaN/inf, integer/bool/float16/bfloat16/float32/float64 dtypes, the wrong shape or length (counts
shorter than the classes present, C = 1), out-of-domain values (a non-PSD Gram, probabilities not
summing to 1, negative counts, a non-integer seed), ``None`` for options, numpy where torch is
expected and the reverse. Each must give either

* the right value to the input's precision (another float dtype, numpy for torch and back, a list,
  integers promoted, a float32-normalised probability vector ...), or
* a ``ValueError``/``TypeError`` whose message names the argument, raised by the call that received
  it (a class must refuse a bad option at construction, not at first use).

A silently wrong value (a finite number from NaN input, a truncated integer result, a value that
differs at float32 precision), another exception type, or a message that does not name the argument
is a fault. ``test_every_public_callable_is_declared`` fails when a public callable is added without
its row, or a parameter without its kind.

Out of scope of the sweep, as chapter glue (their inputs come from the package's own results, and
they are exercised by the chapters and their own tests): ``ncbook.plotting`` (figures),
``ncbook.exercises`` (autograder checks of student functions) and ``ncbook.book`` (glue and records).
Exceptions and the frozen result records the solvers return are declared without a sweep.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import torch

import ncbook
import ncbook.geometry
import ncbook.losses
import ncbook.models

torch.set_num_threads(1)
# the sweep feeds NaN/inf on purpose and runs the fits for a handful of steps: their warnings are expected here
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::ncbook.InaccurateSolutionWarning")]

SUBPACKAGES = ["ncbook", "ncbook.geometry", "ncbook.metrics", "ncbook.losses", "ncbook.contrastive", "ncbook.dgp",
               "ncbook.margins", "ncbook.reweighting", "ncbook.ufm", "ncbook.data", "ncbook.models", "ncbook.train",
               "ncbook.profiles", "ncbook.plotting", "ncbook.exercises", "ncbook.book"]
GLUE = {
    "ncbook.plotting": "figures of the chapters (matplotlib); their inputs are the package's results",
    "ncbook.exercises": "autograder checks of student functions; tested with planted mistakes in tests/test_exercises_*",
    "ncbook.book": "chapter glue, claims and result records; tested in tests/test_claims.py and tests/test_book_cache.py",
}
NO_SWEEP = {  # public classes that take no user input of their own
    "InaccurateSolutionWarning": "a warning class", "SolverError": "an exception class",
    "DatasetUnavailableError": "an exception class",
    "SELIGeometry": "the frozen result of seli_geometry", "GramResult": "the frozen result of solve_gram",
    "DGPResult": "the frozen result of the DGP solvers", "CEUFMResult": "the frozen result of train_ufm",
    "ContrastiveUFMResult": "the frozen result of fit_contrastive_ufm", "EmbeddingFit": "the frozen result of the UFM fits",
    "RidgeOptimum": "the frozen result of ridge_optimum", "ContrastiveFit": "the frozen result of fit_contrastive",
    "ContrastiveRun": "the frozen result of fit_weighted_contrastive", "History": "the per-epoch record fit returns",
    "Split": "a named tuple of four tensors",
}
ERRORS = (ValueError, TypeError)
IGNORED_FIELDS = {"seconds", "iterations", "wall_seconds", "history", "config", "reason", "solver"}


# ----------------------------------------------------------------------------------------------- cases
@dataclass
class Case:
    """One input for one parameter and what it must give.

    ``expect``: ``"error"`` (ValueError/TypeError naming the parameter), ``"same"`` (the base call's
    value to ``tol``, or such an error), ``"like"`` (the value of the call with ``reference`` instead,
    or such an error), ``"nonfinite"`` (such an error, or a result that shows the NaN/inf), ``"finite"``
    (such an error, or a finite result: C = 1 and other edge cases whose value is not checked here).
    """

    label: str
    value: Any
    expect: str
    tol: float = 1e-9
    reference: Any = None
    mismatch: bool = False  # a length that disagrees with another argument: naming either one is enough
    in_domain: bool = False  # a valid input (not merely another type): it must give its value, an error is a fault


TOL = {torch.float16: 3e-2, torch.bfloat16: 1.5e-1, torch.float32: 2e-4, torch.float64: 1e-9}


def _swap(v):
    """numpy for torch and the reverse (a list becomes a float64 tensor)."""
    return v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v))


def _t(v):
    return v if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v))


def _like(v, t):
    """``t`` (a tensor) in the container type of ``v``."""
    return t if isinstance(v, torch.Tensor) else t.numpy()


def _with(v, index, value):
    t = _t(v).clone().double()
    t.view(-1)[index] = value
    return _like(v, t)


class Kind:
    optional = False
    example = None

    def cases(self, base) -> list[Case]:
        raise NotImplementedError

    def all_cases(self, base):
        if base is None:
            return [] if self.example is None else self.cases(self.example)
        out = self.cases(base)
        if not self.optional and base is not None:
            out.append(Case("None", None, "error"))
        return out


@dataclass
class Floats(Kind):
    """A float tensor or array of data (features, logits, matrices): its values matter."""

    paired: bool = False  # its first axis must match another argument's
    optional: bool = False
    example: Any = None
    ints: bool = True  # integer and bool inputs (promoted, never truncated, or refused)
    flat_ok: bool = False  # a 1-D input is documented (e.g. one label dimension)
    inf_ok: bool = False  # the value at an infinite entry is a finite limit (e.g. CE 0 at an infinite true logit)
    moves: bool = False  # the function only moves values (crops, batches): a NaN is carried, not computed with

    def cases(self, base):
        t = _t(base).double()
        out = [Case(f"{d}", _like(base, t.to(d)) if isinstance(base, torch.Tensor) or d not in (torch.bfloat16,)
                    else t.to(d), "same", TOL[d]) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)]
        out.append(Case("numpy<->torch", _swap(base), "same"))
        if self.ints:
            r = t.round().clamp(-3, 3)
            out.append(Case("int64", _like(base, r.long()), "like", 1e-6, _like(base, r)))
            out.append(Case("bool", _like(base, t > 0), "like", 1e-6, _like(base, (t > 0).double())))
        nonfinite = "any" if self.moves else "nonfinite"
        out += [Case("NaN", _with(base, 0, math.nan), nonfinite),
                Case("inf", _with(base, 0, math.inf), "finite" if self.inf_ok else nonfinite),
                Case("extra axis", _like(base, t[None]), "error")]
        if t.ndim >= 2 and not self.flat_ok:
            out.append(Case("flattened", _like(base, t.reshape(-1)), "error"))
        if t.ndim >= 1:  # an empty result is the right value of an empty input; a NaN mean is not
            out.append(Case("empty", _like(base, t[:0]), "finite", mismatch=self.paired))
        if self.paired:
            out.append(Case("one row short", _like(base, t[:-1]), "error", mismatch=True))
        out.append(Case("string", "abc", "error"))
        return out


@dataclass
class Labels(Kind):
    classes: int | None = None  # the number of classes a label must stay below
    paired: bool = True

    def cases(self, base):
        t = _t(base).long()
        out = [Case("int32", _like(base, t.int()), "same"), Case("uint8", _like(base, t.to(torch.uint8)), "same"),
               Case("list", t.tolist(), "same"), Case("numpy<->torch", _swap(base), "same"),
               Case("float", _like(base, t.double()), "error"), Case("bool", _like(base, t > 0), "error"),
               Case("negative", _like(base, torch.cat([t[:-1], t.new_tensor([-1])])), "error"),
               Case("2-D", _like(base, t[:, None]), "error"), Case("string", "abc", "error")]
        if self.classes is not None:
            out.append(Case("label = C", _like(base, torch.cat([t[:-1], t.new_tensor([self.classes])])), "error"))
        if self.paired:
            out.append(Case("one short", _like(base, t[:-1]), "error", mismatch=True))
        return out


@dataclass
class Counts(Kind):
    """Per-class sample counts: positive integers."""

    paired: bool = False  # their length must equal the classes of another argument
    single_ok: bool = True
    optional: bool = False
    example: Any = None

    def cases(self, base):
        a = np.asarray(_t(base).numpy() if isinstance(base, torch.Tensor) else base)
        out = [Case("list", a.tolist(), "same"), Case("numpy int32", a.astype(np.int32), "same"),
               Case("torch", torch.as_tensor(a), "same"), Case("integral floats", a.astype(np.float64), "same"),
               Case("negative", np.r_[-3, a[1:]], "error"), Case("zero", np.r_[0, a[1:]], "error"),
               Case("2.5", np.r_[2.5, a[1:]], "error"), Case("NaN", np.r_[np.nan, a[1:]], "error"),
               Case("inf", np.r_[np.inf, a[1:]], "error"), Case("2-D", a[None], "error"),
               Case("empty", a[:0], "error"), Case("bool", a > 0, "error"), Case("string", "abc", "error")]
        if self.paired:
            out.append(Case("shorter than the classes", a[:-1], "error", mismatch=True))
        elif self.single_ok:
            out.append(Case("C = 1", a[:1], "finite"))
        return out


@dataclass
class Probs(Kind):
    """A probability vector: positive, summing to 1."""

    paired: bool = False

    def cases(self, base):
        a = np.asarray(base, dtype=np.float64)
        f32 = a.astype(np.float32)  # [0.5, 0.3, 0.2] in float32 sums to 1 + 1.5e-8 in float64
        return [Case("list", a.tolist(), "same"), Case("torch", torch.as_tensor(a), "same"),
                Case("float32", f32, "like", 1e-6, f32.astype(np.float64) / f32.astype(np.float64).sum(), in_domain=True),
                Case("sum 1.01", a * 1.01, "error"), Case("negative", np.r_[-a[0], a[1:] + 2 * a[0] / (len(a) - 1)], "error"),
                Case("NaN", np.r_[np.nan, a[1:]], "error"), Case("2-D", a[None], "error"), Case("empty", a[:0], "error"),
                Case("string", "abc", "error")] + (
            [Case("one short", a[:-1] / a[:-1].sum(), "error", mismatch=True)] if self.paired else [Case("C = 1", np.array([1.0]), "finite")])


@dataclass
class Gram(Kind):
    """A symmetric positive semidefinite matrix (a Gram or correlation matrix)."""

    def cases(self, base):
        a = np.asarray(base, dtype=np.float64)
        lam, vec = np.linalg.eigh(a)
        lam[0] = -0.5
        non_psd = (vec * lam) @ vec.T
        asym = a.copy()
        asym[0, 1] += 0.2
        return [Case("float32", a.astype(np.float32), "same", 1e-4), Case("torch", torch.as_tensor(a), "same"),
                Case("non-PSD", (non_psd + non_psd.T) / 2, "error"), Case("asymmetric", asym, "error"),
                Case("NaN", _with(a, 1, np.nan), "error"), Case("non-square", a[:, :-1], "error"),
                Case("1-D", a[0], "error"), Case("string", "abc", "error")]


@dataclass
class Weights(Kind):
    """A non-negative (N, N) weight matrix."""

    paired: bool = True

    def cases(self, base):
        t = _t(base).double()
        neg = t.clone()
        neg[0, 1] = neg[1, 0] = -0.5
        out = [Case("float32", _like(base, t.float()), "same", 1e-5), Case("numpy<->torch", _swap(base), "same"),
               Case("negative", _like(base, neg), "error"), Case("NaN", _like(base, _with(t, 1, math.nan)), "error"),
               Case("non-square", _like(base, t[:, :-1]), "error"), Case("1-D", _like(base, t[0]), "error"),
               Case("string", "abc", "error")]
        if self.paired:
            out.append(Case("one row short", _like(base, t[:-1, :-1]), "error", mismatch=True))
        return out


@dataclass
class Vector(Kind):
    """A per-class vector of finite numbers (weights, margins, accuracies, losses...)."""

    paired: bool = True
    negative_ok: bool = False
    nan_ok: bool = False  # NaN has a meaning (an absent class)
    batch_ok: bool = False  # a stack of vectors (..., C) is documented
    optional: bool = False
    example: Any = None

    def cases(self, base):
        t = _t(base).double()
        out = [Case("list", t.tolist(), "same"), Case("numpy<->torch", _swap(base), "same"),
               Case("float32", _like(base, t.float()), "same", 1e-5),
               Case("inf", _like(base, _with(t, 0, math.inf)), "nonfinite"),
               Case("empty", _like(base, t[:0]), "error"), Case("string", "abc", "error")]
        if not self.batch_ok:
            out.append(Case("2-D", _like(base, t[None]), "error"))
        if not self.nan_ok:
            out.append(Case("NaN", _like(base, _with(t, 0, math.nan)), "nonfinite"))
        if not self.negative_ok:
            out.append(Case("negative", _like(base, _with(t, 0, -1.0)), "error"))
        if self.paired:
            out.append(Case("one short", _like(base, t[:-1]), "error", mismatch=True))
        return out


@dataclass
class Real(Kind):
    """A real scalar in a range: ``low < x`` (or ``<=`` with ``closed_low``), ``x < high`` (or ``<=``)."""

    low: float = 0.0
    high: float = math.inf
    closed_low: bool = False
    closed_high: bool = False
    optional: bool = False
    example: Any = None

    def cases(self, base):
        out = [Case("numpy float", np.float64(base), "same"), Case("NaN", math.nan, "error"),
               Case("bool", True, "error"), Case("string", "1", "error")]
        if self.low > -math.inf:
            out.append(Case("below the range", self.low - 1.0, "error"))
            if not self.closed_low:
                out.append(Case("at the open end", self.low, "error"))
        if self.high < math.inf:
            out.append(Case("above the range", self.high + 1.0, "error"))
            if not self.closed_high:
                out.append(Case("at the open end", self.high, "error"))
        elif not self.closed_high:
            out.append(Case("inf", math.inf, "error"))
        return out


def Pos(**kw):
    return Real(0.0, **kw)


def NonNeg(**kw):
    return Real(0.0, closed_low=True, **kw)


@dataclass
class Int(Kind):
    minimum: int = 0
    optional: bool = False
    example: Any = None

    def cases(self, base):
        return [Case("numpy int", np.int64(base), "same"), Case("below the minimum", self.minimum - 1, "error"),
                Case("2.5", 2.5, "error"), Case("bool", True, "error"), Case("string", "3", "error")]


def Seed(**kw):
    return Int(0, **kw)


@dataclass
class Option(Kind):
    values: tuple = ()
    optional: bool = False

    def cases(self, base):
        return [Case("unknown", "bogus", "error"), Case("a number", 3, "error")]


@dataclass
class Flag(Kind):
    optional: bool = False

    def cases(self, base):
        return [Case("numpy bool", np.bool_(base), "same"), Case("string", "no", "error"), Case("number 2", 2, "error")]


@dataclass
class Fn(Kind):
    optional: bool = False

    def cases(self, base):
        return [Case("a number", 3, "error"), Case("a string", "f", "error")]


@dataclass
class Module(Kind):
    def cases(self, base):
        return [Case("a string", "model", "error"), Case("a number", 3, "error")]


@dataclass
class Text(Kind):
    """A string (a name) or a path."""

    optional: bool = False

    def cases(self, base):
        return [Case("a number", 3, "error")]


@dataclass
class Device(Kind):
    optional: bool = True

    def cases(self, base):
        return [Case("unknown", "warp-drive", "error"), Case("a number list", [1, 2], "error")]


@dataclass
class Pair(Kind):
    """An (x, y) pair of tensors: inputs and labels."""

    optional: bool = False
    example: Any = None

    def cases(self, base):
        x, y = base
        return [Case("NaN inputs", (_with(x, 0, math.nan).float(), y), "error"),
                Case("float labels", (x, y.double()), "error"), Case("labels one short", (x, y[:-1]), "error"),
                Case("empty", (x[:0], y[:0]), "error"), Case("integer inputs", (x.long(), y), "error"),
                Case("float64 inputs", (x.double(), y), "error"), Case("numpy inputs", (x.numpy(), y), "error"),
                Case("a tensor", x, "error")]


@dataclass
class Instance(Kind):
    """An instance of one class (a record another public function returns, e.g. a ``Throughput``)."""

    def cases(self, base):
        return [Case("a string", "record", "error"), Case("a number", 3, "error"), Case("a dict", {}, "error")]


@dataclass
class Free(Kind):
    """Not swept, with the reason."""

    reason: str = ""

    def all_cases(self, base):
        return []


# ----------------------------------------------------------------------------------------------- the table
@dataclass
class Spec:
    args: Callable[[], dict]  # a valid call's keyword arguments (fresh objects on every call)
    kinds: dict = field(default_factory=dict)
    use: Callable | None = None  # for a class: what to do with the instance to get a value
    errors_only: bool = False  # no valid call here (files, devices): only inputs that must be refused


g = torch.Generator().manual_seed(0)
C, N, D = 3, 6, 4
Z = torch.randn(N, C, generator=g, dtype=torch.float64)  # logits
H = torch.randn(N, D, generator=g, dtype=torch.float64)  # features
Y = torch.tensor([0, 0, 1, 2, 1, 0])
COUNTS = [30, 10, 2]
PROBS = np.array([0.5, 0.3, 0.2])
W3 = torch.randn(C, D, generator=g, dtype=torch.float64)  # classifier
M3 = torch.randn(C, D, generator=g, dtype=torch.float64)  # class means
ETF = ncbook.geometry.etf_gram(3)
SUPCON = None  # filled below (needs ncbook.losses)


def _weights6():
    return ncbook.losses.soft_supcon_weights(Y, 0.2)


def _tiny_train():
    gen = torch.Generator().manual_seed(1)
    y = torch.arange(24) % 3
    x = torch.randn(24, 5, generator=gen) + torch.nn.functional.one_hot(y, 5).float()
    return x, y


def _mlp():
    torch.manual_seed(0)
    return ncbook.models.MLP(5, (8,), 4, 3, batchnorm=False)


def _fitkw():
    return dict(model=_mlp(), loss_fn=torch.nn.functional.cross_entropy, train=_tiny_train(), epochs=1, batch_size=8,
                nc_every=0, eval_every=0, progress=False)


L = Labels(classes=None)
LC = Labels(classes=C)
RED = Option(("none", "mean", "sum"))
SIM = Option(("cosine", "euclidean"))
SETTING, PSI = Option(("ucl", "scl")), Option(("infonce", "exp"))
GM = Option(("class", "sample"))
PATH = Text()

# name-based defaults (a row's own kinds win)
BY_NAME = {"reduction": RED, "similarity": SIM, "setting": SETTING, "psi": PSI, "global_mean": GM, "within": Option(),
           "seed": Seed(), "temperature": Pos(), "num_classes": Int(2), "k": Int(1), "lr": Pos(), "steps": Int(1),
           "momentum": NonNeg(), "weight_decay": NonNeg(), "tol": Pos(), "dim": Int(1), "device": Device(),
           "batch_size": Int(1), "normalize": Flag(), "bias": Flag(), "atol": Pos(), "method": Option(),
           "solver": Option(), "eps": Pos(), "alpha": NonNeg(), "gamma": NonNeg(), "threads": Int(1),
           "gtol": Pos(), "max_iter": Int(1), "root": PATH, "name": Text(), "train": Flag(), "download": Flag(),
           "generator": Free(reason="a torch.Generator or None: randomness comes in explicitly"),
           "init": Free(reason="a starting point of the caller's choosing"), "model": Module()}

S = Spec
L_ = ncbook.losses
SPECS = {
    # ------------------------------------------------------------------ ncbook, profiles (environment readers)
    "checkpoint_dir": S(lambda: dict(name="run", default="../checkpoints"), dict(default=Text(optional=True))),
    "results_dir": S(lambda: dict(default="../results"), dict(default=Text(optional=True))),  # None: by the folder
    "native_bf16": S(lambda: dict(device="cpu")),
    "data_root": S(dict), "default_device": S(dict), "profile": S(dict), "scale": S(dict), "usable_cores": S(dict),
    "show_progress": S(dict),
    "DeviceSpeed": S(lambda: dict(device="T4", train_images_per_s=4000.0, precision="float32", source="assumed"),
                     dict(device=Text(), train_images_per_s=Pos(), precision=Text(), source=Text())),
    "ChapterPlan": S(lambda: dict(chapter="seli", params={"gpu": {"EPOCHS": 2}}, work=lambda p: [("net", 10, 5)],
                                  quick_seconds=40.0, quick_source="measured"),
                     dict(chapter=Text(), params=Free(reason="the parameters cell's values per profile (a dict, checked)"),
                          work=Fn(), quick_seconds=Pos(), quick_source=Text()), use=lambda plan: plan.work(plan.params["gpu"])),
    "planned_work": S(lambda: dict(chapter="seli", profile_name="gpu"), dict(chapter=Option(), profile_name=Option())),
    "planned_seconds": S(lambda: dict(chapter="seli", profile_name="gpu", device="T4"),
                         dict(chapter=Option(), profile_name=Option(), device=Option())),  # a GPU's name, not a torch device
    "run_times": S(lambda: dict(chapter="seli"), dict(chapter=Option())),
    # ------------------------------------------------------------------ geometry
    "cosine_matrix": S(lambda: dict(x=H, eps=None), dict(x=Floats(), eps=Pos(optional=True, example=1e-12))),
    "etf_gram": S(lambda: dict(num_classes=4)),
    "frobenius_distance": S(lambda: dict(a=ETF, b=ETF + 0.1), dict(a=Floats(), b=Floats(paired=True))),
    "gram": S(lambda: dict(x=H), dict(x=Floats())),
    "procrustes_align": S(lambda: dict(x=H, y=H[:, :3] * 2), dict(x=Floats(paired=True), y=Floats(paired=True))),
    "procrustes_r2": S(lambda: dict(z=H, reference=H[:, :2]), dict(z=Floats(paired=True), reference=Floats(paired=True))),
    "simplex_etf": S(lambda: dict(num_classes=4, dim=5, seed=0), dict(dim=Int(1, optional=True), seed=Seed(optional=True))),
    "sel_matrix": S(lambda: dict(labels=Y, num_classes=3), dict(labels=Labels(classes=3, paired=False))),
    "seli_distances": S(lambda: dict(classifiers=W3, means=M3, counts=COUNTS),
                        dict(classifiers=Floats(paired=True), means=Floats(paired=True), counts=Counts(paired=True))),
    "seli_geometry": S(lambda: dict(counts=COUNTS, method="class"), dict(counts=Counts(single_ok=False))),
    "seli_step_closed_form": S(lambda: dict(ratio=10.0, num_majority=2, num_minority=3),
                               dict(ratio=Real(1.0, closed_low=True), num_majority=Int(1), num_minority=Int(1))),
    "seli_step_limits": S(lambda: dict(num_majority=2, num_minority=3), dict(num_majority=Int(1), num_minority=Int(1))),
    # ------------------------------------------------------------------ metrics
    "NCAccumulator": S(lambda: dict(num_classes=3, dim=D, within="sample", global_mean="class"),
                       dict(dim=Int(1)), use=lambda acc: (acc.update_means(H, Y), acc.update_covariance(H, Y, logits=Z),
                                                          acc.compute(W3))[-1]),
    "centered_means": S(lambda: dict(features=H, labels=Y, num_classes=None, global_mean="class"),
                        dict(features=Floats(paired=True), labels=L, num_classes=Int(2, optional=True, example=3))),
    "class_means": S(lambda: dict(features=H, labels=Y, num_classes=None),
                     dict(features=Floats(paired=True), labels=L, num_classes=Int(2, optional=True, example=3))),
    "difficulty_groups": S(lambda: dict(class_accuracy=[0.9, 0.5, 0.2, 0.7, 0.4, 0.1]),
                           dict(class_accuracy=Vector(paired=False), groups=Free(reason="names of the groups"))),
    "entropic_gap": S(lambda: dict(z=H, weights=_weights6(), similarity="cosine", temperature=0.5),
                      dict(z=Floats(paired=True), weights=Weights())),
    "group_accuracy": S(lambda: dict(class_accuracy=[0.9, 0.5, 0.2], groups={"a": np.array([0, 1]), "b": np.array([2])}),
                        dict(class_accuracy=Vector(paired=False), groups=Free(reason="a dict of class index arrays"))),
    "loss_imbalance": S(lambda: dict(class_losses=[0.5, 1.0, 2.0]), dict(class_losses=Vector(paired=False, nan_ok=True, batch_ok=True))),
    "nc1": S(lambda: dict(features=H, labels=Y, num_classes=None, global_mean="class", within="sample"),
             dict(features=Floats(paired=True), labels=L, num_classes=Int(2, optional=True, example=3))),
    "nc2": S(lambda: dict(x=W3), dict(x=Floats())),
    "nc3": S(lambda: dict(classifier=W3, means=M3, variant="papyan"),
             dict(classifier=Floats(paired=True), means=Floats(paired=True), variant=Option())),
    "nc4": S(lambda: dict(features=H, predictions=Y, means=M3),
             dict(features=Floats(paired=True), predictions=Labels(classes=3), means=Floats())),
    "neural_collapse": S(lambda: dict(features=H, labels=Y, classifier=W3, bias=None, num_classes=None),
                         dict(features=Floats(paired=True), labels=L, classifier=Floats(),
                              bias=Vector(optional=True, negative_ok=True, example=torch.zeros(3, dtype=torch.float64)),
                              num_classes=Int(2, optional=True, example=3))),
    "per_class_accuracy": S(lambda: dict(predictions=Y.flip(0), labels=Y, num_classes=None),
                            dict(predictions=Labels(classes=None), labels=L, num_classes=Int(2, optional=True, example=3))),
    "r2_procrustes": S(lambda: dict(z=H, reference=H[:, :2]), dict(z=Floats(paired=True), reference=Floats(paired=True))),
    "r2_similarity": S(lambda: dict(z=H, weights=_weights6(), similarity="cosine"), dict(z=Floats(paired=True), weights=Weights())),
    "shot_accuracy": S(lambda: dict(predictions=Y.flip(0), labels=Y, train_counts=[200, 50, 5], many=100, few=20),
                       dict(predictions=Labels(classes=3), labels=Labels(classes=3), train_counts=Counts(paired=True),
                            many=Int(0), few=Int(0))),
    # ------------------------------------------------------------------ losses
    "FixedMarginLoss": S(lambda: dict(margins=[0.5, 0.4, 0.2], scale=2.0, reduction="mean"),
                         dict(margins=Vector(paired=False), scale=Pos()), use=lambda f: f(Z, Y)),
    "FocalLoss": S(lambda: dict(gamma=1.0, weight=None, reduction="mean"),
                   dict(weight=Vector(paired=False, optional=True, example=[1.0, 2.0, 3.0])), use=lambda f: f(Z, Y)),
    "GeneralizedContrastiveLoss": S(lambda: dict(temperature=0.5, psi="infonce", normalize=True, reduction="mean"),
                                    use=lambda f: f(H, H.flip(0), H[:, None].repeat(1, 2, 1))),
    "IBLoss": S(lambda: dict(counts=COUNTS, alpha=10.0, start_epoch=0, eps=1e-3, reduction="mean"),
                dict(counts=Counts(optional=True), alpha=Pos(), start_epoch=Int(0)), use=lambda f: f(Z, Y, H)),
    "InverseReweightedCE": S(lambda: dict(num_classes=3, alpha=0.1, gamma=1.0, prior="uniform", counts=None, detach=False,
                                          clamp=10.0, switch_epoch=0, eps=1e-8, reduction="mean"),
                             dict(num_classes=Int(1), prior=Free(reason="a name or a vector: swept in prior_weights"),
                                  counts=Counts(optional=True), detach=Flag(), clamp=Pos(optional=True, closed_high=True),
                                  switch_epoch=Int(0), eps=NonNeg()), use=lambda f: f(Z, Y)),
    "LDAMLoss": S(lambda: dict(counts=COUNTS, max_margin=0.5, scale=5.0, drw_epoch=0, beta=0.999, reduction="mean"),
                  dict(counts=Counts(), max_margin=Pos(), scale=Pos(), drw_epoch=Int(0, optional=True),
                       beta=Real(0.0, 1.0, closed_low=True)), use=lambda f: f(Z, Y)),
    "LogitAdjustedLoss": S(lambda: dict(counts=COUNTS, tau=1.0, reduction="mean"), dict(counts=Counts(), tau=NonNeg()),
                           use=lambda f: f(Z, Y)),
    "MR2Loss": S(lambda: dict(num_classes=3, c_bar=1.0, lam=0.1, ema=0.9, p=None, mode="paper", logit_margins=True,
                              normalize_features=False, reset_each_epoch=None, min_count=None),
                 dict(c_bar=Pos(), lam=NonNeg(), ema=Real(0.0, 1.0, closed_low=True), p=Real(1.0, closed_low=True, closed_high=True, optional=True,
                      example=3.0), mode=Option(), logit_margins=Flag(), normalize_features=Flag(),
                      reset_each_epoch=Flag(optional=True), min_count=Int(1, optional=True, example=2)),
                 use=lambda f: f(Z, Y, H)),
    "WInfoNCELoss": S(lambda: dict(weight_fn=L_.supcon_weights, similarity="cosine", temperature=0.5, reduction="mean"),
                      dict(weight_fn=Fn()), use=lambda f: f(None, Y, H)),
    "WeightedCrossEntropy": S(lambda: dict(weight=[1.0, 2.0, 3.0], normalizer="weights", reduction="mean"),
                              dict(weight=Vector(paired=False, optional=True), normalizer=Option()), use=lambda f: f(Z, Y)),
    "column_normalized_w_info_nce": S(lambda: dict(z=H, weights=_weights6(), similarity="cosine", temperature=0.5,
                                                   reduction="mean"), dict(z=Floats(paired=True), weights=Weights())),
    "contrastive_batch_indices": S(lambda: dict(labels=Y, num_anchors=4, k=2, setting="ucl",
                                                generator=torch.Generator().manual_seed(0)),
                                   dict(labels=Labels(paired=False), num_anchors=Int(1))),
    "entropic_lower_bound": S(lambda: dict(weights=_weights6()), dict(weights=Weights(paired=False))),
    "focal_loss": S(lambda: dict(logits=Z, labels=Y, gamma=1.0, weight=None, reduction="mean"),
                    dict(logits=Floats(paired=True), labels=LC, weight=Vector(optional=True, example=[1.0, 2.0, 3.0]))),
    "gaussian_kernel_weights": S(lambda: dict(y=H[:, :2], sigma=1.0), dict(y=Floats(flat_ok=True), sigma=Pos())),
    "generalized_contrastive_loss": S(lambda: dict(anchor=H, positive=H.flip(0), negatives=H[:, None].repeat(1, 2, 1),
                                                   temperature=0.5, psi="infonce", normalize=True, reduction="mean"),
                                      dict(anchor=Floats(paired=True), positive=Floats(paired=True),
                                           negatives=Floats(paired=True), psi=PSI)),
    "ib_loss": S(lambda: dict(logits=Z, labels=Y, features=H, weight=None, alpha=10.0, eps=1e-3, reduction="mean"),
                 dict(logits=Floats(paired=True), labels=LC, features=Floats(paired=True), alpha=Pos(),
                      weight=Vector(optional=True, example=[1.0, 2.0, 3.0]))),
    "info_nce": S(lambda: dict(anchor=H, positive=H.flip(0), negatives=H[:, None].repeat(1, 2, 1), temperature=0.5,
                               normalize=True, reduction="mean"),
                  dict(anchor=Floats(paired=True), positive=Floats(paired=True), negatives=Floats(paired=True))),
    "inverse_reweighted_ce": S(lambda: dict(logits=Z, labels=Y, prior=None, alpha=0.1, macro=None, detach=False, clamp=None,
                                            eps=1e-8, reduction="mean"),
                               dict(logits=Floats(paired=True), labels=LC, prior=Vector(optional=True, example=[1.0, 2.0, 1.0]),
                                    macro=Vector(optional=True, example=[1.0, 0.5, 2.0]), detach=Flag(),
                                    clamp=Pos(optional=True, closed_high=True, example=5.0), eps=NonNeg())),
    "latent_similarity": S(lambda: dict(z=H, similarity="cosine", temperature=0.5), dict(z=Floats())),
    "ldam_loss": S(lambda: dict(logits=Z, labels=Y, margins=[0.5, 0.4, 0.2], scale=5.0, weight=None, reduction="mean"),
                   dict(logits=Floats(paired=True), labels=LC, margins=Vector(), scale=Pos(),
                        weight=Vector(optional=True, example=[1.0, 2.0, 3.0]))),
    "logit_adjusted_loss": S(lambda: dict(logits=Z, labels=Y, counts=COUNTS, tau=1.0, reduction="mean"),
                             dict(logits=Floats(paired=True), labels=LC, counts=Counts(paired=True), tau=NonNeg())),
    "logit_adjustment": S(lambda: dict(logits=Z, counts=COUNTS, tau=1.0),
                          dict(logits=Floats(), counts=Counts(paired=True), tau=NonNeg())),
    "margin_cross_entropy": S(lambda: dict(logits=Z, labels=Y, margins=[0.8, 1.0, 1.2], reduction="mean"),
                              dict(logits=Floats(paired=True), labels=LC, margins=Vector())),
    "prototype_entropic_lower_bound": S(lambda: dict(counts=COUNTS, class_weights=torch.eye(3) + 0.1),
                                        dict(counts=Counts(paired=True), class_weights=Weights())),
    "prototype_w_info_nce": S(lambda: dict(prototypes=M3, counts=COUNTS, class_weights=torch.eye(3) + 0.1,
                                           similarity="cosine", temperature=0.5),
                              dict(prototypes=Floats(paired=True), counts=Counts(paired=True), class_weights=Weights())),
    "representation_margin_loss": S(lambda: dict(features=H, labels=Y, sbar=0.3, temperature=1.0, reduction="mean",
                                                 num_classes=None),
                                    dict(features=Floats(paired=True), labels=L, sbar=NonNeg(),
                                         num_classes=Int(2, optional=True, example=3), reduction=Option())),
    "soft_supcon_weights": S(lambda: dict(labels=Y, epsilon=0.2),
                             dict(labels=Labels(paired=False), epsilon=Real(0.0, 1.0, closed_high=True))),
    "supcon_weights": S(lambda: dict(labels=Y), dict(labels=Labels(paired=False))),
    "w_info_nce": S(lambda: dict(z=H, weights=_weights6(), similarity="cosine", temperature=0.5, reduction="mean"),
                    dict(z=Floats(paired=True), weights=Weights())),
    "weighted_cross_entropy": S(lambda: dict(logits=Z, labels=Y, weight=[1.0, 2.0, 3.0], normalizer="weights",
                                             reduction="mean"),
                                dict(logits=Floats(paired=True), labels=LC, weight=Vector(optional=True), normalizer=Option())),
    "xclr_weights": S(lambda: dict(label_embeddings=H, label_temperature=0.5), dict(label_embeddings=Floats(flat_ok=True),
                                                                                   label_temperature=Pos())),
    # ------------------------------------------------------------------ contrastive
    "class_means_from_gram": S(lambda: dict(gram=ETF, dim=None, tol=1e-8), dict(gram=Gram(), dim=Int(1, optional=True, example=3))),
    "cl_risk": S(lambda: dict(gram=ETF, class_probs=PROBS, k=2, setting="ucl", temperature=1.0, psi="infonce"),
                 dict(gram=Gram(), class_probs=Probs(paired=True))),
    "cl_risk_gradient": S(lambda: dict(gram=ETF, class_probs=PROBS, k=2, setting="ucl", temperature=1.0, psi="infonce"),
                          dict(gram=Gram(), class_probs=Probs(paired=True))),
    "collapse_margin": S(lambda: dict(lambda_1=0.6, k=2, setting="ucl", num_classes=None, temperature=1.0, psi="infonce"),
                         dict(lambda_1=Real(0.0, 1.0), num_classes=Int(2, optional=True, example=3))),
    "collapse_threshold": S(lambda: dict(k=2, setting="ucl", num_classes=None, temperature=1.0, psi="infonce"),
                            dict(num_classes=Int(2, optional=True, example=3))),
    "gap_certificate": S(lambda: dict(grad_sym=np.ones((3, 3)) - np.eye(3), gram=ETF),
                         dict(grad_sym=Floats(ints=False), gram=Gram())),
    "negative_distribution": S(lambda: dict(class_probs=PROBS, setting="ucl"), dict(class_probs=Probs())),
    "negative_multisets": S(lambda: dict(neg_probs=PROBS, k=2), dict(neg_probs=Probs())),
    "num_multiset_terms": S(lambda: dict(num_classes=3, k=2, setting="ucl"), dict(num_classes=Int(1))),
    "optimal_gram": S(lambda: dict(class_probs=PROBS, k=2, setting="ucl", temperature=1.0, psi="infonce", method="exact",
                                   solver="auto"), dict(class_probs=Probs(), options=Free(reason="passed to solve_gram"))),
    "solve_gram": S(lambda: dict(class_probs=PROBS, k=2, setting="ucl", temperature=1.0, psi="infonce", method="exact",
                                 solver="auto", tol=1e-10, max_iter=None, rank=None, seed=0),
                    dict(class_probs=Probs(), max_iter=Int(1, optional=True, example=200),
                         rank=Int(1, optional=True, example=3))),
    # ------------------------------------------------------------------ dgp
    "euclidean_dgp": S(lambda: dict(weights=_weights6(), temperature=0.5, dim=None, atol=1e-9),
                       dict(weights=Weights(paired=False), dim=Int(1, optional=True, example=5))),
    "spherical_dgp": S(lambda: dict(weights=_weights6(), temperature=0.5, dim=5, atol=1e-8), dict(weights=Weights(paired=False))),
    # ------------------------------------------------------------------ margins, reweighting
    "class_feature_statistics": S(lambda: dict(features=H, labels=Y, num_classes=3, p=2.0),
                                  dict(features=Floats(paired=True), labels=Labels(classes=3),
                                       p=Real(1.0, closed_low=True, closed_high=True))),  # p = inf: the max norm
    "ldam_margins": S(lambda: dict(counts=COUNTS, max_margin=0.5), dict(counts=Counts(), max_margin=Pos())),
    "mr2_margins": S(lambda: dict(mean_sq_norms=[1.0, 2.0, 0.5], mean_sq_devs=[0.2, 0.4, 0.1], c_bar=1.0),
                     dict(mean_sq_norms=Vector(paired=False), mean_sq_devs=Vector(), c_bar=Pos())),
    "batch_class_losses": S(lambda: dict(losses=torch.rand(N, generator=torch.Generator().manual_seed(3), dtype=torch.float64),
                                         labels=Y, num_classes=3),
                            dict(losses=Floats(paired=True), labels=Labels(classes=3))),
    "effective_number_weights": S(lambda: dict(counts=COUNTS, beta=0.999), dict(counts=Counts(), beta=Real(0.0, 1.0, closed_low=True))),
    "inverse_frequency_weights": S(lambda: dict(counts=COUNTS), dict(counts=Counts())),
    "inverse_weights": S(lambda: dict(class_losses=[0.5, 1.0, 2.0], prior=None, alpha=0.1, eps=1e-8),
                         dict(class_losses=Vector(paired=False, nan_ok=True),
                              prior=Vector(optional=True, example=[1.0, 2.0, 1.0]), eps=NonNeg())),
    "macro_factors": S(lambda: dict(batch_counts=[4.0, 2.0, 1.0], gamma=1.0, min_count=1.0),
                       dict(batch_counts=Vector(paired=False), min_count=Pos())),
    "prior_weights": S(lambda: dict(num_classes=3, prior="inv_freq", counts=COUNTS),
                       dict(num_classes=Int(1), prior=Free(reason="a name or a vector; the vector is swept in inverse_weights"),
                            counts=Counts(paired=True, optional=True))),
    # ------------------------------------------------------------------ ufm
    "contrastive_ufm_risk": S(lambda: dict(features=H, labels=Y, k=2, setting="ucl", temperature=1.0, psi="infonce",
                                           normalize=True, _tables=None),
                              dict(features=Floats(paired=True), labels=L, _tables=Free(reason="private: precomputed tables"))),
    "fit_contrastive_ufm": S(lambda: dict(counts=[3, 2, 1], k=2, dim=None, steps=20, lr=0.5, tol=1e-11, seed=0),
                             dict(counts=Counts(single_ok=False), dim=Int(1, optional=True, example=3))),
    "ce_margins": S(lambda: dict(logits=Z, labels=Y), dict(logits=Floats(paired=True), labels=LC)),
    "fit_free_embeddings": S(lambda: dict(weights=_weights6(), similarity="cosine", temperature=0.5, dim=3, seed=0, init=None,
                                          adam_steps=5, lbfgs_steps=5, lr=0.05, threads=1, gtol=1e-6),
                             dict(weights=Weights(paired=False), adam_steps=Int(0), lbfgs_steps=Int(0))),
    "fit_prototypes": S(lambda: dict(counts=COUNTS, class_weights=torch.eye(3) + 0.1, similarity="cosine", temperature=0.5,
                                     dim=3, seed=0, init=None, adam_steps=5, lbfgs_steps=5, lr=0.05, threads=1, gtol=1e-6),
                        dict(counts=Counts(paired=True), class_weights=Weights(), adam_steps=Int(0), lbfgs_steps=Int(0))),
    "log_mean_ce": S(lambda: dict(logits=Z, labels=Y, weights=None),  # Z[0, 0] is sample 0's true-class logit
                     dict(logits=Floats(paired=True, inf_ok=True), labels=LC,
                          weights=Vector(optional=True, example=torch.full((N,), 1 / N, dtype=torch.float64)))),
    "train_ufm": S(lambda: dict(counts=[5, 3, 1], dim=3, loss="ce", optimizer="gd", lam_w=1e-3, lam_h=1e-3, steps=5, lr=0.1,
                                momentum=0.0, level="sample", init_scale=0.1, record_every=1, seed=0, device=None, tol=1e-6),
                   dict(counts=Counts(single_ok=False), loss=Option(), optimizer=Option(), lam_w=NonNeg(), lam_h=NonNeg(),
                        level=Option(), init_scale=Pos(), record_every=Int(1))),
    "ufm_objective": S(lambda: dict(W=W3, H=H, labels=Y, lam_w=0.01, lam_h=0.01, multiplicity=None),
                       dict(W=Floats(), H=Floats(paired=True), labels=LC, lam_w=NonNeg(), lam_h=NonNeg(),
                            multiplicity=Vector(optional=True, example=torch.ones(N, dtype=torch.float64)))),
    "ridge_optimum": S(lambda: dict(counts=COUNTS, lam=0.01, method="fista", tol=1e-8, max_iter=2000),
                       dict(counts=Counts(single_ok=False), lam=Pos())),
    "sel_distance": S(lambda: dict(logits=torch.eye(3, dtype=torch.float64) * 2 - 0.5, counts=COUNTS),
                      dict(logits=Floats(), counts=Counts(paired=True))),
    # ------------------------------------------------------------------ data
    "cifar_augment": S(lambda: dict(x=torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
                                    generator=torch.Generator().manual_seed(0), padding=2),
                       dict(x=Floats(ints=False, moves=True), padding=Int(0), mean=Vector(negative_ok=True), std=Vector())),
    "cifar_tensors": S(lambda: dict(name="cifar10", root="data", train=True, download=False, subset=None),
                       dict(name=Option(), subset=Option(optional=True)), errors_only=True),
    "gpu_subset_indices": S(lambda: dict(labels=torch.arange(60) % 3, name="cifar10", train=True, balanced=False),
                            dict(labels=Labels(paired=False), name=Option(), balanced=Flag())),
    "load_cifar": S(lambda: dict(name="cifar10", root="data", train=True, download=False, transform=None),
                    dict(name=Option(), transform=Fn(optional=True)), errors_only=True),
    "load_digits": S(lambda: dict(test_per_class=5, seed=0, standardize=True), dict(test_per_class=Int(1), standardize=Flag())),
    "long_tailed_counts": S(lambda: dict(n_max=100, num_classes=5, imbalance_ratio=10.0, kind="exp", minority_fraction=0.5),
                            dict(n_max=Int(1), num_classes=Int(2), imbalance_ratio=Real(1.0, closed_low=True),
                                 kind=Option(), minority_fraction=Real(0.0, 1.0))),
    "make_imbalanced": S(lambda: dict(labels=torch.arange(30) % 3, counts=[5, 3, 1], seed=0),
                         dict(labels=Labels(paired=False), counts=Counts(paired=True))),
    "make_loader": S(lambda: dict(x=H, y=Y, batch_size=2, shuffle=True, seed=0, drop_last=False),
                     dict(x=Floats(paired=True, ints=False, moves=True), y=Labels(), shuffle=Flag(), drop_last=Flag())),
    "unpack_cifar": S(lambda: dict(archive="missing.tar.xz", root="data"), dict(archive=PATH), errors_only=True),
    "write_cifar_folder": S(lambda: dict(root="data", name="cifar10", train=(np.zeros((1, 32, 32, 3), np.uint8), [0]),
                                         test=(np.zeros((1, 32, 32, 3), np.uint8), [0]), note="x"),
                            dict(name=Option(), train=Free(reason="arrays in torchvision's format"),
                                 test=Free(reason="arrays in torchvision's format"), note=Text(),
                                 class_names=Free(reason="names"), info=Free(reason="recorded as given")), errors_only=True),
    "write_cifar_standin": S(lambda: dict(root="data", train_per_class=1, test_per_class=1, cifar100_train_per_class=1,
                                          cifar100_test_per_class=1, seed=0),
                             dict(train_per_class=Int(1), test_per_class=Int(1), cifar100_train_per_class=Int(1),
                                  cifar100_test_per_class=Int(1)), errors_only=True),
    # ------------------------------------------------------------------ models
    "CosineClassifier": S(lambda: dict(in_features=D, num_classes=3, scale=4.0), dict(in_features=Int(1), scale=Pos(),
                                                                                  num_classes=Int(1)),
                          use=lambda m: m(torch.ones(2, D))),
    "FeatureClassifier": S(lambda: dict(body=torch.nn.Flatten(), feat_dim=D, num_classes=3, normalize=False, bias=False),
                           dict(body=Module(), feat_dim=Int(1), num_classes=Int(1)), use=lambda m: (torch.manual_seed(0), m.forward_features(
                               torch.ones(2, D)))[1][1]),
    "MLP": S(lambda: dict(in_dim=5, hidden=(8,), feat_dim=4, num_classes=3, batchnorm=True, normalize=False, bias=False),
             dict(in_dim=Int(1), hidden=Free(reason="widths; each is checked as an integer >= 1"), feat_dim=Int(1),
                  batchnorm=Flag(), num_classes=Int(1))),
    "SmallCNN": S(lambda: dict(in_channels=3, num_classes=3, feat_dim=4, width=2, normalize=False, bias=False),
                  dict(in_channels=Int(1), feat_dim=Int(1), width=Int(1), num_classes=Int(1))),
    "ResNetCIFAR": S(lambda: dict(depth=8, num_classes=3, in_channels=3, normalize=False, bias=False),
                     dict(depth=Int(8), in_channels=Int(1), num_classes=Int(1))),
    "cosine_logits": S(lambda: dict(features=H, weight=W3, scale=4.0), dict(features=Floats(), weight=Floats(), scale=Pos())),
    "resnet32": S(lambda: dict(num_classes=3), dict(kwargs=Free(reason="passed to ResNetCIFAR"), num_classes=Int(1))),
    # ------------------------------------------------------------------ train
    "ChapterCost": S(lambda: dict(chapter="seli", results=None, checkpoints=None),
                     dict(chapter=Text(), results=Text(optional=True), checkpoints=Text(optional=True)),
                     use=lambda cost: (cost.add("net", 3.0, _throughput()), cost.total())[-1]),
    "Throughput": S(lambda: dict(step_seconds=0.1, fixed_seconds=1.0, eval_seconds=1e-3, images_per_step=128.0,
                                 device="cpu (1 thread)", precision="float32", measured_steps=4, device_type="cpu",
                                 workers=2, parallel_slowdown=1.5),
                    dict(step_seconds=Pos(), fixed_seconds=NonNeg(), eval_seconds=Pos(), images_per_step=Pos(),
                         device=Text(), precision=Text(), measured_steps=Int(1), device_type=Text(), workers=Int(1),
                         parallel_slowdown=Pos())),
    "fit_seconds": S(lambda: dict(tp=_throughput(), n=1280, epochs=2, batch_size=128, n_eval=1000, evals=None, runs=2),
                     dict(tp=Instance(), n=Int(1), epochs=Int(1), n_eval=Int(0), evals=Int(0, optional=True, example=3),
                          runs=Int(1))),
    "steps_seconds": S(lambda: dict(tp=_throughput(), steps=100, eval_images=50, runs=2),
                       dict(tp=Instance(), eval_images=Int(0), runs=Int(1))),
    "in_parallel": S(lambda: dict(seconds=30.0, runs=3, tp=_throughput()),
                     dict(seconds=NonNeg(), runs=Int(1), tp=Instance())),
    "format_seconds": S(lambda: dict(seconds=210.0), dict(seconds=NonNeg())),
    "measure_fit": S(lambda: dict(model=_mlp, loss=torch.nn.functional.cross_entropy, train=_tiny_train(), batch_size=8,
                                  amp=False, augment=None, device=None, steps=(1, 2), parallel_runs=1),
                     dict(model=Module(), loss=Fn(), train=Pair(), amp=Flag(), augment=Fn(optional=True),
                          steps=Free(reason="two probe lengths (a, b); refused by name in tests/test_gpu_smoke.py"),
                          parallel_runs=Int(1), fit_kwargs=Free(reason="passed to fit (swept there)")), errors_only=True),
    "measure_steps": S(lambda: dict(trainer=functools.partial(ncbook.train.fit_weighted_contrastive, x=_tiny_train()[0],
                                                              targets=_tiny_train()[1], weight_fn=L_.supcon_weights,
                                                              temperature=0.5, batch_size=8),
                                    model=_feature_model, images_per_step=8.0, steps=(1, 2), device=None,
                                    eval_inputs=_tiny_train()[0], parallel_runs=1),
                       dict(trainer=Fn(), model=Module(), args=Free(reason="the trainer's positional arguments"),
                            images_per_step=Pos(), steps=Free(reason="two probe lengths, as for measure_fit"),
                            eval_inputs=Free(reason="inputs of the caller's model"), parallel_runs=Int(1),
                            kwargs=Free(reason="the trainer's options (swept there)")), errors_only=True),
    "measure_contrastive": S(lambda: dict(trainer=ncbook.train.fit_contrastive, model=_feature_model, x=_tiny_train()[0],
                                          y=_tiny_train()[1], batch_size=4, k=2, setting="ucl"),
                             dict(trainer=Fn(), model=Module(), x=Free(reason="inputs of the caller's model"), y=Labels(),
                                  kwargs=Free(reason="the trainer's options (swept there)")), errors_only=True),
    "class_mean_cosines": S(lambda: dict(model=_feature_model(), x=_tiny_train()[0], y=_tiny_train()[1], batch_size=8),
                            dict(x=Free(reason="inputs of the caller's model"), y=Labels())),
    "init_distributed": S(lambda: dict(backend=None), dict(backend=Option(optional=True)), errors_only=True),
    "is_main_process": S(dict),
    "embed": S(lambda: dict(model=_feature_model(), x=_tiny_train()[0], batch_size=8, device=None),
               dict(x=Free(reason="inputs of the caller's model"))),
    "evaluate": S(lambda: dict(model=_mlp(), x=_tiny_train()[0], y=_tiny_train()[1], batch_size=8, device=None),
                  dict(x=Floats(paired=True, ints=False), y=Labels(classes=3))),
    "fit": S(_fitkw, dict(loss_fn=Fn(), train=Pair(), optimizer=Option(), schedule=Option(), warmup_epochs=Int(0),
                          milestones=Free(reason="integers (each checked); swept in lr_lambda"), gamma=Pos(),
                          schedule_alpha=Real(0.0, 1.0, closed_high=True), test=Pair(optional=True, example=_tiny_train()),
                          nc_every=Int(0), checkpoint_dir=Text(optional=True), resume=Option(), epochs=Int(1),
                          augment=Fn(optional=True), amp=Flag(), progress=Flag(optional=True), callback=Fn(optional=True),
                          sync_batchnorm=Flag(), eval_every=Int(0)), use=None),
    "fit_contrastive": S(lambda: dict(model=_feature_model(), x=_tiny_train()[0], y=_tiny_train()[1], k=2, setting="ucl",
                                      temperature=0.5, psi="infonce", steps=2, batch_size=4, lr=0.05, momentum=0.9,
                                      weight_decay=5e-4, augment=None, seed=0, device=None),
                         dict(x=Free(reason="inputs of the caller's model"), y=Labels(), augment=Fn(optional=True))),
    "fit_run": S(lambda: dict(model=_mlp, loss=lambda: torch.nn.functional.cross_entropy, train=_tiny_train(), seed=0,
                              evaluate_on=None, return_loss=False, epochs=1, batch_size=8, nc_every=0, eval_every=0),
                 dict(model=Fn(), loss=Fn(), train=Pair(), evaluate_on=Free(reason="a dict of (x, y) pairs, each checked by evaluate"),
                      return_loss=Flag(), fit_kwargs=Free(reason="passed to fit (swept there)"))),
    "fit_weighted_contrastive": S(lambda: dict(model=_feature_model(), x=_tiny_train()[0], targets=_tiny_train()[1],
                                               weight_fn=L_.supcon_weights, similarity="cosine", temperature=0.5, steps=2,
                                               batch_size=8, lr=0.05, momentum=0.9, weight_decay=5e-4, augment=None, seed=0,
                                               device=None, log_every=1),
                                  dict(x=Free(reason="inputs of the caller's model"),
                                       targets=Free(reason="labels or continuous targets, read by weight_fn"),
                                       weight_fn=Fn(), batch_size=Int(2, optional=True), augment=Fn(optional=True),
                                       log_every=Int(1))),
    "load_checkpoint": S(lambda: dict(path="missing.pt", map_location=None),
                         dict(path=PATH, map_location=Free(reason="torch.load's map_location")), errors_only=True),
    "lr_lambda": S(lambda: dict(step=30, total_steps=100, warmup_steps=10, schedule="mittag_leffler", milestones=(50,),
                                gamma=0.1, alpha=0.7),
                   dict(step=Int(0), total_steps=Int(1), warmup_steps=Int(0), schedule=Option(),
                        milestones=Free(reason="integers, each checked"), gamma=Pos(), alpha=Real(0.0, 1.0, closed_high=True))),
    "mittag_leffler_alpha": S(lambda: dict(counts=COUNTS), dict(counts=Vector(paired=False))),  # frequencies, any positive
    "run_parallel": S(lambda: dict(fn=round, configs=[{"number": 2.5}], workers=1, threads_per_worker=1, progress=False),
                      dict(fn=Fn(), configs=Free(reason="a sequence of dicts (checked)"), workers=Int(1, optional=True),
                           threads_per_worker=Int(1), progress=Flag(optional=True))),
    "save_checkpoint": S(lambda: dict(path="unused.pt", payload={}),
                         dict(path=PATH, payload=Free(reason="what the caller saves")), errors_only=True),
    "seed_everything": S(lambda: dict(seed=3)),
}


def _feature_model():
    torch.manual_seed(0)
    return ncbook.models.MLP(5, (8,), 4, 3, batchnorm=False)


def _throughput():
    return ncbook.train.Throughput(0.1, 1.0, 1e-3, 128.0, "cpu (1 thread)", "float32", 4, "cpu", 2, 1.5)


# ----------------------------------------------------------------------------------------------- enumeration
def _public_callables():
    out = {}
    for modname in SUBPACKAGES:
        mod = importlib.import_module(modname)
        if modname in GLUE:
            continue
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj):
                out.setdefault(name, (modname, obj))
    return out


PUBLIC = _public_callables()


def _parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = list(inspect.signature(target).parameters.values())
    return [p for p in params if p.name not in ("self",)]


def _kind(spec, param):
    if param.name in spec.kinds:
        return spec.kinds[param.name]
    return BY_NAME.get(param.name)


def test_every_public_callable_is_declared():
    """A new public callable without its row, or a parameter without its kind, fails here."""
    undeclared = [f"{mod}.{name}" for name, (mod, _) in PUBLIC.items() if name not in SPECS and name not in NO_SWEEP]
    assert not undeclared, f"add these to SPECS (a valid call and the kind of each parameter): {undeclared}"
    assert not set(SPECS) & set(NO_SWEEP)
    stale = set(SPECS) - set(PUBLIC)
    assert not stale, f"rows for callables that are no longer public: {sorted(stale)}"
    missing = []
    for name, spec in SPECS.items():
        for p in _parameters(PUBLIC[name][1]):
            if _kind(spec, p) is None:
                missing.append(f"{name}({p.name})")
    assert not missing, f"declare the kind of these parameters: {missing}"
    for modname in GLUE:  # glue modules are enumerated too: they exist and export what they say
        mod = importlib.import_module(modname)
        assert all(hasattr(mod, n) for n in mod.__all__)
    n_params = sum(len(_parameters(PUBLIC[n][1])) for n in SPECS)
    print(f"contract registry: {len(SPECS)} callables, {n_params} parameters, {len(NO_SWEEP)} declared without a sweep")


# ----------------------------------------------------------------------------------------------- the sweep
def _flat(out, depth=0):
    """Numbers of a result as a list of float64 arrays (strings kept), for comparison."""
    if depth > 6:
        return []
    if isinstance(out, torch.Tensor):
        out = out.detach().cpu()
        return [out.to(torch.float64).numpy() if not out.is_complex() else out.numpy()]
    if isinstance(out, np.ndarray):
        return [out.astype(np.float64)] if out.dtype.kind in "biuf" else [out]
    if isinstance(out, (bool, int, float, np.number)):
        return [np.asarray(float(out))]
    if isinstance(out, str) or out is None:
        return [out]
    if isinstance(out, dict):
        return [x for k in sorted(out, key=str) if k not in IGNORED_FIELDS for x in _flat(out[k], depth + 1)]
    if dataclasses.is_dataclass(out):
        return [x for f in dataclasses.fields(out) if f.name not in IGNORED_FIELDS for x in _flat(getattr(out, f.name), depth + 1)]
    if isinstance(out, (list, tuple)):
        return [x for v in out for x in _flat(v, depth + 1)]
    if isinstance(out, torch.nn.Module):
        return _flat(out.state_dict(), depth + 1)
    return [type(out).__name__]


def _close(a, b, tol):
    fa, fb = _flat(a), _flat(b)
    if len(fa) != len(fb):
        return f"a result of {len(fa)} parts instead of {len(fb)}"
    for x, y in zip(fa, fb):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            if x.shape != y.shape:
                return f"shape {x.shape} instead of {y.shape}"
            if x.size and not np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True):
                return f"value off by {np.nanmax(np.abs(x - y)):.3g} (tolerance {tol:g})"
        elif x != y:
            return f"{x!r} instead of {y!r}"
    return None


def _finite(out):
    return all(np.all(np.isfinite(x)) for x in _flat(out) if isinstance(x, np.ndarray) and x.dtype.kind in "f")


def _call(name, spec, kwargs):
    obj = PUBLIC[name][1]
    torch.manual_seed(0)  # constructors and samplers draw: every call from the same state
    if inspect.isclass(obj) and spec.use is not None:
        inst = obj(**kwargs)
        try:
            return spec.use(inst)
        except Exception as err:  # accepted at construction, failed on first use
            raise _Late(err) from err
    return obj(**kwargs)


class _Late(Exception):
    pass


def _names(err, param):
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param.lstrip('_'))}(?![A-Za-z0-9_])", str(err)) is not None


def _check_case(name, spec, kwargs, param, case, base_out):
    """None if the case gives what it must, else a line saying what went wrong."""
    trial = dict(kwargs, **{param: case.value})
    try:
        out = _call(name, spec, trial)
    except _Late as late:
        return f"accepted at construction, then {type(late.__cause__).__name__} on first use: {late.__cause__}"[:300]
    except ERRORS as err:
        if case.in_domain:
            return f"refused a valid input: {type(err).__name__}: {err}"[:300]
        if _names(err, param) or (case.mismatch and any(_names(err, k) for k in trial)):
            return None
        return f"{type(err).__name__} that does not name {param!r}: {err}"[:300]
    except Exception as err:  # noqa: BLE001 - any other exception is the fault
        return f"{type(err).__name__} instead of a ValueError/TypeError naming {param!r}: {err}"[:300]
    if case.expect == "error":
        return "accepted (no error)"
    if case.expect == "any":
        return None
    if case.expect == "nonfinite":
        return None if not _finite(out) else "a finite result from a non-finite input"
    if case.expect == "finite":
        return None if _finite(out) else "a non-finite result"
    if case.expect == "same":
        return _close(out, base_out, case.tol)
    reference = _call(name, spec, dict(kwargs, **{param: case.reference}))
    return _close(out, reference, case.tol)


def _sweep(name):
    spec = SPECS[name]
    obj = PUBLIC[name][1]
    base = spec.args()
    base_out = None if spec.errors_only else _call(name, spec, spec.args())
    faults, n = [], 0
    for p in _parameters(obj):
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        kind = _kind(spec, p)
        value = base.get(p.name, p.default if p.default is not p.empty else None)
        args, ref_out = spec.args, base_out
        if value is None and kind.example is not None:  # an optional argument: swept around its example value
            args = (lambda a=spec.args, k=p.name, v=kind.example: dict(a(), **{k: v}))
            ref_out = None if spec.errors_only else _call(name, spec, args())
        for case in kind.all_cases(value):
            if spec.errors_only and case.expect != "error":
                continue
            n += 1
            problem = _check_case(name, spec, args(), p.name, case, ref_out)
            if problem:
                faults.append(f"{name}({p.name} = {case.label}): {problem}")
    return faults, n


@pytest.mark.parametrize("name", sorted(SPECS))
def test_bad_inputs_give_the_right_value_or_an_error_naming_the_argument(name):
    faults, n = _sweep(name)
    assert not faults, f"{len(faults)} of {n} inputs:\n" + "\n".join(faults)


def test_the_sweep_catches_planted_faults():
    """The mechanism can fail: a function that returns a finite number from NaN, truncates integers,
    or raises an error without the argument's name is reported."""
    def silent(x):  # NaN in, a number out; integers truncated
        x = torch.as_tensor(x)
        return torch.nan_to_num(x).sum() if x.is_floating_point() else (x // 2).sum()

    def unnamed(x):
        x = torch.as_tensor(x)
        if x.is_floating_point() and not torch.isfinite(x).all():
            raise ValueError("bad input")
        return x.sum()

    for fn, expect in ((silent, "a finite result from a non-finite input"), (unnamed, "does not name 'x'")):
        PUBLIC["_planted"] = ("tests", fn)
        SPECS["_planted"] = Spec(lambda: dict(x=H), dict(x=Floats()))
        try:
            faults, _ = _sweep("_planted")
        finally:
            del PUBLIC["_planted"], SPECS["_planted"]
        assert any(expect in f for f in faults), faults
