"""Data sets and long-tailed constructions.

Letters: ``C`` classes, ``n_c`` samples of class ``c``. Test sets stay balanced.
The quick profile uses scikit-learn's bundled digits (offline); the full profile
uses CIFAR-10/100 through torchvision (needs the files or a network); the gpu profile
reads a fixed subset of CIFAR-10 (:data:`GPU_SUBSETS`) that ``tools/pack_data.py`` packs into
one file under 60 MiB for a GPU machine without network.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import socket
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from ._validation import (_short, check_bool, check_callable, check_class_vector, check_counts, check_in, check_int,
                          check_labels, check_path, check_positive)
from .profiles import scale

__all__ = [
    "DatasetUnavailableError",
    "GPU_SUBSETS",
    "STANDIN_MANIFEST",
    "Split",
    "cifar_augment",
    "cifar_tensors",
    "gpu_subset_indices",
    "load_cifar",
    "load_digits",
    "long_tailed_counts",
    "make_imbalanced",
    "make_loader",
    "unpack_cifar",
    "write_cifar_folder",
    "write_cifar_standin",
    "CIFAR_MEAN",
    "CIFAR_STD",
]

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)
"""CIFAR-10's per-channel mean and standard deviation over its training images. The long-tailed recipe's code
(Cao et al. 2019, and the repositories built on it) normalises with the same mean and the standard deviation
``(0.2023, 0.1994, 0.2010)``, a value widely copied from older CIFAR scripts. That only rescales the inputs of
the first convolution (by about 20 %); the crop, the flip and the black border of :func:`cifar_augment` are the
recipe's either way."""


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
        ``C >= 2`` (one class has no tail: neither profile is defined for it).
    imbalance_ratio : float
        ``R = n_max / n_min >= 1``.
    kind : {"exp", "step"}
    minority_fraction : float
        Share of minority classes for ``"step"``, in ``(0, 1)``: ``C_min / C`` in the book's notation.
        Papers differ on whether their ``rho`` is this share or the majority share: this name is
        unambiguous.

    Returns
    -------
    ndarray of shape (C,), int64, non-increasing.

    Raises
    ------
    ValueError
        If ``n_max < 1``, ``C < 2``, ``R < 1``, ``minority_fraction`` outside ``(0, 1)``,
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
    num_classes = check_int("num_classes", num_classes, 2, what="a long tail needs a head class and a tail class")
    check_positive("imbalance_ratio", imbalance_ratio)
    if imbalance_ratio < 1:
        raise ValueError(f"imbalance_ratio must be >= 1 (n_max / n_min); got {imbalance_ratio!r}.")
    check_in("kind", kind, ("exp", "step"))
    minority_fraction = check_positive("minority_fraction", minority_fraction)
    if minority_fraction >= 1:
        raise ValueError(f"minority_fraction must be in (0, 1); got {minority_fraction!r}.")
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
    seed = check_int("seed", seed, 0)
    if y.size == 0 or counts.size != int(y.max()) + 1:
        raise ValueError(f"counts must have one entry per class of labels ({int(y.max()) + 1 if y.size else 0}); "
                         f"got {counts.size}.")
    rng = np.random.default_rng(seed)
    chosen = []
    for c, want in enumerate(counts):
        pool = np.flatnonzero(y == c)
        if pool.size < want:
            raise ValueError(f"labels hold {pool.size} samples of class {c} but counts asks for {want}; lower counts[{c}].")
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

    test_per_class = check_int("test_per_class", test_per_class, 1)
    seed, standardize = check_int("seed", seed, 0), check_bool("standardize", standardize)
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


STANDIN_MANIFEST = "ncbook-standin.json"
_CIFAR_FOLDERS = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}


def _cifar_class(name: str, root: str | Path):
    """torchvision's class, or, for a stand-in written by :func:`write_cifar_standin`, a subclass that
    checks the files against the stand-in's own md5 manifest instead of the real archives' checksums.

    Everything else (pickle reading, reshaping, the label-name file) is torchvision's own code.
    """
    import torchvision

    check_in("name", name, ("cifar10", "cifar100"))
    base = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
    manifest = Path(root) / _CIFAR_FOLDERS[name] / STANDIN_MANIFEST
    if not manifest.exists():
        return base  # real data: torchvision's class and checksums, unchanged
    md5 = json.loads(manifest.read_text())["md5"]
    return type(f"StandIn{base.__name__}", (base,), {
        "url": None,  # never download over a stand-in
        "train_list": [[f, md5[f]] for f, _ in base.train_list],
        "test_list": [[f, md5[f]] for f, _ in base.test_list],
        "meta": {**base.meta, "md5": md5[base.meta["filename"]]},
    })


def _standin_images(labels: np.ndarray, num_classes: int, rng: np.random.Generator) -> np.ndarray:
    """uint8 ``(n, 3072)`` images (CIFAR's channel-major rows) whose class shows in colour and stripes."""
    n = labels.size
    palette = rng.uniform(0.2, 0.8, size=(num_classes, 3))  # (C, 3) mean colour of each class
    freq = 1 + np.arange(num_classes) % 7  # stripe frequency
    angle = np.pi * (np.arange(num_classes) // 7) / max(1, (num_classes - 1) // 7 + 1)  # stripe direction
    u = np.arange(32) / 32.0
    rows, cols = np.meshgrid(u, u, indexing="ij")
    phase = rows[None] * np.cos(angle)[:, None, None] + cols[None] * np.sin(angle)[:, None, None]  # (C, 32, 32)
    stripes = 0.15 * np.sin(2 * np.pi * freq[:, None, None] * phase)
    img = palette[labels][:, :, None, None] + stripes[labels][:, None] + 0.12 * rng.standard_normal((n, 3, 32, 32))
    return np.clip(np.rint(img * 255), 0, 255).astype(np.uint8).reshape(n, 3072)


def _dump(path: Path, obj) -> str:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_cifar_folder(root: str | Path, name: str, train: tuple, test: tuple, *, note: str,
                       class_names=None, **info) -> Path:
    """Write ``(x, y)`` training and test arrays as a CIFAR folder in torchvision's on-disk format.

    The files are the pickled dicts of the real archives (see :func:`write_cifar_standin`), with a
    ``ncbook-standin.json`` manifest of their md5 sums, ``note`` and ``info``, through which
    :func:`load_cifar` checks them.

    Parameters
    ----------
    root : path
    name : {"cifar10", "cifar100"}
    train, test : (uint8 array of shape (n, 32, 32, 3) or (n, 3072), int array of shape (n,))
        Images in torchvision's ``.data`` layout (height, width, channel) or CIFAR's flat channel-major rows.
    note : str
        What the folder holds (written to the manifest).
    class_names : list of str, optional

    Returns
    -------
    Path of the folder written.
    """
    check_in("name", name, ("cifar10", "cifar100"))
    check_path("root", root)
    if not isinstance(note, str):
        raise TypeError(f"note must be a string (what the folder holds); got {type(note).__name__}.")
    c = 10 if name == "cifar10" else 100
    folder = Path(root) / _CIFAR_FOLDERS[name]
    folder.mkdir(parents=True, exist_ok=True)
    names = list(class_names) if class_names is not None else [f"class_{i}" for i in range(c)]

    def rows(x):
        x = np.asarray(x, dtype=np.uint8)
        return x.transpose(0, 3, 1, 2).reshape(len(x), 3072) if x.ndim == 4 else x.reshape(len(x), 3072)

    (x_tr, y_tr), (x_te, y_te) = [(rows(x), np.asarray(y, dtype=np.int64)) for x, y in (train, test)]
    fn_tr = [f"ncbook_train_{i:06d}.png" for i in range(y_tr.size)]
    fn_te = [f"ncbook_test_{i:06d}.png" for i in range(y_te.size)]
    md5 = {}
    if name == "cifar10":
        parts = np.array_split(np.arange(y_tr.size), 5)
        for b, part in enumerate(parts, 1):
            md5[f"data_batch_{b}"] = _dump(folder / f"data_batch_{b}", {
                "batch_label": f"training batch {b} of 5 ({note})", "labels": y_tr[part].tolist(),
                "data": x_tr[part], "filenames": [fn_tr[i] for i in part]})
        md5["test_batch"] = _dump(folder / "test_batch", {
            "batch_label": f"testing batch 1 of 1 ({note})", "labels": y_te.tolist(), "data": x_te, "filenames": fn_te})
        md5["batches.meta"] = _dump(folder / "batches.meta", {
            "label_names": names, "num_cases_per_batch": int(max(p.size for p in parts)), "num_vis": 3072})
    else:
        for split, y, xs, fn in (("train", y_tr, x_tr, fn_tr), ("test", y_te, x_te, fn_te)):
            md5[split] = _dump(folder / split, {
                "batch_label": f"{split} ({note})", "fine_labels": y.tolist(),
                "coarse_labels": (y // 5).tolist(), "data": xs, "filenames": fn})
        md5["meta"] = _dump(folder / "meta", {"fine_label_names": names,
                                              "coarse_label_names": [f"superclass_{i}" for i in range(20)]})
    (folder / STANDIN_MANIFEST).write_text(json.dumps({"note": note, **info, "md5": md5}, indent=1) + "\n")
    return folder


def write_cifar_standin(root: str | Path, *, train_per_class: int = 20, test_per_class: int = 10,
                        cifar100_train_per_class: int = 5, cifar100_test_per_class: int = 2, seed: int = 0) -> Path:
    """Write small CIFAR-10 and CIFAR-100 stand-ins in torchvision's on-disk formats under ``root``.

    ``root/cifar-10-batches-py/`` gets ``data_batch_1..5``, ``test_batch`` and ``batches.meta``;
    ``root/cifar-100-python/`` gets ``train``, ``test`` and ``meta``: the same pickled dicts as the
    real archives (``data`` uint8 ``(n, 3072)`` channel-major, ``labels`` or ``fine_labels`` and
    ``coarse_labels``, label names), so ``torchvision.datasets.CIFAR10/100(root, download=False)``
    reads them with its own code. Images carry a learnable class signal: a class colour, class
    stripes (frequency and direction) and Gaussian pixel noise. Each folder also gets
    ``ncbook-standin.json`` with the files' md5 sums; :func:`load_cifar` then checks the files against
    these sums instead of the real archives' (torchvision's integrity check would refuse any other
    file), and real downloads, which have no manifest, take torchvision's path unchanged.

    Parameters
    ----------
    root : path
        Folder to write into (created if needed); use it as ``NCBOOK_DATA``.
    train_per_class, test_per_class : int
        CIFAR-10 samples per class (the training ones spread over the five batches).
    cifar100_train_per_class, cifar100_test_per_class : int
        The same for CIFAR-100's 100 classes.
    seed : int

    Returns
    -------
    Path of ``root``.

    Raises
    ------
    ValueError
        If a per-class count is not a positive integer.

    Examples
    --------
    >>> import tempfile
    >>> root = write_cifar_standin(tempfile.mkdtemp(), train_per_class=5, test_per_class=2)
    >>> x, y = cifar_tensors("cifar10", root, train=False)
    >>> tuple(x.shape), torch.bincount(y).tolist()
    ((20, 3, 32, 32), [2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
    """
    for name, v in (("train_per_class", train_per_class), ("test_per_class", test_per_class),
                    ("cifar100_train_per_class", cifar100_train_per_class),
                    ("cifar100_test_per_class", cifar100_test_per_class)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer; got {v!r}.")
    root = Path(check_path("root", root))
    rng = np.random.default_rng(check_int("seed", seed, 0))
    for name, c, n_tr, n_te in (("cifar10", 10, train_per_class, test_per_class),
                                ("cifar100", 100, cifar100_train_per_class, cifar100_test_per_class)):
        y_tr, y_te = rng.permutation(np.repeat(np.arange(c), n_tr)), rng.permutation(np.repeat(np.arange(c), n_te))
        x = _standin_images(np.r_[y_tr, y_te], c, np.random.default_rng([seed, c]))  # one palette for both splits
        write_cifar_folder(root, name, (x[:y_tr.size], y_tr), (x[y_tr.size:], y_te),
                           note="ncbook CIFAR stand-in (synthetic images), not the real data set",
                           seed=seed, train_per_class=int(n_tr), test_per_class=int(n_te))
    return root


def unpack_cifar(archive: str | Path, root: str | Path) -> Path:
    """Extract a pack written by ``tools/pack_data.py`` (a ``.tar.xz`` of one CIFAR folder) into ``root``.

    Only plain files inside the archive's folder are extracted (``tarfile``'s ``"data"`` filter).
    Returns ``root``.
    """
    import tarfile

    check_path("archive", archive)
    check_path("root", root)
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(root, filter="data")
    return Path(root)


def _check_cifar_args(name, root, train, download):
    check_in("name", name, ("cifar10", "cifar100"))
    check_path("root", root)
    check_bool("train", train)
    check_bool("download", download)


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
    _check_cifar_args(name, root, train, download)
    check_callable("transform", transform, allow_none=True)
    cls = _cifar_class(name, root)
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


#: The CIFAR images the gpu profile reads, per data set: in file order, the first
#: ``max(n_c, per_class)`` training images of each class ``c``, where ``n_c`` is the class's count in
#: the exponential long tail of ratio ``imbalance_ratio`` (Cao et al.'s CIFAR-10-LT construction with
#: ``n_max`` the largest class), and the first ``test_per_class`` test images of each class. For
#: CIFAR-10: 5000, 2997, 1796, 1077, 645 and five times 500 training images (14015), and 5000 test
#: images: 58.4 MB of pixels, which xz packs into one file under 60 MiB (the whole test set would
#: not fit beside them). Every gpu chapter draws its subsets (CIFAR-10-LT IF 100, STEP 500/50, three
#: classes, balanced 500 a class) from these images, so a pack and a full download give the same runs.
GPU_SUBSETS = {"cifar10": {"imbalance_ratio": 100.0, "per_class": 500, "test_per_class": 500}}
SUBSETS = ("gpu", "gpu-balanced")


def gpu_subset_indices(labels, name: str = "cifar10", *, train: bool = True, balanced: bool = False) -> torch.Tensor:
    """Indices (ascending) of the gpu profile's images in a CIFAR split given in file order.

    Parameters
    ----------
    labels : int array-like of shape (n,)
        The labels of the whole split (or of a set that already holds the gpu images, e.g. a pack:
        the selection is the same on it).
    name : {"cifar10"}
        The data set (see :data:`GPU_SUBSETS`).
    train : bool
        Training split (the long tail and the balanced part) or test split (``test_per_class`` a class).
    balanced : bool
        Training split only: the first ``per_class`` images of each class (nc_primer's and MR2's
        balanced runs).

    Returns
    -------
    LongTensor of shape (m,), sorted ascending.

    Raises
    ------
    ValueError
        For a data set without a gpu subset, or ``labels`` that are empty, negative, of one class, or miss a
        class below their largest.
    TypeError
        For ``labels`` that are not integers, or flags that are not booleans.

    Examples
    --------
    >>> y = torch.arange(10).repeat_interleave(5000)           # CIFAR-10's class sizes
    >>> int(gpu_subset_indices(y).numel()), int(gpu_subset_indices(y, balanced=True).numel())
    (14015, 5000)
    """
    check_in("name", name, tuple(GPU_SUBSETS))
    train, balanced = check_bool("train", train), check_bool("balanced", balanced)
    spec = GPU_SUBSETS[name]
    y = check_labels(labels).cpu().numpy()
    if y.size == 0:
        raise ValueError("labels must hold the labels of a split (at least one); got an empty array.")
    c = int(y.max()) + 1
    sizes = np.bincount(y, minlength=c)
    if c < 2 or not sizes.all():
        raise ValueError(f"labels must hold every class of the split (at least 2, labelled 0..C-1); got classes "
                         f"{_short(np.flatnonzero(sizes))} of [0, {c}): a subset drawn from them would silently lack "
                         "the missing ones.")
    if not train:
        want = np.full(c, spec["test_per_class"])
    elif balanced:
        want = np.full(c, spec["per_class"])
    else:
        n_max = int(sizes.max())
        exps = np.arange(c) / max(c - 1, 1)  # the long tail of long_tailed_counts, without its empty-class check
        want = np.maximum([int(n_max * spec["imbalance_ratio"] ** (-e)) for e in exps], spec["per_class"])
    keep = [np.flatnonzero(y == k)[: int(min(want[k], sizes[k]))] for k in range(c)]
    return torch.as_tensor(np.sort(np.concatenate(keep)), dtype=torch.long)


def _read_manifest(folder: Path) -> dict:
    path = folder / STANDIN_MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def cifar_tensors(name: str, root: str | Path = "data", *, train: bool = True, download: bool = False,
                  subset: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A CIFAR split as normalised float32 tensors ``(n, 3, 32, 32)`` and int64 labels.

    Keeping the whole set as one tensor lets training run from device memory (GPU).
    Raises :class:`DatasetUnavailableError` like :func:`load_cifar`. When the folder is missing but
    ``root/ncbook-<name>.tar.xz`` (written by ``tools/pack_data.py``) is there, it is unpacked first.
    At the smoke scale
    (``NCBOOK_SCALE=smoke``) a missing data set is replaced by the stand-in of
    :func:`write_cifar_standin`, written under ``root``.

    Parameters
    ----------
    name : {"cifar10", "cifar100"}
    root : path
    train : bool
    download : bool
    subset : {None, "gpu", "gpu-balanced"}
        ``None``: the whole split (or whatever a custom pack holds). ``"gpu"``: the gpu profile's images
        (:func:`gpu_subset_indices`), the same from a full download and from a gpu pack;
        ``"gpu-balanced"``: of those, the first ``per_class`` training images of each class (the test
        split is the same for both).

    Raises
    ------
    ValueError
        For an unknown ``subset``, a gpu pack read without ``subset`` (it does not hold the whole
        split) or another pack read with one.
    """
    _check_cifar_args(name, root, train, download)
    if subset is not None:
        check_in("subset", subset, SUBSETS)
    folder = Path(root) / _CIFAR_FOLDERS[name]
    packed = Path(root) / f"ncbook-{name}.tar.xz"
    if not folder.exists() and packed.exists():
        unpack_cifar(packed, root)
    elif scale() == "smoke" and not folder.exists():
        write_cifar_standin(root)
    ds = load_cifar(name, root, train=train, download=download)
    x = torch.as_tensor(ds.data).permute(0, 3, 1, 2)
    y = torch.as_tensor(ds.targets, dtype=torch.long)
    held = _read_manifest(folder)
    if held.get("subset") == "gpu" and subset is None:
        raise ValueError(f"{folder} holds the gpu profile's subset of {name} ({held.get('train_images')} training "
                         f"images), not the whole set: pass subset='gpu' (NCBOOK_PROFILE=gpu) or give the full files.")
    if subset is not None and "train_subset" in held and held.get("subset") != "gpu":
        raise ValueError(f"{folder} is a pack of {held['train_subset']!r}, not of the gpu subset that subset={subset!r} "
                         f"asks for: pack it with tools/pack_data.py (its default, --train gpu).")
    if subset is not None:
        if held.get("subset") == "gpu":  # a gpu pack holds the selection already; the balanced part is its head
            keep = gpu_subset_indices(y, name, balanced=True) if (train and subset == "gpu-balanced") else None
        else:
            keep = gpu_subset_indices(y, name, train=train, balanced=subset == "gpu-balanced")
        if keep is not None:
            x, y = x[keep], y[keep]
    x = x.float().div_(255)
    mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
    return (x - mean) / std, y


def cifar_augment(x: torch.Tensor, generator: torch.Generator | None = None, padding: int = 4, *,
                  mean=CIFAR_MEAN, std=CIFAR_STD) -> torch.Tensor:
    """Random crop (black padding of ``padding`` pixels) and horizontal flip of a normalised batch, on its device.

    The long-tailed CIFAR recipe (Cao et al. 2019, and every repository built on it) runs torchvision's
    ``RandomCrop(32, padding=4)`` and ``RandomHorizontalFlip()`` on the images and normalises afterwards,
    so the border is black. ``x`` is already normalised here (:func:`cifar_tensors`), so the border is
    black as normalised, ``(0 - mean) / std`` per channel; padding with zeros would give the mean colour.
    Per image, the crop offsets (rows, then columns, each uniform in ``[0, 2 padding]``) and the flip
    (probability 1/2) are independent draws.

    Parameters
    ----------
    x : Tensor of shape (b, c, h, w), floating point
        Images normalised with ``mean`` and ``std``.
    generator : torch.Generator, optional
        On ``x``'s device; makes the augmentation reproducible.
    padding : int
        Pixels of black added on each side before the crop (``>= 0``).
    mean, std : sequence of c floats
        The per-channel normalisation ``x`` carries (CIFAR's by default); ``mean=(0,) * c, std=(1,) * c`` for
        images in ``[0, 1]``.

    Returns
    -------
    Tensor of the same shape and dtype.

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not a 4-D floating tensor, ``padding < 0``, or ``mean``/``std`` are not ``c`` finite
        numbers (``std > 0``).

    References
    ----------
    Cao et al., NeurIPS 2019, arXiv:1906.07413 (the CIFAR-LT training recipe); torchvision's ``RandomCrop``.

    Examples
    --------
    >>> x = torch.zeros(1, 3, 4, 4)                       # a normalised image of the mean colour
    >>> out = cifar_augment(x, torch.Generator().manual_seed(1), padding=4)
    >>> round(float(out.min()), 4)                        # black border pixels (red channel), not 0
    -1.9895
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor batch of shape (b, c, h, w); got {type(x).__name__}.")
    if x.ndim != 4:
        raise ValueError(f"x must have shape (b, c, h, w); got {tuple(x.shape)}.")
    if not x.is_floating_point():
        raise TypeError(f"x must hold normalised floating-point images; got dtype {x.dtype}.")
    padding = check_int("padding", padding, 0)
    b, c, h, w = x.shape
    m = check_class_vector("mean", mean, c, signed=True).to(device=x.device, dtype=x.dtype)
    sd = check_class_vector("std", std, c, positive=True).to(device=x.device, dtype=x.dtype)
    black = (0 - m) / sd  # Normalize of a black pixel, as torchvision computes it
    padded = black.view(1, c, 1, 1).expand(b, c, h + 2 * padding, w + 2 * padding).clone()
    padded[:, :, padding:padding + h, padding:padding + w] = x
    dx = torch.randint(0, 2 * padding + 1, (b,), device=x.device, generator=generator)
    dy = torch.randint(0, 2 * padding + 1, (b,), device=x.device, generator=generator)
    rows = (dy[:, None] + torch.arange(h, device=x.device)[None])  # (b, h)
    cols = (dx[:, None] + torch.arange(w, device=x.device)[None])  # (b, w)
    out = padded[torch.arange(b, device=x.device)[:, None, None, None], torch.arange(c, device=x.device)[None, :, None, None],
                 rows[:, None, :, None], cols[:, None, None, :]]
    flip = torch.rand(b, device=x.device, generator=generator) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def make_loader(x: torch.Tensor, y: torch.Tensor, batch_size: int, *, shuffle: bool = True, seed: int = 0,
                drop_last: bool = False) -> torch.utils.data.DataLoader:
    """A ``DataLoader`` over tensors with a seeded generator (reproducible order).

    Raises ``ValueError`` for ``drop_last=True`` with fewer samples than ``batch_size`` (no batch at all).
    """
    batch_size = check_int("batch_size", batch_size, 1)
    shuffle, drop_last, seed = check_bool("shuffle", shuffle), check_bool("drop_last", drop_last), check_int("seed", seed, 0)
    if not isinstance(x, torch.Tensor) or x.ndim < 1:
        raise TypeError(f"x must be a torch.Tensor of shape (n, ...); got {type(x).__name__}.")
    y = check_labels(y, name="y", n=x.shape[0], rows_of="x")
    if drop_last and x.shape[0] < batch_size:
        raise ValueError(f"drop_last=True with {x.shape[0]} samples < batch_size = {batch_size} gives no batch at all "
                         "(an epoch would train on nothing); lower batch_size or pass drop_last=False.")
    ds = torch.utils.data.TensorDataset(x, y)
    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=shuffle, generator=g, drop_last=drop_last)
