"""Recorded results of full-profile runs: one small JSON file per run under ``results/``.

Chapters show these recorded full results next to the live quick ones, and the
reproduction page reads them. Only plain JSON types are written.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
from pathlib import Path
from typing import Any

import torch

__all__ = ["save_result", "load_results", "device_name", "record_claim", "load_claims"]


def device_name() -> str:
    """A human-readable name of the device the run used (GPU model, or the CPU)."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({platform.processor() or platform.machine()})"


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().tolist()
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple, dict, str)):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def save_result(folder: str | Path, *, chapter: str, setting: str, seed: int, metrics: dict, wall_seconds: float,
                config: dict | None = None) -> Path:
    """Write one run's result as ``<folder>/<chapter>/<setting>-seed<seed>.json``.

    Parameters
    ----------
    folder : path
        Usually ``results``.
    chapter : str
        The chapter's file stem, e.g. ``"inverse_reweighting"``.
    setting : str
        A short name of the configuration, e.g. ``"cifar10lt-if100-ce"`` (letters, digits, ``-_.``).
    seed : int
    metrics : dict
        Final numbers (tensors and numpy values are converted; NaN/inf become ``null``).
    wall_seconds : float
    config : dict, optional
        Hyper-parameters of the run.

    Returns
    -------
    Path of the file written.

    Raises
    ------
    ValueError
        If ``setting`` or ``chapter`` holds characters other than letters, digits, ``-``, ``_``, ``.``.
    """
    for name, value in (("chapter", chapter), ("setting", setting)):
        if not value or not all(ch.isalnum() or ch in "-_." for ch in value):
            raise ValueError(f"{name} must be letters, digits, '-', '_' or '.'; got {value!r}.")
    record = {
        "chapter": chapter, "setting": setting, "seed": int(seed), "metrics": _plain(metrics),
        "wall_seconds": float(wall_seconds), "device": device_name(), "torch": torch.__version__,
        "date": _dt.date.today().isoformat(), "config": _plain(config or {}),
    }
    path = Path(folder) / chapter / f"{setting}-seed{int(seed)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def load_results(folder: str | Path, chapter: str | None = None) -> list[dict]:
    """All recorded results under ``folder`` (optionally one chapter's), sorted by setting and seed.

    Returns an empty list when nothing was recorded yet.
    """
    root = Path(folder) if chapter is None else Path(folder) / chapter
    if not root.exists():
        return []
    records = [json.loads(p.read_text()) for p in sorted(root.rglob("*.json")) if "claims" not in p.relative_to(root).parts]
    return sorted(records, key=lambda r: (r["chapter"], r["setting"], r["seed"]))


def record_claim(folder: str | Path, *, chapter: str, claim: str, ours: float, setting: str, profile: str,
                 paper: float | str | None = None, tolerance: str = "") -> Path:
    """Record one of a chapter's checks of a paper's claim, for the reproduction page.

    Each call appends (or replaces, by ``claim``) an entry in
    ``<folder>/claims/<profile>/<chapter>.json``: quick records are rebuilt by every book build,
    full records come from a GPU run and are meant to be committed. The chapter computes ``ours``; ``paper`` is the
    paper's quoted number (or a short quoted statement), never computed here.

    Parameters
    ----------
    folder : path
        Usually ``../results`` seen from ``book/``.
    chapter : str
        The chapter's file stem.
    claim : str
        One sentence: what the paper claims.
    ours : float
        The value this run computed.
    setting : str
        The setting of our run (data, model, sizes).
    profile : {"quick", "full"}
    paper : float or str, optional
        The paper's number as quoted.
    tolerance : str
        How close ours must be to count as reproduced, in words.

    Returns
    -------
    Path of the JSON file.
    """
    if profile not in ("quick", "full"):
        raise ValueError(f"profile must be 'quick' or 'full'; got {profile!r}.")
    path = Path(folder) / "claims" / profile / f"{chapter}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = json.loads(path.read_text()) if path.exists() else []
    entries = [e for e in entries if e["claim"] != claim]
    entries.append({"chapter": chapter, "claim": claim, "paper": _plain(paper), "ours": _plain(ours),
                    "setting": setting, "profile": profile, "tolerance": tolerance})
    path.write_text(json.dumps(entries, indent=1) + "\n")
    return path


def load_claims(folder: str | Path) -> list[dict]:
    """Every recorded claim under ``<folder>/claims``, chapter by chapter, quick before full (empty list if none)."""
    root = Path(folder) / "claims"
    if not root.exists():
        return []
    return [e for p in sorted(root.glob("*/*.json"), key=lambda p: (p.stem, p.parent.name != "quick"))
            for e in json.loads(p.read_text())]
