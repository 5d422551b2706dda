"""The reproduction page as HTML, from the claim records under a results folder.

:func:`reproduction_report` reads ``<folder>/claims/<profile>/<chapter>.json`` (written by
:func:`ncbook.book.record_claim`) and ``<folder>/<chapter>/*.json`` (full-profile runs written by
:func:`ncbook.book.save_result`). It says in one sentence where the records come from (or that there
are none, and where they would come from), and renders, in this order: the counts per kind and
profile, the papers' claims chapter by chapter, this book's implementation checks, and the recorded
runs. It needs nothing but the folder, so the page runs the same in the
book build and as a lone notebook (Colab) in an empty folder.
"""

from __future__ import annotations

import html
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from ._records import CHAPTERS
from ._records import CHECK_VERDICTS
from ._records import CLAIM_VERDICTS
from ._records import claim_counts
from ._records import KINDS
from ._records import RECORD_PROFILES
from ._records import WRITTEN_WHILE_RUNNING
from ._records import _chapter_rank
from ._records import load_claims
from ._records import load_results

__all__ = ["Report", "reproduction_report"]

KIND_TITLES = {"paper": "The papers' claims", "check": "This book's implementation checks"}
VERDICT_STYLE = {"reproduced": "color: #1a7f37", "passed": "color: #1a7f37",
                 "not reproduced": "color: #cf222e; font-weight: bold", "failed": "color: #cf222e; font-weight: bold",
                 "not testable": "color: #9a6700", "not run": "color: #777"}


@dataclass(frozen=True)
class Report:
    """The rendered page: ``origin`` (one sentence), ``counts[kind][profile][verdict]`` and ``html``.

    A claim that some profile recorded and another did not counts as *not run* in the other, so every
    profile's counts of one kind add up to the same number of claims. Displayed in a notebook, the
    object shows its HTML.
    """

    origin: str
    counts: dict = field(repr=False)
    html: str = field(repr=False)
    records: list = field(repr=False)

    def _repr_html_(self) -> str:
        return self.html


def _esc(text) -> str:
    return html.escape(str(text))


def _fmt(value) -> str:
    """A recorded value as text: 4 significant digits for numbers, as recorded otherwise."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return "nan" if isinstance(value, float) and math.isnan(value) else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _small(text) -> str:
    return f'<br><span style="font-size: 85%; color: #555">{_esc(text)}</span>' if text else ""


def _table(header: list[str], rows: list[list[str]], widths: list[int]) -> str:
    """An HTML table that fits the page: fixed column widths (percent), wrapped cells; cells are HTML."""
    cols = "".join(f'<col style="width: {w}%">' for w in widths)
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td style="vertical-align: top; overflow-wrap: anywhere">{c}</td>'
                                     for c in row) + "</tr>" for row in rows)
    return (f'<table class="table" style="table-layout: fixed; width: 100%; font-size: 90%">'
            f"<colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _verdict(entry: dict | None) -> str:
    v = entry.get("verdict", "not run") if entry else "not run"
    reason = _small(entry["reason"]) if entry and entry.get("reason") and v != "not run" else ""
    return f'<span style="{VERDICT_STYLE.get(v, "")}">{_esc(v)}</span>{reason}'


def _ranking(entry: dict | None) -> str:
    if not entry or not entry.get("ranking"):
        return ""
    return _small("ranking: " + " > ".join(f"{name} {_fmt(value)}" for name, value in entry["ranking"]))


def _group(records: list[dict]) -> dict[tuple[str, str, str], dict[str, dict]]:
    """Records by (kind, chapter, claim), then by profile; first-recorded order."""
    grouped: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in records:
        grouped.setdefault((r.get("kind", "paper"), r["chapter"], r["claim"]), {})[r["profile"]] = r
    return grouped


def _counts_table(counts: dict) -> str:
    rows = []
    for kind in KINDS:
        verdicts = CLAIM_VERDICTS if kind == "paper" else CHECK_VERDICTS
        for i, v in enumerate(verdicts):
            label = (f"<b>{_esc(KIND_TITLES[kind])}</b>: " if i == 0 else "") + \
                    f'<span style="{VERDICT_STYLE.get(v, "")}">{_esc(v)}</span>'
            rows.append([label] + [str(counts[kind][p][v]) for p in RECORD_PROFILES])
        rows.append([f"<i>all {'claims' if kind == 'paper' else 'checks'}</i>"] +
                    [f"<i>{sum(counts[kind][p].values())}</i>" for p in RECORD_PROFILES])
    return _table(["record", *(f"{p} profile" for p in RECORD_PROFILES)], rows, [52, 16, 16, 16])


def _per_profile(by_profile: dict, key: str, with_ranking: bool = False) -> str:
    lines = []
    for p in RECORD_PROFILES:
        e = by_profile.get(p)
        text = _esc(_fmt(e.get(key))) if e else "—"
        lines.append(f"{p}: {text}{_ranking(e) if with_ranking else ''}")
    return "<br>".join(lines)


def _claim_cell(by_profile: dict) -> str:
    first = next(by_profile[p] for p in RECORD_PROFILES if p in by_profile)
    settings = "; ".join(f"{p}: {by_profile[p]['setting']}" + (f" ({by_profile[p]['scale']} scale)"
                                                             if by_profile[p].get("scale") == "smoke" else "")
                         for p in RECORD_PROFILES if p in by_profile)
    tol = first.get("tolerance_text")
    kind = first.get("kind", "paper")
    rule = _small(f"{'reproduced' if kind == 'paper' else 'passes'} if: measured {tol}") if tol else ""
    return _esc(first["claim"]) + _small(f"setting: {settings}") + rule


def _rows(grouped, kind: str, stem: str) -> list[list[str]]:
    rows = []
    for (k, chapter, _), by_profile in grouped.items():
        if k != kind or chapter != stem:
            continue
        first = next(by_profile[p] for p in RECORD_PROFILES if p in by_profile)
        derived = (_esc(_fmt(first["derived"])) + _small(first.get("derived_how"))
                   if first.get("derived") is not None else "—")
        measured = _per_profile(by_profile, "ours", with_ranking=True)
        verdicts = "<br>".join(f"{p}: {_verdict(by_profile.get(p))}" for p in RECORD_PROFILES)
        if kind == "paper":
            paper = _esc(_fmt(first["paper"])) + _small(first.get("source"))
            rows.append([_claim_cell(by_profile), paper, derived, measured, verdicts])
        else:
            rows.append([_claim_cell(by_profile), derived, measured, verdicts])
    return rows


def _run_rows(records: list[dict]) -> list[list[str]]:
    rows = []
    for r in records:
        metrics = ", ".join(f"{k} = {_fmt(v)}" for k, v in sorted(r["metrics"].items()) if not isinstance(v, (list, dict)))
        rows.append([_esc(f"{r['setting']} (seed {r['seed']})"), _esc(metrics),
                     _esc(f"{r.get('device', '')}, {_fmt(r.get('wall_seconds'))} s, {r.get('date', '')}")])
    return rows


def _title(stem: str, links: bool) -> str:
    name = _esc(CHAPTERS.get(stem, stem))
    return f'<a href="{_esc(stem)}.html">{name}</a>' if links else name


def _origin(folder: str | Path, records: list[dict], shown_as: str | None) -> str:
    where = shown_as or str(folder)
    if not records:
        full = os.path.abspath(folder)
        seen = "" if full == where else f" (that is, {full}/claims/)"
        return (f"No claim records in {where}/claims/{seen}. A chapter writes its records where its cost records go, "
                f"ncbook.results_dir(): NCBOOK_RESULTS if set, else results/ beside the chapter's notebook (the "
                f"checkout's results/ for a book build). Run a chapter notebook in this folder first, or point this "
                f"page at records: set NCBOOK_RESULTS (or RESULTS in the parameters cell) to a folder that holds "
                f"claims/<profile>/<chapter>.json, such as the results/ folder of a checkout, where the gpu and full "
                f"records are committed. The book's own records are on the Reproduction page of the HTML book.")
    per = ", ".join(f"{p} {sum(r['profile'] == p for r in records)}" for p in RECORD_PROFILES)
    return (f"Claim records read from {where}/claims/ ({len(records)} records: {per}), written when the "
            f"chapters executed there (NCBOOK_RESULTS or RESULTS points this page at another folder).")


def reproduction_report(folder: str | Path, *, links: bool = False, shown_as: str | None = None) -> Report:
    """Render the reproduction page from the records under ``folder``.

    Parameters
    ----------
    folder : path
        A results folder: ``claims/<profile>/<chapter>.json`` and ``<chapter>/*.json`` beneath it; a
        folder that does not exist reads as empty (the report then says where records come from).
    links : bool
        Link each chapter's title to ``<stem>.html`` (true in the HTML book, where those pages exist).
    shown_as : str, optional
        How to name the folder in the text (default: ``folder`` as given).

    Returns
    -------
    Report
        ``origin`` (where the records come from, or that there are none: print it first),
        ``counts`` per kind, profile and verdict, and the page's ``html``: the counts first, then the papers' claims and
        this book's implementation checks in separate tables, chapter by chapter in book order, then
        the recorded full-profile runs.

    Examples
    --------
    >>> import tempfile
    >>> from ncbook.book import record_claim
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = record_claim(d, kind="paper", chapter="seli", profile="quick", claim="c", ours=1.0,
    ...                      paper="p", source="Thrampoulidis et al. 2022, abstract", setting="s",
    ...                      tolerance={"above": 0})
    ...     report = reproduction_report(d, shown_as="results")
    >>> report.counts["paper"]["quick"]["reproduced"], report.counts["paper"]["gpu"]["not run"]
    (1, 1)
    >>> report.origin.startswith("Claim records read from results/claims/ (1 records")
    True
    """
    folder = Path(folder)
    records = load_claims(folder)
    run_dirs = [d.name for d in folder.glob("*/") if d.is_dir() and d.name not in WRITTEN_WHILE_RUNNING] \
        if folder.is_dir() else []  # results of recorded runs, not the claim records and cost estimates beside them
    runs = [r for stem in sorted(run_dirs, key=_chapter_rank) for r in load_results(folder, stem)]
    grouped = _group(records)
    counts = claim_counts(records)
    origin = _origin(folder, records, shown_as)
    parts = ["<h3>Counts per kind and profile</h3>", _counts_table(counts),
             "<p>Only the papers' claims count as reproduced. A claim that one profile recorded and another "
             "did not is <i>not run</i> in the other.</p>"]
    stems = sorted({r["chapter"] for r in records}, key=_chapter_rank)
    for kind in KINDS:
        parts.append(f"<h3>{_esc(KIND_TITLES[kind])}</h3>")
        chapters = [s for s in stems if any(k == kind and c == s for k, c, _ in grouped)]
        if not chapters:
            parts.append("<p><em>None recorded.</em></p>")
        for stem in chapters:
            parts.append(f"<h4>{_title(stem, links)}</h4>")
            if kind == "paper":
                parts.append(_table(["claim", "quoted from the paper", "derived here", "measured", "verdict"],
                                    _rows(grouped, kind, stem), [32, 19, 15, 17, 17]))
            else:
                parts.append(_table(["check", "reference value (derived here)", "measured", "verdict"],
                                    _rows(grouped, kind, stem), [44, 20, 18, 18]))
    if runs:
        parts.append("<h3>Recorded full-profile runs</h3>")
        for stem in sorted({r["chapter"] for r in runs}, key=_chapter_rank):
            parts.append(f"<h4>{_title(stem, links)}</h4>")
            parts.append(_table(["setting", "final metrics", "device, wall time, date"],
                                _run_rows([r for r in runs if r["chapter"] == stem]), [25, 50, 25]))
    return Report(origin=origin, counts=counts, html="\n".join(parts), records=records)
