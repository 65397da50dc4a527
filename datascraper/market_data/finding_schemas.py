"""The request and the finding of a numerical sub-question: what the research engine asks market data for,
and the tool results (or per-ticker failures) it gets back, readable again as their typed models.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, Field

from datascraper.market_data.schemas import (
    AnalystRatings,
    CompanyProfile,
    HistoryInterval,
    HistoryPeriod,
    MarketDataResult,
    News,
    PriceHistory,
    Quote,
    StatementFrequency,
    ToolName,
)
from datascraper.market_data.statement_schemas import Earnings, FinancialStatement
from datascraper.schemas import MarketDataKind

RESULT_MODELS: dict[ToolName, type[MarketDataResult]] = {
    "get_quote": Quote,
    "get_price_history": PriceHistory,
    "get_financial_statement": FinancialStatement,
    "get_earnings": Earnings,
    "get_analyst_ratings": AnalystRatings,
    "get_company_profile": CompanyProfile,
    "get_news": News,
}


class MarketDataRequest(BaseModel):
    """The periods one numerical sub-question asks market data for, already validated and consistent
    (`research_engine.periods` builds it). Unset fields are the tools' defaults.

    Statements and earnings: `frequency`, the newest `periods`, and `start`/`end` bounding the period ends.
    Price history: `period`, or `start`/`end` (never both), and `interval`. News: `limit`. `end` is
    inclusive, as the tools take it.
    """

    frequency: StatementFrequency | None = None
    periods: int | None = None
    period: HistoryPeriod | None = None
    start: date | None = None
    end: date | None = None
    interval: HistoryInterval | None = None
    limit: int | None = None
    corrections: list[str] = Field(
        default_factory=list, description="What validation changed in what was asked, as sentences for the answer."
    )


class ToolResult(BaseModel):
    """One successful tool call, with the tool's structured payload."""

    symbol: str
    tool: ToolName
    data: dict[str, Any]
    as_of: datetime | None = None
    url: str
    title: str = Field(description="The citation title, e.g. 'Yahoo Finance — AAPL quote'.")

    def result(self) -> MarketDataResult:
        """The payload as its typed model."""
        return RESULT_MODELS[self.tool].model_validate(self.data)


class ToolFailure(BaseModel):
    """A per-ticker failure; the finding still carries whatever other tickers returned."""

    symbol: str
    code: str
    message: str


class MarketDataFinding(BaseModel):
    """What market data answered for one numerical sub-question."""

    tickers: list[str]
    data: MarketDataKind
    question: str = ""
    results: list[ToolResult] = Field(default_factory=list)
    errors: list[ToolFailure] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results)

    def summary_text(self) -> str:
        """The numbers with their as-of dates and pages, compact enough for a prompt."""
        blocks = []
        for result in self.results:
            payload = result.result()
            as_of = _fmt_time(payload.as_of or payload.retrieved_at)
            blocks.append(
                f"{result.title} (as of {as_of}, currency {payload.currency_text()}; {result.url})\n"
                f"{payload.summary_text()}"
            )
        blocks.extend(f"{error.symbol or 'request'}: {error.code}: {error.message}" for error in self.errors)
        return "\n".join(blocks) if blocks else "No market data was retrieved."


def _fmt_time(moment: datetime) -> str:
    if moment.hour == moment.minute == moment.second == 0:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()
