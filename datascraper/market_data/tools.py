"""The seven Yahoo Finance tools the MCP server serves (`datascraper.mcp_server`), over one adapter.

Each tool returns a pydantic model, so a call carries structured content and the tool an output schema; a
failure raises a `MarketDataError`, which the server turns into its `<code>: <sentence>` result.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, get_args

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from datascraper.market_data.schemas import (
    AnalystRatings,
    CompanyProfile,
    HistoryInterval,
    HistoryPeriod,
    News,
    PriceHistory,
    Quote,
    StatementFrequency,
    StatementKind,
    ToolName,
)
from datascraper.market_data.statement_schemas import Earnings, FinancialStatement
from datascraper.market_data.yahoo import DEFAULT_NEWS_ITEMS, MAX_NEWS_ITEMS, YahooFinanceAdapter

MARKET_DATA_TOOL_NAMES: tuple[str, ...] = get_args(ToolName)
INSTRUCTIONS = (
    "Market data from Yahoo Finance. Symbols use Yahoo's spelling: AAPL, BRK-B, ^GSPC, EURUSD=X, CL=F, "
    "7203.T, 0700.HK. Every result carries its currency, as-of time and the Yahoo Finance page to cite."
)

Symbol = Annotated[str, Field(description="A Yahoo Finance symbol, e.g. AAPL, BRK-B, ^GSPC, EURUSD=X, 7203.T.")]
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True)


class YahooTools:
    """The tools as methods: each one's signature is its input schema, its docstring its description."""

    def __init__(self, yahoo: YahooFinanceAdapter) -> None:
        self.yahoo = yahoo

    async def get_quote(self, symbol: Symbol) -> Quote:
        """Latest price, previous close, day change, day and 52-week ranges, volume and market cap."""
        return await self.yahoo.quote(symbol)

    async def get_price_history(
        self,
        symbol: Symbol,
        period: Annotated[HistoryPeriod, Field(description="Used when neither start nor end is given.")] = "1mo",
        start: Annotated[date | None, Field(description="First day, YYYY-MM-DD.")] = None,
        end: Annotated[date | None, Field(description="Last day, YYYY-MM-DD, inclusive.")] = None,
        interval: HistoryInterval = "1d",
    ) -> PriceHistory:
        """Price bars (open, high, low, close, volume) with the change over the range; long series are
        down-sampled, with a note saying so."""
        return await self.yahoo.price_history(symbol, period=period, start=start, end=end, interval=interval)

    async def get_financial_statement(
        self, symbol: Symbol, statement: StatementKind, frequency: StatementFrequency = "annual"
    ) -> FinancialStatement:
        """The income statement, balance sheet or cash flow statement, newest period first."""
        return await self.yahoo.financial_statement(symbol, statement, frequency)

    async def get_earnings(self, symbol: Symbol) -> Earnings:
        """Upcoming earnings dates with EPS estimates, and recent reports with EPS and surprise."""
        return await self.yahoo.earnings(symbol)

    async def get_analyst_ratings(self, symbol: Symbol) -> AnalystRatings:
        """Analyst recommendation counts by month, price targets and recent upgrades and downgrades."""
        return await self.yahoo.analyst_ratings(symbol)

    async def get_company_profile(self, symbol: Symbol) -> CompanyProfile:
        """Name, sector, industry, country, employees, valuation ratios and a business description."""
        return await self.yahoo.company_profile(symbol)

    async def get_news(
        self,
        symbol: Symbol,
        limit: Annotated[int, Field(description=f"Items wanted; at most {MAX_NEWS_ITEMS} are returned.")] = (
            DEFAULT_NEWS_ITEMS
        ),
    ) -> News:
        """Recent news headlines about the symbol, newest first, with publisher and link."""
        return await self.yahoo.news(symbol, limit)


def register_market_data_tools(server: MCPServer, yahoo: YahooFinanceAdapter) -> None:
    """Add the seven Yahoo tools to `server`."""
    tools = YahooTools(yahoo)
    for name in MARKET_DATA_TOOL_NAMES:
        server.tool(annotations=_READ_ONLY)(getattr(tools, name))
