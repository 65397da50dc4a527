"""Yahoo's replies, in the shapes yfinance 1.7 parses (read from its scrapers, not guessed).

| endpoint                                             | parsed by (yfinance 1.7)                     |
|------------------------------------------------------|----------------------------------------------|
| query2 /v8/finance/chart/SYM                         | scrapers/history.py, utils.parse_quotes       |
| query2 /v10/finance/quoteSummary/SYM?modules=...     | scrapers/quote.py, scrapers/analysis.py       |
| query1 /v7/finance/quote?symbols=SYM                 | scrapers/quote.py `_fetch_additional_info`    |
| query2 /ws/fundamentals-timeseries/.../timeseries/SYM | scrapers/fundamentals.py                      |
| finance.yahoo.com/calendar/earnings?symbol=SYM       | base.py `_get_earnings_dates_using_scrape`    |
| finance.yahoo.com/xhr/ncp (POST)                     | base.py `get_news`                            |

Each builder returns a JSON-ready dict (or HTML text) for one listing; failures are the caller's business.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
import pandas as pd
from yfinance import const

from tests.fakes.yahoo_listings import TODAY, Listing

_RANGE_BARS = {"1d": 1, "5d": 5, "1mo": 21, "3mo": 63, "6mo": 126, "1y": 252, "2y": 504, "5y": 1260, "10y": 2520,
               "max": 5000}
_INTERVAL_STEP = {"1wk": 5, "1mo": 21, "3mo": 63}
_VALID_RANGES = ["1d", "5d", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max"]
_STATEMENT_KEYS = {"income": "financials", "balance": "balance-sheet", "cash_flow": "cash-flow"}


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _bar_time(listing: Listing, day: date) -> int:
    hour, minute = map(int, listing.exchange.open_utc.split(":"))
    return _epoch(datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC))


def trading_days(listing: Listing, params: dict[str, str]) -> pd.DatetimeIndex:
    """The business days a chart request covers: a `range` ends on TODAY; `period1`/`period2` are epoch
    seconds, period2 exclusive, and a day is in when its bar's time is (as Yahoo treats them: a London day
    asked up to local midnight, 23:00 UTC, is in)."""
    if "period1" in params or "period2" in params:
        start = int(params.get("period1") or 0)
        end = int(params["period2"]) if params.get("period2") else _epoch(datetime.combine(TODAY, time.max, UTC))
        listed = pd.bdate_range(end=TODAY, periods=_RANGE_BARS["max"])[0]  # the listing's first trading day
        first = max(pd.Timestamp(start, unit="s").normalize(), listed)
        candidates = pd.bdate_range(first, pd.Timestamp(end, unit="s").normalize())
        days = [day for day in candidates if start <= _bar_time(listing, day.date()) < end]
        return pd.DatetimeIndex([day for day in days if day <= pd.Timestamp(TODAY)])
    span = params.get("range", "1mo")
    if span == "ytd":
        return pd.bdate_range(date(TODAY.year, 1, 1), TODAY)
    return pd.bdate_range(end=TODAY, periods=_RANGE_BARS.get(span, 5000))


def chart_meta(listing: Listing, params: dict[str, str], closes: np.ndarray) -> dict[str, Any]:
    exchange = listing.exchange
    today_open = _bar_time(listing, TODAY)
    period = {"timezone": exchange.short_tz, "gmtoffset": exchange.gmtoffset}
    return {
        "currency": listing.currency,
        "symbol": listing.symbol,
        "exchangeName": exchange.code,
        "fullExchangeName": exchange.name,
        "instrumentType": "EQUITY",
        "firstTradeDate": 345479400,
        "regularMarketTime": today_open + 6 * 3600 + 1800,
        "hasPrePostMarketData": True,
        "gmtoffset": exchange.gmtoffset,
        "timezone": exchange.short_tz,
        "exchangeTimezoneName": exchange.timezone,
        "regularMarketPrice": listing.price,
        "fiftyTwoWeekHigh": round(listing.price * 1.2, 2),
        "fiftyTwoWeekLow": round(listing.price * 0.8, 2),
        "longName": listing.name,
        "shortName": listing.name,
        "chartPreviousClose": float(closes[0]) if len(closes) else listing.price,
        "priceHint": 2,
        "currentTradingPeriod": {
            "pre": {**period, "start": today_open - 5 * 3600, "end": today_open},
            "regular": {**period, "start": today_open, "end": today_open + 6 * 3600 + 1800},
            "post": {**period, "start": today_open + 6 * 3600 + 1800, "end": today_open + 10 * 3600 + 1800},
        },
        "dataGranularity": params.get("interval", "1d"),
        "range": params.get("range", ""),
        "validRanges": _VALID_RANGES,
    }


def chart(listing: Listing, params: dict[str, str], *, nans: bool = False) -> dict[str, Any]:
    """`/v8/finance/chart`: daily (or coarser) bars with the dividends and splits of the window as events
    and `adjclose`, or hourly bars. Prices are split-adjusted over the whole history, whatever window is asked,
    as Yahoo's are; `adjclose` is adjusted for dividends too."""
    if params.get("interval", "1d").endswith(("m", "h")):
        return _hourly_chart(listing, params)
    days = trading_days(listing, params)
    days = days[:: _INTERVAL_STEP.get(params.get("interval", "1d"), 1)]
    closes = listing.closes(days)
    rng = np.random.default_rng(listing.seed)
    opens = closes * (1 + rng.normal(0, 0.004, len(days)))
    highs, lows = np.maximum(opens, closes) * 1.006, np.minimum(opens, closes) * 0.994
    volumes = rng.integers(30_000_000, 90_000_000, len(days))
    adjusted = closes * _adjustment_factors(listing, days, closes)
    closes_out: list[float | None] = [round(float(v), 4) for v in closes]
    highs_out: list[float | None] = [round(float(v), 4) for v in highs]
    if nans and len(days) > 2:
        closes_out[1] = None  # Yahoo sends null for a missing figure
        highs_out[2] = None
    result: dict[str, Any] = {
        "meta": chart_meta(listing, params, closes),
        "timestamp": [_bar_time(listing, day.date()) for day in days],
        "indicators": {
            "quote": [
                {
                    "open": [round(float(v), 4) for v in opens],
                    "high": highs_out,
                    "low": [round(float(v), 4) for v in lows],
                    "close": closes_out,
                    "volume": [int(v) for v in volumes],
                }
            ],
            "adjclose": [{"adjclose": [round(float(v), 4) for v in adjusted]}],
        },
    }
    within = (lambda day: days[0].date() <= day <= days[-1].date()) if len(days) else (lambda day: False)
    events = {
        "dividends": {
            str(_bar_time(listing, day)): {"amount": amount, "date": _bar_time(listing, day)}
            for day, amount in listing.dividends().items()
            if within(day)
        },
        # As recorded (AAPL's 4:1 of 2020-08-31): the day's open as the date, the ratio three ways.
        "splits": {
            str(_bar_time(listing, day)): {
                "date": _bar_time(listing, day),
                "numerator": numerator,
                "denominator": denominator,
                "splitRatio": f"{numerator}:{denominator}",
            }
            for day, numerator, denominator in listing.splits
            if within(day)
        },
    }
    if any(events.values()):
        result["events"] = {kind: found for kind, found in events.items() if found}
    if not len(days):
        # A window without a trading day: Yahoo sends no timestamps and empty indicators.
        result.pop("timestamp")
        result["indicators"] = {"quote": [{}], "adjclose": [{}]}
    return {"chart": {"result": [result], "error": None}}


def _adjustment_factors(listing: Listing, days: pd.DatetimeIndex, closes: np.ndarray) -> np.ndarray:
    """Yahoo's dividend adjustment over the whole history, whatever window is asked: each bar before an
    ex-date is scaled by (1 - dividend / the close before the ex-date)."""
    factors = np.ones(len(days))
    for ex_date, amount in listing.dividends().items():
        before = days.date < ex_date
        if before.any():
            prior_day = pd.bdate_range(end=ex_date - timedelta(days=1), periods=1)
            factors[before] *= 1 - amount / float(listing.closes(prior_day)[0])
    return factors


def _hourly_chart(listing: Listing, params: dict[str, str]) -> dict[str, Any]:
    """Five days of hourly bars; with `includePrePost`, pre- and post-market bars too. On the day before
    TODAY the post-market moves the price by `after_hours_move` (an earnings reaction, say)."""
    prepost = str(params.get("includePrePost", "")).lower() == "true"
    days = trading_days(listing, params)
    daily_closes = listing.closes(days)
    stamps: list[int] = []
    closes: list[float] = []
    zone = {"timezone": listing.exchange.short_tz, "gmtoffset": listing.exchange.gmtoffset}
    sessions = []
    for day, close in zip(days, daily_closes, strict=True):
        start = _bar_time(listing, day.date())
        regular = {**zone, "start": start, "end": start + 6 * 3600 + 1800}
        if prepost:
            sessions.append({"pre": {**zone, "start": start - 5 * 3600, "end": start}, "regular": regular,
                             "post": {**zone, "start": regular["end"], "end": regular["end"] + 4 * 3600}})
        else:
            sessions.append([regular])
        hours = range(-5, 11) if prepost else range(0, 7)
        for hour in hours:
            price = float(close)
            if hour >= 7 and day.date() == TODAY - timedelta(days=1):
                price = float(close) * (1 + listing.after_hours_move)
            stamps.append(start + hour * 3600)
            closes.append(round(price, 4))
    meta = chart_meta(listing, params, np.array(daily_closes))
    # Yahoo sends each day's sessions with intraday bars only; yfinance needs them to drop unasked pre/post bars.
    meta["tradingPeriods"] = (
        {key: [[session[key]] for session in sessions] for key in ("pre", "regular", "post")} if prepost else sessions
    )
    return {
        "chart": {
            "result": [
                {
                    "meta": meta,
                    "timestamp": stamps,
                    "indicators": {
                        "quote": [
                            {
                                "open": closes,
                                "high": closes,
                                "low": closes,
                                "close": closes,
                                "volume": [1000] * len(stamps),
                            }
                        ]
                    },
                }
            ],
            "error": None,
        }
    }


def _previous_close(listing: Listing) -> float:
    days = pd.bdate_range(end=TODAY, periods=2)
    return round(float(listing.closes(days)[0]), 4)


def quote_fields(listing: Listing, *, nans: bool = False) -> dict[str, Any]:
    """The official figures of the last session, as `/v7/finance/quote` and `summaryDetail` carry them."""
    year = pd.bdate_range(end=TODAY, periods=252)
    closes = listing.closes(year)
    previous = _previous_close(listing)
    fields = {
        "regularMarketPrice": listing.price,
        "regularMarketPreviousClose": previous,
        "regularMarketOpen": round(previous * 1.002, 4),
        "regularMarketDayHigh": round(max(listing.price, previous) * 1.006, 4),
        "regularMarketDayLow": round(min(listing.price, previous) * 0.994, 4),
        "regularMarketVolume": 51_234_567,
        "regularMarketTime": _bar_time(listing, TODAY) + 6 * 3600 + 1800,
        "fiftyTwoWeekHigh": round(float(np.max(closes)), 4),
        "fiftyTwoWeekLow": round(float(np.min(closes)), 4),
        "fiftyDayAverage": round(float(np.mean(closes[-50:])), 4),
        "twoHundredDayAverage": round(float(np.mean(closes[-200:])), 4),
        "sharesOutstanding": listing.shares,
        # Yahoo's own marketCap is in the main unit (GBP for a GBp listing).
        "marketCap": listing.price * listing.shares / (100 if listing.currency in ("GBp", "ZAc", "ILA") else 1),
    }
    if listing.after_hours_move:
        fields["postMarketPrice"] = round(listing.price * (1 + listing.after_hours_move), 4)
    if nans:
        fields.update(regularMarketDayHigh=float("nan"), regularMarketDayLow=float("-inf"), marketCap=float("inf"))
        fields.update(regularMarketVolume=float("nan"), sharesOutstanding=float("nan"))
    return fields


def v7_quote(listing: Listing | None, *, nans: bool = False) -> dict[str, Any]:
    if listing is None:
        return {"quoteResponse": {"result": [], "error": None}}
    exchange = listing.exchange
    row = {
        "language": "en-US",
        "region": "US",
        "quoteType": "EQUITY",
        "typeDisp": "Equity",
        "currency": listing.currency,
        "exchange": exchange.code,
        "fullExchangeName": exchange.name,
        "exchangeTimezoneName": exchange.timezone,
        "exchangeTimezoneShortName": exchange.short_tz,
        "gmtOffSetMilliseconds": exchange.gmtoffset * 1000,
        "marketState": "POST",
        "symbol": listing.symbol,
        "shortName": listing.name,
        "longName": listing.name,
        "priceHint": 2,
        "trailingPE": float("nan") if nans else 31.2,
        "forwardPE": 28.4,
        **quote_fields(listing, nans=nans),
    }
    return {"quoteResponse": {"result": [row], "error": None}}


def quote_summary(
    listing: Listing, modules: list[str], *, empty: bool = False, nans: bool = False, empty_ratings: bool = False
) -> dict[str, Any]:
    """`/v10/finance/quoteSummary` with the asked modules (formatted=false: raw numbers)."""
    builders = {
        "financialData": lambda: {} if empty else {
            "currentPrice": listing.price,
            "targetHighPrice": round(listing.price * 1.4, 2),
            "targetLowPrice": round(listing.price * 0.72, 2),
            "targetMeanPrice": round(listing.price * 1.16, 2),
            "targetMedianPrice": round(listing.price * 1.18, 2),
            "recommendationKey": "buy",
            "numberOfAnalystOpinions": 41,
            "financialCurrency": listing.financial_currency,
        },
        "quoteType": lambda: {
            "exchange": listing.exchange.code,
            "quoteType": "EQUITY",
            "symbol": listing.symbol,
            **({} if empty else {"longName": listing.name, "shortName": listing.name}),
            "timeZoneFullName": listing.exchange.timezone,
        },
        "defaultKeyStatistics": lambda: {} if empty else {"sharesOutstanding": listing.shares, "beta": 1.21},
        "assetProfile": lambda: {} if empty else {
            "sector": "Technology",
            "industry": "Consumer Electronics",
            "country": "United States",
            "website": "https://www.apple.com",
            "fullTimeEmployees": 164_000,
            "longBusinessSummary": "Designs, manufactures and markets smartphones, personal computers, tablets, "
            "wearables and accessories, and sells a variety of related services. " * 20,
        },
        "summaryDetail": lambda: {} if empty else {
            "currency": listing.currency,
            "previousClose": _previous_close(listing),
            "dividendYield": 0.51,
            "beta": 1.21,
            "trailingPE": float("nan") if nans else 31.2,
            "forwardPE": 28.4,
            **{k: v for k, v in quote_fields(listing, nans=nans).items() if k.startswith("regularMarket")},
        },
        "recommendationTrend": lambda: {"trend": [] if empty else [
            {"period": period, "strongBuy": sb, "buy": b, "hold": h, "sell": s, "strongSell": ss}
            for period, sb, b, h, s, ss in [
                ("0m", 7, 21, 14, 2, 1), ("-1m", 7, 21, 13, 2, 1), ("-2m", 7, 22, 13, 1, 1), ("-3m", 8, 21, 13, 1, 1)
            ]
        ]},
        "upgradeDowngradeHistory": lambda: {"history": [] if empty or empty_ratings else _rating_history()},
    }
    result = {module: builders[module]() for module in modules if module in builders}
    return {"quoteSummary": {"result": [result], "error": None}}


def _rating_history() -> list[dict[str, Any]]:
    firms = ["Morgan Stanley", "Wedbush", "Loop Capital", "Jefferies", "UBS", "Evercore ISI"] * 2
    grades = [("Overweight", "Overweight", "main"), ("Outperform", "Outperform", "main"), ("Hold", "Buy", "down")]
    grades += [("Hold", "Underperform", "up"), ("Neutral", "", "init"), ("Outperform", "In-Line", "up")]
    return [
        {
            "epochGradeDate": _epoch(datetime.combine(TODAY - timedelta(days=9 * n), datetime.min.time(), UTC)),
            "firm": firm,
            "toGrade": grades[n % len(grades)][0],
            "fromGrade": grades[n % len(grades)][1],
            "action": grades[n % len(grades)][2],
        }
        for n, firm in enumerate(firms)
    ]


def statement_kind(types: list[str]) -> tuple[str, str] | None:
    """Which statement and timescale a fundamentals-timeseries request asks for, from its `type` list; None
    for other series (`info` asks for trailingPegRatio, say)."""
    first = types[0]
    timescale = next((t for t in ("annual", "quarterly", "trailing") if first.startswith(t)), None)
    key = first[len(timescale or "") :]
    kind = next((kind for kind, name in _STATEMENT_KEYS.items() if key in const.fundamentals_keys[name]), None)
    return (kind, timescale) if kind and timescale else None


def timeseries(listing: Listing | None, types: list[str], *, nans: bool = False) -> dict[str, Any]:
    """`/ws/fundamentals-timeseries`: one entry per asked type; a type without data carries only `meta`."""
    asked_for = statement_kind(types)
    if asked_for is None:
        return {"timeseries": {"result": [{"meta": {"symbol": [listing.symbol if listing else ""], "type": [t]}}
                                          for t in types], "error": None}}
    kind, timescale = asked_for
    ends, lines = listing.statement(kind, timescale) if listing else ([], {})
    result = []
    for asked in types:
        name = asked[len(timescale) :]
        entry: dict[str, Any] = {"meta": {"symbol": [listing.symbol if listing else ""], "type": [asked]}}
        values = lines.get(name)
        if listing is not None and values is not None:
            points = []
            for end, value in zip(ends, values, strict=False):
                if value is None:
                    continue
                if nans and name == "TotalRevenue" and end == ends[0]:
                    value = float("inf")
                points.append(
                    {
                        "dataId": 20100,
                        "asOfDate": end,
                        "periodType": {"annual": "12M", "quarterly": "3M", "trailing": "TTM"}[timescale],
                        "currencyCode": listing.financial_currency,
                        "reportedValue": {"raw": value, "fmt": f"{value:,.0f}"},
                    }
                )
            entry["timestamp"] = [_epoch(datetime.fromisoformat(p["asOfDate"]).replace(tzinfo=UTC)) for p in points]
            entry[asked] = points
        result.append(entry)
    return {"timeseries": {"result": result, "error": None}}


# Apple-like earnings reports: Yahoo's page holds 25 rows whatever the `limit` asked for.
_EARNINGS_DATES = ["2025-10-30", "2025-07-31", "2025-05-01", "2025-01-30", "2024-10-31", "2024-08-01"]
_EARNINGS_DATES += ["2024-05-02", "2024-02-01"]
_ESTIMATES = [1.76, 1.43, 1.63, 2.35, 1.60, 1.35, 1.50, 2.10]
_REPORTED = [None, None, 1.65, 2.40, 1.64, 1.40, 1.53, 2.18]
_SURPRISES = [None, None, 1.23, 2.13, 2.5, 3.7, 2.0, 3.81]


def earnings_page(listing: Listing | None, scale: float) -> str:
    """finance.yahoo.com/calendar/earnings: an HTML table, dates like "October 30, 2025 at 4 PM EDT"."""
    if listing is None:
        return "<html><body><p>We couldn't find any results.</p></body></html>"
    rows = []
    for n in range(25):
        if n < len(_EARNINGS_DATES):
            day = date.fromisoformat(_EARNINGS_DATES[n])
            estimate, reported, surprise = _ESTIMATES[n], _REPORTED[n], _SURPRISES[n]
        else:
            day = date.fromisoformat(_EARNINGS_DATES[-1]) - timedelta(weeks=13 * (n - len(_EARNINGS_DATES) + 1))
            estimate, reported, surprise = 1.0, 1.05, 5.0
        cells = [
            listing.symbol,
            listing.name,
            f"{day.strftime('%B')} {day.day}, {day.year} at 4 PM {'EDT' if 3 < day.month < 11 else 'EST'}",
            f"{estimate * scale:.2f}",
            "-" if reported is None else f"{reported * scale:.2f}",
            "-" if surprise is None else f"{surprise:.2f}",
        ]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    names = ["Symbol", "Company", "Earnings Date", "EPS Estimate", "Reported EPS", "Surprise (%)"]
    header = "".join(f"<th>{name}</th>" for name in names)
    return f"<html><body><table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>"


def news(listing: Listing | None, count: int) -> dict[str, Any]:
    """finance.yahoo.com/xhr/ncp: the ticker's stream, `snippetCount` stories."""
    if listing is None:
        return {"data": {"tickerStream": {"stream": []}}}
    symbol = listing.symbol
    stream = [
        {
            "id": f"{symbol}-{n}",
            "content": {
                "id": f"{symbol}-{n}",
                "contentType": "STORY",
                "title": f"{symbol} headline number {n}",
                "summary": f"What happened to {symbol} on day {n}.",
                "pubDate": f"{TODAY - timedelta(days=n)}T13:{n % 60:02d}:00Z",
                "provider": {"displayName": "Reuters" if n % 2 else "Bloomberg"},
                "canonicalUrl": {"url": f"https://finance.yahoo.com/news/{symbol.lower()}-{n}.html"},
            },
        }
        for n in range(count)
    ]
    return {"data": {"tickerStream": {"stream": stream}}}
