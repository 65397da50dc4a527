"""When market data is as of, and how its periods are labelled: the dates an answer and a chart show.

A statement is as of its newest period end, a price history as of its last bar, anything else as of the
time its tool dates it (a quote: when it was fetched, since Yahoo Finance does not date quotes). The range
a source covers is named in its title where the market data client builds it, and its fiscal periods by
`fiscal_fetch`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from datascraper.market_data.schemas import MarketDataResult, PriceBar, PriceHistory, StatementFrequency
from datascraper.market_data.statement_schemas import FinancialStatement
from datascraper.research_engine.periods.fiscal_calendar import PERIOD_END_SLACK, FiscalCalendar


def as_of_moment(result: MarketDataResult) -> datetime:
    """The time the figures of `result` describe, timezone-aware."""
    if isinstance(result, FinancialStatement) and result.periods:
        return datetime.combine(max(result.periods), datetime.min.time(), UTC)
    if isinstance(result, PriceHistory) and result.bars:
        moment = result.bars[-1].date
    else:
        moment = result.as_of or result.retrieved_at
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def as_of_text(result: MarketDataResult) -> str:
    """`as_of_moment` in ISO form: a date for period ends and daily bars, a date-time for anything timed."""
    moment = as_of_moment(result)
    if isinstance(result, FinancialStatement) or (isinstance(result, PriceHistory) and not intraday(result)):
        return moment.date().isoformat()
    return moment.isoformat()


def intraday(history: PriceHistory) -> bool:
    """Whether bars are minutes or hours apart ("1m" … "90m", "1h"; "1mo" is a month)."""
    return history.interval.endswith(("m", "h"))


def bar_moment(bar: PriceBar, history: PriceHistory) -> date:
    """When a bar is: its day, or its time for intraday bars (a datetime, which is a date)."""
    return bar.date if intraday(history) else bar.date.date()


def bar_label(bar: PriceBar, history: PriceHistory) -> str:
    """The x of a bar: its ISO date, or its ISO date-time for intraday bars."""
    return bar_moment(bar, history).isoformat()


def period_label(period_end: date, frequency: StatementFrequency, calendar: FiscalCalendar | None = None) -> str:
    """A statement period by its end. On the company's fiscal `calendar`, by its fiscal name and the months
    it covers: "Q3 FY2025 (Aug–Oct 2024)", "FY2024 (Oct 2023–Sep 2024)". Without one: "FY2024" (the fiscal
    year, named by the year it ends in, as most companies do), "2025-Q1" (the calendar quarter, so that
    companies with different fiscal years line up), or "TTM 2025-03-31" (the twelve months to that date).

    Companies on 52/53-week years end periods up to a week into the next month (a quarter ending on
    2025-01-03 is the December quarter): periods are read by the day a week before their end."""
    if frequency == "ttm":
        return f"TTM {period_end.isoformat()}"
    if calendar is not None:
        fiscal = calendar.period_ending(period_end, quarterly=frequency == "quarterly")
        if fiscal is not None:
            return fiscal.label
    labelled = period_end - PERIOD_END_SLACK
    if frequency == "annual":
        return f"FY{labelled.year}"
    return f"{labelled.year}-Q{(labelled.month - 1) // 3 + 1}"
