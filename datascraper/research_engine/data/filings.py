"""What research asks of the SEC's filings: reported figures beside Yahoo's statements, and the filing's own
words for questions about a company's disclosures.

The filing tools are called through the market data MCP session (`session.py`), as the Yahoo tools are. A
statement sub-question asks XBRL for the statement's key lines over the same periods (fiscal
labels from the filing: "Q3 FY2025" is what the company's own filing calls Q3 FY2025); a disclosure
sub-question reads the named section of the latest 10-K or 10-Q, or an 8-K item, and keeps the paragraphs
that bear on the question (`filing_disclosures.py`). Every result cites its filing: one source per filing,
with its form, the period it reports on and its filing date.

Without `SEC_USER_AGENT` the tools answer `not_configured` at once, and research goes on with Yahoo and the
web: a missing filing is an error of this finding, never of the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from datascraper.filings.concepts import YAHOO_LINES, as_filed
from datascraper.filings.schemas import (
    FigureInput,
    FilingList,
    FilingResult,
    FilingSection,
    InsiderTransactions,
    ReportedFigure,
    ReportedFigures,
)
from datascraper.filings.tools import FilingToolName
from datascraper.market_data.errors import MarketDataError, MarketDataUnavailable
from datascraper.market_data.finding_schemas import MarketDataRequest, ToolFailure, ToolResult
from datascraper.market_data.schemas import StatementKind
from datascraper.market_data.statement_schemas import FinancialStatement, StatementLine
from datascraper.research_engine.data.market_data import MAX_TICKERS, tool_failure
from datascraper.research_engine.data.market_data_client import get_market_data_client
from datascraper.schemas import MarketDataKind, Source

if TYPE_CHECKING:  # research_engine imports this module
    from datascraper.research_engine.periods.fiscal_calendar import FiscalAsk

# The lines of a statement asked of XBRL, as the filing tools name them (`filings/concepts.py`).
STATEMENT_LINES: dict[MarketDataKind, tuple[str, ...]] = {
    "income_statement": ("revenue", "gross_profit", "operating_income", "net_income", "eps_diluted"),
    "balance_sheet": ("total_assets", "total_liabilities", "stockholders_equity", "cash"),
    "cash_flow": ("operating_cash_flow", "capital_expenditure", "share_repurchases", "dividends_paid"),
}
_STATEMENT_KINDS: dict[MarketDataKind, StatementKind] = {
    "income_statement": "income",
    "balance_sheet": "balance",
    "cash_flow": "cash_flow",
}
_STATEMENT_WORDS: dict[StatementKind, str] = {
    "income": "income statement",
    "balance": "balance sheet",
    "cash_flow": "cash flow statement",
}
_YAHOO_NAMES = {line: yahoo for yahoo, line in YAHOO_LINES.items()}
FILING_ERROR_CODES = frozenset(
    {
        "not_configured",
        "invalid_argument",
        "not_found",
        "no_data",
        "too_large",
        "rate_limited",
        "upstream_error",
        "timeout",
    }
)
# Periods asked of XBRL when a range or a start and end bound them: enough for five years of quarters.
_RANGE_LIMIT = 20
_RESULT_MODELS: dict[FilingToolName, type[FilingResult]] = {
    "get_reported_figures": ReportedFigures,
    "get_filings": FilingList,
    "get_filing_section": FilingSection,
    "get_insider_transactions": InsiderTransactions,
}


class FilingToolResult(BaseModel):
    """One successful filing tool call, with its structured payload."""

    symbol: str
    tool: FilingToolName
    data: dict[str, Any]

    def result(self) -> FilingResult:
        return _RESULT_MODELS[self.tool].model_validate(self.data)


class FilingFinding(BaseModel):
    """What the filings answered for one sub-question; `errors` are per ticker (or per line)."""

    tickers: list[str]
    results: list[FilingToolResult] = Field(default_factory=list)
    errors: list[ToolFailure] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results)

    def summary_text(self) -> str:
        """What the filings said, compact enough for a prompt."""
        blocks = [item.result().summary_text() for item in self.results]
        blocks.extend(f"SEC filings, {error.symbol}: {error.code}: {error.message}" for error in self.errors)
        return "\n".join(blocks) if blocks else "No filing data was retrieved."

    def companies(self) -> list[str]:
        """The tickers the filings answered for."""
        return list(dict.fromkeys(item.symbol for item in self.results))

    def figures(self) -> Iterator[tuple[str, ReportedFigures]]:
        """Each ticker's reported figures, one result per line."""
        for item in self.results:
            result = item.result()
            if isinstance(result, ReportedFigures):
                yield item.symbol, result

    def statements(self, data: MarketDataKind, *, skip: set[str]) -> list[ToolResult]:
        """Each ticker's filed figures (but `skip`'s) as one statement in Yahoo's line names and signs, so
        that growth, margins and ratios are computed from them as from Yahoo's statements; the facts' inputs
        then cite their filings (`research_engine.cross_check.cite_filings`). For a ticker Yahoo had no
        statement for: XBRL first, and the only source then."""
        kind = _STATEMENT_KINDS.get(data)
        if kind is None:
            return []
        by_symbol: dict[str, list[ReportedFigures]] = {}
        for symbol, result in self.figures():
            if symbol not in skip and result.concept_asked in _YAHOO_NAMES and result.figures:
                by_symbol.setdefault(symbol, []).append(result)
        return [_as_statement(symbol, kind, results) for symbol, results in by_symbol.items()]

    def filed_values(self) -> Iterator[tuple[str, float, str]]:
        """Each value a filing reported: its URL, the value, and where it is ("AAPL revenue FY2024 ..."). A
        derived quarter is borne out by both filings it is derived from, as are the figures it is derived from."""
        for symbol, result in self.figures():
            what = f"{symbol} {result.concept_asked}"
            for figure in result.figures:
                for version in figure.versions:
                    origin = f"{version.form} filed {version.filed}"
                    yield version.filing_url, version.value, _value_label(what, figure, version.value, origin)
                if figure.derived_from is None:
                    continue
                derived = _value_label(what, figure, figure.value, f"derived: {figure.derived_from.text()}")
                for part in (figure.derived_from.whole, figure.derived_from.earlier):
                    yield part.filing_url, figure.value, derived
                    origin = f"{part.form} filed {part.filed}"
                    yield part.filing_url, part.value, _value_label(what, figure, part.value, origin, part.label)

    def passages(self) -> Iterator[tuple[str, str]]:
        """Each passage read from a filing, by the URL its source cites: a section's text, or the line of
        a listed filing or an insider trade."""
        for item in self.results:
            result = item.result()
            if isinstance(result, FilingSection):
                yield result.url, result.text
            elif isinstance(result, FilingList | InsiderTransactions):
                _, cited = cited_lines(result)
                for line, source in cited:
                    yield source.url, line


def _value_label(what: str, figure: ReportedFigure, value: float, origin: str, label: str | None = None) -> str:
    """ "AAPL revenue FY2024 = 391,035,000,000.00 USD (10-K filed 2024-11-01)"."""
    return f"{what} {label or figure.label} = {value:,.2f} {figure.unit} ({origin})"


def _as_statement(symbol: str, kind: StatementKind, results: list[ReportedFigures]) -> ToolResult:
    figures = [figure for result in results for figure in result.figures]
    ends = sorted({figure.end for figure in figures}, reverse=True)
    lines = []
    for result in results:
        name = _YAHOO_NAMES[result.concept_asked]
        by_end = {figure.end: figure.value for figure in result.figures}
        lines.append(
            StatementLine(name=name, values=[as_filed(name, by_end[e]) if e in by_end else None for e in ends])
        )
    currencies = {figure.unit.split("/")[0] for figure in figures}
    newest = max(figures, key=lambda figure: (figure.end, figure.filed))
    statement = FinancialStatement(
        symbol=symbol,
        currency=currencies.pop() if len(currencies) == 1 else None,
        as_of=datetime.combine(ends[0], time.min, UTC),
        retrieved_at=datetime.combine(max(figure.newest_filed for figure in figures), time.min, UTC),
        url=newest.filing_url,
        source="SEC EDGAR",
        statement=kind,
        frequency="annual" if all(figure.fiscal_period == "FY" for figure in figures) else "quarterly",
        periods=ends,
        lines=lines,
    )
    return ToolResult(
        symbol=symbol,
        tool="get_financial_statement",
        data=statement.model_dump(mode="json"),
        as_of=statement.as_of,
        url=statement.url,
        title=f"SEC EDGAR — {results[0].company} {_STATEMENT_WORDS[kind]} as filed",
    )


# --- sources --------------------------------------------------------------------------------------------


def filing_source(company: str, form: str, period: str | None, filed: date, url: str, what: str = "") -> Source:
    """A filing as a citable source: "SEC EDGAR — Apple Inc. 10-K for FY2024, filed 2024-11-01"."""
    if not period:
        reports = ""
    elif period[:1].isdigit():  # a day: an 8-K's event, a Form 4's trade
        reports = "" if period == filed.isoformat() else f" of {period}"
    else:
        reports = f" for {period}"
    title = f"SEC EDGAR — {company} {form}{reports}, filed {filed.isoformat()}{f', {what}' if what else ''}"
    return Source(n=0, title=title, url=url, kind="filing", form=form, period=period, filed=filed)


def figure_source(company: str, figure: ReportedFigure | FigureInput) -> Source:
    """The filing a figure's latest (winning) value comes from; for a derived quarter, the filing of the
    whole period it is derived from (the 10-K for a fourth quarter)."""
    return filing_source(company, figure.form, figure.filing_period, figure.filed, figure.filing_url)


def figure_sources(company: str, figure: ReportedFigure) -> list[Source]:
    """The filings a figure cites: its own, or the two a derived quarter is derived from, the whole period's
    first."""
    if figure.derived_from is None:
        return [figure_source(company, figure)]
    return [figure_source(company, figure.derived_from.whole), figure_source(company, figure.derived_from.earlier)]


def filing_sources(result: FilingResult) -> list[Source]:
    if isinstance(result, ReportedFigures):
        return [source for figure in result.figures for source in figure_sources(result.company, figure)]
    if isinstance(result, FilingSection):
        period = result.report_date.isoformat() if result.report_date else None
        heading = result.heading.rstrip(". ")
        return [filing_source(result.company, result.form, period, result.filed, result.url, heading)]
    if isinstance(result, FilingList):
        return [
            filing_source(
                result.company,
                filing.form,
                filing.report_date.isoformat() if filing.report_date else None,
                filing.filed,
                filing.url,
                "items " + ", ".join(item.number for item in filing.items) if filing.items else "",
            )
            for filing in result.filings
        ]
    if isinstance(result, InsiderTransactions):
        # One source per Form 4, whatever the days of its trades: each is cited by the report's first day.
        first_day: dict[str, date] = {}
        for trade in result.transactions:
            first_day[trade.url] = min(trade.transaction_date, first_day.get(trade.url, trade.transaction_date))
        return [
            filing_source(result.company, "4", first_day[trade.url].isoformat(), trade.filed, trade.url, trade.owner)
            for trade in result.transactions
        ]
    return []


def cited_lines(result: FilingList | InsiderTransactions) -> tuple[str, list[tuple[str, Source]]]:
    """A list of filings, or of insider trades, as its summary's heading and each of its lines with the
    filing that line cites."""
    heading, *lines = result.summary_text().splitlines()
    return heading, list(zip(lines, filing_sources(result), strict=True))


# --- reported figures ------------------------------------------------------------------------------------


async def fetch_reported_figures(
    tickers: list[str],
    data: MarketDataKind,
    *,
    request: MarketDataRequest,
    fiscal: FiscalAsk | None,
    timeout_s: float | None = None,
) -> FilingFinding:
    """The key lines of `data`'s statement as each ticker reported them, over the periods asked.

    A ticker's first line is asked alone: when it answers `not_configured`, `not_found` or `no_data` for the
    company (a foreign filer without XBRL), the other lines are not asked. Only an unreachable server
    raises, as for market data.
    """
    symbols = ticker_symbols(tickers)
    finding = FilingFinding(tickers=symbols)
    arguments = _period_arguments(request, fiscal)
    if arguments is None:
        return finding  # trailing twelve months: not a period filings report
    lines = STATEMENT_LINES[data]

    async def one_ticker(symbol: str) -> None:
        first = await call_filing_tool(
            finding, "get_reported_figures", symbol, {"concept": lines[0], **arguments}, timeout_s
        )
        if first is False:
            return
        await asyncio.gather(
            *(
                call_filing_tool(finding, "get_reported_figures", symbol, {"concept": line, **arguments}, timeout_s)
                for line in lines[1:]
            )
        )

    await asyncio.gather(*(one_ticker(symbol) for symbol in symbols))
    finding.results = [_cut(item, request, fiscal) for item in finding.results]
    finding.results = [item for item in finding.results if item.data["figures"]]
    order = {(symbol, line): i for i, (symbol, line) in enumerate((s, line) for s in symbols for line in lines)}
    finding.results.sort(key=lambda item: order.get((item.symbol, item.data.get("concept_asked", "")), 0))
    return finding


def _period_arguments(request: MarketDataRequest, fiscal: FiscalAsk | None) -> dict[str, Any] | None:
    """The tool's period arguments: a fiscal period as the filing labels it, else the newest periods of a
    frequency (cut to the request's dates afterwards); None for trailing twelve months."""
    if fiscal is not None and fiscal.first == fiscal.last:
        quarter = fiscal.first.quarter
        return {"fiscal_year": fiscal.first.year, "fiscal_period": "FY" if quarter is None else f"Q{quarter}"}
    if fiscal is not None:
        return {"frequency": fiscal.frequency, "limit": _RANGE_LIMIT}
    if request.frequency == "ttm":
        return None
    frequency = request.frequency or "annual"
    if request.start is not None or request.end is not None:
        return {"frequency": frequency, "limit": _RANGE_LIMIT}
    return {"frequency": frequency, "limit": request.periods or 4}


def _cut(item: FilingToolResult, request: MarketDataRequest, fiscal: FiscalAsk | None) -> FilingToolResult:
    """The figures within a fiscal range or between the request's dates (fetched wider, as a range)."""
    figures = item.data["figures"]
    if fiscal is not None and fiscal.first != fiscal.last:
        first, last = fiscal.first.ordinal(), fiscal.last.ordinal()
        figures = [f for f in figures if first <= _ordinal(f) <= last]
    elif fiscal is None and (request.start is not None or request.end is not None):
        start, end = request.start or date.min, request.end or date.max
        figures = [f for f in figures if start <= date.fromisoformat(f["end"]) <= end]
        if request.periods is not None:
            figures = figures[: request.periods]
    return item.model_copy(update={"data": {**item.data, "figures": figures}})


def _ordinal(figure: dict[str, Any]) -> int:
    period = figure["fiscal_period"]
    return int(figure["fiscal_year"]) * 5 + (5 if period == "FY" else int(period[1]))


# --- one tool call ---------------------------------------------------------------------------------------


def ticker_symbols(tickers: list[str]) -> list[str]:
    return list(dict.fromkeys(t.strip().upper() for t in tickers if t.strip()))[:MAX_TICKERS]


async def call_filing_tool(
    finding: FilingFinding, tool: FilingToolName, symbol: str, arguments: dict[str, Any], timeout_s: float | None
) -> bool:
    """Call `tool` for `symbol`, recording its result or its failure on `finding`; False when the failure is
    the company's (not configured, unknown, or no XBRL facts), so its other calls are not worth making."""
    client = get_market_data_client()
    try:
        outcome = await client.call_tool(tool, {"ticker": symbol, **arguments}, timeout_s=timeout_s)
    except MarketDataUnavailable:
        raise
    except MarketDataError as exc:
        finding.errors.append(ToolFailure(symbol=symbol, code=exc.code, message=exc.message))
        return True
    if outcome.is_error or outcome.structured_content is None:
        failure = tool_failure(symbol, outcome, FILING_ERROR_CODES)
        finding.errors.append(failure)
        return failure.code not in ("not_configured", "not_found", "rate_limited") and not (
            failure.code == "no_data" and "holds no XBRL figures" in failure.message
        )
    finding.results.append(FilingToolResult(symbol=symbol, tool=tool, data=outcome.structured_content))
    return True
