"""The market data MCP server: the seven Yahoo Finance tools (`market_data/tools.py`) and the four SEC
filing tools (`filings/tools.py`, which says why they share this server), and `python -m
datascraper.mcp_server`, which serves them over stdio, or over streamable HTTP on 127.0.0.1 with `--http
--port N`.

A failure comes back as an `isError` result whose only content is the text `<code>: <one sentence>`. It
carries no structured content, which clients may check against the output schema. The SDK's own error text
(prefixed, and for bad arguments a multi-line pydantic report) is replaced, so that clients and models see
the same short form for every failure.

When DJANGO_SETTINGS_MODULE and REDIS_URL are set (the app starts the server with its own environment,
secrets removed), Django is set up so the tools share the app's cache in Redis; otherwise the cache is
in-process and bounded in bytes (Django's in-process cache is bounded only in entries, and shares nothing).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from datascraper.cache import DjangoCacheStore, TTLCache
from datascraper.errors import ResearchError
from datascraper.filings.errors import FilingError
from datascraper.filings.service import FilingsService
from datascraper.filings.tools import FILING_TOOL_NAMES, register_filing_tools
from datascraper.filings.tools import INSTRUCTIONS as FILING_INSTRUCTIONS
from datascraper.market_data.errors import InvalidArgument, MarketDataError, MarketDataUpstreamError
from datascraper.market_data.ticker import TickerFactory
from datascraper.market_data.tools import INSTRUCTIONS as MARKET_DATA_INSTRUCTIONS
from datascraper.market_data.tools import MARKET_DATA_TOOL_NAMES, register_market_data_tools
from datascraper.market_data.yahoo import DEFAULT_UPSTREAM_TIMEOUT_S, YahooFinanceAdapter

logger = logging.getLogger(__name__)

SERVER_NAME = "yahoo-finance"
_TOOL_NAMES: frozenset[str] = frozenset(MARKET_DATA_TOOL_NAMES) | FILING_TOOL_NAMES


class MarketDataServer(MCPServer):
    """An MCPServer whose tool failures are `<code>: <sentence>` results, never SDK or traceback text."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        if name not in _TOOL_NAMES:
            # The SDK's "Unknown tool: x" has no code; the name is the caller's, so it is quoted and cut short.
            return error_result(InvalidArgument(f"There is no tool named {name[:64]!r}."))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, MarketDataError | FilingError):
                return error_result(cause)
            if isinstance(cause, ValidationError):
                return error_result(InvalidArgument(_describe_invalid_arguments(cause)))
            # Anything else (the cache's store failing, say) is our fault, not the caller's: logged here
            # with its traceback, answered with one sentence.
            logger.error("The %s tool failed", name, exc_info=cause or exc)
            return error_result(MarketDataUpstreamError(f"The {name} tool failed; try again shortly."))


def error_result(error: ResearchError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.code}: {error.message}")],
        is_error=True,
    )


def build_server(adapter: YahooFinanceAdapter | None = None, filings: FilingsService | None = None) -> MarketDataServer:
    """The server with its eleven tools; `adapter` carries the ticker factory, cache and timeout, `filings`
    the SEC client (by default from the environment: without SEC_USER_AGENT its tools answer not_configured)."""
    server = MarketDataServer(
        SERVER_NAME, instructions=f"{MARKET_DATA_INSTRUCTIONS} {FILING_INSTRUCTIONS}", log_level="WARNING"
    )
    register_market_data_tools(server, adapter if adapter is not None else YahooFinanceAdapter())
    register_filing_tools(server, filings if filings is not None else FilingsService.from_env())
    return server


def _describe_invalid_arguments(error: ValidationError) -> str:
    """The first rejected argument as one sentence; the pydantic report is long and multi-line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "arguments"
    reason = first["msg"].rstrip(".")
    return f"Invalid argument '{where}': {reason}."


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m datascraper.mcp_server",
        description="The Yahoo Finance MCP server: stdio by default, streamable HTTP on 127.0.0.1 with --http.",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=DEFAULT_UPSTREAM_TIMEOUT_S,
        help=f"seconds to wait for one yfinance call (default {DEFAULT_UPSTREAM_TIMEOUT_S:g})",
    )
    return parser.parse_args(argv)


def build_cache() -> TTLCache:
    """The app's Django cache when Django is configured with Redis, else an in-process one."""
    if os.environ.get("DJANGO_SETTINGS_MODULE") and os.environ.get("REDIS_URL", "").strip():
        import django

        django.setup()
        return TTLCache(DjangoCacheStore())
    return TTLCache()


def main(argv: Sequence[str] | None = None, *, ticker_factory: TickerFactory | None = None) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (HTTP).

    `ticker_factory` replaces `yfinance.Ticker`; the test launcher passes a fake.
    """
    args = parse_args(argv)
    cache = build_cache()
    adapter = YahooFinanceAdapter(ticker_factory, cache=cache, timeout_s=args.upstream_timeout)
    server = build_server(adapter, FilingsService.from_env(cache=cache))
    if args.http:
        server.run(transport="streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run()


if __name__ == "__main__":
    main()
