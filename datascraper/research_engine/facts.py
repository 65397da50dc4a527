"""Figures computed in code from market data payloads, each keeping the inputs it was computed from.

The model is not trusted with arithmetic: growth rates, changes, margins, ratios and comparisons are
computed here, handed to the synthesizer as facts to cite (F1, F2, ...), stored on the run, and count as
matched in the number check (`quality_logger`).

Which figures, deliberately (how each is computed, and when it is not meaningful: `fact_arithmetic`):
- Growth is period over period, and year over year, which for a quarterly statement compares with the
  quarter ending about a year earlier. It is computed for each period asked for: the bases may be periods
  that were not asked for, which the router keeps for this (`FinancialStatement.covering`), so three
  quarters asked give three growth rates, not two. The newest period's change in amount stands beside its
  growth, meaningful even where the growth is not.
- A missing value (None) gives no fact at all.
- Bounded and relevant: only the lines a sub-question names (revenue, net income, EPS, free cash flow,
  ...), else the statement's headline line, as its charts pick them (`charts.lines_asked`), margins when
  it asks about margins, ratios for balance sheets; growth of the newest `MAX_PERIOD_PAIRS` periods asked;
  comparisons between at most `MAX_COMPARED_SYMBOLS` symbols; at most `MAX_FACTS` per run, kept by tier:
  the newest growth rates, margins, ratios and the comparisons first, then changes in amount and CAGRs,
  then older periods.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import combinations

from datascraper.formatting import fmt, humanize
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.market_data.schemas import PriceHistory
from datascraper.market_data.statement_schemas import (
    PREVIOUS_PERIOD_DAYS,
    YEAR_EARLIER_DAYS,
    Earnings,
    FinancialStatement,
)
from datascraper.research_engine.charts import lines_asked
from datascraper.research_engine.fact_arithmetic import (
    OUTFLOW_LINES,
    amount,
    cagr_fact,
    change_fact,
    figure_text,
    growth_fact,
    margin_fact,
    new_fact,
    ratio_fact,
)
from datascraper.research_engine.periods.fiscal_calendar import FiscalCalendar
from datascraper.schemas import Fact, FactInput, FactSource

logger = logging.getLogger(__name__)

MAX_FACTS = 40
MAX_PERIOD_PAIRS = 4
MAX_COMPARED_SYMBOLS = 4
# The unit of an amount whose currency the data did not give: no currency is guessed, and it is not compared.
UNKNOWN_CURRENCY = "currency unknown"
# Which facts a run keeps first when it has more than MAX_FACTS.
HEADLINE, DETAIL, OLDER = 0, 1, 2

_PER_SHARE_LINES = {"DilutedEPS", "BasicEPS"}  # growth compares across companies; amounts do not
_MARGINS_ASKED = re.compile(r"margin|profitab")
_MARGINS = (
    ("GrossProfit", "gross margin", r"gross (profit )?margin"),
    ("OperatingIncome", "operating margin", r"operating (profit )?margin"),
    ("NetIncome", "net margin", r"net (profit )?margin|profit margin"),
)
# (name, numerator, denominator, what a question says when it asks about it); both when it names neither.
_RATIOS = (
    ("debt to equity", "TotalDebt", "StockholdersEquity", r"debt|leverage|equity|solven"),
    ("current ratio", "CurrentAssets", "CurrentLiabilities", r"liquid|current ratio|working capital"),
)
_RATIO_PERIODS = 2
_PERIOD_NAMES = {"annual": "FY ending {}", "quarterly": "quarter ending {}", "ttm": "TTM ending {}"}


def compute_facts(
    findings: Sequence[MarketDataFinding], calendars: Mapping[str, FiscalCalendar] | None = None
) -> list[Fact]:
    """The facts of a run's market data findings, numbered F1, F2, ... in the order of the findings. A
    statement's periods are named on its company's fiscal calendar where `calendars` has it ("Q3 FY2025
    (Aug–Oct 2024, ended 2024-10-27)"), else by their end ("quarter ending 2024-10-27")."""
    book = _FactBook(calendars=dict(calendars or {}))
    seen: set[tuple[str, str]] = set()
    for finding in findings:
        for result in finding.results:
            if (result.title, result.url) in seen:
                continue  # the same data fetched again by a later round
            seen.add((result.title, result.url))
            try:
                _facts_of(result, finding.question, book)
            except Exception:
                # Like a chart, a figure is never worth failing the answer for: the data stays in the
                # findings, only its computed figures are missing.
                logger.exception("No facts computed from %s (%s)", result.title, result.url)
    book.compare()
    return book.numbered()


def shown(fact: Fact) -> str:
    """The fact's value as the answer should quote it: +2.02%, 46.21%, +7.75B USD, 1.87x."""
    value = fact.value
    if value is None:
        return "not meaningful"
    signed = fact.kind not in ("margin", "ratio")
    if fact.unit == "percent":
        return f"{value:+.2f}%" if signed else f"{value:.2f}%"
    if fact.unit == "percentage points":
        return f"{value:+.2f} percentage points"
    if fact.unit == "ratio":
        return f"{value:.2f}x"
    return f"{'+' if signed and value > 0 else ''}{fmt(value)} {fact.unit}"


# --- collecting ------------------------------------------------------------------------------------------


@dataclass
class _Comparable:
    """One symbol's figure that another symbol's may be compared with."""

    symbol: str
    value: float
    inputs: list[FactInput]
    tier: int  # the comparison's: a comparison matters as much as the figures compared


@dataclass
class _FactBook:
    """Facts before numbering, each with its tier (HEADLINE, DETAIL, OLDER)."""

    facts: list[tuple[int, Fact]] = field(default_factory=list)
    # (what is compared, its unit) -> one figure per symbol
    comparables: dict[tuple[str, str], list[_Comparable]] = field(default_factory=dict)
    calendars: dict[str, FiscalCalendar] = field(default_factory=dict)

    def period(self, statement: FinancialStatement, value: FactInput) -> str:
        """The period of `value`, named on its company's fiscal calendar when the book has it."""
        calendar = self.calendars.get(statement.symbol)
        if calendar is not None and statement.frequency != "ttm":
            ended = date.fromisoformat(value.period)
            fiscal = calendar.period_ending(ended, quarterly=statement.frequency == "quarterly")
            if fiscal is not None:
                return f"{fiscal.ref.name} ({fiscal.months}, ended {value.period})"
        return _PERIOD_NAMES[statement.frequency].format(value.period)

    def add(self, fact: Fact, *, tier: int, compare_as: str | None = None) -> None:
        """Keep `fact`; `compare_as` (what it is, such as "Total Revenue growth, latest annual period")
        offers it for comparison with the same figure of other symbols."""
        self.facts.append((tier, fact))
        if compare_as is not None and fact.value is not None:
            self.offer(compare_as, fact.unit, _Comparable(fact.inputs[0].symbol, fact.value, fact.inputs, tier))

    def offer(self, description: str, unit: str, figure: _Comparable) -> None:
        entries = self.comparables.setdefault((description, unit), [])
        if len(entries) < MAX_COMPARED_SYMBOLS and all(entry.symbol != figure.symbol for entry in entries):
            entries.append(figure)

    def compare(self) -> None:
        """The difference between each pair of symbols offering the same figure."""
        for (description, unit), entries in self.comparables.items():
            for a, b in combinations(entries, 2):
                self.add(
                    new_fact(
                        f"{a.symbol} minus {b.symbol}: {description}",
                        a.value - b.value,
                        "percentage points" if unit == "percent" else unit,
                        "difference",
                        f"{a.symbol}'s - {b.symbol}'s = {figure_text(a.value, unit)} - {figure_text(b.value, unit)}",
                        [*a.inputs, *b.inputs],
                    ),
                    tier=max(a.tier, b.tier),
                )

    def numbered(self) -> list[Fact]:
        ranked = sorted(range(len(self.facts)), key=lambda i: (self.facts[i][0], i))[:MAX_FACTS]
        kept = [self.facts[i][1] for i in sorted(ranked)]
        for n, fact in enumerate(kept, start=1):
            fact.id = f"F{n}"
        return kept


def _facts_of(result: ToolResult, question: str, book: _FactBook) -> None:
    source = FactSource(title=result.title, url=result.url)
    payload = result.result()
    if isinstance(payload, FinancialStatement):
        _statement_facts(payload, source, question.lower(), book)
    elif isinstance(payload, Earnings):
        _earnings_facts(payload, source, book)
    elif isinstance(payload, PriceHistory):
        _history_facts(payload, source, book)


# --- statements ------------------------------------------------------------------------------------------


def _statement_facts(statement: FinancialStatement, source: FactSource, question: str, book: _FactBook) -> None:
    values = {line.name: line.values for line in statement.lines}
    # The lines the charts draw: the figures of a sub-question are computed for the lines it names.
    for line in lines_asked(question, statement.statement, set(values)):
        _line_facts(statement, line, source, book)
    if statement.statement == "income" and _MARGINS_ASKED.search(question):
        margins = [margin for margin in _MARGINS if re.search(margin[2], question)] or list(_MARGINS)
        for line, name, _ in margins:
            _margin_facts(statement, line, name, values, source, book)
    if statement.statement == "balance":
        ratios = [ratio for ratio in _RATIOS if re.search(ratio[3], question)] or list(_RATIOS)
        for name, numerator, denominator, _ in ratios:
            _ratio_facts(statement, name, numerator, denominator, values, source, book)


def _line_facts(statement: FinancialStatement, line: str, source: FactSource, book: _FactBook) -> None:
    """For each period asked: growth over the previous period and, for a quarter, over the same quarter a
    year earlier, where the statement has them; the newest period's change in amount; for an annual
    statement, the CAGR from the base of the oldest year asked to the newest."""
    inputs = [_input(statement, line, i, source) for i in range(len(statement.periods))]
    what = humanize(line) + (" (amount spent)" if line in OUTFLOW_LINES else "")
    currency = statement.currency or UNKNOWN_CURRENCY
    frequency = statement.frequency
    for i in range(min(len(statement.asked_periods), MAX_PERIOD_PAIRS)):
        current = inputs[i]
        if current is None:
            continue
        newest = i == 0
        previous = _previous(statement, i)
        base = inputs[previous] if previous is not None else None
        if base is not None:
            between = f"{book.period(statement, current)} vs {book.period(statement, base)}"
            book.add(
                growth_fact("growth", f"{current.symbol} {what} growth, {between}", current, base),
                tier=HEADLINE if newest else OLDER,
                compare_as=f"{what} growth, latest {frequency} period" if newest else None,
            )
            if newest:
                change = change_fact(f"{current.symbol} {what} change, {between}", current, base, currency)
                book.add(change, tier=DETAIL)
        earlier = _year_earlier(statement.periods, i) if frequency == "quarterly" else None
        year_base = inputs[earlier] if earlier is not None else None
        if year_base is not None:
            between = f"{book.period(statement, current)} vs {book.period(statement, year_base)}"
            book.add(
                growth_fact("yoy_growth", f"{current.symbol} {what} year over year, {between}", current, year_base),
                tier=HEADLINE if newest else OLDER,
                compare_as=f"{what} year-over-year growth, latest quarter" if newest else None,
            )
        if newest and line not in _PER_SHARE_LINES and statement.currency is not None:
            # An amount of unknown currency is never compared: it may be yen beside dollars.
            book.offer(
                f"{what}, latest {frequency} period",
                currency,
                _Comparable(current.symbol, amount(current), [current], DETAIL),
            )
    if frequency == "annual":
        _line_cagr(statement, inputs, what, book)


def _line_cagr(statement: FinancialStatement, inputs: list[FactInput | None], what: str, book: _FactBook) -> None:
    """The CAGR from the oldest year asked (or the year before it, its base, when the statement has it) to
    the newest."""
    if not statement.periods:
        return
    oldest = len(statement.asked_periods) - 1
    previous = _previous(statement, oldest)
    first_index = previous if previous is not None and inputs[previous] is not None else oldest
    first, last = inputs[first_index], inputs[0]
    if first is None or last is None:
        return
    years = round((statement.periods[0] - statement.periods[first_index]).days / 365.25)
    if years < 2:
        return
    label = f"{last.symbol} {what} CAGR, {book.period(statement, first)} to {book.period(statement, last)}"
    book.add(cagr_fact(label, first, last, years), tier=DETAIL, compare_as=f"{what} CAGR over {years} years")


def _margin_facts(
    statement: FinancialStatement,
    line: str,
    name: str,
    values: dict[str, list[float | None]],
    source: FactSource,
    book: _FactBook,
) -> None:
    if line not in values or "TotalRevenue" not in values:
        return
    for i in range(min(len(statement.asked_periods), MAX_PERIOD_PAIRS)):
        part = _input(statement, line, i, source)
        revenue = _input(statement, "TotalRevenue", i, source)
        if part is None or revenue is None:
            continue
        label = f"{part.symbol} {name}, {book.period(statement, part)}"
        book.add(
            margin_fact(label, line, part, revenue),
            tier=HEADLINE if i == 0 else OLDER,
            compare_as=f"{name}, latest {statement.frequency} period" if i == 0 else None,
        )


def _ratio_facts(
    statement: FinancialStatement,
    name: str,
    numerator: str,
    denominator: str,
    values: dict[str, list[float | None]],
    source: FactSource,
    book: _FactBook,
) -> None:
    if numerator not in values or denominator not in values:
        return
    for i in range(min(len(statement.asked_periods), _RATIO_PERIODS)):
        top = _input(statement, numerator, i, source)
        bottom = _input(statement, denominator, i, source)
        if top is None or bottom is None:
            continue
        label = f"{top.symbol} {name}, {book.period(statement, top)}"
        book.add(
            ratio_fact(label, numerator, denominator, top, bottom),
            tier=HEADLINE if i == 0 else OLDER,
            compare_as=f"{name}, latest {statement.frequency} period" if i == 0 else None,
        )


def _input(statement: FinancialStatement, line: str, i: int, source: FactSource) -> FactInput | None:
    values = next((item.values for item in statement.lines if item.name == line), [])
    value = values[i] if i < len(values) else None
    if value is None:
        return None
    period = statement.periods[i].isoformat()
    return FactInput(symbol=statement.symbol, line=line, period=period, value=value, source=source)


def _previous(statement: FinancialStatement, i: int) -> int | None:
    """The index of the period before period `i`: the next one in the statement if it ends about one period
    earlier (a statement may miss a period that Yahoo had no figures for)."""
    days = PREVIOUS_PERIOD_DAYS.get(statement.frequency)
    j = i + 1
    if days is None or j >= len(statement.periods):
        return None
    return j if (statement.periods[i] - statement.periods[j]).days in days else None


def _year_earlier(periods: list[date], i: int) -> int | None:
    """The index of the period ending about a year before period `i`."""
    for j in range(i + 1, len(periods)):
        if (periods[i] - periods[j]).days in YEAR_EARLIER_DAYS:
            return j
    return None


# --- earnings and price history --------------------------------------------------------------------------


def _earnings_facts(earnings: Earnings, source: FactSource, book: _FactBook) -> None:
    """For each report asked: the EPS against its estimate, and against the report a year earlier where
    there is one (a report kept only as a base may be it)."""
    symbol = earnings.symbol
    currency = earnings.currency or UNKNOWN_CURRENCY
    reported = [(event, event.eps_reported) for event in earnings.reported if event.eps_reported is not None]
    asked = [(event, eps) for event, eps in reported if event in earnings.asked_reported][:MAX_PERIOD_PAIRS]
    for k, (event, eps) in enumerate(asked):
        newest = k == 0
        current = _dated_input(symbol, "eps_reported", event.date, eps, source)
        if event.eps_estimate is not None:
            estimate = _dated_input(symbol, "eps_estimate", event.date, event.eps_estimate, source)
            label = f"{symbol} EPS reported minus estimate, report of {current.period}"
            formula = f"reported EPS - estimated EPS = {fmt(current.value)} - {fmt(estimate.value)}"
            surprise = current.value - estimate.value
            book.add(
                new_fact(label, surprise, currency, "difference", formula, [current, estimate]),
                tier=HEADLINE if newest else OLDER,
            )
        for earlier, earlier_eps in reported:
            if (event.date.date() - earlier.date.date()).days in YEAR_EARLIER_DAYS:
                base = _dated_input(symbol, "eps_reported", earlier.date, earlier_eps, source)
                label = f"{symbol} reported EPS year over year, report of {current.period} vs {base.period}"
                book.add(
                    growth_fact("yoy_growth", label, current, base),
                    tier=HEADLINE if newest else OLDER,
                    compare_as="reported EPS year-over-year growth" if newest else None,
                )
                break


def _history_facts(history: PriceHistory, source: FactSource, book: _FactBook) -> None:
    """The change in closing price over the range the history covers, from Yahoo's split-adjusted closes (a
    split within the range is no fall in price); a London price shown in pence beside pounds."""
    closes = [(bar.date, bar.close) for bar in history.bars if bar.close is not None]
    if len(closes) < 2:
        return
    base = _dated_input(history.symbol, "close", *closes[0], source)
    current = _dated_input(history.symbol, "close", *closes[-1], source)
    span = f"{base.period} to {current.period}"
    within = [split.text() for split in history.splits if base.period < split.day.isoformat() <= current.period]
    adjusted = f" (split-adjusted for {' and '.join(within)})" if within else ""
    book.add(
        growth_fact(
            "growth", f"{history.symbol} closing price change, {span}{adjusted}", current, base, history.price_text
        ),
        tier=HEADLINE,
        compare_as=f"price change, {span}",
    )


def _dated_input(symbol: str, line: str, moment: datetime, value: float, source: FactSource) -> FactInput:
    return FactInput(symbol=symbol, line=line, period=moment.date().isoformat(), value=value, source=source)
