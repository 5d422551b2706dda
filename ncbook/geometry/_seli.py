r"""The SEL matrix and the SELI geometry of imbalanced neural collapse.

Letters (the book's notation): ``C`` classes, ``n`` samples, ``n_c`` samples of class ``c``,
``D = diag(n_c)``, ``P = I_C - 11^T/C`` (the centring projector), ``Y`` the one-hot labels (one row
per sample, ``(n, C)``; the paper's ``Y`` is its ``C x n`` transpose), ``Zhat = Y P`` the simplex-encoded
labels. STEP imbalance: ``C_maj`` (``num_majority``) classes with ``R`` times as many samples as each of the
``C_min`` (``num_minority``) minority classes.

Shapes follow PyTorch except where the paper's own object is returned: :func:`sel_matrix` returns the
paper's ``(C, n)`` SEL matrix (one column per sample), ``Zhat^T`` in the book's orientation, while
classifiers and class means are ``(C, C - 1)`` (one row per class).

References
----------
Thrampoulidis, Kini, Vakilian, Behnia, "Imbalance Trouble: Revisiting
Neural-Collapse Geometry", NeurIPS 2022, arXiv:2208.05512 (Definitions 1-2,
Theorem 1, Lemma/Section 3 closed forms for STEP imbalance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_array, as_float64, check_counts, check_in, check_int, check_labels, check_matrix, check_positive
from ._etf import _frobenius_distance, etf_gram

__all__ = [
    "SELIGeometry",
    "sel_matrix",
    "seli_geometry",
    "seli_distances",
    "seli_step_closed_form",
    "seli_step_limits",
]

_METHODS = ("class", "svd")


def sel_matrix(labels, num_classes: int) -> np.ndarray:
    r"""The simplex-encoded-labels (SEL) matrix in the paper's orientation, :math:`\hat Z^\top = P Y^\top`.

    Column ``i`` is :math:`e_{y_i} - \frac1C 1`: entry ``1 - 1/C`` on the true class
    and ``-1/C`` elsewhere.

    Parameters
    ----------
    labels : array-like or Tensor of shape (n,), int
        Class of each sample, in ``[0, num_classes)``.
    num_classes : int
        ``C >= 2``.

    Returns
    -------
    ndarray of shape (C, n), float64
        The paper's shape (one column per sample; the book's ``Zhat = Y P`` is its transpose); the
        logits ``W H^T`` of code with ``W (C, d)`` and ``H (n, d)`` have this shape too.

    Raises
    ------
    ValueError
        If ``num_classes < 2`` or a label lies outside ``[0, num_classes)``.

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Definition 1.

    Examples
    --------
    >>> sel_matrix([0, 2], 3).round(3)
    array([[ 0.667, -0.333],
           [-0.333, -0.333],
           [-0.333,  0.667]])
    """
    c = check_int("num_classes", num_classes, 2)
    y = check_labels(labels, c).cpu().numpy()
    z = np.full((c, y.size), -1.0 / c)
    z[y, np.arange(y.size)] += 1.0
    return z


@dataclass(frozen=True)
class SELIGeometry:
    """The SELI geometry of given class counts (class level).

    Attributes
    ----------
    counts : ndarray of shape (C,), int64
    classifier_gram : ndarray of shape (C, C)
        :math:`G_W = (PDP)^{1/2}`.
    mean_gram : ndarray of shape (C, C)
        :math:`G_M = (PDP)^{+1/2}` (pseudo-inverse square root), the Gram of the
        collapsed (uncentred) embeddings of each class.
    classifiers : ndarray of shape (C, C - 1)
        Rows ``w_c`` with ``classifiers @ classifiers.T = classifier_gram``.
    means : ndarray of shape (C, C - 1)
        Rows ``mu_c`` with ``means @ means.T = mean_gram`` and
        ``classifiers @ means.T = P`` (the SEL matrix at class level).
    singular_values : ndarray of shape (C - 1,)
        Non-zero singular values of the sample-level SEL matrix, descending
        (square roots of the non-zero eigenvalues of ``PDP``).
    method : str
        ``"class"`` or ``"svd"``: the route that produced it.
    """

    counts: np.ndarray
    classifier_gram: np.ndarray
    mean_gram: np.ndarray
    classifiers: np.ndarray
    means: np.ndarray
    singular_values: np.ndarray
    method: str

    @property
    def num_classes(self) -> int:
        return int(self.counts.size)

    @property
    def logits(self) -> np.ndarray:
        """``classifiers @ means.T`` of shape (C, C): equals ``P``."""
        return self.classifiers @ self.means.T


def _class_route(counts: np.ndarray) -> tuple:
    c = counts.size
    p = np.eye(c) - np.ones((c, c)) / c
    pdp = p @ np.diag(counts.astype(np.float64)) @ p
    vals, vecs = np.linalg.eigh((pdp + pdp.T) / 2)
    vals, vecs = vals[1:][::-1], vecs[:, 1:][:, ::-1]  # drop the zero eigenvalue (direction 1)
    w = vecs * vals ** 0.25  # (C, C-1)
    m = vecs * vals ** -0.25  # (C, C-1)
    return w, m, np.sqrt(vals)


def _svd_route(counts: np.ndarray) -> tuple:
    c = counts.size
    labels = np.repeat(np.arange(c), counts)
    z = sel_matrix(labels, c)  # (C, n)
    v, s, ut = np.linalg.svd(z, full_matrices=False)
    v, s, ut = v[:, : c - 1], s[: c - 1], ut[: c - 1]  # rank C-1
    w = v * np.sqrt(s)  # (C, C-1): W = V Lambda^{1/2}
    h = ut.T * np.sqrt(s)  # (n, C-1): H^T = Lambda^{1/2} U^T
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return w, h[first], s  # every sample of a class has the same row


def seli_geometry(counts, *, method: str = "class") -> SELIGeometry:
    r"""The SELI geometry (simplex-encoded-labels interpolation) of class counts.

    SELI is the geometry that the unconstrained-features model with cross-entropy
    reaches at vanishing regularisation: with the thin SVD :math:`\hat Z = U\Lambda V^\top` of the
    simplex-encoded labels (``U`` ``(n, C-1)``, ``V`` ``(C, C-1)``), :math:`WW^\top \propto V\Lambda V^\top`,
    :math:`HH^\top \propto U\Lambda U^\top` and :math:`HW^\top \propto \hat Z` (the paper, in its
    orientation, writes :math:`\hat Z = V\Lambda U^\top`, :math:`H^\top H` and :math:`WH`).
    At class level, with :math:`D = \mathrm{diag}(n_c)`,

    .. math:: G_W = (PDP)^{1/2}, \qquad G_M = (PDP)^{+1/2}, \qquad G_W G_M = P.

    Parameters
    ----------
    counts : array-like of shape (C,), int
        Samples per class, all ``>= 1``, ``C >= 2``.
    method : {"class", "svd"}
        ``"class"`` diagonalises the ``C x C`` matrix ``PDP``; ``"svd"`` builds the
        ``C x n`` SEL matrix and takes its SVD (the paper's definition). The two
        give the same Grams to about 1e-12 (the factors differ by a rotation).

    Returns
    -------
    SELIGeometry
        Scaled by the counts themselves (no normalisation by ``n_min``); Grams are
        compared up to scale.

    Raises
    ------
    ValueError
        If ``counts`` has an empty, negative or non-integer entry, fewer than two
        classes, or ``method`` is unknown.

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Definition 2 and Theorem 1.

    Examples
    --------
    >>> g = seli_geometry([1, 1, 1])
    >>> bool(np.allclose(g.classifier_gram / g.classifier_gram[0, 0], etf_gram(3)))
    True
    """
    counts = check_counts(counts, min_classes=2)
    check_in("method", method, _METHODS)
    w, m, s = _class_route(counts) if method == "class" else _svd_route(counts)
    return SELIGeometry(
        counts=counts, classifier_gram=w @ w.T, mean_gram=m @ m.T, classifiers=w, means=m,
        singular_values=s, method=method,
    )


def seli_distances(classifiers, means, counts) -> dict:
    """Scale-free distances of a classifier and of class means to SELI and to the ETF.

    Parameters
    ----------
    classifiers : array-like or Tensor of shape (C, d)
        Rows ``w_c`` (PyTorch's ``classifier.weight``).
    means : array-like or Tensor of shape (C, d)
        Class means of the features, centred as the caller chooses. SELI
        predicts uncentred means summing to zero; for a network with a bias or a
        non-centred last layer, subtract the *unweighted* average of the class
        means (the sample-weighted global mean is not zero under imbalance).
    counts : array-like of shape (C,)
        Training samples per class.

    Returns
    -------
    dict of float
        ``w_seli``, ``w_etf``, ``m_seli``, ``m_etf``: :func:`frobenius_distance`
        between the Gram of the rows and the SELI or simplex-ETF Gram.

    Raises
    ------
    ValueError
        If shapes disagree with ``len(counts)`` or a matrix is zero.

    Examples
    --------
    >>> etf = np.eye(3) - 1 / 3
    >>> {k: round(v, 12) for k, v in seli_distances(etf, etf, [5, 5, 5]).items()}  # balanced: SELI is the ETF
    {'w_seli': 0.0, 'w_etf': 0.0, 'm_seli': 0.0, 'm_etf': 0.0}
    """
    counts = check_counts(counts, min_classes=2)
    c = counts.size
    w = check_array("classifiers", classifiers, shape=(c, None))
    m = check_array("means", means, shape=(c, None))
    geo = seli_geometry(counts)
    etf = etf_gram(c)
    gw, gm = w @ w.T, m @ m.T
    return {
        "w_seli": _frobenius_distance(gw, geo.classifier_gram, "classifiers", "the reference Gram"),
        "w_etf": _frobenius_distance(gw, etf, "classifiers", "the reference Gram"),
        "m_seli": _frobenius_distance(gm, geo.mean_gram, "means", "the reference Gram"),
        "m_etf": _frobenius_distance(gm, etf, "means", "the reference Gram"),
    }


def _check_groups(num_majority, num_minority) -> tuple[int, int]:
    return check_int("num_majority", num_majority, 1), check_int("num_minority", num_minority, 1)


def _step_entries(a_maj, a_min, b, k_maj, k_min) -> dict:
    """Entries of a STEP Gram ``a_maj, a_min`` on the within-group part, ``b`` on the
    group-mean direction (eigenvalue ``mu``); see :func:`seli_step_closed_form`."""
    c = k_maj + k_min
    return {
        "maj_diag": a_maj * (1 - 1 / k_maj) + b * k_min / (c * k_maj),
        "maj_off": -a_maj / k_maj + b * k_min / (c * k_maj),
        "min_diag": a_min * (1 - 1 / k_min) + b * k_maj / (c * k_min),
        "min_off": -a_min / k_min + b * k_maj / (c * k_min),
        "cross": -b / c,
    }


def _summary(e: dict, k_maj: int, k_min: int, prefix: str) -> dict:
    nan = float("nan")
    return {
        f"{prefix}_norm_maj": float(np.sqrt(e["maj_diag"])),
        f"{prefix}_norm_min": float(np.sqrt(e["min_diag"])),
        f"{prefix}_norm_ratio": float(np.sqrt(e["min_diag"] / e["maj_diag"])),
        f"{prefix}_cos_maj_maj": float(e["maj_off"] / e["maj_diag"]) if k_maj > 1 else nan,
        f"{prefix}_cos_min_min": float(e["min_off"] / e["min_diag"]) if k_min > 1 else nan,
        f"{prefix}_cos_maj_min": float(e["cross"] / np.sqrt(e["maj_diag"] * e["min_diag"])),
    }


def seli_step_closed_form(ratio: float, num_majority: int, num_minority: int) -> dict:
    r"""Closed-form SELI norms and angles under STEP imbalance.

    With ``n_min = 1``, ``n_maj = R``, ``C = C_maj + C_min`` and
    :math:`\chi = (R C_{\min} + C_{\mathrm{maj}})/C`, the eigenvalues of ``PDP`` are ``R``
    (``C_maj - 1`` times), ``1`` (``C_min - 1`` times), ``chi`` (once) and ``0``, so

    .. math::
        \|w_{\mathrm{maj}}\|^2 = \sqrt R (1 - \tfrac{1}{C_{\mathrm{maj}}}) + \sqrt\chi \tfrac{C_{\min}}{C C_{\mathrm{maj}}},\quad
        \|w_{\min}\|^2 = (1 - \tfrac{1}{C_{\min}}) + \sqrt\chi \tfrac{C_{\mathrm{maj}}}{C C_{\min}},

    :math:`\langle w_{\mathrm{maj}}, w_{\mathrm{maj}}'\rangle = -\sqrt R/C_{\mathrm{maj}} + \sqrt\chi\, C_{\min}/(C C_{\mathrm{maj}})`,
    :math:`\langle w_{\min}, w_{\min}'\rangle = -1/C_{\min} + \sqrt\chi\, C_{\mathrm{maj}}/(C C_{\min})`,
    :math:`\langle w_{\mathrm{maj}}, w_{\min}\rangle = -\sqrt\chi/C`; class means replace
    :math:`\sqrt R \to 1/\sqrt R`, :math:`\sqrt\chi \to 1/\sqrt\chi`; and
    :math:`\cos(w_c, \mu_c) = (1 - 1/C)/(\|w_c\|\|\mu_c\|)`.

    Parameters
    ----------
    ratio : float
        Imbalance ratio ``R = n_maj / n_min >= 1``.
    num_majority, num_minority : int
        ``C_maj >= 1`` and ``C_min >= 1`` classes.

    Returns
    -------
    dict of float
        ``w_norm_ratio`` and ``h_norm_ratio`` (minority over majority), the cosines
        ``w_cos_maj_maj``, ``w_cos_min_min``, ``w_cos_maj_min`` and the same for
        ``h`` (the keys' ``h`` is the class means ``mu_c``); also ``w_norm_maj``, ``w_norm_min``, ``h_norm_maj``, ``h_norm_min``
        (at ``n_min = 1``) and ``wh_cos_maj``, ``wh_cos_min``. A within-group cosine
        of a group with a single class is NaN.

    Raises
    ------
    ValueError
        If ``ratio < 1`` or a group size is not a positive integer.

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Section 3 (STEP imbalance).

    Examples
    --------
    >>> round(seli_step_closed_form(10.0, 2, 2)["w_norm_ratio"], 4)
    0.7079
    """
    r = check_positive("ratio", ratio)
    if r < 1:
        raise ValueError(f"ratio = n_maj / n_min must be >= 1; got {r!r}. Swap the two groups.")
    k_maj, k_min = _check_groups(num_majority, num_minority)
    c = k_maj + k_min
    mu = (r * k_min + k_maj) / c
    out = _summary(_step_entries(np.sqrt(r), 1.0, np.sqrt(mu), k_maj, k_min), k_maj, k_min, "w")
    out.update(_summary(_step_entries(1 / np.sqrt(r), 1.0, 1 / np.sqrt(mu), k_maj, k_min), k_maj, k_min, "h"))
    for group in ("maj", "min"):
        out[f"wh_cos_{group}"] = (1 - 1 / c) / (out[f"w_norm_{group}"] * out[f"h_norm_{group}"])
    return out


def seli_step_limits(num_majority: int, num_minority: int) -> dict:
    r"""Large-``R`` limits of :func:`seli_step_closed_form`.

    Dividing the classifier Gram by :math:`\sqrt R` and letting ``R -> inf`` keeps
    the majority block and the group-mean direction (:math:`\sqrt{\chi/R} \to
    \sqrt{C_{\min}/C}`) and drops the within-minority part: minority classifiers align
    (``w_cos_min_min -> 1``). The minority class means keep their norm while the
    majority ones shrink like :math:`R^{-1/4}`, so ``h_norm_ratio`` grows like a constant times
    :math:`R^{1/4}`; ``h_norm_ratio_rate`` is that constant. With half minorities
    ``w_norm_ratio -> (1 + \sqrt2 (C - 2))^{-1/2}``.

    Parameters
    ----------
    num_majority, num_minority : int
        ``C_maj >= 1`` and ``C_min >= 1``.

    Returns
    -------
    dict of float
        ``w_norm_ratio``, ``w_cos_maj_maj``, ``w_cos_min_min``, ``w_cos_maj_min``,
        ``h_cos_maj_maj``, ``h_cos_min_min``, ``h_cos_maj_min`` and
        ``h_norm_ratio_rate`` (NaN where a group has one class and the quantity is
        undefined; with a single minority class ``h_norm_ratio`` stays bounded and
        the rate is 0).

    References
    ----------
    Thrampoulidis et al., NeurIPS 2022, arXiv:2208.05512, Section 3.

    Examples
    --------
    >>> round(seli_step_limits(2, 1)["w_cos_maj_maj"], 4)
    -0.6772
    """
    k_maj, k_min = _check_groups(num_majority, num_minority)
    c = k_maj + k_min
    rho = np.sqrt(k_min / c)  # lim sqrt(chi / R)
    w = _summary(_step_entries(1.0, 0.0, rho, k_maj, k_min), k_maj, k_min, "w")
    h_maj = _step_entries(1.0, 0.0, 1 / rho, k_maj, k_min)  # times sqrt(R): majority block and cross term
    h_min_diag, h_min_off = 1 - 1 / k_min, -1 / k_min  # minority block at R = inf
    nan = float("nan")
    return {
        "w_norm_ratio": w["w_norm_ratio"],
        "w_cos_maj_maj": w["w_cos_maj_maj"],
        "w_cos_min_min": w["w_cos_min_min"],
        "w_cos_maj_min": w["w_cos_maj_min"],
        "h_cos_maj_maj": float(h_maj["maj_off"] / h_maj["maj_diag"]) if k_maj > 1 else nan,
        "h_cos_min_min": float(h_min_off / h_min_diag) if k_min > 1 else nan,
        # one minority class: its embedding also shrinks like R^{-1/4}, the angle stays finite
        "h_cos_maj_min": 0.0 if k_min > 1 else _summary(h_maj, k_maj, k_min, "h")["h_cos_maj_min"],
        "h_norm_ratio_rate": float(np.sqrt(h_min_diag / h_maj["maj_diag"])),
    }
