"""Typed market data: what each MCP tool returns. Statements and earnings, the results by reporting period,
are in `statement_schemas`; the request and the finding the research engine works with, in `finding_schemas`.

Every tool result carries the symbol, the currency, the time the data describes (`as_of`), when it was
fetched and the Yahoo Finance page it came from, so an answer can cite it. Non-finite numbers are
rejected at validation (`allow_inf_nan=False`): the adapter turns them into `None` first, so NaN and
inf never reach JSON.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from datascraper.formatting import fmt, fmt_pct
from datascraper.schemas import HistoryInterval as HistoryInterval
from datascraper.schemas import StatementFrequency as StatementFrequency
from datascraper.schemas import SubUnit

ToolName = Literal[
    "get_quote",
    "get_price_history",
    "get_financial_statement",
    "get_earnings",
    "get_analyst_ratings",
    "get_company_profile",
    "get_news",
]
StatementKind = Literal["income", "balance", "cash_flow"]
HistoryPeriod = Literal["1d", "5d", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max"]
ErrorCode = Literal[
    "invalid_symbol",
    "invalid_argument",
    "no_data",
    "rate_limited",
    "upstream_error",
    "timeout",
]

# The news tool's default and cap; the router bounds the `limit` it asks for by the same cap.
MAX_NEWS_ITEMS = 20
DEFAULT_NEWS_ITEMS = 10

# How many history bars a summary shows; the payload itself keeps everything.
_SUMMARY_HISTORY_BARS = 12


class StrictData(BaseModel):
    """A tool result or a part of one: finite numbers only, no field the model does not name."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class MarketDataResult(StrictData):
    """Fields shared by every tool result: what an answer needs to cite the figures."""

    symbol: str
    currency: str | None = None
    as_of: datetime | None = Field(
        default=None,
        description="The time the data describes: the last bar, the period end, the newest article; for "
        "quotes, ratings and profiles, which Yahoo does not date, the retrieval time.",
    )
    retrieved_at: datetime = Field(description="When the data was fetched from Yahoo Finance.")
    url: str = Field(description="The Yahoo Finance page showing this data.")
    # SEC EDGAR: figures as filed, in a statement's shape for the figures computed from them
    # (`FilingFinding.statements`); every tool result is Yahoo's.
    source: Literal["Yahoo Finance", "SEC EDGAR"] = "Yahoo Finance"
    notes: list[str] = Field(default_factory=list, description="Caveats, such as down-sampling.")
    sub_unit: SubUnit | None = Field(
        default=None,
        description="Set when the exchange quotes prices in a hundredth of `currency` (London in pence, GBp): "
        "prices here are in `currency`, and written with the sub-unit first, 72.50p (£0.7250).",
    )

    def price_text(self, value: float | None) -> str:
        """A price as its exchange's readers read it: 196.45, or 72.50p (£0.7250) for a London listing."""
        return self.sub_unit.shown(value) if self.sub_unit is not None and value is not None else fmt(value)

    def currency_text(self) -> str:
        """The currency as the data for an answer names it: "GBP; prices quoted in pence (GBp)"."""
        currency = self.currency or "n/a"
        unit = self.sub_unit
        return f"{currency}; prices quoted in {unit.name} ({unit.code})" if unit is not None else currency

    def summary_lines(self) -> list[str]:
        raise NotImplementedError

    def summary_text(self) -> str:
        """A compact rendering of the figures for the synthesizer prompt."""
        lines = [*self.summary_lines(), *(f"note: {note}" for note in self.notes)]
        return "\n".join(f"  {line}" for line in lines)


class Quote(MarketDataResult):
    price: float | None = None
    previous_close: float | None = None
    previous_close_basis: str | None = Field(
        default=None, description="Which previous close the change is measured from (the official one)."
    )
    change: float | None = None
    change_percent: float | None = None
    open: float | None = None
    day_high: float | None = None
    day_low: float | None = None
    volume: int | None = None
    market_cap: float | None = None
    year_high: float | None = None
    year_low: float | None = None
    fifty_day_average: float | None = None
    two_hundred_day_average: float | None = None
    exchange: str | None = None
    quote_type: str | None = None

    def summary_lines(self) -> list[str]:
        price = self.price_text
        return [
            f"price {price(self.price)}; previous close {price(self.previous_close)} (official close); "
            f"change {price(self.change)} ({fmt_pct(self.change_percent)})",
            f"day range {price(self.day_low)} to {price(self.day_high)}; 52-week range {price(self.year_low)} to "
            f"{price(self.year_high)}; volume {fmt(self.volume)}; market cap {fmt(self.market_cap)}",
        ]


class PriceBar(StrictData):
    """One bar as Yahoo gives it: prices split-adjusted (a price before a split divided by its ratio), like
    its volume (multiplied by it)."""

    date: datetime
    open: float | None = None
    high: float | None = None
    low: float | None = None
    close: float | None = Field(
        default=None,
        description="Yahoo's close: adjusted for stock splits (a close before a split is divided by its ratio), "
        "not for dividends. The price as traded where no split came after the bar.",
    )
    adj_close: float | None = Field(
        default=None, description="Yahoo's close adjusted for dividends too, for total-return comparisons only."
    )
    traded_close: float | None = Field(
        default=None,
        description="Where a stock split came after the bar: the close as traded that day, `close` times the "
        "ratios of the splits since. None where none came after (then `close` is the price as traded).",
    )
    volume: int | None = None


class StockSplit(StrictData):
    day: date = Field(
        description="The first day traded after the split (for bars longer than a day, the first day of its bar)."
    )
    ratio: str = Field(description="New shares for old: 4:1; a reverse split is 1:10.")
    factor: float = Field(description="New shares per old one: 4.0 for 4:1, 0.1 for 1:10.")

    def text(self) -> str:
        return f"the {self.ratio} split of {self.day}"


class PriceHistory(MarketDataResult):
    period: str | None = None
    start: date | None = None
    end: date | None = Field(default=None, description="Inclusive.")
    interval: str
    bars: list[PriceBar]
    total_bars: int = Field(description="Bars Yahoo Finance returned before any down-sampling.")
    downsampled: bool = False
    first_close: float | None = None
    last_close: float | None = None
    change_percent: float | None = None
    period_high: float | None = None
    period_low: float | None = None
    splits: list[StockSplit] = Field(
        default_factory=list,
        description="The stock splits from the first bar on: those within the range, and for a range that "
        "ended before the day it was fetched, those since. Every price before a split is divided by its ratio.",
    )

    def summary_lines(self) -> list[str]:
        price = self.price_text
        first = self.bars[0].date.date() if self.bars else None
        last = self.bars[-1].date.date() if self.bars else None
        lines = [
            f"{self.total_bars} bars ({self.interval}) from {first} to {last}; close (split-adjusted, as Yahoo "
            f"gives it) {price(self.first_close)} -> {price(self.last_close)} ({fmt_pct(self.change_percent)}); "
            f"high {price(self.period_high)}, low {price(self.period_low)}"
        ]
        if self.splits:
            lines.append(
                "stock splits: "
                + "; ".join(
                    f"{split.ratio} on {split.day}{' (after this range)' if last and split.day > last else ''}"
                    for split in self.splits
                )
                + ". Yahoo divides every price before a split by its ratio: the close as traded on a day before "
                "one is its traded_close (for what it closed at that day, give that)"
            )
        step = max(1, -(-len(self.bars) // _SUMMARY_HISTORY_BARS))
        shown = self.bars[::step]
        if self.bars and shown[-1] is not self.bars[-1]:
            shown.append(self.bars[-1])
        lines.extend(self._bar_line(bar) for bar in shown)
        return lines

    def _bar_line(self, bar: PriceBar) -> str:
        day = bar.date.date()
        line = f"{day}: close {self.price_text(bar.close)}"
        if bar.traded_close is not None:
            later = [split.text() for split in self.splits if split.day > day]
            line += f" split-adjusted, {self.price_text(bar.traded_close)} as traded (before {' and '.join(later)})"
        return f"{line}; dividend-adjusted {self.price_text(bar.adj_close)}; volume {fmt(bar.volume)}"


class RecommendationTrend(StrictData):
    period: str = Field(description="0m is the current month, -1m the one before.")
    strong_buy: int = 0
    buy: int = 0
    hold: int = 0
    sell: int = 0
    strong_sell: int = 0


class PriceTarget(StrictData):
    current: float | None = None
    low: float | None = None
    high: float | None = None
    mean: float | None = None
    median: float | None = None


class RatingChange(StrictData):
    date: datetime
    firm: str
    to_grade: str | None = None
    from_grade: str | None = None
    action: str | None = None


class AnalystRatings(MarketDataResult):
    trend: list[RecommendationTrend]
    price_target: PriceTarget | None = None
    recent_changes: list[RatingChange]

    def summary_lines(self) -> list[str]:
        lines = [
            f"recommendations {t.period}: strong buy {t.strong_buy}, buy {t.buy}, hold {t.hold}, sell {t.sell}, "
            f"strong sell {t.strong_sell}"
            for t in self.trend[:2]
        ]
        if self.price_target is not None:
            target, price = self.price_target, self.price_text
            lines.append(
                f"price target mean {price(target.mean)}, median {price(target.median)}, range {price(target.low)} "
                f"to {price(target.high)} (current price {price(target.current)})"
            )
        lines.extend(
            f"{change.date.date()} {change.firm}: {change.action or 'rating'} {change.from_grade or '-'} -> "
            f"{change.to_grade or '-'}"
            for change in self.recent_changes[:5]
        )
        return lines


class CompanyProfile(MarketDataResult):
    name: str | None = None
    sector: str | None = None
    industry: str | None = None
    country: str | None = None
    website: str | None = None
    employees: int | None = None
    exchange: str | None = None
    quote_type: str | None = None
    market_cap: float | None = None
    trailing_pe: float | None = None
    forward_pe: float | None = None
    dividend_yield: float | None = Field(default=None, description="In percent, as Yahoo Finance reports it.")
    beta: float | None = None
    description: str | None = None

    def summary_lines(self) -> list[str]:
        return [
            f"{self.name or self.symbol}: {self.sector or 'n/a'} / {self.industry or 'n/a'}, {self.country or 'n/a'}; "
            f"employees {fmt(self.employees)}",
            f"market cap {fmt(self.market_cap)}; P/E trailing {fmt(self.trailing_pe)}, forward "
            f"{fmt(self.forward_pe)}; dividend yield {fmt_pct(self.dividend_yield)}; beta {fmt(self.beta)}",
        ]


class NewsItem(StrictData):
    title: str
    publisher: str | None = None
    published_at: datetime | None = None
    url: str | None = None
    summary: str | None = None


class News(MarketDataResult):
    items: list[NewsItem]

    def summary_lines(self) -> list[str]:
        return [
            f"{item.published_at.date() if item.published_at else 'undated'} {item.publisher or 'n/a'}: {item.title}"
            for item in self.items
        ]


# --- sub-units ---------------------------------------------------------------------------------------

# The fields of the results (and of their bars and price target) that are prices in the quote currency.
_PRICE_FIELDS = frozenset(
    {
        *("price", "previous_close", "change", "open", "day_high", "day_low", "year_high", "year_low"),
        *("fifty_day_average", "two_hundred_day_average", "first_close", "last_close", "period_high"),
        *("period_low", "high", "low", "close", "adj_close", "traded_close", "current", "mean", "median"),
    }
)


def in_sub_unit(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A tool payload of a listing quoted in a sub-unit with its prices in that unit (72.5 for 0.725 GBP),
    for checking the figures an answer writes as the exchange's readers read them; None for any other."""
    unit = payload.get("sub_unit")
    if not isinstance(unit, dict):
        return None
    per_main = unit.get("per_main", 100)

    def scaled(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {name: scaled(item, name) for name, item in value.items() if name != "sub_unit"}
        if isinstance(value, list):
            return [scaled(item, key) for item in value]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return value * per_main if number and key in _PRICE_FIELDS else value

    return {**scaled(payload), "currency": unit.get("code")}
