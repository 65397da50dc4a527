"""The periods a numerical sub-question asks market data for: the analyzer's fields, validated, with the
question's own wording filling what it left unset.

The analyzer resolves "last 3 quarters", "YTD", "Q3 2025" or "since March" against today's date in the
asker's time zone into the contract's period fields. They are checked here before any tool call: counts
are bounded, dates ordered and kept out of the future, a relative range and explicit dates never travel
together, and an interval must suit its range. What is wrong is corrected to the nearest sensible request,
and said in `corrections`; nothing here raises, since a sub-question must not fail for asking a little
wrongly. Fields the analyzer left unset are read from the question by a small deterministic parser
(`periods.wording`), so a question about quarters is never answered with annual statements because the
model left `frequency` null.

Fiscal periods ("Q3 FY2025", "fiscal 2024") are read here too (`fiscal_ask`), but which months they cover
depends on the company: they win over any dates the analyzer set, and get dates of their own only once the
company's calendar is read from its statements (`resolve_fiscal`, called by `fiscal_fetch`). Calendar
wording ("Q3 2025", "calendar 2024") keeps its calendar dates.
"""

from __future__ import annotations

import math
from datetime import date, timedelta

from datascraper.market_data.finding_schemas import MarketDataRequest
from datascraper.market_data.schemas import MAX_NEWS_ITEMS, HistoryInterval, HistoryPeriod
from datascraper.plan_schemas import SubQuestion
from datascraper.research_engine.periods.fiscal_calendar import (
    FiscalAsk,
    FiscalCalendar,
    FiscalPeriodRef,
    calendar_period,
)
from datascraper.research_engine.periods.wording import (
    FISCAL_DATA,
    STATEMENT_DATA,
    months_before,
    range_start,
    read_fiscal_wording,
    read_wording,
)
from datascraper.schemas import MarketDataKind, StatementFrequency, is_filing_data

# How many statements a request may ask for: three years of quarters, ten fiscal years. Earnings reports
# are quarterly, so they share the quarterly bound.
MAX_PERIODS: dict[StatementFrequency, int] = {"quarterly": 12, "annual": 10}
DEFAULT_HISTORY_PERIOD: HistoryPeriod = "1mo"
# A statement range shorter than this, with no frequency asked for, wants quarters: a year holds one
# annual statement at most ("since March", "last 6 months").
_QUARTERLY_RANGE_DAYS = 360

# A price range wholly in the future is moved to end today, at this length at least, so it holds some bars.
_MIN_SHIFTED_RANGE = timedelta(days=7)
# An earnings report comes out within this long after the period it reports on closes.
_REPORT_LAG = timedelta(days=90)

# Finest to coarsest. Yahoo keeps intraday bars only so far back (yfinance fails or returns nothing past
# it); a coarse bar longer than the range would leave at most one bar.
_INTERVALS: tuple[HistoryInterval, ...] = (
    "1m", "2m", "5m", "15m", "30m", "60m", "1h", "90m", "1d", "5d", "1wk", "1mo", "3mo",
)  # fmt: skip
_INTRADAY_REACH_DAYS = {"1m": 7, "2m": 60, "5m": 60, "15m": 60, "30m": 60, "60m": 730, "1h": 730, "90m": 60}
_BAR_DAYS = {"1d": 1, "5d": 5, "1wk": 7, "1mo": 28, "3mo": 90}


def market_data_request(sub_question: SubQuestion, *, today: date) -> MarketDataRequest:
    """What the tool calls of `sub_question` carry: its period fields, else its wording, validated for
    its data kind against `today` (the asker's)."""
    data = sub_question.data
    if data is None or is_filing_data(data):
        return MarketDataRequest()
    fiscal = fiscal_ask(sub_question)
    asked = _merge(sub_question, read_wording(sub_question.question, data=data, today=today), fiscal=fiscal)
    if data in STATEMENT_DATA:
        return _statement_request(asked, today, balance_sheet=data == "balance_sheet")
    if data == "earnings":
        return _earnings_request(asked, today)
    if data == "price_history":
        return _history_request(asked, today)
    if data == "news":
        return _news_request(asked)
    return MarketDataRequest()  # quotes, ratings and profiles have no periods


def fiscal_ask(sub_question: SubQuestion) -> FiscalAsk | None:
    """The fiscal periods a statement or earnings sub-question names: the analyzer's `fiscal_period`, else
    the question's wording ("Q3 FY2025", "fiscal 2024"). Which months they are depends on the company, so
    they are placed on its calendar once its statements are fetched (`resolve_fiscal`)."""
    if sub_question.data not in FISCAL_DATA:
        return None
    for text in (sub_question.fiscal_period, sub_question.question):
        if text and (ask := read_fiscal_wording(text)) is not None:
            return ask
    return None


def _merge(sub_question: SubQuestion, worded: MarketDataRequest, *, fiscal: FiscalAsk | None) -> MarketDataRequest:
    """The analyzer's fields where it set them, the wording's elsewhere. A range is taken whole from one
    side (mixing the analyzer's start with the wording's period would be neither's request), and a count
    from the wording only when it counts the same kind of period.

    Fiscal periods win over any dates: an analyzer reading "Q3 FY2025" as July to September 2025 has read
    it as calendar months, which for most companies is another quarter. Their dates are set once the
    company's calendar is known."""
    if fiscal is not None:
        # "Quarterly revenue in fiscal 2025" asks for the quarters of a fiscal year.
        quarterly = "quarterly" in (fiscal.frequency, sub_question.frequency, worded.frequency)
        return MarketDataRequest(frequency="quarterly" if quarterly else "annual")
    said_range = any(value is not None for value in (sub_question.period, sub_question.start, sub_question.end))
    ranged = sub_question if said_range else worded
    frequency = sub_question.frequency or worded.frequency
    periods = sub_question.periods
    if periods is None and frequency == worded.frequency:
        periods = worded.periods
    return MarketDataRequest(
        frequency=frequency,
        periods=periods,
        period=ranged.period,
        start=ranged.start,
        end=ranged.end,
        interval=sub_question.interval or worded.interval,
        limit=sub_question.limit if sub_question.limit is not None else worded.limit,
    )


# --- validation, per data kind ------------------------------------------------------------------------


def _statement_request(asked: MarketDataRequest, today: date, *, balance_sheet: bool) -> MarketDataRequest:
    corrections: list[str] = []
    start, end = _ordered(asked.start, asked.end, corrections)
    if start is None and end is None and asked.period is not None:
        start = range_start(asked.period, today)
    periods = asked.periods
    frequency = asked.frequency or _frequency_for_range(start, end or today)
    if start is not None and start > today:
        corrections.append(f"No period starting {start} has been reported yet; the latest one is given instead.")
        start = end = None
        periods = 1 if periods is None else periods
    elif end is not None and end > today:
        end = today
    if frequency == "ttm" and balance_sheet:
        corrections.append(
            "Yahoo Finance publishes no trailing-twelve-month balance sheet; the latest quarter is given instead."
        )
        frequency, periods = "quarterly", 1
    if frequency == "ttm":  # one trailing period: nothing to count or bound
        return MarketDataRequest(frequency="ttm", corrections=corrections)
    return MarketDataRequest(
        frequency=frequency,
        periods=_bounded_count(periods, MAX_PERIODS[frequency], f"{frequency} periods", corrections),
        start=start,
        end=end,
        corrections=corrections,
    )


def _earnings_request(asked: MarketDataRequest, today: date) -> MarketDataRequest:
    corrections: list[str] = []
    start, end = _ordered(asked.start, asked.end, corrections)
    if start is None and end is None and asked.period is not None:
        start = range_start(asked.period, today)
    if start is not None and start > today:
        # Reports after today are the scheduled ones, which the tool gives anyway.
        start = end = None
    return MarketDataRequest(
        periods=_bounded_count(asked.periods, MAX_PERIODS["quarterly"], "earnings reports", corrections),
        start=start,
        end=end,
        corrections=corrections,
    )


def _history_request(asked: MarketDataRequest, today: date) -> MarketDataRequest:
    corrections: list[str] = []
    start, end = _ordered(asked.start, asked.end, corrections)
    period = None
    if start is None and end is None:
        period = asked.period or DEFAULT_HISTORY_PERIOD
        first_day, last_day = range_start(period, today), today
    else:
        # Explicit dates win over a relative range: they are the more precise of the two. An open start is
        # a month before the end; an open end is today.
        start = start or months_before(end or today, 1)
        end = end or max(start, today)
        if start > today:
            length = max(end - start, _MIN_SHIFTED_RANGE)
            corrections.append(
                f"The range asked for, from {start}, is in the future; one of the same length (at least a week) "
                "up to today is given instead."
            )
            start, end = today - length, today
        elif end > today:
            corrections.append(f"The range asked for ends {end}, after today; it is cut to today ({today}).")
            end = today
        first_day, last_day = start, end
    return MarketDataRequest(
        period=period,
        start=start,
        end=end,
        interval=_interval_for(asked.interval, first_day, last_day, today, corrections),
        corrections=corrections,
    )


def _news_request(asked: MarketDataRequest) -> MarketDataRequest:
    corrections: list[str] = []
    return MarketDataRequest(
        limit=_bounded_count(asked.limit, MAX_NEWS_ITEMS, "news items", corrections), corrections=corrections
    )


def resolve_fiscal(
    request: MarketDataRequest,
    ask: FiscalAsk,
    fiscal_calendar: FiscalCalendar | None,
    *,
    data: MarketDataKind,
    symbol: str,
    today: date,
) -> MarketDataRequest:
    """`request` bounded to the period ends (for earnings, the report dates) of the fiscal periods `ask`
    names on `symbol`'s `fiscal_calendar`. Without one the periods are read as calendar months, and the
    request says so in its corrections rather than guess."""
    first, last = ask.first, ask.last
    if first.quarter is None and (request.frequency == "quarterly" or data == "earnings"):
        first = FiscalPeriodRef(year=first.year, quarter=1)  # the quarters (or their reports) of the years named
    if fiscal_calendar is not None:
        start, end = fiscal_calendar.period(first).window[0], fiscal_calendar.period(last).window[1]
    else:  # any period ending within the months named, as calendar wording is read
        start, end = calendar_period(first).first_month, calendar_period(last).window[1]
    if data == "earnings":
        end += _REPORT_LAG  # a period's report comes out after it closes
    corrections = list(request.corrections)
    if fiscal_calendar is None:
        corrections.append(
            f"{symbol}'s fiscal calendar could not be read from its statements; {ask.name} is read as calendar "
            f"months ({_calendar_months(first, last)})."
        )
    placed = MarketDataRequest(frequency=request.frequency or ask.frequency, start=start, end=end)
    validated = (
        _earnings_request(placed, today)
        if data == "earnings"
        else _statement_request(placed, today, balance_sheet=data == "balance_sheet")
    )
    return validated.model_copy(update={"corrections": [*corrections, *validated.corrections]})


def _calendar_months(first: FiscalPeriodRef, last: FiscalPeriodRef) -> str:
    begins, ends = calendar_period(first), calendar_period(last)
    return ends.months if begins == ends else f"{begins.months} to {ends.months}"


def _ordered(start: date | None, end: date | None, corrections: list[str]) -> tuple[date | None, date | None]:
    if start is not None and end is not None and start > end:
        corrections.append(f"The start {start} was after the end {end}; the two are swapped.")
        return end, start
    return start, end


def _bounded_count(count: int | None, most: int, what: str, corrections: list[str]) -> int | None:
    if count is None:
        return None
    if count > most:
        corrections.append(f"At most {most} {what} are given; {count} were asked for.")
        return most
    return max(1, count)


def _frequency_for_range(start: date | None, end: date) -> StatementFrequency:
    if start is not None and (end - start).days < _QUARTERLY_RANGE_DAYS:
        return "quarterly"
    return "annual"


def _interval_for(
    interval: HistoryInterval | None, first_day: date | None, last_day: date, today: date, corrections: list[str]
) -> HistoryInterval | None:
    """`interval`, or the nearest coarser one Yahoo serves for the range (`first_day` None: all history)."""
    if interval is None:
        return None
    back_days = math.inf if first_day is None else (today - first_day).days
    span_days = math.inf if first_day is None else (last_day - first_day).days + 1
    chosen = interval
    if back_days > _INTRADAY_REACH_DAYS.get(interval, math.inf):
        chosen = next(
            candidate
            for candidate in _INTERVALS[_INTERVALS.index(interval) + 1 :]
            if back_days <= _INTRADAY_REACH_DAYS.get(candidate, math.inf)
        )
        corrections.append(f"Yahoo Finance keeps {interval} bars for recent days only; {chosen} bars are given.")
    elif _BAR_DAYS.get(interval, 0) > span_days:
        chosen = "1d"
        corrections.append(f"A {interval} bar is longer than the range asked for; daily bars are given.")
    return chosen
