"""The research side of the filing tools: which section a disclosure question reads, which of its paragraphs
reach the answer, and when a Yahoo figure and a filed one differ beyond rounding."""

from __future__ import annotations

import pytest

from datascraper.filings.research import (
    SECTION_KEPT_CHARS,
    FilingToolResult,
    disclosure_data,
    relevant_paragraphs,
    section_for,
)
from datascraper.research_engine.cross_check import agree


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
