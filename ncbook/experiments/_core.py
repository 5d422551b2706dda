"""What every experiment of the book shares: its result object, its claims, how its runs are spread.

A chapter's long experiment is one call of this package (``experiments.compare_reweighting(...)``,
``experiments.primer_network(...)``...). The call sizes itself from the active profile and scale
(:func:`ncbook.profile`, :func:`ncbook.scale`), measures the cost of its model on this device and prints
the estimate before it trains, shows progress, checkpoints its runs, spreads independent runs over
worker processes (or, under ``torchrun``, trains each run on every rank), and returns an
:class:`ExperimentResult`: a tidy table (one row per run: method, seed, data set, metrics), the
histories, and the claims the run supports. The chapter shows the models, the losses and the methods,
the call, the figure, and what it means; its last cell records every result's claims at once
(:func:`record_claims`).

The prose and the records read the same verdicts (:mod:`ncbook.experiments._verdicts`): a sentence
says "beats" exactly when the record says "reproduced".
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .. import profiles
from .._validation import check_in, check_text
from ..book import record_claim
from ..book import claim_verdict

__all__ = ["Claim", "ExperimentResult", "Setting", "markdown_table", "record_claims", "run_jobs", "torch_threads"]


@dataclass(frozen=True)
class Setting:
    """The profile, scale and sizes one experiment ran at (what its records name as the setting).

    Attributes
    ----------
    profile : {"quick", "gpu", "full"}
    scale : {"paper", "smoke"}
    sizes : dict
        The sizes the experiment chose for that profile and scale (steps, epochs, seeds, widths...).
    text : str
        One line for the records and the figure titles, e.g. "long-tailed digits, IF 50, MLP, 3 seeds".
    """

    profile: str
    scale: str
    sizes: dict
    text: str

    @classmethod
    def active(cls, sizes_by_profile: dict, text: Callable[[dict], str], *, profile: str | None = None,
               scale: str | None = None, smoke: Callable[[dict], dict] | None = None) -> "Setting":
        """The setting of the active (or given) profile and scale.

        Parameters
        ----------
        sizes_by_profile : dict
            ``{"quick": {...}, "gpu": {...}, "full": {...}}``: the experiment's sizes per profile.
        text : callable
            ``text(sizes) -> str``: the one-line description.
        profile, scale : str, optional
            Default :func:`ncbook.profile` and :func:`ncbook.scale`.
        smoke : callable, optional
            ``smoke(sizes) -> sizes`` at the smoke scale (gpu and full only: every code path, tiny sizes).

        Raises
        ------
        ValueError
            For an unknown profile or scale, or a profile missing from ``sizes_by_profile``.

        Examples
        --------
        >>> s = Setting.active({"quick": {"steps": 100}, "gpu": {"steps": 10}, "full": {"steps": 99}},
        ...                    lambda z: f"{z['steps']} steps", profile="quick")
        >>> s.text, s.sizes
        ('100 steps', {'steps': 100})
        """
        profile = check_in("profile", profile or profiles.profile(), profiles.PROFILES)
        scale = check_in("scale", scale or profiles.scale(), profiles.SCALES)
        if profile not in sizes_by_profile:
            raise ValueError(f"sizes_by_profile has no sizes for the profile {profile!r}; it has "
                             f"{sorted(sizes_by_profile)}.")
        sizes = dict(sizes_by_profile[profile])
        if scale == "smoke" and profile != "quick" and smoke is not None:
            sizes = dict(smoke(sizes))
        return cls(profile, scale, sizes, text(sizes))

    def changed(self, changes: dict, *, what: str, check: Callable[[dict], dict], text: Callable[[dict], str],
                also: Iterable[str] = ()) -> "Setting":
        """This setting with some sizes changed by keyword (``steps=400`` sets ``STEPS``), checked and described.

        Parameters
        ----------
        changes : dict
            Lower-case size names and their new values.
        what : str
            The experiments' name for the message ("the SELI experiments").
        check : callable
            ``check(sizes) -> sizes``: validates every size (raises ``ValueError``/``TypeError``).
        text : callable
            ``text(sizes) -> str``: the new one-line description.
        also : iterable of str
            Upper-case names a change may add although the profile's sizes lack them.

        Raises
        ------
        ValueError
            For a name that is not a size of the experiments (the message lists the sizes).

        Examples
        --------
        >>> s = Setting("quick", "paper", {"STEPS": 100}, "100 steps")
        >>> s.changed({"steps": 5}, what="the demo", check=dict, text=lambda z: f"{z['STEPS']} steps").text
        '5 steps'
        """
        sizes, allowed = dict(self.sizes), set(also)
        for name, value in changes.items():
            key = name.upper()
            if key not in sizes and key not in allowed:
                raise ValueError(f"{name!r} is not a size of {what}; the sizes are {sorted(k.lower() for k in sizes)}.")
            sizes[key] = value
        sizes = check(sizes)
        return Setting(self.profile, self.scale, sizes, text(sizes))


@dataclass(frozen=True)
class Claim:
    """One claim a result supports, ready for :func:`ncbook.book.record_claim`.

    The fields are ``record_claim``'s (``kind``, ``claim``, ``ours``, ``tolerance``, ``paper``, ``source``,
    ``derived``, ``derived_how``, ``ranking``, ``not_testable``, ``setting``); :attr:`verdict` is the verdict
    the record will carry, so a chapter's sentence can read it before anything is written.

    Examples
    --------
    >>> c = Claim("check", "0.5 + 0.25 is 0.75", ours=0.75, derived=0.75, derived_how="by hand",
    ...           tolerance={"abs": 1e-12, "against": "derived"}, setting="arithmetic")
    >>> c.verdict
    'passed'
    """

    kind: str
    claim: str
    ours: Any = None
    tolerance: dict | None = None
    paper: Any = None
    source: str | None = None
    derived: Any = None
    derived_how: str | None = None
    ranking: list | None = None
    not_testable: str | None = None
    setting: str = ""

    @property
    def verdict(self) -> str:
        """"reproduced"/"not reproduced"/"not testable"/"not run" (a paper's claim) or "passed"/"failed"/"not run"."""
        if self.not_testable is not None:
            return "not testable"
        v = claim_verdict(self.ours, self.tolerance or {}, paper=self.paper, derived=self.derived)
        return {"reproduced": "passed", "not reproduced": "failed"}.get(v, v) if self.kind == "check" else v

    def record(self, folder, *, chapter: str, profile: str):
        """Write this claim with :func:`ncbook.book.record_claim`; return the JSON file's path."""
        fields = {k: v for k, v in self.__dict__.items() if k != "kind"}
        return record_claim(folder, kind=self.kind, chapter=chapter, profile=profile, **fields)


@dataclass
class ExperimentResult:
    """The result of one experiment: its tidy table, histories, the claims it supports, and its setting.

    Attributes
    ----------
    chapter : str
        The chapter the experiment belongs to (its file stem).
    setting : Setting
        Profile, scale, sizes and the one-line description.
    table : pandas.DataFrame
        One row per run (method, seed, data set...) with one column per metric.
    histories : dict
        Per-run training histories (``ncbook.train.History``) or curves, keyed as the experiment says.
    seconds : float
        Wall-clock seconds of the call.
    extras : dict
        Anything else the chapter's figures read (documented by each experiment).

    Subclasses add the experiment's own views (summaries, verdicts) and override :meth:`claims`.
    """

    chapter: str
    setting: Setting
    table: Any
    histories: dict = field(default_factory=dict)
    seconds: float = 0.0
    extras: dict = field(default_factory=dict)

    def claims(self) -> list[Claim]:
        """The claims this result supports (paper claims and checks). The base class has none."""
        return []

    def summary(self, by: str | Sequence[str] = "method", metrics: Sequence[str] | None = None):
        """Mean and standard deviation (over seeds, ``ddof=0``) of each metric, one row per ``by`` group.

        Returns a DataFrame with a two-level column index ``(metric, "mean" | "std")``.
        """
        by = [by] if isinstance(by, str) else list(by)
        cols = list(metrics) if metrics is not None else [c for c in self.table.columns
                                                            if c not in by and c not in ("seed",)
                                                            and self.table[c].dtype.kind in "fi"]
        grouped = self.table.groupby(by, sort=False)[cols]
        return grouped.agg(["mean", lambda s: float(s.std(ddof=0))]).rename(columns={"<lambda_0>": "std"}, level=1)

    def _repr_markdown_(self) -> str:
        head = f"**{type(self).__name__}** ({self.setting.profile} profile: {self.setting.text}; " \
               f"{self.seconds:.0f} s)\n\n"
        return head + markdown_table(self.table)


def markdown_table(frame, *, digits: int = 4) -> str:
    """A DataFrame as a Markdown table (floats with ``digits`` significant digits; no extra dependency).

    Examples
    --------
    >>> import pandas as pd
    >>> print(markdown_table(pd.DataFrame({"method": ["CE"], "acc": [0.81234]})))
    | method | acc |
    |---|---|
    | CE | 0.8123 |
    """
    cols = [str(c) if not isinstance(c, tuple) else " ".join(map(str, c)) for c in frame.columns]
    def cell(v):
        return f"{v:.{digits}g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


@contextmanager
def torch_threads(n: int):
    """Within the block torch uses ``n`` threads (``torch.set_num_threads``); the previous number afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _in_torchrun() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch always has it
        return False
    return dist.is_available() and dist.is_initialized()


def run_jobs(fn: Callable, configs: Sequence[dict], *, progress: bool | None = None, workers: int | None = None) -> list:
    """Run independent jobs: side by side in worker processes, or, under ``torchrun``, one after another
    with every rank taking part in each (each job is then a distributed run).

    ``ncbook.train.run_parallel`` gives the same numbers with any number of workers, so the result does not
    depend on where the jobs ran. ``workers`` is passed to it (default: its own, ``$NCBOOK_WORKERS`` or the
    usable cores; 1 runs the jobs in this process, which suits jobs of seconds: starting a worker costs that).
    """
    from ..train import run_parallel

    if _in_torchrun():
        return [fn(**c) for c in configs]
    return run_parallel(fn, configs, progress=progress, workers=workers)


def record_claims(chapter: str, *sources: ExperimentResult | Claim | Iterable[Claim], folder=None,
                  profile: str | None = None):
    """Record every claim of ``sources`` for the Reproduction page; return a DataFrame of them with verdicts.

    Parameters
    ----------
    chapter : str
        The chapter's file stem.
    *sources : ExperimentResult, Claim, or iterables of Claim
        Results (their :meth:`ExperimentResult.claims`) and the chapter's own checks.
    folder : path, optional
        Default :func:`ncbook.results_dir`.
    profile : str, optional
        Default the profile the results ran at (they must agree), else :func:`ncbook.profile`.

    Returns
    -------
    pandas.DataFrame
        One row per claim: kind, claim, verdict.

    Raises
    ------
    ValueError
        If the results ran at different profiles.
    """
    import pandas as pd

    check_text("chapter", chapter)
    claims: list[Claim] = []
    seen_profiles = set()
    for src in sources:
        if isinstance(src, ExperimentResult):
            seen_profiles.add(src.setting.profile)
            claims += src.claims()
        elif isinstance(src, Claim):
            claims.append(src)
        else:
            claims += list(src)
    if len(seen_profiles) > 1:
        raise ValueError(f"the results of one chapter ran at different profiles ({sorted(seen_profiles)}); "
                         "record each profile's claims separately.")
    profile = profile or (seen_profiles.pop() if seen_profiles else profiles.profile())
    folder = folder or profiles.results_dir()
    rows = []
    is_main = not _in_torchrun() or __import__("torch.distributed").distributed.get_rank() == 0
    for c in claims:
        if is_main:
            c.record(folder, chapter=chapter, profile=profile)
        rows.append({"kind": c.kind, "claim": c.claim, "verdict": c.verdict})
    return pd.DataFrame(rows, columns=["kind", "claim", "verdict"])


class Stopwatch:
    """Seconds since creation (``time.perf_counter``); ``seconds`` reads it."""

    def __init__(self):
        self.t0 = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0
