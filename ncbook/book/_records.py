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

from ..profiles import PROFILES, native_bf16

__all__ = ["save_result", "load_results", "device_name", "record_claim", "load_claims", "claim_verdict",
           "describe_tolerance"]


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

    Besides the arguments the record holds the device, ``bf16_native`` (whether it multiplies bf16
    matrices in hardware, so that ``fit(amp=True)`` trained with bf16 products: see
    :func:`ncbook.native_bf16`), the torch version and the date.

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
        "wall_seconds": float(wall_seconds), "device": device_name(), "bf16_native": native_bf16(),
        "torch": torch.__version__,
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


KINDS = ("value", "comparison")
VERDICTS = ("reproduced", "not reproduced", "not run")
_CHECKS = ("abs", "rel", "above", "below", "between")


def _check_tolerance(tolerance: dict, paper, derived) -> dict:
    """Validate a tolerance spec; return it with its reference value resolved."""
    if not isinstance(tolerance, dict):
        raise TypeError(f"tolerance must be a dict such as {{'abs': 1e-4, 'against': 'derived'}} or "
                        f"{{'above': 0}}; got {type(tolerance).__name__} {tolerance!r}.")
    checks = [k for k in _CHECKS if k in tolerance]
    unknown = set(tolerance) - set(_CHECKS) - {"against"}
    if len(checks) != 1 or unknown:
        raise ValueError(f"tolerance must hold exactly one of {_CHECKS} (plus 'against' for 'abs'/'rel'); "
                         f"got {tolerance!r}.")
    check = checks[0]
    if check in ("abs", "rel"):
        against = tolerance.get("against")
        ref = {"paper": paper, "derived": derived}.get(against)
        if against not in ("paper", "derived") or ref is None or isinstance(ref, str):
            raise ValueError(f"tolerance {check!r} needs against='paper' or 'derived' naming a numeric value "
                             f"recorded with the claim; got against={against!r} (paper={paper!r}, derived={derived!r}).")
    elif "against" in tolerance:
        raise ValueError(f"'against' goes with 'abs' or 'rel' only; got {tolerance!r}.")
    if check == "between" and not (isinstance(tolerance["between"], (list, tuple)) and len(tolerance["between"]) == 2):
        raise ValueError(f"tolerance 'between' must be [low, high]; got {tolerance['between']!r}.")
    return tolerance


def _flat(value) -> list:
    return [float(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def claim_verdict(ours, tolerance: dict, *, paper=None, derived=None) -> str:
    """The verdict of one claim: ``"reproduced"``, ``"not reproduced"`` or ``"not run"`` (no measured value).

    ``tolerance`` holds one check: ``{"abs": t, "against": "paper" | "derived"}`` (every entry within
    ``t``), ``{"rel": t, "against": ...}`` (relative), ``{"above": x}``, ``{"below": x}`` or
    ``{"between": [lo, hi]}`` (every entry strictly above / below / inside).

    Examples
    --------
    >>> claim_verdict(0.7080, {"abs": 1e-3, "against": "derived"}, derived=0.7079)
    'reproduced'
    >>> claim_verdict(-0.2, {"above": 0})
    'not reproduced'
    >>> claim_verdict(None, {"above": 0})
    'not run'
    """
    if ours is None:
        return "not run"
    values = _flat(ours)
    if any(not math.isfinite(v) for v in values):
        return "not reproduced"
    if "abs" in tolerance or "rel" in tolerance:
        ref = _flat(paper if tolerance["against"] == "paper" else derived)
        if len(ref) != len(values):
            return "not reproduced"
        if "abs" in tolerance:
            ok = all(abs(v - r) <= tolerance["abs"] for v, r in zip(values, ref))
        else:
            ok = all(abs(v - r) <= tolerance["rel"] * abs(r) for v, r in zip(values, ref))
    elif "above" in tolerance:
        ok = all(v > tolerance["above"] for v in values)
    elif "below" in tolerance:
        ok = all(v < tolerance["below"] for v in values)
    else:
        lo, hi = tolerance["between"]
        ok = all(lo <= v <= hi for v in values)
    return "reproduced" if ok else "not reproduced"


def describe_tolerance(tolerance: dict) -> str:
    """The tolerance in words, e.g. ``"within 0.001 of the derived value"``."""
    if "abs" in tolerance:
        return f"within {tolerance['abs']:g} of the {tolerance['against']} value"
    if "rel" in tolerance:
        return f"within {100 * tolerance['rel']:g}% of the {tolerance['against']} value"
    if "above" in tolerance:
        return f"above {tolerance['above']:g}"
    if "below" in tolerance:
        return f"below {tolerance['below']:g}"
    lo, hi = tolerance["between"]
    return f"between {lo:g} and {hi:g}"


def record_claim(folder: str | Path, *, chapter: str, claim: str, ours, setting: str, profile: str,
                 tolerance: dict, paper=None, source: str | None = None, derived=None,
                 derived_how: str | None = None, kind: str = "value", ranking: list | None = None) -> Path:
    """Record one of a chapter's checks of a paper's claim, for the reproduction page.

    Three kinds of value are kept apart: ``paper`` is quoted from the paper (a number or a short
    statement, never computed here) and needs ``source`` (table, figure, theorem or equation, and its
    setting); ``derived`` is a value this book derived itself (closed form, exact solve) and needs
    ``derived_how``; ``ours`` is what our run measured. The verdict (:func:`claim_verdict`) is computed
    from ``tolerance`` and stored with the record.

    Each call appends (or replaces, by ``claim``) an entry in ``<folder>/claims/<profile>/<chapter>.json``:
    quick records are rebuilt by every book build, full records come from a GPU run and are committed.

    Parameters
    ----------
    folder : path
        Usually ``../results`` seen from ``book/``.
    chapter : str
        The chapter's file stem.
    claim : str
        One sentence: what is claimed, with its hypotheses.
    ours : float, list of float or None
        The value this run measured (``None``: not run; the verdict is then ``"not run"``).
    setting : str
        The setting of our run (data, model, sizes).
    profile : {"quick", "gpu", "full"}
    tolerance : dict
        One check, see :func:`claim_verdict`.
    paper : float, list or str, optional
        The paper's number or statement, as quoted.
    source : str, optional
        Where ``paper`` comes from (e.g. ``"Table 2, ResNet-32, CIFAR-10-LT IF 100"``); required with ``paper``.
    derived : float or list, optional
        A value derived in this book (never in the paper column).
    derived_how : str, optional
        How ``derived`` was obtained; required with ``derived``.
    kind : {"value", "comparison"}
        A comparison claim must give ``ranking``.
    ranking : list of [name, value], optional
        For comparisons: the methods ranked by our measurement, best first.

    Returns
    -------
    Path of the JSON file.

    Raises
    ------
    ValueError
        For an unknown ``profile`` or ``kind``, a ``paper`` value without ``source``, a ``derived`` value
        without ``derived_how``, a comparison without ``ranking``, or a malformed ``tolerance``.
    TypeError
        If ``tolerance`` is not a dict.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = record_claim(d, chapter="seli", claim="c", ours=0.708, setting="s", profile="quick",
    ...                      derived=0.7079, derived_how="closed form", tolerance={"abs": 1e-3, "against": "derived"})
    ...     load_claims(d)[0]["verdict"]
    'reproduced'
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {list(PROFILES)}; got {profile!r}.")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}.")
    if paper is not None and not (source and str(source).strip()):
        raise ValueError(f"a paper value needs its source (table, figure, theorem or equation); claim {claim!r} "
                         f"has paper={paper!r} and source={source!r}.")
    if derived is not None and not (derived_how and str(derived_how).strip()):
        raise ValueError(f"a derived value needs derived_how (how this book computed it); claim {claim!r} "
                         f"has derived={derived!r}.")
    if derived is not None and isinstance(_plain(derived), str):
        raise ValueError(f"derived must be a number or a list of numbers; got {derived!r}.")
    if kind == "comparison" and not ranking:
        raise ValueError(f"a comparison claim must state the ranking of the methods it compares; claim {claim!r}.")
    tolerance = dict(_check_tolerance(tolerance, _plain(paper), _plain(derived)))
    ours = _plain(ours)
    record = {"chapter": chapter, "claim": claim, "kind": kind, "paper": _plain(paper), "source": source,
              "derived": _plain(derived), "derived_how": derived_how, "ours": ours, "setting": setting,
              "profile": profile, "tolerance": tolerance, "tolerance_text": describe_tolerance(tolerance),
              "verdict": claim_verdict(ours, tolerance, paper=_plain(paper), derived=_plain(derived)),
              "ranking": _plain(ranking) if ranking else None}
    path = Path(folder) / "claims" / profile / f"{chapter}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = json.loads(path.read_text()) if path.exists() else []
    entries = [e for e in entries if e["claim"] != claim]
    entries.append(record)
    path.write_text(json.dumps(entries, indent=1) + "\n")
    return path


def load_claims(folder: str | Path) -> list[dict]:
    """Every recorded claim under ``<folder>/claims``, chapter by chapter, quick before full (empty list if none)."""
    root = Path(folder) / "claims"
    if not root.exists():
        return []
    return [e for p in sorted(root.glob("*/*.json"), key=lambda p: (p.stem, p.parent.name != "quick"))
            for e in json.loads(p.read_text())]
