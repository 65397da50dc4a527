"""Yahoo's fundamentals as typed results: a financial statement, the earnings dates and the analyst ratings,
read from a yfinance Ticker. The adapter (`yahoo.YahooFinanceAdapter`) calls these in a worker thread, under
its timeout, cache and error mapping; `now` is its clock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote as url_quote

import pandas as pd
from yfinance.exceptions import YFDataException

from datascraper.market_data.errors import NoMarketData
from datascraper.market_data.schemas import (
    AnalystRatings,
    PriceTarget,
    RatingChange,
    RecommendationTrend,
    StatementFrequency,
    StatementKind,
)
from datascraper.market_data.statement_schemas import (
    ESSENTIAL_STATEMENT_LINES,
    Earnings,
    EarningsEvent,
    FinancialStatement,
    StatementLine,
)
from datascraper.market_data.ticker import TickerLike, yahoo_url
from datascraper.market_data.values import SUB_UNITS, currency_or_none, integer, main_unit, moment, num, scaled, text

# Output caps keep a tool result small enough for a prompt.
MAX_STATEMENT_LINES = 80
MAX_RATING_CHANGES = 10
EARNINGS_DATES_LIMIT = 12

_STATEMENT_FREQ = {"annual": "yearly", "quarterly": "quarterly", "ttm": "trailing"}
_STATEMENT_PAGE = {"income": "financials", "balance": "balance-sheet", "cash_flow": "cash-flow"}
STATEMENT_NAME = {"income": "income statement", "balance": "balance sheet", "cash_flow": "cash flow statement"}

Now = Callable[[], datetime]


def financial_statement(
    ticker: TickerLike, symbol: str, statement: StatementKind, frequency: StatementFrequency, now: Now
) -> FinancialStatement:
    """The statement, newest period first, empty periods and lines dropped, cut to `MAX_STATEMENT_LINES`
    with the lines the computed facts read kept first."""
    getter = {
        "income": ticker.get_income_stmt,
        "balance": ticker.get_balance_sheet,
        "cash_flow": ticker.get_cashflow,
    }[statement]
    try:
        frame = getter(freq=_STATEMENT_FREQ[frequency])
    except IndexError:
        # yfinance takes the first column of a trailing table without checking there is one.
        frame = None
    name = STATEMENT_NAME[statement]
    if frame is not None:
        # Yahoo pads tables with periods and lines that carry no value at all.
        frame = frame.dropna(axis=1, how="all").dropna(axis=0, how="all")
    if frame is None or frame.empty:
        raise NoMarketData(f"Yahoo Finance has no {frequency} {name} for {symbol}.")
    frame = frame[sorted(frame.columns, reverse=True)]
    notes = []
    if len(frame) > MAX_STATEMENT_LINES:
        # yfinance orders lines as Yahoo's site does, the ratio inputs (revenue, debt, equity, cash) late:
        # those are kept first, then the others in order.
        essential = set(ESSENTIAL_STATEMENT_LINES)
        kept = [name for name in frame.index if name in essential]
        kept += [name for name in frame.index if name not in essential][: MAX_STATEMENT_LINES - len(kept)]
        notes.append(
            f"Showing {len(kept)} of {len(frame)} line items: the key lines, then the first others in Yahoo's order."
        )
        frame = frame.loc[[name for name in frame.index if name in set(kept)]]
    periods = [moment(column).date() for column in frame.columns]
    return FinancialStatement(
        symbol=symbol,
        currency=currency_or_none(symbol, lambda: ticker.info.get("financialCurrency")),
        as_of=datetime.combine(periods[0], datetime.min.time(), UTC),
        retrieved_at=now(),
        url=yahoo_url(symbol, _STATEMENT_PAGE[statement]),
        notes=notes,
        statement=statement,
        frequency=frequency,
        periods=periods,
        lines=[
            StatementLine(name=str(line), values=[num(value) for value in values])
            for line, values in zip(frame.index, frame.to_numpy(), strict=True)
        ],
    )


def earnings(ticker: TickerLike, symbol: str, now: Now) -> Earnings:
    """The newest `EARNINGS_DATES_LIMIT` earnings dates, split into scheduled and reported ones."""
    frame = ticker.get_earnings_dates(limit=EARNINGS_DATES_LIMIT)
    if frame is None or frame.empty:
        raise NoMarketData(f"Yahoo Finance has no earnings dates for {symbol}.")
    # yfinance returns Yahoo's whole page (25 rows) whatever the limit: keep the newest rows asked for.
    frame = frame.sort_index(ascending=False).head(EARNINGS_DATES_LIMIT)
    retrieved_at = now()
    events = [
        EarningsEvent(
            date=moment(ts),
            eps_estimate=num(row.get("EPS Estimate")),
            eps_reported=num(row.get("Reported EPS")),
            surprise_percent=num(row.get("Surprise(%)")),
        )
        for ts, row in frame.iterrows()
    ]
    upcoming = [event for event in events if event.date >= retrieved_at]
    reported = [event for event in events if event.date < retrieved_at]
    return Earnings(
        symbol=symbol,
        currency=currency_or_none(symbol, lambda: ticker.info.get("financialCurrency")),
        as_of=retrieved_at,
        retrieved_at=retrieved_at,
        url=f"https://finance.yahoo.com/calendar/earnings?symbol={url_quote(symbol, safe='')}",
        upcoming=sorted(upcoming, key=lambda e: e.date),
        reported=sorted(reported, key=lambda e: e.date, reverse=True),
    )


def analyst_ratings(ticker: TickerLike, symbol: str, now: Now) -> AnalystRatings:
    """The recommendation trend, the price targets and the recent rating changes: each part on its own, so
    the ratings fail only when every part is missing."""
    notes: list[str] = []
    failures: list[Exception] = []

    def part(name: str, read: Callable[[], Any]) -> Any:
        """One part on its own: a part Yahoo has nothing for, or that fails, leaves the others intact."""
        try:
            return read()
        except YFDataException:
            # yfinance raises on an empty upgrade/downgrade list, whatever `hide_exceptions` says.
            notes.append(f"Yahoo Finance has no {name} for {symbol}.")
        except Exception as exc:
            failures.append(exc)
            notes.append(f"The {name} could not be fetched from Yahoo Finance.")
        return None

    summary = part("recommendation trend", lambda: ticker.recommendations_summary)
    targets = part("price targets", lambda: ticker.analyst_price_targets) or {}
    changes = part("upgrade and downgrade history", lambda: ticker.upgrades_downgrades)
    quoted = currency_or_none(symbol, lambda: ticker.get_history_metadata().get("currency"))
    currency, divisor = main_unit(quoted)
    trend = _trend(summary)
    target = PriceTarget(
        **{key: scaled(targets.get(key), divisor) for key in ("current", "low", "high", "mean", "median")}
    )
    recent = _rating_changes(changes)
    has_target = any(value is not None for value in target.model_dump().values())
    if not trend and not has_target and not recent:
        if failures:
            raise failures[0]
        raise NoMarketData(f"Yahoo Finance has no analyst ratings for {symbol}.")
    retrieved_at = now()
    return AnalystRatings(
        symbol=symbol,
        currency=currency,
        as_of=retrieved_at,
        retrieved_at=retrieved_at,
        url=yahoo_url(symbol, "analysis"),
        notes=notes,
        sub_unit=SUB_UNITS.get(quoted or ""),
        trend=trend,
        price_target=target if has_target else None,
        recent_changes=recent,
    )


def _trend(summary: pd.DataFrame | None) -> list[RecommendationTrend]:
    """Yahoo's recommendation counts by month (0m the current one), in its order."""
    return [
        RecommendationTrend(
            period=str(row.get("period", "")),
            strong_buy=integer(row.get("strongBuy")) or 0,
            buy=integer(row.get("buy")) or 0,
            hold=integer(row.get("hold")) or 0,
            sell=integer(row.get("sell")) or 0,
            strong_sell=integer(row.get("strongSell")) or 0,
        )
        for _, row in (summary.iterrows() if summary is not None else ())
    ]


def _rating_changes(changes: pd.DataFrame | None) -> list[RatingChange]:
    """The newest `MAX_RATING_CHANGES` upgrades and downgrades, newest first."""
    recent: list[RatingChange] = []
    if changes is not None and not changes.empty:
        for ts, row in changes.sort_index(ascending=False).head(MAX_RATING_CHANGES).iterrows():
            recent.append(
                RatingChange(
                    date=moment(ts),
                    firm=text(row.get("Firm")) or "unknown",
                    to_grade=text(row.get("ToGrade")),
                    from_grade=text(row.get("FromGrade")),
                    action=text(row.get("Action")),
                )
            )
    return recent
