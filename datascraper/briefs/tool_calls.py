"""One bounded tool call on the market data server (Yahoo's tools and the SEC's), its failure named."""

from __future__ import annotations

from typing import Any

from datascraper.market_data.errors import MarketDataError
from datascraper.research_engine.data.filings import FILING_ERROR_CODES
from datascraper.research_engine.data.market_data import tool_failure
from datascraper.research_engine.data.market_data_client import get_market_data_client

# Each call of a brief's checks: the server's own retries and Yahoo's and the SEC's time-outs fit within it.
CALL_TIMEOUT_S = 20.0


class CheckFailed(Exception):
    """A check could not be made for a symbol (the tool failed, timed out, or the server is down)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def call_tool(name: str, arguments: dict[str, Any], *, timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
    """The tool's structured answer; CheckFailed with the tool's code and sentence otherwise."""
    symbol = str(arguments.get("symbol") or arguments.get("ticker") or "")
    try:
        outcome = await get_market_data_client().call_tool(name, arguments, timeout_s=timeout_s)
    except MarketDataError as exc:
        raise CheckFailed(f"{exc.code}: {exc.message}") from None
    if outcome.is_error or outcome.structured_content is None:
        failure = tool_failure(symbol, outcome, FILING_ERROR_CODES | {"invalid_symbol", "rate_limited"})
        raise CheckFailed(f"{failure.code}: {failure.message}")
    return outcome.structured_content
