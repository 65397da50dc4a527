"""Statements and earnings fetched by the company's fiscal calendar, and titled by it.

"NVIDIA's revenue in Q3 FY2025" is the quarter that ended 2024-10-27, not July to September 2025: which
months a fiscal period covers depends on the company. So before a sub-question that names fiscal periods
fetches its data, each ticker's calendar is read from its annual income statement (the period ends of its
fiscal years), and the periods are placed on it, ticker by ticker: one question may compare companies whose
years end in different months. Without a calendar (too few dates, or no statement) the periods are read as
calendar months and the result says so (`request.resolve_fiscal`).

Statements fetched without fiscal wording have their calendar read alongside, so that their periods are
named both ways ("Q3 FY2025 (Aug–Oct 2024)") in titles, facts and charts. Quarterly statements must agree
with the calendar (each quarter closing a quarter of it), or their periods are named by their dates alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date

from datascraper.market_data.finding_schemas import MarketDataFinding, MarketDataRequest, ToolFailure, ToolResult
from datascraper.market_data.statement_schemas import FinancialStatement
from datascraper.research_engine.data.market_data import MAX_TICKERS, fetch_market_data
from datascraper.research_engine.periods.as_of import period_label
from datascraper.research_engine.periods.fiscal_calendar import FiscalAsk, FiscalCalendar, infer_calendar
from datascraper.research_engine.periods.request import resolve_fiscal
from datascraper.research_engine.periods.wording import FISCAL_DATA
from datascraper.schemas import MarketDataKind

# The statement whose period ends give a company's fiscal calendar: its fiscal year ends.
_CALENDAR_STATEMENT = MarketDataRequest(frequency="annual")


@dataclass
class FiscalMarketData:
    """A sub-question's market data, with the fiscal calendar of each ticker that showed one."""

    finding: MarketDataFinding
    calendars: dict[str, FiscalCalendar] = field(default_factory=dict)


async def fetch_by_fiscal_period(
    tickers: list[str],
    data: MarketDataKind,
    *,
    question: str,
    request: MarketDataRequest,
    ask: FiscalAsk | None,
    today: date,
    timeout_s: float | None = None,
) -> FiscalMarketData:
    """`data` for `tickers` over `request`, or, when `ask` names fiscal periods, over those periods placed
    on each ticker's fiscal calendar.

    Raises:
        MarketDataUnavailable: the market data server cannot be reached (as `fetch_market_data`).
    """
    if data not in FISCAL_DATA or (ask is None and (data == "earnings" or request.frequency == "ttm")):
        finding = await fetch_market_data(tickers, data, question=question, request=request, timeout_s=timeout_s)
        return FiscalMarketData(finding)
    if ask is not None:
        return await _fetch_fiscal_periods(
            tickers, data, ask, question=question, request=request, today=today, timeout_s=timeout_s
        )
    if request.frequency == "quarterly":  # which quarter closes the fiscal year, only the annual statement shows
        finding, calendars = await asyncio.gather(
            fetch_market_data(tickers, data, question=question, request=request, timeout_s=timeout_s),
            fiscal_calendars(tickers, timeout_s=timeout_s),
        )
    else:  # annual statements (the tool's default) end on fiscal year ends: they show their own calendar
        finding = await fetch_market_data(tickers, data, question=question, request=request, timeout_s=timeout_s)
        calendars = _calendars_of(finding)
    calendars = _confirmed(calendars, finding)
    return FiscalMarketData(titled(finding, calendars), calendars)


async def _fetch_fiscal_periods(
    tickers: list[str],
    data: MarketDataKind,
    ask: FiscalAsk,
    *,
    question: str,
    request: MarketDataRequest,
    today: date,
    timeout_s: float | None,
) -> FiscalMarketData:
    """The calendars first, then one call per distinct placing of `ask` (tickers sharing a calendar share it)."""
    symbols = _symbols(tickers)
    fetched, beyond_cap = symbols[:MAX_TICKERS], symbols[MAX_TICKERS:]
    calendars = await fiscal_calendars(fetched, timeout_s=timeout_s)
    by_request: dict[str, tuple[MarketDataRequest, list[str]]] = {}
    for symbol in fetched:
        placed = resolve_fiscal(request, ask, calendars.get(symbol), data=data, symbol=symbol, today=today)
        by_request.setdefault(placed.model_dump_json(), (placed, []))[1].append(symbol)
    parts = await asyncio.gather(
        *(
            fetch_market_data(group, data, question=question, request=placed, timeout_s=timeout_s)
            for placed, group in by_request.values()
        )
    )
    errors = [error for part in parts for error in part.errors]
    if beyond_cap:  # as `fetch_market_data` reports them
        message = f"Only the first {MAX_TICKERS} tickers of a sub-question are fetched."
        errors.append(ToolFailure(symbol=", ".join(beyond_cap), code="invalid_argument", message=message))
    results = [result for part in parts for result in part.results]
    finding = MarketDataFinding(tickers=fetched, data=data, question=question, results=results, errors=errors)
    calendars = _confirmed(calendars, finding)
    return FiscalMarketData(titled(finding, calendars, ask=ask), calendars)


async def fiscal_calendars(tickers: list[str], *, timeout_s: float | None = None) -> dict[str, FiscalCalendar]:
    """Each ticker's fiscal calendar, read from its annual income statement; a ticker whose statement is
    missing or whose dates do not say is left out."""
    annual = await fetch_market_data(tickers, "income_statement", request=_CALENDAR_STATEMENT, timeout_s=timeout_s)
    return _calendars_of(annual)


def _calendars_of(finding: MarketDataFinding) -> dict[str, FiscalCalendar]:
    """The calendars the annual statements of `finding` show, by symbol."""
    calendars = {}
    for result in finding.results:
        statement = result.result()
        if isinstance(statement, FinancialStatement) and statement.frequency == "annual":
            calendar = infer_calendar(statement.periods)
            if calendar is not None:
                calendars[statement.symbol] = calendar
    return calendars


def _confirmed(calendars: dict[str, FiscalCalendar], finding: MarketDataFinding) -> dict[str, FiscalCalendar]:
    """The calendars that the quarterly statements of `finding` agree with: a quarter that closes no quarter
    of its company's calendar (a fiscal year changed since) leaves that company's periods named by date."""
    confirmed = dict(calendars)
    for result in finding.results:
        statement = result.result()
        calendar = confirmed.get(result.symbol)
        if calendar is None or not isinstance(statement, FinancialStatement) or statement.frequency != "quarterly":
            continue
        if any(calendar.period_ending(end, quarterly=True) is None for end in statement.periods):
            del confirmed[result.symbol]
    return confirmed


def titled(
    finding: MarketDataFinding, calendars: dict[str, FiscalCalendar], *, ask: FiscalAsk | None = None
) -> MarketDataFinding:
    """`finding` with the fiscal names of its periods in its results' citation titles: statements name
    the periods they hold, earnings the fiscal periods asked for."""
    results = [_titled(result, calendars.get(result.symbol), ask) for result in finding.results]
    return finding.model_copy(update={"results": results})


def _titled(result: ToolResult, calendar: FiscalCalendar | None, ask: FiscalAsk | None) -> ToolResult:
    if calendar is None:
        return result
    payload = result.result()
    if isinstance(payload, FinancialStatement):
        if payload.frequency == "ttm" or not payload.asked_periods:
            return result
        newest, oldest = payload.asked_periods[0], payload.asked_periods[-1]
        named = period_label(newest, payload.frequency, calendar)
        if oldest != newest:
            named = f"{period_label(oldest, payload.frequency, calendar)} to {named}"
    elif ask is not None and result.tool == "get_earnings":
        first, last = calendar.period(ask.first), calendar.period(ask.last)
        named = first.label if first == last else f"{first.label} to {last.label}"
    else:
        return result
    return result.model_copy(update={"title": f"{result.title}; {named}"})


def _symbols(tickers: list[str]) -> list[str]:
    """The tickers as the market data client asks for them."""
    return list(dict.fromkeys(ticker.strip().upper() for ticker in tickers if ticker.strip()))
