"""Autograder checks: one ``check_<name>(student_function)`` per coding exercise.

Each check calls the student's function on its public cases, then compares the results with
the reference implementation in :mod:`ncbook` and returns a :class:`CheckResult`: truthy when
passed; its message names the failing input, expected and received values (matrices on aligned
lines, infinities and NaN compared by position), a parameter list that does not match the
exercise, or a function that merely calls the :mod:`ncbook` function the exercise asks for.
``check_x(f).assert_passed()`` raises ``AssertionError`` with that message. A stub that raises
``NotImplementedError`` is reported as "not implemented yet".

Every check is built from one :class:`Exercise` spec (signature, case generator, reference,
comparison), listed in :data:`EXERCISES`; the graded assignments (``tools/assignments.py``) draw
each student's hidden cases of the same spec from the instructor's secret and the student's key,
and call the student's functions in a sandbox whose package has none of this module but
``_harvest`` (calling a function on cases, packing the numbers): the numbers are judged outside
the submission's process. How to declare a new exercise: the docstring of ``ncbook.exercises._core``.
"""

from ._core import CheckResult
from ._core import Exercise
from ._core import run_cases
from . import _contrastive, _dgp, _margins, _primer, _reweighting, _seli
from ._contrastive import check_exp_collapse_point
from ._contrastive import check_multiset_risk
from ._contrastive import check_one_angle_cosine
from ._contrastive import check_scl_collapse_k1
from ._dgp import check_laplacian_status
from ._dgp import check_superclass_epsilon
from ._dgp import check_three_point_shift
from ._dgp import check_xclr_status
from ._margins import check_bound_ratio
from ._margins import check_expected_batch_statistics
from ._margins import check_half_pull_distance
from ._margins import check_relative_spread_margins
from ._primer import check_nc1
from ._primer import check_nc1_label_noise
from ._primer import check_nc1_per_class
from ._primer import check_nc2
from ._primer import check_nc2_shifted
from ._primer import check_zero_threshold
from ._reweighting import check_balanced_batch_loss
from ._reweighting import check_cb_weight_ratio
from ._reweighting import check_ema_inverse_weights
from ._reweighting import check_expected_batch_factor
from ._reweighting import check_macro_factors
from ._reweighting import check_official_coefficients
from ._seli import check_collapse_lambda
from ._seli import check_etf_cost_ratio
from ._seli import check_log_mean_ce
from ._seli import check_minority_norm_ratio_limit
from ._seli import check_minority_orthogonal_ratio
from ._seli import check_step_multipliers

EXERCISES = {spec.name: spec for module in (_primer, _seli, _contrastive, _dgp, _reweighting, _margins)
             for spec in module.EXERCISES}
"""Every coding exercise's spec, by name: ``check_<name>`` is its public check."""

__all__ = [
    "CheckResult",
    "EXERCISES",
    "Exercise",
    "check_exp_collapse_point",
    "check_multiset_risk",
    "check_one_angle_cosine",
    "check_scl_collapse_k1",
    "check_bound_ratio",
    "check_expected_batch_statistics",
    "check_half_pull_distance",
    "check_relative_spread_margins",
    "check_nc1",
    "check_nc1_label_noise",
    "check_nc1_per_class",
    "check_nc2",
    "check_nc2_shifted",
    "check_zero_threshold",
    "check_balanced_batch_loss",
    "check_cb_weight_ratio",
    "check_ema_inverse_weights",
    "check_expected_batch_factor",
    "check_macro_factors",
    "check_official_coefficients",
    "check_collapse_lambda",
    "check_etf_cost_ratio",
    "check_log_mean_ce",
    "check_minority_norm_ratio_limit",
    "check_minority_orthogonal_ratio",
    "check_step_multipliers",
    "check_laplacian_status",
    "check_superclass_epsilon",
    "check_three_point_shift",
    "check_xclr_status",
    "run_cases",
]
