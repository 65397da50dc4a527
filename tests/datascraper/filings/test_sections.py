"""Finding a section in a filing's document: the layouts filers use for headings, and what is not a heading."""

from __future__ import annotations

import pytest

from datascraper.filings.errors import FilingInvalidArgument, NoFilingData
from datascraper.filings.sections import check_section, document_text, find_note, find_section


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


LAST_NOTE = (
    "<p>Note 12 &#8211; Commitments</p><p>The Company has purchase obligations.</p>"
    "<p>Note 13 &#8211; Segment Information and Geographic Data</p>"
    "<p>The Company manages its business primarily on a geographic basis.</p>"
    "<table><tr><td>Americas</td><td>$ 167,045</td></tr></table>"
    "<p>(1)China includes Hong Kong and Taiwan.</p>"
)


@pytest.mark.parametrize(
    "what_follows",
    [
        # Apple: the auditor's reports, then Item 9
        "<p>Report of Independent Registered Public Accounting Firm</p><p>To the Shareholders.</p>"
        "<p>/s/ Ernst &amp; Young LLP</p><p>Item 9. Changes in and Disagreements with Accountants</p>",
        # NVIDIA: a financial statement schedule, then the exhibit index
        "<p>Schedule II &#8211; Valuation and Qualifying Accounts</p><p>Allowance $ 4</p>"
        "<p>Exhibit Index</p><p>3.1 Restated Certificate of Incorporation</p>",
        "<p>INDEX TO EXHIBITS</p><p>3.1 Restated Certificate of Incorporation</p>",
        "<p>Management&#8217;s Report on Internal Control over Financial Reporting</p><p>We assessed.</p>",
        "<p>SIGNATURES</p><p>/s/ Timothy D. Cook</p>",
        # a signature page without its heading: its first sentence, longer than any heading
        "<p>Pursuant to the requirements of Section 13 or 15(d) of the Securities Exchange Act of 1934, the "
        "Registrant has duly caused this report to be signed on its behalf by the undersigned, thereunto duly "
        "authorized.</p><p>/s/ Timothy D. Cook</p>",
    ],
)
def test_the_last_note_ends_where_what_follows_the_notes_begins(what_follows: str) -> None:
    text = document_text(html(LAST_NOTE + what_follows))

    note = find_section(text, "segment_note")

    assert note.heading == "Note 13 \u2013 Segment Information and Geographic Data"
    assert note.text.split("\n") == [
        "The Company manages its business primarily on a geographic basis.",
        "Americas $ 167,045",
        "(1)China includes Hong Kong and Taiwan.",
    ]


def test_a_note_is_found_by_the_words_of_its_title_and_ends_at_the_next_note() -> None:
    text = document_text(html(LAST_NOTE + "<p>Report of Independent Registered Public Accounting Firm</p>"))

    note = find_note(text, "Commitments")

    assert (note.heading, note.text) == ("Note 12 \u2013 Commitments", "The Company has purchase obligations.")
    with pytest.raises(NoFilingData):
        find_note(text, "leases")


@pytest.mark.parametrize(
    "what_follows",
    [
        "<p>Report of Independent Registered Public Accounting Firm</p><p>We have audited.</p>",
        "<p>Exhibit Index</p><p>3.1 Restated Articles of Incorporation</p>",
    ],
)
def test_an_item_ends_at_the_auditors_report_or_the_exhibit_index(what_follows: str) -> None:
    text = document_text(
        html(
            f"<p>Item 7A. Quantitative and Qualitative Disclosures About Market Risk</p>"
            f"<p>Rates may rise.</p>{what_follows}"
        )
    )

    assert find_section(text, "market_risk").text == "Rates may rise."


def test_a_pages_running_head_or_footer_left_at_a_sections_end_is_not_part_of_it() -> None:
    # Every page ends with a footer and a page number and opens with a running head; the section's last page's
    # footer, and the running head of the page the next heading is on, come before that heading.
    page = "<p>Acme Corp. | 2025 Form 10-K | {n}</p><p>{n}</p><p>Acme Corporation and Subsidiaries</p>"
    pages = "".join(page.format(n=n) for n in range(1, 6))
    text = document_text(
        html(
            f"{pages}<p>Item 1A. Risk Factors</p><p>Our risks are many.</p>"
            f"<p>Acme Corp. | 2025 Form 10-K | 12</p><p>Acme Corporation and Subsidiaries</p>"
            f"<p>Competition is intense.</p>{page.format(n=19)}"
            "<p>Item 1B. Unresolved Staff Comments</p><p>None.</p><p>Item 2. Properties</p><p>None.</p>"
            "<p>Item 3. Legal Proceedings</p><p>None.</p><p>Item 4. Mine Safety Disclosures</p><p>None.</p>"
            "<p>Item 5. Other Information</p><p>None.</p>"
        )
    )

    # only what trails the section goes: a running head inside it stays, and a sentence is never furniture
    assert find_section(text, "risk_factors").text.split("\n") == [
        "Our risks are many.",
        "Acme Corp. | 2025 Form 10-K | 12",
        "Acme Corporation and Subsidiaries",
        "Competition is intense.",
    ]
    assert find_section(text, "legal_proceedings").text == "None."


def test_an_8k_item_runs_through_the_exhibit_index_of_its_item_9_01() -> None:
    text = document_text(
        html(
            "<p>Item 9.01 Financial Statements and Exhibits.</p><p>(d) Exhibits.</p><p>EXHIBIT INDEX</p>"
            "<p>99.1 Press release issued by Apple Inc. on January 30, 2025.</p><p>SIGNATURE</p><p>/s/ Kevan</p>"
        )
    )

    assert find_section(text, "9.01").text.endswith("99.1 Press release issued by Apple Inc. on January 30, 2025.")


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
