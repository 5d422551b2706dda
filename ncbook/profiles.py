"""The quick/full profile switch and device choice.

``quick`` runs every chapter on 2 CPU cores in about a minute, offline;
``full`` runs the papers' settings on one GPU.
"""

from __future__ import annotations

import os

import torch

__all__ = ["profile", "default_device", "data_root", "PROFILES"]

PROFILES = ("quick", "full")


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


def default_device() -> torch.device:
    """``cuda`` when available, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def data_root() -> str:
    """Folder for downloaded data sets: ``NCBOOK_DATA`` if set, else ``"data"`` (relative to the working directory)."""
    return os.environ.get("NCBOOK_DATA", "").strip() or "data"
