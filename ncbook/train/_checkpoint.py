"""Checkpoints that restore a run exactly: model, optimizer, scheduler, loss state, every RNG.

Only tensors and plain Python values are stored, so ``torch.load(weights_only=True)``
reads them back (numpy scalars would not load).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from .._validation import check_int, check_path

__all__ = ["rng_state", "set_rng_state", "save_checkpoint", "load_checkpoint", "seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (CPU and CUDA); ``seed`` an integer ``>= 0``."""
    seed = check_int("seed", seed, 0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict:
    """Global RNG states as tensors and plain Python values."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _tuplify(x):
    return tuple(_tuplify(v) for v in x) if isinstance(x, (list, tuple)) else x


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned."""
    random.setstate(_tuplify(state["python"]))
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | Path, payload: dict) -> None:
    """Write ``payload`` atomically (a crash mid-write keeps the previous checkpoint)."""
    path = Path(check_path("path", path))
    if not isinstance(payload, dict):
        raise TypeError(f"payload must be a dict of tensors and plain values; got {type(payload).__name__}.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | Path, map_location=None) -> dict:
    """Read a checkpoint with ``weights_only=True`` (no arbitrary code runs on load)."""
    return torch.load(Path(check_path("path", path)), map_location=map_location, weights_only=True)
