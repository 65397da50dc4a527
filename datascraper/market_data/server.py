"""The market data MCP server: seven read-only Yahoo Finance tools over one adapter, and the four SEC
filing tools (`datascraper/filings/tools.py` says why they share this server).

Each tool returns a pydantic model, so a call carries structured content and the tool an output schema.
A failure comes back as an `isError` result whose only content is the text `<code>: <one sentence>`. It
carries no structured content, which clients may check against the output schema. The SDK's own error text
(prefixed, and for bad arguments a multi-line pydantic report) is replaced, so that clients and models see
the same short form for every failure.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Annotated, Any, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from datascraper.filings.errors import FilingError
from datascraper.filings.service import FilingsService
from datascraper.filings.tools import FILING_TOOL_NAMES, register_filing_tools
from datascraper.filings.tools import INSTRUCTIONS as FILING_INSTRUCTIONS
from datascraper.market_data.errors import InvalidArgument, MarketDataError, MarketDataUpstreamError
from datascraper.market_data.schemas import (
    AnalystRatings,
    CompanyProfile,
    Earnings,
    FinancialStatement,
    HistoryInterval,
    HistoryPeriod,
    News,
    PriceHistory,
    Quote,
    StatementFrequency,
    StatementKind,
    ToolName,
)
from datascraper.market_data.yahoo import DEFAULT_NEWS_ITEMS, MAX_NEWS_ITEMS, YahooFinanceAdapter

logger = logging.getLogger(__name__)

SERVER_NAME = "yahoo-finance"
INSTRUCTIONS = (
    "Market data from Yahoo Finance. Symbols use Yahoo's spelling: AAPL, BRK-B, ^GSPC, EURUSD=X, CL=F, "
    "7203.T, 0700.HK. Every result carries its currency, as-of time and the Yahoo Finance page to cite."
)

Symbol = Annotated[str, Field(description="A Yahoo Finance symbol, e.g. AAPL, BRK-B, ^GSPC, EURUSD=X, 7203.T.")]
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True)
_TOOL_NAMES: frozenset[str] = frozenset(get_args(ToolName)) | FILING_TOOL_NAMES


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


def error_result(error: MarketDataError | FilingError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{error.code}: {error.message}")],
        is_error=True,
    )


def build_server(adapter: YahooFinanceAdapter | None = None, filings: FilingsService | None = None) -> MarketDataServer:
    """The server with its eleven tools; `adapter` carries the ticker factory, cache and timeout, `filings`
    the SEC client (by default from the environment: without SEC_USER_AGENT its tools answer not_configured)."""
    yahoo = adapter if adapter is not None else YahooFinanceAdapter()
    server = MarketDataServer(SERVER_NAME, instructions=f"{INSTRUCTIONS} {FILING_INSTRUCTIONS}", log_level="WARNING")

    @server.tool(annotations=_READ_ONLY)
    async def get_quote(symbol: Symbol) -> Quote:
        """Latest price, previous close, day change, day and 52-week ranges, volume and market cap."""
        return await yahoo.quote(symbol)

    @server.tool(annotations=_READ_ONLY)
    async def get_price_history(
        symbol: Symbol,
        period: Annotated[HistoryPeriod, Field(description="Used when neither start nor end is given.")] = "1mo",
        start: Annotated[date | None, Field(description="First day, YYYY-MM-DD.")] = None,
        end: Annotated[date | None, Field(description="Last day, YYYY-MM-DD, inclusive.")] = None,
        interval: HistoryInterval = "1d",
    ) -> PriceHistory:
        """Price bars (open, high, low, close, volume) with the change over the range; long series are
        down-sampled, with a note saying so."""
        return await yahoo.price_history(symbol, period=period, start=start, end=end, interval=interval)

    @server.tool(annotations=_READ_ONLY)
    async def get_financial_statement(
        symbol: Symbol, statement: StatementKind, frequency: StatementFrequency = "annual"
    ) -> FinancialStatement:
        """The income statement, balance sheet or cash flow statement, newest period first."""
        return await yahoo.financial_statement(symbol, statement, frequency)

    @server.tool(annotations=_READ_ONLY)
    async def get_earnings(symbol: Symbol) -> Earnings:
        """Upcoming earnings dates with EPS estimates, and recent reports with EPS and surprise."""
        return await yahoo.earnings(symbol)

    @server.tool(annotations=_READ_ONLY)
    async def get_analyst_ratings(symbol: Symbol) -> AnalystRatings:
        """Analyst recommendation counts by month, price targets and recent upgrades and downgrades."""
        return await yahoo.analyst_ratings(symbol)

    @server.tool(annotations=_READ_ONLY)
    async def get_company_profile(symbol: Symbol) -> CompanyProfile:
        """Name, sector, industry, country, employees, valuation ratios and a business description."""
        return await yahoo.company_profile(symbol)

    @server.tool(annotations=_READ_ONLY)
    async def get_news(
        symbol: Symbol,
        limit: Annotated[int, Field(description=f"Items wanted; at most {MAX_NEWS_ITEMS} are returned.")] = (
            DEFAULT_NEWS_ITEMS
        ),
    ) -> News:
        """Recent news headlines about the symbol, newest first, with publisher and link."""
        return await yahoo.news(symbol, limit)

    register_filing_tools(server, filings if filings is not None else FilingsService.from_env())
    return server


def _describe_invalid_arguments(error: ValidationError) -> str:
    """The first rejected argument as one sentence; the pydantic report is long and multi-line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "arguments"
    reason = first["msg"].rstrip(".")
    return f"Invalid argument '{where}': {reason}."
