"""Pack the CIFAR images a GPU machine without network needs into one file, from a local torchvision download.

A lent GPU machine has no network and carries at most 64 MiB of files: pack on a machine that has the data,
copy one file, and the chapters unpack it on first use (``ncbook.data.cifar_tensors`` looks for
``$NCBOOK_DATA/ncbook-<dataset>.tar.xz``).

    python tools/pack_data.py --root data                                  # what the gpu profile reads
    python tools/pack_data.py --root data --dataset cifar10 --train lt:100 # a custom subset (full-profile runs)

The default packs exactly the images the gpu profile reads (``ncbook.data.GPU_SUBSETS``): of CIFAR-10, the
first max(n_c, 500) training images of each class, n_c the class's CIFAR-10-LT IF 100 count (14015 images:
CIFAR-10-LT's 12406 are drawn from them), and the first 500 test images of each class (5000). That is
19015 images of 3072 bytes, 58.4 MB of pixels; xz compresses natural images little (the CIFAR-10 python
archive is 163 MiB for 186 MB of pickles, a ratio of about 0.92), so the pack stays under 60 MiB. The whole
test set beside CIFAR-10-LT (12406 + 10000 images, 68.8 MB) would not fit with certainty, which is why the
gpu profile tests on 500 images a class.

The pack holds the images in torchvision's own on-disk format, with a manifest of md5 sums (and of what it
holds), compressed with xz; it must stay under ``--max-mib`` (60 MiB). ``--train`` picks another training
subset instead, exactly as the chapters draw it:

- ``lt:R``     exponential long tail with imbalance ratio R (``long_tailed_counts`` + ``make_imbalanced``, seed 0)
- ``step:R``   STEP imbalance with half minorities
- ``classes:0,1,2``  every training image of those classes
- ``all``      the whole training set (too large for 60 MiB)
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncbook import data  # noqa: E402


def select_train(y: np.ndarray, spec: str, seed: int = 0) -> np.ndarray:
    """Indices (sorted) of the training images ``spec`` asks for; see the module docstring."""
    c = int(y.max()) + 1
    n_max = int(np.bincount(y).max())
    kind, _, arg = spec.partition(":")
    if kind == "gpu":
        return data.gpu_subset_indices(y).numpy()
    if kind == "all":
        return np.arange(y.size)
    if kind == "lt":
        counts = data.long_tailed_counts(n_max, c, float(arg))
    elif kind == "step":
        counts = data.long_tailed_counts(n_max, c, float(arg), "step", minority_fraction=0.5)
    elif kind == "classes":
        keep = [int(k) for k in arg.split(",")]
        return np.flatnonzero(np.isin(y, keep))
    else:
        raise SystemExit(f"--train must be gpu, all, lt:R, step:R or classes:a,b,...; got {spec!r}.")
    return data.make_imbalanced(y, counts, seed=seed).numpy()


def pack(root: str, dataset: str, train_spec: str, out: str, *, test_per_class: int | None = None,
         max_mib: float = 60.0) -> Path:
    """Write ``out/ncbook-<dataset>.tar.xz``; ``train_spec="gpu"`` packs the gpu profile's images (train and test)."""
    ds_tr = data.load_cifar(dataset, root, train=True)
    ds_te = data.load_cifar(dataset, root, train=False)
    y_tr, y_te = np.asarray(ds_tr.targets), np.asarray(ds_te.targets)
    keep = select_train(y_tr, train_spec)
    test_keep = np.arange(y_te.size)
    if train_spec == "gpu":
        if test_per_class is not None:
            raise SystemExit("--test-per-class does not go with the gpu subset: it fixes its own test images.")
        test_keep = data.gpu_subset_indices(y_te, dataset, train=False).numpy()
        info = dict(subset="gpu", train_images=int(keep.size), test_images=int(test_keep.size))
    else:
        if test_per_class is not None:
            test_keep = np.sort(np.concatenate([np.flatnonzero(y_te == k)[:test_per_class]
                                                for k in range(int(y_te.max()) + 1)]))
        info = dict(train_subset=train_spec, train_images=int(keep.size), test_images=int(test_keep.size))
    target = Path(out) / f"ncbook-{dataset}.tar.xz"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = data.write_cifar_folder(
            tmp, dataset, (ds_tr.data[keep], y_tr[keep]), (ds_te.data[test_keep], y_te[test_keep]),
            note=f"ncbook pack of {dataset}: training subset {train_spec}, {test_keep.size} test images",
            class_names=ds_tr.classes, **info)
        with tarfile.open(target, "w:xz", preset=9) as tar:
            tar.add(folder, arcname=folder.name)
    raw = (keep.size + test_keep.size) * 3072
    mib = target.stat().st_size / 2**20
    print(f"{target}: {keep.size} training and {test_keep.size} test images, {raw / 1e6:.1f} MB of pixels, "
          f"{mib:.1f} MiB packed (limit {max_mib:g} MiB)")
    if mib > max_mib:
        target.unlink()
        raise SystemExit(f"the pack is {mib:.1f} MiB, above {max_mib} MiB: choose a smaller --train subset or "
                         f"pass --test-per-class (e.g. 500).")
    return target


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="data", help="folder holding torchvision's CIFAR download")
    ap.add_argument("--dataset", choices=["cifar10", "cifar100"], default="cifar10")
    ap.add_argument("--train", default="gpu", help="training subset: gpu (default: what the gpu profile reads), "
                                                   "all, lt:R, step:R or classes:a,b,...")
    ap.add_argument("--test-per-class", type=int, default=None, help="keep only the first N test images per class")
    ap.add_argument("--out", default="packs", help="folder for ncbook-<dataset>.tar.xz (copy it into $NCBOOK_DATA)")
    ap.add_argument("--max-mib", type=float, default=60.0)
    args = ap.parse_args(argv)
    if args.train == "gpu" and args.dataset not in data.GPU_SUBSETS:
        raise SystemExit(f"the gpu profile reads {sorted(data.GPU_SUBSETS)} only; got --dataset {args.dataset}.")
    pack(args.root, args.dataset, args.train, args.out, test_per_class=args.test_per_class, max_mib=args.max_mib)


if __name__ == "__main__":
    main()
