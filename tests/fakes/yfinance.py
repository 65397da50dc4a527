"""A fake yfinance: `FakeYahoo().ticker` stands in for `yfinance.Ticker` and returns realistic pandas frames.

Everything is deterministic and anchored at `TODAY`. Some symbols script failures:

| symbol  | behaviour                                                        |
|---------|------------------------------------------------------------------|
| EMPTY   | empty frames, empty info, no news (yfinance's "no data" shapes)  |
| NOSUCH  | a well-formed symbol Yahoo does not know: EMPTY's shapes, but    |
|         | `fast_info` prices and currency raise KeyError, as yfinance's do |
| NANS    | finite price, but NaN and inf in the other figures               |
| LIMIT   | raises yfinance's `YFRateLimitError`                             |
| BOOM    | raises a generic exception, as a broken connection would         |
| NOINFO  | `info` and `fast_info` raise as BOOM does; frames and lists load |
| HANG    | blocks until `FakeYahoo.release` is set (or `hang_s` passes)     |
| CRASH   | kills the whole process, as a segfaulting server would           |

`latency_s` delays every upstream access (the benchmark's slow Yahoo); clearing `gate` holds every access
until it is set again (to line up concurrent requests). `calls` records each access.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd
from yfinance.exceptions import YFRateLimitError

TODAY = date(2025, 6, 13)
_PERIOD_BARS = {
    "1d": 1,
    "5d": 5,
    "1mo": 21,
    "3mo": 63,
    "6mo": 126,
    "1y": 252,
    "2y": 504,
    "5y": 1260,
    "10y": 2520,
    "max": 5000,
}
_INTERVAL_STEP = {"1wk": 5, "1mo": 21, "3mo": 63}

# Apple's fiscal 2021-2024 figures (USD), newest first; other symbols get these scaled.
_ANNUAL_INCOME = {
    "TotalRevenue": [391_035e6, 383_285e6, 394_328e6, 365_817e6],
    "CostOfRevenue": [210_352e6, 214_137e6, 223_546e6, 212_981e6],
    "GrossProfit": [180_683e6, 169_148e6, 170_782e6, 152_836e6],
    "OperatingExpense": [57_467e6, 54_847e6, 51_345e6, 43_887e6],
    "OperatingIncome": [123_216e6, 114_301e6, 119_437e6, 108_949e6],
    "EBITDA": [134_661e6, 125_820e6, 130_541e6, 123_136e6],
    "NetIncome": [93_736e6, 96_995e6, 99_803e6, 94_680e6],
    "BasicEPS": [6.11, 6.16, 6.15, 5.67],
    "DilutedEPS": [6.08, 6.13, 6.11, 5.61],
    "TaxEffectOfUnusualItems": [0.0, 0.0, 0.0, np.nan],
}
_ANNUAL_BALANCE = {
    "TotalAssets": [364_980e6, 352_583e6, 352_755e6, 351_002e6],
    "TotalLiabilitiesNetMinorityInterest": [308_030e6, 290_437e6, 302_083e6, 287_912e6],
    "StockholdersEquity": [56_950e6, 62_146e6, 50_672e6, 63_090e6],
    "CashAndCashEquivalents": [29_943e6, 29_965e6, 23_646e6, 34_940e6],
    "TotalDebt": [106_629e6, 111_088e6, 132_480e6, 136_522e6],
    "OrdinarySharesNumber": [15_116.786e6, 15_550.061e6, 15_943.425e6, 16_426.786e6],
}
_ANNUAL_CASH_FLOW = {
    "OperatingCashFlow": [118_254e6, 110_543e6, 122_151e6, 104_038e6],
    "CapitalExpenditure": [-9_447e6, -10_959e6, -10_708e6, -11_085e6],
    "FreeCashFlow": [108_807e6, 99_584e6, 111_443e6, 92_953e6],
    "RepurchaseOfCapitalStock": [-94_949e6, -77_550e6, -89_402e6, -85_971e6],
    "CashDividendsPaid": [-15_234e6, -15_025e6, -14_841e6, -14_467e6],
}
# Apple's fiscal quarters from March 2024 to March 2025 (USD), newest first, dated by calendar quarter end
# (EBITDA approximate). Yahoo's quarterly tables hold about five quarters: enough for the newest quarter's
# growth over the same quarter a year earlier. The quarterly balance sheet and cash flow statement are the
# annual figures divided by four, four quarters of them.
_QUARTERLY_INCOME = {
    "TotalRevenue": [95_359e6, 124_300e6, 94_930e6, 85_777e6, 90_753e6],
    "CostOfRevenue": [50_492e6, 66_025e6, 51_051e6, 46_099e6, 48_482e6],
    "GrossProfit": [44_867e6, 58_275e6, 43_879e6, 39_678e6, 42_271e6],
    "OperatingExpense": [15_278e6, 15_443e6, 14_288e6, 14_326e6, 14_371e6],
    "OperatingIncome": [29_589e6, 42_832e6, 29_591e6, 25_352e6, 27_900e6],
    "EBITDA": [32_250e6, 45_912e6, 32_502e6, 28_202e6, 30_736e6],
    "NetIncome": [24_780e6, 36_330e6, 14_736e6, 21_448e6, 23_636e6],
    "BasicEPS": [1.65, 2.41, 0.97, 1.40, 1.53],
    "DilutedEPS": [1.65, 2.40, 0.97, 1.40, 1.53],
    "TaxEffectOfUnusualItems": [0.0, 0.0, 0.0, 0.0, np.nan],
}
_EARNINGS_DATES = ["2025-10-30 16:00", "2025-07-31 16:00", "2025-05-01 16:00", "2025-01-30 16:00"]
_EARNINGS_DATES += ["2024-10-31 16:00", "2024-08-01 16:00", "2024-05-02 16:00", "2024-02-01 16:00"]
_YEAR_ENDS = ["2024-09-30", "2023-09-30", "2022-09-30", "2021-09-30", "2020-09-30"]
_QUARTER_ENDS = ["2025-03-31", "2024-12-31", "2024-09-30", "2024-06-30", "2024-03-31", "2023-12-31"]
_STATEMENTS = {"income": _ANNUAL_INCOME, "balance": _ANNUAL_BALANCE, "cash_flow": _ANNUAL_CASH_FLOW}


class FakeYahoo:
    """The fake's shared state: latency, the hang release, and the log of upstream accesses."""

    def __init__(self, *, latency_s: float = 0.0, hang_s: float = 30.0) -> None:
        self.latency_s = latency_s
        self.hang_s = hang_s
        self.release = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def ticker(self, symbol: str) -> FakeTicker:
        """The `yfinance.Ticker` stand-in; pass this as the adapter's ticker factory."""
        return FakeTicker(symbol, self)

    def upstream_calls(self, symbol: str | None = None) -> int:
        with self._lock:
            return sum(1 for called, _ in self.calls if symbol is None or called == symbol)

    def access(self, symbol: str, member: str) -> None:
        """One round trip to "Yahoo": logged, delayed, and failing as the symbol scripts."""
        with self._lock:
            self.calls.append((symbol, member))
        self.gate.wait(self.hang_s)
        if self.latency_s:
            time.sleep(self.latency_s)
        if symbol == "LIMIT":
            raise YFRateLimitError()
        if symbol == "BOOM" or (symbol == "NOINFO" and member in ("info", "fast_info")):
            raise ConnectionError("Failed to perform, curl: (6) Could not resolve host: query2.finance.yahoo.com")
        if symbol == "HANG":
            self.release.wait(self.hang_s)
        if symbol == "CRASH":
            os._exit(17)


class UnknownSymbolFastInfo:
    """yfinance's `FastInfo` for a symbol Yahoo does not know: the chart metadata is empty, and the lazy
    properties index it anyway (`lastPrice` needs 'currentTradingPeriod', `currency` needs 'currency')."""

    _MISSING = {"currency": "currency", "lastPrice": "currentTradingPeriod", "previousClose": "currentTradingPeriod"}

    def get(self, key: str, default: Any = None) -> Any:
        raise KeyError(self._MISSING.get(key, "currentTradingPeriod"))


class FakeTicker:
    """The members of `yfinance.Ticker` the adapter reads, with yfinance 1.7's shapes."""

    def __init__(self, symbol: str, yahoo: FakeYahoo) -> None:
        self.ticker = symbol
        self._yahoo = yahoo
        seed = zlib.crc32(symbol.encode())
        # Apple is itself; any other symbol is a company 0.2x to 4.2x its size, priced 20 to 500.
        self._scale = 1.0 if symbol == "AAPL" else 0.2 + (seed % 1000) / 250
        self._price = 196.45 if symbol == "AAPL" else round(20 + seed % 480 + (seed % 100) / 100, 2)
        self._seed = seed
        self._unknown = symbol == "NOSUCH"
        self._empty = symbol == "EMPTY" or self._unknown
        self._nans = symbol == "NANS"

    # --- prices -----------------------------------------------------------------------------------

    @property
    def fast_info(self) -> dict[str, Any] | UnknownSymbolFastInfo:
        self._yahoo.access(self.ticker, "fast_info")
        if self._unknown:
            return UnknownSymbolFastInfo()
        if self._empty:
            return {"currency": None, "lastPrice": float("nan"), "previousClose": None}
        closes = self._closes(260)
        price, previous = closes[-1], closes[-2]
        info: dict[str, Any] = {
            "currency": self._currency(),
            "exchange": "JPX" if self.ticker.endswith(".T") else "NMS",
            "quoteType": "EQUITY",
            "timezone": "America/New_York",
            "lastPrice": price,
            "previousClose": previous,
            "regularMarketPreviousClose": previous,
            "open": round(previous * 1.002, 2),
            "dayHigh": round(max(price, previous) * 1.006, 2),
            "dayLow": round(min(price, previous) * 0.994, 2),
            "lastVolume": 51_234_567,
            "marketCap": price * 14.9e9 * self._scale,
            "shares": 14.9e9 * self._scale,
            "yearHigh": float(np.max(closes)),
            "yearLow": float(np.min(closes)),
            "fiftyDayAverage": float(np.mean(closes[-50:])),
            "twoHundredDayAverage": float(np.mean(closes[-200:])),
        }
        if self._nans:
            info.update(dayHigh=float("nan"), dayLow=float("-inf"), marketCap=float("inf"), lastVolume=float("nan"))
        return info

    def history(
        self,
        period: str | None = None,
        interval: str = "1d",
        start: str | None = None,
        end: str | None = None,
        **_: Any,
    ) -> pd.DataFrame:
        self._yahoo.access(self.ticker, "history")
        columns = ["Open", "High", "Low", "Close", "Volume", "Dividends", "Stock Splits"]
        if self._empty:
            return pd.DataFrame(columns=columns, index=pd.DatetimeIndex([], name="Date"))
        if start is not None or end is not None:
            last = pd.Timestamp(end) if end else pd.Timestamp(TODAY) + pd.Timedelta(days=1)
            first = pd.Timestamp(start) if start else last - pd.Timedelta(days=365)
            days = pd.bdate_range(first, last, inclusive="left")  # yfinance's end is exclusive
            days = days[days <= pd.Timestamp(TODAY)]
        else:
            bars = _PERIOD_BARS.get(period or "1mo") or len(pd.bdate_range(date(TODAY.year, 1, 1), TODAY))
            days = pd.bdate_range(end=TODAY, periods=bars)
        days = days[:: _INTERVAL_STEP.get(interval, 1)]
        closes = self._closes(len(days))
        rng = np.random.default_rng(self._seed)
        opens = closes * (1 + rng.normal(0, 0.004, len(days)))
        frame = pd.DataFrame(
            {
                "Open": opens.round(2),
                "High": (np.maximum(opens, closes) * 1.006).round(2),
                "Low": (np.minimum(opens, closes) * 0.994).round(2),
                "Close": closes.round(2),
                "Volume": rng.integers(30_000_000, 90_000_000, len(days)),
                "Dividends": 0.0,
                "Stock Splits": 0.0,
            },
            index=pd.DatetimeIndex(days, name="Date").tz_localize("America/New_York"),
        )
        if self._nans and len(frame) > 2:
            frame.iloc[1, frame.columns.get_loc("Close")] = np.nan
            frame.iloc[2, frame.columns.get_loc("High")] = np.inf
        return frame

    # --- fundamentals -----------------------------------------------------------------------------

    @property
    def info(self) -> dict[str, Any]:
        self._yahoo.access(self.ticker, "info")
        if self._empty:
            return {"trailingPegRatio": None}
        return {
            "symbol": self.ticker,
            "longName": f"{self.ticker} Holdings Inc." if self.ticker != "AAPL" else "Apple Inc.",
            "shortName": self.ticker,
            "sector": "Technology",
            "industry": "Consumer Electronics",
            "country": "United States",
            "website": "https://www.apple.com",
            "fullTimeEmployees": 164_000,
            "longBusinessSummary": "Designs, manufactures and markets smartphones, personal computers, tablets, "
            "wearables and accessories, and sells a variety of related services. " * 20,
            "currency": self._currency(),
            "financialCurrency": self._currency(),
            "exchange": "NMS",
            "quoteType": "EQUITY",
            "marketCap": self._price * 14.9e9 * self._scale,
            "trailingPE": float("nan") if self._nans else 31.2,
            "forwardPE": 28.4,
            "dividendYield": 0.51,
            "beta": 1.21,
        }

    def get_income_stmt(self, as_dict: bool = False, pretty: bool = False, freq: str = "yearly") -> pd.DataFrame:
        return self._statement("income", freq)

    def get_balance_sheet(self, as_dict: bool = False, pretty: bool = False, freq: str = "yearly") -> pd.DataFrame:
        if freq == "trailing":
            raise ValueError("Fundamentals balance sheet has no trailing frequency")
        return self._statement("balance", freq)

    def get_cashflow(self, as_dict: bool = False, pretty: bool = False, freq: str = "yearly") -> pd.DataFrame:
        return self._statement("cash_flow", freq)

    def get_earnings_dates(self, limit: int = 12, offset: int = 0) -> pd.DataFrame | None:
        self._yahoo.access(self.ticker, "earnings_dates")
        if self._empty:
            return None
        dates = pd.to_datetime(_EARNINGS_DATES).tz_localize("America/New_York")
        estimates = [1.76, 1.43, 1.63, 2.35, 1.60, 1.35, 1.50, 2.10]
        reported = [np.nan, np.nan, 1.65, 2.40, 1.64, 1.40, 1.53, 2.18]
        frame = pd.DataFrame(
            {
                "EPS Estimate": [e * self._scale for e in estimates],
                "Reported EPS": [r * self._scale for r in reported],
                "Surprise(%)": [np.nan, np.nan, 1.23, 2.13, 2.5, 3.7, 2.0, 3.81],
            },
            index=pd.DatetimeIndex(dates, name="Earnings Date"),
        )
        return frame.head(limit)

    @property
    def recommendations_summary(self) -> pd.DataFrame:
        self._yahoo.access(self.ticker, "recommendations_summary")
        if self._empty:
            return pd.DataFrame()
        return pd.DataFrame(
            {
                "period": ["0m", "-1m", "-2m", "-3m"],
                "strongBuy": [7, 7, 7, 8],
                "buy": [21, 21, 22, 21],
                "hold": [14, 13, 13, 13],
                "sell": [2, 2, 1, 1],
                "strongSell": [1, 1, 1, 1],
            }
        )

    @property
    def analyst_price_targets(self) -> dict[str, float]:
        self._yahoo.access(self.ticker, "analyst_price_targets")
        if self._empty:
            return {}
        price = self._price
        return {
            "current": price,
            "high": round(price * 1.4, 2),
            "low": round(price * 0.72, 2),
            "mean": round(price * 1.16, 2),
            "median": round(price * 1.18, 2),
        }

    @property
    def upgrades_downgrades(self) -> pd.DataFrame:
        self._yahoo.access(self.ticker, "upgrades_downgrades")
        if self._empty:
            return pd.DataFrame()
        firms = ["Morgan Stanley", "Wedbush", "Loop Capital", "Jefferies", "UBS", "Evercore ISI"] * 2
        grades = [("Overweight", "Overweight", "main"), ("Outperform", "Outperform", "main")]
        grades += [("Hold", "Buy", "down"), ("Hold", "Underperform", "up"), ("Neutral", "", "init")]
        grades += [("Outperform", "In-Line", "up")]
        dates = pd.date_range(end=pd.Timestamp(TODAY), periods=len(firms), freq="9D")
        return pd.DataFrame(
            {
                "Firm": firms,
                "ToGrade": [grades[i % len(grades)][0] for i in range(len(firms))],
                "FromGrade": [grades[i % len(grades)][1] for i in range(len(firms))],
                "Action": [grades[i % len(grades)][2] for i in range(len(firms))],
            },
            index=pd.DatetimeIndex(dates[::-1], name="GradeDate"),
        )

    def get_news(self, count: int = 10, tab: str = "news") -> list[dict[str, Any]]:
        self._yahoo.access(self.ticker, "news")
        if self._empty:
            return []
        return [
            {
                "id": f"{self.ticker}-{n}",
                "content": {
                    "id": f"{self.ticker}-{n}",
                    "contentType": "STORY",
                    "title": f"{self.ticker} headline number {n}",
                    "summary": f"What happened to {self.ticker} on day {n}.",
                    "pubDate": f"{TODAY - timedelta(days=n)}T13:{n % 60:02d}:00Z",
                    "provider": {"displayName": "Reuters" if n % 2 else "Bloomberg"},
                    "canonicalUrl": {"url": f"https://finance.yahoo.com/news/{self.ticker.lower()}-{n}.html"},
                },
            }
            for n in range(count)
        ]

    # --- helpers ----------------------------------------------------------------------------------

    def _currency(self) -> str:
        if self.ticker.endswith(".T"):
            return "JPY"
        if self.ticker.endswith(".HK"):
            return "HKD"
        return "USD"

    def _closes(self, bars: int) -> np.ndarray:
        """A random walk ending at the symbol's price: the same series whatever range is asked for."""
        if bars == 0:
            return np.array([])
        steps = np.random.default_rng(self._seed).normal(0.0004, 0.015, 6000)[6000 - bars :]
        path: np.ndarray = np.exp(np.cumsum(steps))
        closes: np.ndarray = self._price * path / path[-1]
        return closes

    def _statement(self, statement: str, freq: str) -> pd.DataFrame:
        self._yahoo.access(self.ticker, f"{statement}:{freq}")
        if self._empty:
            return pd.DataFrame()
        lines = _STATEMENTS[statement]
        if freq == "trailing":
            ends = ["2025-03-31"]
            values = {name: [row[0] * self._scale] for name, row in lines.items()}
        else:
            # Yahoo pads its tables with older periods that have no values.
            quarterly = freq == "quarterly"
            ends = _QUARTER_ENDS if quarterly else _YEAR_ENDS
            if quarterly and statement == "income":
                lines, divisor = _QUARTERLY_INCOME, 1.0
            else:
                divisor = 4.0 if quarterly else 1.0
            values = {
                name: [v * self._scale / divisor for v in row] + [np.nan] * (len(ends) - len(row))
                for name, row in lines.items()
            }
        frame = pd.DataFrame(values, index=pd.to_datetime(ends)).T
        if self._nans:
            frame.iloc[0, 0] = np.inf
        return frame
