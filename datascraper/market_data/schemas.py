"""Typed market data: what each MCP tool returns, and the finding the research engine receives.

Every tool result carries the symbol, the currency, the time the data describes (`as_of`), when it was
fetched and the Yahoo Finance page it came from, so an answer can cite it. Non-finite numbers are
rejected at validation (`allow_inf_nan=False`): the adapter turns them into `None` first, so NaN and
inf never reach JSON.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from datascraper.formatting import fmt, fmt_pct, humanize
from datascraper.schemas import HistoryInterval as HistoryInterval
from datascraper.schemas import MarketDataKind, SubUnit
from datascraper.schemas import StatementFrequency as StatementFrequency

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

# How many days before a period the one its growth is measured against ends: the previous period, or for a
# quarter also the same quarter a year earlier. "About", since fiscal periods end on different days from year
# to year (52/53-week years move them by a week).
YEAR_EARLIER_DAYS = range(335, 396)
PREVIOUS_PERIOD_DAYS: dict[StatementFrequency, range] = {"quarterly": range(75, 106), "annual": YEAR_EARLIER_DAYS}

# How many statement lines and history bars a summary shows; the payload itself keeps everything.
_SUMMARY_STATEMENT_LINES = 15
_SUMMARY_HISTORY_BARS = 12
_KEY_STATEMENT_LINES = (
    "TotalRevenue",
    "GrossProfit",
    "OperatingIncome",
    "EBITDA",
    "NetIncome",
    "DilutedEPS",
    "TotalAssets",
    "TotalLiabilitiesNetMinorityInterest",
    "StockholdersEquity",
    "TotalDebt",
    "CashAndCashEquivalents",
    "OperatingCashFlow",
    "CapitalExpenditure",
    "FreeCashFlow",
)
# The lines the computed facts read (ratios, margins, per-share figures): kept when a statement is cut.
ESSENTIAL_STATEMENT_LINES = (
    *_KEY_STATEMENT_LINES,
    "CostOfRevenue",
    "OperatingExpense",
    "BasicEPS",
    "CurrentAssets",
    "CurrentLiabilities",
    "OrdinarySharesNumber",
    "RepurchaseOfCapitalStock",
    "CashDividendsPaid",
)


class _Data(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")


class MarketDataResult(_Data):
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


class PriceBar(_Data):
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


class StockSplit(_Data):
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


class StatementLine(_Data):
    name: str = Field(description="Yahoo Finance's line item key, e.g. TotalRevenue.")
    values: list[float | None] = Field(description="One value per period, aligned with `periods`.")


class FinancialStatement(MarketDataResult):
    statement: StatementKind
    frequency: StatementFrequency
    periods: list[date] = Field(description="Period end dates, newest first.")
    lines: list[StatementLine]
    asked: int | None = Field(
        default=None,
        description="How many of the newest periods were asked for; the older ones are kept only as the bases "
        "their growth is measured against. None: every period was asked for. Set when the router cuts a "
        "statement to the periods a question asks for.",
    )

    @property
    def asked_periods(self) -> list[date]:
        """The periods asked for: the ones titles, charts and answers are about."""
        return self.periods if self.asked is None else self.periods[: self.asked]

    def covering(self, *, count: int | None, start: date | None, end: date | None) -> FinancialStatement:
        """The periods that end within `start`..`end` (inclusive; None is open), the newest `count` of them,
        and after them the bases their growth needs: the periods ending up to about a year before the oldest
        one asked (the previous period, and for a quarter the same quarter a year earlier), as far as the
        statement goes back. "Revenue growth over the last 3 quarters" is three growth rates, which take
        four quarters at least.

        `asked` counts the periods asked for. Lines without any value in them are dropped; `as_of` becomes
        the newest period kept. No period asked for is an empty statement, which the caller reports as no
        data.
        """
        asked = [
            i
            for i, period_end in enumerate(self.periods)
            if (start is None or period_end >= start) and (end is None or period_end <= end)
        ][:count]
        notes = list(self.notes)
        if count is not None and len(asked) < count:
            # "The last 8 quarters" when Yahoo keeps 5: said, so the answer says it too.
            notes.append(f"{count} periods were asked for; Yahoo Finance has {len(asked)} of them.")
        if len(asked) == len(self.periods):
            return self.model_copy(update={"notes": notes}) if notes != self.notes else self
        kept = _with_growth_bases(asked, self.periods)
        lines = [
            StatementLine(name=line.name, values=[line.values[i] for i in kept])
            for line in self.lines
            if any(line.values[i] is not None for i in asked)
        ]
        periods = [self.periods[i] for i in kept]
        as_of = datetime.combine(periods[0], time.min, UTC) if periods else self.as_of
        return self.model_copy(
            update={"periods": periods, "lines": lines, "as_of": as_of, "asked": len(asked), "notes": notes}
        )

    def summary_lines(self) -> list[str]:
        by_name = {line.name: line for line in self.lines}
        chosen = [by_name[name] for name in _KEY_STATEMENT_LINES if name in by_name]
        if not chosen:
            chosen = self.lines[:_SUMMARY_STATEMENT_LINES]
        header = f"{self.frequency} {self.statement.replace('_', ' ')} statement, periods ending " + ", ".join(
            str(period) for period in self.asked_periods
        )
        bases = self.periods[len(self.asked_periods) :]
        if bases:
            header += "; then, not asked for and given only as growth bases, " + ", ".join(map(str, bases))
        rows = [f"{humanize(line.name)}: " + ", ".join(fmt(value) for value in line.values) for line in chosen]
        return [header, *rows]


class EarningsEvent(_Data):
    date: datetime
    eps_estimate: float | None = None
    eps_reported: float | None = None
    surprise_percent: float | None = None


class Earnings(MarketDataResult):
    upcoming: list[EarningsEvent] = Field(description="Scheduled reports, soonest first.")
    reported: list[EarningsEvent] = Field(description="Past reports, newest first.")
    asked: int | None = Field(
        default=None,
        description="How many of the newest past reports were asked for; older ones are kept only as the "
        "bases of their year-over-year growth. None: every report was asked for.",
    )

    @property
    def asked_reported(self) -> list[EarningsEvent]:
        """The past reports asked for."""
        return self.reported if self.asked is None else self.reported[: self.asked]

    def covering(self, *, count: int | None, start: date | None, end: date | None) -> Earnings:
        """The reports dated within `start`..`end` (inclusive; None is open), the newest `count` past ones
        (`asked` counts them), then the past reports up to about a year before the oldest of them, the bases
        of their year-over-year growth. Scheduled reports stay unless a range that ends before them is asked
        for."""

        def within(event: EarningsEvent) -> bool:
            day = event.date.date()
            return (start is None or day >= start) and (end is None or day <= end)

        asked = [i for i, event in enumerate(self.reported) if within(event)][:count]
        kept = _with_growth_bases(asked, [event.date.date() for event in self.reported])
        return self.model_copy(
            update={
                "upcoming": [event for event in self.upcoming if within(event)],
                "reported": [self.reported[i] for i in kept],
                "asked": None if len(asked) == len(self.reported) else len(asked),
            }
        )

    def summary_lines(self) -> list[str]:
        lines = [
            f"next report {event.date.date()}: EPS estimate {fmt(event.eps_estimate)}" for event in self.upcoming[:1]
        ]
        asked = len(self.asked_reported)
        lines.extend(
            f"reported {event.date.date()}{'' if i < asked else ' (not asked for; a growth base)'}: "
            f"EPS {fmt(event.eps_reported)} vs estimate {fmt(event.eps_estimate)} "
            f"(surprise {fmt_pct(event.surprise_percent)})"
            for i, event in enumerate(self.reported)
        )
        return lines


def _with_growth_bases(asked: list[int], ends: list[date]) -> list[int]:
    """The indices `asked` of `ends` (newest first), then those of the older ends up to about a year before
    the oldest one asked: what the growth of each period asked is measured against."""
    if not asked:
        return []
    oldest = ends[asked[-1]]
    bases = [j for j in range(asked[-1] + 1, len(ends)) if (oldest - ends[j]).days < YEAR_EARLIER_DAYS.stop]
    return [*asked, *bases]


class RecommendationTrend(_Data):
    period: str = Field(description="0m is the current month, -1m the one before.")
    strong_buy: int = 0
    buy: int = 0
    hold: int = 0
    sell: int = 0
    strong_sell: int = 0


class PriceTarget(_Data):
    current: float | None = None
    low: float | None = None
    high: float | None = None
    mean: float | None = None
    median: float | None = None


class RatingChange(_Data):
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


class NewsItem(_Data):
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


RESULT_MODELS: dict[ToolName, type[MarketDataResult]] = {
    "get_quote": Quote,
    "get_price_history": PriceHistory,
    "get_financial_statement": FinancialStatement,
    "get_earnings": Earnings,
    "get_analyst_ratings": AnalystRatings,
    "get_company_profile": CompanyProfile,
    "get_news": News,
}


# --- the request and the finding of a numerical sub-question ---------------------------------------


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


# --- formatting -------------------------------------------------------------------------------------

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


def _fmt_time(moment: datetime) -> str:
    if moment.hour == moment.minute == moment.second == 0:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M %Z").strip()
