"""What research asks of the SEC's filings: reported figures beside Yahoo's statements, and the filing's own
words for questions about a company's disclosures.

The filing tools are called through the market data MCP session (`market_data/session.py`), as the Yahoo
tools are. A statement sub-question asks XBRL for the statement's key lines over the same periods (fiscal
labels from the filing: "Q3 FY2025" is what the company's own filing calls Q3 FY2025); a disclosure
sub-question reads the named section of the latest 10-K or 10-Q, or an 8-K item, and keeps the paragraphs
that bear on the question. Every result cites its filing: one source per filing, with its form, the period
it reports on and its filing date.

Without `SEC_USER_AGENT` the tools answer `not_configured` at once, and research goes on with Yahoo and the
web: a missing filing is an error of this finding, never of the run.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any, Literal, get_args

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
from datascraper.filings.service import MAX_SECTION_CHARS
from datascraper.filings.tools import FilingToolName
from datascraper.market_data.errors import MarketDataError, MarketDataUnavailable
from datascraper.market_data.fetch import MAX_TICKERS, tool_failure
from datascraper.market_data.finding_schemas import MarketDataRequest, ToolFailure, ToolResult
from datascraper.market_data.schemas import StatementKind
from datascraper.market_data.session import get_market_data_client
from datascraper.market_data.statement_schemas import FinancialStatement, StatementLine
from datascraper.schemas import FilingDataKind, MarketDataKind, Source

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
# A section is read to this length, in pages of the tool's largest (`service.MAX_SECTION_CHARS`): a large
# company's risk factors can run well past one page. The answer is given the paragraphs that bear most on the
# question, in their order.
SECTION_READ_CHARS = 120_000
SECTION_KEPT_CHARS = 8_000
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
    symbols = _symbols(tickers)
    finding = FilingFinding(tickers=symbols)
    arguments = _period_arguments(request, fiscal)
    if arguments is None:
        return finding  # trailing twelve months: not a period filings report
    lines = STATEMENT_LINES[data]

    async def one_ticker(symbol: str) -> None:
        first = await _call(finding, "get_reported_figures", symbol, {"concept": lines[0], **arguments}, timeout_s)
        if first is False:
            return
        await asyncio.gather(
            *(
                _call(finding, "get_reported_figures", symbol, {"concept": line, **arguments}, timeout_s)
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


# --- a company's own disclosures -------------------------------------------------------------------------

SectionName = Literal["risk_factors", "mdna", "legal_proceedings", "market_risk", "business", "segment_note"]
SECTION_NAMES: frozenset[str] = frozenset(get_args(SectionName))
EIGHT_K_ITEM = re.compile(r"^\d\.\d\d$")
# What a question's words say it is about, first match wins; otherwise management's discussion.
_SECTION_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(earnings|press) release|\b8-k\b", re.IGNORECASE), "2.02"),
    (re.compile(r"\brisk", re.IGNORECASE), "risk_factors"),
    (re.compile(r"\blegal|\blawsuit|\blitigation|\bproceeding|\bregulatory (action|investigation)", re.IGNORECASE),
     "legal_proceedings"),
    (re.compile(r"\bsegment", re.IGNORECASE), "segment_note"),
    (re.compile(r"\binterest[- ]rate|\bcurrency|\bforeign exchange|\bhedg|\bmarket risk", re.IGNORECASE),
     "market_risk"),
    (re.compile(r"\bbusiness model|\bcompetition|\bcompetitors|\bemployees|\bproducts and services", re.IGNORECASE),
     "business"),
)  # fmt: skip
_QUARTERLY = re.compile(r"\b10-q\b|\bquarterly report\b|\blatest quarter\b|\bthis quarter\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9&'-]{3,}")
_STOPWORDS = frozenset(
    "what which when where does have that this with from about their they them said says company company's "
    "filing filings report reported annual quarterly latest most main according disclose disclosed discuss "
    "describe described item section".split()
)


_INSIDER_WORDS = re.compile(
    r"\binsiders?\b|\bform 4\b"
    r"|\b(directors?|officers?|executives?|ceo|cfo)\b.{0,40}\b(sold|bought|sell|buy|sales|purchases)\b",
    re.IGNORECASE,
)
_FILING_WORDS = re.compile(
    r"\b10-k\b|\b10-q\b|\b8-k\b|\bannual report\b|\bquarterly report\b|\brisk factors\b|\bdisclos"
    r"|\bfil(ed|ing|ings) with the sec\b|\bsec filings?\b|\bmanagement's discussion\b|\bmd&a\b",
    re.IGNORECASE,
)


def disclosure_data(question: str) -> FilingDataKind | None:
    """What a question's words ask of a company's filings when the analyzer gave no data hint: insider
    trades, or its filings' text; None when they name neither."""
    if _INSIDER_WORDS.search(question):
        return "insider_transactions"
    if _FILING_WORDS.search(question):
        return "filing_text"
    return None


def section_for(question: str, asked: str | None = None) -> tuple[str, str]:
    """The section (or 8-K item) and form a disclosure question reads: the analyzer's `asked` section when
    it named a known one, else the question's words."""
    section = (asked or "").strip().lower()
    if section not in SECTION_NAMES and not EIGHT_K_ITEM.match(section):
        section = next((name for pattern, name in _SECTION_WORDS if pattern.search(question)), "mdna")
    if EIGHT_K_ITEM.match(section):
        return section, "8-K"
    quarterly = _QUARTERLY.search(question) is not None and section not in ("business",)
    return section, "10-Q" if quarterly else "10-K"


async def fetch_disclosures(
    tickers: list[str],
    data: FilingDataKind,
    *,
    question: str,
    section: str | None = None,
    timeout_s: float | None = None,
) -> FilingFinding:
    """The filing's own words for `question`: a section's most relevant paragraphs, the company's filings
    (8-K items included), or its insiders' trades, for each ticker."""
    symbols = _symbols(tickers)
    finding = FilingFinding(tickers=symbols)
    if data == "filing_text":
        name, form = section_for(question, section)
        arguments: dict[str, Any] = {"section": name, "form": form, "max_chars": MAX_SECTION_CHARS}
        tool: FilingToolName = "get_filing_section"
    elif data == "insider_transactions":
        arguments, tool = {}, "get_insider_transactions"
    else:
        arguments, tool = {"forms": _forms_named(question), "limit": 10}, "get_filings"
    await asyncio.gather(*(_call(finding, tool, symbol, arguments, timeout_s) for symbol in symbols))
    if data == "filing_text":
        finding.results = [
            relevant_paragraphs(await _read_on(item, arguments, timeout_s), question) for item in finding.results
        ]
    return finding


async def _read_on(item: FilingToolResult, arguments: dict[str, Any], timeout_s: float | None) -> FilingToolResult:
    """A long section read on, a page at a time from the same filing, to `SECTION_READ_CHARS` in all (the
    filing's text is cached by the first page, so the SEC is not asked again). A page that fails ends the
    reading with what was read."""
    data = dict(item.data)
    client = get_market_data_client()
    while data["truncated"] and len(data["text"]) < SECTION_READ_CHARS:
        page = {**arguments, "accession": data["accession"], "offset": data["offset"] + len(data["text"])}
        try:
            outcome = await client.call_tool("get_filing_section", {"ticker": item.symbol, **page}, timeout_s=timeout_s)
        except MarketDataError:
            break
        if outcome.is_error or outcome.structured_content is None or not outcome.structured_content["text"]:
            break
        data["text"] += outcome.structured_content["text"]
        data["truncated"] = outcome.structured_content["truncated"]
    return item.model_copy(update={"data": data})


def _forms_named(question: str) -> list[str] | None:
    forms = [form for form in ("10-K", "10-Q", "8-K", "DEF 14A", "13F") if form.lower() in question.lower()]
    if re.search(r"\bproxy\b", question, re.IGNORECASE):
        forms.append("DEF 14A")
    return forms or None


def relevant_paragraphs(item: FilingToolResult, question: str) -> FilingToolResult:
    """A long section cut to its paragraphs that share most words with the question, in document order,
    each gap marked; a short one whole."""
    text: str = item.data["text"]
    if len(text) <= SECTION_KEPT_CHARS:
        return item
    words = {word for word in _WORD.findall(question.lower()) if word not in _STOPWORDS}
    paragraphs = [p for p in text.split("\n") if p.strip()]
    scored = sorted(
        range(len(paragraphs)),
        key=lambda i: (-sum(1 for word in words if word in paragraphs[i].lower()), i),
    )
    kept: set[int] = {0}  # the section's opening says what it covers
    size = len(paragraphs[0])
    for i in scored:
        if size + len(paragraphs[i]) > SECTION_KEPT_CHARS:
            continue
        kept.add(i)
        size += len(paragraphs[i]) + 1
    parts: list[str] = []
    for i in sorted(kept):
        if parts and i - 1 not in kept:
            parts.append("[…]")
        parts.append(paragraphs[i])
    data = {**item.data, "text": "\n".join(parts), "truncated": True}
    data["excerpt_of"] = f"paragraphs of the section that bear on the question, {size:,} of {len(text):,} characters"
    return item.model_copy(update={"data": data})


# --- one tool call ---------------------------------------------------------------------------------------


def _symbols(tickers: list[str]) -> list[str]:
    return list(dict.fromkeys(t.strip().upper() for t in tickers if t.strip()))[:MAX_TICKERS]


async def _call(
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
