"""The quick/full profile switch and device choice.

``quick`` runs every chapter on 2 CPU cores in about a minute, offline;
``full`` runs the papers' settings on one GPU.

``NCBOOK_SCALE=smoke`` (with ``NCBOOK_PROFILE=full``) keeps every code path of the full
profile (CIFAR through torchvision, ResNet-32, on-device augmentation, checkpoints, results and
claims) but shrinks epochs, steps and sizes so that CI runs it on a CPU against the CIFAR
stand-in of :func:`ncbook.data.write_cifar_standin`. Its results go to a scratch folder, never
to ``results/``.
"""

from __future__ import annotations

import os
import tempfile

import torch

__all__ = ["profile", "scale", "default_device", "native_bf16", "usable_cores", "data_root", "results_dir", "checkpoint_dir", "show_progress", "PROFILES", "SCALES"]

PROFILES = ("quick", "full")
SCALES = ("paper", "smoke")


def profile() -> str:
    """Return the active profile, ``"quick"`` or ``"full"``.

    Read from the ``NCBOOK_PROFILE`` environment variable; when it is unset,
    ``"full"`` if a CUDA device is available, else ``"quick"``.

    Raises
    ------
    ValueError
        If ``NCBOOK_PROFILE`` is set to anything else.
    """
    value = os.environ.get("NCBOOK_PROFILE", "").strip().lower()
    if not value:
        return "full" if torch.cuda.is_available() else "quick"
    if value not in PROFILES:
        raise ValueError(f"NCBOOK_PROFILE must be one of {list(PROFILES)}; got {value!r}.")
    return value


def scale() -> str:
    """Return the active scale, ``"paper"`` (the default) or ``"smoke"``.

    Read from ``NCBOOK_SCALE``. ``"smoke"`` shrinks the full profile's epochs, steps and sizes
    (every code path kept) for CI on a CPU; the quick profile ignores it.

    Raises
    ------
    ValueError
        If ``NCBOOK_SCALE`` is set to anything else.
    """
    value = os.environ.get("NCBOOK_SCALE", "").strip().lower() or "paper"
    if value not in SCALES:
        raise ValueError(f"NCBOOK_SCALE must be one of {list(SCALES)}; got {value!r}.")
    return value


def _check_text(name: str, value) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a string (a folder name or path); got {type(value).__name__} {value!r}.")
    return value


def show_progress() -> bool:
    """Whether training loops and comparisons show progress bars: False when ``NCBOOK_PROGRESS=0``.

    The default of ``progress`` in :func:`ncbook.train.fit` and :func:`ncbook.train.run_parallel`.

    Raises
    ------
    ValueError
        If ``NCBOOK_PROGRESS`` is set to anything but ``"0"``, ``"1"`` or the empty string.

    Examples
    --------
    >>> isinstance(show_progress(), bool)   # False where NCBOOK_PROGRESS=0
    True
    """
    value = os.environ.get("NCBOOK_PROGRESS", "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"NCBOOK_PROGRESS must be '0' (no progress bars), '1' or empty; got {value!r}.")
    return value != "0"


def _as_device(device, name: str = "device") -> torch.device:
    """``torch.device(device)``, with a ``TypeError``/``ValueError`` naming ``name`` for what is not a device."""
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, (str, int)) or isinstance(device, bool):
        raise TypeError(f"{name} must be a torch.device, a string such as 'cpu' or 'cuda:0', or an index; "
                        f"got {type(device).__name__} {device!r}.")
    try:
        return torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{name} must name a device such as 'cpu', 'cuda' or 'cuda:0'; got {device!r} ({err}).") from None


def default_device() -> torch.device:
    """``cuda`` when available, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def native_bf16(device: str | torch.device | None = None) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware (so that bf16 autocast is faster).

    This decides what ``amp=True`` does in :func:`ncbook.train.fit`: bf16 autocast where it is
    native, float32 elsewhere (where bf16 products are emulated and slower than float32).

    Parameters
    ----------
    device : str or torch.device, optional
        Defaults to :func:`default_device`.

    Returns
    -------
    bool
        CUDA: ``torch.cuda.is_bf16_supported(including_emulation=False)`` (compute capability 8.0
        and later; a T4 answers False). CPU: the AVX512-BF16 or AMX instructions, from PyTorch's
        CPU feature probe. Any other device: False.

    Examples
    --------
    >>> native_bf16("meta")    # a device that computes nothing
    False
    >>> isinstance(native_bf16("cpu"), bool)   # True on CPUs with AVX512-BF16 or AMX
    True
    """
    device = default_device() if device is None else _as_device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == "cpu":
        probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private probes: absent means no
        return any(getattr(torch.cpu, name, lambda: False)() for name in probes)
    return False


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity on Linux, else the machine's count).

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def data_root() -> str:
    """Folder for data sets: ``NCBOOK_DATA`` if set, else ``"data"`` (relative to the working directory).

    At the smoke scale without ``NCBOOK_DATA``: ``<tmp>/ncbook-standin``, where
    :func:`ncbook.data.cifar_tensors` writes the CIFAR stand-in when it is missing.
    """
    value = os.environ.get("NCBOOK_DATA", "").strip()
    if value:
        return value
    return os.path.join(tempfile.gettempdir(), "ncbook-standin") if scale() == "smoke" else "data"


def results_dir(default: str = "../results") -> str:
    """Folder for recorded results and claims: ``NCBOOK_RESULTS`` if set, else ``default``
    (``../results`` as seen from ``book/``).

    At the smoke scale without ``NCBOOK_RESULTS``: ``<tmp>/ncbook-smoke-results``, so that stand-in
    numbers never land in the committed ``results/``.
    """
    _check_text("default", default)
    value = os.environ.get("NCBOOK_RESULTS", "").strip()
    if value:
        return value
    return os.path.join(tempfile.gettempdir(), "ncbook-smoke-results") if scale() == "smoke" else default



def checkpoint_dir(name: str, default: str = "../checkpoints") -> str:
    """Folder for the checkpoints of run ``name``: ``$NCBOOK_CHECKPOINTS/name``, else ``default/name``
    (``../checkpoints``, git-ignored, as seen from ``book/``); at the smoke scale ``<tmp>/ncbook-smoke-checkpoints/name``.

    A full-profile run that finds its ``last.pt`` there resumes from it (see :func:`ncbook.train.fit`).
    """
    _check_text("name", name)
    _check_text("default", default)
    base = os.environ.get("NCBOOK_CHECKPOINTS", "").strip()
    if not base:
        base = os.path.join(tempfile.gettempdir(), "ncbook-smoke-checkpoints") if scale() == "smoke" else default
    return os.path.join(base, name)
