"""Reported figures from a company's XBRL facts: which periods they cover, what the company called them,
and which filing said so.

The SEC's `fy`/`fp` on a fact are those of the filing that reported it, not of the fact's period: a 10-K
for fiscal 2024 reports fiscal 2023 and 2022 as comparatives, all three tagged fy 2024. So a period's fiscal
label comes from the filing in which it was the current period (its latest end date), and a comparative
is labelled from that filing, or, when no such filing is in the facts, by counting whole years back from
the filing's own period. A period reported by several filings keeps every version; the latest filed wins.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from datascraper.filings.errors import FilingInvalidArgument, FilingsUpstreamError, NoFilingData
from datascraper.filings.schemas import FigureVersion, FiscalPeriod, ReportedFigure

PeriodKind = Literal["quarter", "annual", "instant"]
Frequency = Literal["annual", "quarterly"]
_QUARTER_DAYS = range(80, 101)
_ANNUAL_DAYS = range(350, 381)
# Same fiscal period a year apart: 52/53-week years move period ends by up to a week.
_YEAR_DAYS = 365.25
_YEAR_SLACK_DAYS = 10


@dataclass(frozen=True)
class _Fact:
    concept: str
    unit: str
    value: float
    start: date | None
    end: date
    kind: PeriodKind
    fy: int
    fp: str
    form: str
    filed: date
    accession: str
    frame: str | None


@dataclass(frozen=True)
class PeriodQuery:
    """Which periods are wanted: a fiscal period, a calendar frame, or the newest `limit` of a frequency."""

    fiscal_year: int | None = None
    fiscal_period: FiscalPeriod | None = None
    frame: str | None = None
    frequency: Frequency = "annual"
    limit: int = 4


def reported_figures(
    facts_payload: dict[str, Any], concepts: tuple[str, ...], query: PeriodQuery, filing_url: Any
) -> tuple[list[ReportedFigure], list[str]]:
    """The figures of the first of `concepts` the company reported for each period, newest period first,
    with the concepts used. `filing_url(accession)` gives a filing's index page.

    Raises:
        NoFilingData: the company reports none of the concepts, or none for the periods asked.
    """
    figures: dict[tuple[PeriodKind, date | None, date], ReportedFigure] = {}
    used: list[str] = []
    for concept in concepts:
        facts = _facts_of(facts_payload, concept)
        labels = _fiscal_labels(facts)
        for key, versions in _group_by_period(facts).items():
            if key not in figures and key in labels:
                figures[key] = _figure(versions, labels[key], filing_url)
        if facts:
            used.append(concept)
    if not figures:
        raise NoFilingData(f"The company reports no {' or '.join(concepts)} in its XBRL facts.")
    chosen = _select(list(figures.values()), query)
    if not chosen:
        raise NoFilingData(f"No reported {' or '.join(used)} matches {_describe(query)}.")
    return chosen, [concept for concept in used if any(f.concept == concept for f in chosen)]


def _facts_of(payload: dict[str, Any], concept: str) -> list[_Fact]:
    taxonomy, _, name = concept.partition(":")
    try:
        entry = payload.get("facts", {}).get(taxonomy, {}).get(name)
        if entry is None:
            return []
        units: dict[str, list[dict[str, Any]]] = entry["units"]
        # A concept is reported in one unit almost always; with several, the most used one.
        unit, rows = max(units.items(), key=lambda item: len(item[1]))
        facts = []
        for row in rows:
            start = date.fromisoformat(row["start"]) if row.get("start") else None
            end = date.fromisoformat(row["end"])
            kind = _kind(start, end)
            if kind is None or row.get("fy") is None or row.get("fp") is None:
                continue  # a year-to-date span (six or nine months), or an untagged fact
            facts.append(
                _Fact(
                    concept=concept,
                    unit=unit,
                    value=float(row["val"]),
                    start=start,
                    end=end,
                    kind=kind,
                    fy=int(row["fy"]),
                    fp=str(row["fp"]),
                    form=str(row["form"]),
                    filed=date.fromisoformat(row["filed"]),
                    accession=str(row["accn"]),
                    frame=row.get("frame"),
                )
            )
        return facts
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FilingsUpstreamError("The SEC's XBRL company facts are not in the expected shape.") from exc


def _kind(start: date | None, end: date) -> PeriodKind | None:
    if start is None:
        return "instant"
    days = (end - start).days + 1
    if days in _QUARTER_DAYS:
        return "quarter"
    if days in _ANNUAL_DAYS:
        return "annual"
    return None


def _group_by_period(facts: list[_Fact]) -> dict[tuple[PeriodKind, date | None, date], list[_Fact]]:
    groups: dict[tuple[PeriodKind, date | None, date], dict[str, _Fact]] = defaultdict(dict)
    for fact in facts:
        # One version per filing: a filing may repeat a fact (in the statements and again in a note).
        groups[(fact.kind, fact.start, fact.end)].setdefault(fact.accession, fact)
    return {
        key: sorted(by_filing.values(), key=lambda f: (f.filed, f.accession), reverse=True)
        for key, by_filing in groups.items()
    }


def _fiscal_labels(facts: list[_Fact]) -> dict[tuple[PeriodKind, date | None, date], tuple[int, FiscalPeriod]]:
    """The fiscal (year, period) of each period, from the filings in which it was the current period."""
    latest_end: dict[str, date] = {}
    for fact in facts:
        latest_end[fact.accession] = max(fact.end, latest_end.get(fact.accession, fact.end))
    anchors: dict[tuple[PeriodKind, date | None, date], tuple[int, FiscalPeriod]] = {}
    for fact in facts:
        if fact.end == latest_end[fact.accession]:
            period = _current_period(fact)
            if period is not None:
                anchors.setdefault((fact.kind, fact.start, fact.end), (fact.fy, period))
    labels = dict(anchors)
    for fact in facts:
        key = (fact.kind, fact.start, fact.end)
        if key in labels:
            continue
        label = _year_back_from(fact, anchors) or _year_back_from_filing(fact, latest_end[fact.accession])
        if label is not None:
            labels[key] = label
    return labels


def _current_period(fact: _Fact) -> FiscalPeriod | None:
    """The fiscal period of a fact that is its filing's current period."""
    annual_filing = fact.fp == "FY"
    if fact.kind == "annual":
        return "FY" if annual_filing else None
    if fact.kind == "quarter":
        return "Q4" if annual_filing else _quarter(fact.fp)
    return "FY" if annual_filing else _quarter(fact.fp)


def _quarter(fp: str) -> FiscalPeriod | None:
    return fp if fp in ("Q1", "Q2", "Q3") else None  # type: ignore[return-value]


def _year_back_from(
    fact: _Fact, anchors: dict[tuple[PeriodKind, date | None, date], tuple[int, FiscalPeriod]]
) -> tuple[int, FiscalPeriod] | None:
    """The label of a period a whole number of years before a labelled period of the same kind."""
    for (kind, _, end), (fy, period) in anchors.items():
        if kind != fact.kind or end <= fact.end:
            continue
        days = (end - fact.end).days
        years = round(days / _YEAR_DAYS)
        if years >= 1 and abs(days - years * _YEAR_DAYS) <= _YEAR_SLACK_DAYS:
            return fy - years, period
    return None


def _year_back_from_filing(fact: _Fact, filing_end: date) -> tuple[int, FiscalPeriod] | None:
    days = (filing_end - fact.end).days
    years = round(days / _YEAR_DAYS)
    if abs(days - years * _YEAR_DAYS) > _YEAR_SLACK_DAYS:
        return None  # e.g. last year-end's balance in a 10-Q: no anchor says which period it closed
    current = _current_period(fact)
    return (fact.fy - years, current) if current is not None else None


def _figure(versions: list[_Fact], label: tuple[int, FiscalPeriod], filing_url: Any) -> ReportedFigure:
    latest = versions[0]
    fy, period = label
    return ReportedFigure(
        concept=latest.concept,
        value=latest.value,
        unit=latest.unit,
        fiscal_year=fy,
        fiscal_period=period,
        label=f"FY{fy}" if period == "FY" else f"{period} FY{fy}",
        start=latest.start,
        end=latest.end,
        frame=next((v.frame for v in versions if v.frame), None),
        form=latest.form,
        filed=latest.filed,
        accession=latest.accession,
        filing_url=filing_url(latest.accession),
        filing_period=_filing_period(latest),
        restated=len({v.value for v in versions}) > 1,
        versions=[
            FigureVersion(
                value=v.value,
                form=v.form,
                filed=v.filed,
                accession=v.accession,
                filing_url=filing_url(v.accession),
                filing_period=_filing_period(v),
            )
            for v in versions
        ],
    )


def _filing_period(fact: _Fact) -> str:
    """The fiscal period of the filing that reported `fact` (its `fy`/`fp` are the filing's)."""
    return f"FY{fact.fy}" if fact.fp == "FY" else f"{fact.fp} FY{fact.fy}"


def _select(figures: list[ReportedFigure], query: PeriodQuery) -> list[ReportedFigure]:
    newest_first = sorted(figures, key=lambda f: (f.end, f.start is not None), reverse=True)
    if query.frame is not None:
        return [f for f in newest_first if f.frame == query.frame]
    if query.fiscal_year is not None:
        period = query.fiscal_period or "FY"
        return [f for f in newest_first if f.fiscal_year == query.fiscal_year and f.fiscal_period == period]
    if query.fiscal_period is not None:
        raise FilingInvalidArgument("A fiscal period needs its fiscal year, e.g. fiscal_year 2025 with Q3.")
    if query.frequency == "annual":
        wanted = [f for f in newest_first if f.fiscal_period == "FY"]
    else:
        wanted = [f for f in newest_first if f.fiscal_period != "FY" or (f.start is None)]
        wanted = [f for f in wanted if f.start is None or (f.end - f.start).days + 1 in _QUARTER_DAYS]
    return wanted[: query.limit]


def _describe(query: PeriodQuery) -> str:
    if query.frame is not None:
        return f"the calendar frame {query.frame}"
    if query.fiscal_year is not None:
        period = query.fiscal_period or "FY"
        return f"fiscal {'year ' if period == 'FY' else period + ' '}{query.fiscal_year}"
    return f"the {query.frequency} periods"
