"""What the adapter reads of a yfinance Ticker, and the Yahoo Finance page a result cites."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import quote as url_quote

import pandas as pd

YAHOO_QUOTE_URL = "https://finance.yahoo.com/quote/"


class TickerLike(Protocol):
    """The part of `yfinance.Ticker` the adapter uses (tests pass real Tickers wired to a fake Yahoo)."""

    @property
    def fast_info(self) -> Any: ...

    @property
    def info(self) -> Mapping[str, Any]: ...

    @property
    def recommendations_summary(self) -> pd.DataFrame | None: ...

    @property
    def analyst_price_targets(self) -> Mapping[str, Any] | None: ...

    @property
    def upgrades_downgrades(self) -> pd.DataFrame | None: ...

    def history(self, **kwargs: Any) -> pd.DataFrame: ...

    def get_history_metadata(self) -> Mapping[str, Any]: ...

    def get_income_stmt(self, *, freq: str) -> pd.DataFrame | None: ...

    def get_balance_sheet(self, *, freq: str) -> pd.DataFrame | None: ...

    def get_cashflow(self, *, freq: str) -> pd.DataFrame | None: ...

    def get_earnings_dates(self, *, limit: int) -> pd.DataFrame | None: ...

    def get_news(self, *, count: int) -> list[dict[str, Any]]: ...


TickerFactory = Callable[[str], TickerLike]


def yahoo_url(symbol: str, page: str = "") -> str:
    """The Yahoo Finance page for a symbol, e.g. https://finance.yahoo.com/quote/AAPL/history."""
    base = YAHOO_QUOTE_URL + url_quote(symbol, safe="")
    return f"{base}/{page}" if page else base
