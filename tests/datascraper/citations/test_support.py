"""The decision rule: a claim's figures (normalised) and enough of its key terms in the source."""

from __future__ import annotations

import pytest

from datascraper.citations.support import (
    EVIDENCE_CHARS,
    MarketEvidence,
    SourceText,
    judge_market_data,
    judge_page,
    key_terms,
)
from datascraper.schemas import Fact, FactInput, FactSource, Source

PAGE = SourceText(
    "Apple results for fiscal 2024. "
    "Apple reported total revenue of 391.04 billion dollars for the year, an increase of 2.0 percent. "
    "Services revenue reached $96,169 million, growing 13 per cent. The company's cloud unit, sold in 2023 "
    "for $3,200 million, is no longer consolidated. Operating expenses were 1234.5 million. "
    + "Unrelated paragraph about products and stores around the world. " * 20
)


@pytest.mark.parametrize(
    "claim",
    [
        "Apple's revenue was $391.04B in fiscal 2024.",  # B suffix vs "billion"
        "Apple's revenue was $391 billion.",  # rounded to the precision written
        "Revenue increased 2%.",  # 2% vs "2.0 percent"
        "Services revenue was $96.2 billion.",  # billions vs "$96,169 million"
        "The cloud unit was sold for $3.2B.",  # 3.2B vs "$3,200 million"
        "Operating expenses were $1,234.5 million.",  # thousands separator vs none
    ],
)
def test_a_claim_whose_figures_and_terms_are_on_the_page_is_supported(claim):
    judgement = judge_page(claim, PAGE)

    assert judgement.status == "supported"
    assert judgement.evidence


@pytest.mark.parametrize(
    "claim",
    [
        "Apple's revenue was $395 billion in fiscal 2024.",  # a figure the page does not give
        "Apple's revenue was $391.5 billion.",  # more precise than the page, and different
        "Revenue increased 2% and services 14%.",  # one figure of two is wrong
        "Services revenue grew 96.2%.",  # a percentage is not the amount 96.2 billion
        "Microsoft's Azure cloud dominates enterprise spending.",  # no figure, and the page's words miss
    ],
)
def test_a_claim_the_page_does_not_bear_out_is_unsupported(claim):
    assert judge_page(claim, PAGE).status == "unsupported"


def test_a_claim_without_figures_needs_half_of_its_key_terms():
    assert judge_page("Apple's services revenue keeps growing.", PAGE).status == "supported"
    assert judge_page("Apple's wearables division faces antitrust scrutiny in Brussels.", PAGE).status == "unsupported"


def test_a_claim_with_nothing_to_check_is_unsupported():
    assert judge_page("It was so.", PAGE).status == "unsupported"


def test_key_terms_drop_function_words_and_compare_by_stem():
    terms = key_terms("Revenues increased for the company's services in 2024")

    assert terms == {"revenu", "increa", "compan", "servic"}


def test_the_evidence_is_a_short_passage_around_the_figure_with_the_claims_words():
    judgement = judge_page("Services revenue was $96.2 billion.", PAGE)

    assert "$96,169 million" in judgement.evidence
    assert len(judgement.evidence) <= EVIDENCE_CHARS + 2  # the ellipses
    assert judgement.evidence.startswith("…") and judgement.evidence.endswith("…")


# --- market data ---------------------------------------------------------------------------------------

STATEMENT = {
    "symbol": "AAPL",
    "currency": "USD",
    "statement": "income",
    "frequency": "annual",
    "periods": ["2024-09-30", "2023-09-30"],
    "lines": [
        {"name": "TotalRevenue", "values": [391_035_000_000.0, 383_285_000_000.0]},
        {"name": "NetIncome", "values": [93_736_000_000.0, 96_995_000_000.0]},
    ],
    "url": "https://finance.yahoo.com/quote/AAPL/financials",
}
SOURCE = Source(n=2, title="Yahoo Finance — AAPL income statement (annual)", url=STATEMENT["url"], kind="market_data")
FACT_INPUT = FactSource(title=SOURCE.title, url=SOURCE.url, n=2)
GROWTH = Fact(
    id="F1",
    label="AAPL Total Revenue growth",
    value=2.021994,
    unit="percent",
    kind="growth",
    formula="(current - base) / base x 100",
    inputs=[
        FactInput(symbol="AAPL", line="TotalRevenue", period="2024-09-30", value=391_035e6, source=FACT_INPUT),
        FactInput(symbol="AAPL", line="TotalRevenue", period="2023-09-30", value=383_285e6, source=FACT_INPUT),
    ],
)
ELSEWHERE = FactSource(title="Yahoo Finance — MSFT income statement (annual)", url="https://finance.yahoo.com/m", n=5)
OTHER_SOURCE_FACT = GROWTH.model_copy(
    update={"id": "F2", "value": 17.5, "inputs": [GROWTH.inputs[0].model_copy(update={"source": ELSEWHERE})]}
)
EVIDENCE = MarketEvidence.of(SOURCE, [STATEMENT], [GROWTH, OTHER_SOURCE_FACT])


def test_a_market_data_figure_is_traced_to_the_payload_value_it_rounds():
    judgement = judge_market_data("Apple's revenue was $391.04 billion in fiscal 2024", EVIDENCE)

    assert judgement.status == "supported"
    assert judgement.evidence == "AAPL TotalRevenue 2024-09-30 = 391,035,000,000"


def test_a_market_data_figure_may_be_a_fact_computed_from_that_source():
    judgement = judge_market_data("Revenue grew 2.0% to $391B", EVIDENCE)

    assert judgement.status == "supported"
    assert "F1 AAPL Total Revenue growth = 2.021994 percent" in judgement.evidence


def test_a_figure_neither_returned_nor_computed_from_that_source_is_unsupported():
    assert judge_market_data("Revenue grew 12.3%", EVIDENCE).status == "unsupported"
    # 17.5 was computed, but from another source's data.
    assert judge_market_data("Revenue grew 17.5%", EVIDENCE).status == "unsupported"


def test_a_market_data_claim_without_figures_is_held_to_the_words_of_the_tool_output():
    assert judge_market_data("Apple's income statement is annual", EVIDENCE).status == "supported"
    assert judge_market_data("Apple is rated a strong buy by analysts", EVIDENCE).status == "unsupported"
