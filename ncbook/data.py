"""Data sets and long-tailed constructions.

Letters: ``C`` classes, ``n_c`` samples of class ``c``. Test sets stay balanced.
The quick profile uses scikit-learn's bundled digits (offline); the full profile
uses CIFAR-10/100 through torchvision (needs the files or a network).
"""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ._validation import check_counts, check_in, check_int, check_labels, check_positive

__all__ = [
    "DatasetUnavailableError",
    "Split",
    "cifar_augment",
    "cifar_tensors",
    "load_cifar",
    "load_digits",
    "long_tailed_counts",
    "make_imbalanced",
    "make_loader",
    "CIFAR_MEAN",
    "CIFAR_STD",
]

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


class DatasetUnavailableError(RuntimeError):
    """A data set is neither on disk nor downloadable (e.g. offline)."""


class Split(NamedTuple):
    """Train and test tensors: ``x_*`` float32 ``(n, ...)``, ``y_*`` int64 ``(n,)``."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def long_tailed_counts(n_max: int, num_classes: int, imbalance_ratio: float, kind: str = "exp", *,
                       minority_fraction: float = 0.5) -> np.ndarray:
    r"""Per-class training counts of a long-tailed data set.

    ``kind="exp"`` (Cao et al. 2019): :math:`n_i = \lfloor n_{max}\, R^{-i/(C-1)} \rfloor`.
    ``kind="step"``: the last ``k = floor(minority_fraction * C + 1/2)`` classes have
    ``floor(n_max / R)``, the first ``C - k`` have ``n_max`` (``1 <= k <= C - 1``).

    Parameters
    ----------
    n_max : int
        Samples of the largest class (5000 for CIFAR-10, 500 for CIFAR-100).
    num_classes : int
        ``C >= 1`` (``>= 2`` for the kind to matter).
    imbalance_ratio : float
        ``R = n_max / n_min >= 1``.
    kind : {"exp", "step"}
    minority_fraction : float
        Share of minority classes for ``"step"``, in ``(0, 1)``. Papers differ on whether
        their ``rho`` is this share or the majority share: this name is unambiguous.

    Returns
    -------
    ndarray of shape (C,), int64, non-increasing.

    Raises
    ------
    ValueError
        If ``n_max < 1``, ``C < 1``, ``R < 1``, ``minority_fraction`` outside ``(0, 1)``,
        or a class would get zero samples.

    References
    ----------
    Cao et al., "Learning imbalanced datasets with label-distribution-aware margin loss",
    NeurIPS 2019, arXiv:1906.07413 (the CIFAR-LT construction).

    Examples
    --------
    >>> int(long_tailed_counts(5000, 10, 100).sum())
    12406
    """
    n_max = check_int("n_max", n_max, 1)
    num_classes = check_int("num_classes", num_classes, 1)
    check_positive("imbalance_ratio", imbalance_ratio)
    if imbalance_ratio < 1:
        raise ValueError(f"imbalance_ratio must be >= 1 (n_max / n_min); got {imbalance_ratio!r}.")
    check_in("kind", kind, ("exp", "step"))
    c = int(num_classes)
    if kind == "exp":
        exps = np.arange(c) / max(c - 1, 1)
        counts = np.array([int(n_max * imbalance_ratio ** (-e)) for e in exps], dtype=np.int64)
    else:
        if not 0 < minority_fraction < 1:
            raise ValueError(f"minority_fraction must be in (0, 1); got {minority_fraction!r}.")
        k_min = int(math.floor(minority_fraction * c + 0.5))  # round half up
        if not 1 <= k_min <= c - 1:
            raise ValueError(
                f"minority_fraction={minority_fraction} of {c} classes gives {k_min} minority classes; "
                f"choose it so that between 1 and {c - 1} classes are minorities."
            )
        counts = np.array([n_max] * (c - k_min) + [int(n_max / imbalance_ratio)] * k_min, dtype=np.int64)
    if counts.min() < 1:
        raise ValueError(f"imbalance_ratio {imbalance_ratio} leaves a class empty with n_max={n_max}; lower the ratio.")
    return counts


def make_imbalanced(labels, counts, seed: int = 0) -> torch.Tensor:
    """Indices of a subset that has exactly ``counts[c]`` samples of each class ``c``.

    Parameters
    ----------
    labels : int array-like of shape (n,)
    counts : int array-like of shape (C,), positive
    seed : int
        Which samples of each class are kept (drawn without replacement).

    Returns
    -------
    LongTensor of shape (sum(counts),), sorted ascending.

    Raises
    ------
    ValueError
        If a count is not positive, or a class has fewer samples than asked.
    """
    counts = check_counts(counts)
    y = check_labels(labels).cpu().numpy()
    rng = np.random.default_rng(seed)
    chosen = []
    for c, want in enumerate(counts):
        pool = np.flatnonzero(y == c)
        if pool.size < want:
            raise ValueError(f"class {c} has {pool.size} samples but counts asks for {want}; lower counts[{c}].")
        chosen.append(rng.choice(pool, size=int(want), replace=False))
    return torch.as_tensor(np.sort(np.concatenate(chosen)), dtype=torch.long)


def load_digits(*, test_per_class: int = 50, seed: int = 0, standardize: bool = True) -> Split:
    """scikit-learn's bundled 8x8 digits as tensors, with a balanced test set (offline).

    Parameters
    ----------
    test_per_class : int
        Test samples per class (the rest, 1797 - 10 * test_per_class, is the training pool).
    seed : int
        Which samples go to the test set.
    standardize : bool
        Standardise each pixel with the training mean and std (constant pixels keep std 1).

    Returns
    -------
    Split with ``x_*`` float32 of shape (n, 64) and ``y_*`` int64 of shape (n,).
    """
    from sklearn.datasets import load_digits as _sk_digits

    data = _sk_digits()
    x, y = data.data.astype(np.float32), data.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    test = np.concatenate([rng.choice(np.flatnonzero(y == c), test_per_class, replace=False) for c in range(10)])
    mask = np.zeros(len(y), dtype=bool)
    mask[test] = True
    x_tr, y_tr, x_te, y_te = x[~mask], y[~mask], x[mask], y[mask]
    if standardize:
        mu, sd = x_tr.mean(0), x_tr.std(0)
        sd[sd == 0] = 1.0
        x_tr, x_te = (x_tr - mu) / sd, (x_te - mu) / sd
    t = torch.as_tensor
    return Split(t(x_tr), t(y_tr), t(x_te), t(y_te))


def _cifar_class(name: str):
    import torchvision

    check_in("name", name, ("cifar10", "cifar100"))
    return torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100


def load_cifar(name: str, root: str | Path = "data", *, train: bool = True, download: bool = False, transform=None):
    """CIFAR-10 or CIFAR-100 through torchvision.

    Parameters
    ----------
    name : {"cifar10", "cifar100"}
    root : path
        Folder holding (or receiving) the torchvision files.
    train : bool
    download : bool
        Try to download when the files are missing. Offline this fails within seconds.
    transform : callable, optional
        Passed to torchvision.

    Returns
    -------
    torchvision dataset.

    Raises
    ------
    DatasetUnavailableError
        When the files are not under ``root`` and cannot be downloaded; the message
        names the data set and ``root``.
    """
    cls = _cifar_class(name)
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(20)  # a blocked network fails fast instead of hanging
    try:
        return cls(root=str(root), train=train, download=download, transform=transform)
    except Exception as exc:  # URLError, RuntimeError("Dataset not found"), timeouts
        hint = "pass download=True on a machine with network access" if not download else (
            "no network: copy the torchvision files there first")
        raise DatasetUnavailableError(
            f"{name} is not available under root={str(root)!r} ({type(exc).__name__}: {exc}); {hint}."
        ) from exc
    finally:
        socket.setdefaulttimeout(old)


def cifar_tensors(name: str, root: str | Path = "data", *, train: bool = True, download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """A CIFAR split as normalised float32 tensors ``(n, 3, 32, 32)`` and int64 labels.

    Keeping the whole set as one tensor lets training run from device memory (GPU).
    Raises :class:`DatasetUnavailableError` like :func:`load_cifar`.
    """
    ds = load_cifar(name, root, train=train, download=download)
    x = torch.as_tensor(ds.data).permute(0, 3, 1, 2).float().div_(255)
    mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
    return (x - mean) / std, torch.as_tensor(ds.targets, dtype=torch.long)


def cifar_augment(x: torch.Tensor, generator: torch.Generator | None = None, padding: int = 4) -> torch.Tensor:
    """Random crop (zero padding ``padding``) and horizontal flip of a batch, on its own device.

    Parameters
    ----------
    x : Tensor of shape (b, c, h, w)
    generator : torch.Generator, optional
        On ``x``'s device; makes the augmentation reproducible.

    Returns
    -------
    Tensor of the same shape.
    """
    b, _, h, w = x.shape
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    dx = torch.randint(0, 2 * padding + 1, (b,), device=x.device, generator=generator)
    dy = torch.randint(0, 2 * padding + 1, (b,), device=x.device, generator=generator)
    rows = (dy[:, None] + torch.arange(h, device=x.device)[None])  # (b, h)
    cols = (dx[:, None] + torch.arange(w, device=x.device)[None])  # (b, w)
    out = padded[torch.arange(b, device=x.device)[:, None, None, None], torch.arange(x.shape[1], device=x.device)[None, :, None, None],
                 rows[:, None, :, None], cols[:, None, None, :]]
    flip = torch.rand(b, device=x.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def make_loader(x: torch.Tensor, y: torch.Tensor, batch_size: int, *, shuffle: bool = True, seed: int = 0,
                drop_last: bool = False) -> torch.utils.data.DataLoader:
    """A ``DataLoader`` over tensors with a seeded generator (reproducible order)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}.")
    ds = torch.utils.data.TensorDataset(x, y)
    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=shuffle, generator=g, drop_last=drop_last)
