"""What the chapters record for the reproduction page, as small JSON files under ``results/``.

- :func:`save_result`: one full-profile (GPU) run's final numbers, ``results/<chapter>/<setting>-seed<k>.json``;
  chapters show these next to their live quick results.
- :func:`record_claim`: one record per claim a chapter tests, ``results/claims/<profile>/<chapter>.json``,
  of one of two kinds kept apart: a *paper's claim* (quoted, with its source, verdict reproduced / not
  reproduced / not testable / not run) or one of *this book's implementation checks* (closed form
  against code, code against a hand computation; verdict passed / failed / not run). Only the first
  kind counts as reproduced.

Only plain JSON types are written (a non-finite measurement as the text ``"nan"``, ``"inf"``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import re
from pathlib import Path
from typing import Any

import torch

from .._validation import check_in
from ..profiles import PROFILES
from ..profiles import native_bf16
from ..profiles import scale

__all__ = ["save_result", "load_results", "device_name", "record_claim", "load_claims", "claim_verdict",
           "claim_counts", "describe_tolerance", "KINDS", "RECORD_PROFILES", "WRITTEN_WHILE_RUNNING", "CLAIM_VERDICTS", "CHECK_VERDICTS",
           "CHAPTERS"]


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


#: folders under the results folder that chapters write as they run (claim records, cost estimates), not results
WRITTEN_WHILE_RUNNING = ("claims", "costs")


def load_results(folder: str | Path, chapter: str | None = None) -> list[dict]:
    """All recorded results under ``folder`` (optionally one chapter's), sorted by setting and seed.

    Returns an empty list when nothing was recorded yet.
    """
    root = Path(folder) if chapter is None else Path(folder) / chapter
    if not root.exists():
        return []
    records = [json.loads(p.read_text()) for p in sorted(root.rglob("*.json")) 
               if not set(WRITTEN_WHILE_RUNNING) & set(p.relative_to(root).parts)]
    return sorted(records, key=lambda r: (r["chapter"], r["setting"], r["seed"]))


# --------------------------------------------------------------------------- claim records
#: the two kinds of record, shown apart on the reproduction page; only "paper" records count as reproduced
KINDS = ("paper", "check")
#: the profiles a record can belong to, in the order the page shows them
RECORD_PROFILES = PROFILES
#: verdicts of a paper's claim, and of one of this book's implementation checks
CLAIM_VERDICTS = ("reproduced", "not reproduced", "not testable", "not run")
CHECK_VERDICTS = ("passed", "failed", "not run")
#: the chapters that record claims, in book order, with their titles (tests keep this equal to book/*.md)
CHAPTERS = {
    "nc_primer": "Neural collapse on balanced data",
    "seli": "Imbalance trouble: the SELI geometry",
    "contrastive_imbalance": "Contrastive learning on imbalanced data: a convex program and minority collapse",
    "weighted_contrastive": "Weighted contrastive learning as a distance geometry problem",
    "inverse_reweighting": "Loss reweighting as an inverse problem, against the long-tailed baselines",
    "mr2_margins": "MR2: class-dependent margins from feature variability",
}
_CHECKS = ("abs", "rel", "above", "below", "between")
# a paper claim's source names the paper (authors and year) and the place in it
_YEAR = re.compile(r"\b(19|20)\d\d\b")
_PLACE = re.compile(r"\b(theorem|lemma|proposition|corollary|definition|remark|table|figure|fig\.|section|introduction|"
                    r"equation|eq\.|appendix|algorithm|abstract)|§", re.I)
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _recorded(value: Any) -> Any:
    """A measured value as JSON keeps it: plain numbers and lists; NaN and infinities as ``"nan"``, ``"inf"``."""
    value = _plain_numbers(value)
    if isinstance(value, list):
        return [_recorded(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _plain_numbers(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().tolist()
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple, dict, str)):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_plain_numbers(v) for v in value]
    return value


def _numeric(name: str, value: Any, *, allow_none: bool) -> Any:
    """``value`` as a number or a flat list of numbers (NaN and ``None`` entries allowed); else raise."""
    value = _plain_numbers(value)
    if value is None and allow_none:
        return None
    entries = value if isinstance(value, list) else [value]
    for v in entries:
        if v is None or (isinstance(v, str) and v in _NON_FINITE):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name} must be a number or a list of numbers; got {value!r} "
                            f"(an entry of type {type(v).__name__}).")
    return value


def _flat(value) -> list[float]:
    """Entries as floats; ``None`` and ``"nan"`` become NaN (a missing or non-finite measurement)."""
    entries = value if isinstance(value, (list, tuple)) else [value]
    return [math.nan if v is None else _NON_FINITE.get(v, v) if isinstance(v, str) else float(v) for v in entries]


def _bounds(bound, n: int) -> list[float] | None:
    """A threshold for each of ``n`` entries (one number for all, or one per entry); None on a length mismatch."""
    values = _flat(bound)
    if len(values) == 1:
        return values * n
    return values if len(values) == n else None


def _check_tolerance(tolerance: dict, paper, derived) -> dict:
    """Validate a tolerance spec and return it."""
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
        numeric = ref is not None and not isinstance(ref, str) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (ref if isinstance(ref, list) else [ref]))
        if against not in ("paper", "derived") or not numeric:
            raise ValueError(f"tolerance {check!r} needs against='paper' or 'derived' naming a numeric value "
                             f"recorded with the claim; got against={against!r} (paper={paper!r}, derived={derived!r}).")
    elif "against" in tolerance:
        raise ValueError(f"'against' goes with 'abs' or 'rel' only; got {tolerance!r}.")
    if check == "between" and not (isinstance(tolerance["between"], (list, tuple)) and len(tolerance["between"]) == 2):
        raise ValueError(f"tolerance 'between' must be [low, high] (numbers, or lists with one bound per entry); "
                         f"got {tolerance['between']!r}.")
    bounds = tolerance["between"] if check == "between" else [tolerance[check]]
    for bound in bounds:
        try:
            _numeric(f"the {check!r} bound", bound, allow_none=False)
        except TypeError as err:
            raise ValueError(f"tolerance {tolerance!r}: {err}") from None
    return tolerance


def claim_verdict(ours, tolerance: dict, *, paper=None, derived=None) -> str:
    """The verdict of one measurement against its tolerance: ``"reproduced"``, ``"not reproduced"`` or
    ``"not run"``.

    ``tolerance`` holds one check: ``{"abs": t, "against": "paper" | "derived"}`` (every entry within
    ``t``), ``{"rel": t, "against": ...}`` (relative), ``{"above": x}``, ``{"below": x}`` or
    ``{"between": [lo, hi]}`` (every entry strictly above / below / inside). A bound may be a list
    with one value per entry of ``ours``.

    ``ours=None`` means nothing was measured: ``"not run"``. A measurement that was made but is not
    finite (NaN, infinite, or a list with such an entry or a ``None``) is ``"not reproduced"``: the run
    happened and failed. So is a list whose length differs from its reference or its bounds.

    Examples
    --------
    >>> claim_verdict(0.7080, {"abs": 1e-3, "against": "derived"}, derived=0.7079)
    'reproduced'
    >>> claim_verdict(-0.2, {"above": 0})
    'not reproduced'
    >>> claim_verdict([0.99, -0.98], {"between": [[0.95, -1], [1, -0.95]]})
    'reproduced'
    >>> claim_verdict([0.3, float("nan")], {"above": 0})
    'not reproduced'
    >>> claim_verdict(None, {"above": 0})
    'not run'
    """
    if ours is None:
        return "not run"
    values = _flat(_plain_numbers(ours))
    if any(not math.isfinite(v) for v in values):
        return "not reproduced"
    n = len(values)
    if "abs" in tolerance or "rel" in tolerance:
        ref = _flat(_plain_numbers(paper if tolerance["against"] == "paper" else derived))
        if len(ref) != n or any(not math.isfinite(r) for r in ref):
            return "not reproduced"
        if "abs" in tolerance:
            ok = all(abs(v - r) <= tolerance["abs"] for v, r in zip(values, ref))
        else:
            ok = all(abs(v - r) <= tolerance["rel"] * abs(r) for v, r in zip(values, ref))
    elif "above" in tolerance or "below" in tolerance:
        key = "above" if "above" in tolerance else "below"
        bound = _bounds(tolerance[key], n)
        if bound is None:
            return "not reproduced"
        ok = all((v > b) if key == "above" else (v < b) for v, b in zip(values, bound))
    else:
        lo, hi = (_bounds(b, n) for b in tolerance["between"])
        if lo is None or hi is None:
            return "not reproduced"
        ok = all(a <= v <= b for v, a, b in zip(values, lo, hi))
    return "reproduced" if ok else "not reproduced"


def _bound_text(bound) -> str:
    return "(" + ", ".join(f"{b:g}" for b in _flat(bound)) + ")" if isinstance(bound, (list, tuple)) else f"{bound:g}"


def describe_tolerance(tolerance: dict) -> str:
    """The tolerance in words, e.g. ``"within 0.001 of the derived value"``.

    Examples
    --------
    >>> describe_tolerance({"rel": 0.05, "against": "paper"})
    'within 5% of the paper value'
    >>> describe_tolerance({"between": [[0.95, -1], [1, -0.95]]})
    'entry by entry between (0.95, -1) and (1, -0.95)'
    """
    if "abs" in tolerance:
        return f"within {tolerance['abs']:g} of the {tolerance['against']} value"
    if "rel" in tolerance:
        return f"within {100 * tolerance['rel']:g}% of the {tolerance['against']} value"
    if "between" in tolerance:
        lo, hi = tolerance["between"]
        each = "entry by entry " if isinstance(lo, (list, tuple)) or isinstance(hi, (list, tuple)) else ""
        return f"{each}between {_bound_text(lo)} and {_bound_text(hi)}"
    key = "above" if "above" in tolerance else "below"
    each = "entry by entry " if isinstance(tolerance[key], (list, tuple)) else ""
    return f"{each}{key} {_bound_text(tolerance[key])}"


def _reason(ours, not_testable: str | None) -> str | None:
    """Why a record has its verdict, where the tolerance alone does not say it (else None)."""
    if not_testable is not None:
        return not_testable.strip()
    if ours is None:
        return "nothing was measured in this run"
    entries = ours if isinstance(ours, list) else [ours]
    bad = [(i, v) for i, v in enumerate(entries) if v is None or isinstance(v, str)]
    if not bad:
        return None
    if not isinstance(ours, list):
        return f"the run happened but its measurement is not finite ({ours})"
    listed = ", ".join(f"entry {i}: {'missing' if v is None else v}" for i, v in bad)
    return f"the run happened but its measurement is not finite ({listed})"


def _check_source(claim: str, source) -> str:
    if not (isinstance(source, str) and source.strip()):
        raise ValueError(f"a paper's claim needs its source: the paper (authors and year) and the place in it "
                         f"(theorem, lemma, table, figure, section, introduction, equation, or 'abstract' where that is all "
                         f"that is known); claim {claim!r} has source={source!r}.")
    if not _YEAR.search(source) or not _PLACE.search(source):
        missing = " and ".join(w for w, ok in (("the paper (authors and year)", _YEAR.search(source)),
                                                ("the place in it (theorem, table, figure, section, equation "
                                                 "or 'abstract')", _PLACE.search(source))) if not ok)
        raise ValueError(f"a paper's claim's source must name {missing}, e.g. 'Thrampoulidis et al. 2022, "
                         f"abstract' or 'Nguyen et al. 2026, Theorem 3'; claim {claim!r} has source={source!r}.")
    return source.strip()


def _check_ranking(ranking) -> list | None:
    if ranking is None:
        return None
    ranking = _plain_numbers(ranking)
    if not (isinstance(ranking, list) and ranking and all(
            isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) for r in ranking)):
        raise ValueError(f"ranking must be a non-empty list of [name, value] pairs, best first; got {ranking!r}.")
    return [[name, _recorded(_numeric("a ranking value", value, allow_none=True))] for name, value in ranking]


def _claims_path(folder, profile: str, chapter: str) -> Path:
    return Path(folder) / "claims" / profile / f"{chapter}.json"


def record_claim(folder: str | Path, *, kind: str, chapter: str, claim: str, ours, setting: str, profile: str,
                 tolerance: dict | None = None, paper=None, source: str | None = None, derived=None,
                 derived_how: str | None = None, ranking: list | None = None,
                 not_testable: str | None = None) -> Path:
    """Record one of a chapter's checks for the reproduction page: a paper's claim or an implementation check.

    Two kinds of record are kept apart, and ``kind`` has no default:

    - ``kind="paper"``: a claim one of the papers makes, as the paper states it (``paper``: a number or
      a statement, never computed here) with its ``source``, which names the paper (authors and year)
      and the place in it (theorem, lemma, table, figure, section, equation, or ``"abstract"`` where
      that is all that is known). Only these records count as *reproduced* / *not reproduced* /
      *not testable* / *not run*.
    - ``kind="check"``: this book's check of its own code or derivation (a closed form against the
      code, the code against a hand computation, a property of our analysis). It quotes nothing from a
      paper (no ``paper``, no ``source``), and its verdict is *passed* / *failed* / *not run*.

    ``derived`` is a value this book derived itself (closed form, exact solve) and needs
    ``derived_how``; ``ours`` is what the run measured. The verdict (:func:`claim_verdict`) is computed
    from ``tolerance`` and stored with the record, with a ``reason`` where the tolerance alone does not
    explain it: a measurement that is not finite is *not reproduced* (*failed*), since the run
    happened; ``ours=None`` is *not run*; ``not_testable`` (a paper's claim only, with ``ours=None``)
    gives the reason a chapter cannot test the claim at this profile or scale.

    Each call appends (or replaces, by ``claim``) an entry in ``<folder>/claims/<profile>/<chapter>.json``.
    Quick records are rebuilt by every book build; gpu and full records come from GPU runs and are
    committed.

    Parameters
    ----------
    folder : path
        Usually ``ncbook.results_dir()`` (``../results`` seen from ``book/``).
    kind : {"paper", "check"}
    chapter : str
        The chapter's file stem (letters, digits, ``-_.``).
    claim : str
        One sentence: what is claimed or checked, with its hypotheses, and what ``ours`` measures.
    ours : float, list of float, or None
        The value this run measured (tensors and numpy values are converted); ``None``: nothing measured.
    setting : str
        The setting of our run (data, model, sizes).
    profile : {"quick", "gpu", "full"}
    tolerance : dict
        One check, see :func:`claim_verdict`; required unless ``not_testable`` is given.
    paper : float, list or str
        ``kind="paper"`` only, and required there: the paper's number or statement, as quoted.
    source : str
        ``kind="paper"`` only, and required there: where ``paper`` comes from, e.g.
        ``"Nguyen et al. 2026, Theorem 3"``.
    derived : float or list, optional
        A value derived in this book (never in the paper column).
    derived_how : str, optional
        How ``derived`` was obtained; required with ``derived``.
    ranking : list of [name, value], optional
        For comparisons: the methods ranked by our measurement, best first.
    not_testable : str, optional
        ``kind="paper"`` only: why this profile's run cannot test the claim (the verdict is then
        ``"not testable"``; ``ours`` must be ``None``).

    Returns
    -------
    Path of the JSON file.

    Raises
    ------
    ValueError
        For an unknown ``kind`` or ``profile``, a paper's claim without ``paper`` or without a
        ``source`` naming the paper and the place, a check with ``paper`` or ``source``, a ``derived``
        value without ``derived_how``, ``not_testable`` on a check or with a measurement, a missing or
        malformed ``tolerance``, a malformed ``ranking``, or a ``chapter`` with other characters.
    TypeError
        If ``tolerance`` is not a dict, or ``ours`` / ``derived`` are not numbers.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = record_claim(d, kind="paper", chapter="seli", profile="quick",
    ...                      claim="minority classifiers are shorter: w_min / w_maj at R = 10",
    ...                      paper="minority classifiers have smaller norms",
    ...                      source="Thrampoulidis et al. 2022, abstract", ours=0.71, setting="SVD of SEL",
    ...                      tolerance={"below": 1.0})
    ...     _ = record_claim(d, kind="check", chapter="seli", profile="quick",
    ...                      claim="our STEP closed form of w_min / w_maj agrees with the SVD",
    ...                      derived=0.7079, derived_how="our STEP closed form", ours=0.7079,
    ...                      setting="R = 10", tolerance={"abs": 1e-9, "against": "derived"})
    ...     [(r["kind"], r["verdict"]) for r in load_claims(d)]
    [('paper', 'reproduced'), ('check', 'passed')]
    """
    kind = check_in("kind", kind, KINDS)
    profile = check_in("profile", profile, RECORD_PROFILES)
    if not chapter or not all(ch.isalnum() or ch in "-_." for ch in chapter):
        raise ValueError(f"chapter must be letters, digits, '-', '_' or '.'; got {chapter!r}.")
    if not (isinstance(claim, str) and claim.strip()):
        raise ValueError(f"claim must be a sentence saying what is claimed and measured; got {claim!r}.")
    if kind == "paper":
        if paper is None or (isinstance(paper, str) and not paper.strip()):
            raise ValueError(f"a paper's claim needs paper= (the paper's number or statement, as quoted); "
                             f"claim {claim!r}. A check of this book's own code is kind='check'.")
        source = _check_source(claim, source)
    elif paper is not None or source is not None:
        raise ValueError(f"an implementation check (kind='check') quotes nothing from a paper: drop paper= and "
                         f"source=, or record the paper's statement as kind='paper'; claim {claim!r}.")
    if derived is not None and not (derived_how and str(derived_how).strip()):
        raise ValueError(f"a derived value needs derived_how (how this book computed it); claim {claim!r} "
                         f"has derived={derived!r}.")
    try:
        derived = _numeric("derived", derived, allow_none=True)
    except TypeError as err:
        raise ValueError(f"claim {claim!r}: {err}") from None
    ours = _numeric("ours", ours, allow_none=True)
    if not_testable is not None:
        if kind != "paper":
            raise ValueError(f"not_testable is for a paper's claim; a check of this book's code can always run "
                             f"(claim {claim!r}).")
        if not (isinstance(not_testable, str) and not_testable.strip()):
            raise ValueError(f"not_testable must say why the claim cannot be tested here; got {not_testable!r}.")
        if ours is not None:
            raise ValueError(f"a claim recorded as not testable has no measurement: pass ours=None "
                             f"(claim {claim!r}, ours={ours!r}).")
    elif tolerance is None:
        raise ValueError(f"tolerance is required (what counts as reproduced), unless not_testable says why the "
                         f"claim cannot be tested; claim {claim!r}.")
    paper_value = _plain_numbers(paper)
    if tolerance is not None:
        tolerance = dict(_check_tolerance(tolerance, paper_value, derived))
    if not_testable is not None:
        verdict = "not testable"
    else:
        verdict = claim_verdict(ours, tolerance, paper=paper_value, derived=derived)
        if kind == "check":
            verdict = {"reproduced": "passed", "not reproduced": "failed"}.get(verdict, verdict)
    record = {"chapter": chapter, "kind": kind, "claim": claim.strip(), "paper": _recorded(paper_value),
              "source": source, "derived": _recorded(derived), "derived_how": derived_how, "ours": _recorded(ours),
              "setting": setting, "profile": profile, "scale": scale(), "tolerance": tolerance,
              "tolerance_text": describe_tolerance(tolerance) if tolerance is not None else None,
              "verdict": verdict, "reason": _reason(_recorded(ours), not_testable),
              "ranking": _check_ranking(ranking)}
    path = _claims_path(folder, profile, chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = json.loads(path.read_text()) if path.exists() else []
    entries = [e for e in entries if e["claim"] != record["claim"]]
    entries.append(record)
    path.write_text(json.dumps(entries, indent=1, allow_nan=False) + "\n")
    return path


def _chapter_rank(stem: str) -> tuple[int, str]:
    order = list(CHAPTERS)
    return (order.index(stem), "") if stem in order else (len(order), stem)


def load_claims(folder: str | Path, *, kind: str | None = None, profile: str | None = None) -> list[dict]:
    """Every recorded claim under ``<folder>/claims``, in book order, profile by profile (quick, gpu, full)
    within a chapter, each chapter's records in the order it recorded them.

    Parameters
    ----------
    folder : path
        The results folder (see :func:`record_claim`); a folder with no ``claims/`` gives an empty list.
    kind : {"paper", "check"}, optional
        Only records of this kind.
    profile : {"quick", "gpu", "full"}, optional
        Only records of this profile.

    Returns
    -------
    list of dict
        The records as :func:`record_claim` wrote them. Records written before the two kinds existed
        (no ``kind``) read as ``"paper"`` records whose source was not checked.
    """
    if kind is not None:
        check_in("kind", kind, KINDS)
    if profile is not None:
        check_in("profile", profile, RECORD_PROFILES)
    root = Path(folder) / "claims"
    if not root.is_dir():
        return []
    files = [p for p in root.glob("*/*.json") if p.parent.name in RECORD_PROFILES]
    files.sort(key=lambda p: (_chapter_rank(p.stem), RECORD_PROFILES.index(p.parent.name)))
    records = []
    for path in files:
        for entry in json.loads(path.read_text()):
            entry.setdefault("kind", "paper")
            if (kind is None or entry["kind"] == kind) and (profile is None or entry["profile"] == profile):
                records.append(entry)
    return records


def claim_counts(records: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """Verdict counts per kind and profile: ``counts[kind][profile][verdict]``.

    A record is identified by its kind, chapter and claim sentence across profiles; a claim that one
    profile recorded and another did not counts as ``"not run"`` in the other, so every profile's
    counts of one kind add up to the same number of claims. Every kind, profile and verdict is
    present (zero where none).

    Examples
    --------
    >>> counts = claim_counts([{"kind": "paper", "chapter": "seli", "claim": "a", "profile": "quick",
    ...                         "verdict": "reproduced"},
    ...                        {"kind": "check", "chapter": "seli", "claim": "b", "profile": "quick",
    ...                         "verdict": "passed"}])
    >>> counts["paper"]["quick"]["reproduced"], counts["check"]["quick"]["passed"], counts["paper"]["full"]["not run"]
    (1, 1, 1)
    """
    verdicts = {"paper": CLAIM_VERDICTS, "check": CHECK_VERDICTS}
    counts = {k: {p: {v: 0 for v in verdicts[k]} for p in RECORD_PROFILES} for k in KINDS}
    claims: dict[tuple, dict[str, str]] = {}
    for r in records:
        key = (r.get("kind", "paper"), r["chapter"], r["claim"])
        claims.setdefault(key, {})[r["profile"]] = r.get("verdict", "not run")
    for (kind, _, _), by_profile in claims.items():
        if kind not in counts:
            continue
        for p in RECORD_PROFILES:
            v = by_profile.get(p, "not run")
            counts[kind][p][v if v in counts[kind][p] else "not run"] += 1
    return counts
