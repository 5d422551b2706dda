"""One verdict rule per kind of claim, used by a chapter's prose and by its claim record alike.

A chapter says "the method beats CE" in a sentence and records the same claim for the Reproduction
page. Both read one :class:`Verdict`, built here by the rule of that kind of claim, so a sentence can
never say more (or less) than its record:

- :func:`compare_means`: a comparison of two methods over seeds. Their mean difference (the *gap*)
  is resolved when it exceeds twice the largest seed standard deviation among the methods compared
  (the *noise*); otherwise the two are level. Outcomes ``"above"``, ``"level"``, ``"below"``.
- :func:`matches`: a value against a closed form or an exact solve, within a tolerance relative to
  the reference's scale (``atol + rtol * |reference|``). Outcomes ``"match"``, ``"differ"``.
- :func:`exceeds`: a measurement against a threshold stated in advance (a bound, chance). Outcomes
  ``"above"``, ``"below"`` (equal counts as not above). The range of several single runs (one seed each,
  one setting changed at a time) is judged by :func:`exceeds` against :func:`range_noise`, the range that
  as many runs differing only in their seed exceed by chance.

Each verdict knows the :func:`ncbook.book.claim_verdict` tolerance that reproduces it
(:meth:`Verdict.tolerance`), and a test checks that both give the same answer on random inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validation import check_nonnegative

__all__ = ["Verdict", "compare_means", "matches", "exceeds", "range_noise", "seed_noise"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of one claim's rule, with the numbers it was decided on.

    Attributes
    ----------
    rule : {"compare_means", "matches", "exceeds"}
    outcome : str
        ``"above"``/``"level"``/``"below"`` (compare_means), ``"match"``/``"differ"`` (matches),
        ``"above"``/``"below"`` (exceeds); ``"undefined"`` when a number it needs is not finite.
    value : float
        What the rule reads: the gap (compare_means), the absolute error (matches), the measurement
        (exceeds).
    threshold : float
        The noise (compare_means), the allowed error (matches), the threshold (exceeds).
    """

    rule: str
    outcome: str
    value: float
    threshold: float

    def word(self, words: Sequence[str]) -> str:
        """The word for the outcome: ``words`` lists one per outcome, in the order of the rule's outcomes.

        compare_means: (above, level, below), e.g. ``("beats", "ties with", "trails")``; matches: (match,
        differ); exceeds: (above, below). An undefined outcome reads "cannot be judged (not finite)".

        Examples
        --------
        >>> compare_means([0.9, 0.91], [0.8, 0.81], noise=0.02).word(("beats", "ties with", "trails"))
        'beats'
        """
        order = {"compare_means": ("above", "level", "below"), "matches": ("match", "differ"),
                 "exceeds": ("above", "below")}[self.rule]
        if len(words) != len(order):
            raise ValueError(f"words must give one word per outcome {order}; got {list(words)!r}.")
        if self.outcome == "undefined":
            return "cannot be judged (a value is not finite)"
        return words[order.index(self.outcome)]

    @property
    def holds(self) -> bool:
        """True for the outcome a claim of this kind asserts: above (compare_means, exceeds), match."""
        return self.outcome in ("above", "match")

    def tolerance(self) -> dict:
        """``(ours, tolerance)`` for :func:`ncbook.book.record_claim` that gives the same verdict.

        Returns
        -------
        dict
            ``{"ours": value, "tolerance": {...}}``: for compare_means the gap with ``{"above": noise}``,
            for matches the error with ``{"below": allowed}`` (inclusive: the error is stored nudged by
            nothing, so an error equal to the allowance is recorded as ``"between"`` 0 and allowed), for
            exceeds the value with ``{"above": threshold}``.
        """
        if self.rule == "matches":
            return {"ours": self.value, "tolerance": {"between": [0.0, self.threshold]}}
        return {"ours": self.value, "tolerance": {"above": self.threshold}}


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def seed_noise(spreads: Sequence[float]) -> float:
    """The resolution of a comparison over seeds: twice the largest seed standard deviation.

    Parameters
    ----------
    spreads : sequence of float
        The seed standard deviations of every method compared (of the metric compared).

    Examples
    --------
    >>> seed_noise([0.01, 0.004, 0.02])
    0.04
    """
    values = [float(s) for s in spreads]
    if not values:
        raise ValueError("spreads must hold the seed standard deviation of at least one method; got none.")
    return 2.0 * max(values)


def range_noise(spreads: Sequence[float], count: int, *, level: float = 0.95) -> float:
    """The range that ``count`` single runs differing only in their seed exceed by chance ``1 - level`` of the time.

    ``count`` independent draws with standard deviation ``sigma`` (the largest of ``spreads``) have a
    range, largest minus smallest, whose ``level`` quantile is ``q * sigma``, with ``q`` the quantile of
    the range of ``count`` standard normal draws (the studentized range with infinitely many degrees of
    freedom: 2.77 for two runs, 3.86 for five at ``level = 0.95``). A range of single runs with different
    settings below it is within what the seed alone produces. Twice the seed standard deviation, the
    rule for two means over seeds, would be exceeded by the range of five seeds alone 62% of the time.

    Parameters
    ----------
    spreads : sequence of float
        Seed standard deviations of the metric (the largest is used, as in :func:`seed_noise`).
    count : int, >= 2
        The number of single runs whose range is judged.
    level : float in (0, 1)
        The quantile (default 0.95: exceeded by chance 5% of the time).

    Raises
    ------
    ValueError
        For no spreads, a negative or non-finite spread, ``count < 2`` or ``level`` outside (0, 1).

    References
    ----------
    Tippett, "On the extreme individuals and the range of samples taken from a normal population",
    Biometrika 17 (1925): the distribution of the range of normal samples.

    Examples
    --------
    >>> round(range_noise([0.3, 0.33], 5), 3)
    1.273
    >>> round(range_noise([1.0], 2) / 2 ** 0.5, 3)    # two runs: their difference has sd sqrt(2)
    1.96
    """
    from scipy.stats import studentized_range

    values = [check_nonnegative("spreads", float(v)) for v in spreads]
    if not values:
        raise ValueError("spreads must hold the seed standard deviation of at least one method; got none.")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 2:
        raise ValueError(f"count must be an integer >= 2 (a range needs two runs); got {count!r}.")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be a probability in (0, 1); got {level!r}.")
    return float(studentized_range.ppf(level, int(count), np.inf)) * max(values)


def compare_means(a: Sequence[float], b: Sequence[float], *, noise: float) -> Verdict:
    """Method ``a`` against method ``b`` over seeds: above, level or below, by more than ``noise``.

    Parameters
    ----------
    a, b : sequence of float
        The metric of each seed (higher is better: pass negated values for a lower-is-better metric).
    noise : float, >= 0
        Usually :func:`seed_noise` of every method compared.

    Returns
    -------
    Verdict
        ``value`` the gap ``mean(a) - mean(b)``; "above" when it exceeds ``noise``, "below" when it is
        under ``-noise``, else "level".

    Examples
    --------
    >>> compare_means([0.80, 0.82], [0.79, 0.80], noise=0.04).outcome
    'level'
    """
    noise = check_nonnegative("noise", noise)
    gap = float(np.mean(np.asarray(a, dtype=np.float64)) - np.mean(np.asarray(b, dtype=np.float64)))
    if not _finite(gap, noise):
        return Verdict("compare_means", "undefined", gap, noise)
    outcome = "above" if gap > noise else "below" if gap < -noise else "level"
    return Verdict("compare_means", outcome, gap, noise)


def matches(value, reference, *, rtol: float = 1e-6, atol: float = 0.0) -> Verdict:
    """A computed value against a closed form or exact solve: within ``atol + rtol * |reference|``.

    Arrays are compared entry by entry; the verdict reads the largest error against the allowance of
    the largest reference entry (the scale of the value).

    Examples
    --------
    >>> matches(0.70801, 0.708, rtol=1e-3).outcome
    'match'
    """
    v = np.asarray(value, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if v.shape != r.shape:
        raise ValueError(f"value and reference must have the same shape; got {v.shape} and {r.shape}.")
    allowed = float(check_nonnegative("atol", atol) + check_nonnegative("rtol", rtol) * np.max(np.abs(r), initial=0.0))
    error = float(np.max(np.abs(v - r), initial=0.0)) if v.size else 0.0
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(r))):
        return Verdict("matches", "undefined", math.nan, allowed)
    return Verdict("matches", "match" if error <= allowed else "differ", error, allowed)


def exceeds(value: float, threshold: float) -> Verdict:
    """A measurement against a threshold stated in advance (a bound, chance): above, or not.

    Examples
    --------
    >>> exceeds(0.35, 0.1).outcome
    'above'
    """
    value, threshold = float(value), float(threshold)
    if not _finite(value, threshold):
        return Verdict("exceeds", "undefined", value, threshold)
    return Verdict("exceeds", "above" if value > threshold else "below", value, threshold)
