"""Reported figures from a company's XBRL facts: which periods they cover, what the company called them,
and which filing said so.

The SEC's `fy`/`fp` on a fact are those of the filing that reported it, not of the fact's period: a 10-K
for fiscal 2024 reports fiscal 2023 and 2022 as comparatives, all three tagged fy 2024. So a period's fiscal
label comes from the filing in which it was the current period (its latest end date), and a comparative
is labelled from that filing, or, when no such filing is in the facts, by counting whole years back from
the filing's own period. A period reported by several filings keeps every version; the latest filed wins.

A quarter no filing reports as such is derived from two that do (`_derived`): a 10-K reports the fiscal year,
not its fourth quarter, so Q4 = FY - nine months; cash-flow lines are filed year to date only, so Q3 = nine
months - six, Q2 = six months - Q1. Both figures are of the same concept, unit and fiscal year (the same
first day), each the latest filed version; a filed quarter always wins over a derived one. Only amounts of
money are differenced: never a balance (an instant), and never a per-share figure or a share count, which do
not add up across quarters (Apple's FY2025 diluted EPS of 7.46 less 5.62 for nine months is 1.84; its
fourth quarter's was 1.85).

The SEC's calendar `frame` sits on one copy of a period's fact, sometimes a copy with no `fy`/`fp` (a proxy
statement's pay-versus-performance table repeats net income): such copies give the period its frame and
nothing else, neither a version nor a fiscal label.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from datascraper.filings.errors import FilingInvalidArgument, FilingsUpstreamError, NoFilingData
from datascraper.filings.schemas import Derivation, FigureInput, FigureVersion, FiscalPeriod, ReportedFigure

# A duration is a quarter, a year to date (six or nine months) or a year; a balance is an instant.
PeriodKind = Literal["quarter", "half_year", "nine_months", "annual", "instant"]
Frequency = Literal["annual", "quarterly"]
FilingUrl = Callable[[str], str]
_PeriodKey = tuple[PeriodKind, date | None, date]
_QUARTER_DAYS = range(80, 101)
_DURATION_DAYS: dict[PeriodKind, range] = {
    "quarter": _QUARTER_DAYS,
    "half_year": range(168, 197),
    "nine_months": range(259, 288),
    "annual": range(350, 381),
}
# Each cumulative span, and the span of the same year one quarter shorter that it is differenced with.
_ONE_QUARTER_SHORTER: dict[PeriodKind, PeriodKind] = {
    "annual": "nine_months",
    "nine_months": "half_year",
    "half_year": "quarter",
}
_SPAN_WORDS: dict[PeriodKind, str] = {"half_year": "six months to", "nine_months": "nine months to"}
# Amounts of money add up across quarters (a currency code as the unit); per-share figures and counts do not.
_ADDITIVE_UNIT = re.compile(r"^[A-Z]{3}$")
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


@dataclass(frozen=True)
class PeriodQuery:
    """Which periods are wanted: a fiscal period, a calendar frame, or the newest `limit` of a frequency."""

    fiscal_year: int | None = None
    fiscal_period: FiscalPeriod | None = None
    frame: str | None = None
    frequency: Frequency = "annual"
    limit: int = 4


def reported_figures(
    facts_payload: dict[str, Any], concepts: tuple[str, ...], query: PeriodQuery, filing_url: FilingUrl
) -> tuple[list[ReportedFigure], list[str]]:
    """The figures of the first of `concepts` the company reported for each period, newest period first,
    with the concepts used; a quarter no concept reports as such is derived where two filed figures give
    it. `filing_url(accession)` gives a filing's index page.

    Raises:
        NoFilingData: the company reports none of the concepts, or none for the periods asked.
    """
    read = [(concept, _read(facts_payload, concept)) for concept in concepts]
    figures: dict[_PeriodKey, ReportedFigure] = {}
    for _, facts in read:
        for key, versions in facts.periods.items():
            if key[0] in ("quarter", "annual", "instant") and key in facts.labels:
                figures.setdefault(key, _figure(versions, facts.labels[key], facts.frames, filing_url))
    for _, facts in read:
        quarter_ends = {end for kind, _, end in figures if kind == "quarter"}
        for key, figure in _derived(facts, filing_url).items():
            if key[2] not in quarter_ends:
                figures[key] = figure
    used = [concept for concept, facts in read if facts.periods]
    if not figures:
        raise NoFilingData(f"The company reports no {' or '.join(concepts)} in its XBRL facts.")
    chosen = _select(list(figures.values()), query)
    if not chosen:
        why = ""
        if query.fiscal_period == "Q4" and not any(_ADDITIVE_UNIT.match(facts.unit) for _, facts in read):
            why = (
                " A 10-K reports the fiscal year, not its fourth quarter, and a per-share figure or a count is not "
                "derived as the year less nine months."
            )
        raise NoFilingData(f"No reported {' or '.join(used)} matches {_describe(query)}.{why}")
    return chosen, [concept for concept in used if any(f.concept == concept for f in chosen)]


@dataclass(frozen=True)
class _ConceptFacts:
    """One concept's facts in its unit: each period's versions (newest filed first), its fiscal label, and
    the SEC's calendar frame for it wherever a copy of the fact carries one."""

    unit: str
    periods: dict[_PeriodKey, list[_Fact]]
    labels: dict[_PeriodKey, tuple[int, FiscalPeriod]]
    frames: dict[tuple[date | None, date], str]


def _read(payload: dict[str, Any], concept: str) -> _ConceptFacts:
    taxonomy, _, name = concept.partition(":")
    try:
        entry = payload.get("facts", {}).get(taxonomy, {}).get(name)
        if entry is None:
            return _ConceptFacts(unit="", periods={}, labels={}, frames={})
        units: dict[str, list[dict[str, Any]]] = entry["units"]
        # A concept is reported in one unit almost always; with several, the most used one.
        unit, rows = max(units.items(), key=lambda item: len(item[1]))
        facts: list[_Fact] = []
        frames: dict[tuple[date | None, date], str] = {}
        for row in rows:
            start = date.fromisoformat(row["start"]) if row.get("start") else None
            end = date.fromisoformat(row["end"])
            if row.get("frame"):
                frames.setdefault((start, end), str(row["frame"]))
            kind = _kind(start, end)
            if kind is None or row.get("fy") is None or row.get("fp") is None:
                continue  # a span of no quarter's length, or a copy without fiscal tags (a proxy's): its frame only
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
                )
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise FilingsUpstreamError("The SEC's XBRL company facts are not in the expected shape.") from exc
    return _ConceptFacts(unit=unit, periods=_group_by_period(facts), labels=_fiscal_labels(facts), frames=frames)


def _kind(start: date | None, end: date) -> PeriodKind | None:
    if start is None:
        return "instant"
    days = (end - start).days + 1
    return next((kind for kind, span in _DURATION_DAYS.items() if days in span), None)


def _group_by_period(facts: list[_Fact]) -> dict[_PeriodKey, list[_Fact]]:
    groups: dict[_PeriodKey, dict[str, _Fact]] = defaultdict(dict)
    for fact in facts:
        # One version per filing: a filing may repeat a fact (in the statements and again in a note).
        groups[(fact.kind, fact.start, fact.end)].setdefault(fact.accession, fact)
    return {
        key: sorted(by_filing.values(), key=lambda f: (f.filed, f.accession), reverse=True)
        for key, by_filing in groups.items()
    }


def _fiscal_labels(facts: list[_Fact]) -> dict[_PeriodKey, tuple[int, FiscalPeriod]]:
    """The fiscal (year, period) of each period, from the filings in which it was the current period."""
    latest_end: dict[str, date] = {}
    for fact in facts:
        latest_end[fact.accession] = max(fact.end, latest_end.get(fact.accession, fact.end))
    anchors: dict[_PeriodKey, tuple[int, FiscalPeriod]] = {}
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
    if fact.kind == "half_year":
        return "Q2" if fact.fp == "Q2" else None  # the six months to date of a Q2 10-Q
    if fact.kind == "nine_months":
        return "Q3" if fact.fp == "Q3" else None
    return "FY" if annual_filing else _quarter(fact.fp)


def _quarter(fp: str) -> FiscalPeriod | None:
    return fp if fp in ("Q1", "Q2", "Q3") else None  # type: ignore[return-value]


def _year_back_from(
    fact: _Fact, anchors: dict[_PeriodKey, tuple[int, FiscalPeriod]]
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


def _figure(
    versions: list[_Fact],
    label: tuple[int, FiscalPeriod],
    frames: dict[tuple[date | None, date], str],
    filing_url: FilingUrl,
) -> ReportedFigure:
    latest = versions[0]
    fy, period = label
    return ReportedFigure(
        concept=latest.concept,
        value=latest.value,
        unit=latest.unit,
        fiscal_year=fy,
        fiscal_period=period,
        label=_label(latest.kind, fy, period),
        start=latest.start,
        end=latest.end,
        frame=frames.get((latest.start, latest.end)),
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


def _label(kind: PeriodKind, fy: int, period: FiscalPeriod) -> str:
    """ "FY2025", "Q3 FY2025", or for a year to date "nine months to Q3 FY2025"."""
    quarter = f"FY{fy}" if period == "FY" else f"{period} FY{fy}"
    return f"{_SPAN_WORDS[kind]} {quarter}" if kind in _SPAN_WORDS else quarter


# --- quarters derived from what was filed ----------------------------------------------------------------


def _derived(facts: _ConceptFacts, filing_url: FilingUrl) -> dict[_PeriodKey, ReportedFigure]:
    """The quarters a concept's filings report only within a year or a year to date: each is the longer
    span less the same year's span one quarter shorter (both from the year's first day)."""
    if not _ADDITIVE_UNIT.match(facts.unit):
        return {}
    filed_quarter_ends = {end for kind, _, end in facts.periods if kind == "quarter"}
    by_first_day = {(kind, start): (kind, start, end) for kind, start, end in facts.labels}
    derived: dict[_PeriodKey, ReportedFigure] = {}
    for whole, whole_versions in facts.periods.items():
        kind, start, end = whole
        shorter = _ONE_QUARTER_SHORTER.get(kind)
        if shorter is None or start is None or end in filed_quarter_ends or whole not in facts.labels:
            continue
        earlier = by_first_day.get((shorter, start))
        if earlier is None:
            continue
        quarter_start = earlier[2] + timedelta(days=1)
        if (end - quarter_start).days + 1 not in _QUARTER_DAYS:
            continue
        fy, period = facts.labels[whole]
        # Both spans start on the year's first day.
        total = _input(whole_versions, facts.labels[whole], start, filing_url)
        part = _input(facts.periods[earlier], facts.labels[earlier], start, filing_url)
        derivation = Derivation(formula=f"{total.label} - {part.label}", whole=total, earlier=part)
        derived[("quarter", quarter_start, end)] = _derived_figure(
            whole_versions[0], derivation, (fy, "Q4" if period == "FY" else period), quarter_start
        )
    return derived


def _input(versions: list[_Fact], label: tuple[int, FiscalPeriod], start: date, filing_url: FilingUrl) -> FigureInput:
    latest = versions[0]
    return FigureInput(
        label=_label(latest.kind, *label),
        value=latest.value,
        start=start,
        end=latest.end,
        form=latest.form,
        filed=latest.filed,
        accession=latest.accession,
        filing_url=filing_url(latest.accession),
        filing_period=_filing_period(latest),
        restated=len({v.value for v in versions}) > 1,
    )


def _derived_figure(
    whole: _Fact, derivation: Derivation, label: tuple[int, FiscalPeriod], start: date
) -> ReportedFigure:
    """The derived quarter, cited to the filing of the whole span (the 10-K for a fourth quarter)."""
    fy, period = label
    return ReportedFigure(
        concept=whole.concept,
        # Float noise off: the inputs are filed to the cent at most.
        value=round(derivation.whole.value - derivation.earlier.value, 4),
        unit=whole.unit,
        fiscal_year=fy,
        fiscal_period=period,
        label=_label("quarter", fy, period),
        start=start,
        end=whole.end,
        frame=None,  # the SEC frames filed facts only
        form=derivation.whole.form,
        filed=derivation.whole.filed,
        accession=derivation.whole.accession,
        filing_url=derivation.whole.filing_url,
        filing_period=derivation.whole.filing_period,
        restated=derivation.whole.restated or derivation.earlier.restated,
        versions=[],
        derived_from=derivation,
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
