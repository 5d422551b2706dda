"""The contrastive risk over class-mean Gram matrices: value, gradient and row Hessians.

Private module: the classes trust their inputs (validated by the public functions).

Letters (the book's notation): ``C`` classes, ``k`` negatives, ``T`` multisets ``nu``, ``tau`` the
temperature (the code's ``t``), ``pi_y`` the class probabilities (the code's ``lam``). The Gram matrix
``A`` (C, C) has a unit diagonal; row ``y`` of the risk only depends on ``A[y, c]``, ``c != y``,
through ``E[y, c] = exp((A[y, c] - 1) / tau)`` (``E[y, y] = 1``: a collision is a constant).

For one anchor class ``y`` the term is ``sum_nu w_nu(y) h(1 + sum_c nu_c E[y, c])`` with
``h = log`` (InfoNCE) or ``h(x) = x - 1`` (sum of exponentials, ``psi(g) = sum_j exp(g_j / tau)``).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ._multisets import _negative_distribution, anchor_tables

PSIS = ("infonce", "exp")


def _exp_gram(a: np.ndarray, t: float) -> np.ndarray:
    e = np.exp((a - 1.0) / t)
    np.fill_diagonal(e, 1.0)
    return e


class MultisetRisk:
    """InfoNCE risk averaged exactly over the multisets of ``k`` negatives.

    The work is a few passes over the ``(T, C)`` table ``D[nu, y] = 1 + sum_c nu_c E[y, c]``, which
    is kept for the last ``A`` seen (a Newton step asks for the value, gradient and Hessian at the
    same point). A multiset holds at most ``k`` distinct classes, so the matrix of count products
    ``nu_a nu_b`` (T, C^2) that gives the row Hessians is sparse (``<= k^2`` entries a row): no dense
    (T, C^2) array is formed.
    """

    def __init__(self, lam: np.ndarray, k: int, setting: str, t: float):
        self.lam, self.k, self.t = lam, k, t
        counts, weights = anchor_tables(lam, k, setting)
        self.cf = counts.astype(np.float64)  # (T, C)
        self.lw = weights * lam[None, :]  # (T, C): pi_y * w_nu(y)
        self._nn = None
        self._last = (None, None, None)
        self._value = None

    def _d(self, a):
        last_a, e, d = self._last
        if last_a is None or not np.array_equal(last_a, a):
            e = _exp_gram(a, self.t)
            d = self.cf @ e.T  # (T, C): column y is the anchor class
            d += 1.0
            self._last = (a.copy(), e, d)
            self._value = None
        return e, d

    def value(self, a: np.ndarray) -> float:
        _, d = self._d(a)
        if self._value is None:
            self._value = float(np.sum(self.lw * np.log(d)))  # pairwise summation: accurate to round-off
        return self._value

    def grad(self, a: np.ndarray):
        e, d = self._d(a)
        value = self.value(a)
        ge = (self.cf.T @ (self.lw / d)).T  # (C, C): d value / d E[y, c]
        p = ge * e / self.t
        np.fill_diagonal(p, 0.0)
        return value, p

    def _pairs(self):
        """Sparse (C^2, T) matrix of the count products ``nu_a nu_b`` (built once)."""
        if self._nn is None:
            cf = sparse.csr_matrix(self.cf)  # <= k entries a row
            c = cf.shape[1]
            rows, cols, vals = [], [], []
            per_row = np.diff(cf.indptr)
            for width in np.unique(per_row):
                sel = np.flatnonzero(per_row == width)
                pos = cf.indptr[sel][:, None] + np.arange(width)[None, :]  # (R, width)
                ci, cv = cf.indices[pos], cf.data[pos]
                ia, ib = (g.ravel() for g in np.meshgrid(np.arange(width), np.arange(width), indexing="ij"))
                rows.append(np.repeat(sel, width * width))
                cols.append((ci[:, ia] * c + ci[:, ib]).ravel())
                vals.append((cv[:, ia] * cv[:, ib]).ravel())
            self._nn = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(cols), np.concatenate(rows))),
                                         shape=(c * c, cf.shape[0]))
        return self._nn

    def hess(self, a: np.ndarray) -> np.ndarray:
        """Row Hessians ``H[y] = d^2 (row y term) / dA[y, :]^2``, shape (C, C, C)."""
        e, d = self._d(a)
        c = e.shape[0]
        q = self.lw / d
        ge = (self.cf.T @ q).T
        q /= d
        q *= -1.0  # h'' = -1 / D^2
        hq = np.asarray(self._pairs() @ q).T.reshape(c, c, c)  # (C^2, C) -> (C, C, C)
        h = hq * e[:, :, None] * e[:, None, :] / self.t**2
        idx = np.arange(c)
        h[:, idx, idx] += ge * e / self.t**2
        return h


class ExpRisk:
    """Sum-of-exponentials risk, ``psi(g) = sum_j exp(g_j / tau)``: linear in the counts, so
    the average over negatives is ``k sum_c q(c|y) E[y, c]`` for every ``k``."""

    def __init__(self, lam: np.ndarray, k: int, setting: str, t: float):
        self.t = t
        self.coef = float(k) * lam[:, None] * _negative_distribution(lam, setting)  # (C, C)

    def value(self, a):
        return float(np.sum(self.coef * _exp_gram(a, self.t)))

    def grad(self, a):
        e = _exp_gram(a, self.t)
        p = self.coef * e / self.t
        np.fill_diagonal(p, 0.0)
        return float(np.sum(self.coef * e)), p

    def hess(self, a):
        e = _exp_gram(a, self.t)
        c = e.shape[0]
        h = np.zeros((c, c, c))
        idx = np.arange(c)
        h[:, idx, idx] = self.coef * e / self.t**2
        return h


class LargeKRisk:
    """Large-``k`` InfoNCE limit (``log k`` dropped): ``sum_y pi_y log sum_c q(c|y) E[y, c]``."""

    def __init__(self, lam: np.ndarray, setting: str, t: float):
        self.lam, self.t = lam, t
        self.q = _negative_distribution(lam, setting)

    def _z(self, a):
        e = _exp_gram(a, self.t)
        qe = self.q * e
        return e, qe, qe.sum(axis=1)

    def value(self, a):
        _, _, z = self._z(a)
        return float(self.lam @ np.log(z))

    def grad(self, a):
        _, qe, z = self._z(a)
        p = self.lam[:, None] * qe / z[:, None] / self.t
        np.fill_diagonal(p, 0.0)
        return float(self.lam @ np.log(z)), p

    def hess(self, a):
        _, qe, z = self._z(a)
        pi = qe / z[:, None]  # (C, C)
        c = pi.shape[0]
        h = -pi[:, :, None] * pi[:, None, :]
        idx = np.arange(c)
        h[:, idx, idx] += pi
        return h * (self.lam / self.t**2)[:, None, None]


def make_risk(lam, k, setting, t, psi, objective):
    """Build the private risk object for ``objective`` in ``{"multiset", "large_k"}``."""
    if psi == "exp":
        if objective == "large_k":
            raise ValueError("psi='exp' has a closed form for every k; use method='exact' instead of 'large_k'.")
        return ExpRisk(lam, k, setting, t)
    if objective == "large_k":
        return LargeKRisk(lam, setting, t)
    return MultisetRisk(lam, k, setting, t)
