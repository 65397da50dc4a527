"""Yahoo's statement lines held against the figures as filed with the SEC, for the findings that have both.

A statement sub-question fetches both (`executor`): each Yahoo line that names a filed line (`TotalRevenue`
is `revenue`) is compared period by period with the filed figure for the same period (its end within a few
days, and the same span: a quarter, a year or a balance), outflows with the filings' sign (Yahoo's capital
expenditure is negative, the filed payment positive). A difference beyond rounding is a contradiction,
each side with its source, for the answer to present; an agreeing figure lets a computed fact cite the
filing as its input's source, so a growth rate cites the 10-K, not the aggregator.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import date

from datascraper.filings.concepts import YAHOO_LINES, as_filed
from datascraper.filings.schemas import ReportedFigure
from datascraper.formatting import humanize, plain_number
from datascraper.market_data.statement_schemas import FinancialStatement
from datascraper.research_engine.data.filings import figure_source, figure_sources
from datascraper.research_engine.state import Finding
from datascraper.schemas import DerivedInput, Fact, FactSource
from datascraper.trace_schemas import Contradiction

# Beyond rounding: companies report in thousands or millions and Yahoo restates into its own lines, so a
# tenth of a percent; per-share figures are reported to the cent.
RELATIVE_TOLERANCE = 0.001
CENT = 0.005
_END_SLACK_DAYS = 3


def agree(a: float, b: float) -> bool:
    return abs(a - b) <= max(RELATIVE_TOLERANCE * max(abs(a), abs(b)), CENT)


def filing_contradictions(findings: Sequence[Finding]) -> list[Contradiction]:
    """Each Yahoo figure that differs beyond rounding from the filed figure for the same line and period."""
    found = []
    for finding, symbol, statement, line, end, value, figure in _pairs(findings):
        if agree(as_filed(line, value), figure.value):
            continue
        source = figure_source(_company(finding, symbol), figure)
        relative = abs(value - figure.value) / max(abs(value), abs(figure.value))
        derived = f", derived: {figure.derived_from.text()}" if figure.derived_from is not None else ""
        found.append(
            Contradiction(
                claim_a=f"Yahoo Finance: {symbol} {humanize(line)} for the {statement.frequency} period ending "
                f"{end} is {plain_number(value)}",
                finding_a=finding.step.id,
                claim_b=f"{source.title}: {figure.label} {figure.concept} is "
                f"{plain_number(figure.value)} {figure.unit}{derived}",
                finding_b=finding.step.id,
                severity=min(1.0, 0.2 + 10 * relative),
            )
        )
    return found


def cite_filings(facts: Sequence[Fact], findings: Sequence[Finding]) -> None:
    """Point each fact input that the filings bear out (same company, line, period and value) at its filing;
    an input borne out by a derived quarter at both filings it is derived from, marked derived."""
    filed: dict[tuple[str, str], list[tuple[ReportedFigure, str]]] = {}
    for finding in findings:
        if finding.filings is None:
            continue
        for symbol, result in finding.filings.figures():
            for figure in result.figures:
                filed.setdefault((symbol, result.concept_asked), []).append((figure, result.company))
    for fact in facts:
        for item in fact.inputs:
            line = YAHOO_LINES.get(item.line)
            try:
                end = date.fromisoformat(item.period[:10])
            except ValueError:
                continue
            for figure, company in filed.get((item.symbol, line or ""), []):
                if _same_end(figure.end, end) and agree(as_filed(item.line, item.value), figure.value):
                    whole, *earlier = figure_sources(company, figure)
                    item.source = FactSource(title=whole.title, url=whole.url)
                    if figure.derived_from is not None:
                        item.derived = DerivedInput(
                            formula=figure.derived_from.text(),
                            earlier_source=FactSource(title=earlier[0].title, url=earlier[0].url),
                        )
                    break


def _company(finding: Finding, symbol: str) -> str:
    assert finding.filings is not None
    return next((r.company for s, r in finding.filings.figures() if s == symbol), symbol)


def _pairs(
    findings: Sequence[Finding],
) -> Iterator[tuple[Finding, str, FinancialStatement, str, date, float, ReportedFigure]]:
    """Each Yahoo statement value with the filed figure for its line and period."""
    for finding in findings:
        if finding.market_data is None or finding.filings is None:
            continue
        filed = {(symbol, result.concept_asked): result.figures for symbol, result in finding.filings.figures()}
        for result in finding.market_data.results:
            statement = result.result()
            if not isinstance(statement, FinancialStatement) or statement.frequency == "ttm":
                continue
            for statement_line in statement.lines:
                figures = filed.get((result.symbol, YAHOO_LINES.get(statement_line.name, "")), [])
                for end, value in zip(statement.periods, statement_line.values, strict=False):
                    if value is None:
                        continue
                    figure = next((f for f in figures if _same_period(f, end, statement)), None)
                    if figure is not None:
                        yield finding, result.symbol, statement, statement_line.name, end, value, figure


def _same_period(figure: ReportedFigure, end: date, statement: FinancialStatement) -> bool:
    if not _same_end(figure.end, end):
        return False
    if statement.statement == "balance":
        return figure.start is None
    return figure.start is not None and (figure.fiscal_period == "FY") == (statement.frequency == "annual")


def _same_end(a: date, b: date) -> bool:
    return abs((a - b).days) <= _END_SLACK_DAYS
