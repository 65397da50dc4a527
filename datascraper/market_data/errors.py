"""Named failures of market data. Each carries the `code` a tool error result reports.

Messages are one sentence for the end user (and the model): no traceback, no upstream payload.
"""

from __future__ import annotations

from datascraper.errors import ResearchError


class MarketDataError(ResearchError):
    code = "market_data_error"
    default_message = "Market data could not be retrieved."


class InvalidSymbol(MarketDataError):
    code = "invalid_symbol"
    default_message = "That is not a valid ticker symbol."


class InvalidArgument(MarketDataError):
    code = "invalid_argument"
    default_message = "An argument of the request is not valid."


class NoMarketData(MarketDataError):
    code = "no_data"
    default_message = "Yahoo Finance has no data for this request."


class MarketDataRateLimited(MarketDataError):
    code = "rate_limited"
    default_message = "Yahoo Finance is rate limiting requests; try again shortly."


class MarketDataUpstreamError(MarketDataError):
    code = "upstream_error"
    default_message = "Yahoo Finance returned an error."


class MarketDataTimeout(MarketDataError):
    code = "timeout"
    default_message = "Yahoo Finance did not answer in time."


class MarketDataUnavailable(MarketDataError):
    """The MCP server could not be reached, even after one restart."""

    code = "market_data_unavailable"
    default_message = "The market data service is unavailable."
