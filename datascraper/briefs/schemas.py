"""A brief's window and the changes found in it, as the data tools report them."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from datascraper.market_data.finding_schemas import ToolResult
from datascraper.research_engine.data.filings import FilingToolResult

ChangeKind = Literal["price", "filing", "earnings", "analyst", "news"]


class BriefWindow(BaseModel):
    """What a brief covers: `since` (exclusive) to `until` (inclusive), and what earlier briefs reported."""

    since: datetime
    until: datetime
    first: bool = Field(description="No earlier brief: the price line compares the latest close with the one before.")
    reported: frozenset[str] = Field(default_factory=frozenset, description="Keys of changes already reported.")
    price_move_pct: float = Field(default=2.0, ge=0, description="A smaller move between closes is not material.")
    earnings_days: int = Field(default=14, ge=0, description="How far ahead an earnings date is reported.")

    def covers(self, moment: datetime) -> bool:
        return self.since < moment <= self.until

    def covers_day(self, day: date) -> bool:
        """A day the SEC dates a filing by: from `since`'s day to `until`'s (the key keeps it once)."""
        return self.since.date() <= day <= self.until.date()


class ChangeSource(BaseModel):
    """Where a change can be read: the filing, the market data page or the article."""

    url: str
    title: str
    publisher: str
    date: str | None = Field(default=None, description="The day (or instant) the source is of, ISO.")
    form: str | None = Field(default=None, exclude_if=lambda value: value is None)
    accession: str | None = Field(default=None, exclude_if=lambda value: value is None)


class Change(BaseModel):
    """One change for one symbol. `key` reports it once across briefs (an accession, an earnings date);
    `material` says whether it alone is worth a brief written by a model."""

    symbol: str
    kind: ChangeKind
    summary: str
    source: ChangeSource
    key: str
    material: bool = True

    def public(self) -> dict:
        """The change as the API shows it: {symbol, kind, summary, source}."""
        return self.model_dump(mode="json", include={"symbol", "kind", "summary", "source"})


class Unchecked(BaseModel):
    """A check that could not be made for a symbol, and why: the brief says so rather than stay silent."""

    symbol: str
    check: str  # prices, filings, insider trades, earnings, analyst ratings, news
    reason: str


class SymbolEvidence(BaseModel):
    """The tool results the changes of one symbol were read from, cut to those changes: what the research
    run cites and checks the brief's claims against."""

    symbol: str
    market: list[ToolResult] = Field(default_factory=list)
    filings: list[FilingToolResult] = Field(default_factory=list)


class DetectedChanges(BaseModel):
    """Everything found for a watchlist in one window."""

    changes: list[Change] = Field(default_factory=list)
    unchecked: list[Unchecked] = Field(default_factory=list)
    evidence: list[SymbolEvidence] = Field(default_factory=list)

    @property
    def material(self) -> bool:
        return any(change.material for change in self.changes)
