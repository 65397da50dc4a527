"""Charts of the run's market data: price histories as lines of closes, statement lines as bars per
period. The points are the tool output as it came, never a model's reading of it.

A chart names the source of its figures by its number in the answer's source list, which is only known
once every round is done (web and market data sources are numbered together, in plan order): so charts
are built when the synthesizer has numbered the sources, and go out before the answer's first delta.
One chart per sub-question and statement line, with a series per ticker, so that a comparison is one
chart; tickers reported in different currencies get a chart each. Bounded: `MAX_CHARTS` per run,
`MAX_POINTS` per series.

Points go oldest first by when they are, never by their labels: Microsoft's Q1 FY2027 (Jul–Sep 2026) comes
after its Q4 FY2026, though its label sorts first. Each series sends its points' ends beside them (`ends`),
so that a client merging the periods of several series orders them the same way.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TypeVar

from datascraper.formatting import humanize
from datascraper.market_data.schemas import MarketDataResult, PriceHistory
from datascraper.market_data.statement_schemas import FinancialStatement
from datascraper.research_engine.periods.as_of import as_of_moment, as_of_text, bar_label, bar_moment, period_label
from datascraper.research_engine.periods.fiscal_calendar import FiscalCalendar
from datascraper.research_engine.state import Finding
from datascraper.schemas import ChartEvent, ChartSeries, Source
from datascraper.sources import clean_url

logger = logging.getLogger(__name__)

MAX_CHARTS = 4
MAX_POINTS = 300
MAX_LINES_PER_STATEMENT = 2

# Statement lines a sub-question asks about, by the words it uses. Longer phrases come first and are
# consumed, so "gross profit" is not also "profit" and "free cash flow" not also "cash".
_LINES_ASKED: tuple[tuple[str, str], ...] = (
    (r"gross (profit|margin)", "GrossProfit"),
    (r"operating (income|profit|margin)", "OperatingIncome"),
    (r"ebitda", "EBITDA"),
    (r"earnings per share|\beps\b", "DilutedEPS"),
    (r"free cash ?flow|\bfcf\b", "FreeCashFlow"),
    (r"operating cash ?flow|cash flow from operations", "OperatingCashFlow"),
    (r"capex|capital expenditures?", "CapitalExpenditure"),
    (r"net (income|profit|earnings)|\bprofits?\b|\bearnings\b", "NetIncome"),
    (r"revenues?|\bsales\b|top line", "TotalRevenue"),
    (r"\bdebt\b", "TotalDebt"),
    (r"\bassets\b", "TotalAssets"),
    (r"\bliabilities\b", "TotalLiabilitiesNetMinorityInterest"),
    (r"\bequity\b", "StockholdersEquity"),
    (r"\bcash\b", "CashAndCashEquivalents"),
)
# When the question names none of a statement's lines: the first of these that the statement has.
_HEADLINE_LINES = {
    "income": ("TotalRevenue", "NetIncome"),
    "balance": ("TotalAssets", "TotalDebt"),
    "cash_flow": ("FreeCashFlow", "OperatingCashFlow"),
}
_PER_SHARE_LINES = frozenset({"BasicEPS", "DilutedEPS"})
R = TypeVar("R", PriceHistory, FinancialStatement)
P = TypeVar("P")
# A point as it is charted: when it is (a period's end, a bar's day or time), its x, its y.
DatedPoint = tuple[date, str, float]


def charts_for(findings: Sequence[Finding], sources: Sequence[Source]) -> list[ChartEvent]:
    """The charts of `findings`' market data, in the order of their sources, ids `c1`, `c2`, ...

    The same findings and sources give the same charts, so a resumed run sends them again unchanged.
    """
    numbers = {(source.url, source.title): source.n for source in sources}
    charts: list[ChartEvent] = []
    for finding in findings:
        if finding.market_data is None:
            continue
        try:
            charts.extend(_charts_of(finding, numbers))
        except Exception:
            # Charts are extra: a bug drawing one must not cost the run its answer.
            logger.exception("Could not chart the market data of sub-question %s", finding.step.id)
    charts.sort(key=lambda chart: chart.source_n)
    charts = charts[:MAX_CHARTS]
    for n, chart in enumerate(charts, start=1):
        chart.id = f"c{n}"
    return charts


def _charts_of(finding: Finding, numbers: dict[tuple[str, str], int]) -> list[ChartEvent]:
    assert finding.market_data is not None
    numbered = [
        (result.result(), numbers[key])
        for result in finding.market_data.results
        if (key := (clean_url(result.url), result.title)) in numbers
    ]
    histories = [(typed, n) for typed, n in numbered if isinstance(typed, PriceHistory)]
    statements = [(typed, n) for typed, n in numbered if isinstance(typed, FinancialStatement)]
    charts = []
    for prices in _by_currency(histories):
        charts.extend(_price_chart(prices))
    for figures in _by_currency(statements):
        charts.extend(_statement_charts(figures, finding.step.question, finding.fiscal_calendars))
    return charts


def _by_currency(results: list[tuple[R, int]]) -> list[list[tuple[R, int]]]:
    """Results that share a chart: those of one currency, quoted in the same unit (pence and pounds are
    shown differently). A result of unknown currency gets a chart of its own, since two unknowns may be
    different currencies."""
    groups: dict[object, list[tuple[R, int]]] = {}
    for result, n in results:
        quoted = result.sub_unit.code if result.sub_unit is not None else None
        key = (result.currency, quoted) if result.currency is not None else ("unknown", n)
        groups.setdefault(key, []).append((result, n))
    return list(groups.values())


def _price_chart(histories: list[tuple[PriceHistory, int]]) -> list[ChartEvent]:
    series = [
        _series(
            history.symbol,
            n,
            [
                (bar_moment(bar, history), bar_label(bar, history), bar.close)
                for bar in history.bars
                if bar.close is not None
            ],
        )
        for history, n in histories
    ]
    series = [one for one in series if one.points]
    if not series:
        return []
    # Yahoo's closes: a line through a split stays level, and a close before one is not the price traded then.
    split = any(bar.traded_close is not None for history, _ in histories for bar in history.bars)
    return [
        ChartEvent(
            id="",
            title=f"{' vs '.join(one.name for one in series)} closing price{' (split-adjusted)' if split else ''}",
            kind="line",
            unit=histories[0][0].currency or "",
            as_of=_newest(history for history, _ in histories),
            source_n=series[0].source_n,
            series=series,
            sub_unit=histories[0][0].sub_unit,
        )
    ]


def _statement_charts(
    statements: list[tuple[FinancialStatement, int]], question: str, calendars: dict[str, FiscalCalendar]
) -> list[ChartEvent]:
    first = statements[0][0]
    present = {line.name for statement, _ in statements for line in statement.lines}
    calendar = _shared_calendar([statement.symbol for statement, _ in statements], calendars)
    charts = []
    for name in lines_asked(question, first.statement, present):
        series = []
        for statement, n in statements:
            values = next((line.values for line in statement.lines if line.name == name), [])
            # The periods asked for only: the bases kept for growth rates are not what the question is about.
            points = [
                (end, period_label(end, statement.frequency, calendar), value)
                for end, value in zip(statement.asked_periods, values, strict=False)
                if value is not None
            ]
            if points:
                series.append(_series(statement.symbol, n, points))
        if not series:
            continue
        currency = first.currency or ""
        charts.append(
            ChartEvent(
                id="",
                title=f"{humanize(name)} ({first.frequency}): {' vs '.join(one.name for one in series)}",
                kind="bars",
                unit=f"{currency} per share".strip() if name in _PER_SHARE_LINES else currency,
                as_of=_newest(statement for statement, _ in statements),
                source_n=series[0].source_n,
                series=series,
            )
        )
    return charts


def _shared_calendar(symbols: list[str], calendars: dict[str, FiscalCalendar]) -> FiscalCalendar | None:
    """The fiscal calendar periods are named by on a chart: the one every symbol shares. Companies whose
    years end in different months are charted by calendar quarter, so that their bars line up."""
    months = {calendars[symbol].year_end_month if symbol in calendars else None for symbol in symbols}
    if len(months) != 1 or None in months:
        return None
    return calendars[symbols[0]]


def lines_asked(question: str, statement: str, present: set[str]) -> list[str]:
    """The statement lines to chart for `question`: those it names, else the statement's headline line;
    only lines the statement has, at most `MAX_LINES_PER_STATEMENT`."""
    text = question.lower()
    asked = []
    for pattern, name in _LINES_ASKED:
        text, found = re.subn(pattern, " ", text)
        if found and name in present and name not in asked:
            asked.append(name)
    if not asked:
        asked = [name for name in _HEADLINE_LINES.get(statement, ()) if name in present][:1]
    return asked[:MAX_LINES_PER_STATEMENT]


def _series(name: str, source_n: int, points: list[DatedPoint]) -> ChartSeries:
    """A series read left to right: its points oldest first by when they are (statements list the newest
    period first, and fiscal labels do not sort as text), bounded, each with its end beside it."""
    dated = _bounded(sorted(points, key=lambda point: point[0]))
    return ChartSeries(
        name=name,
        source_n=source_n,
        points=[(x, y) for _, x, y in dated],
        ends=[end.isoformat() for end, _, _ in dated],
    )


def _bounded(points: list[P]) -> list[P]:
    """At most `MAX_POINTS`, evenly spaced, the first and the last kept."""
    if len(points) <= MAX_POINTS:
        return points
    step = (len(points) - 1) / (MAX_POINTS - 1)
    return [points[round(i * step)] for i in range(MAX_POINTS)]


def _newest(results: Iterable[MarketDataResult]) -> str:
    """The as-of of a chart: the newest of its series'."""
    return as_of_text(max(results, key=as_of_moment))
