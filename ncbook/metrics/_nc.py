"""Neural-collapse metrics NC1-NC4 and a streaming accumulator.

Letters: ``n`` samples, ``C`` classes, ``d`` feature dimension. Features ``H`` are
``(n, d)``, the classifier ``W`` is ``(C, d)`` (Papyan et al. write ``H`` as ``d x n``).
Everything is computed in float64; metrics return Python floats (they are read, not
differentiated).

References
----------
Papyan, Han, Donoho, "Prevalence of neural collapse during the terminal phase of deep
learning training", PNAS 2020 (NC1-NC4). Zhu et al., "A geometric analysis of neural
collapse with unconstrained features", NeurIPS 2021, arXiv:2105.02375 (the NC3 variant
on ``W M^T``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._validation import _numeric, _short, check_class_vector, check_finite, check_in, check_int, check_labels, check_matrix

__all__ = ["class_means", "nc1", "nc2", "nc3", "nc4", "neural_collapse", "NCAccumulator", "centered_means"]

GLOBAL_MEANS = ("class", "sample")
WITHINS = ("sample", "class")
NC3_VARIANTS = ("papyan", "zhu")


def _f64(x: Any, name: str = "input") -> torch.Tensor:
    if isinstance(x, torch.Tensor) and not x.is_complex():
        return x.detach().to(device="cpu", dtype=torch.float64)
    return torch.as_tensor(_numeric(name, x), dtype=torch.float64)


def _eps(x: Any) -> float:
    """The machine epsilon of the precision ``x`` arrived in (float64 for integers, lists and numpy)."""
    dtype = x.dtype if isinstance(x, torch.Tensor) else getattr(x, "dtype", None)
    if isinstance(dtype, torch.dtype):
        return torch.finfo(dtype).eps if dtype.is_floating_point else float(np.finfo(np.float64).eps)
    if dtype is not None and np.dtype(dtype).kind == "f":
        return float(np.finfo(dtype).eps)
    return float(np.finfo(np.float64).eps)


def _rounding_floor(scale: torch.Tensor, dim: int, eps: float) -> float:
    """The squared length below which a difference of class means is rounding, not signal.

    Each coordinate of a mean carries up to about ``eps * max|h|`` of rounding, so a difference of two
    means that is within ``4 sqrt(d) eps max|h|`` of zero says nothing. ``scale`` is ``max|h|``.
    """
    return float(16.0 * dim * (eps * float(scale)) ** 2)


def _features_labels(features, labels, num_classes):
    check_matrix("features", features)
    h = _f64(features, "features")
    check_finite("features", h)
    num_classes = check_int("num_classes", num_classes, 1, allow_none=True)
    y = check_labels(labels, num_classes).cpu()
    if y.numel() != h.shape[0]:
        raise ValueError(f"labels must have one entry per row of features; got {y.numel()} labels for {h.shape[0]} rows.")
    if y.numel() == 0:
        raise ValueError("features and labels must hold at least one sample; got an empty batch (0 rows).")
    c = int(y.max().item()) + 1 if num_classes is None else int(num_classes)
    counts = torch.bincount(y, minlength=c)
    if (counts == 0).any():
        empty = _short(torch.nonzero(counts == 0).flatten().numpy())  # a label of 10**6 must not print 10**6 classes
        raise ValueError(f"labels must hold every class in [0, {c}): classes {empty} have none. "
                         "Pass features of all classes, or relabel the present ones 0..C'-1.")
    return h, y, c, counts


def _check_spread(centred: torch.Tensor, scale: torch.Tensor, eps: float, *, what: str = "features") -> None:
    """Refuse class means with no between-class spread: one class, or means equal to the input's rounding.

    NC1 and NC2 measure within-class variability and the shape of the means against their spread; with
    none (coincident means, all-zero features) they are undefined, and a number (0.0 reads as perfect
    collapse) would be wrong.
    """
    c, d = centred.shape
    if c < 2:
        raise ValueError(f"labels must hold at least 2 classes: the NC metrics compare classes; got C = {c}.")
    spread = float((centred * centred).sum(1).mean())
    if spread <= _rounding_floor(scale, d, eps):
        raise ValueError(
            f"{what} have no between-class spread: the class means coincide (to the rounding of the input"
            f"{', and every feature is 0' if float(scale) == 0 else ''}), so NC1 and NC2 are undefined. "
            "Check that the features come from the trained network and the labels belong to them.")


def _class_means(h, y, c, counts):
    sums = torch.zeros(c, h.shape[1], dtype=torch.float64).index_add_(0, y, h)
    return sums / counts[:, None]


def class_means(features, labels, num_classes: int | None = None) -> torch.Tensor:
    """Per-class means of the features.

    Parameters
    ----------
    features : Tensor or ndarray of shape (n, d)
    labels : Tensor or array-like of int of shape (n,)
    num_classes : int, optional
        ``C``; defaults to ``max(labels) + 1``.

    Returns
    -------
    Tensor of shape (C, d), float64.

    Raises
    ------
    ValueError
        If shapes disagree, features hold NaN/inf, or a class has no sample.

    Examples
    --------
    >>> class_means(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]]), [0, 0, 1]).tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    """
    h, y, c, counts = _features_labels(features, labels, num_classes)
    return _class_means(h, y, c, counts)


def _global_mean(means, h, global_mean):
    return means.mean(0) if global_mean == "class" else h.mean(0)


def centered_means(features, labels, num_classes: int | None = None, *, global_mean: str = "class") -> torch.Tensor:
    """Class means minus the global mean, ``M_bar`` of shape (C, d), float64.

    ``global_mean="class"`` subtracts the unweighted mean of class means (the
    default: under imbalance the sample mean is pulled toward majority classes, and an
    exact ETF would look uncollapsed); ``"sample"`` subtracts the sample mean.

    Raises ``ValueError`` as :func:`nc1` does for one class or class means with no spread between them:
    their centred means are rounding noise, whose direction NC2 and NC3 would read as a geometry.

    Examples
    --------
    >>> centered_means(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]]), [0, 0, 1]).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    check_in("global_mean", global_mean, GLOBAL_MEANS)
    h, y, c, counts = _features_labels(features, labels, num_classes)
    means = _class_means(h, y, c, counts)
    centred = means - _global_mean(means, h, global_mean)
    _check_spread(centred, h.abs().max(), _eps(features))  # rounding noise would give NC2/NC3 a random direction
    return centred


def _within_cov(h, y, means, counts, within):
    dev = h - means[y]  # (n, d)
    if within == "sample":
        return dev.T @ dev / h.shape[0]
    scaled = dev / counts[y].sqrt()[:, None]  # each class weighted by 1/n_c, then averaged over C
    return scaled.T @ scaled / means.shape[0]


def _nc1_from(sigma_w, centred, rank_cap):
    c = centred.shape[0]
    sigma_b = centred.T @ centred / c
    vals, vecs = torch.linalg.eigh(sigma_b)
    tol = vals.max().clamp_min(0) * 1e-10
    keep = torch.argsort(vals, descending=True)[:rank_cap]
    keep = keep[vals[keep] > tol]
    v = vecs[:, keep]
    return float(((v.T @ sigma_w @ v).diagonal() / vals[keep]).sum() / c)


def nc1(features, labels, num_classes: int | None = None, *, global_mean: str = "class", within: str = "sample") -> float:
    r"""NC1, within-class variability relative to between-class spread.

    .. math:: \mathrm{NC1} = \frac{1}{C}\operatorname{tr}(\Sigma_W \Sigma_B^{+}),\qquad
              \Sigma_B = \frac{1}{C}\sum_c (\mu_c - \mu_G)(\mu_c - \mu_G)^\top .

    The pseudo-inverse is taken in float64 and truncated to rank ``C - 1`` (the centred
    means satisfy one linear relation under either centring), dropping round-off
    eigenvalues that would otherwise blow the metric up.

    Parameters
    ----------
    features : Tensor or ndarray of shape (n, d)
    labels : int array-like of shape (n,)
    num_classes : int, optional
    global_mean : {"class", "sample"}
        ``mu_G`` as the unweighted mean of class means (default) or the sample mean.
    within : {"sample", "class"}
        ``Sigma_W`` pooled over samples (majority-dominated; the common code) or the
        average of per-class covariances (each class counts once).

    Returns
    -------
    float, ``>= 0``; exactly 0 when features equal their class means.

    Raises
    ------
    ValueError
        On shape mismatch, NaN features, an empty batch or class, fewer than 2 classes, class means
        with no spread between them (coincident means or all-zero features: NC1 is undefined, never
        reported as 0), or an unknown option.

    References
    ----------
    Papyan, Han, Donoho, PNAS 2020, Figure 6.

    Examples
    --------
    >>> h = torch.tensor([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]])
    >>> nc1(h, [0, 0, 1])  # features at their class means
    0.0
    """
    check_in("global_mean", global_mean, GLOBAL_MEANS)
    check_in("within", within, WITHINS)
    h, y, c, counts = _features_labels(features, labels, num_classes)
    means = _class_means(h, y, c, counts)
    centred = means - _global_mean(means, h, global_mean)
    _check_spread(centred, h.abs().max(), _eps(features))
    sigma_w = _within_cov(h, y, means, counts.double(), within)
    return _nc1_from(sigma_w, centred, c - 1)


def _simplex_target(c: int) -> torch.Tensor:
    return (torch.eye(c, dtype=torch.float64) - 1.0 / c) / (c - 1) ** 0.5


def nc2(x) -> float:
    r"""NC2, distance of a Gram matrix to the simplex ETF's.

    .. math:: \mathrm{NC2}(X) = \Big\| \frac{XX^\top}{\|XX^\top\|_F} - \frac{I - \frac1C 11^\top}{\sqrt{C-1}} \Big\|_F

    Apply it to the classifier ``W`` or to the centred class means ``M_bar``.

    Parameters
    ----------
    x : Tensor or ndarray of shape (C, d), ``C >= 2``

    Returns
    -------
    float in ``[0, sqrt(2)]`` (both Gram matrices are positive semidefinite, so their normalised inner product
    is >= 0); 0 exactly at a (scaled, rotated) simplex ETF.

    References
    ----------
    Papyan, Han, Donoho, PNAS 2020 (equinorm and equiangularity, here as one scale-free distance).

    Examples
    --------
    >>> import numpy as np
    >>> round(nc2(np.array([[1.0, 0.0], [-0.5, 3 ** 0.5 / 2], [-0.5, -(3 ** 0.5) / 2]])), 12)  # a simplex ETF
    0.0
    """
    return _nc2(x, "x")


def _nc2(x, name: str) -> float:
    check_matrix(name, x)
    x = _f64(x, "x")
    if x.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 rows (classes); got shape {tuple(x.shape)}.")
    check_finite(name, x)
    g = x @ x.T
    norm = g.norm()
    if norm == 0:
        raise ValueError(f"{name} must not be all zeros (NC2 compares directions; a zero matrix has none).")
    return float((g / norm - _simplex_target(x.shape[0])).norm())


def nc3(classifier, means, *, variant: str = "papyan") -> float:
    r"""NC3, self-duality of classifier and centred class means.

    ``variant="papyan"``: :math:`\| W/\|W\|_F - \bar M/\|\bar M\|_F \|_F`;
    ``variant="zhu"``: :math:`\| W\bar M^\top/\|W\bar M^\top\|_F - (I - \frac1C 11^\top)/\sqrt{C-1} \|_F`.

    Parameters
    ----------
    classifier : Tensor or ndarray of shape (C, d)
    means : Tensor or ndarray of shape (C, d)
        Centred class means (see :func:`centered_means`).
    variant : {"papyan", "zhu"}

    Returns
    -------
    float; 0 when ``W`` is a positive multiple of ``M_bar`` and both form a simplex ETF.

    Raises
    ------
    ValueError
        If the shapes differ, an input holds NaN/inf, or a direction is undefined: a zero
        classifier, zero centred means (all class means equal), or (``"zhu"``) ``W M^T = 0``.

    Examples
    --------
    >>> m = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    >>> nc3(2 * m, m)
    0.0
    >>> nc3(torch.zeros(2, 2), m)
    Traceback (most recent call last):
    ...
    ValueError: classifier must not be all zeros (NC3 compares directions; a zero matrix has none).

    References
    ----------
    Papyan et al., PNAS 2020; Zhu et al., NeurIPS 2021, arXiv:2105.02375, Section 4.
    """
    check_in("variant", variant, NC3_VARIANTS)
    check_matrix("classifier", classifier)
    check_matrix("means", means, shape=tuple(classifier.shape))
    w, m = _f64(classifier, "classifier"), _f64(means, "means")
    check_finite("classifier", w)
    check_finite("means", m)
    if w.norm() == 0:
        raise ValueError("classifier must not be all zeros (NC3 compares directions; a zero matrix has none).")
    if m.norm() == 0:
        raise ValueError("means must not be all zeros: the centred class means vanish (every class mean is equal), "
                         "so they have no direction to compare.")
    if variant == "papyan":
        return float((w / w.norm() - m / m.norm()).norm())
    p = w @ m.T
    if p.norm() == 0:
        raise ValueError("classifier @ means.T is all zeros (the classifier is orthogonal to the means): "
                         "the 'zhu' variant is undefined; use variant='papyan'.")
    return float((p / p.norm() - _simplex_target(w.shape[0])).norm())


def _check_distinct_means(mu: torch.Tensor, eps: float) -> None:
    """Refuse means two of which coincide (to rounding): the nearest-class-mean rule would tie."""
    if mu.shape[0] < 2:
        return
    gaps = torch.cdist(mu, mu).fill_diagonal_(float("inf")) ** 2
    floor = _rounding_floor(mu.abs().max(), mu.shape[1], eps)
    if float(gaps.min()) <= floor:
        i, j = divmod(int(gaps.argmin()), mu.shape[0])
        raise ValueError(f"means must be distinct points: rows {min(i, j)} and {max(i, j)} coincide (to the rounding of "
                         "the input), so the nearest-class-mean rule ties and NC4 is undefined.")


def nc4(features, predictions, means) -> float:
    """NC4, disagreement between the network and the nearest-class-mean rule.

    Parameters
    ----------
    features : Tensor or ndarray of shape (n, d)
    predictions : Tensor of shape (n,) (class indices) or (n, C) (logits; argmax taken)
    means : Tensor or ndarray of shape (C, d)
        Class means (uncentred) of the training features.

    Returns
    -------
    float in ``[0, 1]``: fraction of samples where the two predictions differ.

    Raises
    ------
    ValueError
        If ``means`` is not ``(C, d)`` with the features' ``d``, two means coincide (the nearest mean
        ties), predictions do not match the rows of ``features``, or an input holds NaN/inf.
    TypeError
        If 1-D predictions are not integer class indices.

    Examples
    --------
    >>> h = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> nc4(h, torch.tensor([0, 0]), h)
    0.5

    References
    ----------
    Papyan et al., PNAS 2020, Figure 9.
    """
    check_matrix("features", features)
    check_matrix("means", means)
    h, mu = _f64(features, "features"), _f64(means, "means")
    if mu.shape[0] < 1:
        raise ValueError(f"means must hold one row per class (C >= 1); got shape {tuple(mu.shape)}.")
    if mu.shape[1] != h.shape[1]:
        raise ValueError(f"means must have shape (C, d) with d = {h.shape[1]} (the features' width); "
                         f"got {tuple(mu.shape)}.")
    check_finite("features", h)
    check_finite("means", mu)
    if h.shape[0] == 0:
        raise ValueError("features must hold at least one row: NC4 is a fraction of samples; got an empty batch.")
    _check_distinct_means(mu, _eps(means))
    pred = torch.as_tensor(_numeric("predictions", predictions)) if not isinstance(predictions, torch.Tensor) else predictions
    if pred.ndim == 2:
        if pred.shape[1] != mu.shape[0]:
            raise ValueError(f"predictions given as logits must have C = {mu.shape[0]} columns (one per mean); "
                             f"got shape {tuple(pred.shape)}.")
        pred = pred.argmax(1)
    pred = check_labels(pred, mu.shape[0], name="predictions", n=h.shape[0])
    ncc = torch.cdist(h, mu).argmin(1)
    return float((ncc != pred.cpu()).double().mean())


def neural_collapse(features, labels, classifier, *, bias=None, num_classes: int | None = None,
                    global_mean: str = "class", within: str = "sample") -> dict:
    """All NC metrics at once.

    Parameters
    ----------
    features : Tensor or ndarray of shape (n, d)
        Penultimate features, one row per sample.
    labels : int array-like of shape (n,)
    classifier : Tensor or ndarray of shape (C, d)
        Last-layer weights, one row per class (papers often write the transpose, ``d x C``).
        ``C`` is read from its first axis unless ``num_classes`` is given.
    bias : Tensor of shape (C,), optional
        Added to the logits for NC4.
    global_mean, within : see :func:`nc1`.

    Returns
    -------
    dict with float values ``nc1``, ``nc2_w`` (classifier), ``nc2_m`` (centred means),
    ``nc3`` (Papyan), ``nc3_zhu``, ``nc4``.

    Raises
    ------
    ValueError
        If ``classifier`` is not ``(C, d)`` with the features' ``d``, shapes of features and
        labels disagree, features hold NaN/inf, a class has no sample, or the class means have
        no spread between them (see :func:`nc1`).

    References
    ----------
    Papyan, Han, Donoho, PNAS 2020 (NC1-NC4); Zhu et al., NeurIPS 2021, arXiv:2105.02375 (``nc3_zhu``).

    Examples
    --------
    >>> m = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    >>> {k: round(v, 12) for k, v in neural_collapse(m[[0, 0, 1]], [0, 0, 1], m).items()}
    {'nc1': 0.0, 'nc2_w': 0.0, 'nc2_m': 0.0, 'nc3': 0.0, 'nc3_zhu': 0.0, 'nc4': 0.0}
    """
    check_matrix("classifier", classifier)
    check_matrix("features", features)
    if classifier.shape[1] != features.shape[1]:
        raise ValueError(
            f"classifier must have shape (C, d) with d = {features.shape[1]} (the features' width); got "
            f"{tuple(classifier.shape)}. Pass W with one row per class (transpose a d x C matrix)."
        )
    if classifier.shape[0] < 1:
        raise ValueError(f"classifier must have one row per class (C >= 1); got shape {tuple(classifier.shape)}.")
    c = classifier.shape[0] if num_classes is None else check_int("num_classes", num_classes, 1)
    h, y, c, counts = _features_labels(features, labels, c)
    means = _class_means(h, y, c, counts)
    centred = means - _global_mean(means, h, check_in("global_mean", global_mean, GLOBAL_MEANS))
    _check_spread(centred, h.abs().max(), _eps(features))
    w = _f64(classifier, "classifier")
    check_finite("classifier", w)
    b = 0 if bias is None else check_class_vector("bias", bias, w.shape[0], signed=True).cpu()
    logits = h @ w.T + b
    return {
        "nc1": _nc1_from(_within_cov(h, y, means, counts.double(), check_in("within", within, WITHINS)),
                         centred, c - 1),
        "nc2_w": _nc2(w, "classifier"),
        "nc2_m": _nc2(centred, "means"),
        "nc3": nc3(w, centred, variant="papyan"),
        "nc3_zhu": nc3(w, centred, variant="zhu"),
        "nc4": nc4(h, logits, means),
    }


class NCAccumulator:
    """Streaming NC metrics over batches, so features never need to fit in memory.

    Two passes over the data: first :meth:`update_means` on every batch, then
    :meth:`update_covariance` (and the NC4 count) on every batch, then :meth:`compute`.
    State lives in float64 tensors and is saved by :meth:`state_dict`.

    Parameters
    ----------
    num_classes : int
    dim : int
        Feature dimension ``d``.
    within : {"sample", "class"}
    global_mean : {"class", "sample"}

    Examples
    --------
    >>> acc = NCAccumulator(3, 2)
    >>> h = torch.tensor([[1., 0.], [0., 1.], [-1., -1.]]); y = torch.tensor([0, 1, 2])
    >>> acc.update_means(h, y); acc.update_covariance(h, y, logits=h @ h.T)
    >>> round(acc.compute(h)["nc1"], 12)
    0.0
    """

    def __init__(self, num_classes: int, dim: int, *, within: str = "sample", global_mean: str = "class"):
        self.num_classes = check_int("num_classes", num_classes, 2)
        self.dim = check_int("dim", dim, 1, what="the feature dimension d")
        self.within = check_in("within", within, WITHINS)
        self.global_mean = check_in("global_mean", global_mean, GLOBAL_MEANS)
        self.sums = torch.zeros(self.num_classes, self.dim, dtype=torch.float64)
        self.counts = torch.zeros(self.num_classes, dtype=torch.float64)
        self.scatter = torch.zeros(self.num_classes if within == "class" else 1, self.dim, self.dim, dtype=torch.float64)
        self.mismatches = torch.zeros((), dtype=torch.float64)
        self.seen = torch.zeros((), dtype=torch.float64)
        self.scale = torch.zeros((), dtype=torch.float64)  # max |h| seen, and the coarsest input precision:
        self.eps = torch.zeros((), dtype=torch.float64)  # below them a difference of means is rounding

    def update_means(self, features, labels) -> None:
        """First pass: accumulate per-class sums and counts of a batch ``(b, d)``."""
        h, y = self._batch(features, labels)
        self.sums.index_add_(0, y, h)
        self.counts += torch.bincount(y, minlength=self.num_classes).double()
        if h.numel():
            self.scale = torch.maximum(self.scale, h.abs().max())
        self.eps = torch.maximum(self.eps, torch.tensor(_eps(features), dtype=torch.float64))

    def _batch(self, features, labels):
        check_matrix("features", features, shape=(None, self.dim))
        h = _f64(features, "features")
        check_finite("features", h)
        return h, check_labels(labels, self.num_classes, n=h.shape[0]).cpu()

    def means(self) -> torch.Tensor:
        """Class means ``(C, d)`` after the first pass."""
        if (self.counts == 0).any():
            raise ValueError("every class needs at least one sample before means can be computed.")
        return self.sums / self.counts[:, None]

    def update_covariance(self, features, labels, logits=None) -> None:
        """Second pass: accumulate within-class scatter and, given logits, the NC4 count."""
        h, y = self._batch(features, labels)
        mu = self.means()
        dev = h - mu[y]
        if self.within == "sample":
            self.scatter[0] += dev.T @ dev
        else:
            self.scatter.index_add_(0, y, dev[:, :, None] * dev[:, None, :])
        if logits is not None:
            pred = torch.as_tensor(logits).detach().cpu().argmax(1)
            self.mismatches += (torch.cdist(h, mu).argmin(1) != pred).sum()
            self.seen += h.shape[0]

    def compute(self, classifier) -> dict:
        """The metrics of :func:`neural_collapse` from the accumulated state.

        ``nc4`` is NaN when no batch came with logits. Raises ``ValueError`` as :func:`neural_collapse`
        does for class means with no spread between them.
        """
        mu = self.means()
        g = mu.mean(0) if self.global_mean == "class" else self.sums.sum(0) / self.counts.sum()
        centred = mu - g
        _check_spread(centred, self.scale, float(self.eps) or _eps(None))
        if self.within == "sample":
            sigma_w = self.scatter[0] / self.counts.sum()
        else:
            sigma_w = (self.scatter / self.counts[:, None, None]).mean(0)
        w = _f64(classifier, "classifier")
        c = self.num_classes
        return {
            "nc1": _nc1_from(sigma_w, centred, c - 1),
            "nc2_w": nc2(w),
            "nc2_m": nc2(centred),
            "nc3": nc3(w, centred, variant="papyan"),
            "nc3_zhu": nc3(w, centred, variant="zhu"),
            "nc4": float(self.mismatches / self.seen) if self.seen > 0 else float("nan"),
        }

    def state_dict(self) -> dict:
        """Tensors only, so ``torch.load(weights_only=True)`` restores it."""
        return {k: getattr(self, k).clone() for k in ("sums", "counts", "scatter", "mismatches", "seen", "scale", "eps")}

    def load_state_dict(self, state: dict) -> None:
        for k, v in state.items():
            getattr(self, k).copy_(v)
