"""Degenerate inputs, by mechanism: no public callable turns one into a number that reads as a result.

Every public callable of the package (enumerated from each subpackage's ``__all__`` by
``tests/test_contract.py``, which also holds one valid call of each) that takes labels, features,
logits, a Gram matrix, prior weights, counts or class probabilities is found by its parameter names
(:data:`ROLES`, checked against the kind the contract table gives the parameter) and fed the inputs of
:data:`CASES`, built from its valid call:

* a class absent, one class, coincident class means, all-zero features, an empty batch;
* a non-symmetric and a non-PSD Gram matrix (unit diagonal kept, so only positive semidefiniteness is
  at fault), a zero count or probability, all-zero prior weights;
* a NaN and an infinite entry;
* at the edge of the range, inputs that are ordinary and must work: saturated logits (x1000) and large
  features (x1000, past float16's largest square);

each in float64, float32 and float16 where the input is a float tensor. The contract of each
(callable, input) is one of

* ``refuse`` (the default of the degenerate kinds): a ``ValueError``/``TypeError`` naming an argument the
  input changed; a solver result whose status says it has no answer (status as data); or a NaN that
  the docstring promises (:data:`PROMISED_NAN` for finite inputs; for a NaN or infinite input, the
  callable's or its module's docstring saying NaN in gives NaN out);
* ``defined`` (listed in :data:`DEFINED` with the reason, and the default of the edge kinds): a finite
  result, with finite gradients, that agrees with float64 to the dtype's precision (an entry whose
  float64 value lies beyond the dtype's range may be infinite).

Never a finite number from a refused input: NC1 of features whose class means coincide is not 0.0
(the value of perfect collapse), and a helper does not hand back a Gram full of NaN for a missing
class. Callables with such a parameter that the table does not apply to are listed in
:data:`EXCEPTIONS` with the reason. ``test_the_table_catches_each_kind`` puts back, one at a time, the
faults this table was built from (:data:`REGRESSIONS`) and shows that it reports each.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import test_contract as tc  # noqa: E402  (the valid calls and the enumeration of the public callables)

torch.set_num_threads(1)
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::ncbook.InaccurateSolutionWarning")]

# ----------------------------------------------------------------------------------------------- discovery
#: parameter name -> role (the kind the contract table gives it must agree: see _role)
ROLES = {
    "labels": "labels", "y": "labels", "targets": "labels",
    "features": "features", "z": "features", "x": "features", "H": "features", "anchor": "features",
    "positive": "features", "negatives": "features", "prototypes": "features", "label_embeddings": "features",
    "means": "means", "classifier": "means", "classifiers": "means", "W": "means",
    "logits": "logits", "losses": "logits",
    "gram": "gram", "grad_sym": "gram",
    "weights": "weights", "class_weights": "weights",
    "counts": "counts", "train_counts": "counts", "batch_counts": "counts",
    "class_probs": "probs", "neg_probs": "probs",
}
#: the contract kinds each role may have (a name with another kind, e.g. a continuous ``y``, is a feature)
_KINDS = {"labels": ("Labels",), "features": ("Floats",), "means": ("Floats",), "logits": ("Floats",),
          "gram": ("Gram", "Floats"), "weights": ("Weights",), "counts": ("Counts", "Vector"), "probs": ("Probs",)}

#: public callables with such a parameter that the table does not apply to, with the reason
EXCEPTIONS = {
    "measure_contrastive": "a cost probe (errors only, in tests/test_contract.py); the trainer it times is in the table",
    "cifar_augment": "x is a batch of images: it only moves pixels (tested against torchvision in tests/test_recipes.py)",
    "make_loader": "x is a batch of inputs it only batches; y is checked as labels in tests/test_contract.py",
    "xclr_weights": "label_embeddings are any embedding of the labels: no class structure to degenerate",
    "gaussian_kernel_weights": "y are continuous labels: no class structure to degenerate",
}


#: (callable, parameter) whose name says a role that the parameter does not have, with the reason
NOT_ROLES = {
    ("evaluate", "x"): "inputs of the caller's model (images, vectors), not features",
    ("class_mean_cosines", "x"): "inputs of the caller's model",
    ("fit_contrastive", "x"): "inputs of the caller's model",
    ("procrustes_align", "y"): "a second point cloud (features), not labels",
}


def _role(name, param):
    spec = tc.SPECS[name]
    if (name, param.name) in NOT_ROLES:
        return None
    role = ROLES.get(param.name)
    kind = tc._kind(spec, param)
    if role is None or isinstance(kind, tc.Free):
        return None
    kname = type(kind).__name__
    if kname not in _KINDS[role]:
        return "features" if kname == "Floats" else None
    return role


def _targets(excused=EXCEPTIONS):
    """{callable: {parameter: role}} for every public callable with a role parameter, exceptions aside."""
    out = {}
    for name in sorted(tc.SPECS):
        obj = tc.PUBLIC[name][1]
        roles = {p.name: r for p in tc._parameters(obj) if (r := _role(name, p)) is not None}
        if roles and name not in excused:
            out[name] = roles
    return out


# ----------------------------------------------------------------------------------------------- the inputs
DTYPES = (torch.float64, torch.float32, torch.float16)
TOL = {torch.float16: 3e-2, torch.float32: 2e-4, torch.float64: 1e-9}


def _t(v):
    """A copy as a tensor (never a view of the contract table's shared arrays)."""
    return v.detach().clone() if isinstance(v, torch.Tensor) else torch.tensor(np.array(v))


def _back(v, t):
    """``t`` in the container type of ``v`` (numpy for numpy and lists, a tensor for a tensor)."""
    return t if isinstance(v, torch.Tensor) else t.numpy()


def _labels(kw, roles):
    names = [p for p, r in roles.items() if r == "labels"]
    return names[0] if names else None


def _class_absent(kw, roles):
    p = _labels(kw, roles)
    if p is None or kw.get(p) is None:
        return None
    y = _t(kw[p]).long()
    if len(torch.unique(y)) < 3:
        return None
    gone = int(torch.unique(y)[1])  # a middle class: the largest label still fixes C
    return {p: _back(kw[p], torch.where(y == gone, torch.unique(y)[0], y))}


def _shrink_classes(kw, c, keep):
    """Every array argument cut to ``keep`` classes along its axes of length ``c``, and ``num_classes`` with it."""
    out = {}
    for q, v in kw.items():
        if isinstance(v, (torch.Tensor, np.ndarray, list)) and not isinstance(v, str):
            t = _t(v)
            if t.ndim >= 1 and c in t.shape:
                index = tuple(slice(0, keep) if s == c else slice(None) for s in t.shape)
                out[q] = _back(v, t[index]) if not isinstance(v, list) else t[index].numpy()
        elif q == "num_classes" and v == c:
            out[q] = keep
    return out


def _one_class(kw, roles):
    p = _labels(kw, roles)
    if p is not None and kw.get(p) is not None:
        return {p: _back(kw[p], torch.zeros_like(_t(kw[p]).long()))}
    for q, r in roles.items():  # counts or probabilities of a single class, and the arguments sized by C with them
        if r in ("counts", "probs") and kw.get(q) is not None:
            c = len(_t(kw[q]))
            out = _shrink_classes(kw, c, 1)
            out[q] = np.array([1.0]) if r == "probs" else np.asarray(_t(kw[q]).numpy()[:1])
            return out
    return None


def _coincident_means(kw, roles):
    p = _labels(kw, roles)
    if p is None or kw.get(p) is None:
        return None
    y = _t(kw[p]).long()
    out = {}
    for q, r in roles.items():
        v = kw.get(q)
        if r == "features" and v is not None and _t(v).ndim == 2 and _t(v).shape[0] == len(y):
            h = _t(v).double()
            means = torch.stack([h[y == c].mean(0) if (y == c).any() else h.mean(0) for c in range(int(y.max()) + 1)])
            out[q] = _back(v, h - means[y] + means[y].mean(0))  # every class mean at the grand mean, spread kept
    return out or None


def _all_zero(kw, roles):
    out = {q: _back(kw[q], torch.zeros_like(_t(kw[q]).double())) for q, r in roles.items()
           if r in ("features", "means") and kw.get(q) is not None}
    return out or None


def _batch_size(kw, roles):
    for want in ("labels", "features", "logits", "weights", "means", "gram"):
        for q, r in roles.items():
            if r == want and kw.get(q) is not None and _t(kw[q]).ndim >= 1:
                return _t(kw[q]).shape[0]
    return None


def _empty(kw, roles):
    n = _batch_size(kw, roles)
    if n is None:
        return None
    out = {}
    for q, v in kw.items():
        if isinstance(v, (torch.Tensor, np.ndarray, list)) and _t(v).ndim >= 1 and n in _t(v).shape:
            t = _t(v)
            index = tuple(slice(0, 0) if s == n else slice(None) for s in t.shape)
            out[q] = t[index].numpy() if isinstance(v, list) else _back(v, t[index])
    return out or None


def _non_symmetric(kw, roles):
    out = {}
    for q, r in roles.items():
        if r == "gram" and kw.get(q) is not None:
            a = np.array(_t(kw[q]).double().numpy())
            a[0, 1] += 0.3
            out[q] = a
    return out or None


def _non_psd(kw, roles):
    """Symmetric, unit diagonal where the valid Gram has one, one eigenvalue negative (Sylvester's law keeps it so)."""
    out = {}
    for q, r in roles.items():
        if r == "gram" and kw.get(q) is not None:
            a = _t(kw[q]).double().numpy()
            lam, vec = np.linalg.eigh(a)
            lam[0] = -0.5 * max(1.0, abs(lam[-1]))
            b = (vec * lam) @ vec.T
            d = np.sqrt(np.abs(np.diag(b)))
            if np.allclose(np.diag(a), 1.0):
                b = b / d[:, None] / d[None, :]
            out[q] = (b + b.T) / 2
    return out or None


def _zero_entry(kw, roles):
    out = {}
    for q, r in roles.items():
        v = kw.get(q)
        if v is None:
            continue
        if r == "counts":
            a = np.array(_t(v).numpy(), dtype=np.int64 if np.asarray(_t(v).numpy()).dtype.kind in "iu" else np.float64)
            a[-1] = 0
            out[q] = a
        elif r == "probs":
            a = np.array(_t(v).double().numpy())
            a[-1] = 0.0
            out[q] = a / a.sum()
    return out or None


def _entry(value):
    def make(kw, roles):
        for q, r in roles.items():
            v = kw.get(q)
            if r == "labels" or v is None or _t(v).numel() == 0:
                continue
            t = _t(v).double()
            t.view(-1)[0] = value
            return {q: _back(v, t)}  # the first numeric argument; the contract test feeds every one
        return None
    return make


def _zero_weights(kw, roles):
    """Prior weights with no positive pair: no anchor has a target."""
    out = {q: _back(kw[q], torch.zeros_like(_t(kw[q]).double())) for q, r in roles.items()
           if r == "weights" and kw.get(q) is not None}
    return out or None


def _saturated(kw, roles):
    """Logits a thousand times larger: the softmax is one-hot in every dtype (float16 still holds them)."""
    out = {q: _back(kw[q], _t(kw[q]).double() * 1e3) for q, r in roles.items() if r == "logits" and kw.get(q) is not None}
    return out or None


def _large(kw, roles):
    """Features a thousand times larger: squared norms pass float16's largest number (65504)."""
    out = {q: _back(kw[q], _t(kw[q]).double() * 1e3) for q, r in roles.items()
           if r in ("features", "means") and kw.get(q) is not None}
    return out or None


@dataclass(frozen=True)
class Degenerate:
    label: str
    make: Callable  # (valid kwargs, roles) -> {argument: degenerate value} or None (not applicable)
    dtypes: bool = True  # also in float16/float32/float64
    default: str = "refuse"  # or "defined": an ordinary input at an edge of the range (finite results, finite gradients)
    finite_input: bool = True  # False for NaN/inf entries: no gradient is asked of them


CASES = [
    Degenerate("a class absent", _class_absent, dtypes=False),
    Degenerate("one class", _one_class, dtypes=False),
    Degenerate("coincident class means", _coincident_means),
    Degenerate("all-zero features", _all_zero),
    Degenerate("empty batch", _empty, dtypes=False),
    Degenerate("non-symmetric Gram", _non_symmetric, dtypes=False),
    Degenerate("non-PSD Gram", _non_psd, dtypes=False),
    Degenerate("a zero count or probability", _zero_entry, dtypes=False),
    Degenerate("all-zero prior weights", _zero_weights, dtypes=False),
    Degenerate("a NaN entry", _entry(math.nan), finite_input=False),
    Degenerate("an infinite entry", _entry(math.inf), finite_input=False),
    Degenerate("saturated logits", _saturated, default="defined"),
    Degenerate("large features", _large, default="defined"),
]


def _in_dtype(args, changed, dtype):
    """Every float tensor among the changed arguments in ``dtype`` (numpy has no bfloat16; float16 it has)."""
    out = dict(args)
    for q in changed:
        v = args[q]
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            out[q] = v.to(dtype)
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            out[q] = v.astype(torch.empty(0, dtype=dtype).numpy().dtype)
    return out


# ----------------------------------------------------------------------------------------------- the contract
def _each(names, reason):
    return dict.fromkeys(names.split(), reason)


_BATCH_LOSSES = ("focal_loss ldam_loss logit_adjusted_loss margin_cross_entropy weighted_cross_entropy inverse_reweighted_ce "
                 "ib_loss log_mean_ce ce_margins ufm_objective contrastive_ufm_risk representation_margin_loss")
_ORDINARY_BATCH = "a batch without some classes (or of one class) is an ordinary batch: the loss is a sum over its samples"
_ZERO_ROW = ("a zero row has cosine 0 with every row, in every dtype (the package's convention, "
             "tests/test_registry.py::test_cosine_of_a_zero_row_is_zero_in_every_dtype)")
_PER_CLASS_WEIGHTS = "the weight (or margin) of a single class is defined: one class, one value"

#: case label -> {callable: why a finite result is the right one} (for the cases whose default is "refuse")
DEFINED: dict[str, dict[str, str]] = {
    "a class absent": {
        **_each(_BATCH_LOSSES, _ORDINARY_BATCH),
        **_each("supcon_weights soft_supcon_weights sel_matrix", "a per-sample encoding of the labels given: no class "
                "statistic is formed"),
        "contrastive_batch_indices": "indices are drawn from the samples present; an absent class is never drawn",
        "class_feature_statistics": "documented: an absent class gets zeros with count 0 (the count says it was absent)",
    },
    "one class": {
        **_each(_BATCH_LOSSES, _ORDINARY_BATCH),
        **_each("supcon_weights soft_supcon_weights sel_matrix", "a per-sample encoding of the labels given"),
        "contrastive_batch_indices": "UCL draws from the samples present (SCL refuses one class)",
        "class_feature_statistics": "documented: absent classes get zeros with count 0",
        "class_means": "the mean of the one class is its value",
        "per_class_accuracy": "the accuracy of the one class (C inferred as 1) is its value",
        "class_mean_cosines": "the cosine of the one class mean with itself is 1 (a 1 x 1 Gram), its spread a value",
        "fit_contrastive": "UCL training of one class is defined (every negative is a same-class sample)",
        **_each("effective_number_weights inverse_frequency_weights ldam_margins prior_weights macro_factors "
                "logit_adjustment", _PER_CLASS_WEIGHTS),
        **_each("negative_distribution negative_multisets", "UCL negatives of a single class: that class, with "
                "probability 1"),
        **_each("prototype_w_info_nce prototype_entropic_lower_bound fit_prototypes", "one class of n >= 2 samples: its "
                "anchors have the other samples of their class as targets"),
    },
    "coincident class means": {
        **_each(_BATCH_LOSSES, "a training objective is defined at every point, collapsed means included"),
        "class_means": "equal means are the value of class_means of such features",
        "class_feature_statistics": "per-class norms and spreads are defined whatever the means",
    },
    "all-zero features": {
        **_each("cosine_matrix latent_similarity cosine_logits info_nce generalized_contrastive_loss w_info_nce "
                "column_normalized_w_info_nce prototype_w_info_nce contrastive_ufm_risk entropic_gap", _ZERO_ROW),
        "gram": "the Gram of zero vectors is the zero matrix",
        "class_means": "the means of zero features are zero",
        "class_feature_statistics": "the norms and spreads of zero features are zero",
        **_each("ufm_objective representation_margin_loss", "a training objective is defined at the origin"),
        "ib_loss": "documented: the influence ||h||_1 is 0 and the loss divides by eps (IB's own guard)",
    },
    "empty batch": {
        "representation_margin_loss": "documented: MR2's regulariser adds 0 when no pair of a class is in the batch",
        "class_feature_statistics": "documented: every class gets zeros with count 0",
    },
    "a zero count or probability": {
        "macro_factors": "documented: a class in no batch yet counts as min_count batches",
        "negative_multisets": "a class of probability 0 is never drawn: its multisets have weight 0",
    },
    "all-zero prior weights": {
        **_each("w_info_nce column_normalized_w_info_nce prototype_w_info_nce", "documented: anchors without a positive "
                "weight are skipped and the mean over none is 0 (a batch with no pair: no gradient, not an error)"),
    },
    "an infinite entry": {
        "log_mean_ce": "documented: +inf at a true-class logit is the limit CE = 0 of that sample",
    },
}
#: case label -> {callable: where its docstring promises the NaN} for finite inputs whose answer is NaN (a NaN or
#: infinite input may give a NaN wherever the callable's or its module's docstring says so: "NaN in, NaN out")
PROMISED_NAN: dict[str, dict[str, str]] = {
    "a class absent": {
        "batch_class_losses": "Returns: NaN for classes absent from the batch",
        "per_class_accuracy": "Returns: NaN for a class absent from labels",
        "evaluate": "Returns: class_acc and class_loss NaN for absent classes",
        "shot_accuracy": "Returns: a group with no class present is NaN",
    },
    "one class": {
        "batch_class_losses": "Returns: NaN for classes absent from the batch",
        "evaluate": "Returns: class_acc and class_loss NaN for absent classes",
        "shot_accuracy": "Returns: a group with no class present is NaN",
    },
    "all-zero features": {"r2_similarity": "Returns: nan when either side is constant (all cosines 0)"},
    "all-zero prior weights": {"r2_similarity": "Returns: nan when either side is constant (no pair is weighted)"},
}
#: case label -> {callable: why it refuses} (for the cases whose default is "defined")
REFUSED: dict[str, dict[str, str]] = {}
#: result statuses that mean a solver found an answer (any other status refuses by itself, as data)
SUCCESS = ("optimal", "feasible")


def _promises_nan(obj):
    """The callable's docstring, or its module's, says when it returns NaN."""
    text = (inspect.getdoc(obj) or "") + (sys.modules[obj.__module__].__doc__ or "")
    return re.search(r"\bnan\b", text, re.IGNORECASE) is not None


def _outcome(name, kwargs):
    """(kind, value): kind is "value", "error" (ValueError/TypeError), "late" (a class that failed on first use)
    or "other" (any other exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "value", tc._call(name, tc.SPECS[name], kwargs)
    except tc._Late as late:
        return "late", late.__cause__
    except tc.ERRORS as err:
        return "error", err
    except Exception as err:  # noqa: BLE001 - another exception type is the fault
        return "other", err


def _empty_result(out):
    parts = [x for x in tc._flat(out) if isinstance(x, np.ndarray)]
    return bool(parts) and all(p.size == 0 for p in parts)


def _gradients(name, trial, change):
    """{argument: gradient of the summed result} for the changed float tensors (empty if nothing is differentiable)."""
    leaves = {q: v.detach().clone().requires_grad_(True) for q, v in trial.items()
              if q in change and isinstance(v, torch.Tensor) and v.is_floating_point()}
    if not leaves:
        return {}
    kind, out = _outcome(name, dict(trial, **leaves))
    if kind != "value" or not isinstance(out, torch.Tensor) or out.grad_fn is None:
        return {}
    grads = torch.autograd.grad(out.sum(), list(leaves.values()), allow_unused=True)
    return {q: g for q, g in zip(leaves, grads) if g is not None}


def _gradient_problem(grads, dtype, ref_grads):
    """For an input that is an ordinary one: its gradient is finite, or (below float64) infinite only where the
    float64 gradient is beyond the dtype's range too."""
    bad = []
    for q, g in grads.items():
        if torch.isfinite(g).all():
            continue
        ref = ref_grads.get(q)
        if dtype in (None, torch.float64) or ref is None or float(ref.abs().max()) <= float(torch.finfo(dtype).max):
            bad.append(q)
    return f"a non-finite gradient with respect to {bad}" if bad else None


def _judge(name, case, change, kind, out, defined):
    if kind == "other":
        return f"{type(out).__name__} instead of a ValueError/TypeError: {out}"[:300]
    if kind == "late":
        return f"accepted at construction, then {type(out).__name__} on first use: {out}"[:300]
    if kind == "error":
        if defined and case.default == "defined":
            return f"refused an ordinary input: {type(out).__name__}: {out}"[:300]
        if any(tc._names(out, q) for q in change):
            return None
        return f"{type(out).__name__} that names none of {sorted(change)}: {out}"[:300]
    if case.label == "empty batch" and _empty_result(out):
        return None  # the empty value of an empty input: there is no number to misread
    status = getattr(out, "status", None)
    if isinstance(status, str) and status not in SUCCESS and not defined:
        return None  # a solver's answer that says it has none (status as data), with its reason
    finite = tc._finite(out)
    if defined:
        return None if finite else "a non-finite result from an input that is an ordinary one here"
    if not finite:
        if case.finite_input and name not in PROMISED_NAN.get(case.label, {}):
            return "a NaN/inf result from finite inputs, not declared in PROMISED_NAN"
        return None if _promises_nan(tc.PUBLIC[name][1]) else "a NaN/inf result that the docstring does not promise"
    return f"a finite result ({_show(out)}) where an error or a promised NaN was due"


def _show(out):
    parts = [x for x in tc._flat(out) if isinstance(x, np.ndarray)]
    return ", ".join(np.array2string(p, precision=4, threshold=6).replace("\n", "") for p in parts[:3])[:120]


def _off(out, ref, dtype):
    """How ``out`` (computed in ``dtype``) departs from the float64 result ``ref``, or None.

    An entry whose float64 value lies beyond the dtype's largest number may be infinite: that is its value
    in that dtype (e.g. squared distances of features of size 1000 in float16).
    """
    big = float(torch.finfo(dtype).max)
    fa, fb = tc._flat(out), tc._flat(ref)
    if len(fa) != len(fb):
        return f"a result of {len(fa)} parts instead of {len(fb)}"
    for x, y in zip(fa, fb):
        if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.dtype.kind != "f":
            continue
        overflow = np.abs(y) > big
        x, y = np.where(overflow, 0.0, x), np.where(overflow, 0.0, y)
        if x.shape != y.shape:
            return f"shape {x.shape} instead of {y.shape}"
        if x.size and not np.allclose(x, y, rtol=TOL[dtype], atol=TOL[dtype] * max(1.0, float(np.abs(y).max())),
                                      equal_nan=True):
            return f"off by {np.nanmax(np.abs(x - y)):.3g} (tolerance {TOL[dtype]:g} of the value's scale)"
    return None


def _overflows(out, dtype, ref):
    """Every non-finite entry of ``out`` is one whose float64 value ``ref`` exceeds the dtype's range."""
    big = float(torch.finfo(dtype).max)
    for x, y in zip(tc._flat(out), tc._flat(ref)):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype.kind == "f" and x.shape == y.shape:
            if np.any(~np.isfinite(x) & ~(np.abs(y) > big)):
                return False
    return True


def _is_defined(name, case):
    if case.default == "defined":
        return name not in REFUSED.get(case.label, {})
    return name in DEFINED.get(case.label, {})


def _dtypes(case, change):
    floats = any(isinstance(v, (torch.Tensor, np.ndarray)) and np.asarray(_t(v)).dtype.kind == "f" for v in change.values())
    return DTYPES if case.dtypes and floats else (None,)


def _sweep(name, roles):
    """The faults of one callable over every case, and how many calls were made."""
    faults, n = [], 0
    for case in CASES:
        base = tc.SPECS[name].args()
        change = case.make(base, roles)
        if not change:
            continue
        args, defined, ref, ref_grads = dict(base, **change), _is_defined(name, case), None, {}
        for dtype in _dtypes(case, change):  # float64 first: the value the others are held to
            trial = args if dtype is None else _in_dtype(args, change, dtype)
            n += 1
            kind, out = _outcome(name, trial)
            problem = _judge(name, case, change, kind, out, defined)
            overflowed = False
            if defined and kind == "value" and dtype not in (None, torch.float64) and ref is not None:
                if problem and _overflows(out, dtype, ref):
                    problem, overflowed = None, True  # beyond the dtype's range in float64 too: infinity is its value
                problem = problem or _off(out, ref, dtype)
            if defined and kind == "value" and not problem and not overflowed and case.finite_input:
                grads = _gradients(name, trial, change)
                problem = _gradient_problem(grads, dtype, ref_grads)
                if dtype in (None, torch.float64):
                    ref, ref_grads = out, grads
            elif defined and kind == "value" and dtype in (None, torch.float64):
                ref = out
            if problem:
                label = case.label if dtype is None else f"{case.label}, {str(dtype).replace('torch.', '')}"
                faults.append(f"{name}({label}): {problem}")
    return faults, n


TARGETS = _targets()


def test_every_role_parameter_is_covered():
    """A public callable with a labels/features/logits/Gram/weights/counts parameter is in the table or excused."""
    stale = set(EXCEPTIONS) - set(_targets(excused=()))
    assert not stale, f"exceptions for callables that are no longer public or take no such parameter: {sorted(stale)}"
    labels = {c.label for c in CASES}
    for table in (DEFINED, REFUSED, PROMISED_NAN):
        for label, names in table.items():
            assert label in labels, f"no case is called {label!r}"
            outside = set(names) - set(TARGETS)
            assert not outside, f"{label}: declared for callables outside the table: {outside}"
    n_inputs = sum(_sweep_count(name, roles) for name, roles in TARGETS.items())
    print(f"degenerate-input table: {len(TARGETS)} callables, {len(CASES)} kinds of degenerate input, {n_inputs} calls "
          f"(with dtypes), {len(EXCEPTIONS)} callables excused, {sum(map(len, DEFINED.values()))} (callable, input) "
          f"pairs declared ordinary")


def _sweep_count(name, roles):
    """The calls the sweep of one callable makes (every applicable case, in each of its dtypes)."""
    base = tc.SPECS[name].args()
    return sum(len(_dtypes(case, change)) for case in CASES if (change := case.make(base, roles)))


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_degenerate_inputs_are_refused_or_defined(name):
    faults, n = _sweep(name, TARGETS[name])
    assert not faults, f"{len(faults)} of {n} degenerate inputs:\n" + "\n".join(faults)


# ----------------------------------------------------------------------------------------------- the table can fail
def _old_unit_rows(x, dim=-1):
    """The cosine floor before: zero rows 0, but a gradient of 1/tiny there."""
    return torch.nn.functional.normalize(x, dim=dim, eps=torch.finfo(x.dtype).tiny)


def _nan_swallowing_unit_rows(x, dim=-1):
    """A floor that reads a NaN norm as a zero row (0 instead of NaN)."""
    norm = torch.linalg.vector_norm(x, dim=dim, keepdim=True)
    ok = norm > torch.finfo(x.dtype).tiny
    return torch.where(ok, x / torch.where(ok, norm, torch.ones_like(norm)), torch.zeros_like(x))


def _skip(*args, **kwargs):
    return args[1] if len(args) > 1 else None


#: kind -> (module, attribute, the old behaviour, callable, case label, what the table must say)
REGRESSIONS = {
    "NC1 of coincident means or all-zero features reads 0.0 (perfect collapse)":
        ("ncbook.metrics._nc", "_check_spread", _skip, "nc1", "all-zero features", "a finite result (0."),
    "NC1 of coincident class means is a huge finite number":
        ("ncbook.metrics._nc", "_check_spread", _skip, "nc1", "coincident class means", "a finite result"),
    "centred means of coincident classes are rounding noise, read by NC2/NC3 as a direction":
        ("ncbook.metrics._nc", "_check_spread", _skip, "centered_means", "coincident class means", "a finite result"),
    "NC4 of coinciding means ties silently":
        ("ncbook.metrics._nc", "_check_distinct_means", _skip, "nc4", "all-zero features", "a finite result"),
    "a silent NaN Gram for a class absent from y":
        ("ncbook.train._contrastive", "_check_every_class", _skip, "class_mean_cosines", "a class absent",
         "NaN/inf result from finite inputs"),
    "a Gram that is not PSD gets a contrastive risk":
        ("ncbook.contrastive._risk", "check_psd", _skip, "cl_risk", "non-PSD Gram", "a finite result"),
    "the focal loss is NaN on an empty batch":
        ("ncbook._validation", "check_batch", lambda name, x, reduction="mean": x, "focal_loss", "empty batch",
         "NaN/inf result from finite inputs"),
    "an entropic bound of weights without a target reads 0":
        ("ncbook.losses._weighted", "_check_some_target", _skip, "entropic_lower_bound", "all-zero prior weights",
         "a finite result (0."),
    "a zero feature row gets a gradient of 1/tiny":
        ("ncbook.models", "unit_rows", _old_unit_rows, "cosine_logits", "all-zero features", "non-finite gradient"),
    "a cosine swallows a NaN feature":
        ("ncbook.losses._weighted", "unit_rows", _nan_swallowing_unit_rows, "latent_similarity", "a NaN entry",
         "a finite result"),
}


@pytest.mark.parametrize("kind", sorted(REGRESSIONS))
def test_the_table_catches_each_kind(kind, monkeypatch):
    """Each fault the table was built from, put back by hand, is reported for its callable and input."""
    module, attr, old, name, label, says = REGRESSIONS[kind]
    assert not _faults(name, label), f"{name}({label}) must pass before the regression is planted"
    monkeypatch.setattr(sys.modules[module] if module in sys.modules else __import__(module, fromlist=["_"]), attr, old)
    faults = _faults(name, label)
    assert any(says in f for f in faults), f"{kind}: the table did not report it: {faults}"


def _faults(name, label):
    return [f for f in _sweep(name, TARGETS[name])[0] if f.startswith(f"{name}({label}")]
