"""Accuracies: per class, and many/medium/few-shot groups for long-tailed data.

Letters: ``n`` samples, ``C`` classes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .._validation import _numeric, check_array, check_counts, check_int, check_labels

__all__ = ["difficulty_groups", "group_accuracy", "per_class_accuracy", "shot_accuracy"]


def _preds(predictions, num_classes, n, columns=None) -> torch.Tensor:
    """Class indices from indices ``(n,)`` of any integer dtype or logits ``(n, C)`` (argmax)."""
    p = predictions.detach().cpu() if isinstance(predictions, torch.Tensor) else torch.as_tensor(_numeric("predictions", predictions))
    if p.ndim == 2:
        if num_classes is not None and p.shape[1] != num_classes:
            raise ValueError(f"predictions given as logits must have C = {num_classes} columns; got shape {tuple(p.shape)}.")
        if columns is not None and p.shape[1] < columns:
            raise ValueError(f"predictions given as logits must have at least {columns} columns (the classes of "
                             f"labels); got shape {tuple(p.shape)}.")
        if p.is_floating_point() and not bool(torch.isfinite(p).all()):
            raise ValueError("predictions given as logits must be finite.")
        p = p.argmax(1)
    return check_labels(p, num_classes, name="predictions", n=n)


def per_class_accuracy(predictions, labels, num_classes: int | None = None) -> torch.Tensor:
    """Accuracy of each class.

    Parameters
    ----------
    predictions : Tensor of shape (n,) (class indices) or (n, C) (logits; argmax taken)
    labels : int array-like of shape (n,)
    num_classes : int, optional

    Returns
    -------
    Tensor of shape (C,), float64; NaN for a class absent from ``labels``.

    Examples
    --------
    >>> per_class_accuracy(torch.tensor([0, 1, 1, 2]), torch.tensor([0, 0, 1, 1]), 3).tolist()
    [0.5, 0.5, nan]
    """
    num_classes = check_int("num_classes", num_classes, 1, allow_none=True)
    y = check_labels(labels, num_classes).cpu()
    if y.numel() == 0:
        raise ValueError("labels must not be empty.")
    c = int(y.max()) + 1 if num_classes is None else num_classes
    p = _preds(predictions, num_classes, y.shape[0], columns=c)
    if num_classes is None and getattr(predictions, "ndim", 1) == 2:
        c = predictions.shape[1]  # logits name every class, also those absent from labels (their accuracy: NaN)
    total = torch.bincount(y, minlength=c).double()
    right = torch.bincount(y[p == y], minlength=c).double()
    return torch.where(total > 0, right / total.clamp_min(1), torch.full_like(total, float("nan")))


def shot_accuracy(predictions, labels, train_counts, *, many: int = 100, few: int = 20) -> dict:
    """Mean per-class accuracy over many-, medium- and few-shot classes.

    A class is *many-shot* with more than ``many`` training samples, *few-shot* with
    fewer than ``few``, *medium* otherwise (the split of Liu et al. 2019 with the
    CIFAR/ImageNet-LT defaults 100 and 20; scale them for small data sets).

    Parameters
    ----------
    predictions : Tensor of shape (n,) or (n, C)
    labels : int array-like of shape (n,)
    train_counts : int array-like of shape (C,)
        Training samples per class.
    many, few : int
        Thresholds, ``few <= many``.

    Returns
    -------
    dict with float values ``overall`` (mean over classes), ``many``, ``medium``, ``few``. A class absent
    from ``labels`` has no accuracy and is left out of every mean; a group with no class present is NaN.

    Examples
    --------
    >>> out = shot_accuracy(torch.tensor([0, 1, 1]), torch.tensor([0, 1, 2]), [500, 50, 5])
    >>> out["many"], out["medium"], out["few"]
    (1.0, 1.0, 0.0)
    """
    counts = check_counts(train_counts, "train_counts")
    many, few = check_int("many", many, 0), check_int("few", few, 0)
    if few > many:
        raise ValueError(f"few must be <= many; got few={few}, many={many}.")
    acc = per_class_accuracy(predictions, labels, len(counts)).numpy()
    groups = {"many": counts > many, "medium": (counts <= many) & (counts >= few), "few": counts < few}
    out = {"overall": float(np.nanmean(acc))}
    for name, mask in groups.items():
        out[name] = float(np.nanmean(acc[mask])) if mask.any() and not np.all(np.isnan(acc[mask])) else float("nan")
    return out


def difficulty_groups(class_accuracy, *, groups: Sequence[str] = ("easy", "medium", "hard")) -> dict[str, np.ndarray]:
    """Split classes into equal-size groups by a reference model's per-class accuracy.

    Classes are sorted by decreasing accuracy (ties by class index) and cut into
    ``len(groups)`` nearly equal parts with ``numpy.array_split`` (the first groups
    take the extra classes). This is our split, fixed once from the CE model and
    reused for every method, as the MR2 paper reports easy/medium/hard thirds.

    Parameters
    ----------
    class_accuracy : array-like of shape (C,)
    groups : sequence of str, default ("easy", "medium", "hard")

    Returns
    -------
    dict mapping group name to an int array of class indices.

    Examples
    --------
    >>> difficulty_groups([0.9, 0.2, 0.5, 0.7, 0.1, 0.8])
    {'easy': array([0, 5]), 'medium': array([2, 3]), 'hard': array([1, 4])}
    """
    acc = _class_accuracy(class_accuracy)
    if acc.size < len(groups):
        raise ValueError(
            f"class_accuracy must be 1-D with at least {len(groups)} classes; got shape {acc.shape}."
        )
    order = np.lexsort((np.arange(acc.size), -acc))
    return {name: np.sort(part) for name, part in zip(groups, np.array_split(order, len(groups)))}


def group_accuracy(class_accuracy, groups: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean per-class accuracy within each group (classes weighted equally).

    Examples
    --------
    >>> group_accuracy([0.9, 0.2, 0.5, 0.7], {"easy": np.array([0, 3]), "hard": np.array([1, 2])})
    {'easy': 0.8, 'hard': 0.35}
    """
    acc = _class_accuracy(class_accuracy)
    if not isinstance(groups, dict):
        raise TypeError(f"groups must be a dict of group name -> class indices; got {type(groups).__name__}.")
    out = {}
    for name, idx in groups.items():
        idx = np.asarray(idx)
        if idx.dtype.kind not in "iu" or idx.size == 0 or idx.min() < 0 or idx.max() >= acc.size:
            raise ValueError(f"groups[{name!r}] must be class indices in [0, {acc.size}); got {idx!r}.")
        out[name] = float(acc[idx].mean())
    return out


def _class_accuracy(class_accuracy) -> np.ndarray:
    acc = check_array("class_accuracy", class_accuracy, ndim=1)
    if np.any((acc < 0) | (acc > 1)):
        raise ValueError(f"class_accuracy must hold accuracies in [0, 1]; got {acc!r}.")
    return acc
