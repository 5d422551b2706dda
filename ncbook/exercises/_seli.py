"""Autograder checks for the SELI chapter (Imbalance Trouble).

Letters: ``C`` classes, ``n`` samples, ``R`` the STEP imbalance ratio.
"""

from __future__ import annotations

import numpy as np
import torch

from ..geometry import sel_matrix, seli_geometry, seli_step_closed_form
from ..geometry import cosine_matrix
from ..ufm import log_mean_ce, ridge_optimum
from ._core import CheckResult, _signature_problem, run_cases

__all__ = ["check_sel_matrix", "check_seli_classifier_gram", "check_minority_norm_ratio", "check_log_mean_ce",
           "check_collapse_lambda"]


def _sel_cases():
    rng = np.random.default_rng(0)
    yield {"labels": np.array([0, 2]), "num_classes": 3}
    yield {"labels": np.array([1, 1, 0, 3, 2, 3]), "num_classes": 4}
    yield {"labels": np.array([0, 0, 0]), "num_classes": 5}  # absent classes still have rows
    yield {"labels": rng.integers(0, 7, size=20), "num_classes": 7}


def check_sel_matrix(student) -> CheckResult:
    """Check ``student(labels, num_classes) -> (C, n)`` against :func:`ncbook.geometry.sel_matrix`.

    Cases: the docstring example, a shuffled batch, a batch missing some classes
    (the SEL matrix still has ``C`` rows) and random labels. Shape ``(C, n)``: one
    column per sample, as in the paper.
    """
    return run_cases("sel_matrix", student, sel_matrix, _sel_cases(), atol=1e-10, forbid=(sel_matrix,))


def _gram_cases():
    yield {"counts": np.array([3, 3, 3])}
    yield {"counts": np.array([50, 50, 5, 5])}
    yield {"counts": np.array([7, 1])}
    yield {"counts": np.array([100, 40, 12, 5, 2])}


def check_seli_classifier_gram(student) -> CheckResult:
    """Check ``student(counts) -> (C, C)`` equals :math:`(PDP)^{1/2}` (the SELI classifier Gram).

    Cases: balanced counts (a scaled ETF Gram), STEP counts, two classes and a
    long-tailed profile.
    """
    return run_cases("seli_classifier_gram", student, lambda counts: seli_geometry(counts).classifier_gram,
                     _gram_cases(), atol=1e-8, forbid=(seli_geometry,))


def _ratio_cases():
    for ratio, k_maj, k_min in ((1.0, 2, 2), (10.0, 2, 2), (100.0, 2, 2), (10.0, 5, 5), (50.0, 7, 3), (3.0, 1, 1)):
        yield {"ratio": ratio, "num_majority": k_maj, "num_minority": k_min}


def check_minority_norm_ratio(student) -> CheckResult:
    """Check ``student(ratio, num_majority, num_minority) -> float`` equals ``||w_min|| / ||w_maj||`` of SELI.

    Cases: ``R = 1`` (must be 1), the chapter's table, ten classes, an uneven split and
    ``C = 2`` (must be 1 for every ``R``).
    """
    return run_cases("minority_norm_ratio", student,
                     lambda **kw: seli_step_closed_form(**kw)["w_norm_ratio"], _ratio_cases(), atol=1e-8,
                     forbid=(seli_step_closed_form,))


def _ce_cases():
    g = torch.Generator().manual_seed(3)
    yield {"logits": torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 3.0]], dtype=torch.float64),
           "labels": torch.tensor([0, 2])}
    yield {"logits": torch.randn(8, 4, generator=g, dtype=torch.float64), "labels": torch.randint(0, 4, (8,), generator=g)}
    # far past the point where exp underflows: log CE is about -800, CE itself is 0.0 in float64
    yield {"logits": torch.tensor([[800.0, 0.0, 0.0], [0.0, 900.0, 0.0]], dtype=torch.float64),
           "labels": torch.tensor([0, 1])}


def check_log_mean_ce(student) -> CheckResult:
    """Check ``student(logits, labels) -> scalar`` equals ``log(mean CE)`` without underflow.

    Cases: a hand-sized batch, random logits, and logits so separated that the mean
    CE underflows to 0 (``torch.log(F.cross_entropy(...))`` gives ``-inf`` there).
    """
    return run_cases("log_mean_ce", student, lambda logits, labels: log_mean_ce(logits, labels), _ce_cases(),
                     atol=1e-8, rtol=1e-10, forbid=(log_mean_ce,))


def _minorities_collapsed(counts, lam: float) -> bool:
    """Do the last two classifiers of the exact ridge optimum coincide (or vanish) at ``lam``?"""
    w = ridge_optimum(counts, lam).classifiers                     # (C, C - 1)
    return bool(np.linalg.norm(w[2:], axis=1).min() == 0 or cosine_matrix(w)[2, 3] > 1 - 1e-6)


def check_collapse_lambda(student, factor: float = 1.25) -> CheckResult:
    """Check ``student(counts) -> lambda``, the smallest ridge at which the two minorities collapse.

    For counts ``(50, 50, 5, 5)`` and ``(500, 500, 5, 5)`` the exact ridge optimum
    (:func:`ncbook.ufm.ridge_optimum`) must have coinciding minority classifiers at the returned
    ``lambda`` and distinct ones at ``lambda / factor``: the threshold to within ``factor``.
    """
    name = "collapse_lambda"
    for counts in ([50, 50, 5, 5], [500, 500, 5, 5]):
        if problem := _signature_problem(student, {"counts": counts}):
            return CheckResult(name, False, problem)
        try:
            lam = float(student(counts=counts))
        except NotImplementedError:
            return CheckResult(name, False, "not implemented yet (the function raised NotImplementedError).")
        if not np.isfinite(lam) or lam <= 0:
            return CheckResult(name, False, f"for counts {counts} expected a positive lambda, got {lam}.")
        if not _minorities_collapsed(counts, lam):
            return CheckResult(name, False, f"for counts {counts} got lambda = {lam:.3g}: the minority classifiers "
                                            "do not coincide there (lambda too small).")
        if _minorities_collapsed(counts, lam / factor):
            return CheckResult(name, False, f"for counts {counts} got lambda = {lam:.3g}: they already coincide at "
                                            f"lambda / {factor} (lambda too large).")
    return CheckResult(name, True, f"both thresholds found to within a factor {factor}.")
