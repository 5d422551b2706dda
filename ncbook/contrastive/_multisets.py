"""Negative-sampling distributions and the multiset reduction of the contrastive risk.

Letters (the book's notation): ``C`` classes, ``k`` negatives per anchor, ``T`` multisets of size ``k``,
``pi_c`` the class probabilities (keyword ``class_probs``; the paper writes ``lambda_c``).

With ``k`` i.i.d. negatives and a loss ``psi`` that is symmetric in its arguments, the
expectation over the ``C**k`` ordered class tuples collapses exactly onto the
``binom(C + k - 1, k)`` multisets ``nu = (nu_1, ..., nu_C)``, ``|nu| = k``, each weighted by the
multinomial probability ``k! / prod_c nu_c! * prod_c q_c^{nu_c}``.

References
----------
Nguyen, Aeron, Brown, Ishwar, "Optimal Representations for Generalized Contrastive Learning
with Imbalanced Datasets", arXiv:2605.11291 (2026), Section 3 (the risk over class means).
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
from scipy.special import gammaln

from .._validation import check_in, check_int, check_probabilities

__all__ = ["SETTINGS", "negative_distribution", "negative_multisets", "num_multiset_terms"]

SETTINGS = ("ucl", "scl")


def _check_k(k) -> int:
    return check_int("k (negatives per anchor)", k, 1)


def negative_distribution(class_probs, *, setting: str = "ucl") -> np.ndarray:
    r"""Class distribution ``q(c | y)`` of one negative given the anchor's class ``y``.

    UCL (unsupervised) draws negatives from the data, so ``q(c | y) = pi_c`` (the anchor's
    own class may appear: a *collision*). SCL (supervised) draws them from the other classes,
    ``q(c | y) = pi_c / (1 - pi_y)`` for ``c != y``.

    Parameters
    ----------
    class_probs : array-like of shape (C,)
        Class probabilities ``pi`` on the simplex, all positive.
    setting : {"ucl", "scl"}

    Returns
    -------
    ndarray of shape (C, C), float64; row ``y`` is ``q(. | y)``.

    Raises
    ------
    ValueError
        If ``class_probs`` is not a positive probability vector, or SCL is asked with one class.

    Examples
    --------
    >>> negative_distribution([0.5, 0.25, 0.25], setting="scl")[0].tolist()   # an anchor of class 0
    [0.0, 0.5, 0.5]
    """
    lam = check_probabilities(class_probs)
    check_in("setting", setting, SETTINGS)
    if setting == "scl" and lam.size < 2:
        raise ValueError("setting='scl' needs at least 2 classes (negatives come from other classes); got 1.")
    return _negative_distribution(lam, setting)


def _negative_distribution(lam: np.ndarray, setting: str) -> np.ndarray:
    """:func:`negative_distribution` for a validated ``lam`` (private: no check at another precision)."""
    c = lam.size
    if setting == "ucl":
        return np.tile(lam, (c, 1))
    q = np.tile(lam, (c, 1))
    np.fill_diagonal(q, 0.0)
    return q / (1.0 - lam)[:, None]


def num_multiset_terms(num_classes: int, k: int, *, setting: str = "ucl") -> int:
    """Number of terms ``C * binom(C + k - 1, k)`` (UCL) or ``C * binom(C + k - 2, k)`` (SCL) of the exact risk.

    Parameters
    ----------
    num_classes : int
        ``C >= 1`` (UCL) or ``>= 2`` (SCL).
    k : int
        Negatives per anchor, ``>= 1``.
    setting : {"ucl", "scl"}

    Returns
    -------
    int

    Raises
    ------
    ValueError, TypeError
        For a count that is not an integer in its range, or an unknown setting.

    Examples
    --------
    >>> num_multiset_terms(20, 4)   # the C = 20, k = 4 program
    177100
    """
    k = _check_k(k)
    check_in("setting", setting, SETTINGS)
    c = check_int("num_classes", num_classes, 1 if setting == "ucl" else 2)
    pool = c if setting == "ucl" else c - 1
    return c * comb(pool + k - 1, k)


def negative_multisets(neg_probs, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""All multisets of ``k`` negatives over ``C`` classes, with their multinomial weights.

    Parameters
    ----------
    neg_probs : array-like of shape (C,)
        Probability ``q_c`` of each class for one negative (zeros allowed: those classes never appear).
    k : int
        Number of negatives, ``>= 1``.

    Returns
    -------
    counts : ndarray of shape (T, C), int64
        Each row is a multiset ``nu`` with ``nu.sum() == k``; ``T = binom(C + k - 1, k)``.
    weights : ndarray of shape (T,), float64
        ``k! / prod_c nu_c! * prod_c q_c^{nu_c}``; they sum to 1.

    Raises
    ------
    ValueError
        If ``neg_probs`` is not a probability vector or ``k < 1``.

    Examples
    --------
    >>> counts, w = negative_multisets([0.5, 0.5], 2)
    >>> counts.tolist(), w.tolist()
    ([[2, 0], [1, 1], [0, 2]], [0.25, 0.5, 0.25])
    """
    q = check_probabilities(neg_probs, name="neg_probs", strictly_positive=False)
    k = _check_k(k)
    return _multisets(q, k)


def _count_matrix(num: int, k: int) -> np.ndarray:
    combos = np.array(list(itertools.combinations_with_replacement(range(num), k)), dtype=np.int64)
    counts = np.zeros((combos.shape[0], num), dtype=np.int64)
    rows = np.repeat(np.arange(combos.shape[0]), k)
    np.add.at(counts, (rows, combos.ravel()), 1)
    return counts


def _log_multinomial(counts: np.ndarray, k: int) -> np.ndarray:
    log_fact = gammaln(np.arange(k + 1) + 1.0)  # counts are <= k: look the factorials up
    return log_fact[k] - log_fact[counts].sum(axis=1)


def _multisets(q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    counts = _count_matrix(q.size, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        logq = np.log(q)
        logp = _log_multinomial(counts, k) + np.where(counts > 0, counts * logq, 0.0).sum(axis=1)
    return counts, np.exp(logp)


def anchor_tables(lam: np.ndarray, k: int, setting: str) -> tuple[np.ndarray, np.ndarray]:
    """Counts ``(T, C)`` over all classes and per-anchor weights ``(T, C)`` (column ``y``).

    Private: trusts its inputs. For SCL, multisets containing the anchor's class get weight 0.
    """
    c = lam.size
    counts = _count_matrix(c, k)
    q = _negative_distribution(lam, setting)  # (C, C)
    logq = np.log(np.where(q > 0, q, 1.0))  # the SCL diagonal (q = 0) is masked below
    weights = np.exp(_log_multinomial(counts, k)[:, None] + counts @ logq.T)  # (T, C), one product
    if setting == "scl":
        weights[counts > 0] = 0.0  # column y: a multiset holding the anchor's class has probability 0
    return counts, weights
