"""The research side of the filing tools: which section a disclosure question reads, which of its paragraphs
reach the answer, and when a Yahoo figure and a filed one differ beyond rounding."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from datascraper.filings.schemas import ReportedFigures
from datascraper.market_data.finding_schemas import MarketDataFinding, ToolResult
from datascraper.market_data.statement_schemas import FinancialStatement, StatementLine
from datascraper.plan_schemas import SubQuestion
from datascraper.research_engine.cross_check import agree, filing_contradictions
from datascraper.research_engine.data.filing_disclosures import (
    SECTION_KEPT_CHARS,
    disclosure_data,
    relevant_paragraphs,
    section_for,
)
from datascraper.research_engine.data.filings import FilingFinding, FilingToolResult
from datascraper.research_engine.state import Finding, plan_steps


@pytest.mark.parametrize(
    ("question", "asked", "expected"),
    [
        ("What risks does Apple's 10-K name about China?", None, ("risk_factors", "10-K")),
        ("What lawsuits is Meta facing?", None, ("legal_proceedings", "10-K")),
        ("How did Microsoft's segments perform in its latest 10-Q?", None, ("segment_note", "10-Q")),
        ("What does NVIDIA say about currency exposure?", None, ("market_risk", "10-K")),
        ("What did Apple's latest earnings release say?", None, ("2.02", "8-K")),
        ("What is management's outlook?", None, ("mdna", "10-K")),
        ("What risks does Apple name?", "legal_proceedings", ("legal_proceedings", "10-K")),
        ("What did Apple announce?", "5.02", ("5.02", "8-K")),
        ("What risks does Apple name?", "not a section", ("risk_factors", "10-K")),
    ],
)
def test_a_disclosure_question_reads_the_section_its_words_or_the_analyzer_name(question, asked, expected):
    assert section_for(question, asked) == expected


def test_a_long_section_keeps_the_paragraphs_that_bear_on_the_question_in_document_order():
    filler = [f"Paragraph {i} about general economic conditions and other matters. " * 12 for i in range(60)]
    filler[30] = "Substantially all manufacturing is performed by outsourcing partners in China mainland and India."
    filler[45] = "Tariffs on imports from China could raise the cost of the Company's products."
    text = "\n".join(["Item 1A. Risk Factors opening paragraph.", *filler])
    item = FilingToolResult(symbol="AAPL", tool="get_filing_section", data={"text": text, "truncated": False})

    kept = relevant_paragraphs(item, "What does Apple say about manufacturing in China and tariffs?").data

    assert len(kept["text"]) <= SECTION_KEPT_CHARS + 200
    lines = kept["text"].splitlines()
    assert lines[0] == "Item 1A. Risk Factors opening paragraph."
    assert lines.index(filler[30]) < lines.index(filler[45])
    assert "[…]" in lines and kept["truncated"] is True
    assert kept["excerpt_of"].endswith(f"of {len(text):,} characters")


def test_a_short_section_is_given_whole():
    item = FilingToolResult(symbol="AAPL", tool="get_filing_section", data={"text": "Short.\nSection."})
    assert relevant_paragraphs(item, "anything") is item


@pytest.mark.parametrize(
    ("yahoo", "filed", "same"),
    [
        (391_035e6, 391_035e6, True),
        (391_035e6, 391_100e6, True),  # within a tenth of a percent: rounding
        (391_035e6, 395_000e6, False),
        (1.19, 1.194, True),  # a cent's rounding of a per-share figure
        (2.94, 2.96, False),
        (11.93, 1.19, False),  # a split restatement
    ],
)
def test_figures_differ_only_beyond_rounding(yahoo, filed, same):
    assert agree(yahoo, filed) is same


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What risks does Apple disclose about China?", "filing_text"),
        ("What does NVIDIA's latest 10-Q say about export controls?", "filing_text"),
        ("Have Apple's insiders been selling shares?", "insider_transactions"),
        ("Did Tesla's CEO sell stock this year?", "insider_transactions"),
        ("What do analysts think of Apple's services growth?", None),
    ],
)
def test_a_question_without_a_data_hint_names_a_filing_by_its_words(question, expected):
    assert disclosure_data(question) == expected


def _cash_flow_finding(yahoo_capex: float, filed_capex: float) -> Finding:
    """A cash flow sub-question answered by Yahoo (capex as Yahoo signs it) and by Apple's 10-K."""
    [step] = plan_steps(
        [SubQuestion(question="Apple's capital expenditure in fiscal 2024", type="numerical", tickers=["AAPL"],
                     data="cash_flow", frequency="annual", periods=1)],
        first_number=1,
        today=date(2025, 6, 13),
    )  # fmt: skip
    statement = FinancialStatement(
        symbol="AAPL",
        currency="USD",
        as_of=datetime(2024, 9, 28, tzinfo=UTC),
        retrieved_at=datetime(2025, 6, 13, tzinfo=UTC),
        url="https://finance.yahoo.com/quote/AAPL/cash-flow",
        statement="cash_flow",
        frequency="annual",
        periods=[date(2024, 9, 28)],
        lines=[StatementLine(name="CapitalExpenditure", values=[yahoo_capex])],
    )
    market = MarketDataFinding(tickers=["AAPL"], data="cash_flow")
    market.results.append(
        ToolResult(symbol="AAPL", tool="get_financial_statement", data=statement.model_dump(mode="json"),
                   url=statement.url, title="Yahoo Finance — AAPL cash flow statement (annual)")
    )  # fmt: skip
    version = {"value": filed_capex, "form": "10-K", "filed": "2024-11-01", "accession": "0000320193-24-000123",
               "filing_url": "https://www.sec.gov/x-index.htm", "filing_period": "FY2024"}  # fmt: skip
    figures = ReportedFigures(
        ticker="AAPL", cik="0000320193", company="Apple Inc.", as_of=date(2024, 11, 1), url="https://data.sec.gov/x",
        concept_asked="capital_expenditure", concepts_used=["us-gaap:PaymentsToAcquirePropertyPlantAndEquipment"],
        figures=[{**version, "concept": "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment", "unit": "USD",
                  "fiscal_year": 2024, "fiscal_period": "FY", "label": "FY2024", "start": "2023-10-01",
                  "end": "2024-09-28", "frame": "CY2024", "restated": False, "versions": [version]}],
    )  # fmt: skip
    filings = FilingFinding(
        tickers=["AAPL"],
        results=[FilingToolResult(symbol="AAPL", tool="get_reported_figures", data=figures.model_dump(mode="json"))],
    )
    return Finding(step=step, status="answered", route="market_data", market_data=market, filings=filings)


def test_yahoos_negative_outflows_agree_with_the_filed_positive_payments():
    assert filing_contradictions([_cash_flow_finding(-9_447e6, 9_447e6)]) == []


def test_an_outflow_that_differs_from_the_filed_payment_is_a_contradiction():
    [contradiction] = filing_contradictions([_cash_flow_finding(-9_959e6, 9_447e6)])
    assert "Capital Expenditure" in contradiction.claim_a and "9,447,000,000" in contradiction.claim_b


def test_filed_figures_make_a_statement_in_yahoos_names_and_signs_for_a_ticker_yahoo_lacks():
    finding = _cash_flow_finding(-9_447e6, 9_447e6)
    assert finding.filings is not None

    [filed] = finding.filings.statements("cash_flow", skip=set())

    statement = filed.result()
    assert isinstance(statement, FinancialStatement) and statement.source == "SEC EDGAR"
    assert [(line.name, line.values) for line in statement.lines] == [("CapitalExpenditure", [-9_447e6])]
    assert finding.filings.statements("cash_flow", skip={"AAPL"}) == []
