"""Finding a section in a filing's document: the layouts filers use for headings, and what is not a heading."""

from __future__ import annotations

import pytest

from datascraper.filings.errors import FilingInvalidArgument, NoFilingData
from datascraper.filings.sections import check_section, document_text, find_section


def html(body: str) -> bytes:
    return f"<html><head><title>t</title><style>p{{}}</style></head><body>{body}</body></html>".encode()


def test_the_text_keeps_one_block_a_line_and_table_rows_whole() -> None:
    text = document_text(
        html(
            "<div style='display: none'><ix:header>context c-1</ix:header></div>"
            "<p>First&#160;&#160;paragraph.</p><p>Second <b>bold</b> one.</p>"
            "<table><tr><td>Americas</td><td>$ 167,045</td></tr><tr><td>Europe</td><td>101,328</td></tr></table>"
            "<script>var x = 1;</script>"
        )
    )

    assert text.split("\n") == ["First paragraph.", "Second bold one.", "Americas $ 167,045", "Europe 101,328"]


@pytest.mark.parametrize(
    "heading",
    [
        "<p><b>Item 1A. Risk Factors</b></p>",
        "<p><b>ITEM 1A. RISK FACTORS</b></p>",
        "<p>Item 1A &#8212; Risk Factors</p>",
        "<p>Item&#160;1A:&#160;Risk Factors.</p>",
        "<table><tr><td>Item 1A.</td><td>Risk Factors</td></tr></table>",
        "<div>Item 1A.</div><div>Risk Factors</div>",
        "<p>PART II, ITEM 1A. RISK FACTORS</p>",
    ],
)
def test_an_item_heading_is_found_however_it_is_laid_out(heading: str) -> None:
    text = document_text(html(f"{heading}<p>Our risks are many.</p><p>Item 1B. Unresolved Staff Comments</p>"))

    assert find_section(text, "risk_factors").text == "Our risks are many."


def test_the_table_of_contents_and_cross_references_are_not_the_section() -> None:
    text = document_text(
        html(
            "<p>Item 1A. Risk Factors</p><p>Item 1B. Unresolved Staff Comments</p>"  # a contents list without pages
            "<p>Item 1A. Risk Factors</p>"
            "<p>Risks are described below; see Item 7 for the segments.</p>"
            "<p>Competition is intense.</p>"
            "<p>Item 1B. Unresolved Staff Comments</p><p>None.</p>"
        )
    )

    section = find_section(text, "risk_factors")

    assert section.text.split("\n") == [
        "Risks are described below; see Item 7 for the segments.",
        "Competition is intense.",
    ]


def test_a_section_ends_at_a_new_part_or_the_signatures() -> None:
    text = document_text(
        html(
            "<p>Item 4. Controls and Procedures</p><p>Effective.</p><p>PART II. OTHER INFORMATION</p>"
            "<p>Item 1. Legal Proceedings</p><p>See Note 13.</p><p>SIGNATURES</p><p>Signed.</p>"
        )
    )

    assert find_section(text, "legal_proceedings").text == "See Note 13."


def test_a_10k_that_incorporates_a_section_by_reference_has_no_such_section() -> None:
    text = document_text(html("<p>Item 1. Business</p><p>We make things.</p><p>Item 2. Properties</p>"))

    with pytest.raises(NoFilingData):
        find_section(text, "risk_factors")


@pytest.mark.parametrize(
    ("section", "form"),
    [("risk_factors", "8-K"), ("2.02", "10-K"), ("business", "10-Q"), ("poetry", "10-K"), ("2.2", "8-K")],
)
def test_sections_a_form_does_not_have_are_refused(section: str, form: str) -> None:
    with pytest.raises(FilingInvalidArgument):
        check_section(section, form)
